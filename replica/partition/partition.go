package partition

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/zeebo/xxh3"
)

// Host is what a partition needs from the group and node that hold it.
// Every call runs on the owning shard.
type Host interface {
	// Propose submits an internal op (purge, drop group, retention) to
	// the partition's consensus group; done runs on the shard when it
	// ends, committed or not.
	Propose(req vsr.Request, done func(Outcome))
	// Leading reports whether the group runs and its replica is the
	// primary in normal status.
	Leading() bool
	// CheckpointAfter asks the replica for a checkpoint right after op.
	CheckpointAfter(op uint64)
	// RecordCheckpoint makes the group's superblock name checkpoint op
	// (its file's XXH3-128) and raise the offset frontier to at least
	// frontier.
	RecordCheckpoint(op uint64, sum superblock.Uint128, frontier uint64) error
	// Fail stops the group after a storage failure of the pipeline.
	Fail(err error)
	// Stopped reports whether the group failed or closed.
	Stopped() bool
	// Installed reports a checkpoint installed by state transfer (metrics).
	Installed()
}

// Outcome is how a proposed op ended.
type Outcome struct {
	Status  uint32 // non-zero: an Iggy code (the op was not committed)
	VStatus vsr.Status
	Reply   []byte
}

// Buffers recycles the header copies a replicated partition stamps
// committed batches' headers into (one pool per shard).
type Buffers interface {
	Get(n int) []byte
	Put(b []byte)
}

// Config is what a partition is opened with.
type Config struct {
	// Dir is the partition's directory (Dir below).
	Dir               string
	Stream, Topic, ID uint32
	Revision          uint64
	TopicConfig       metadata.TopicConfig
	// Cluster: the group has more than one replica (stamped header copies,
	// segment lists, transfer artifacts, retention by op).
	Cluster bool
	// ValidateChecksum, MaxRecordSize, BackgroundSyncBytes and
	// SegmentCacheBytes configure the segment log
	// (partition.validate_checksum, the frame limit,
	// partition.background_sync_bytes, partition.segment_cache_bytes).
	ValidateChecksum    bool
	MaxRecordSize       uint64
	BackgroundSyncBytes int64
	SegmentCacheBytes   int64
	// ConsumerOffsetsMax is partition.consumer_offsets_max.
	ConsumerOffsetsMax int
	// PollBufferMax bounds a poll's records (the reply frame limit).
	PollBufferMax int
	// Codec is the node's at-rest stack (original sizes).
	Codec    *codec.Stack
	Pipeline *Pipeline
	Log      *zap.Logger
}

// Dir is the directory of (stream, topic, partition) under root.
func Dir(root string, stream, topic, p uint32) string {
	return filepath.Join(root, "streams", strconv.FormatUint(uint64(stream), 10), "topics",
		strconv.FormatUint(uint64(topic), 10), "partitions", strconv.FormatUint(uint64(p), 10))
}

// Stats are the figures a partition publishes for GET_STREAM, GET_TOPIC
// and GET_STATS, written by the owning shard and read from any goroutine.
type Stats struct {
	Revision uint64
	Segments atomic.Uint32
	Current  atomic.Uint64
	Size     atomic.Uint64
	Messages atomic.Uint64
	Original atomic.Uint64 // size before compression (sizes.go)
	// PurgeGen is the purge generation the figures above reflect, stored
	// after them: a reader that finds it behind the metadata's reports the
	// partition empty (the purge committed, the partition's own purge op
	// has not applied yet).
	PurgeGen atomic.Uint64
	// AppendedMsgs and AppendedBytes count what this node appended since
	// it started (the metrics' per-topic counters; batches the segments
	// already held at a replay are not counted).
	AppendedMsgs  atomic.Uint64
	AppendedBytes atomic.Uint64
	// PolledMsgs and PolledBytes count what polls on this node read
	// (messages, and bytes of the records handed to the reply).
	PolledMsgs  atomic.Uint64
	PolledBytes atomic.Uint64
	// inFlight holds the consumer groups with polled, uncommitted messages
	// in the partition, by group id, from the polls this node served:
	// written by the owning shard, read by joins and the hand-off loop.
	groupMu  sync.Mutex
	inFlight map[uint32]bool
	// committed is each group's stored offset (published with inFlight).
	committed map[uint32]uint64
}

// GroupState is what the partition published for consumer group: whether
// it has polled, uncommitted messages here, and its stored offset.
func (s *Stats) GroupState(group uint32) (inFlight bool, committed uint64, has bool) {
	s.groupMu.Lock()
	defer s.groupMu.Unlock()
	committed, has = s.committed[group]
	return s.inFlight[group], committed, has
}

