package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func loopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestClusterMetadataRealProcesses runs three iggo-server processes as one
// cluster with gossip at its default timings: every node reports the same
// leader and every node healthy, a client dialed at a backup ends on the
// leader, and after kill -9 of the leader the survivors report it
// unreachable and name one new leader, which a fresh client reaches.
func TestClusterMetadataRealProcesses(t *testing.T) {
	const n = 3
	tcp, repl, gossip := make([]int, n), make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		tcp[i], repl[i], gossip[i] = loopbackPort(t), loopbackPort(t), loopbackPort(t)
	}
	var b strings.Builder
	b.WriteString("[tcp]\naddress = \"127.0.0.1:0\"\n[http]\nenabled = false\n[sharding]\ncpu_allocation = 1\n")
	b.WriteString("[cluster]\nenabled = true\nname = \"metadata-it\"\nheartbeat_timeout = \"2s\"\n")
	b.WriteString("[cluster.auth]\nenabled = true\nshared_secret = \"0123456789abcdef0123456789abcdef-it\"\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\nreplica_id = %d\nports = { tcp = %d, tcp_replica = %d, gossip = %d }\n",
			i, i, tcp[i], repl[i], gossip[i])
	}
	cfgPath := filepath.Join(t.TempDir(), "cluster.toml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	servers := harness.StartN(t, n, func(i int) harness.Options {
		return harness.Options{DefaultRoot: true, Args: []string{"--config", cfgPath, "--replica-id", fmt.Sprint(i)}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dial := func(i, redirects int) *client.Client {
		cfg := servers[i].ClientConfig("iggy", "iggy")
		cfg.MaxRedirects = redirects
		cfg.Reconnect.Enabled = redirects > 0
		for {
			c, err := client.Dial(ctx, cfg)
			if err == nil {
				t.Cleanup(func() { _ = c.Close() })
				return c
			}
			if ctx.Err() != nil {
				t.Fatalf("dialing node %d: %v", i, err)
			}
			time.Sleep(200 * time.Millisecond) // root exists once a quorum formed
		}
	}
	clients := make([]*client.Client, n)
	for i := range clients {
		clients[i] = dial(i, 0)
	}
	// roster returns the leader every listed node names (an error unless
	// they agree and report status want for every node but skip).
	roster := func(on []int, want map[int]uint8) (int, error) {
		leader := -1
		for _, i := range on {
			md, err := clients[i].GetClusterMetadata(ctx)
			if err != nil {
				return 0, err
			}
			if len(md.Nodes) != n {
				return 0, fmt.Errorf("node %d lists %d nodes", i, len(md.Nodes))
			}
			l := -1
			for j, nd := range md.Nodes {
				if nd.IP != "127.0.0.1" || int(nd.TCPPort) != tcp[j] || nd.Name != fmt.Sprintf("node-%d", j) {
					return 0, fmt.Errorf("node %d reports node %d as %+v", i, j, nd)
				}
				if nd.Status != want[j] {
					return 0, fmt.Errorf("node %d reports node %d status %d, want %d", i, j, nd.Status, want[j])
				}
				if nd.Role == wire.RoleLeader {
					if l >= 0 {
						return 0, fmt.Errorf("node %d names two leaders", i)
					}
					l = j
				}
			}
			if l < 0 || leader >= 0 && l != leader {
				return 0, fmt.Errorf("node %d names leader %d, others %d", i, l, leader)
			}
			leader = l
		}
		return leader, nil
	}
	healthy := map[int]uint8{0: 0, 1: 0, 2: 0}
	var leader int
	waitErr(t, 60*time.Second, "all nodes agree, all healthy", func() (err error) {
		leader, err = roster([]int{0, 1, 2}, healthy)
		return err
	})
	backup := (leader + 1) % n
	if c := dial(backup, 3); c.Addr() != servers[leader].Addr {
		t.Fatalf("client dialed at backup %d is on %s; leader %d serves %s", backup, c.Addr(), leader, servers[leader].Addr)
	}

	servers[leader].Kill()
	killed := time.Now()
	var survivors []int
	for i := 0; i < n; i++ {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	after := map[int]uint8{0: 0, 1: 0, 2: 0}
	after[leader] = 3 // unreachable
	var next int
	waitErr(t, 60*time.Second, "survivors agree on a new leader and report the killed one unreachable", func() (err error) {
		next, err = roster(survivors, after)
		if err == nil && next == leader {
			err = fmt.Errorf("the killed node %d is still named leader", leader)
		}
		return err
	})
	t.Logf("killed leader %d; new leader %d reported after %v", leader, next, time.Since(killed).Round(100*time.Millisecond))
	other := survivors[0]
	if other == next {
		other = survivors[1]
	}
	if c := dial(other, 3); c.Addr() != servers[next].Addr {
		t.Fatalf("client dialed at %d is on %s; new leader %d serves %s", other, c.Addr(), next, servers[next].Addr)
	}
}

func waitErr(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
