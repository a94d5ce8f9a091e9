package gossip

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

const (
	keyA = "gossip-key-A-0123456789abcdefghij"
	keyB = "gossip-key-B-0123456789abcdefghij"
)

// testRoster is three members on 127.0.0.1..3 with unknown (0) ports.
func testRoster() []Peer {
	var r []Peer
	for i := 0; i < 3; i++ {
		r = append(r, Peer{ID: uint8(i), Name: fmt.Sprintf("node-%d", i), Addr: netip.MustParseAddrPort(fmt.Sprintf("127.0.0.%d:0", i+1))})
	}
	return r
}

func fastConfig(t *testing.T, self uint8, roster []Peer, secret string) Config {
	c := Config{
		Self: self, Roster: append([]Peer(nil), roster...), ClusterName: "gossip-test",
		Meta:          Meta{ClientHost: fmt.Sprintf("10.0.0.%d", self+1), TCPPort: 8090 + uint16(self), Status: StatusStarting},
		ProbeInterval: 100 * time.Millisecond, ProbeTimeout: 50 * time.Millisecond,
		GossipInterval: 20 * time.Millisecond, PushPull: 500 * time.Millisecond,
		SuspicionMult: 2, RejoinInterval: 200 * time.Millisecond, UpdateTimeout: 5 * time.Second,
		// Not zaptest: memberlist's timers may still log briefly after
		// Shutdown returns, which must not write to a finished test.
		Logger: zap.NewNop(),
	}
	if secret != "" {
		c.Secret = []byte(secret)
	}
	return c
}

// startSeq starts nodes in order, each knowing the actual addresses of the
// ones before it (ports are chosen by the kernel).
func startSeq(t *testing.T, mut func(i int, c *Config), n int) []*Gossip {
	t.Helper()
	roster := testRoster()[:n]
	gs := make([]*Gossip, n)
	for i := 0; i < n; i++ {
		c := fastConfig(t, uint8(i), roster, keyA)
		if mut != nil {
			mut(i, &c)
		}
		g, err := Start(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Kill() })
		gs[i] = g
		roster[i].Addr = g.LocalAddr()
	}
	return gs
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allAlive(gs []*Gossip, ids ...int) bool {
	for _, i := range ids {
		for _, m := range gs[i].Members() {
			if !contains(ids, int(m.ReplicaID)) {
				continue
			}
			if m.Liveness != LivenessAlive || !m.HasMeta {
				return false
			}
		}
	}
	return true
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func TestThreeNodesConverge(t *testing.T) {
	gs := startSeq(t, nil, 3)
	eventually(t, "all alive everywhere", func() bool { return allAlive(gs, 0, 1, 2) })
	for i, g := range gs {
		ms := g.Members()
		if len(ms) != 3 {
			t.Fatalf("node %d sees %d members", i, len(ms))
		}
		for j, m := range ms {
			if m.ReplicaID != uint8(j) || m.Name != fmt.Sprintf("node-%d", j) {
				t.Errorf("node %d: member %d is %d/%q", i, j, m.ReplicaID, m.Name)
			}
			want := Meta{ReplicaID: uint8(j), Name: m.Name, ClientHost: fmt.Sprintf("10.0.0.%d", j+1), TCPPort: 8090 + uint16(j), Status: StatusStarting}
			if m.Meta != want {
				t.Errorf("node %d: member %d meta %+v, want %+v", i, j, m.Meta, want)
			}
			if m.WireStatus() != StatusStarting {
				t.Errorf("node %d: member %d wire status %s", i, j, m.WireStatus())
			}
			if m.Addr != gs[j].LocalAddr() {
				t.Errorf("node %d: member %d at %s, it gossips on %s", i, j, m.Addr, gs[j].LocalAddr())
			}
		}
	}
}

func TestKilledNodeBecomesSuspectThenDead(t *testing.T) {
	// Node 0 logs to an observer (in memory: safe after the test ends).
	core, logs := observer.New(zapcore.InfoLevel)
	gs := startSeq(t, func(i int, c *Config) {
		if i == 0 {
			c.Logger = zap.New(core)
		}
	}, 3)
	eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1, 2) })
	killed := time.Now()
	if err := gs[2].Kill(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		eventually(t, fmt.Sprintf("node %d declares node 2 dead", i), func() bool {
			m, _ := gs[i].Member(2)
			return m.Liveness == LivenessDead && m.WireStatus() == StatusUnreachable
		})
	}
	t.Logf("node 2 declared dead %s after the kill", time.Since(killed).Round(time.Millisecond))
	var sawLeave bool
	for !sawLeave {
		select {
		case e := <-gs[0].Events():
			sawLeave = e.Kind == EventLeave && e.Member.ReplicaID == 2 && e.Member.Liveness == LivenessDead
		default:
			t.Fatal("no leave event for node 2")
		}
	}
	// The survivors still see each other (on a loaded machine a probe
	// between them may time out and mark one suspect for a moment; they
	// must come back to alive, not stay apart).
	eventually(t, "survivors see each other alive", func() bool { return allAlive(gs, 0, 1) })
	// Node 0 logged each peer coming up and node 2 going down, at INFO,
	// with readable liveness names.
	seen := map[string]bool{}
	for _, e := range logs.FilterLoggerName("gossip").All() {
		f := e.ContextMap()
		seen[fmt.Sprintf("%s %v %v %v", e.Message, f["peer"], f["liveness"], f["was"])] = true
	}
	for _, want := range []string{"gossip peer up node-1 alive unknown", "gossip peer up node-2 alive unknown",
		"gossip peer down node-2 dead alive"} {
		if !seen[want] {
			t.Errorf("node 0 did not log %q; logged %v", want, seen)
		}
	}
}

