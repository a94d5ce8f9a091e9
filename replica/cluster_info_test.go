package replica

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/gossip"
	"github.com/iggo/iggo/wire"
)

func testRoster(n int) []config.ClusterNode {
	var out []config.ClusterNode
	for i := 0; i < n; i++ {
		out = append(out, config.ClusterNode{
			Name: fmt.Sprintf("node-%d", i), IP: fmt.Sprintf("10.0.0.%d", i+1), ReplicaID: i,
			Ports: config.NodePorts{TCP: config.Port(8090 + uint16(i)), TCPReplica: config.Port(9090 + uint16(i))},
		})
	}
	return out
}

func member(id uint8, l gossip.Liveness, status gossip.Status, role gossip.Role, view uint32) gossip.Member {
	return gossip.Member{ReplicaID: id, Name: fmt.Sprintf("node-%d", id), Liveness: l, HasMeta: l != gossip.LivenessUnknown,
		Meta: gossip.Meta{ReplicaID: id, Name: fmt.Sprintf("node-%d", id), Status: status, Role: role, View: view}}
}

func TestRosterReplyRolesAndHealth(t *testing.T) {
	alive, suspect, dead, left, unknown := gossip.LivenessAlive, gossip.LivenessSuspect, gossip.LivenessDead, gossip.LivenessLeft, gossip.LivenessUnknown
	H, S, M := gossip.StatusHealthy, gossip.StatusStarting, gossip.StatusMaintenance
	const U = uint8(gossip.StatusUnreachable)
	L, F, N := wire.RoleLeader, wire.RoleFollower, uint8(255) // N: no leader expected
	for _, tc := range []struct {
		name       string
		self       uint8
		own        leadership
		members    []gossip.Member
		wantLeader uint8 // N: none
		wantStatus [3]uint8
	}{
		{"own view names a backup leader; all alive", 0, leadership{known: true, primary: 1, view: 4},
			[]gossip.Member{member(0, alive, H, gossip.RoleFollower, 4), member(1, alive, H, gossip.RoleLeader, 4), member(2, alive, H, gossip.RoleFollower, 4)},
			1, [3]uint8{0, 0, 0}},
		{"self always healthy, even announced otherwise", 2, leadership{known: true, primary: 2},
			[]gossip.Member{member(0, alive, S, gossip.RoleFollower, 0), member(1, alive, M, gossip.RoleFollower, 0), member(2, alive, S, gossip.RoleLeader, 0)},
			2, [3]uint8{uint8(S), uint8(M), 0}},
		{"suspect keeps its status, dead and left are unreachable", 0, leadership{known: true, primary: 0},
			[]gossip.Member{member(0, alive, H, gossip.RoleLeader, 0), member(1, suspect, H, gossip.RoleFollower, 0), member(2, dead, H, gossip.RoleFollower, 0)},
			0, [3]uint8{0, 0, U}},
		{"never heard from is unreachable", 0, leadership{known: true, primary: 0},
			[]gossip.Member{member(0, alive, H, gossip.RoleLeader, 0), member(1, unknown, H, 0, 0), member(2, left, gossip.StatusStopping, gossip.RoleFollower, 0)},
			0, [3]uint8{0, U, U}},
		{"no gossip: others unreachable, own view still names the leader", 1, leadership{known: true, primary: 0, view: 3},
			nil, 0, [3]uint8{U, 0, U}},
		{"own view unknown, a live member claims leadership", 0, leadership{view: 9},
			[]gossip.Member{member(1, alive, H, gossip.RoleFollower, 9), member(2, alive, H, gossip.RoleLeader, 9)},
			2, [3]uint8{0, 0, 0}},
		{"own view unknown, nobody claims: no leader", 0, leadership{},
			[]gossip.Member{member(1, alive, H, gossip.RoleFollower, 2), member(2, alive, H, gossip.RoleUnknown, 2)},
			N, [3]uint8{0, 0, 0}},
		{"a claim from a dead member is ignored", 0, leadership{},
			[]gossip.Member{member(1, dead, H, gossip.RoleLeader, 5), member(2, alive, H, gossip.RoleFollower, 5)},
			N, [3]uint8{0, U, 0}},
		{"a claim in a higher view beats a stale own view", 0, leadership{known: true, primary: 0, view: 3},
			[]gossip.Member{member(1, alive, H, gossip.RoleLeader, 4), member(2, alive, H, gossip.RoleFollower, 4)},
			1, [3]uint8{0, 0, 0}},
		{"own view wins a tie and beats older claims", 0, leadership{known: true, primary: 2, view: 4},
			[]gossip.Member{member(1, alive, H, gossip.RoleLeader, 4), member(2, alive, H, gossip.RoleLeader, 3)},
			2, [3]uint8{0, 0, 0}},
		{"a claim by a member in maintenance is not a healthy leader", 0, leadership{},
			[]gossip.Member{member(1, alive, M, gossip.RoleLeader, 4)},
			N, [3]uint8{0, uint8(M), U}},
		{"self's own gossip claim is not used (its view is)", 0, leadership{view: 8},
			[]gossip.Member{member(0, alive, H, gossip.RoleLeader, 8)},
			N, [3]uint8{0, U, U}},
	} {
		md := rosterReply("c", testRoster(3), tc.self, netip.MustParseAddr("10.9.9.9"), tc.own, tc.members)
		if md.Name != "c" || len(md.Nodes) != 3 {
			t.Fatalf("%s: %+v", tc.name, md)
		}
		for i, nd := range md.Nodes {
			wantRole := F
			if uint8(i) == tc.wantLeader {
				wantRole = L
			}
			if nd.Role != wantRole || nd.Status != tc.wantStatus[i] {
				t.Errorf("%s: node %d role %d status %d, want role %d status %d", tc.name, i, nd.Role, nd.Status, wantRole, tc.wantStatus[i])
			}
			if nd.Name != fmt.Sprintf("node-%d", i) || nd.IP != fmt.Sprintf("10.0.0.%d", i+1) || nd.TCPPort != 8090+uint16(i) ||
				nd.QUICPort != 0 || nd.HTTPPort != 0 || nd.WSPort != 0 {
				t.Errorf("%s: node %d endpoint %+v", tc.name, i, nd)
			}
		}
		if _, err := md.AppendTo(nil); err != nil {
			t.Errorf("%s: reply does not encode: %v", tc.name, err)
		}
	}
}

