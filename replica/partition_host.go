package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
	"github.com/zeebo/xxh3"
)

// The partition state machine and its files live in package partition;
// this file hosts one on its shard: opening it with its consensus group,
// turning tasks into its typed calls, and the Host it calls back.

// Partition prepare operations (package partition has the codec).
const (
	opSend             = partition.OpSend
	opStoreOffset      = partition.OpStoreOffset
	opDeleteOffset     = partition.OpDeleteOffset
	opPurgePartition   = partition.OpPurge
	opDropGroupOffsets = partition.OpDropGroupOffsets
	opDeleteSegments   = partition.OpDeleteSegments
	incarnationFile    = partition.IncarnationFile
	codeOffsetsFull    = partition.CodeOffsetsFull
)

type (
	offsetKey  = partition.OffsetKey
	partStats  = partition.Stats
	pollResult = partition.PollResult
)

// part is a partition hosted on its owning shard: the state machine, its
// consensus group and the shard. It is the partition's partition.Host and
// its group's consensus.StateMachine.
type part struct {
	*partition.Partition
	sh       *shardLoop
	g        *consensus.Group
	ns       shard.Namespace
	stream   uint32
	topic    uint32
	revision uint64
	dir      string
	log      *zap.Logger
	stats    *partStats
}

// partitionDir is the directory of (stream, topic, partition).
func partitionDir(root string, stream, topic, p uint32) string {
	return partition.Dir(root, stream, topic, p)
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

// openPartition opens (creating when new) a partition's storage and
// consensus group on this shard and replays its journal. In cluster mode a
// partition whose storage is damaged below its checkpoint
// (partition.ErrDamaged) is moved to {path}/quarantine/ (never deleted) and
// opened empty as a rejoining replica (no vote until caught up), which
// refills it from its peers by state transfer and journal repair; a single
// node has no peer to refill from and refuses to boot instead.
func (sh *shardLoop) openPartition(spec partitionSpec) (p *part, err error) {
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

// storageDamaged reports whether a partition failed to open because its
// files are damaged (rather than, say, a full disk).
func storageDamaged(err error) bool {
	return partition.Damaged(err) || errors.Is(err, superblock.ErrCorrupt) || errors.Is(err, consensus.ErrStateLost)
}

// partitionConfig is what the node opens the partition of spec with.
func (sh *shardLoop) partitionConfig(spec partitionSpec) partition.Config {
	return partition.Config{
		Dir:    partitionDir(sh.n.cfg.Path, spec.stream, spec.topic, spec.id),
		Stream: spec.stream, Topic: spec.topic, ID: spec.id, Revision: spec.revision, TopicConfig: spec.config,
		Cluster:             sh.n.replicaCount > 1,
		ValidateChecksum:    sh.n.cfg.Partition.ValidateChecksum,
		MaxRecordSize:       uint64(sh.n.maxFrame),
		BackgroundSyncBytes: int64(sh.n.cfg.Partition.BackgroundSyncBytes.Bytes()),
		SegmentCacheBytes:   int64(sh.n.cfg.Partition.SegmentCacheBytes.Bytes()),
		ConsumerOffsetsMax:  sh.n.cfg.Partition.ConsumerOffsetsMax,
		PollBufferMax:       sh.n.pollBufferMax,
		Codec:               sh.n.atRest.stack,
		Pipeline:            sh.pipe,
		Log:                 sh.log,
	}
}

func (sh *shardLoop) openPartitionOnce(spec partitionSpec) (*part, error) {
	cfg := sh.partitionConfig(spec)
	p := &part{sh: sh, ns: shard.MustNamespace(spec.stream, spec.topic, spec.id), stream: spec.stream, topic: spec.topic,
		revision: spec.revision, dir: cfg.Dir}
	pp, err := partition.Open(sh.fs, cfg, p)
	if err != nil {
		return nil, err
	}
	p.Partition, p.log, p.stats = pp, pp.Log(), pp.Stats()
	vcfg := sh.n.partitionVSRConfig(uint64(p.ns), spec.config)
	g, err := sh.openGroup(consensus.Spec{
		ID: uint64(p.ns), Name: p.ns.String(), Dir: p.dir, Config: vcfg, SM: p,
		PartOpts: sh.n.partitionJournalOptions(vcfg),
		Restore:  pp.Restore,
		Rejoin:   spec.rejoin,
	})
	if err != nil {
		pp.Close()
		return nil, err
	}
	p.g = g
	// The restored checkpoint says where offsets stood; the segments must
	// hold at least that much, or acknowledged messages below the
	// checkpoint are gone and their offsets could be minted again.
	if err := pp.CheckFrontier(g.Superblock().OffsetFrontier); err != nil {
		g.CloseFiles()
		pp.Close()
		return nil, err
	}
	sh.addGroup(g)
	sh.parts[p.ns] = p
	sh.drive()
	p.g.EndBoot()
	pp.Start(sh.n.waits.Open(uint64(p.ns), spec.revision))
	return p, nil
}

// partition.Host.

// Propose implements partition.Host.
func (p *part) Propose(req vsr.Request, done func(partition.Outcome)) {
	p.g.Submit(&task{then: func(d *task) {
		done(partition.Outcome{Status: d.status, VStatus: d.vstatus, Reply: d.reply})
	}}, req)
}

// Leading implements partition.Host.
func (p *part) Leading() bool {
	g := p.g
	if g == nil || g.Replica() == nil || !g.Usable() {
		return false
	}
	info := g.Replica().Info()
	return info.IsPrimary && info.Status == "normal"
}

// CheckpointAfter implements partition.Host.
func (p *part) CheckpointAfter(op uint64) {
	if p.g != nil && p.g.Replica() != nil {
		p.g.Replica().CheckpointAfter(op)
	}
}

// RecordCheckpoint implements partition.Host.
func (p *part) RecordCheckpoint(op uint64, sum superblock.Uint128, frontier uint64) error {
	return p.g.WriteCheckpoint(op, sum, frontier)
}

// Fail implements partition.Host.
func (p *part) Fail(err error) { p.g.Fail(err) }

// Stopped implements partition.Host.
func (p *part) Stopped() bool { return p.g == nil || p.g.Failed() != nil || p.g.Closed() }

// Installed implements partition.Host.
func (p *part) Installed() {
	p.sh.n.installs.Add(1)
	p.sh.n.metrics.StateTransfer(metrics.Partition)
}

// The partition's client requests: each turns into the partition's typed
// call and fills the task's result.

// send proposes a batch.
func (p *part) send(t *task, r *sendReq) {
	body := r.body
	if p.Cluster() && !r.owned {
		// The body outlives the reply (the replica retransmits it, the
		// plane's queues reference it): it cannot alias the
		// connection's buffers.
		body = bytes.Clone(body)
	}
	// Nothing this iteration writes references the connection's buffers
	// then (Apply stamps a copy of the header), so the reply need not wait for the
	// segment write.
	t.early = p.Cluster()
	p.g.Submit(t, partition.SendRequest(r.producer, r.session, r.request, r.user, nowMicros(), body))
}

// storeOffset proposes a consumer offset.
func (p *part) storeOffset(t *task, r *storeOffsetReq) {
	req, code := p.StoreOffsetRequest(r.key, r.offset, r.user, nowMicros())
	p.submitOrFail(t, req, code)
}

// deleteOffset proposes a consumer offset's deletion.
func (p *part) deleteOffset(t *task, r *deleteOffsetReq) {
	req, code := p.DeleteOffsetRequest(r.key, r.user, nowMicros())
	p.submitOrFail(t, req, code)
}

// getOffset reads a consumer offset.
func (p *part) getOffset(t *task, r *getOffsetReq) {
	p.GetOffset(r.key, &t.poll)
	p.sh.complete(t)
}

// deleteSegments deletes the oldest sealed segments: a replicated op in a
// cluster, directly on a single node.
func (p *part) deleteSegments(t *task, r *deleteSegmentsReq) {
	if p.Cluster() {
		p.g.Submit(t, p.DeleteSegmentsRequest(int(r.count), r.user, nowMicros()))
		return
	}
	if err := p.DeleteOldest(int(r.count)); err != nil {
		t.fail(uint32(wire.CodeError))
	}
	p.sh.complete(t)
}

func (p *part) submitOrFail(t *task, req vsr.Request, code wire.Code) {
	if code != 0 {
		t.fail(uint32(code))
		p.sh.complete(t)
		return
	}
	p.g.Submit(t, req)
}

// poll polls and, for an auto-committing poll that returned messages,
// submits the offset store before the answer.
func (p *part) poll(t *task, r *pollReq) {
	buf, code := p.Poll(partition.PollRequest{Strategy: r.strategy, Count: r.count, Key: r.key, Buf: r.buf}, &t.poll)
	r.buf = buf
	if code != 0 {
		t.fail(uint32(code))
	}
	if t.status == 0 && r.auto && t.poll.Count > 0 {
		req, store, code := p.AutoCommitRequest(r.key, t.poll.LastOffset, r.user, nowMicros())
		if code != 0 {
			t.fail(uint32(code))
		}
		if store {
			p.g.Submit(t, req)
			return
		}
	}
	p.sh.complete(t)
}

// submitPurge proposes the partition's purge to generation gen.
func (p *part) submitPurge(gen uint64) { p.Purge(gen, nowMicros()) }

// close releases the partition's files.
func (p *part) close() {
	p.CloseFeed()
	if p.g != nil && !p.g.Closed() {
		p.g.Drop(uint32(wire.CodePartitionNotFound))
	}
	p.Close()
}

func codeReply(code uint32) []byte { return binary.LittleEndian.AppendUint32(make([]byte, 0, 4), code) }

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

func vsrChecksum(u xxh3.Uint128) vsr.Checksum {
	var c vsr.Checksum
	binary.LittleEndian.PutUint64(c[:], u.Lo)
	binary.LittleEndian.PutUint64(c[8:], u.Hi)
	return c
}