// Suspicion is this node's own view: an alive member whose probes stopped
// being answered. Drive it directly: no ack for longer than SuspectAfter.
func TestSilentMemberIsSuspect(t *testing.T) {
	gs := startSeq(t, func(i int, c *Config) { c.SuspectAfter = time.Hour }, 2)
	eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1) })
	g := gs[0]
	g.mu.Lock()
	g.members["node-1"].lastAck = time.Now().Add(-2 * time.Hour)
	g.mu.Unlock()
	m, _ := g.Member(1)
	if m.Liveness != LivenessSuspect || m.WireStatus() != StatusStarting {
		t.Fatalf("silent member: %s, wire %s", m.Liveness, m.WireStatus())
	}
	// The next answered probe clears it.
	eventually(t, "probe clears suspicion", func() bool {
		m, _ := g.Member(1)
		return m.Liveness == LivenessAlive
	})
}

func TestLeaveIsSeenAsLeft(t *testing.T) {
	gs := startSeq(t, nil, 3)
	eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1, 2) })
	if err := gs[1].Close(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		eventually(t, fmt.Sprintf("node %d sees node 1 left", i), func() bool {
			m, _ := gs[i].Member(1)
			return m.Liveness == LivenessLeft && m.WireStatus() == StatusUnreachable
		})
	}
}

func TestStatusUpdatesPropagate(t *testing.T) {
	gs := startSeq(t, nil, 3)
	eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1, 2) })
	for _, s := range []Status{StatusHealthy, StatusMaintenance, StatusStopping} {
		if err := gs[1].SetStatus(s); err != nil {
			t.Fatal(err)
		}
		if m, _ := gs[1].Member(1); m.Meta.Status != s {
			t.Fatalf("own view not updated: %s", m.Meta.Status)
		}
		for _, i := range []int{0, 2} {
			eventually(t, fmt.Sprintf("node %d sees node 1 %s", i, s), func() bool {
				m, _ := gs[i].Member(1)
				return m.Meta.Status == s && m.WireStatus() == s
			})
		}
	}
	if err := gs[1].SetStatus(StatusUnreachable); err == nil {
		t.Fatal("announced unreachable")
	}
	found := false
	for len(gs[0].Events()) > 0 && !found {
		e := <-gs[0].Events()
		found = e.Kind == EventUpdate && e.Member.ReplicaID == 1 && e.Member.Meta.Status == StatusStopping
	}
	if !found {
		t.Fatal("no update event for node 1's last status")
	}
}