func TestRosterReplyEndpointsByClient(t *testing.T) {
	roster := testRoster(2)
	roster[0].AdvertisedAddress = "public-0.example"
	roster[0].AdvertisedAddresses = []config.AdvertiseSelector{{ClientCIDR: "10.0.0.0/8", Address: "10.0.0.1"}, {ClientCIDR: "fd00::/8", Address: "fd00::1"}}
	roster[1].AdvertisedAddresses = []config.AdvertiseSelector{{ClientCIDR: "192.168.0.0/16", Address: "192.168.0.2"}}
	for _, tc := range []struct {
		client string
		want   [2]string
	}{
		{"10.1.2.3:50000", [2]string{"10.0.0.1", "10.0.0.2"}},
		{"[fd00::9]:50000", [2]string{"fd00::1", "10.0.0.2"}},
		{"[::ffff:192.168.7.7]:50000", [2]string{"public-0.example", "192.168.0.2"}},
		{"8.8.8.8:1", [2]string{"public-0.example", "10.0.0.2"}},
		{"not-an-address", [2]string{"public-0.example", "10.0.0.2"}},
	} {
		var peer netip.Addr
		if ap, err := netip.ParseAddrPort(tc.client); err == nil {
			peer = ap.Addr()
		}
		md := rosterReply("c", roster, 0, peer, leadership{known: true}, nil)
		if md.Nodes[0].IP != tc.want[0] || md.Nodes[1].IP != tc.want[1] {
			t.Errorf("client %s: got %s, %s; want %v", tc.client, md.Nodes[0].IP, md.Nodes[1].IP, tc.want)
		}
	}
}

// clusterCfg is a 3-node cluster config on loopback whose gossip ports are
// set by the caller.
func clusterCfg(gossipPorts []uint16) *config.Config {
	cfg := config.Default()
	cfg.HTTP.Enabled = false
	cfg.Cluster.Enabled = true
	cfg.Cluster.Name = "clusterapi-test"
	cfg.Cluster.Auth = config.ClusterAuthConfig{Enabled: true, SharedSecret: "0123456789abcdef0123456789abcdef-test"}
	cfg.Cluster.Nodes = nil
	for i, p := range gossipPorts {
		cfg.Cluster.Nodes = append(cfg.Cluster.Nodes, config.ClusterNode{
			Name: fmt.Sprintf("node-%d", i), IP: "127.0.0.1", ReplicaID: i,
			Ports: config.NodePorts{TCP: config.Port(18090 + uint16(i)), TCPReplica: config.Port(19090 + uint16(i)), Gossip: config.Port(p)},
		})
	}
	return cfg
}

