package plane

import (
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/iggo/iggo/vsr"
)

func readFull(c net.Conn, b []byte) (int, error) { return io.ReadFull(c, b) }

// rawDial connects from fromIP (a loopback address) to addr.
func rawDial(t *testing.T, fromIP string, addr netip.AddrPort) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fromIP)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func rawLocal(claimed, roster uint8, key string) *local {
	id := ClusterID(testCluster)
	return &local{self: claimed, roster: roster, cluster: id, flags: FlagAuth, keys: []linkKey{deriveKey([]byte(key), id)}}
}

// clientHandshake runs the dialer side by hand over conn, as replica
// claimed, towards target.
func clientHandshake(conn net.Conn, me *local, target uint8, exp []byte) error {
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	defer conn.SetDeadline(time.Time{})
	_, hello := me.dialerHello(target)
	if _, err := conn.Write(hello[:]); err != nil {
		return err
	}
	var ch [HandshakeSize]byte
	if _, err := io.ReadFull(conn, ch[:]); err != nil {
		return err
	}
	fin, err := me.dialerFinish(target, hello[:], ch[:], exp)
	if err != nil {
		return err
	}
	_, err = conn.Write(fin[:])
	return err
}

// rawHandshake connects from fromIP as replica claimed and completes the
// handshake; the test fails if it does not.
func rawHandshake(t *testing.T, fromIP string, addr netip.AddrPort, claimed, target, roster uint8, key string) net.Conn {
	t.Helper()
	c := rawDial(t, fromIP, addr)
	if err := clientHandshake(c, rawLocal(claimed, roster, key), target, nil); err != nil {
		t.Fatalf("handshake as %d: %v", claimed, err)
	}
	return c
}

// expectRefusal waits until the node counted reason, checks it was logged,
// and checks conn was closed without a link.
func expectRefusal(t *testing.T, nd *node, reason Reason, conn net.Conn) {
	t.Helper()
	eventually(t, "refusal "+reason.String(), func() bool { return nd.tr.Stats().Refused(reason) >= 1 })
	if !logged(nd.logs, reason) {
		t.Errorf("refusal %s not logged", reason)
	}
	if conn != nil {
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		// EOF or a reset (the refuser may leave unread bytes behind); a
		// timeout means the connection was left open.
		if _, err := io.ReadAll(conn); err != nil && classify(err) == ReasonTimeout {
			t.Errorf("connection left open after refusal: %v", err)
		}
	}
}

// stillServes checks the refusing node still links with a legitimate peer
// and exchanges frames.
func stillServes(t *testing.T, c *cluster) {
	t.Helper()
	c.start(t, 0, c.lns[0], nil)
	c.waitMesh(t)
	exchange(t, c, 0)
}

