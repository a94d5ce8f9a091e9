package replica

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// wireCodeUnavailable answers requests to a group that stopped after a
// storage failure: retryable for the client, which may reach a restarted
// node.
const wireCodeUnavailable = consensus.CodeUnavailable

// shardLoop is one shard's handler: the consensus groups it owns (the
// metadata group on shard 0, the partitions whose namespace hashes to it),
// their storage, and the group commit of each loop iteration.
type shardLoop struct {
	n   *Node
	id  int
	fs  vfs.ShardFS
	log *zap.Logger

	groups map[uint64]*consensus.Group
	parts  map[shard.Namespace]*part
	meta   *metaSM

	drv *consensus.Driver
	// pipe is the segment write pipeline of this shard's partitions.
	pipe  *partition.Pipeline
	batch vfs.Batch
	// The tasks that finished this iteration (complete): internal ones
	// are finished between passes (their callbacks may submit more), the
	// connections' after the storage work.
	internal []*task
	conns    []*task
	outbox   []outTask
	stamps   stampPool

	// ticks counts consensus ticks; pending holds the partitions waiting
	// to be opened again (pending.go).
	ticks      uint64
	pending    map[shard.Namespace]*pendingOpen
	pendingDue uint64 // no pending open is due before this tick
}

type outTask struct {
	shard int
	t     *task
}

func newShardLoop(n *Node, id int, fsys vfs.ShardFS) *shardLoop {
	mp := n.cfg.MemoryPool
	sh := &shardLoop{n: n, id: id, fs: fsys, log: n.log.Named("shard").With(zap.Int("shard", id)),
		groups: map[uint64]*consensus.Group{}, parts: map[shard.Namespace]*part{},
		stamps: newStampPool(mp.Enabled, int64(mp.Size), mp.BucketCapacity, max(len(n.shards), 1))}
	sh.pipe = partition.NewPipeline(n.cfg.Partition.SegmentWritebackBytes.Bytes(), &sh.stamps)
	sh.drv = consensus.NewDriver(fsys, n.metrics, sh)
	return sh
}

// Handle implements shard.Handler: everything one wake-up brought, then the
// consensus work it caused, then one group commit, then the replies.
func (sh *shardLoop) Handle(it *shard.Iteration[*task]) {
	for _, t := range it.Messages {
		sh.dispatch(t)
	}
	if it.Ticks > 0 {
		sh.tick(it.Ticks)
	}
	sh.settle()
	sh.flushOutbox()
}

// Close implements shard.Handler: leftover requests are answered, files
// closed.
func (sh *shardLoop) Close(left shard.Leftover[*task]) {
	for _, t := range left.Messages {
		if r, ok := t.req.(*adoptConnReq); ok {
			r.conn.abort()
			continue
		}
		t.fail(wireCodeUnavailable)
		sh.complete(t)
	}
	// Internal callbacks are dropped: nothing runs on a closing shard.
	sh.internal = nil
	sh.wakeConns()
	sh.closeAll()
}

// closeAll flushes and closes every group's storage.
func (sh *shardLoop) closeAll() {
	for _, p := range sh.parts {
		p.close()
	}
	for _, g := range sh.groups {
		if !g.Closed() {
			g.Stop() // a prepared request may commit after the restart
		}
	}
	sh.parts = map[shard.Namespace]*part{}
	sh.groups = map[uint64]*consensus.Group{}
	sh.wakeConns()
}

// Pending implements shard.PendingReporter for the shutdown drain.
func (sh *shardLoop) Pending() int {
	n := len(sh.outbox)
	// A cluster node does not wait for its system commands: without a
	// quorum they would never finish.
	if sh.meta != nil && !sh.meta.systemIdle() && !sh.n.clustered() {
		n++
	}
	return n
}

// MarkDirty implements consensus.Host.
func (sh *shardLoop) MarkDirty(g *consensus.Group) { sh.drv.MarkDirty(g) }

// NeedSync implements consensus.Host.
func (sh *shardLoop) NeedSync(g *consensus.Group) { sh.drv.NeedSync(g) }

// Send implements consensus.Host: a message of g's Ready goes to the
// node's transport.
func (sh *shardLoop) Send(g *consensus.Group, e vsr.Envelope) { sh.n.transport.Send(g.ID(), e) }

// SendPeer implements consensus.Host (forwarded requests).
func (sh *shardLoop) SendPeer(to uint8, m vsr.Message) error { return sh.n.plane.Send(to, m) }

// Deliver implements consensus.Host: w is always a task.
func (sh *shardLoop) Deliver(w consensus.Waiter) { sh.complete(w.(*task)) }

