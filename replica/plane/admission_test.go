package plane

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"
)

// fakeConn records whether the gate closed it.
type fakeConn struct {
	net.Conn
	closed bool
}

func (f *fakeConn) Close() error { f.closed = true; return nil }

func TestGateAdmission(t *testing.T) {
	roster := netip.MustParseAddr("10.0.0.1")
	other := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("10.0.1.%d", i)) }
	type step struct {
		addr netip.Addr
		want gateRefusal
	}
	for _, tc := range []struct {
		name           string
		perAddr, total int
		steps          []step
		wantPool       int
	}{
		{name: "per-address quota", perAddr: 2, total: 10,
			steps:    []step{{other(1), gateAdmitted}, {other(1), gateAdmitted}, {other(1), gateAddressFull}, {other(2), gateAdmitted}},
			wantPool: 3},
		{name: "shared pool", perAddr: 4, total: 2,
			steps:    []step{{other(1), gateAdmitted}, {other(2), gateAdmitted}, {other(3), gatePoolFull}, {other(1), gatePoolFull}},
			wantPool: 2},
		{name: "roster address skips the full pool", perAddr: 2, total: 1,
			steps:    []step{{other(1), gateAdmitted}, {other(2), gatePoolFull}, {roster, gateAdmitted}, {roster, gateAdmitted}},
			wantPool: 1},
		{name: "roster address over its quota evicts, never refuses", perAddr: 1, total: 1,
			steps:    []step{{roster, gateAdmitted}, {roster, gateAdmitted}, {roster, gateAdmitted}},
			wantPool: 0},
		{name: "ipv4-mapped roster address", perAddr: 1, total: 1,
			steps:    []step{{other(1), gateAdmitted}, {netip.AddrFrom16(roster.As16()), gateAdmitted}},
			wantPool: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate([]netip.Addr{roster}, tc.perAddr, tc.total)
			var passes []*pass
			var conns []*fakeConn
			for i, s := range tc.steps {
				c := &fakeConn{}
				p, got := g.enter(s.addr, c)
				if got != s.want {
					t.Fatalf("step %d (%s): got %d, want %d", i, s.addr, got, s.want)
				}
				if p != nil {
					passes = append(passes, p)
					conns = append(conns, c)
				}
			}
			if _, pool := g.waiting(roster); pool != tc.wantPool {
				t.Fatalf("pool holds %d, want %d", pool, tc.wantPool)
			}
			// Every roster pass beyond the quota evicted (and closed) the
			// oldest one from that address.
			if n, _ := g.waiting(roster); n > tc.perAddr {
				t.Fatalf("%d roster connections wait, quota %d", n, tc.perAddr)
			}
			evicted := 0
			for i, p := range passes {
				if p.isEvicted() != conns[i].closed {
					t.Fatalf("pass %d: evicted %v, closed %v", i, p.isEvicted(), conns[i].closed)
				}
				if p.release() {
					evicted++
				}
				p.release() // idempotent
			}
			if n, pool := g.waiting(roster); n != 0 || pool != 0 {
				t.Fatalf("after releasing everything: roster %d, pool %d", n, pool)
			}
			if tc.name == "roster address over its quota evicts, never refuses" && evicted != 2 {
				t.Fatalf("evicted %d, want 2", evicted)
			}
		})
	}
}

// A flood of silent connections from outside the roster fills the shared
// pool and an attacker on the peer's own address fills its quota: the peer
// still links, ahead of both.
func TestRosterPeerLinksThroughFlood(t *testing.T) {
	c := newCluster(t, 3)
	nd := c.start(t, 1, c.lns[1], func(cfg *Config) {
		cfg.HandshakesMax, cfg.HandshakesPerAddress = 6, 2
		cfg.HelloGrace, cfg.HandshakeGrace = 5*time.Second, 5*time.Second
	})
	for i := 0; i < 4; i++ {
		for j := 0; j < 2; j++ {
			rawDial(t, fmt.Sprintf("127.0.0.%d", 20+i), c.roster[1].Addr)
		}
	}
	// Node 0's own address, silent: its quota is full too.
	rawDial(t, "127.0.0.1", c.roster[1].Addr)
	rawDial(t, "127.0.0.1", c.roster[1].Addr)
	eventually(t, "pool full", func() bool { return nd.tr.Stats().Refused(ReasonBusy) >= 1 })
	if _, pool := nd.tr.gate.waiting(netip.Addr{}); pool != 6 {
		t.Fatalf("pool holds %d, want 6", pool)
	}
	c.start(t, 2, c.lns[2], nil)
	c.start(t, 0, c.lns[0], nil)
	c.waitMesh(t)
	exchange(t, c, 0)
	if nd.tr.Stats().Refused(ReasonAddressQuota) == 0 {
		t.Fatal("no silent connection from node 0's address was evicted")
	}
}

// Two handshakes past their hello claim the same replica: the newer one
// wins and the older is closed (ReasonSuperseded).
func TestNewerHandshakeSupersedes(t *testing.T) {
	c := newCluster(t, 3)
	nd := c.start(t, 1, c.lns[1], nil)
	me := rawLocal(0, 3, keyOld)
	first := rawDial(t, "127.0.0.1", c.roster[1].Addr)
	_, hello := me.dialerHello(1)
	if _, err := first.Write(hello[:]); err != nil {
		t.Fatal(err)
	}
	var ch [HandshakeSize]byte
	if _, err := readFull(first, ch[:]); err != nil { // past the hello: it has a challenge
		t.Fatal(err)
	}
	second := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 3, keyOld)
	expectRefusal(t, nd, ReasonSuperseded, first)
	eventually(t, "the newer handshake linked", func() bool { return nd.tr.Connected(0) })
	_ = second
}
