package replica

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// taskKind says what a task asks of a shard.
type taskKind uint8

const (
	tkConn           taskKind = iota + 1 // adopt a handed-off connection
	tkMeta                               // a metadata request for the metadata group (shard 0)
	tkSystem                             // queue a system command (shard 0)
	tkSend                               // partition: send messages
	tkStoreOffset                        // partition: store a consumer offset
	tkDeleteOffset                       // partition: delete a consumer offset
	tkPoll                               // partition: poll messages
	tkGetOffset                          // partition: read a consumer offset
	tkDeleteSegments                     // partition: delete the oldest sealed segments
	tkPartOpen                           // effect: create or open a partition
	tkPartDelete                         // effect: delete a partition
	tkPartPurge                          // effect: purge a partition
	tkGroupDeleted                       // effect: drop a deleted group's offsets
	tkClean                              // retention pass over this shard's partitions
	tkFrame                              // a replica-plane frame for a group of this shard
	tkForwarded                          // a request a backup forwarded (internal, onDone)
	tkPartOp                             // an internal partition op (partition.Host.Propose, onDone)
)

// wireCodeUnavailable answers requests to a group that stopped after a
// storage failure: retryable for the client, which may reach a restarted
// node.
const wireCodeUnavailable = consensus.CodeUnavailable

// task is one unit of work for a shard loop. A connection owns one task and
// reuses it for every request it forwards (it waits for the answer before
// reading the next frame); the shard fills the result fields and signals
// done. Internal tasks use onDone instead, run on the shard goroutine.
type task struct {
	kind taskKind
	ns   shard.Namespace
	rev  uint64
	user uint32

	// Send: the verified batch in its stored form (aliases the
	// connection's read buffer or its encoding buffer, unless owned: a
	// fresh allocation nothing else references).
	body  []byte
	owned bool
	// Send: the producer identity (zero client: none, at-least-once),
	// the key of the partition's producer table.
	producer vsr.Checksum
	pSession uint64
	pRequest uint64
	// Metadata: the request for the metadata replica.
	req vsr.Request
	// Offsets and polls.
	key      offsetKey
	offset   uint64
	strategy wire.PollingStrategy
	count    uint32
	auto     bool
	buf      []byte
	// Effects.
	spec  partitionSpec
	gen   uint64
	group uint32
	cmd   metadata.Command
	conn  *conn
	// Replica-plane frames.
	from uint8
	msg  vsr.Message

	// Results.
	status  uint32 // non-zero: an Iggy code for the reply's status field
	vstatus vsr.Status
	evict   vsr.EvictionReason
	op      uint64
	reply   []byte
	poll    pollResult

	done   chan struct{}
	onDone func(*task)
}

func (t *task) failStatus(code uint32) { t.status = code }

// SetCode implements consensus.Waiter.
func (t *task) SetCode(code uint32) { t.status = code }

// SetReply implements consensus.Waiter.
func (t *task) SetReply(rp vsr.Reply) {
	t.vstatus, t.evict, t.op, t.reply = rp.Status, rp.Eviction, rp.Op, rp.Body
}

func (t *task) resetResult() {
	t.status, t.vstatus, t.evict, t.op, t.reply = 0, 0, 0, 0, nil
	t.poll.Reset()
}

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
	pipe      *partition.Pipeline
	batch     vfs.Batch
	deliver   []*task
	callbacks []*task
	outbox    []outTask
	stamps    stampPool

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
		if t.kind == tkConn {
			t.conn.abort()
			continue
		}
		t.failStatus(wireCodeUnavailable)
		sh.deliverTask(t)
	}
	for _, t := range sh.callbacks {
		t.onDone = nil
	}
	sh.callbacks = nil
	for _, t := range sh.deliver {
		if t.done != nil {
			t.done <- struct{}{}
		}
	}
	sh.deliver = nil
	sh.closeAll()
}