// complete records a finished task; it is finished (task.finish) after the
// iteration's storage work: a send's reply must not release the
// connection's buffer while a segment write still references it, and an
// internal callback may submit more work for the next pass. An early task
// (task.early) finishes at once.
func (sh *shardLoop) complete(t *task) {
	if t.early {
		t.finish()
		return
	}
	if t.internal() {
		sh.internal = append(sh.internal, t)
		return
	}
	sh.conns = append(sh.conns, t)
}

// settle drives the groups until nothing more happens, finishes the
// internal tasks (which may submit more), then the connections' tasks.
func (sh *shardLoop) settle() {
	for {
		sh.drive()
		if len(sh.internal) == 0 {
			break
		}
		done := sh.internal
		sh.internal = nil
		for _, t := range done {
			t.finish()
		}
	}
	sh.wakeConns()
}

// wakeConns finishes the connections' tasks.
func (sh *shardLoop) wakeConns() {
	for i, t := range sh.conns {
		t.finish()
		sh.conns[i] = nil
	}
	sh.conns = sh.conns[:0]
}

// drive runs every dirty group's Ready until all are quiet, with one group
// commit (fdatasync per journal file) per pass and the segment writes the
// applied ops produced (consensus.Driver, with the hooks below).
func (sh *shardLoop) drive() { sh.drv.Drive() }

// StageCommit implements consensus.PassHooks: the segment syncs and
// writeback hints that are due ride the group commit's submission.
func (sh *shardLoop) StageCommit(b *vfs.Batch) func(error) { return sh.pipe.StageCommit(b) }

// AfterPass implements consensus.PassHooks: the records the pass applied
// are written to their segments.
func (sh *shardLoop) AfterPass() {
	if sh.pipe.Queued() {
		sh.pipe.Flush(&sh.batch, sh.submitSegments)
	}
}

// Idle implements consensus.PassHooks. With no group commit to ride
// (replicated topics journal without fdatasync) the segment syncs and
// hints that are due run on their own.
func (sh *shardLoop) Idle() { sh.pipe.SyncIdle(&sh.batch, sh.submitSegmentSyncs) }

// submitSegmentSyncs submits segment syncs and hints that ride no group
// commit.
func (sh *shardLoop) submitSegmentSyncs(b *vfs.Batch) error {
	start := time.Now()
	err := sh.fs.Submit(b)
	sh.n.metrics.ObserveStorage(metrics.SegmentSync, time.Since(start))
	return err
}

// submitSegments submits the pipeline's segment writes (partition.Pipeline
// .Flush: one vectored write per segment, all in one submission).
func (sh *shardLoop) submitSegments(b *vfs.Batch) error {
	start := time.Now()
	err := sh.fs.Submit(b)
	sh.n.metrics.ObserveStorage(metrics.SegmentWrite, time.Since(start))
	return err
}

func (sh *shardLoop) tick(n uint64) {
	// A shard stalled for long gets its ticks in one go; timeouts only need
	// to see that time passed, not every step of it.
	n = min(n, 100)
	prev := sh.ticks
	sh.ticks += n
	// Every group every QuietTickEvery ticks; in between only the awake
	// ones (consensus.Driver.TickAwake), so idle partitions cost little.
	if prev/consensus.QuietTickEvery != sh.ticks/consensus.QuietTickEvery {
		for _, g := range sh.groups {
			g.TickTo(sh.ticks)
		}
	} else {
		sh.drv.TickAwake(sh.ticks)
	}
	if sh.meta != nil {
		sh.meta.tick()
	}
	sh.retryOpens()
}

// addGroup hosts g from now on: its ticks start at the shard's count.
func (sh *shardLoop) addGroup(g *consensus.Group) {
	g.SetTickBase(sh.ticks)
	sh.groups[g.ID()] = g
	sh.drv.MarkDirty(g)
}

// sendTo queues t on shard i, keeping it in an outbox while that inbox is
// full (never dropped).
func (sh *shardLoop) sendTo(i int, t *task) {
	if len(sh.outbox) == 0 {
		if err := sh.n.rt.Send(i, t); err == nil {
			return
		}
	}
	sh.outbox = append(sh.outbox, outTask{shard: i, t: t})
}

func (sh *shardLoop) flushOutbox() {
	for len(sh.outbox) > 0 {
		o := sh.outbox[0]
		if err := sh.n.rt.Send(o.shard, o.t); err != nil {
			return
		}
		sh.outbox[0] = outTask{}
		sh.outbox = sh.outbox[1:]
	}
	sh.outbox = nil
}

