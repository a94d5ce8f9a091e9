package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
	"github.com/zeebo/xxh3"
)

// Partition prepare operations. 160..162 are Iggy's; the others are iggo's
// internal partition operations (never sent by clients).
const (
	opSend              = uint8(wire.OpSendMessages)
	opStoreOffset       = uint8(wire.OpStoreConsumerOffset)
	opDeleteOffset      = uint8(wire.OpDeleteConsumerOffset)
	opPurgePartition    = uint8(170)
	opDropGroupOffsets  = uint8(171)
	opDeleteSegments    = uint8(172)
	offsetFlagAuto      = 1
	offsetOpSize        = 18
	deleteOffsetOpSize  = 5
	partitionCkptMagic  = "IGGOPCKP"
	partitionCkptPrefix = "checkpoint-"
	purgeGenFile        = "purge.gen"
)

// offsetOpSizeUncapped is a store-offset body journaled before the cap
// field (applied without a cap).
const offsetOpSizeUncapped = 14

// offsetKey identifies a stored consumer offset: kind 1 (consumer, numeric
// id or XXH32 of the name) or 2 (consumer group id).
type offsetKey struct {
	kind uint8
	id   uint32
}

// partStats are the figures a partition publishes for GET_STREAM, GET_TOPIC
// and GET_STATS, written by the owning shard and read from any goroutine.
type partStats struct {
	revision uint64
	segments atomic.Uint32
	current  atomic.Uint64
	size     atomic.Uint64
	messages atomic.Uint64
	original atomic.Uint64 // size before compression (partition_sizes.go)
	// purgeGen is the purge generation the figures above reflect, stored
	// after them: a reader that finds it behind the metadata's reports the
	// partition empty (the purge committed, the partition's own purge op
	// has not applied yet).
	purgeGen atomic.Uint64
	// appendedMsgs and appendedBytes count what this node appended since
	// it started (the metrics' per-topic counters; batches the segments
	// already held at a replay are not counted).
	appendedMsgs  atomic.Uint64
	appendedBytes atomic.Uint64
	// polledMsgs and polledBytes count what polls on this node read
	// (messages, and bytes of the records handed to the reply).
	polledMsgs  atomic.Uint64
	polledBytes atomic.Uint64
	// inFlight holds the consumer groups with polled, uncommitted messages
	// in the partition, by group id, from the polls this node served
	// (coop.go): written by the owning shard, read by joins and the
	// hand-off loop.
	groupMu  sync.Mutex
	inFlight map[uint32]bool
	// committed is each group's stored offset (published with inFlight).
	committed map[uint32]uint64
}

// partition is one partition's state machine and storage on its owning
// shard: the segment log, the next offset to mint, the consumer offsets and
// the purge generation. Its consensus group journals every operation before
// Apply runs; Apply is deterministic given the checkpoint it started from.
type partition struct {
	sh       *shardLoop
	ns       shard.Namespace
	stream   uint32
	topic    uint32
	id       uint32
	revision uint64
	dir      string
	log      *zap.Logger

	g   *consensus.Group
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
	offsets     map[offsetKey]uint64
	// lastPolled is, per consumer group id, the last offset a group poll
	// on this node returned (not replicated; coop.go).
	lastPolled map[uint32]uint64
	// kindCounts counts the keys of offsets per consumer kind, for the
	// cap a store-offset op carries; nil after offsets was replaced
	// wholesale (checkpoint restore, state transfer): kindCount rebuilds it.
	kindCounts map[uint8]int

	pending      [][]byte // stamped records awaiting their segment write
	queued       bool
	syncWanted   bool // queued for a segment sync in the next group commit
	hintWanted   bool // queued for a writeback hint in the next submission
	unsyncedMsgs uint64
	unsyncedSize uint64
	unhinted     uint64 // segment bytes written since the last writeback hint
	avgRecord    float64

	stats *partStats
	// feed wakes polls waiting for this partition's messages (publish).
	feed *longpoll.Feed
	orig origSizes

	// State transfer (transfer_partition.go, cluster mode).
	segCfg     segment.Config
	sealedSums map[uint64]sealedSum
	segHash    *segHashState
	served     servedPartition
	stagedOp   uint64

	// retaining is the keep_from of this primary's retention op in flight
	// (0: none), so a pass does not propose the same deletion again.
	retaining uint64
}

// partitionDir is the directory of (stream, topic, partition).
func partitionDir(root string, stream, topic, p uint32) string {
	return filepath.Join(root, "streams", strconv.FormatUint(uint64(stream), 10), "topics",
		strconv.FormatUint(uint64(topic), 10), "partitions", strconv.FormatUint(uint64(p), 10))
}

// partitionSpec is what the metadata says about a partition to open.
type partitionSpec struct {
	stream, topic, id uint32
	revision          uint64
	config            metadata.TopicConfig
	// purgeGen is the purge generation the metadata recorded; a partition
	// behind it (the purge committed but a crash stopped the partition's
	// own purge op) is purged at boot.
	purgeGen uint64
	// rejoin: this node may have acknowledged ops of the partition before
	// its disk was wiped (--fresh in a cluster): its new, empty replica
	// must not vote until it caught up (vsr.Boot.Rejoin).
	rejoin bool
}

const incarnationFile = "incarnation"

// errPartitionDamaged marks local partition storage that cannot back its
// own checkpoint: the checkpoint file is unreadable, the segments end below
// the offsets it (or the superblock's frontier) records, or a segment holds
// corrupt records — acknowledged messages are gone from this disk.
var errPartitionDamaged = errors.New("replica: partition storage damaged")

// openPartition opens (creating when new) a partition's storage and
// consensus group on this shard and replays its journal. In cluster mode a
// partition whose storage is damaged below its checkpoint
// (errPartitionDamaged) is moved to {path}/quarantine/ (never deleted) and
// opened empty as a rejoining replica (no vote until caught up), which
// refills it from its peers by state transfer and journal repair; a single
// node has no peer to refill from and refuses to boot instead.
func (sh *shardLoop) openPartition(spec partitionSpec) (p *partition, err error) {
	if !sh.n.reservePartitionSlot() {
		return nil, errDescriptorBudget
	}
	defer func() {
		if err != nil {
			sh.n.releasePartitionSlot()
		}
	}()
	p, err = sh.openPartitionOnce(spec)
	if err == nil || sh.n.replicaCount == 1 || !storageDamaged(err) {
		return p, err
	}
	// In a cluster the peers hold the partition: set the damaged storage
	// aside and rejoin with an empty replica, which does not vote until
	// journal repair or state transfer refilled it. A single node refuses
	// to open instead (there is no other copy).
	dir := partitionDir(sh.n.cfg.Path, spec.stream, spec.topic, spec.id)
	moved, qerr := sh.n.quarantine(sh.fs, dir, fmt.Sprintf("%d-%d-%d", spec.stream, spec.topic, spec.id))
	if qerr != nil {
		return nil, errors.Join(err, qerr)
	}
	sh.log.Error("partition storage damaged: quarantined, the partition is refilled from its peers",
		zap.String("dir", dir), zap.String("moved_to", moved), zap.Error(err))
	spec.rejoin = true
	return sh.openPartitionOnce(spec)
}