func TestRoleUpdatesPropagate(t *testing.T) {
	gs := startSeq(t, nil, 3)
	eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1, 2) })
	if err := gs[2].SetRole(RoleLeader, 7); err != nil {
		t.Fatal(err)
	}
	if s := gs[2].Self(); s.Role != RoleLeader || s.View != 7 || s.Status != StatusStarting {
		t.Fatalf("own announcement %+v", s)
	}
	for _, i := range []int{0, 1} {
		eventually(t, fmt.Sprintf("node %d sees node 2 lead view 7", i), func() bool {
			m, _ := gs[i].Member(2)
			return m.Meta.Role == RoleLeader && m.Meta.View == 7 && m.Meta.Status == StatusStarting
		})
	}
	if err := gs[2].SetRole(Role(9), 8); err == nil {
		t.Fatal("announced an invalid role")
	}
	if s := gs[2].Self(); s.Role != RoleLeader || s.View != 7 {
		t.Fatalf("a refused role changed the announcement: %+v", s)
	}
}

func TestWrongKeyCannotJoin(t *testing.T) {
	gs := startSeq(t, func(i int, c *Config) {
		if i == 2 {
			c.Secret = []byte(keyB)
		}
	}, 3)
	eventually(t, "0 and 1 converge", func() bool { return allAlive(gs, 0, 1) })
	// Node 2 joins 0 and 1 on every rejoin tick; each attempt must fail.
	eventually(t, "node 2 tried several times", func() bool { return gs[2].Stats().Rejoins >= 3 })
	if _, err := gs[2].ml.Join([]string{"node-0/" + gs[0].LocalAddr().String()}); err == nil {
		t.Fatal("join with the wrong key succeeded")
	}
	for _, i := range []int{0, 1} {
		if m, _ := gs[i].Member(2); m.Liveness != LivenessUnknown {
			t.Fatalf("node %d sees the wrong-key node as %s", i, m.Liveness)
		}
	}
	if m, _ := gs[2].Member(0); m.Liveness != LivenessUnknown {
		t.Fatalf("the wrong-key node sees node 0 as %s", m.Liveness)
	}
}

func TestUnencryptedNodeCannotJoinEncrypted(t *testing.T) {
	gs := startSeq(t, func(i int, c *Config) {
		if i == 1 {
			c.Secret = nil
		}
	}, 2)
	eventually(t, "node 1 tried", func() bool { return gs[1].Stats().Rejoins >= 2 })
	if _, err := gs[1].ml.Join([]string{"node-0/" + gs[0].LocalAddr().String()}); err == nil {
		t.Fatal("plaintext join into an encrypted cluster succeeded")
	}
	if m, _ := gs[0].Member(1); m.Liveness != LivenessUnknown {
		t.Fatalf("node 0 sees the plaintext node as %s", m.Liveness)
	}
}

// Gossip follows Iggy's three-roll rotation: each node encrypts with its
// current key and accepts its previous one.
func TestKeyRotationSteps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		keys     [3][2]string // current, previous per node
		converge bool
	}{
		{"roll 1 in progress", [3][2]string{{keyA, keyB}, {keyA, ""}, {keyA, ""}}, true},
		{"roll 2 in progress", [3][2]string{{keyB, keyA}, {keyA, keyB}, {keyA, keyB}}, true},
		{"roll 3 in progress", [3][2]string{{keyB, ""}, {keyB, keyA}, {keyB, keyA}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := startSeq(t, func(i int, c *Config) {
				c.Secret = []byte(tc.keys[i][0])
				if tc.keys[i][1] != "" {
					c.PreviousSecret = []byte(tc.keys[i][1])
				}
			}, 3)
			eventually(t, "convergence", func() bool { return allAlive(gs, 0, 1, 2) })
		})
	}
}

