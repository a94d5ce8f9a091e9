package plane

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/vsr"
)

// exchange sends one frame from every node to every other node, alternating
// Send (a decoded vsr.Message) and SendFrame, and checks each arrives intact
// with the right sender and group.
func exchange(t *testing.T, c *cluster, round int) {
	t.Helper()
	n := len(c.nodes)
	id := c.nodes[0].tr.ClusterID()
	want := map[uint8][][]byte{}
	for i, src := range c.nodes {
		for j := range c.nodes {
			if i == j {
				continue
			}
			var body []byte
			if (i+j+round)%2 == 1 {
				body = bytes.Repeat([]byte{byte(i), byte(j), byte(round)}, 100*(j+1))
			}
			group := uint64(round)<<8 | uint64(i)<<4 | uint64(j)
			f := testFrame(id, uint8(i), uint8(n), group, body)
			var err error
			if (i+round)%2 == 0 {
				m, derr := vsr.Decode(f, 1<<20)
				if derr != nil {
					t.Fatal(derr)
				}
				err = src.tr.Send(uint8(j), m)
			} else {
				err = src.tr.SendFrame(uint8(j), f)
			}
			if err != nil {
				t.Fatalf("round %d: %d → %d: %v", round, i, j, err)
			}
			want[uint8(j)] = append(want[uint8(j)], f)
		}
	}
	for j, dst := range c.nodes {
		got := map[string]bool{}
		for range want[uint8(j)] {
			d := dst.sink.next(t)
			h := (*vsr.Header)(d.frame[:vsr.HeaderSize])
			if d.from != h.Replica() || d.group != h.Group() {
				t.Fatalf("node %d: delivered as from %d group %d, frame says %d/%d", j, d.from, d.group, h.Replica(), h.Group())
			}
			got[string(d.frame)] = true
		}
		for _, f := range want[uint8(j)] {
			if !got[string(f)] {
				t.Fatalf("round %d: node %d did not receive a frame of %d bytes from %d", round, j, len(f), f[59])
			}
		}
	}
}

func TestMeshExchangesFramesBothWays(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t, nil)
	c.waitMesh(t)
	for round := 0; round < 4; round++ {
		exchange(t, c, round)
	}
	// A sender counts a frame once its write returned, which can be after
	// the receiver already delivered it: wait for the counters to settle.
	eventually(t, "frame counters settle at 4 each way", func() bool {
		for _, n := range c.nodes {
			for _, p := range n.tr.Stats().Peers {
				if p.FramesOut != 4 || p.FramesIn != 4 {
					return false
				}
			}
		}
		return true
	})
	for i, n := range c.nodes {
		s := n.tr.Stats()
		for _, p := range s.Peers {
			if !p.Connected || p.FramesOut != 4 || p.FramesIn != 4 || p.BytesIn == 0 || p.BytesOut == 0 {
				t.Errorf("node %d peer %d: %+v", i, p.ReplicaID, p)
			}
			if p.WriteBatches == 0 || p.WriteBatches > p.FramesOut {
				t.Errorf("node %d peer %d: %d batches for %d frames", i, p.ReplicaID, p.WriteBatches, p.FramesOut)
			}
		}
		for r, v := range s.Refusals {
			if v != 0 {
				t.Errorf("node %d refused %d connections for %s", i, v, Reason(r))
			}
		}
	}
	// Exactly one link per pair: 0 dials 1 and 2, 1 dials 2.
	if a := c.nodes[0].tr.Stats().Accepted; a != 0 {
		t.Errorf("node 0 accepted %d links; nobody dials the lowest id", a)
	}
	if a := c.nodes[2].tr.Stats().Accepted; a != 2 {
		t.Errorf("node 2 accepted %d links, want 2", a)
	}
}