func TestRefusals(t *testing.T) {
	type scenario struct {
		name   string
		reason Reason
		mut    func(*Config) // node 1's config
		// act attacks node 1 (at 127.0.0.2, roster of 3) and returns the
		// connection that must end up closed, if any.
		act func(t *testing.T, c *cluster) net.Conn
	}
	helloFrom := func(t *testing.T, c *cluster, fromIP string, me *local, target uint8) net.Conn {
		conn := rawDial(t, fromIP, c.roster[1].Addr)
		_, hello := me.dialerHello(target)
		if _, err := conn.Write(hello[:]); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	for _, sc := range []scenario{
		{name: "garbage", reason: ReasonGarbage, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawDial(t, "127.0.0.1", c.roster[1].Addr)
			junk := make([]byte, HandshakeSize)
			_, _ = rand.Read(junk)
			_, _ = conn.Write(junk)
			return conn
		}},
		{name: "http request", reason: ReasonGarbage, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawDial(t, "127.0.0.1", c.roster[1].Addr)
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			_, _ = conn.Write(append(req, make([]byte, HandshakeSize-len(req))...))
			return conn
		}},
		{name: "wrong cluster", reason: ReasonWrongCluster, act: func(t *testing.T, c *cluster) net.Conn {
			me := rawLocal(0, 3, keyOld)
			me.cluster = ClusterID("elsewhere")
			return helloFrom(t, c, "127.0.0.1", me, 1)
		}},
		{name: "wrong key", reason: ReasonNoSharedKey, act: func(t *testing.T, c *cluster) net.Conn {
			return helloFrom(t, c, "127.0.0.1", rawLocal(0, 3, keyNew), 1)
		}},
		{name: "wrong roster", reason: ReasonRosterMismatch, act: func(t *testing.T, c *cluster) net.Conn {
			return helloFrom(t, c, "127.0.0.1", rawLocal(0, 4, keyOld), 1)
		}},
		{name: "wrong target", reason: ReasonWrongTarget, act: func(t *testing.T, c *cluster) net.Conn {
			return helloFrom(t, c, "127.0.0.1", rawLocal(0, 3, keyOld), 2)
		}},
		{name: "unknown replica", reason: ReasonUnknownReplica, act: func(t *testing.T, c *cluster) net.Conn {
			me := rawLocal(9, 3, keyOld)
			return helloFrom(t, c, "127.0.0.1", me, 1)
		}},
		{name: "higher id dials lower", reason: ReasonWrongDirection, act: func(t *testing.T, c *cluster) net.Conn {
			return helloFrom(t, c, "127.0.0.3", rawLocal(2, 3, keyOld), 1)
		}},
		{name: "key holder claims another id", reason: ReasonSourceAddress, act: func(t *testing.T, c *cluster) net.Conn {
			// Node 2's address, the right key, claiming to be node 0.
			return helloFrom(t, c, "127.0.0.3", rawLocal(0, 3, keyOld), 1)
		}},
		{name: "bad finish MAC", reason: ReasonBadMAC, act: func(t *testing.T, c *cluster) net.Conn {
			// Knows the key id (it is public) but not the key.
			me := rawLocal(0, 3, keyOld)
			conn := helloFrom(t, c, "127.0.0.1", me, 1)
			var ch [HandshakeSize]byte
			if _, err := io.ReadFull(conn, ch[:]); err != nil {
				t.Fatal(err)
			}
			f := Handshake{Step: StepFinish, Flags: FlagAuth, Sender: 0, Receiver: 1, RosterSize: 3, Cluster: me.cluster, KeyID: me.keys[0].id}
			_, _ = rand.Read(f.MAC[:])
			enc := f.Encode()
			_, _ = conn.Write(enc[:])
			return conn
		}},
		{name: "slow handshake", reason: ReasonTimeout, mut: func(cfg *Config) { cfg.HandshakeGrace = 500 * time.Millisecond },
			act: func(t *testing.T, c *cluster) net.Conn {
				conn := rawDial(t, "127.0.0.1", c.roster[1].Addr)
				_, _ = conn.Write([]byte("IGGO")) // a few bytes, then silence
				return conn
			}},
		{name: "no hello", reason: ReasonTimeout, mut: func(cfg *Config) { cfg.HelloGrace = 300 * time.Millisecond },
			act: func(t *testing.T, c *cluster) net.Conn {
				return rawDial(t, "127.0.0.9", c.roster[1].Addr) // connects, never speaks
			}},
		{name: "too many handshakes", reason: ReasonBusy, mut: func(cfg *Config) { cfg.HandshakesMax, cfg.HandshakeGrace = 1, 500*time.Millisecond },
			act: func(t *testing.T, c *cluster) net.Conn {
				rawDial(t, "127.0.0.9", c.roster[1].Addr) // holds the only slot
				time.Sleep(50 * time.Millisecond)
				return rawDial(t, "127.0.0.10", c.roster[1].Addr)
			}},
		{name: "too many from one address", reason: ReasonAddressQuota, mut: func(cfg *Config) { cfg.HandshakesPerAddress = 2 },
			act: func(t *testing.T, c *cluster) net.Conn {
				rawDial(t, "127.0.0.9", c.roster[1].Addr)
				rawDial(t, "127.0.0.9", c.roster[1].Addr)
				time.Sleep(50 * time.Millisecond)
				return rawDial(t, "127.0.0.9", c.roster[1].Addr)
			}},
		{name: "oversize frame", reason: ReasonFrameTooLarge, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 3, keyOld)
			f := testFrame(ClusterID(testCluster), 0, 3, 1, nil)
			f[48], f[49], f[50], f[51] = 0xff, 0xff, 0xff, 0x7f
			_, _ = conn.Write(f)
			return conn
		}},
		{name: "corrupt frame", reason: ReasonFrameCorrupt, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 3, keyOld)
			f := testFrame(ClusterID(testCluster), 0, 3, 1, []byte("body"))
			f[vsr.HeaderSize] ^= 1 // body no longer matches its checksum
			_, _ = conn.Write(f)
			return conn
		}},
		{name: "frame of another cluster", reason: ReasonFrameCluster, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 3, keyOld)
			_, _ = conn.Write(testFrame(ClusterID("elsewhere"), 0, 3, 1, nil))
			return conn
		}},
		{name: "frame signed as another replica", reason: ReasonFrameSender, act: func(t *testing.T, c *cluster) net.Conn {
			conn := rawHandshake(t, "127.0.0.1", c.roster[1].Addr, 0, 1, 3, keyOld)
			_, _ = conn.Write(testFrame(ClusterID(testCluster), 2, 3, 1, nil))
			return conn
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			c := newCluster(t, 3)
			c.start(t, 2, c.lns[2], nil)
			nd := c.start(t, 1, c.lns[1], sc.mut)
			// Let node 1 link with node 2 first, so the attack happens on a
			// serving node.
			eventually(t, "1-2 link", func() bool { return nd.tr.Connected(2) })
			conn := sc.act(t, c)
			expectRefusal(t, nd, sc.reason, conn)
			if nd.tr.Connected(0) && sc.reason < ReasonFrameTooLarge {
				t.Fatal("a refused peer is linked")
			}
			stillServes(t, c)
		})
	}
}

