package harness

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/config"
)

// TestClusterLayout: the generated configuration is one the server accepts
// for every node (validated by replica/config exactly as iggo-server loads
// it), nodes get distinct loopback addresses (or distinct ports on a shared
// one) and the key and name reach [cluster].
func TestClusterLayout(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run("shared="+strconv.FormatBool(shared), func(t *testing.T) {
			c := NewCluster(t, ClusterOptions{Nodes: 3, Binary: "/nonexistent", SharedIP: shared,
				ClusterTOML: `heartbeat_timeout = "3s"`})
			seen := map[string]bool{}
			for i, n := range c.Nodes {
				for _, a := range []string{c.Addr(i), c.ReplicaAddr(i), net.JoinHostPort(n.IP, strconv.Itoa(n.GossipPort))} {
					if seen[a] {
						t.Fatalf("address %s used twice", a)
					}
					seen[a] = true
				}
				if !shared && NodeIPs(3)[0] != "127.0.0.1" && n.IP != "127.0.0."+strconv.Itoa(11+i) {
					t.Fatalf("node %d on %s, want 127.0.0.%d", i, n.IP, 11+i)
				}
				env := []string{"IGGY_PATH=" + n.DataDir(), "IGGY_TCP_ADDRESS=" + c.Addr(i)}
				cfg, warnings, err := config.LoadFrom(c.ConfigPath, env)
				if err != nil {
					t.Fatalf("node %d: the server would refuse the config: %v", i, err)
				}
				if len(warnings) != 0 {
					t.Fatalf("node %d: warnings %v", i, warnings)
				}
				cl := cfg.Cluster
				if !cl.Enabled || cl.Name != c.Options().Name || !cl.Auth.Enabled || cl.Auth.SharedSecret != c.Options().Secret || len(cl.Auth.SharedSecret) < 32 {
					t.Fatalf("node %d: [cluster] %+v", i, cl)
				}
				if cl.HeartbeatTimeout.Duration.String() != "3s" {
					t.Fatalf("ClusterTOML did not replace the default heartbeat_timeout: %v", cl.HeartbeatTimeout)
				}
				if len(cl.Nodes) != 3 || *cl.Nodes[i].Ports.TCP != uint16(n.TCPPort) || *cl.Nodes[i].Ports.TCPReplica != uint16(n.ReplicaPort) ||
					*cl.Nodes[i].Ports.Gossip != uint16(n.GossipPort) || cl.Nodes[i].IP != n.IP || cl.Nodes[i].ReplicaID != i {
					t.Fatalf("node %d roster entry %+v", i, cl.Nodes[i])
				}
				if cfg.Path != n.DataDir() || cfg.TCP.Address != c.Addr(i) {
					t.Fatalf("node %d: path %s tcp %s", i, cfg.Path, cfg.TCP.Address)
				}
				if !strings.Contains(strings.Join(n.opts.Args, " "), "--replica-id "+strconv.Itoa(i)) {
					t.Fatalf("node %d args %v", i, n.opts.Args)
				}
			}
		})
	}
}

func TestDiffFiles(t *testing.T) {
	a := map[string][]byte{"x.log": []byte("abc"), "y.log": []byte("1")}
	cases := []struct {
		b    map[string][]byte
		want string
	}{
		{map[string][]byte{"x.log": []byte("abc"), "y.log": []byte("1")}, ""},
		{map[string][]byte{"x.log": []byte("abd"), "y.log": []byte("1")}, "x.log: first difference at byte 2 of 3"},
		{map[string][]byte{"x.log": []byte("ab"), "y.log": []byte("1")}, "x.log: 3 vs 2 bytes"},
		{map[string][]byte{"x.log": []byte("abc")}, "y.log only on the first (1 bytes)"},
		{map[string][]byte{"x.log": []byte("abc"), "y.log": []byte("1"), "z.log": nil}, "z.log only on the second (0 bytes)"},
	}
	for _, c := range cases {
		if got := diffFiles(a, c.b); got != c.want {
			t.Errorf("diffFiles(%v) = %q, want %q", c.b, got, c.want)
		}
	}
	if got := diffFiles(nil, nil); got != "no segment files on either node" {
		t.Errorf("empty: %q", got)
	}
}

// TestPrimaryFromLogs: the primary of a group is the one of the highest
// view any node logged in normal status; other groups, other statuses and
// malformed lines are ignored.
func TestPrimaryFromLogs(t *testing.T) {
	logs := []string{
		"2026-01-01T00:00:00.000Z\tINFO\tgroup role\t{\"shard\": 0, \"group\": \"0/0/0\", \"view\": 0, \"status\": \"normal\", \"primary\": 1, \"is_primary\": false}\n" +
			"2026-01-01T00:00:01.000Z\tINFO\tgroup role\t{\"shard\": 0, \"group\": \"0/0/0\", \"view\": 1, \"status\": \"view_change\", \"primary\": 2}\n" +
			"2026-01-01T00:00:01.000Z\tINFO\tgroup role\t{\"shard\": 0, \"group\": \"0/0/1\", \"view\": 5, \"status\": \"normal\", \"primary\": 0}\n",
		"2026-01-01T00:00:02.000Z\tINFO\tgroup role\t{\"shard\": 1, \"group\": \"0/0/0\", \"view\": 1, \"status\": \"normal\", \"primary\": 2}\n" +
			"2026-01-01T00:00:02.000Z\tINFO\tgroup role\t{broken\n",
		"",
	}
	c := &Cluster{}
	for i, l := range logs {
		s := &Server{out: &syncBuffer{}}
		s.out.Write([]byte(l))
		c.Nodes = append(c.Nodes, &Node{Server: s, ID: i})
	}
	if p, v, ok := c.Primary("0/0/0"); !ok || p != 2 || v != 1 {
		t.Fatalf("Primary(0/0/0) = %d, %d, %v; want 2, 1, true", p, v, ok)
	}
	if p, v, ok := c.Primary("0/0/1"); !ok || p != 0 || v != 5 {
		t.Fatalf("Primary(0/0/1) = %d, %d, %v", p, v, ok)
	}
	if _, _, ok := c.Primary("metadata"); ok {
		t.Fatal("a group nobody logged has a primary")
	}
	if got := c.GroupRoles("0/0/0"); len(got) != 3 || got[2].Node != 1 || got[1].Status != "view_change" {
		t.Fatalf("GroupRoles = %+v", got)
	}
	if _, _, err := c.WaitPrimary("0/0/0", 2, 100*time.Millisecond); err == nil {
		t.Fatal("WaitPrimary accepted a view below the minimum")
	}
}