func fastGossip(c *gossip.Config) {
	c.ProbeInterval, c.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	c.GossipInterval, c.PushPull = 20*time.Millisecond, 500*time.Millisecond
	c.SuspicionMult, c.RejoinInterval = 2, 200*time.Millisecond
	c.Logger = zap.NewNop() // memberlist may log briefly after Shutdown
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type leaderBox struct{ v atomic.Pointer[leadership] }

func (b *leaderBox) set(l leadership)      { b.v.Store(&l) }
func (b *leaderBox) get() leadership       { return *b.v.Load() }
func newLeaderBox(l leadership) *leaderBox { b := &leaderBox{}; b.set(l); return b }

// TestClusterInfoGossip starts three nodes' gossip in-process (kernel-chosen
// loopback ports, cluster key on), checks that every node reports the same
// leader and all healthy, that a leadership change is announced, that a
// node that leaves reads unreachable, and that close is clean.
func TestClusterInfoGossip(t *testing.T) {
	cfg := clusterCfg([]uint16{1, 1, 1}) // replaced below by the bound ports
	boxes := make([]*leaderBox, 3)
	cis := make([]*clusterInfo, 3)
	var bound []netip.AddrPort
	for i := range cis {
		boxes[i] = newLeaderBox(leadership{known: true, primary: 1, view: 1})
		ci, err := startClusterInfo(cfg, uint8(i), zap.NewNop(), boxes[i].get, func(c *gossip.Config) {
			fastGossip(c)
			c.BindAddr = netip.MustParseAddrPort("127.0.0.1:0")
			for j, a := range bound {
				c.Roster[j].Addr = a
			}
			c.Roster[i].Addr = netip.AddrPortFrom(c.Roster[i].Addr.Addr(), 0)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ci.close)
		g := ci.current()
		if g == nil {
			t.Fatalf("node %d: gossip not started", i)
		}
		if s := g.Self(); s.Status != gossip.StatusHealthy || s.TCPPort != 18090+uint16(i) || s.ClientHost != "127.0.0.1" {
			t.Fatalf("node %d announces %+v", i, s)
		}
		bound = append(bound, g.LocalAddr())
		cis[i] = ci
	}
	reply := func(i int) wire.ClusterMetadata {
		return rosterReply(cfg.Cluster.Name, cfg.Cluster.Nodes, uint8(i), netip.MustParseAddr("127.0.0.1"), boxes[i].get(), cis[i].current().Members())
	}
	agree := func(leader int, status [3]uint8, on ...int) func() bool {
		return func() bool {
			for _, i := range on {
				for j, nd := range reply(i).Nodes {
					if (nd.Role == wire.RoleLeader) != (j == leader) || nd.Status != status[j] {
						return false
					}
				}
			}
			return true
		}
	}
	waitUntil(t, "every node names node 1 leader, all healthy", agree(1, [3]uint8{}, 0, 1, 2))
	waitUntil(t, "node 1's leader claim is gossiped", func() bool {
		m, _ := cis[0].current().Member(1)
		return m.Meta.Role == gossip.RoleLeader && m.Meta.View == 1
	})

	// Node 0 loses track (view change): it points clients at the member
	// claiming leadership. Then the view moves on to node 2.
	boxes[0].set(leadership{view: 2})
	waitUntil(t, "node 0 announces unknown", func() bool {
		m, _ := cis[2].current().Member(0)
		return m.Meta.Role == gossip.RoleUnknown && m.Meta.View == 2
	})
	waitUntil(t, "node 0 still names node 1 from gossip", agree(1, [3]uint8{}, 0))
	for _, b := range boxes {
		b.set(leadership{known: true, primary: 2, view: 2})
	}
	waitUntil(t, "every node names node 2", agree(2, [3]uint8{}, 0, 1, 2))

	// Node 1 leaves: the others report it unreachable.
	cis[1].close()
	cis[1].close() // idempotent
	const U = uint8(gossip.StatusUnreachable)
	waitUntil(t, "node 1 unreachable on nodes 0 and 2", agree(2, [3]uint8{0, U, 0}, 0, 2))
}

// TestClusterInfoBindFailureIsRetried: gossip whose port is taken does not
// fail the node; it starts once the port frees up.
func TestClusterInfoBindFailureIsRetried(t *testing.T) {
	// Hold one port on both TCP and UDP (memberlist binds both).
	var udp net.PacketConn
	var tcp net.Listener
	var port uint16
	for attempt := 0; tcp == nil; attempt++ {
		u, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := uint16(u.LocalAddr().(*net.UDPAddr).Port)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			udp, tcp, port = u, l, p
			break
		}
		u.Close()
		if attempt == 20 {
			t.Fatal("no loopback port free on both tcp and udp")
		}
	}
	cfg := clusterCfg([]uint16{port, port + 1})
	ci, err := startClusterInfo(cfg, 0, zap.NewNop(), func() leadership { return leadership{known: true} }, fastGossip)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ci.close)
	if ci.current() != nil {
		t.Fatal("gossip started on a port in use")
	}
	md := rosterReply(cfg.Cluster.Name, cfg.Cluster.Nodes, 0, netip.Addr{}, leadership{known: true}, nil)
	if md.Nodes[0].Status != wire.NodeHealthy || md.Nodes[1].Status != uint8(gossip.StatusUnreachable) {
		t.Fatalf("without gossip: %+v", md.Nodes)
	}
	tcp.Close()
	udp.Close()
	waitUntil(t, "gossip started after the port freed", func() bool { return ci.current() != nil })
	if got := ci.current().LocalAddr().Port(); got != port {
		t.Fatalf("gossip bound %d, want %d", got, port)
	}
}