// dispatch hands a task's request to its handler.
func (sh *shardLoop) dispatch(t *task) {
	switch r := t.req.(type) {
	case *adoptConnReq:
		go r.conn.serve()
	case *metaReq:
		if sh.meta == nil {
			panic(fmt.Sprintf("replica: metadata request on shard %d", sh.id))
		}
		sh.meta.submitClient(t, r)
	case *frameReq:
		sh.onFrame(r)
	case *systemReq:
		var waiter *task
		if t.waited() {
			waiter = t
		}
		sh.meta.enqueueSystem(r.cmd, waiter)
	case *sendReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.send(t, r)
		}
	case *storeOffsetReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.storeOffset(t, r)
		}
	case *deleteOffsetReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.deleteOffset(t, r)
		}
	case *getOffsetReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.getOffset(t, r)
		}
	case *pollReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.poll(t, r)
		}
	case *deleteSegmentsReq:
		if p := sh.partitionFor(t, r.partRef); p != nil {
			p.deleteSegments(t, r)
		}
	case *openPartitionReq:
		sh.openOrReplace(r.spec)
	case *deletePartitionReq:
		sh.deleteIncarnation(r.partRef)
	case *purgePartitionReq:
		if p := sh.parts[r.ns]; p != nil && p.revision == r.rev {
			p.submitPurge(r.gen)
		}
	case *groupDeletedReq:
		if p := sh.parts[r.ns]; p != nil && p.revision == r.rev {
			p.DropGroupOffsets(r.group, nowMicros())
		}
	case *cleanReq:
		sh.clean()
	default:
		panic(fmt.Sprintf("replica: shard %d: request %T", sh.id, t.req))
	}
}

// partitionFor is the partition a client request is for, or nil after
// completing the task with the refusal: PartitionNotFound, or Unavailable
// while the shard retries opening it or after its storage failed.
func (sh *shardLoop) partitionFor(t *task, at partRef) *part {
	p := sh.parts[at.ns]
	if p == nil || p.revision != at.rev {
		code := uint32(wire.CodePartitionNotFound)
		if p == nil && sh.pendingFor(at.ns, at.rev) {
			code = wireCodeUnavailable // the shard retries opening it
		}
		t.fail(code)
		sh.complete(t)
		return nil
	}
	if p.g.Failed() != nil {
		t.fail(wireCodeUnavailable)
		sh.complete(t)
		return nil
	}
	return p
}

// openOrReplace opens the partition spec names, replacing an older
// incarnation; one short of resources is retried later (pending.go).
func (sh *shardLoop) openOrReplace(spec partitionSpec) {
	ns := shard.MustNamespace(spec.stream, spec.topic, spec.id)
	if p := sh.parts[ns]; p != nil {
		if p.revision == spec.revision {
			return
		}
		sh.deletePartition(p)
	}
	sh.dropPending(ns, sh.pendingRevision(ns))
	switch _, err := sh.openPartition(spec); {
	case err == nil:
		sh.n.registerPartition(sh.parts[ns])
	case openShortOfResources(err):
		sh.deferOpen(spec, err, false)
	default:
		sh.log.Error("opening partition failed", zap.Stringer("partition", ns), zap.Error(err))
	}
}

// deleteIncarnation deletes the partition incarnation at names, open or
// still waiting to be opened.
func (sh *shardLoop) deleteIncarnation(at partRef) {
	if p := sh.parts[at.ns]; p != nil && p.revision == at.rev {
		sh.deletePartition(p)
	}
	if sh.pendingFor(at.ns, at.rev) {
		// Never opened here: its storage goes the way of a deleted one.
		sh.dropPending(at.ns, at.rev)
		dir := partitionDir(sh.n.cfg.Path, at.ns.Stream(), at.ns.Topic(), at.ns.Partition())
		if err := sh.fs.RemoveAll(dir); err != nil {
			sh.log.Error("removing partition storage failed", zap.String("dir", dir), zap.Error(err))
		}
	}
}

// clean runs a retention pass over the shard's partitions.
func (sh *shardLoop) clean() {
	view := sh.n.store.View()
	now := nowMicros()
	for _, p := range sh.parts {
		if p.g.Failed() != nil {
			continue
		}
		st := view.Stream(p.stream)
		if st == nil {
			continue
		}
		tp := st.Topic(p.topic)
		if tp == nil || tp.Revision > p.revision {
			continue
		}
		p.Clean(tp, now)
	}
}

// deletePartition tears a partition down: waiting requests are answered,
// files closed and its directory removed.
func (sh *shardLoop) deletePartition(p *part) {
	p.close()
	sh.n.releasePartitionSlot()
	delete(sh.parts, p.ns)
	delete(sh.groups, p.g.ID())
	sh.n.roles.remove(p.g.ID())
	sh.n.unregisterPartition(p)
	if err := sh.fs.RemoveAll(p.dir); err != nil {
		sh.log.Error("removing partition storage failed", zap.String("dir", p.dir), zap.Error(err))
	}
}