// Partition is one partition's state machine and storage on its owning
// shard: the segment log, the next offset to mint, the consumer offsets and
// the purge generation.
type Partition struct {
	host     Host
	fs       vfs.FS
	pipe     *Pipeline
	cfg      Config
	ns       shard.Namespace
	id       uint32
	revision uint64
	dir      string
	log      *zap.Logger
	cluster  bool

	seg *segment.Log

	msgDurability    metadata.Durability
	offsetDurability metadata.Durability
	flushMessages    uint32
	flushBytes       uint64

	applied  uint64 // last op applied
	next     uint64 // offset the next applied batch gets
	written  uint64 // offset after the last record handed to the segment log
	purgeGen uint64 // applied purge generation
	// purgeWanted is the highest purge generation submitted to the group;
	// while it is ahead of purgeGen, polls answer as if the purge had
	// applied (every message now in the log is about to go).
	purgeWanted uint64
	diskGen     uint64 // purge generation the segment log reflects
	offsets     map[OffsetKey]uint64
	// lastPolled is, per consumer group id, the last offset a group poll
	// on this node returned (not replicated).
	lastPolled map[uint32]uint64
	// kindCounts counts the keys of offsets per consumer kind, for the
	// cap a store-offset op carries; nil after offsets was replaced
	// wholesale (checkpoint restore, state transfer): kindCount rebuilds it.
	kindCounts map[uint8]int

	w         writeState
	avgRecord float64 // average stored bytes per message (poll sizing)

	stats *Stats
	// feed wakes polls waiting for this partition's messages (publish).
	feed *longpoll.Feed
	orig origSizes

	// State transfer (transfer.go, cluster mode).
	segCfg     segment.Config
	sealedSums map[uint64]sealedSum
	segHash    *segHashState
	served     servedPartition
	stagedOp   uint64

	// retaining is the keep_from of this primary's retention op in flight
	// (0: none), so a pass does not propose the same deletion again.
	retaining uint64
}

// IncarnationFile holds the partition revision and its checksum
// (claimDir, encodeIncarnation).
const IncarnationFile = "incarnation"

// ErrDamaged marks local partition storage that cannot back its own
// checkpoint: the checkpoint file is unreadable, the segments end below
// the offsets it (or the superblock's frontier) records, or a segment holds
// corrupt records — acknowledged messages are gone from this disk.
var ErrDamaged = errors.New("replica: partition storage damaged")

// ErrFrontier: the segments end below what a checkpoint recorded.
var ErrFrontier = errors.New("replica: segments below the checkpointed offset frontier")

// ErrArtifact is returned for a transfer artifact read or write that does
// not fit the checkpoint served or staged.
var ErrArtifact = errors.New("replica: state transfer artifact")

// Damaged reports whether a partition failed to open because its files
// are damaged (rather than, say, a full disk).
func Damaged(err error) bool {
	return errors.Is(err, segment.ErrCorrupt) || errors.Is(err, ErrFrontier) || errors.Is(err, ErrCheckpoint) ||
		errors.Is(err, ErrDamaged)
}

// Open opens (creating when new) a partition's storage: it claims the
// directory for this revision, opens the segment log and reads the purge
// generation. The group restores a checkpoint through Restore and replays
// its journal through Apply; Start then publishes the partition.
func Open(fsys vfs.FS, cfg Config, host Host) (*Partition, error) {
	ns := shard.MustNamespace(cfg.Stream, cfg.Topic, cfg.ID)
	log := cfg.Log
	if log == nil {
		log = zap.NewNop()
	}
	p := &Partition{host: host, fs: fsys, pipe: cfg.Pipeline, cfg: cfg, ns: ns, id: cfg.ID, revision: cfg.Revision,
		dir: cfg.Dir, cluster: cfg.Cluster, offsets: map[OffsetKey]uint64{}, stats: &Stats{Revision: cfg.Revision},
		log: log.With(zap.Stringer("partition", ns))}
	if p.pipe == nil {
		p.pipe = NewPipeline(0, nil)
	}
	p.applyConfig(cfg.TopicConfig)
	if err := p.claimDir(); err != nil {
		return nil, err
	}
	scfg := segment.DefaultConfig(uint64(cfg.ID))
	scfg.SegmentSize = cfg.TopicConfig.SegmentSize
	scfg.ValidateChecksum = cfg.ValidateChecksum
	scfg.MaxRecordSize = min(cfg.MaxRecordSize, segment.MaxRecordSizeLimit)
	// A cluster node re-hashes every record at boot: damage anywhere is
	// then found while peers can still refill the partition, not by a
	// read that would fail for good.
	scfg.VerifyAllOnOpen = cfg.Cluster
	scfg.StartSyncBytes = cfg.BackgroundSyncBytes
	scfg.CacheBytes = cfg.SegmentCacheBytes
	p.segCfg = scfg
	seg, rep, err := segment.Open(fsys, p.dir, scfg)
	if err != nil {
		if errors.Is(err, segment.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrDamaged, err)
		}
		return nil, fmt.Errorf("replica: partition %s: segments: %w", ns, err)
	}
	if rep != nil && rep.TornTail != nil {
		p.log.Warn("segment torn tail truncated", zap.Any("torn", rep.TornTail))
	}
	p.seg = seg
	p.written = seg.NextOffset()
	if err := p.openOrigSizes(); err != nil {
		_ = seg.Close()
		return nil, err
	}
	p.diskGen, err = readPurgeGen(fsys, p.dir)
	if err != nil {
		_ = seg.Close()
		return nil, err
	}
	return p, nil
}

