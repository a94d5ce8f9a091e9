package cluster

import (
	"crypto/rand"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/plane"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/vsr"
)

// rogue is a replica-plane transport that claims to be replica 0 of the
// cluster with whatever name, key and source address the test gives it;
// it dials replicas 1 and 2 as a real node 0 would.
func rogue(t *testing.T, c *harness.Cluster, clusterName, secret, selfIP string) *plane.Transport {
	t.Helper()
	var roster []plane.Member
	for i, n := range c.Nodes {
		ip := n.IP
		port := n.ReplicaPort
		if i == 0 {
			ip = selfIP
			p, err := harness.FreePort(selfIP, false)
			must(t, err, "rogue port")
			port = p
		}
		roster = append(roster, plane.Member{ID: uint8(i), Name: n.Name,
			Addr: netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(port))})
	}
	tr, err := plane.New(plane.Config{Self: 0, Roster: roster, ClusterName: clusterName, Auth: true, Secret: []byte(secret),
		Deliver:      func(uint8, uint64, vsr.Message) error { return nil },
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond, HandshakeGrace: 2 * time.Second,
		Logger: zap.NewNop()})
	must(t, err, "rogue transport")
	must(t, tr.Start(), "rogue start")
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// raw sends b to node i's replica port from a connection of its own and
// waits for the node to close it without completing a handshake.
func raw(t *testing.T, c *harness.Cluster, i int, b []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", c.ReplicaAddr(i), 5*time.Second)
	must(t, err, "dial replica port")
	defer conn.Close()
	_, err = conn.Write(b)
	must(t, err, "write")
	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	var buf [256]byte
	n, err := conn.Read(buf[:])
	if err == nil {
		t.Fatalf("node %d answered %d bytes to a bad hello instead of closing the connection", i, n)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("node %d kept a bad replica connection open", i)
	}
}

// waitRefusal waits until node i logged a refusal with reason.
func waitRefusal(t *testing.T, c *harness.Cluster, i int, reason string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, l := range strings.Split(c.Nodes[i].Output(), "\n") {
			if strings.Contains(l, "replica plane refused a connection") && strings.Contains(l, `"reason": "`+reason+`"`) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d logged no replica-plane refusal with reason %q; its refusals:\n%s", i, reason, grepLines(c.Nodes[i].Output(), "refused"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestReplicaPlaneRefusesBadPeers: while producers send with acks, the
// replica plane of the nodes is offered a wrong pre-shared key, a wrong
// cluster name, garbage bytes, a peer claiming replica 0 from another
// address (with the right key), a higher id dialing a lower one and an id
// outside the roster. Each is refused and logged with its reason, and the
// cluster keeps serving: the load makes progress throughout and every
// acknowledged message ends up on every node with byte-identical segments.
func TestReplicaPlaneRefusesBadPeers(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	w.start()
	defer func() {
		select {
		case <-w.stop:
		default:
			w.halt()
		}
	}()
	w.waitProgress(t, 3, 30*time.Second)
	name, secret := c.Options().Name, c.Options().Secret
	distinct := c.Nodes[0].IP != c.Nodes[1].IP

	// Wrong key, from node 0's own address.
	wrongKey := rogue(t, c, name, strings.Repeat("k", 40), c.Nodes[0].IP)
	t.Log(waitRefusal(t, c, 1, "no_shared_key"))
	waitRefusal(t, c, 2, "no_shared_key")
	_ = wrongKey.Close()

	// Wrong cluster name.
	wrongCluster := rogue(t, c, name+"-other", secret, c.Nodes[0].IP)
	t.Log(waitRefusal(t, c, 1, "wrong_cluster"))
	_ = wrongCluster.Close()

	// The right key, claiming replica 0 from an address that is not
	// replica 0's roster ip.
	if distinct {
		imposter := rogue(t, c, name, secret, "127.0.0.30")
		t.Log(waitRefusal(t, c, 1, "source_address"))
		_ = imposter.Close()
	}

	// Garbage bytes.
	junk := make([]byte, plane.HandshakeSize)
	_, _ = rand.Read(junk)
	raw(t, c, 1, junk)
	t.Log(waitRefusal(t, c, 1, "garbage"))
	raw(t, c, 2, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"+strings.Repeat("x", plane.HandshakeSize)))

	// Hellos with the right cluster id: replica 2 dialing replica 1 (only
	// lower ids dial), and replica 7 of a 3-node roster.
	hello := func(sender, receiver, roster uint8) []byte {
		h := plane.Handshake{Step: plane.StepHello, Flags: plane.FlagAuth, Sender: sender, Receiver: receiver, RosterSize: roster,
			Cluster: plane.ClusterID(name)}
		_, _ = rand.Read(h.Nonce[:])
		_, _ = rand.Read(h.KeyID[:])
		b := h.Encode()
		return b[:]
	}
	raw(t, c, 1, hello(2, 1, 3))
	t.Log(waitRefusal(t, c, 1, "wrong_direction"))
	raw(t, c, 2, hello(7, 2, 3))
	t.Log(waitRefusal(t, c, 2, "unknown_replica"))
	raw(t, c, 2, hello(0, 2, 5))
	t.Log(waitRefusal(t, c, 2, "roster_mismatch"))
	raw(t, c, 1, hello(0, 2, 3))
	t.Log(waitRefusal(t, c, 1, "wrong_target"))

	// Still serving, through every node.
	w.waitProgress(t, 5, 30*time.Second)
	w.halt()
	for i := range c.Nodes {
		if err := c.WaitNode(i, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if !c.Nodes[i].Running() {
			t.Fatalf("node %d exited", i)
		}
	}
	w.verify(t, "after bad replica-plane input")
	w.nextOffsetCheck(t, 2, "after bad replica-plane input")
	for i := range c.Nodes {
		if out := c.Nodes[i].Output(); strings.Contains(out, "panic") || strings.Contains(out, "\tFATAL\t") {
			t.Fatalf("node %d logged a panic or fatal error:\n%s", i, grepLines(out, "panic"))
		}
	}
}

// TestReplicaPlaneTLS: the same cluster with its replica plane inside TLS
// 1.3 (self-signed, the key handshake bound to the TLS session) replicates,
// fails over after a kill -9 and lands identical data on every node; a
// plain-TCP peer is refused.
func TestReplicaPlaneTLS(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{ExtraTOML: "\n[cluster.tls]\nenabled = true\nself_signed = true\n"})
	if !containsLine(c.Nodes[0].Output(), "replica plane started", `"tls_mode": "self_signed"`) {
		t.Fatalf("node 0 did not start its replica plane in TLS mode:\n%s", grepLines(c.Nodes[0].Output(), "replica plane"))
	}
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	w.start()
	w.waitProgress(t, 5, 30*time.Second)
	primary, _, err := c.WaitPrimary(specs[1].group(0), 0, 10*time.Second)
	must(t, err, "primary")
	c.Kill(primary)
	w.waitProgress(t, 5, 60*time.Second)
	c.Restart(primary, false)
	w.waitProgress(t, 5, 60*time.Second)

	// A peer speaking the plain handshake to a TLS node.
	hello := plane.Handshake{Step: plane.StepHello, Flags: plane.FlagAuth, Sender: 0, Receiver: 1, RosterSize: 3, Cluster: plane.ClusterID(c.Options().Name)}
	_, _ = rand.Read(hello.Nonce[:])
	_, _ = rand.Read(hello.KeyID[:])
	b := hello.Encode()
	raw(t, c, 1, b[:])
	t.Log(waitRefusal(t, c, 1, "tls"))

	w.halt()
	w.verify(t, "TLS replica plane after a kill -9")
}
