package deploy

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/iggo/iggo/replica/config"
)

// These tests load the configuration the containers get — the Dockerfile's
// ENV, then a compose file's environment with its ${VAR:-default}s at
// their defaults — through the server's own loader, so a compose roster
// that the server would refuse fails here without Docker.

// dockerfileEnv returns the KEY=value pairs of the Dockerfile's ENV
// instruction (one instruction, continued with backslashes).
func dockerfileEnv(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var env []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "ENV ") {
			in, line = true, strings.TrimPrefix(line, "ENV ")
		}
		if !in {
			continue
		}
		more := strings.HasSuffix(line, "\\")
		for _, kv := range strings.Fields(strings.TrimSuffix(line, "\\")) {
			if !strings.Contains(kv, "=") {
				t.Fatalf("Dockerfile ENV: %q is not KEY=value", kv)
			}
			env = append(env, kv)
		}
		if !more {
			break
		}
	}
	if len(env) == 0 {
		t.Fatal("Dockerfile has no ENV")
	}
	return env
}

var (
	composeVar  = regexp.MustCompile(`\$\{[A-Z0-9_]+:?-([^}]*)\}`)
	composeLine = regexp.MustCompile(`^\s+(IGGY_[A-Z0-9_]+):\s*(.*)$`)
)

// composeEnv returns the IGGY_* settings listed under the line that opens
// block (for example "x-env: &env") up to the next line that is blank or
// less indented than the settings.
func composeEnvBlock(t *testing.T, file, block string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == block {
			start = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s: no line %q", file, block)
	}
	var env []string
	for _, l := range lines[start:] {
		m := composeLine.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) == "" || !strings.HasPrefix(l, "   ") {
				break
			}
			continue
		}
		v := strings.TrimSpace(m[2])
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		v = strings.Trim(v, `"`)
		v = composeVar.ReplaceAllString(v, "$1")
		env = append(env, m[1]+"="+v)
	}
	if len(env) == 0 {
		t.Fatalf("%s: no IGGY_* settings under %q", file, block)
	}
	return env
}

func TestComposeClusterConfigLoads(t *testing.T) {
	env := append(dockerfileEnv(t), composeEnvBlock(t, "docker-compose.yml", "x-env: &env")...)
	cfg, warnings, err := config.LoadFrom("", env)
	if err != nil {
		t.Fatalf("the compose nodes' configuration is refused: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %s", w)
	}
	if !cfg.Cluster.Enabled || !cfg.Cluster.Auth.Enabled || len(cfg.Cluster.Auth.SharedSecret) < 32 {
		t.Fatalf("cluster %+v auth %+v: want enabled with a key of 32+ bytes", cfg.Cluster.Enabled, cfg.Cluster.Auth.Enabled)
	}
	if !cfg.QUIC.Enabled || cfg.QUIC.Address != "0.0.0.0:8080" {
		t.Fatalf("quic enabled %v at %q, want on at 0.0.0.0:8080", cfg.QUIC.Enabled, cfg.QUIC.Address)
	}
	if cfg.Path != "/data" || cfg.TCP.Address != "0.0.0.0:8090" || cfg.Logging.FileEnabled {
		t.Fatalf("path %q, tcp %q, file logging %v", cfg.Path, cfg.TCP.Address, cfg.Logging.FileEnabled)
	}
	checkRoster(t, cfg)
}

func TestExampleClusterFileMatchesCompose(t *testing.T) {
	env := []string{"IGGY_CLUSTER_AUTH_SHARED_SECRET=example-only-key-of-at-least-32-bytes!"}
	cfg, warnings, err := config.LoadFrom("config/cluster.toml", env)
	if err != nil {
		t.Fatalf("config/cluster.toml is refused: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %s", w)
	}
	if cfg.Cluster.Name != "iggo-compose" || cfg.Path != "/data" {
		t.Fatalf("name %q path %q", cfg.Cluster.Name, cfg.Path)
	}
	checkRoster(t, cfg)
}

func checkRoster(t *testing.T, cfg *config.Config) {
	t.Helper()
	nodes := cfg.Cluster.Nodes
	if len(nodes) != 3 {
		t.Fatalf("roster has %d nodes, want 3: %+v", len(nodes), nodes)
	}
	for i, n := range nodes {
		wantIP := "172.29.0.1" + string(rune('1'+i))
		p := n.Ports
		if n.ReplicaID != i || n.IP != wantIP || p.TCP == nil || *p.TCP != 8090 || p.TCPReplica == nil || *p.TCPReplica != 9090 {
			t.Fatalf("node %d: %+v, want replica %d at %s with tcp 8090 and tcp_replica 9090", i, n, i, wantIP)
		}
		if g, ok := n.GossipPort(); !ok || g != 10090 {
			t.Fatalf("node %d: gossip port %d, want 10090", i, g)
		}
		if p.QUIC == nil || *p.QUIC != 8080 || !cfg.QUIC.Enabled {
			t.Fatalf("node %d: quic port %v (enabled %v), want 8080", i, p.QUIC, cfg.QUIC.Enabled)
		}
		if p.WebSocket == nil || *p.WebSocket != 8092 || !cfg.WebSocket.Enabled {
			t.Fatalf("node %d: websocket port %v (enabled %v), want 8092", i, p.WebSocket, cfg.WebSocket.Enabled)
		}
		if p.HTTP == nil || *p.HTTP != 3000 {
			t.Fatalf("node %d: http port %v, want 3000 (the image's health check asks :3000/readyz)", i, p.HTTP)
		}
		if !cfg.HTTP.Enabled || !cfg.HTTP.WebUI {
			t.Fatalf("node %d: http enabled %v, web_ui %v: want the web console served", i, cfg.HTTP.Enabled, cfg.HTTP.WebUI)
		}
	}
}

func TestComposeSingleConfigLoads(t *testing.T) {
	env := append(dockerfileEnv(t), composeEnvBlock(t, "docker-compose.single.yml", "environment:")...)
	cfg, warnings, err := config.LoadFrom("", env)
	if err != nil {
		t.Fatalf("the single node's configuration is refused: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %s", w)
	}
	if cfg.Cluster.Enabled || cfg.Node.AdvertisedAddress != "172.30.0.11" || cfg.TCP.Address != "0.0.0.0:8090" || !cfg.HTTP.WebUI {
		t.Fatalf("cluster %v, advertised %q, tcp %q, web_ui %v", cfg.Cluster.Enabled, cfg.Node.AdvertisedAddress, cfg.TCP.Address, cfg.HTTP.WebUI)
	}
}

func TestComposeTLSConfigLoads(t *testing.T) {
	env := append(dockerfileEnv(t), composeEnvBlock(t, "docker-compose.yml", "x-env: &env")...)
	env = append(env, composeEnvBlock(t, "docker-compose.tls.yml", "x-tls: &tls")...)
	cfg, warnings, err := config.LoadFrom("", env)
	if err != nil {
		t.Fatalf("the TLS compose nodes' configuration is refused: %v", err)
	}
	for _, w := range warnings {
		t.Errorf("warning: %s", w)
	}
	for key, tc := range map[string]config.TLSConfig{"tcp.tls": cfg.TCP.TLS, "websocket.tls": cfg.WebSocket.TLS} {
		if !tc.Enabled || tc.SelfSigned || tc.CertFile != "/certs/server.pem" || tc.KeyFile != "/certs/server.key" {
			t.Errorf("%s: %+v, want enabled with the mounted certificate", key, tc)
		}
	}
	checkRoster(t, cfg)
}
