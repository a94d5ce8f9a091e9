package localcluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/iggo/iggo/replica/config"
)

// TestConfigLoads: the generated cluster.toml, with each node's
// environment as `up` sets it, is a configuration iggo-server accepts: the
// roster and the key reach [cluster]; one node runs with clustering off.
func TestConfigLoads(t *testing.T) {
	dir := t.TempDir()
	key, err := secret(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := secret(dir)
	if err != nil || again != key || len(key) < 32 {
		t.Fatalf("secret not stable or too short: %q %q %v", key, again, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, secretFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode: %v %v", fi, err)
	}
	for _, count := range []int{1, 3} {
		var nodes []NodeState
		for i := 0; i < count; i++ {
			nodes = append(nodes, NodeState{ID: i, Name: "node-" + string(rune('0'+i)), IP: "127.0.0.1", TCPPort: 8090 + i,
				ReplicaPort: 9090 + i, GossipPort: 10090 + i, HTTPPort: 11090 + i, DataDir: filepath.Join(dir, "d", string(rune('0'+i)))})
		}
		p := filepath.Join(dir, "cluster.toml")
		if err := os.WriteFile(p, []byte(Config("lc", nodes)), 0o644); err != nil {
			t.Fatal(err)
		}
		k := key
		if count == 1 {
			k = ""
		}
		for i := range nodes {
			cfg, warnings, err := config.LoadFrom(p, nodeEnv(&nodes[i], k))
			if err != nil || len(warnings) > 0 {
				t.Fatalf("%d nodes, node %d: %v %v", count, i, err, warnings)
			}
			if !cfg.HTTP.Enabled || !cfg.HTTP.WebUI || cfg.HTTP.Address != net.JoinHostPort(nodes[i].IP, strconv.Itoa(nodes[i].HTTPPort)) {
				t.Fatalf("%d nodes, node %d: http enabled %v web_ui %v at %s, want the console on %d", count, i, cfg.HTTP.Enabled, cfg.HTTP.WebUI, cfg.HTTP.Address, nodes[i].HTTPPort)
			}
			if cfg.Cluster.Enabled != (count > 1) || cfg.Cluster.Name != "lc" || cfg.Path != nodes[i].DataDir || cfg.TCP.Address != nodes[i].Addr() {
				t.Fatalf("%d nodes, node %d: %+v path %s tcp %s", count, i, cfg.Cluster, cfg.Path, cfg.TCP.Address)
			}
			if count > 1 {
				if !cfg.Cluster.Auth.Enabled || cfg.Cluster.Auth.SharedSecret != key || len(cfg.Cluster.Nodes) != count ||
					*cfg.Cluster.Nodes[i].Ports.TCPReplica != uint16(nodes[i].ReplicaPort) || *cfg.Cluster.Nodes[i].Ports.Gossip != uint16(nodes[i].GossipPort) ||
					*cfg.Cluster.Nodes[i].Ports.HTTP != uint16(nodes[i].HTTPPort) {
					t.Fatalf("node %d: %+v", i, cfg.Cluster)
				}
			}
		}
	}
}
