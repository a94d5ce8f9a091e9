package stack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// node is one process's stack as the server runs it on a shard: a
// consensus.Driver over the process's disk, one consensus.Group per
// partition with a partition.Partition as its state machine, and the
// partition write pipeline riding the driver's group commits. The
// simulator is its host: it carries the groups' envelopes over the
// simulated network and collects the answers of the requests it submitted.
type node struct {
	w    *world
	id   int
	disk *vfs.Fault
	// fs is disk as the stack sees it: through vfs.Bounded holding a few
	// descriptors, as a server's shard holds its files, so files are
	// closed and reopened underneath between crashes and faults.
	fs    vfs.FS
	drv   *consensus.Driver
	pipe  *partition.Pipeline
	parts []*replicated
	batch vfs.Batch
	// answered holds the waiters the groups answered during a drive, in
	// the order they were answered.
	answered []consensus.Waiter
}

// replicated is one partition on a node: its state machine and the
// consensus group that journals and replicates its ops.
type replicated struct {
	n   *node
	idx int
	p   *partition.Partition
	g   *consensus.Group
	// installs counts checkpoints installed by state transfer.
	installs int
}

// Simulated topology: every node holds every partition.
const (
	streamID = 1
	topicID  = 1
)

func partitionNS(idx int) shard.Namespace {
	return shard.MustNamespace(streamID, topicID, uint32(idx+1))
}

func topicConfig(d metadata.Durability) metadata.TopicConfig {
	c := metadata.TopicConfig{TopicSettings: wire.DefaultTopicSettings(), Durability: d, ConsumerOffsetDurability: d}
	// The smallest segments the server allows, so runs roll and seal some.
	c.SegmentSize = 1 << 20
	return c
}

// vsrConfig mirrors the server's partition group configuration (replica
// package, partitionVSRConfig) with the simulator's small windows.
func (w *world) vsrConfig(replica, idx int) vsr.Config {
	c := vsr.DefaultConfig()
	c.Cluster = w.cluster
	c.Group = uint64(partitionNS(idx))
	c.Replica, c.ReplicaCount = uint8(replica), uint8(w.n)
	c.MessageSizeMax = maxFrame
	c.TransferChunkBytes = min(c.TransferChunkBytes, int(maxFrame)-vsr.HeaderSize)
	c.PrepareQueueDepth = 8
	c.RequestQueueDepth = 64
	c.Dedup = true
	c.ClientsMax = producersMax
	c.JournalSlots = 4 * 64
	c.CheckpointInterval = 32
	c.Seed = w.o.Seed ^ uint64(replica)<<32 ^ uint64(idx)
	if w.durability[idx] == metadata.DurabilityPersisted {
		c.Durability = vsr.Persisted
	}
	return c
}

const (
	maxFrame     = 256 << 10
	producersMax = 64
)

// boot opens every partition of process id from its disk, as a server's
// boot does: a partition whose storage is damaged is set aside and opened
// empty as a rejoining replica (it does not vote until its peers refilled
// it).
func (w *world) boot(id int, disk *vfs.Fault, rejoin bool) (*node, error) {
	n := &node{w: w, id: id, disk: disk, fs: vfs.NewBounded(disk, w.descriptors), pipe: partition.NewPipeline(0, nil)}
	n.drv = consensus.NewDriver(n.fs, nil, n)
	for idx := 0; idx < w.groups; idx++ {
		rp, err := n.open(idx, rejoin)
		if err != nil && (partition.Damaged(err) || errors.Is(err, superblock.ErrCorrupt) || errors.Is(err, consensus.ErrStateLost)) {
			w.res.Faults["quarantine"]++
			if !w.procs[id].damaged {
				// Crashes, power losses and failed or torn writes never
				// destroy what was synced: storage they leave behind must
				// open (a torn tail is cut, unsynced data is lost).
				w.fail("p%d g%d: storage damaged after crashes and write failures alone: %v", id, idx, err)
				return nil, err
			}
			w.tracef("p%d g%d storage damaged, rejoining empty: %v", id, idx, err)
			if rerr := n.fs.RemoveAll(partitionDir(idx)); rerr != nil {
				return nil, rerr
			}
			rp, err = n.open(idx, true)
		}
		if err != nil {
			n.close()
			return nil, fmt.Errorf("boot p%d g%d: %w", id, idx, err)
		}
		n.parts = append(n.parts, rp)
	}
	return n, nil
}