func TestStrangerIsRefused(t *testing.T) {
	gs := startSeq(t, nil, 1)
	// Same key and cluster, but a name the roster does not list.
	roster := []Peer{{ID: 0, Name: "node-0", Addr: gs[0].LocalAddr()}, {ID: 1, Name: "intruder", Addr: netip.MustParseAddrPort("127.0.0.2:0")}}
	c := fastConfig(t, 1, roster, keyA)
	g, err := Start(c)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Kill()
	eventually(t, "intruder refused", func() bool { return gs[0].Stats().Refused >= 1 })
	for _, m := range gs[0].Members() {
		if m.Name == "intruder" {
			t.Fatal("intruder listed")
		}
	}
	if m, _ := gs[0].Member(0); m.Liveness != LivenessAlive {
		t.Fatalf("self is %s", m.Liveness)
	}
}

func TestRestartedNodeRejoins(t *testing.T) {
	roster := testRoster()[:2]
	// Node 0 gets a fixed address so the restarted node 1 can find it and
	// node 0 can rejoin it.
	c0 := fastConfig(t, 0, roster, keyA)
	g0, err := Start(c0)
	if err != nil {
		t.Fatal(err)
	}
	defer g0.Kill()
	roster[0].Addr = g0.LocalAddr()
	start1 := func() *Gossip {
		g, err := Start(fastConfig(t, 1, roster, keyA))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g1 := start1()
	eventually(t, "convergence", func() bool { return allAlive([]*Gossip{g0, g1}, 0, 1) })
	g1.Kill()
	eventually(t, "node 1 dead", func() bool { m, _ := g0.Member(1); return m.Liveness == LivenessDead })
	g1 = start1()
	defer g1.Kill()
	eventually(t, "node 1 back", func() bool { return allAlive([]*Gossip{g0, g1}, 0, 1) })
}

// TestStartWhilePeersPush starts a node while a peer pushes its state to the
// new listener, many times. Start once held its own lock while asking
// memberlist for the local node; a peer's push arriving then held
// memberlist's node lock waiting for that same lock in the join callback, and
// the node hung for good (CI saw a replica test hang 30 minutes with every
// memberlist connection stuck on the node lock).
func TestStartWhilePeersPush(t *testing.T) {
	roster := testRoster()[:2]
	g0, err := Start(fastConfig(t, 0, roster, keyA))
	if err != nil {
		t.Fatal(err)
	}
	defer g0.Kill()
	roster[0].Addr = g0.LocalAddr()
	joined := make(chan error, 64)
	startHook = func(ml *memberlist.Memberlist) {
		addr := ml.LocalNode().FullAddress()
		go func() {
			_, err := g0.ml.Join([]string{addr.Name + "/" + addr.Addr})
			joined <- err
		}()
	}
	// Hold Start's locked section long enough for the push to land in it.
	startLockedHook = func() { time.Sleep(100 * time.Millisecond) }
	defer func() { startHook, startLockedHook = nil, nil }()
	for i := 0; i < 5; i++ {
		done := make(chan *Gossip, 1)
		go func() {
			g, err := Start(fastConfig(t, 1, roster, keyA))
			if err != nil {
				t.Error(err)
			}
			done <- g
		}()
		var g1 *Gossip
		select {
		case g1 = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Start hung while a peer pushed state to it", i)
		}
		if g1 == nil {
			t.FailNow()
		}
		select {
		case err := <-joined:
			if err != nil {
				t.Fatalf("round %d: peer join: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: peer join hung", i)
		}
		eventually(t, "convergence", func() bool { return allAlive([]*Gossip{g0, g1}, 0, 1) })
		g1.Kill()
	}
}