// A fake acceptor at node 1's address answers as replica 2: the dialer must
// refuse it even though it holds the key.
func TestDialerRefusesWrongPeer(t *testing.T) {
	c := newCluster(t, 3)
	fake := c.lns[1]
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := fake.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		me := rawLocal(2, 3, keyOld)
		var hello [HandshakeSize]byte
		if _, err := io.ReadFull(conn, hello[:]); err != nil {
			return
		}
		// Answer as replica 2 would, but to a hello meant for replica 1.
		h, _ := DecodeHandshake(hello[:])
		h.Receiver = 2
		forged := h.Encode()
		_, _, ch, err := me.acceptHello(forged[:], nil)
		if err != nil {
			t.Errorf("forging: %v", err)
			return
		}
		_, _ = conn.Write(ch[:])
		_, _ = io.ReadAll(conn)
	}()
	nd := c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.ReconnectMin, cfg.ReconnectMax = time.Hour, time.Hour })
	eventually(t, "dialer refuses", func() bool {
		return nd.tr.Stats().Refused(ReasonWrongPeer)+nd.tr.Stats().Refused(ReasonBadMAC) >= 1
	})
	// The forged challenge names replica 2 as sender: the id check fires
	// before the MAC check.
	if nd.tr.Stats().Refused(ReasonWrongPeer) != 1 {
		t.Errorf("refusals %v", nd.tr.Stats().Refusals)
	}
	if !logged(nd.logs, ReasonWrongPeer) {
		t.Error("not logged")
	}
	if nd.tr.Connected(1) {
		t.Fatal("linked with an impostor")
	}
	nd.tr.Close()
	<-done
}

// In TLS CA mode a node's identity is its certificate: a key holder with a
// valid certificate for another ip cannot claim a replica id, even where the
// source-address check is off.
func TestTLSCertificateProvesIdentity(t *testing.T) {
	c := newCluster(t, 3)
	pki := newTestPKI(t, c.roster)
	mut := func(i int) func(*Config) {
		return func(cfg *Config) {
			cfg.TLS = pki.config(i)
			cfg.AnySourceAddress = true
		}
	}
	nd := c.start(t, 1, c.lns[1], mut(1))
	// Node 2's certificate, node 0's claim.
	conn := rawDial(t, "127.0.0.1", c.roster[1].Addr)
	tc := tls.Client(conn, pki.clientTLS(t, 2, c.roster[1]))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	exp, err := exporter(tc)
	if err != nil {
		t.Fatal(err)
	}
	me := rawLocal(0, 3, keyOld)
	me.flags |= FlagTLS
	if err := clientHandshake(tc, me, 1, exp); err == nil {
		t.Fatal("handshake with another node's certificate succeeded")
	}
	expectRefusal(t, nd, ReasonCertIdentity, nil)
	// With its own certificate the same client is accepted.
	conn2 := rawDial(t, "127.0.0.1", c.roster[1].Addr)
	tc2 := tls.Client(conn2, pki.clientTLS(t, 0, c.roster[1]))
	if err := tc2.Handshake(); err != nil {
		t.Fatal(err)
	}
	exp2, _ := exporter(tc2)
	if err := clientHandshake(tc2, me, 1, exp2); err != nil {
		t.Fatalf("own certificate refused: %v", err)
	}
	eventually(t, "linked", func() bool { return nd.tr.Connected(0) })
}
