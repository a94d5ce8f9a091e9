package consensus

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
)

// testNet runs three replicas of one group in the test's goroutine over
// one fault filesystem and one Driver, the way a simulator would: messages
// are queued and handed over between drives.
type testNet struct {
	t      *testing.T
	drv    *Driver
	hosts  [3]*netHost
	groups [3]*Group
	sms    [3]*logSM
	queue  []netMsg
	// down drops every message to that replica (-1: none).
	down int
	// lose, when set, drops the messages it returns true for.
	lose func(netMsg) bool
}

type netMsg struct {
	from, to uint8
	m        vsr.Message
}

// netHost is one replica's Host.
type netHost struct {
	*Driver
	net       *testNet
	idx       uint8
	delivered []*testWaiter
	// applied is the replica's applied op when each answer was delivered.
	applied []uint64
	// commitNow: groups asked to broadcast their commit after a served
	// forward (as the node does).
	commitNow bool
	// peerErr, when set, fails SendPeer (the link to the peer is down):
	// nothing is sent.
	peerErr error
}

func (h *netHost) Send(_ *Group, e vsr.Envelope) { h.net.post(h.idx, e.To, e.Message) }
func (h *netHost) SendPeer(to uint8, m vsr.Message) error {
	if h.peerErr != nil {
		return h.peerErr
	}
	h.net.post(h.idx, to, m)
	return nil
}
func (h *netHost) Role(*Group, RoleChange) {}
func (h *netHost) Deliver(w Waiter) {
	if sw, ok := w.(*servedForward); ok {
		// A request another replica forwarded here: answer it over the
		// net and let the backups apply it now.
		h.net.post(h.idx, sw.from, vsr.EncodeForwardReply(h.net.groups[h.idx].sender, sw.origin, sw.reply, sw.code))
		h.commitNow = true
		return
	}
	h.delivered = append(h.delivered, w.(*testWaiter))
	h.applied = append(h.applied, h.net.sms[h.idx].applied)
}

// servedForward waits for the answer to a forwarded request.
type servedForward struct {
	testWaiter
	from   uint8
	origin vsr.ForwardOrigin
}

func (n *testNet) post(from, to uint8, m vsr.Message) {
	h := *m.Header
	n.queue = append(n.queue, netMsg{from: from, to: to, m: vsr.Message{Header: &h, Body: bytes.Clone(m.Body)}})
}

func newTestNet(t *testing.T, fsys vfs.FS, forwardTicks uint64) *testNet {
	n := &testNet{t: t, drv: NewDriver(fsys, nil, nil), down: -1}
	cluster := vsr.Checksum{1, 2, 3}
	for i := range n.hosts {
		n.hosts[i] = &netHost{Driver: n.drv, net: n, idx: uint8(i)}
		cfg := vsr.DefaultConfig()
		cfg.Cluster, cfg.Group = cluster, testGroup
		cfg.Replica, cfg.ReplicaCount = uint8(i), 3
		cfg.JournalSlots, cfg.CheckpointInterval = 256, 8
		cfg.Durability = vsr.Persisted
		dir := fmt.Sprintf("/r%d", i)
		sm := &logSM{fs: fsys, dir: dir}
		g, err := Open(Spec{ID: testGroup, Name: dir, Dir: dir, FS: fsys, Config: cfg, SM: sm, Host: n.hosts[i],
			Log: zap.NewNop(), PartOpts: journal.PartitionOptions{Budget: 1 << 20, FileSize: 256 << 10, MaxEntry: 4 << 10},
			Cluster: superblock.Uint128{Lo: 7}, Restore: sm.restore, Incarnation: 1, ForwardTimeoutTicks: forwardTicks,
			Sender: vsr.Sender{Cluster: cluster, Group: testGroup, Replica: uint8(i), ReplicaCount: 3, Incarnation: 1}})
		if err != nil {
			t.Fatal(err)
		}
		sm.g = g
		n.groups[i], n.sms[i] = g, sm
	}
	t.Cleanup(func() {
		for _, g := range n.groups {
			g.CloseFiles()
		}
	})
	return n
}

// settle drives and delivers messages until nothing moves.
func (n *testNet) settle() {
	for i := 0; i < 10000; i++ {
		n.drv.Drive()
		for _, h := range n.hosts {
			if h.commitNow {
				h.commitNow = false
				n.groups[h.idx].CommitNow()
			}
		}
		if len(n.queue) == 0 && !n.drv.Dirty() {
			return
		}
		q := n.queue
		n.queue = nil
		for _, m := range q {
			if int(m.to) != n.down && (n.lose == nil || !n.lose(m)) {
				n.deliver(m)
			}
		}
	}
	n.t.Fatal("the replicas never settle")
}

func (n *testNet) deliver(nm netMsg) {
	g := n.groups[nm.to]
	switch nm.m.Header.Command() {
	case vsr.CmdForward:
		req := vsr.ForwardedRequest(nm.m)
		g.SubmitHere(&servedForward{from: nm.from, origin: vsr.ForwardOriginOf(nm.m)}, req)
	case vsr.CmdForwardReply:
		g.ForwardReplied(nm.m)
	default:
		g.Step(nm.m)
	}
}

// runUntil ticks every replica and settles until cond holds.
func (n *testNet) runUntil(what string, ticks int, cond func() bool) {
	for i := 0; i < ticks; i++ {
		n.settle()
		if cond() {
			return
		}
		for _, g := range n.groups {
			g.Tick(1)
		}
	}
	n.t.Fatalf("%s: not within %d ticks", what, ticks)
}