// CheckFrontier refuses segments that end below frontier, the offset
// frontier the group's superblock recorded: acknowledged messages below
// the checkpoint are gone and their offsets could be minted again.
func (p *Partition) CheckFrontier(frontier uint64) error {
	if p.seg.NextOffset() < frontier {
		return fmt.Errorf("replica: partition %s: segments end at offset %d below the checkpointed frontier %d: refusing to reuse offsets: %w",
			p.ns, p.seg.NextOffset(), frontier, ErrFrontier)
	}
	return nil
}

// Start publishes the opened partition (its figures, and its long-poll
// feed from now on).
func (p *Partition) Start(feed *longpoll.Feed) {
	p.feed = feed
	p.publish()
}

// claimDir makes dir belong to this incarnation: a directory left by an
// earlier partition with the same ids (deleted while the node was down, or
// before a crash finished removing it) is wiped first. A damaged
// incarnation file is not taken for an earlier partition's: wiping the
// directory would leave an empty replica that votes as if it had never
// acknowledged anything, so it is ErrDamaged (a cluster node quarantines
// the storage and rejoins; a single node refuses to boot).
func (p *Partition) claimDir() error {
	fsys := p.fs
	path := filepath.Join(p.dir, IncarnationFile)
	if b, err := vfs.ReadFile(fsys, path); err == nil {
		rev, legacy, ok := decodeIncarnation(b)
		switch {
		case !ok:
			return fmt.Errorf("%w: %s does not hold a revision and its checksum", ErrDamaged, path)
		case rev == p.revision && !legacy:
			return nil
		case rev == p.revision:
			// Written before the file carried a checksum: add it.
			return vfs.WriteFileAtomic(fsys, path, encodeIncarnation(p.revision), 0o644)
		}
		p.log.Info("removing the storage of an earlier partition with the same ids", zap.String("dir", p.dir))
		if err := fsys.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("replica: removing %s: %w", p.dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replica: reading %s: %w", path, err)
	} else if _, err := fsys.Stat(p.dir); err == nil {
		if err := fsys.RemoveAll(p.dir); err != nil {
			return fmt.Errorf("replica: removing %s: %w", p.dir, err)
		}
	}
	if err := vfs.MkdirAllSync(fsys, p.dir, 0o755); err != nil {
		return fmt.Errorf("replica: creating %s: %w", p.dir, err)
	}
	return vfs.WriteFileAtomic(fsys, path, encodeIncarnation(p.revision), 0o644)
}

// encodeIncarnation is the incarnation file: the revision in decimal, a
// space, the XXH3-64 of that decimal text in 16 hex digits, a newline.
func encodeIncarnation(rev uint64) []byte {
	d := strconv.FormatUint(rev, 10)
	return fmt.Appendf(nil, "%s %016x\n", d, xxh3.HashString(d))
}

// ReadIncarnation returns the revision dir's incarnation file names; false
// when the file is missing, unreadable or damaged.
func ReadIncarnation(fsys vfs.FS, dir string) (uint64, bool) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, IncarnationFile))
	if err != nil {
		return 0, false
	}
	rev, _, ok := decodeIncarnation(b)
	return rev, ok
}

// decodeIncarnation reads an incarnation file; legacy: a bare decimal
// revision (files written before the checksum).
func decodeIncarnation(b []byte) (rev uint64, legacy, ok bool) {
	f := strings.Fields(string(b))
	if len(f) == 0 || len(f) > 2 {
		return 0, false, false
	}
	rev, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, false, false
	}
	if len(f) == 1 {
		return rev, true, true
	}
	sum, err := strconv.ParseUint(f[1], 16, 64)
	if err != nil || len(f[1]) != 16 || sum != xxh3.HashString(f[0]) {
		return 0, false, false
	}
	return rev, false, true
}