// errStorageFrontier: the segments end below what a checkpoint recorded.
var errStorageFrontier = errors.New("replica: segments below the checkpointed offset frontier")

// storageDamaged reports whether a partition failed to open because its
// files are damaged (rather than, say, a full disk).
func storageDamaged(err error) bool {
	return errors.Is(err, segment.ErrCorrupt) || errors.Is(err, errStorageFrontier) || errors.Is(err, errCheckpoint) ||
		errors.Is(err, superblock.ErrCorrupt) || errors.Is(err, errPartitionDamaged)
}

func (sh *shardLoop) openPartitionOnce(spec partitionSpec) (*partition, error) {
	ns := shard.MustNamespace(spec.stream, spec.topic, spec.id)
	dir := partitionDir(sh.n.cfg.Path, spec.stream, spec.topic, spec.id)
	p := &partition{sh: sh, ns: ns, stream: spec.stream, topic: spec.topic, id: spec.id, revision: spec.revision,
		dir: dir, offsets: map[offsetKey]uint64{}, stats: &partStats{revision: spec.revision},
		log: sh.log.With(zap.Stringer("partition", ns))}
	p.applyConfig(spec.config)
	if err := p.claimDir(); err != nil {
		return nil, err
	}
	scfg := segment.DefaultConfig(uint64(spec.id))
	scfg.SegmentSize = spec.config.SegmentSize
	scfg.ValidateChecksum = sh.n.cfg.Partition.ValidateChecksum
	scfg.MaxRecordSize = uint64(sh.n.maxFrame)
	if scfg.MaxRecordSize > segment.MaxRecordSizeLimit {
		scfg.MaxRecordSize = segment.MaxRecordSizeLimit
	}
	// A cluster node re-hashes every record at boot: damage anywhere is
	// then found while peers can still refill the partition, not by a
	// read that would fail for good.
	scfg.VerifyAllOnOpen = sh.n.replicaCount > 1
	scfg.StartSyncBytes = int64(sh.n.cfg.Partition.BackgroundSyncBytes.Bytes())
	p.segCfg = scfg
	seg, rep, err := segment.Open(sh.fs, dir, scfg)
	if err != nil {
		if errors.Is(err, segment.ErrCorrupt) {
			err = fmt.Errorf("%w: %w", errPartitionDamaged, err)
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
	p.diskGen, err = readPurgeGen(sh.fs, dir)
	if err != nil {
		_ = seg.Close()
		return nil, err
	}
	cfg := sh.n.partitionVSRConfig(uint64(ns), spec.config)
	g, err := sh.openGroup(consensus.Spec{
		ID: uint64(ns), Name: ns.String(), Dir: dir, Config: cfg, SM: p,
		PartOpts: sh.n.partitionJournalOptions(cfg),
		Restore:  p.restore,
		Rejoin:   spec.rejoin,
	})
	if err != nil {
		_ = seg.Close()
		return nil, err
	}
	p.g = g
	// The restored checkpoint says where offsets stood; the segments must
	// hold at least that much, or acknowledged messages below the
	// checkpoint are gone and their offsets could be minted again.
	if sbf := g.Superblock().OffsetFrontier; seg.NextOffset() < sbf {
		g.CloseFiles()
		_ = seg.Close()
		return nil, fmt.Errorf("replica: partition %s: segments end at offset %d below the checkpointed frontier %d: refusing to reuse offsets: %w",
			ns, seg.NextOffset(), sbf, errStorageFrontier)
	}
	sh.groups[g.ID()] = g
	sh.parts[ns] = p
	sh.drive()
	p.g.EndBoot()
	p.feed = sh.n.waits.Open(uint64(ns), spec.revision)
	p.publish()
	return p, nil
}

// claimDir makes dir belong to this incarnation: a directory left by an
// earlier partition with the same ids (deleted while the node was down, or
// before a crash finished removing it) is wiped first.
func (p *partition) claimDir() error {
	fsys := p.sh.fs
	path := filepath.Join(p.dir, incarnationFile)
	want := strconv.FormatUint(p.revision, 10)
	if b, err := vfs.ReadFile(fsys, path); err == nil {
		if strings.TrimSpace(string(b)) == want {
			return nil
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
	return vfs.WriteFileAtomic(fsys, path, []byte(want+"\n"), 0o644)
}

func (p *partition) applyConfig(c metadata.TopicConfig) {
	p.msgDurability = c.Durability
	p.offsetDurability = c.ConsumerOffsetDurability
	p.flushMessages = c.MessagesRequiredToSave
	p.flushBytes = c.SizeOfMessagesRequiredToSave
}

// SyncAppend implements consensus.StateMachine: sends follow the topic's durability,
// offset operations its consumer_offset_durability.
func (p *partition) SyncAppend(h *vsr.Header) bool {
	if h.Operation() == opSend {
		return p.msgDurability == metadata.DurabilityPersisted
	}
	return p.offsetDurability == metadata.DurabilityPersisted
}

func (p *partition) AppliedOp() uint64 { return p.applied }

// Apply implements vsr.StateMachine.
func (p *partition) Apply(h *vsr.Header, body []byte) []byte {
	p.applied = h.Op()
	switch h.Operation() {
	case opSend:
		return p.applySend(h, body)
	case opStoreOffset:
		if len(body) != offsetOpSize && len(body) != offsetOpSizeUncapped {
			panic(fmt.Sprintf("replica: partition %s op %d: store-offset body of %d bytes", p.ns, h.Op(), len(body)))
		}
		k := offsetKey{kind: body[0], id: binary.LittleEndian.Uint32(body[1:])}
		v := binary.LittleEndian.Uint64(body[5:])
		old, ok := p.offsets[k]
		if ok && body[13]&offsetFlagAuto != 0 && old >= v {
			return codeReply(0)
		}
		if !ok {
			// The cap travels in the op, so every replica (and every
			// replay) refuses the same new keys whatever its own config.
			n := p.kindCount(k.kind)
			if len(body) == offsetOpSize && n >= int(binary.LittleEndian.Uint32(body[14:])) {
				return codeReply(uint32(codeOffsetsFull))
			}
			p.kindCounts[k.kind] = n + 1
		}
		p.offsets[k] = v
		p.noteGroup(k)
		return codeReply(0)
	case opDeleteOffset:
		if len(body) != deleteOffsetOpSize {
			panic(fmt.Sprintf("replica: partition %s op %d: delete-offset body of %d bytes", p.ns, h.Op(), len(body)))
		}
		k := offsetKey{kind: body[0], id: binary.LittleEndian.Uint32(body[1:])}
		if _, ok := p.offsets[k]; !ok {
			return codeReply(uint32(wire.CodeConsumerOffsetNotFound))
		}
		p.deleteOffsetKey(k)
		p.noteGroup(k)
		return codeReply(0)
	case opPurgePartition:
		gen := binary.LittleEndian.Uint64(body)
		if gen <= p.purgeGen {
			return codeReply(0)
		}
		clear(p.offsets)
		p.clearPolled()
		p.kindCounts = nil
		if gen > p.diskGen {
			p.flushSegments()
			if err := p.seg.Purge(p.next); err != nil {
				panic(fmt.Sprintf("replica: partition %s: purge at offset %d: %v", p.ns, p.next, err))
			}
			if err := writePurgeGen(p.sh.fs, p.dir, gen); err != nil {
				panic(fmt.Sprintf("replica: partition %s: recording purge generation %d: %v", p.ns, gen, err))
			}
			p.diskGen = gen
			p.written = p.seg.NextOffset()
		}
		// Set after the flush above, whose publish must not report the
		// new generation beside the old figures.
		p.purgeGen = gen
		p.publish()
		return codeReply(0)
	case opDropGroupOffsets:
		k := offsetKey{kind: wire.ConsumerKindGroup, id: binary.LittleEndian.Uint32(body)}
		p.deleteOffsetKey(k)
		delete(p.lastPolled, k.id)
		p.noteGroup(k)
		return codeReply(0)
	case opDeleteSegments:
		if len(body) != 8 {
			panic(fmt.Sprintf("replica: partition %s op %d: delete-segments body of %d bytes", p.ns, h.Op(), len(body)))
		}
		_, err := p.deleteSealedThrough(binary.LittleEndian.Uint64(body))
		if l := p.served.list; len(l) > 0 && l[0].start < p.seg.FirstOffset() && p.g != nil && p.g.Replica() != nil {
			// The checkpoint peers fetch by state transfer lists segments
			// that are gone now (on every replica alike): checkpoint after
			// this op instead of waiting for CheckpointInterval more ops,
			// which an idle partition may never see.
			p.g.Replica().CheckpointAfter(h.Op())
		}
		if err != nil {
			p.log.Error("delete segments failed", zap.Uint64("op", h.Op()), zap.Error(err))
			return codeReply(uint32(wire.CodeError))
		}
		return codeReply(0)
	}
	panic(fmt.Sprintf("replica: partition %s: unknown operation %d at op %d", p.ns, h.Operation(), h.Op()))
}

// applySend stamps the committed batch with its offsets and the prepare's
// timestamp and queues it for the segment write (skipping a batch the
// segments already hold, when a restart replays the journal). The reply is
// the base offset.
func (p *partition) applySend(h *vsr.Header, body []byte) []byte {
	v, err := wire.ParseBatch(body)
	if err != nil {
		panic(fmt.Sprintf("replica: partition %s op %d: journaled batch does not parse: %v", p.ns, h.Op(), err))
	}
	base := p.next
	n := uint64(v.MessageCount())
	if p.sh.n.replicaCount > 1 {
		// The replica keeps the prepare body for retransmission and
		// repair, and peers verify it against its checksum: stamp a copy.
		body = append(p.sh.stamps.get(len(body))[:0], body...)
		if v, err = wire.ParseBatch(body); err != nil {
			panic(fmt.Sprintf("replica: partition %s op %d: copied batch does not parse: %v", p.ns, h.Op(), err))
		}
	}
	v.Stamp(uint64(p.id), base, h.Timestamp())
	p.next = base + n
	reply := binary.LittleEndian.AppendUint64(make([]byte, 0, 8), base)
	switch {
	case base+n <= p.written:
		// Already in the segments: a replay after restart.
		if p.sh.n.replicaCount > 1 {
			p.sh.stamps.put(body)
		}
	case base < p.written:
		panic(fmt.Sprintf("replica: partition %s op %d: batch [%d, %d) straddles the segment end %d",
			p.ns, h.Op(), base, base+n, p.written))
	default:
		if base != p.written {
			panic(fmt.Sprintf("replica: partition %s op %d: batch at %d leaves a hole after %d", p.ns, h.Op(), base, p.written))
		}
		p.markCompressed(body)
		p.pending = append(p.pending, body)
		p.written = base + n
		p.stats.appendedMsgs.Add(n)
		p.stats.appendedBytes.Add(uint64(len(body)))
		p.unsyncedMsgs += n
		p.unsyncedSize += uint64(len(body))
		if !p.queued {
			p.queued = true
			p.sh.segQueue = append(p.sh.segQueue, p)
		}
	}
	return reply
}

// releaseWritten hands the first n pending records, whose segment write has
// finished, back to the shard's stamp pool (a replicated partition's records
// are its own stamped copies; a single node's alias the prepare bodies and
// are only dropped).
func (p *partition) releaseWritten(n int) {
	if p.sh.n.replicaCount > 1 {
		for _, b := range p.pending[:n] {
			p.sh.stamps.put(b)
		}
	}
	clear(p.pending[:n])
}

// codeOffsetsFull answers a store of a new consumer-offset key on a
// partition that holds partition.consumer_offsets_max keys of its kind.
// Iggy has no code of its own for it; TopicFull (3009) is its nearest.
const codeOffsetsFull = wire.CodeTopicFull

// kindCount is how many offset keys of kind the partition holds.
func (p *partition) kindCount(kind uint8) int {
	if p.kindCounts == nil {
		p.kindCounts = map[uint8]int{}
		for k := range p.offsets {
			p.kindCounts[k.kind]++
		}
	}
	return p.kindCounts[kind]
}

// deleteOffsetKey removes k's offset, freeing its slot under the cap.
func (p *partition) deleteOffsetKey(k offsetKey) {
	if _, ok := p.offsets[k]; !ok {
		return
	}
	delete(p.offsets, k)
	if p.kindCounts != nil {
		p.kindCounts[k.kind]--
	}
}

// offsetsFull reports whether storing k would be refused by the cap.
func (p *partition) offsetsFull(k offsetKey) bool {
	if _, ok := p.offsets[k]; ok {
		return false
	}
	return p.kindCount(k.kind) >= p.sh.n.cfg.Partition.ConsumerOffsetsMax
}

func codeReply(code uint32) []byte { return binary.LittleEndian.AppendUint32(make([]byte, 0, 4), code) }

// flushSegments writes this partition's pending records now (outside the
// shard-wide batch), for checkpoints and purges.
func (p *partition) flushSegments() {
	for len(p.pending) > 0 {
		var b vfs.Batch
		st, err := p.seg.StageAppend(&b, p.pending)
		if err != nil {
			panic(fmt.Sprintf("replica: partition %s: staging segment append: %v", p.ns, err))
		}
		err = p.sh.fs.Submit(&b)
		if ferr := p.seg.FinishAppend(err); ferr != nil {
			panic(fmt.Sprintf("replica: partition %s: segment append failed: %v", p.ns, ferr))
		}
		for _, r := range p.pending[:st.Records] {
			p.unhinted += uint64(len(r))
		}
		p.followAppend(st, p.pending[:st.Records])
		p.noteWritten(st.Segment, p.pending[:st.Records])
		p.releaseWritten(st.Records)
		p.pending = p.pending[st.Records:]
	}
	p.pending = nil
	p.publish()
}

// Segment syncs during normal operation. Durability does not need them:
// the journal holds every acknowledged op (fdatasync'ed under persisted
// durability) until a checkpoint makes the segments durable. What they
// bought was a short checkpoint: without them a checkpoint fdatasyncs a
// whole interval of dirty segment data inside one loop iteration.
//
// Writeback hints (partition.segment_writeback_bytes, writebackDue) buy
// that without waiting: the kernel writes the pages back as they are
// appended, so the checkpoint's fdatasync finds little left. With hints on
// there are no periodic segment fdatasyncs on the ack path; each cost a
// ~20 ms stall every 16 MiB. With hints off (0) the periodic syncs remain:
// the topic's flush thresholds (messages_required_to_save,
// size_of_messages_required_to_save) set their cadence, never finer than
// these floors (a sync per small batch would double the fdatasyncs on the
// ack path for nothing), and they ride the next group commit.
const (
	segmentSyncBytesMin    = 16 << 20
	segmentSyncMessagesMin = 16 << 10
)

// segmentSyncDue reports whether the segments should be synced in the next
// group commit.
func (p *partition) segmentSyncDue() bool {
	if p.sh.writebackBytes > 0 {
		return false
	}
	return p.unsyncedSize >= max(p.flushBytes, segmentSyncBytesMin) ||
		p.unsyncedMsgs >= max(uint64(p.flushMessages), segmentSyncMessagesMin)
}

// writebackDue reports whether enough segment bytes were written since the
// last writeback hint to hint them (partition.segment_writeback_bytes).
func (p *partition) writebackDue() bool {
	return p.sh.writebackBytes > 0 && p.unhinted >= p.sh.writebackBytes
}

// publish updates the statistics other goroutines read.
func (p *partition) publish() {
	s := p.stats
	segs := uint32(len(p.seg.Segments()))
	if segs == 0 {
		segs = 1
	}
	s.segments.Store(segs)
	s.current.Store(p.current())
	s.size.Store(uint64(p.seg.Size()))
	s.messages.Store(p.seg.MessageCount())
	if err := p.reconcileOrig(); err != nil {
		p.log.Error("original sizes", zap.Error(err))
	}
	s.original.Store(p.orig.total)
	s.purgeGen.Store(p.purgeGen)
	// Polls waiting for these messages wake now: the records are in the
	// segments, where the next poll reads them.
	p.feed.Publish(min(p.visibleNext(), p.seg.NextOffset()))
}

// ---------------------------------------------------------------------------
// Checkpoints.
//
// A partition checkpoint file, "checkpoint-{op:020}", holds the state
// machine after op (little-endian):
//
//	off  size  field
//	  0     8  magic "IGGOPCKP"
//	  8     4  version = 2 (1 is still read)
//	 12     4  reserved, zero
//	 16     8  op
//	 24     8  next offset (the offset frontier: every offset below was minted)
//	 32     8  purge generation
//	 40     4  consumer offset count N
//	 44  13*N  entries sorted by (kind, id): kind u8, id u32, offset u64
//	  …     4  version 2 only: producer table length T
//	  …     T  version 2 only: the group's producer table (exactly-once
//	           sends) as vsr encodes it: u32 count|1<<31|1<<30, u64 eviction
//	           floor, then per producer sorted by id: [16] producer, u64
//	           session, u32 user, u8 owned = 1, u64 request (last applied),
//	           u64 last_op, u64 reply_op, u32 reply length, the reply (the
//	           8-byte base offset of a send)
//	  …    16  XXH3-128 of every byte before it, low 64 bits first
//
// A version 1 file (written before producer tables) restores with an empty
// table. The table is also listed in the manifest as artifact 0
// (vsr.SessionsArtifact), so state transfer hands it to vsr; the copy in
// the checkpoint file is what a restart restores.
//
// The segments already hold every record applied up to op; the checkpoint
// makes them durable (fdatasync of the .log, index entries written) before
// the file is written. The superblock then records op, the file's checksum
// and the offset frontier, and the view state naming op follows. Files of
// older checkpoints are removed once the view state names a newer one.

func ckptName(op uint64) string { return fmt.Sprintf("%s%020d", partitionCkptPrefix, op) }

func (p *partition) encodeCheckpoint(op uint64, table []byte) []byte {
	keys := make([]offsetKey, 0, len(p.offsets))
	for k := range p.offsets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b offsetKey) int {
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	b := make([]byte, 44, 44+13*len(keys)+4+len(table)+16)
	copy(b, partitionCkptMagic)
	binary.LittleEndian.PutUint32(b[8:], partitionCkptVersion)
	binary.LittleEndian.PutUint64(b[16:], op)
	binary.LittleEndian.PutUint64(b[24:], p.next)
	binary.LittleEndian.PutUint64(b[32:], p.purgeGen)
	binary.LittleEndian.PutUint32(b[40:], uint32(len(keys)))
	for _, k := range keys {
		b = append(b, k.kind)
		b = binary.LittleEndian.AppendUint32(b, k.id)
		b = binary.LittleEndian.AppendUint64(b, p.offsets[k])
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(table)))
	b = append(b, table...)
	sum := xxh3.Hash128(b)
	b = binary.LittleEndian.AppendUint64(b, sum.Lo)
	return binary.LittleEndian.AppendUint64(b, sum.Hi)
}

var errCheckpoint = errors.New("replica: bad checkpoint file")

type partitionCheckpoint struct {
	op, next, purgeGen uint64
	offsets            map[offsetKey]uint64
	table              []byte // producer table (nil in a version 1 file)
	sum                xxh3.Uint128
}

// partitionCkptVersion is the checkpoint file version written.
const partitionCkptVersion = 2

func decodePartitionCheckpoint(b []byte) (partitionCheckpoint, error) {
	var c partitionCheckpoint
	if len(b) < 44+16 || !bytes.Equal(b[:8], []byte(partitionCkptMagic)) || binary.LittleEndian.Uint32(b[12:]) != 0 {
		return c, fmt.Errorf("%w: header", errCheckpoint)
	}
	version := binary.LittleEndian.Uint32(b[8:])
	if version != 1 && version != 2 {
		return c, fmt.Errorf("%w: version %d", errCheckpoint, version)
	}
	end := len(b) - 16
	sum := xxh3.Hash128(b[:end])
	if binary.LittleEndian.Uint64(b[end:]) != sum.Lo || binary.LittleEndian.Uint64(b[end+8:]) != sum.Hi {
		return c, fmt.Errorf("%w: checksum", errCheckpoint)
	}
	n := int(binary.LittleEndian.Uint32(b[40:]))
	entriesEnd := 44 + 13*n
	if version == 1 && entriesEnd != end || version == 2 && (entriesEnd+4 > end || n > end) {
		return c, fmt.Errorf("%w: %d entries in %d bytes", errCheckpoint, n, len(b))
	}
	if version == 2 {
		t := int(binary.LittleEndian.Uint32(b[entriesEnd:]))
		if entriesEnd+4+t != end {
			return c, fmt.Errorf("%w: producer table of %d bytes in %d", errCheckpoint, t, len(b))
		}
		c.table = bytes.Clone(b[entriesEnd+4 : end])
	}
	c.op = binary.LittleEndian.Uint64(b[16:])
	c.next = binary.LittleEndian.Uint64(b[24:])
	c.purgeGen = binary.LittleEndian.Uint64(b[32:])
	c.offsets = make(map[offsetKey]uint64, n)
	var prev uint64
	for i := 0; i < n; i++ {
		e := b[44+13*i:]
		k := offsetKey{kind: e[0], id: binary.LittleEndian.Uint32(e[1:])}
		// Canonical: strictly ascending (kind, id), so every state has one
		// encoding.
		ord := uint64(k.kind)<<32 | uint64(k.id)
		if i > 0 && ord <= prev {
			return c, fmt.Errorf("%w: entries out of order", errCheckpoint)
		}
		prev = ord
		c.offsets[k] = binary.LittleEndian.Uint64(e[5:])
	}
	c.sum = sum
	return c, nil
}

// Checkpoint implements consensus.StateMachine. It runs inside the loop iteration that
// carries the checkpoint, so every wait here delays the acks of that
// iteration: the segments' fdatasyncs, the checkpoint file, the segment
// list (cluster mode) and the directory sync go to the device in one
// submission, in parallel, rather than one after another. Only then does
// the superblock name the checkpoint, so a crash before that leaves the
// previous checkpoint in force and the new files unreferenced (removed once
// a later checkpoint is durable).
func (p *partition) Checkpoint(op uint64, table []byte) (vsr.Manifest, error) {
	p.flushSegments()
	var list []segEntry
	files := []newFile{{path: filepath.Join(p.dir, ckptName(op)), data: p.encodeCheckpoint(op, table)}}
	if p.sh.n.replicaCount > 1 {
		var err error
		if list, err = p.segmentList(); err != nil {
			return vsr.Manifest{}, err
		}
		files = append(files, newFile{path: filepath.Join(p.dir, segListName(op)), data: encodeSegList(list)})
	}
	var b vfs.Batch
	opened, err := stageNewFiles(p.sh.fs, &b, files)
	if err != nil {
		return vsr.Manifest{}, err
	}
	b.SyncDir(p.dir)
	plan, err := p.seg.PlanSync()
	if err != nil {
		return vsr.Manifest{}, errors.Join(err, closeFiles(opened))
	}
	plan.AddTo(&b)
	err = p.sh.fs.Submit(&b)
	cerr := closeFiles(opened)
	if serr := p.seg.CompleteSync(plan, planFailure(err, plan)); serr != nil {
		return vsr.Manifest{}, serr
	}
	if err != nil {
		return vsr.Manifest{}, err
	}
	if cerr != nil {
		return vsr.Manifest{}, cerr
	}
	p.unsyncedMsgs, p.unsyncedSize = 0, 0
	data := files[0].data
	sum := xxh3.Hash128(data)
	if err := p.g.WriteCheckpoint(op, superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}, p.next); err != nil {
		return vsr.Manifest{}, err
	}
	m := vsr.Manifest{Artifacts: checkpointArtifacts(table, data, sum)}
	if len(files) > 1 {
		transferManifest(&m, files[1].data, list)
		p.served = servedPartition{op: op, list: list}
	}
	return m, nil
}

// newFile is a file a checkpoint creates whole.
type newFile struct {
	path string
	data []byte
}

// stageNewFiles creates (or truncates) each file and queues its write and
// fdatasync in b; the caller queues the directory sync that makes the names
// durable, submits b and closes the files.
func stageNewFiles(fsys vfs.FS, b *vfs.Batch, files []newFile) ([]vfs.File, error) {
	var opened []vfs.File
	for _, nf := range files {
		f, err := fsys.OpenFile(nf.path, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
		if err != nil {
			return nil, errors.Join(err, closeFiles(opened))
		}
		opened = append(opened, f)
		b.WriteAt(f, nf.data, 0)
		b.Datasync(f)
	}
	return opened, nil
}

func closeFiles(files []vfs.File) error {
	var errs []error
	for _, f := range files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// planFailure is the part of a batch's outcome that concerns a segment
// sync plan riding it: a failed fdatasync of one of the plan's files, or
// a failed directory sync (the plan may need it). Failures of the batch's
// other files are not the segment log's and must not fail it.
func planFailure(err error, plan segment.SyncPlan) error {
	if err == nil {
		return nil
	}
	var be *vfs.BatchError
	if !errors.As(err, &be) {
		return err
	}
	for _, f := range be.Failures {
		switch f.Op {
		case vfs.BatchOpSyncDir:
			return err
		case vfs.BatchOpSync:
			for _, pf := range plan.Files {
				if pf.Name() == f.Name {
					return err
				}
			}
		}
	}
	return nil
}

// CheckpointDurable implements consensus.StateMachine: older checkpoint files go.
func (p *partition) CheckpointDurable(op uint64) {
	entries, err := p.sh.fs.ReadDir(p.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		prefix := partitionCkptPrefix
		if strings.HasPrefix(name, segListPrefix) {
			prefix = segListPrefix
		} else if !strings.HasPrefix(name, partitionCkptPrefix) {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(name, prefix), 10, 64)
		if err == nil && v < op {
			_ = p.sh.fs.Remove(filepath.Join(p.dir, name))
		}
	}
}

// restore loads checkpoint op into the state machine (boot).
// Storage that cannot back the checkpoint is errPartitionDamaged.
func (p *partition) restore(op uint64) (*vsr.Manifest, []byte, error) {
	b, err := vfs.ReadFile(p.sh.fs, filepath.Join(p.dir, ckptName(op)))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errPartitionDamaged, err)
	}
	c, err := decodePartitionCheckpoint(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errPartitionDamaged, err)
	}
	if c.op != op {
		return nil, nil, fmt.Errorf("%w: %w: file names op %d, holds op %d", errPartitionDamaged, errCheckpoint, op, c.op)
	}
	if p.seg.NextOffset() < c.next {
		return nil, nil, fmt.Errorf("replica: partition %s: segments end at offset %d, checkpoint %d needs %d: %w",
			p.ns, p.seg.NextOffset(), op, c.next, errStorageFrontier)
	}
	p.next, p.purgeGen, p.offsets, p.kindCounts = c.next, c.purgeGen, c.offsets, nil
	p.applied = op
	m := &vsr.Manifest{Op: op, Artifacts: checkpointArtifacts(c.table, b, c.sum)}
	if p.sh.n.replicaCount > 1 {
		p.restoreSegments(op, m)
	}
	return m, c.table, nil
}

// checkpointArtifacts lists the producer table (artifact 0, what vsr
// restores its table from after a state transfer) and the checkpoint file.
func checkpointArtifacts(table, file []byte, sum xxh3.Uint128) []vsr.Artifact {
	return []vsr.Artifact{
		{ID: vsr.SessionsArtifact, Size: uint64(len(table)), Checksum: vsr.BodyChecksum(table)},
		{ID: artCheckpoint, Size: uint64(len(file)), Checksum: vsrChecksum(sum)},
	}
}

// writeFileSync writes a new file durably (data, fdatasync, directory
// sync). Used for files whose names are unique, so no rename is needed.
func writeFileSync(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Datasync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(path))
}