func TestReconnectAfterPeerRestart(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t, nil)
	c.waitMesh(t)
	exchange(t, c, 0)

	if err := c.nodes[1].tr.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "peers notice node 1 is gone", func() bool {
		return !c.nodes[0].tr.Connected(1) && !c.nodes[2].tr.Connected(1)
	})
	f := testFrame(c.nodes[0].tr.ClusterID(), 0, 3, 7, nil)
	if err := c.nodes[0].tr.SendFrame(1, f); !errors.Is(err, ErrPeerDown) {
		t.Fatalf("send to a stopped peer: %v, want ErrPeerDown", err)
	}

	c.start(t, 1, nil, nil) // rebinds the same address
	c.waitMesh(t)
	exchange(t, c, 1)
	s := peerStats(c.nodes[0].tr.Stats(), 1)
	if s.Connects < 2 || s.Disconnects < 1 || s.RefusedDown != 1 {
		t.Errorf("node 0's view of node 1 after restart: %+v", s)
	}
	if s := peerStats(c.nodes[2].tr.Stats(), 1); s.Connects < 2 {
		t.Errorf("node 2 did not relink with node 1: %+v", s)
	}
}

func TestKeyRotationConnectsMixedNodes(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t, func(i int, cfg *Config) {
		switch i {
		case 0: // rotated: signs with the new key, still accepts the old
			cfg.Secret, cfg.PreviousSecret = []byte(keyNew), []byte(keyOld)
		case 1: // not rotated yet
			cfg.Secret = []byte(keyOld)
		case 2: // Iggy's first rotation step: old key, new one pre-trusted
			cfg.Secret, cfg.PreviousSecret = []byte(keyOld), []byte(keyNew)
		}
	})
	c.waitMesh(t)
	exchange(t, c, 0)
}

func TestWrongKeyIsRefused(t *testing.T) {
	c := newCluster(t, 2)
	c.start(t, 1, c.lns[1], nil)
	c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.Secret = []byte(keyNew) })
	acc := c.nodes[1]
	eventually(t, "node 1 refuses node 0's key", func() bool {
		return acc.tr.Stats().Refused(ReasonNoSharedKey) >= 2
	})
	if !logged(acc.logs, ReasonNoSharedKey) {
		t.Error("refusal not logged")
	}
	if c.nodes[0].tr.Connected(1) || acc.tr.Connected(0) {
		t.Fatal("linked despite different keys")
	}
	if peerStats(c.nodes[0].tr.Stats(), 1).DialFailures < 2 {
		t.Error("dialer did not count its failures")
	}
}

func TestWrongClusterIsRefused(t *testing.T) {
	c := newCluster(t, 2)
	c.start(t, 1, c.lns[1], nil)
	c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.ClusterName = "another-cluster" })
	eventually(t, "node 1 refuses the other cluster", func() bool {
		return c.nodes[1].tr.Stats().Refused(ReasonWrongCluster) >= 1
	})
	if !logged(c.nodes[1].logs, ReasonWrongCluster) {
		t.Error("refusal not logged")
	}
	if c.nodes[0].tr.Connected(1) {
		t.Fatal("linked across clusters")
	}
}

func TestAuthMismatchIsRefused(t *testing.T) {
	c := newCluster(t, 2)
	c.start(t, 1, c.lns[1], nil)
	c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.Auth, cfg.Secret = false, nil })
	eventually(t, "node 1 refuses an unauthenticated peer", func() bool {
		return c.nodes[1].tr.Stats().Refused(ReasonAuthMismatch) >= 1
	})
}

// TestDataKeyMismatchIsRefused: nodes whose encryption at rest is keyed
// differently (or on for one only) never link, since each would journal
// batches the other stored under a key it does not hold; the same key
// links.
func TestDataKeyMismatchIsRefused(t *testing.T) {
	for name, keys := range map[string][2][16]byte{
		"different keys": {{1}, {2}},
		"one side off":   {{}, {3}},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, 2)
			c.start(t, 1, c.lns[1], func(cfg *Config) { cfg.DataKeyID = keys[1] })
			c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.DataKeyID = keys[0] })
			eventually(t, "node 1 refuses node 0's data key", func() bool {
				return c.nodes[1].tr.Stats().Refused(ReasonDataKey) >= 1
			})
			if !logged(c.nodes[1].logs, ReasonDataKey) {
				t.Error("refusal not logged")
			}
			if c.nodes[0].tr.Connected(1) {
				t.Fatal("linked with different data keys")
			}
		})
	}
	c := newCluster(t, 2)
	same := func(cfg *Config) { cfg.DataKeyID = [16]byte{7} }
	c.start(t, 1, c.lns[1], same)
	c.start(t, 0, c.lns[0], same)
	c.waitMesh(t)
	exchange(t, c, 0)
}

