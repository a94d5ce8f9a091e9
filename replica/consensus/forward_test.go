package consensus

import (
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// A small cluster of groups in the test's goroutine: three nodes, each one
// group of a three-replica cluster over its own disk, and the frames between
// them, which the test may hold back.

type netFrame struct {
	from, to int
	m        vsr.Message
}

type peerHost struct {
	*Driver
	id        int
	out       []netFrame
	delivered []Waiter
}

func (h *peerHost) Send(_ *Group, e vsr.Envelope) {
	h.out = append(h.out, netFrame{h.id, int(e.To), copyFrame(e.Message)})
}
func (h *peerHost) SendPeer(to uint8, m vsr.Message) error {
	h.out = append(h.out, netFrame{h.id, int(to), copyFrame(m)})
	return nil
}
func (h *peerHost) Deliver(w Waiter)                   { h.delivered = append(h.delivered, w) }
func (h *peerHost) Role(*Group, RoleChange)            {}
func (h *peerHost) StageCommit(*vfs.Batch) func(error) { return nil }
func (h *peerHost) AfterPass()                         {}
func (h *peerHost) Idle()                              {}

// copyFrame detaches a frame from the sender's buffers, as a network does.
func copyFrame(m vsr.Message) vsr.Message {
	f := append(append([]byte{}, m.Header[:]...), m.Body...)
	d, err := vsr.Decode(f, 1<<20)
	if err != nil {
		panic(err)
	}
	return d
}

// servedForward waits on the primary for a request a backup forwarded.
type servedForward struct {
	from   int
	origin vsr.ForwardOrigin
	reply  vsr.Reply
	code   uint32
}

func (f *servedForward) SetReply(rp vsr.Reply) { f.reply = rp }
func (f *servedForward) SetCode(code uint32)   { f.code = code }

type peer struct {
	fs   *vfs.Fault
	host *peerHost
	g    *Group
	sm   *logSM
	inc  uint64
}

type miniCluster struct {
	t     *testing.T
	peers []*peer
	// hold, when set, keeps back the frames it returns true for.
	hold func(f netFrame) bool
	held []netFrame
}

func newMiniCluster(t *testing.T) *miniCluster {
	c := &miniCluster{t: t}
	for i := 0; i < 3; i++ {
		p := &peer{fs: vfs.NewFault(uint64(40 + i))}
		if err := vfs.MkdirAllSync(p.fs, "/g", 0o755); err != nil {
			t.Fatal(err)
		}
		c.peers = append(c.peers, p)
		c.open(i, 1)
	}
	return c
}

// open (re)opens node i's group from its disk in incarnation inc.
func (c *miniCluster) open(i int, inc uint64) {
	p := c.peers[i]
	p.inc = inc
	p.host = &peerHost{id: i}
	p.host.Driver = NewDriver(p.fs, nil, p.host)
	cfg := vsr.DefaultConfig()
	cfg.Cluster = vsr.Checksum{1}
	cfg.Group = testGroup
	cfg.Replica, cfg.ReplicaCount = uint8(i), 3
	cfg.JournalSlots = 256
	cfg.CheckpointInterval = 64
	cfg.Seed = uint64(i + 1)
	p.sm = &logSM{fs: p.fs, dir: "/g"}
	g, err := Open(Spec{ID: testGroup, Name: fmt.Sprintf("n%d", i), Dir: "/g", FS: p.fs, Config: cfg, SM: p.sm,
		Host: p.host, Log: zap.NewNop(), PartOpts: journal.PartitionOptions{Budget: 1 << 20, FileSize: 256 << 10, MaxEntry: 4 << 10},
		Restore: p.sm.restore, Incarnation: inc, ForwardTimeoutTicks: 100_000,
		Sender: vsr.Sender{Cluster: cfg.Cluster, Group: testGroup, Replica: uint8(i), ReplicaCount: 3, Incarnation: inc}})
	if err != nil {
		c.t.Fatal(err)
	}
	p.sm.g = g
	p.g = g
	p.host.Drive()
	g.EndBoot()
}

func (c *miniCluster) receive(f netFrame) {
	p := c.peers[f.to]
	switch f.m.Header.Command() {
	case vsr.CmdForward:
		p.g.SubmitHere(&servedForward{from: f.from, origin: vsr.OriginOf(f.m)}, vsr.ForwardedRequest(f.m))
	case vsr.CmdForwardReply:
		p.g.ForwardReplied(f.m)
	default:
		p.g.Step(f.m)
	}
}

// run drives the cluster for ticks ticks, delivering every frame not held
// and routing the answers; it stops early once done reports true.
func (c *miniCluster) run(ticks int, done func() bool) {
	for tick := 0; tick < ticks; tick++ {
		for _, p := range c.peers {
			p.g.Tick(1)
		}
		for moved := true; moved; {
			moved = false
			for _, p := range c.peers {
				p.host.Drive()
				for _, w := range p.host.delivered {
					if sf, ok := w.(*servedForward); ok {
						p.host.out = append(p.host.out, netFrame{p.host.id, sf.from,
							copyFrame(vsr.EncodeForwardReply(p.g.sender, sf.origin, sf.reply, sf.code))})
					}
				}
				p.host.delivered = nil
				out := p.host.out
				p.host.out = nil
				for _, f := range out {
					moved = true
					if c.hold != nil && c.hold(f) {
						c.held = append(c.held, f)
						continue
					}
					c.receive(f)
				}
			}
		}
		if done != nil && done() {
			return
		}
	}
}

func (c *miniCluster) normalBackup(i int) bool {
	info := c.peers[i].g.Replica().Info()
	return info.Status == "normal" && !info.IsPrimary && info.Primary != uint8(i)
}

// TestForwardReplyOfAPreviousIncarnation: a backup forwards a request, then
// restarts; its group counts tokens from the start again, so the next
// request it forwards carries the same token. The primary's late answer to
// the first request must not answer the second (it would acknowledge a send
// at the offset of another one): the backup takes only replies naming its
// own incarnation.
func TestForwardReplyOfAPreviousIncarnation(t *testing.T) {
	c := newMiniCluster(t)
	c.run(2000, func() bool { return c.normalBackup(1) && c.normalBackup(2) })
	if !c.normalBackup(1) {
		t.Fatalf("node 1 not a backup in normal status: %+v", c.peers[1].g.Replica().Info())
	}
	primary := int(c.peers[1].g.Replica().Info().Primary)
	forwards := func(f netFrame) bool { return f.m.Header.Command() == vsr.CmdForward && f.from == 1 }

	c.hold = forwards
	first := &testWaiter{}
	c.peers[1].g.Submit(first, vsr.Request{Operation: testOperation, WallClock: 1, Body: []byte("first")})
	c.run(1, nil)
	if len(c.held) != 1 || c.held[0].to != primary {
		t.Fatalf("held %d frames, want the first request's forward to the primary", len(c.held))
	}
	old := c.held[0]
	c.held = nil

	// Node 1 restarts (its files intact) before the primary got the forward.
	c.peers[1].g.CloseFiles()
	c.open(1, 2)
	c.run(2000, func() bool { return c.normalBackup(1) })
	if !c.normalBackup(1) {
		t.Fatalf("restarted node 1 not a backup in normal status: %+v", c.peers[1].g.Replica().Info())
	}
	second := &testWaiter{}
	c.peers[1].g.Submit(second, vsr.Request{Operation: testOperation, WallClock: 2, Body: []byte("second")})
	c.run(1, nil)
	if len(c.held) != 1 {
		t.Fatalf("held %d frames, want the second request's forward", len(c.held))
	}
	if a, b := vsr.OriginOf(old.m), vsr.OriginOf(c.held[0].m); a.Token != b.Token || a.Incarnation == b.Incarnation {
		t.Fatalf("origins %+v and %+v: the scenario needs one token in two incarnations", a, b)
	}
	fresh := c.held[0]
	c.held = nil

	// The primary gets the first request now, executes it and answers.
	c.receive(old)
	c.run(50, nil)
	ops := func(body string) uint64 { return c.peers[primary].sm.opOf[body] }
	if ops("first") == 0 {
		t.Fatal("the primary did not execute the first request")
	}
	if second.reply.Op != 0 {
		t.Fatalf("the second request was answered with the first one's reply: op %d %q", second.reply.Op, second.reply.Body)
	}

	c.hold = nil
	c.receive(fresh)
	var answered bool
	c.run(200, func() bool { answered = second.reply.Op != 0; return answered })
	if !answered || second.reply.Status != vsr.StatusOK {
		t.Fatalf("second request: status %d op %d", second.reply.Status, second.reply.Op)
	}
	if want := ops("second"); second.reply.Op != want || string(second.reply.Body) != fmt.Sprintf("applied %d", want) {
		t.Fatalf("second request answered op %d %q; it is op %d", second.reply.Op, second.reply.Body, want)
	}
}