func (n *testNet) primary() (p, backup int) {
	info := n.groups[0].Replica().Info()
	p = int(info.Primary)
	return p, (p + 1) % 3
}

func (n *testNet) normal() bool {
	for _, g := range n.groups {
		if g.Replica().Info().Status != "normal" {
			return false
		}
	}
	return true
}

// TestForwardedReplyWaitsForTheLocalApply: a request submitted on a backup
// is forwarded to the primary, committed there, and answered on the backup
// only once the backup applied it too; every replica applies it once.
func TestForwardedReplyWaitsForTheLocalApply(t *testing.T) {
	n := newTestNet(t, vfs.NewFault(21), 500)
	n.runUntil("normal status", 2000, n.normal)
	p, b := n.primary()
	hb := n.hosts[b]
	w := &testWaiter{}
	n.groups[b].Submit(w, vsr.Request{Operation: testOperation, WallClock: 1, Body: []byte("via a backup")})
	n.runUntil("the forwarded answer", 2000, func() bool { return len(hb.delivered) > 0 })
	if w.code != 0 || w.reply.Status != vsr.StatusOK || w.reply.Op == 0 {
		t.Fatalf("forwarded answer: code %d status %d op %d", w.code, w.reply.Status, w.reply.Op)
	}
	if string(w.reply.Body) != fmt.Sprintf("applied %d", w.reply.Op) {
		t.Fatalf("forwarded answer body %q", w.reply.Body)
	}
	if hb.applied[0] < w.reply.Op {
		t.Fatalf("backup answered op %d having applied only %d", w.reply.Op, hb.applied[0])
	}
	if len(n.hosts[p].delivered) != 0 {
		t.Fatal("the primary answered a waiter of its own")
	}
	n.runUntil("every replica applies the op", 2000, func() bool {
		for _, sm := range n.sms {
			if sm.applied < w.reply.Op {
				return false
			}
		}
		return true
	})
	for i, sm := range n.sms {
		count := 0
		for _, body := range sm.bodies {
			if string(body) == "via a backup" {
				count++
			}
		}
		if count != 1 {
			t.Fatalf("replica %d applied the request %d times", i, count)
		}
	}
}

// TestForwardTimesOut: a request forwarded to a primary that does not
// answer is answered TransientNotCommitted (in doubt) once the forward
// timeout passed, not before, whether the forward was lost or only the
// primary's reply: in the second case the primary commits the request all
// the same, which is why the answer must not read as refused (58).
func TestForwardTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name      string
		replyLost bool
	}{{"primary down", false}, {"reply lost", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 40
			n := newTestNet(t, vfs.NewFault(22), timeout)
			n.runUntil("normal status", 2000, n.normal)
			p, b := n.primary()
			if tc.replyLost {
				n.lose = func(m netMsg) bool { return m.m.Header.Command() == vsr.CmdForwardReply }
			} else {
				n.down = p
			}
			hb := n.hosts[b]
			w := &testWaiter{}
			n.groups[b].Submit(w, vsr.Request{Operation: testOperation, WallClock: 1, Body: []byte("lost")})
			for i := 0; i < timeout-1; i++ {
				n.settle()
				n.groups[b].Tick(1)
			}
			n.settle()
			if len(hb.delivered) != 0 {
				t.Fatalf("answered before the forward timeout: status %d", w.reply.Status)
			}
			n.groups[b].Tick(1)
			n.settle()
			if len(hb.delivered) != 1 || w.reply.Status != vsr.StatusTransientNotCommitted || w.code != 0 {
				t.Fatalf("after the forward timeout: %d answers, status %d code %d", len(hb.delivered), w.reply.Status, w.code)
			}
			if vsr.Status(CodeInDoubt) != vsr.StatusTransientNotCommitted {
				t.Fatalf("CodeInDoubt %d is not TransientNotCommitted", CodeInDoubt)
			}
			committed := false
			for _, body := range n.sms[p].bodies {
				committed = committed || string(body) == "lost"
			}
			if committed != tc.replyLost {
				t.Fatalf("the primary applied the forwarded request: %v, want %v", committed, tc.replyLost)
			}
		})
	}
}

// TestForwardNotSentIsNotAccepted: a forward whose frame could not be sent
// (SendPeer failed) is answered TransientNotAccepted at once: the primary
// cannot have it, so it is not in doubt.
func TestForwardNotSentIsNotAccepted(t *testing.T) {
	n := newTestNet(t, vfs.NewFault(23), 40)
	n.runUntil("normal status", 2000, n.normal)
	p, b := n.primary()
	hb := n.hosts[b]
	hb.peerErr = errors.New("link down")
	w := &testWaiter{}
	n.groups[b].Submit(w, vsr.Request{Operation: testOperation, WallClock: 1, Body: []byte("unsent")})
	n.settle()
	if len(hb.delivered) != 1 || w.reply.Status != vsr.StatusTransientNotAccepted || w.code != 0 {
		t.Fatalf("unsent forward: %d answers, status %d code %d", len(hb.delivered), w.reply.Status, w.code)
	}
	if len(n.groups[b].fwd) != 0 {
		t.Fatalf("unsent forward still awaits a reply: %v", n.groups[b].fwd)
	}
	for i := 0; i < 50; i++ {
		n.groups[b].Tick(1)
		n.settle()
	}
	if len(hb.delivered) != 1 {
		t.Fatalf("unsent forward answered %d times", len(hb.delivered))
	}
	for _, body := range n.sms[p].bodies {
		if string(body) == "unsent" {
			t.Fatal("the primary applied a request never forwarded to it")
		}
	}
}
