package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	testSecret     = "s3cr3t-s3cr3t-s3cr3t-s3cr3t-0001"
	testPrevSecret = "s3cr3t-s3cr3t-s3cr3t-s3cr3t-0000"
	testJWT        = "jwt-signing-key-value"
	testEncKey     = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

func TestWriteRuntimeSubstitutesAndOmitsSecrets(t *testing.T) {
	data := t.TempDir()
	cfg := Default()
	cfg.Path = data
	cfg.Cluster.Enabled = true
	cfg.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: testSecret, PreviousSharedSecret: testPrevSecret}
	cfg.HTTP.JWT.EncodingSecret = testJWT
	cfg.HTTP.JWT.DecodingSecret = testJWT
	cfg.Encryption = EncryptionConfig{Enabled: true, Key: testEncKey}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	// A stale file from the previous boot must not survive.
	stale := filepath.Join(cfg.RuntimeDir(), "stale.txt")
	if err := os.MkdirAll(cfg.RuntimeDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}

	path, err := WriteRuntime(cfg.RuntimeDir(), cfg, Bound{TCP: "127.0.0.1:41234", TCPReplica: "127.0.0.1:41235", Gossip: "127.0.0.1:41236", ReplicaID: 1})
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(data, "runtime", RuntimeFileName) {
		t.Fatalf("written to %s", path)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("runtime dir not recreated: %v", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, secret := range []string{testSecret, testPrevSecret, testJWT, testEncKey, "shared_secret", "encoding_secret", "decoding_secret"} {
		if strings.Contains(text, secret) {
			t.Errorf("runtime file contains %q", secret)
		}
	}
	if cfg.Cluster.Auth.SharedSecret != testSecret || cfg.HTTP.JWT.EncodingSecret != testJWT {
		t.Fatal("WriteRuntime cleared the live config's secrets")
	}

	// It parses back with the schema, with the bound addresses in place.
	back := Default()
	if err := decodeTOML(raw, back); err != nil {
		t.Fatalf("runtime file does not decode: %v\n%s", err, text)
	}
	if back.TCP.Address != "127.0.0.1:41234" {
		t.Errorf("tcp.address = %q", back.TCP.Address)
	}
	if got := back.Cluster.Nodes[1].Ports; *got.TCP != 41234 || *got.TCPReplica != 41235 || *got.QUIC != 8081 {
		t.Errorf("node 1 ports %d/%d/%d", *got.TCP, *got.TCPReplica, *got.QUIC)
	}
	if g, ok := back.Cluster.Nodes[1].GossipPort(); !ok || g != 41236 {
		t.Errorf("node 1 gossip port %d %v, want the bound 41236", g, ok)
	}
	if g, ok := back.Cluster.Nodes[0].GossipPort(); !ok || g != 10090 || back.Cluster.Nodes[0].Ports.Gossip != nil {
		t.Errorf("node 0 gossip port %d %v, want the derived 10090 and no explicit key", g, ok)
	}
	if got := back.Cluster.Nodes[0].Ports; *got.TCP != 8090 || *got.TCPReplica != 9090 {
		t.Errorf("node 0 ports changed: %d/%d", *got.TCP, *got.TCPReplica)
	}
	if *cfg.Cluster.Nodes[1].Ports.TCP != 8091 {
		t.Fatal("WriteRuntime changed the live roster")
	}
	if back.Sharding.ShutdownDrainTimeout != cfg.Sharding.ShutdownDrainTimeout || back.Partition.WALBytesMax != cfg.Partition.WALBytesMax ||
		back.Sharding.CPUAllocation.String() != cfg.Sharding.CPUAllocation.String() {
		t.Error("durations, sizes or cpu_allocation did not survive the round trip")
	}
	back.Cluster.Auth = cfg.Cluster.Auth
	back.HTTP.JWT.EncodingSecret, back.HTTP.JWT.DecodingSecret = testJWT, testJWT
	back.Encryption.Key = testEncKey
	if err := back.Validate(); err != nil {
		t.Fatalf("runtime config no longer validates: %v", err)
	}
}

func TestWriteRuntimeSingleNodeAndGuards(t *testing.T) {
	cfg := Default()
	cfg.Path = t.TempDir()
	path, err := WriteRuntime(cfg.RuntimeDir(), cfg, Bound{TCP: "127.0.0.1:5555"})
	if err != nil {
		t.Fatal(err)
	}
	back, warnings, err := LoadFrom(path, nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("runtime file does not load as a config: %v %v", err, warnings)
	}
	if back.TCP.Address != "127.0.0.1:5555" || back.Path != cfg.Path {
		t.Fatalf("loaded back %q %q", back.TCP.Address, back.Path)
	}

	for _, dir := range []string{"", ".", "/", cfg.Path} {
		if _, err := WriteRuntime(dir, cfg, Bound{}); err == nil {
			t.Errorf("WriteRuntime(%q) accepted a directory it would wipe", dir)
		}
	}
	cfg.Cluster.Enabled = true
	if _, err := WriteRuntime(cfg.RuntimeDir(), cfg, Bound{ReplicaID: 7}); err == nil {
		t.Error("unknown replica id accepted")
	}
}