// closeAll flushes and closes every group's storage.
func (sh *shardLoop) closeAll() {
	for _, p := range sh.parts {
		p.close()
	}
	for _, g := range sh.groups {
		if !g.Closed() {
			g.Drop(wireCodeUnavailable)
		}
	}
	sh.parts = map[shard.Namespace]*part{}
	sh.groups = map[uint64]*consensus.Group{}
	for _, t := range sh.deliver {
		if t.done != nil {
			t.done <- struct{}{}
		}
	}
	sh.deliver = nil
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
func (sh *shardLoop) Deliver(w consensus.Waiter) { sh.deliverTask(w.(*task)) }

// deliverTask records a finished task; answers go out after the iteration's
// storage work (a send's reply must not release the connection's buffer
// while a segment write still references it).
func (sh *shardLoop) deliverTask(t *task) {
	if t.onDone != nil {
		sh.callbacks = append(sh.callbacks, t)
		return
	}
	sh.deliver = append(sh.deliver, t)
}

// settle drives the groups until nothing more happens, runs internal
// callbacks (which may submit more), then answers the connections.
func (sh *shardLoop) settle() {
	for {
		sh.drive()
		if len(sh.callbacks) == 0 {
			break
		}
		cbs := sh.callbacks
		sh.callbacks = nil
		for _, t := range cbs {
			f := t.onDone
			f(t)
		}
	}
	for i, t := range sh.deliver {
		t.done <- struct{}{}
		sh.deliver[i] = nil
	}
	sh.deliver = sh.deliver[:0]
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
	for _, g := range sh.groups {
		g.Tick(n)
	}
	if sh.meta != nil {
		sh.meta.tick()
	}
	sh.ticks += n
	sh.retryOpens()
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

// dispatch handles one task.
func (sh *shardLoop) dispatch(t *task) {
	switch t.kind {
	case tkConn:
		go t.conn.serve()
	case tkMeta:
		if sh.meta == nil {
			panic(fmt.Sprintf("replica: metadata request on shard %d", sh.id))
		}
		sh.meta.submitClient(t)
	case tkFrame:
		sh.onFrame(t)
	case tkSystem:
		var waiter *task
		if t.done != nil || t.onDone != nil {
			waiter = t
		}
		sh.meta.enqueueSystem(t.cmd, waiter)
	case tkSend, tkStoreOffset, tkDeleteOffset, tkPoll, tkGetOffset, tkDeleteSegments:
		p := sh.parts[t.ns]
		if p == nil || p.revision != t.rev {
			code := uint32(wire.CodePartitionNotFound)
			if p == nil && sh.pendingFor(t.ns, t.rev) {
				code = wireCodeUnavailable // the shard retries opening it
			}
			t.failStatus(code)
			sh.deliverTask(t)
			return
		}
		if p.g.Failed() != nil {
			t.failStatus(wireCodeUnavailable)
			sh.deliverTask(t)
			return
		}
		p.handle(t)
	case tkPartOpen:
		if p := sh.parts[t.ns]; p != nil {
			if p.revision == t.spec.revision {
				return
			}
			sh.deletePartition(p)
		}
		sh.dropPending(t.ns, sh.pendingRevision(t.ns))
		switch _, err := sh.openPartition(t.spec); {
		case err == nil:
			sh.n.registerPartition(sh.parts[t.ns])
		case openShortOfResources(err):
			sh.deferOpen(t.spec, err, false)
		default:
			sh.log.Error("opening partition failed", zap.Stringer("partition", t.ns), zap.Error(err))
		}
	case tkPartDelete:
		if p := sh.parts[t.ns]; p != nil && p.revision == t.rev {
			sh.deletePartition(p)
		}
		if sh.pendingFor(t.ns, t.rev) {
			// Never opened here: its storage goes the way of a deleted one.
			sh.dropPending(t.ns, t.rev)
			dir := partitionDir(sh.n.cfg.Path, t.ns.Stream(), t.ns.Topic(), t.ns.Partition())
			if err := sh.fs.RemoveAll(dir); err != nil {
				sh.log.Error("removing partition storage failed", zap.String("dir", dir), zap.Error(err))
			}
		}
	case tkPartPurge:
		if p := sh.parts[t.ns]; p != nil && p.revision == t.rev {
			p.submitPurge(t.gen)
		}
	case tkGroupDeleted:
		if p := sh.parts[t.ns]; p != nil && p.revision == t.rev {
			p.DropGroupOffsets(t.group, nowMicros())
		}
	case tkClean:
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
	default:
		panic(fmt.Sprintf("replica: shard %d: task kind %d", sh.id, t.kind))
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
