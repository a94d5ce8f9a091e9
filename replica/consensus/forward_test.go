package consensus

import (
	"encoding/binary"
	"testing"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// peerHost is a testHost whose forwarded frames are queued (recorded).
type peerHost struct {
	*testHost
	sent []vsr.Message
}

func (h *peerHost) SendPeer(_ uint8, m vsr.Message) error {
	h.sent = append(h.sent, m)
	return nil
}

// A forwarding node's tokens restart from 1 at every boot, so the
// primary's reply to a forward of the node's previous boot names a token
// the new boot may have drawn again: it must not answer the new boot's
// request (real-stack simulator, seed 594: a producer's send was
// acknowledged with the offset of another producer's batch, forwarded by
// the same node before it restarted). The reply to the new boot's own
// forward does.
func TestForwardReplyOfAnEarlierBootIsDropped(t *testing.T) {
	fsys := vfs.NewFault(5)
	open := func(incarnation uint64) (*Group, *peerHost) {
		t.Helper()
		h := &peerHost{testHost: newTestHost(fsys)}
		cfg := vsr.DefaultConfig()
		cfg.Group = testGroup
		cfg.JournalSlots = 256
		cfg.CheckpointInterval = 8
		sm := &logSM{fs: fsys, dir: "/g"}
		g, err := Open(Spec{ID: testGroup, Name: "test", Dir: "/g", FS: fsys, Config: cfg, SM: sm, Host: h,
			Log: zap.NewNop(), PartOpts: journal.PartitionOptions{Budget: 1 << 20, FileSize: 256 << 10, MaxEntry: 4 << 10},
			Restore: sm.restore, Incarnation: incarnation, ForwardTimeoutTicks: 100,
			Sender: vsr.Sender{Group: testGroup, Replica: 1, ReplicaCount: 3, Incarnation: incarnation}})
		if err != nil {
			t.Fatal(err)
		}
		sm.g = g
		h.Drive()
		g.EndBoot()
		return g, h
	}
	// forward registers a waiter and forwards its request to replica 0, as
	// Submit does on a backup.
	forward := func(g *Group, h *peerHost, body string) (*testWaiter, vsr.Message) {
		t.Helper()
		w := &testWaiter{}
		g.token++
		req := vsr.Request{Token: g.token, Client: vsr.Checksum{1}, Session: 1, Request: 1, Operation: testOperation, Body: []byte(body)}
		g.waiting[req.Token] = w
		g.forward(0, req)
		if len(h.sent) == 0 {
			t.Fatal("nothing forwarded")
		}
		m, err := vsr.Decode(append(append([]byte{}, h.sent[len(h.sent)-1].Header[:]...), h.sent[len(h.sent)-1].Body...), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return w, m
	}
	primary := vsr.Sender{Group: testGroup, Replica: 0, ReplicaCount: 3, Incarnation: 77}
	reply := func(fwd vsr.Message, offset uint64) vsr.Message {
		rp := vsr.Reply{Op: 3, Status: vsr.StatusOK, Body: binary.LittleEndian.AppendUint64(nil, offset)}
		m := vsr.EncodeForwardReply(primary, vsr.ForwardOriginOf(fwd), rp, 0)
		dec, err := vsr.Decode(append(append([]byte{}, m.Header[:]...), m.Body...), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return dec
	}

	g1, h1 := open(1)
	_, old := forward(g1, h1, "boot 1")
	g1.CloseFiles()

	g2, h2 := open(2)
	w, fresh := forward(g2, h2, "boot 2")
	if vsr.ForwardOriginOf(old).Token != vsr.ForwardOriginOf(fresh).Token {
		t.Fatalf("tokens %d and %d: the boots did not draw the same token", vsr.ForwardOriginOf(old).Token, vsr.ForwardOriginOf(fresh).Token)
	}
	// A reply of an op this node has not applied yet is held until it is;
	// either way the waiter left the forwarding table.
	answered := func() bool { _, waiting := g2.waiting[vsr.ForwardOriginOf(fresh).Token]; return !waiting }
	g2.ForwardReplied(reply(old, 3))
	if answered() || len(h2.delivered) != 0 || len(g2.held) != 0 || w.reply.Body != nil {
		t.Fatalf("the reply to boot 1's forward answered boot 2's request: %+v", w.reply)
	}
	g2.ForwardReplied(reply(fresh, 9))
	if !answered() || len(g2.held) != 1 || g2.held[0].w != w || binary.LittleEndian.Uint64(w.reply.Body) != 9 {
		t.Fatalf("boot 2's own reply: held %d, reply %+v", len(g2.held), w.reply)
	}
}