func partitionDir(idx int) string { return partition.Dir("/data", streamID, topicID, uint32(idx+1)) }

func (n *node) open(idx int, rejoin bool) (*replicated, error) {
	w := n.w
	rp := &replicated{n: n, idx: idx}
	log := w.log.With(zap.Int("node", n.id)) // traces tell the nodes apart
	cfg := partition.Config{Dir: partitionDir(idx), Stream: streamID, Topic: topicID, ID: uint32(idx + 1), Revision: 1,
		TopicConfig: topicConfig(w.durability[idx]), Cluster: true, ValidateChecksum: true, MaxRecordSize: maxFrame,
		ConsumerOffsetsMax: 16, PollBufferMax: 4 << 20, Codec: codec.NewStack(nil, maxFrame), Pipeline: n.pipe,
		Log: log}
	p, err := partition.Open(n.fs, cfg, rp)
	if err != nil {
		return nil, err
	}
	rp.p = p
	vcfg := w.vsrConfig(n.id, idx)
	ops := int64(vcfg.JournalSlots/2 + vcfg.CheckpointInterval + vcfg.PrepareQueueDepth + 2)
	entry := int64(maxFrame) + 4096
	g, err := consensus.Open(consensus.Spec{
		ID: vcfg.Group, Name: partitionNS(idx).String(), Dir: cfg.Dir, FS: n.fs, Config: vcfg, SM: p, Host: n,
		Log: log, PartOpts: journal.PartitionOptions{Budget: ops * (entry + journal.RecordHeaderSize), MaxEntry: int(entry)},
		Cluster: superblockID(w.cluster), ClusterName: "sim", Incarnation: w.incarnation(n.id), Restore: p.Restore,
		Rejoin: rejoin, Sender: n.sender(idx),
		ForwardTimeoutTicks: forwardTimeoutTicks,
	})
	if err != nil {
		p.Close()
		return nil, err
	}
	rp.g = g
	if err := p.CheckFrontier(g.Superblock().OffsetFrontier); err != nil {
		g.CloseFiles()
		p.Close()
		return nil, err
	}
	n.drv.Drive()
	g.EndBoot()
	p.Start(nil)
	return rp, nil
}

const forwardTimeoutTicks = 200

// sender signs the node's forward frames of partition idx.
func (n *node) sender(idx int) vsr.Sender {
	return vsr.Sender{Cluster: n.w.cluster, Group: uint64(partitionNS(idx)), Replica: uint8(n.id), ReplicaCount: uint8(n.w.n),
		Incarnation: n.w.incarnation(n.id)}
}

func superblockID(c vsr.Checksum) superblock.Uint128 {
	return superblock.Uint128{Lo: binary.LittleEndian.Uint64(c[:8]), Hi: binary.LittleEndian.Uint64(c[8:])}
}

// close releases the node's files (a crash drops the disk image anyway;
// closing keeps the stack's own bookkeeping honest).
func (n *node) close() {
	for _, rp := range n.parts {
		if rp.g != nil && !rp.g.Closed() {
			rp.g.CloseFiles()
		}
		rp.p.Close()
	}
	n.parts = nil
}

// consensus.Host.

func (n *node) MarkDirty(g *consensus.Group) { n.drv.MarkDirty(g) }
func (n *node) NeedSync(g *consensus.Group)  { n.drv.NeedSync(g) }
func (n *node) Send(g *consensus.Group, e vsr.Envelope) {
	n.w.send(n.id, int(e.To), e.Message)
}
func (n *node) SendPeer(to uint8, m vsr.Message) error {
	n.w.send(n.id, int(to), m)
	return nil
}
func (n *node) Deliver(wt consensus.Waiter)                      { n.answered = append(n.answered, wt) }
func (n *node) Role(g *consensus.Group, rc consensus.RoleChange) {}

// consensus.PassHooks: the partition write pipeline rides the driver's
// passes as on a shard.