func TestUnauthenticatedClusterLinks(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t, func(i int, cfg *Config) { cfg.Auth, cfg.Secret = false, nil })
	c.waitMesh(t)
	exchange(t, c, 0)
}

func TestSendRefusals(t *testing.T) {
	c := newCluster(t, 3)
	c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.MaxMessageSize = 4096 })
	tr := c.nodes[0].tr
	id := tr.ClusterID()
	small := testFrame(id, 0, 3, 1, nil)
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"self", tr.SendFrame(0, small), ErrUnknownPeer},
		{"outside roster", tr.SendFrame(3, small), ErrUnknownPeer},
		{"peer down", tr.SendFrame(1, small), ErrPeerDown},
		{"too large", tr.SendFrame(1, testFrame(id, 0, 3, 1, make([]byte, 4096))), ErrFrameTooLarge},
		{"short", tr.SendFrame(1, small[:100]), ErrBadFrame},
		{"size field lies", tr.SendFrame(1, append(append([]byte(nil), small...), 0)), ErrBadFrame},
		{"no header", tr.Send(1, vsr.Message{}), ErrBadFrame},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	if s := peerStats(tr.Stats(), 1); s.RefusedDown != 1 {
		t.Errorf("refused-down count %d, want 1", s.RefusedDown)
	}
	tr.Close()
	if err := tr.SendFrame(1, small); !errors.Is(err, ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
}