func (p *Partition) applyConfig(c metadata.TopicConfig) {
	p.msgDurability = c.Durability
	p.offsetDurability = c.ConsumerOffsetDurability
	p.flushMessages = c.MessagesRequiredToSave
	p.flushBytes = c.SizeOfMessagesRequiredToSave
}

// Namespace is the partition's namespace.
func (p *Partition) Namespace() shard.Namespace { return p.ns }

// Revision is the metadata revision the partition was created at.
func (p *Partition) Revision() uint64 { return p.revision }

// Dir is the partition's directory.
func (p *Partition) Dir() string { return p.dir }

// Stats are the figures the partition publishes.
func (p *Partition) Stats() *Stats { return p.stats }

// Log is the partition's logger.
func (p *Partition) Log() *zap.Logger { return p.log }

// NextOffset is the offset the next applied batch gets.
func (p *Partition) NextOffset() uint64 { return p.next }

// PurgeGen is the applied purge generation.
func (p *Partition) PurgeGen() uint64 { return p.purgeGen }

// OffsetCount is how many consumer offsets the partition stores.
func (p *Partition) OffsetCount() int { return len(p.offsets) }

// SyncAppend implements the consensus state machine: sends follow the
// topic's durability, offset operations its consumer_offset_durability.
func (p *Partition) SyncAppend(h *vsr.Header) bool {
	if h.Operation() == OpSend {
		return p.msgDurability == metadata.DurabilityPersisted
	}
	return p.offsetDurability == metadata.DurabilityPersisted
}

// AppliedOp is the last op applied.
func (p *Partition) AppliedOp() uint64 { return p.applied }

// visibleNext is the end of what this replica serves: the state machine's
// next offset, or the segments' end when they hold more. They hold more
// only after a restart of a cluster node, until the group commits the
// journal ops past the restored checkpoint again (a replay that rewrites
// nothing): those records were committed and applied before the restart,
// so the current offset, polls and offset stores see them at once instead
// of the checkpoint's frontier (0 when there was none). In normal
// operation written == next after every apply.
func (p *Partition) visibleNext() uint64 { return max(p.next, p.written) }

// Current is the partition's current offset (0 when empty).
func (p *Partition) Current() uint64 {
	if v := p.visibleNext(); v > 0 {
		return v - 1
	}
	return 0
}

// publish updates the statistics other goroutines read.
func (p *Partition) publish() {
	s := p.stats
	segs := uint32(len(p.seg.Segments()))
	if segs == 0 {
		segs = 1
	}
	s.Segments.Store(segs)
	s.Current.Store(p.Current())
	s.Size.Store(uint64(p.seg.Size()))
	s.Messages.Store(p.seg.MessageCount())
	if err := p.reconcileOrig(); err != nil {
		p.log.Error("original sizes", zap.Error(err))
	}
	s.Original.Store(p.orig.total)
	s.PurgeGen.Store(p.purgeGen)
	// Polls waiting for these messages wake now: the records are in the
	// segments, where the next poll reads them.
	p.feed.Publish(min(p.visibleNext(), p.seg.NextOffset()))
}

// Close writes what is pending and releases the partition's files. The
// caller closes the feed (CloseFeed) and drops the group first.
func (p *Partition) Close() {
	if p.seg != nil {
		p.flushPendingOnClose()
		_ = p.seg.Close()
	}
}

// CloseFeed wakes the partition's waiters and closes its feed (before the
// group is dropped).
func (p *Partition) CloseFeed() { p.feed.Close() }

func (p *Partition) flushPendingOnClose() {
	if err := p.flushSegments(); err != nil {
		p.log.Error("segment flush at close failed", zap.Error(err))
	}
}

// Purge proposes the partition's purge to generation gen (an op the group
// applies once per generation); polls answer as purged from now on.
func (p *Partition) Purge(gen, now uint64) {
	p.purgeWanted = max(p.purgeWanted, gen)
	p.host.Propose(vsr.Request{Operation: OpPurge, WallClock: now, Body: EncodePurge(gen)}, func(Outcome) {})
}

// DropGroupOffsets proposes dropping a deleted consumer group's offset.
func (p *Partition) DropGroupOffsets(group uint32, now uint64) {
	p.host.Propose(vsr.Request{Operation: OpDropGroupOffsets, WallClock: now, Body: EncodeDropGroup(group)}, func(Outcome) {})
}