func (n *node) StageCommit(b *vfs.Batch) func(error) { return n.pipe.StageCommit(b) }
func (n *node) AfterPass() {
	if n.pipe.Queued() {
		n.pipe.Flush(&n.batch, n.fs.Submit)
	}
}
func (n *node) Idle() { n.pipe.SyncIdle(&n.batch, n.fs.Submit) }

// partition.Host.

func (rp *replicated) Propose(req vsr.Request, done func(partition.Outcome)) {
	req.WallClock = rp.n.w.clock()
	rp.g.Submit(&internalOp{done: done}, req)
}

func (rp *replicated) Leading() bool {
	if rp.g == nil || !rp.g.Usable() {
		return false
	}
	info := rp.g.Replica().Info()
	return info.IsPrimary && info.Status == "normal"
}

func (rp *replicated) CheckpointAfter(op uint64) {
	if rp.g != nil {
		rp.g.Replica().CheckpointAfter(op)
	}
}

func (rp *replicated) RecordCheckpoint(op uint64, sum superblock.Uint128, frontier uint64) error {
	return rp.g.WriteCheckpoint(op, sum, frontier)
}

func (rp *replicated) Fail(err error) { rp.g.Fail(err) }
func (rp *replicated) Stopped() bool  { return rp.g == nil || !rp.g.Usable() }
func (rp *replicated) Installed()     { rp.installs++ }

// internalOp waits for an op the partition proposed itself.
type internalOp struct {
	out  partition.Outcome
	done func(partition.Outcome)
}

func (o *internalOp) SetReply(r vsr.Reply) { o.out.VStatus, o.out.Reply = r.Status, r.Body }
func (o *internalOp) SetCode(c uint32)     { o.out.Status = c }

// forwarded waits for a request another node forwarded to this one; its
// answer goes back in a ForwardReply frame.
type forwarded struct {
	from   int
	idx    int
	origin vsr.ForwardOrigin
	rp     vsr.Reply
	code   uint32
}

func (f *forwarded) SetReply(r vsr.Reply) { f.rp = r }
func (f *forwarded) SetCode(c uint32)     { f.code = c }

// receive hands a replica-plane frame to its group, as the server's
// replica plane does.
func (n *node) receive(from int, frame []byte) {
	m, err := vsr.Decode(frame, maxFrame)
	if err != nil {
		n.w.fail("p%d: undecodable frame from p%d: %v", n.id, from, err)
		return
	}
	idx := slices.IndexFunc(n.parts, func(rp *replicated) bool { return rp.g.ID() == m.Header.Group() })
	if idx < 0 {
		n.w.fail("p%d: frame for unknown group %d", n.id, m.Header.Group())
		return
	}
	g := n.parts[idx].g
	if !g.Usable() {
		return
	}
	switch m.Header.Command() {
	case vsr.CmdForward:
		req := vsr.ForwardedRequest(m)
		req.WallClock = max(req.WallClock, n.w.clock())
		g.SubmitHere(&forwarded{from: from, idx: idx, origin: vsr.ForwardOriginOf(m)}, req)
	case vsr.CmdForwardReply:
		g.ForwardReplied(m)
	default:
		g.Step(m)
	}
}

// drive runs the node's groups until quiet and routes their answers.
func (n *node) drive() {
	n.drv.Drive()
	for len(n.answered) > 0 {
		list := n.answered
		n.answered = nil
		for _, wt := range list {
			n.route(wt)
		}
		n.drv.Drive()
	}
}

func (n *node) route(wt consensus.Waiter) {
	switch x := wt.(type) {
	case *internalOp:
		x.done(x.out)
	case *forwarded:
		rp := n.parts[x.idx]
		n.w.send(n.id, x.from, vsr.EncodeForwardReply(n.sender(x.idx), x.origin, x.rp, x.code))
		if x.code == 0 && x.rp.Status == vsr.StatusOK && rp.g.Usable() {
			// As the server does: let the forwarding backup apply the op
			// now rather than at the next commit heartbeat.
			rp.g.CommitNow()
		}
	case *call:
		n.w.answer(x)
	default:
		panic(fmt.Sprintf("sim: unknown waiter %T", wt))
	}
}