// TestSingleNodeMetadataUsesRosterName: a single node answers with its own
// roster entry's name, the advertised host and the bound port, leader and
// healthy.
func TestSingleNodeMetadataUsesRosterName(t *testing.T) {
	cfg := config.Default()
	cfg.Path = t.TempDir()
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	cfg.Node.AdvertisedAddress = "broker.example"
	cfg.Cluster.Nodes[0].Name = "alpha"
	cfg.Cluster.Nodes[1].Name = "beta"
	n, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if n.ci != nil {
		t.Fatal("gossip started on a single node")
	}
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := c.GetClusterMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(n.Addr())
	_, hport, _ := net.SplitHostPort(n.HTTPAddr())
	want := wire.ClusterNode{Name: "alpha", IP: "broker.example", TCPPort: uint16(mustAtoi(t, port)), HTTPPort: uint16(mustAtoi(t, hport)),
		Role: wire.RoleLeader, Status: wire.NodeHealthy}
	if md.Name != cfg.Cluster.Name || len(md.Nodes) != 1 || md.Nodes[0] != want {
		t.Fatalf("cluster metadata %+v, want one node %+v", md, want)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// startGossiping boots node i of tc like tc.start, with an explicit gossip
// port and fast gossip timings.
func startGossiping(tc *testCluster, i int, gossipPorts []int) error {
	cfg := tc.config(i)
	for j := range cfg.Cluster.Nodes {
		cfg.Cluster.Nodes[j].Ports.Gossip = config.Port(uint16(gossipPorts[j]))
	}
	n, err := New(Options{Config: cfg, ReplicaID: i, DefaultRootCredentials: true, Environ: []string{},
		Logger: zaptest.NewLogger(tc.t, zaptest.Level(zap.WarnLevel)).With(zap.Int("node", i))})
	if err != nil {
		return err
	}
	n.gossipTune = fastGossip
	if err := n.Start(); err != nil {
		return err
	}
	tc.nodes[i] = n
	return nil
}

// dialNode logs in at node i with at most redirects leader redirections
// (0: stay there, as a client that wants that node's answer).
func dialNode(t *testing.T, tc *testCluster, i, redirects int) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{tc.nodes[i].Addr()}
	cfg.Username, cfg.Password = DefaultRootUsername, DefaultRootPassword
	cfg.HeartbeatInterval = 0
	cfg.MaxRedirects = redirects
	cfg.Reconnect.Enabled = false
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		c, err := client.Dial(ctx, cfg)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("dialing node %d: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestClusterMetadataAcrossNodes runs three in-process nodes with gossip:
// every node names the same leader (the metadata primary) with every node
// healthy at its roster endpoint; a client dialed at a backup ends up on
// the leader; after the leader is killed (no leave announcement) both
// survivors report it unreachable within seconds and name the same new
// leader.
func TestClusterMetadataAcrossNodes(t *testing.T) {
	tc := newTestCluster(t, 3)
	gports := []int{freePort(t), freePort(t), freePort(t)}
	errs := make(chan error, 3)
	for i := range tc.nodes {
		go func() { errs <- startGossiping(tc, i, gports) }()
	}
	for range tc.nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := []*client.Client{dialNode(t, tc, 0, 0), dialNode(t, tc, 1, 0), dialNode(t, tc, 2, 0)}
	for i, c := range clients {
		if c.Addr() != tc.nodes[i].Addr() {
			t.Fatalf("client %d moved to %s", i, c.Addr())
		}
	}
	const U = uint8(gossip.StatusUnreachable)
	// agree checks that every listed node names leader and reports status.
	agree := func(on []int, leader int, status [3]uint8) func() error {
		return func() error {
			for _, i := range on {
				md, err := clients[i].GetClusterMetadata(ctx)
				if err != nil {
					return err
				}
				if len(md.Nodes) != 3 {
					return fmt.Errorf("node %d: %d nodes", i, len(md.Nodes))
				}
				for j, nd := range md.Nodes {
					if nd.Name != fmt.Sprintf("node-%d", j) || nd.IP != "127.0.0.1" || int(nd.TCPPort) != tc.client[j] {
						return fmt.Errorf("node %d reports node %d at %s:%d as %q", i, j, nd.IP, nd.TCPPort, nd.Name)
					}
					if (nd.Role == wire.RoleLeader) != (j == leader) || nd.Status != status[j] {
						return fmt.Errorf("node %d reports node %d role %d status %d; want leader %d, status %v", i, j, nd.Role, nd.Status, leader, status)
					}
				}
			}
			return nil
		}
	}
	leader, view := tc.nodes[0].MetadataPrimary()
	eventually(t, 20*time.Second, "every node names the metadata primary, all healthy", agree([]int{0, 1, 2}, leader, [3]uint8{}))

	// A client with the default leader check dialed at a backup moves to
	// the leader.
	backup := (leader + 1) % 3
	lc := dialNode(t, tc, backup, client.DefaultConfig().MaxRedirects)
	if lc.Addr() != tc.nodes[leader].Addr() {
		t.Fatalf("client dialed at backup %d is on %s, leader %d is %s", backup, lc.Addr(), leader, tc.nodes[leader].Addr())
	}

	// Kill the leader as a crash would: gossip goes silent without leaving.
	if g := tc.nodes[leader].ci.current(); g == nil {
		t.Fatal("leader has no gossip")
	} else if err := g.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	tc.stop(leader)
	var survivors []int
	status := [3]uint8{}
	status[leader] = U
	for i := range tc.nodes {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	eventually(t, 10*time.Second, "survivors report the killed leader unreachable", func() error {
		for _, i := range survivors {
			md, err := clients[i].GetClusterMetadata(ctx)
			if err != nil {
				return err
			}
			if md.Nodes[leader].Status != U {
				return fmt.Errorf("node %d reports killed node %d status %d", i, leader, md.Nodes[leader].Status)
			}
		}
		return nil
	})
	t.Logf("killed leader reported unreachable after %v", time.Since(killed).Round(time.Millisecond))
	var newLeader int
	eventually(t, 60*time.Second, "survivors elect a new metadata primary", func() error {
		l, v := tc.nodes[survivors[0]].MetadataPrimary()
		if l == leader || v <= view {
			return fmt.Errorf("node %d: primary %d view %d", survivors[0], l, v)
		}
		newLeader = l
		return nil
	})
	eventually(t, 20*time.Second, "both survivors name the new leader", agree(survivors, newLeader, status))

	// The killed node comes back: gossip takes it in again and every node
	// reports all three healthy under the new leader.
	if err := startGossiping(tc, leader, gports); err != nil {
		t.Fatal(err)
	}
	clients[leader] = dialNode(t, tc, leader, 0)
	eventually(t, 30*time.Second, "the restarted node is healthy everywhere", agree([]int{0, 1, 2}, newLeader, [3]uint8{}))

	// A node that shuts down cleanly leaves: the others report it
	// unreachable at once, and its gossip port is free again.
	quitter := survivors[0]
	if quitter == newLeader {
		quitter = survivors[1]
	}
	tc.stop(quitter)
	rest := []int{}
	status = [3]uint8{}
	status[quitter] = U
	for i := range tc.nodes {
		if i != quitter {
			rest = append(rest, i)
		}
	}
	eventually(t, 5*time.Second, "a node that left reads unreachable", agree(rest, newLeader, status))
	for _, network := range []string{"tcp", "udp"} {
		addr := fmt.Sprintf("127.0.0.1:%d", gports[quitter])
		var err error
		if network == "tcp" {
			var ln net.Listener
			if ln, err = net.Listen(network, addr); err == nil {
				ln.Close()
			}
		} else {
			var pc net.PacketConn
			if pc, err = net.ListenPacket(network, addr); err == nil {
				pc.Close()
			}
		}
		if err != nil {
			t.Fatalf("gossip port %s/%s still bound after Close: %v", addr, network, err)
		}
	}
}