// purge.gen: u64 generation ‖ XXH3-64 of those 8 bytes.
func readPurgeGen(fsys vfs.FS, dir string) (uint64, error) {
	b, err := vfs.ReadFile(fsys, filepath.Join(dir, purgeGenFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	gen, ok := decodePurgeGen(b)
	if !ok {
		return 0, fmt.Errorf("replica: %s: damaged purge generation", filepath.Join(dir, purgeGenFile))
	}
	return gen, nil
}

func decodePurgeGen(b []byte) (uint64, bool) {
	if len(b) != 16 || xxh3.Hash(b[:8]) != binary.LittleEndian.Uint64(b[8:]) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

func writePurgeGen(fsys vfs.FS, dir string, gen uint64) error {
	b := binary.LittleEndian.AppendUint64(nil, gen)
	b = binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
	return vfs.WriteFileAtomic(fsys, filepath.Join(dir, purgeGenFile), b, 0o644)
}

// ---------------------------------------------------------------------------
// Requests on the owning shard.

func (p *partition) handle(t *task) {
	switch t.kind {
	case tkSend:
		body := t.body
		if p.sh.n.replicaCount > 1 && !t.owned {
			// The body outlives the reply (the replica retransmits it, the
			// plane's queues reference it): it cannot alias the
			// connection's buffers.
			body = bytes.Clone(body)
		}
		p.g.Submit(t, vsr.Request{Client: t.producer, Session: t.pSession, Request: t.pRequest,
			Operation: opSend, User: t.user, WallClock: nowMicros(), Body: body})
	case tkStoreOffset:
		if p.visibleNext() == 0 || t.offset > p.current() {
			t.failStatus(uint32(wire.CodeInvalidOffset))
			p.sh.deliverTask(t)
			return
		}
		p.g.Submit(t, vsr.Request{Operation: opStoreOffset, User: t.user, WallClock: nowMicros(),
			Body: p.encodeOffsetOp(t.key, t.offset, false)})
	case tkDeleteOffset:
		if _, ok := p.offsets[t.key]; !ok {
			t.failStatus(uint32(wire.CodeConsumerOffsetNotFound))
			p.sh.deliverTask(t)
			return
		}
		body := make([]byte, deleteOffsetOpSize)
		body[0] = t.key.kind
		binary.LittleEndian.PutUint32(body[1:], t.key.id)
		p.g.Submit(t, vsr.Request{Operation: opDeleteOffset, User: t.user, WallClock: nowMicros(), Body: body})
	case tkGetOffset:
		t.poll.current = p.current()
		v, ok := p.offsets[t.key]
		t.poll.found, t.poll.stored = ok, v
		p.sh.deliverTask(t)
	case tkPoll:
		p.poll(t)
		if t.status == 0 && t.key.kind == wire.ConsumerKindGroup && t.poll.count > 0 {
			p.notePolled(t.key.id, t.poll.lastOffset)
		}
		if t.status == 0 && t.auto && t.poll.count > 0 {
			last := t.poll.lastOffset
			if old, ok := p.offsets[t.key]; ok && old >= last {
				p.sh.deliverTask(t)
				return
			}
			if p.offsetsFull(t.key) {
				// The messages are not answered when their offset cannot
				// be stored: the consumer would read them again.
				t.failStatus(uint32(codeOffsetsFull))
				p.sh.deliverTask(t)
				return
			}
			p.g.Submit(t, vsr.Request{Operation: opStoreOffset, User: t.user, WallClock: nowMicros(),
				Body: p.encodeOffsetOp(t.key, last, true)})
			return
		}
		p.sh.deliverTask(t)
	case tkDeleteSegments:
		if p.sh.n.replicaCount > 1 {
			// Every replica deletes the same segments: the op names the
			// first offset to keep, so replaying it deletes nothing more.
			p.g.Submit(t, vsr.Request{Operation: opDeleteSegments, User: t.user, WallClock: nowMicros(),
				Body: u64Bytes(p.keepFrom(int(t.count)))})
			return
		}
		p.flushSegments()
		if _, err := p.seg.DeleteOldestSegments(int(t.count)); err != nil {
			p.log.Error("delete segments failed", zap.Error(err))
			t.failStatus(uint32(wire.CodeError))
		}
		p.publish()
		p.sh.deliverTask(t)
	default:
		panic(fmt.Sprintf("replica: partition task of kind %d", t.kind))
	}
}

// keepFrom is the first offset kept when the oldest n sealed segments are
// deleted.
func (p *partition) keepFrom(n int) uint64 {
	segs := p.seg.Segments()
	sealed := 0
	for _, si := range segs {
		if si.Sealed {
			sealed++
		}
	}
	n = min(max(n, 0), sealed)
	if n == 0 {
		return p.seg.FirstOffset()
	}
	return segs[n-1].NextOffset
}

// encodeOffsetOp is a store-offset body carrying this node's
// partition.consumer_offsets_max.
func (p *partition) encodeOffsetOp(k offsetKey, offset uint64, auto bool) []byte {
	b := make([]byte, offsetOpSize)
	b[0] = k.kind
	binary.LittleEndian.PutUint32(b[1:], k.id)
	binary.LittleEndian.PutUint64(b[5:], offset)
	if auto {
		b[13] = offsetFlagAuto
	}
	binary.LittleEndian.PutUint32(b[14:], uint32(p.sh.n.cfg.Partition.ConsumerOffsetsMax))
	return b
}

// visibleNext is the end of what this replica serves: the state machine's
// next offset, or the segments' end when they hold more. They hold more
// only after a restart of a cluster node, until the group commits the
// journal ops past the restored checkpoint again (a replay that rewrites
// nothing): those records were committed and applied before the restart,
// so the current offset, polls and offset stores see them at once instead
// of the checkpoint's frontier (0 when there was none). In normal
// operation written == next after every apply.
func (p *partition) visibleNext() uint64 { return max(p.next, p.written) }

func (p *partition) current() uint64 {
	if v := p.visibleNext(); v > 0 {
		return v - 1
	}
	return 0
}

// pollResult is what a poll hands back to the connection: the reply prefix
// fields and the records, each a slice of the connection's buffer or of
// hdrs (the rewritten header of a record cut to the exact range).
type pollResult struct {
	partition  uint32
	current    uint64
	count      uint32
	lastOffset uint64
	parts      [][]byte
	hdrs       [2][wire.BatchHeaderSize]byte
	// An empty poll that may wait (long polling): it would find messages
	// once the partition's visible end passes need.
	waitable bool
	need     uint64
	// compressed: some part is a compressed record (codec.Compressed),
	// which the connection must decode; those that overrun the poll's
	// range come whole, with the range to keep in cuts.
	compressed bool
	cuts       [2]pollCut
	ncut       int
	// consumer offset reads
	found  bool
	stored uint64
}

// pollCut is the part of a whole compressed record a poll returns: count
// messages from offset from (offsets are dense).
type pollCut struct {
	part  int
	from  uint64
	count uint32
}

func (r *pollResult) cutOf(part int) (pollCut, bool) {
	for _, c := range r.cuts[:r.ncut] {
		if c.part == part {
			return c, true
		}
	}
	return pollCut{}, false
}

// poll serves a poll on the owning shard: it finds the start offset, copies
// the whole records covering it from the segments into the task's buffer
// and cuts the first and last record to the exact range.
func (p *partition) poll(t *task) {
	r := &t.poll
	r.partition, r.current, r.count = p.id, p.current(), 0
	r.parts = r.parts[:0]
	r.waitable, r.need = false, 0
	r.compressed, r.ncut = false, 0
	if t.count == 0 {
		return
	}
	if p.visibleNext() == 0 {
		r.waitable = true
		return
	}
	if p.purgeWanted > p.purgeGen {
		r.waitable, r.need = true, p.visibleNext()
		return
	}
	first := p.seg.FirstOffset()
	var start uint64
	switch t.strategy.Kind {
	case wire.PollOffset:
		start = t.strategy.Value
	case wire.PollTimestamp:
		ri, ok, err := p.seg.LocateTimestamp(t.strategy.Value)
		if err != nil {
			p.readFailed(t, err)
			return
		}
		if !ok {
			r.waitable, r.need = true, p.visibleNext()
			return
		}
		start = ri.BaseOffset
	case wire.PollFirst:
		start = first
	case wire.PollLast:
		if uint64(t.count) <= r.current {
			start = r.current + 1 - uint64(t.count)
		}
	case wire.PollNext:
		if v, ok := p.offsets[t.key]; ok {
			start = v + 1
		}
	default:
		t.failStatus(uint32(wire.CodeInvalidCommand))
		return
	}
	start = max(start, first)
	if start > r.current {
		r.waitable, r.need = true, start
		return
	}
	limit := p.sh.n.pollBufferMax
	want := uint64(float64(t.count)*p.avgMessageBytes()) + 2*uint64(wire.BatchHeaderSize) + 64<<10
	size := int(min(uint64(limit), max(want, 64<<10)))
	if cap(t.buf) < size {
		t.buf = make([]byte, size)
	}
	buf := t.buf[:min(cap(t.buf), limit)]
	// Read whole records until count messages are covered, the log ends or
	// the reply would outgrow the frame limit; the buffer grows as needed.
	total, next, got := 0, start, uint64(0)
	for got < uint64(t.count) && next <= r.current {
		if len(buf)-total < 4096 && len(buf) < limit {
			buf = growBuffer(buf, total, min(limit, 2*len(buf)))
		}
		res, err := p.seg.Read(buf[total:], segment.ReadRequest{From: next, MaxMessages: uint32(uint64(t.count) - got)})
		var small *segment.BufferTooSmallError
		if errors.As(err, &small) {
			if total+small.Need > limit {
				break
			}
			buf = growBuffer(buf, total, min(limit, max(2*len(buf), total+small.Need)))
			continue
		}
		if err != nil {
			p.readFailed(t, err)
			return
		}
		if res.N == 0 {
			break
		}
		total += res.N
		got += res.Messages
		next = res.NextOffset
	}
	t.buf = buf[:0]
	rest := buf[:total]
	from := start
	remaining := t.count
	hdr := 0
	for len(rest) >= wire.BatchHeaderSize && remaining > 0 {
		length := binary.LittleEndian.Uint64(rest[32:])
		rec := rest[:length]
		rest = rest[length:]
		base := binary.LittleEndian.Uint64(rec[8:])
		mc := binary.LittleEndian.Uint32(rec[48:])
		if base+uint64(mc) <= from {
			continue
		}
		compressed := codec.Compressed(rec[wire.BatchHeaderSize:])
		r.compressed = r.compressed || compressed
		if base >= from && mc <= remaining {
			r.parts = append(r.parts, rec)
			r.count += mc
			remaining -= mc
			from = base + uint64(mc)
			continue
		}
		if compressed {
			// Its messages all sit in its first frame: it goes whole, and
			// the connection cuts it after decoding.
			if r.ncut == len(r.cuts) {
				panic(fmt.Sprintf("replica: partition %s: poll cut more than two records", p.ns))
			}
			at := max(from, base)
			take := uint32(min(base+uint64(mc), at+uint64(remaining)) - at)
			r.cuts[r.ncut] = pollCut{part: len(r.parts), from: at, count: take}
			r.ncut++
			r.parts = append(r.parts, rec)
			r.count += take
			remaining -= take
			from = at + uint64(take)
			continue
		}
		v, err := wire.ParseBatch(rec)
		if err != nil {
			p.readFailed(t, err)
			return
		}
		s, ok := v.SliceByOffset(from, remaining)
		if !ok {
			continue
		}
		if hdr == len(r.hdrs) {
			// Only the first and the last record can be partial.
			panic(fmt.Sprintf("replica: partition %s: poll cut more than two records", p.ns))
		}
		r.hdrs[hdr] = s.Header
		r.parts = append(r.parts, r.hdrs[hdr][:], s.Frames)
		hdr++
		r.count += s.Count
		remaining -= s.Count
		from = max(from, base) + uint64(s.Count)
	}
	r.lastOffset = from - 1
	if r.count > 0 {
		n := 0
		for _, b := range r.parts {
			n += len(b)
		}
		p.stats.polledMsgs.Add(uint64(r.count))
		p.stats.polledBytes.Add(uint64(n))
	}
}

// growBuffer returns a buffer of size n holding buf[:keep].
func growBuffer(buf []byte, keep, n int) []byte {
	if n <= len(buf) {
		return buf
	}
	nb := make([]byte, n)
	copy(nb, buf[:keep])
	return nb
}

func (p *partition) readFailed(t *task, err error) {
	p.log.Error("poll read failed", zap.Error(err))
	t.poll.parts, t.poll.count = t.poll.parts[:0], 0
	t.failStatus(uint32(wire.CodeError))
}

func (p *partition) avgMessageBytes() float64 {
	if p.avgRecord > 0 {
		return p.avgRecord
	}
	n := p.seg.MessageCount()
	if n == 0 {
		return 1024
	}
	p.avgRecord = float64(p.seg.Size())/float64(n) + 1
	return p.avgRecord
}

// Retention. A pass (tkClean, every data_maintenance.messages.interval)
// picks the leading sealed segments that the topic's message_expiry
// (against this node's clock) or the partition's share of max_topic_size
// (max_topic_size / partition count) deletes; the active segment never
// goes. A single node deletes them at once. In cluster mode the replicas
// must hold identical segments, so only the group's primary in normal
// status evaluates retention, and it proposes a delete-segments op (172)
// naming the end offset of the last segment to delete: every replica
// applies it in log order with deleteSealedThrough, which deletes the same
// segments on every replica (their boundaries are a function of the log),
// and a replay or a duplicate proposal deletes nothing more.

// retentionKeep returns the first offset the topic's retention keeps in this
// partition at now (0: nothing to delete) and how many leading segments the
// expiry and the size rule each select.
func (p *partition) retentionKeep(t *metadata.Topic, now uint64) (keep uint64, expired, oversize int) {
	if e := t.Config.MessageExpiry; e != 0 && e != math.MaxUint64 && now > e {
		expired = p.seg.ExpiredPrefix(now - e)
	}
	if m := t.Config.MaxTopicSize; m != 0 && m != math.MaxUint64 {
		oversize = p.seg.OversizePrefix(m / uint64(max(1, len(t.Partitions))))
	}
	if k := max(expired, oversize); k > 0 {
		keep = p.seg.Segments()[k-1].NextOffset
	}
	return keep, expired, oversize
}

// deleteSealedThrough deletes the leading sealed segments that end at or
// below keep (NextOffset ≤ keep) and returns how many it deleted. It stops
// at the first segment that ends above keep or is not sealed, so it is
// idempotent and never touches the active segment.
func (p *partition) deleteSealedThrough(keep uint64) (int, error) {
	p.flushSegments()
	n := p.seg.SealedPrefixThrough(keep)
	if n == 0 {
		return 0, nil
	}
	segs := p.seg.Segments()
	k, err := p.seg.DeleteOldestSegments(n)
	for _, si := range segs[:k] {
		// The transfer caches of the other segments stay valid.
		delete(p.sealedSums, si.StartOffset)
		if p.segHash != nil && p.segHash.start == si.StartOffset {
			p.segHash = nil
		}
	}
	p.avgRecord = 0
	p.publish()
	return k, err
}

// clean runs a retention pass over this partition.
func (p *partition) clean(t *metadata.Topic, now uint64) {
	if t == nil {
		return
	}
	if p.sh.n.replicaCount > 1 {
		p.proposeRetention(t, now)
		return
	}
	p.flushSegments()
	keep, expired, oversize := p.retentionKeep(t, now)
	if keep == 0 {
		return
	}
	n, err := p.deleteSealedThrough(keep)
	if err != nil {
		p.log.Error("retention failed", zap.Error(err))
	}
	if n > 0 {
		p.log.Info("retention deleted segments", zap.Int("segments", n), zap.Uint64("first_offset", p.seg.FirstOffset()),
			zap.Int("expired", expired), zap.Int("over_size", oversize))
	}
}

// proposeRetention is clean in cluster mode: the primary proposes the
// deletion (see Retention above); backups leave it to the primary.
func (p *partition) proposeRetention(t *metadata.Topic, now uint64) {
	g := p.g
	if g == nil || g.Replica() == nil || g.Closed() || g.Failed() != nil {
		return
	}
	if info := g.Replica().Info(); !info.IsPrimary || info.Status != "normal" {
		return
	}
	p.flushSegments()
	keep, expired, oversize := p.retentionKeep(t, now)
	if keep == 0 || keep <= p.retaining {
		// Nothing to delete, or that deletion is already proposed.
		return
	}
	p.retaining = keep
	p.log.Info("retention proposes deleting segments", zap.Uint64("keep_from", keep),
		zap.Int("expired", expired), zap.Int("over_size", oversize))
	g.Submit(&task{kind: tkClean, onDone: func(d *task) {
		if p.retaining == keep {
			p.retaining = 0
		}
		if d.status != 0 || d.vstatus != vsr.StatusOK {
			// The next pass proposes it again (if this node still leads).
			p.log.Info("retention op not committed", zap.Uint64("keep_from", keep),
				zap.Stringer("status", wire.Code(d.status)), zap.Stringer("vsr_status", d.vstatus))
		} else if len(d.reply) == 4 && binary.LittleEndian.Uint32(d.reply) != 0 {
			p.log.Error("retention op failed", zap.Uint64("keep_from", keep), zap.Stringer("code", wire.Code(binary.LittleEndian.Uint32(d.reply))))
		}
	}}, vsr.Request{Operation: opDeleteSegments, WallClock: now, Body: u64Bytes(keep)})
}

// close releases the partition's files.
func (p *partition) close() {
	p.feed.Close()
	if p.g != nil && !p.g.Closed() {
		p.g.Drop(uint32(wire.CodePartitionNotFound))
	}
	if p.seg != nil {
		p.flushPendingOnClose()
		_ = p.seg.Close()
	}
}

func (p *partition) flushPendingOnClose() {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("segment flush at close failed", zap.Any("panic", r))
		}
	}()
	p.flushSegments()
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

func vsrChecksum(u xxh3.Uint128) vsr.Checksum {
	var c vsr.Checksum
	binary.LittleEndian.PutUint64(c[:], u.Lo)
	binary.LittleEndian.PutUint64(c[8:], u.Hi)
	return c
}

// submitPurge proposes the partition's purge to generation gen (an op the
// group applies once per generation).
func (p *partition) submitPurge(gen uint64) {
	p.purgeWanted = max(p.purgeWanted, gen)
	p.g.Submit(&task{kind: tkPartPurge, onDone: func(*task) {}},
		vsr.Request{Operation: opPurgePartition, WallClock: nowMicros(), Body: u64Bytes(gen)})
}