func TestFullPeerQueueRefuses(t *testing.T) {
	c := newCluster(t, 2)
	// Node 1 accepts; a raw client plays node 0 and never reads, so node 1's
	// writer blocks once the socket buffers fill and its queue fills behind it.
	acc := c.start(t, 1, c.lns[1], func(cfg *Config) {
		cfg.PeerQueueCapacity = 4
		cfg.MaxMessageSize = 2 << 20
		cfg.WriteTimeout = time.Minute
	})
	conn := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 2, keyOld)
	defer conn.Close()
	eventually(t, "the raw peer is linked", func() bool { return acc.tr.Connected(0) })
	big := testFrame(acc.tr.ClusterID(), 1, 2, 1, make([]byte, 1<<20))
	var full error
	for i := 0; i < 1000 && full == nil; i++ { // bounded: socket buffers hold a few MiB
		if err := acc.tr.SendFrame(0, big); errors.Is(err, ErrQueueFull) {
			full = err
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if full == nil {
		t.Fatal("queue never filled")
	}
	if s := peerStats(acc.tr.Stats(), 0); s.RefusedFull != 1 {
		t.Errorf("refused-full count %d, want 1", s.RefusedFull)
	}
	// The link drops: queued frames are discarded and counted.
	conn.Close()
	eventually(t, "the link drops", func() bool { return !acc.tr.Connected(0) })
	eventually(t, "queued frames discarded", func() bool { return peerStats(acc.tr.Stats(), 0).DroppedQueued > 0 })
}

func TestInboxRefusalDropsAndCounts(t *testing.T) {
	c := newCluster(t, 2)
	c.startAll(t, nil)
	c.waitMesh(t)
	c.nodes[1].sink.setRefuse(true)
	id := c.nodes[0].tr.ClusterID()
	for i := 0; i < 5; i++ {
		if err := c.nodes[0].tr.SendFrame(1, testFrame(id, 0, 2, uint64(i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "drops counted", func() bool { return peerStats(c.nodes[1].tr.Stats(), 0).DroppedIn == 5 })
	c.nodes[1].sink.setRefuse(false)
	exchange(t, c, 1) // the link survives drops
	if !c.nodes[1].tr.Connected(0) {
		t.Fatal("a refused delivery closed the link")
	}
}

func TestOversizeFrameClosesLinkAndRelinks(t *testing.T) {
	c := newCluster(t, 2)
	c.startAll(t, func(i int, cfg *Config) {
		if i == 0 {
			cfg.MaxMessageSize = 1 << 20
		} else {
			cfg.MaxMessageSize = 64 << 10
		}
	})
	c.waitMesh(t)
	id := c.nodes[0].tr.ClusterID()
	if err := c.nodes[0].tr.SendFrame(1, testFrame(id, 0, 2, 1, make([]byte, 512<<10))); err != nil {
		t.Fatal(err)
	}
	acc := c.nodes[1]
	eventually(t, "oversize refused", func() bool { return acc.tr.Stats().Refused(ReasonFrameTooLarge) == 1 })
	if !logged(acc.logs, ReasonFrameTooLarge) {
		t.Error("violation not logged")
	}
	if v := peerStats(acc.tr.Stats(), 0).Violations; v != 1 {
		t.Errorf("violations %d, want 1", v)
	}
	eventually(t, "relinked", func() bool { return peerStats(acc.tr.Stats(), 0).Connects >= 2 })
	c.waitMesh(t)
	exchange(t, c, 2)
}

func TestNewestLinkFromAPeerWins(t *testing.T) {
	c := newCluster(t, 2)
	acc := c.start(t, 1, c.lns[1], nil)
	first := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 2, keyOld)
	defer first.Close()
	eventually(t, "first link", func() bool { return acc.tr.Connected(0) })
	second := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 2, keyOld)
	defer second.Close()
	eventually(t, "second link replaces the first", func() bool { return peerStats(acc.tr.Stats(), 0).Connects == 2 })
	// The first connection is closed by the acceptor.
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := first.Read(make([]byte, 1)); err == nil {
		t.Fatal("replaced link still open")
	}
	// Frames flow on the second.
	if err := acc.tr.SendFrame(0, testFrame(acc.tr.ClusterID(), 1, 2, 9, nil)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, vsr.HeaderSize)
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := readFull(second, got); err != nil {
		t.Fatalf("no frame on the newest link: %v", err)
	}
	if h := (*vsr.Header)(got); h.Group() != 9 || h.Replica() != 1 {
		t.Fatalf("unexpected frame %s from %d", fmt.Sprint(h.Group()), h.Replica())
	}
	if !acc.tr.Connected(0) {
		t.Fatal("peer not connected")
	}
}

func TestFromConfig(t *testing.T) {
	cfg, _, err := config.LoadFrom("", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Enabled = true
	cfg.Cluster.Auth = config.ClusterAuthConfig{Enabled: true, SharedSecret: keyNew, PreviousSharedSecret: keyOld}
	cfg.Cluster.TLS = config.ClusterTLSConfig{Enabled: true, SelfSigned: true}
	cfg.MessageBus.ReplicaReadBufferSize = 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := FromConfig(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Roster) != 2 || c.Roster[1].Addr.String() != "127.0.0.1:9091" || c.Roster[1].ID != 1 || c.Self != 1 {
		t.Errorf("roster %+v", c.Roster)
	}
	if !c.Auth || string(c.Secret) != keyNew || string(c.PreviousSecret) != keyOld || c.TLS.Mode != TLSSelfSigned {
		t.Errorf("auth/tls not mapped: %+v", c.TLS)
	}
	b := cfg.MessageBus
	if c.MaxMessageSize != uint32(b.MaxMessageSize) || c.MaxBatch != b.MaxBatch || c.PeerQueueCapacity != b.PeerQueueCapacity ||
		c.ReconnectMax != b.ReconnectPeriod.Duration || c.HandshakeGrace != b.HandshakeGrace.Duration ||
		c.WriteTimeout != cfg.Cluster.HeartbeatTimeout.Duration || c.ReadBufferSize != -1 {
		t.Errorf("message_bus not mapped: %+v", c)
	}
	c.Deliver = func(uint8, uint64, vsr.Message) error { return nil }
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if tr.ClusterID() != ClusterID("iggy-cluster") {
		t.Error("cluster id")
	}
}
