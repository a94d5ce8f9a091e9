package gossip

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/iggo/iggo/replica/config"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, m := range []Meta{
		{ReplicaID: 0, Name: "n", Status: StatusHealthy},
		{ReplicaID: 7, Name: "iggy-node-8", ClientHost: "broker-8.example.com", TCPPort: 8097, Status: StatusMaintenance, Role: RoleFollower, View: 3},
		{ReplicaID: 2, Name: "n2", TCPPort: 1, Status: StatusHealthy, Role: RoleLeader, View: 0xfedcba98},
		{ReplicaID: 254, Name: strings.Repeat("x", 255), ClientHost: strings.Repeat("h", 245), TCPPort: 65535, Status: StatusStopping},
	} {
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > MetaMax {
			t.Fatalf("%d bytes", len(b))
		}
		got, err := DecodeMeta(b)
		if err != nil || got != m {
			t.Fatalf("round trip %+v: %+v %v", m, got, err)
		}
	}
}

func TestMetaRefusals(t *testing.T) {
	good, _ := Meta{ReplicaID: 1, Name: "ab", ClientHost: "h", TCPPort: 1, Status: StatusHealthy}.Encode()
	mut := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "0 bytes"},
		{"version", mut(func(b []byte) []byte { b[0] = 1; return b }), "version 1"},
		{"role", mut(func(b []byte) []byte { b[3] = 3; return b }), "role 3"},
		{"unreachable", mut(func(b []byte) []byte { b[2] = byte(StatusUnreachable); return b }), "status 3"},
		{"unknown status", mut(func(b []byte) []byte { b[2] = 9; return b }), "status 9"},
		{"no name", mut(func(b []byte) []byte { b[10] = 0; return b }), "name length 0"},
		{"name past end", mut(func(b []byte) []byte { b[10] = 200; return b }), "name length 200"},
		{"trailing byte", mut(func(b []byte) []byte { return append(b, 0) }), "host length"},
		{"short host", mut(func(b []byte) []byte { return b[:len(b)-1] }), "host length"},
	} {
		if _, err := DecodeMeta(tc.in); !errors.Is(err, ErrMetaMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := (Meta{Name: strings.Repeat("x", 255), ClientHost: strings.Repeat("h", 246)}).Encode(); err == nil {
		t.Error("encoded a meta above MetaMax")
	}
	if _, err := (Meta{Name: ""}).Encode(); err == nil {
		t.Error("encoded an empty name")
	}
	if _, err := (Meta{Name: "a", Status: StatusUnreachable}).Encode(); err == nil {
		t.Error("encoded an unreachable status")
	}
	if _, err := (Meta{Name: "a", Role: 3}).Encode(); err == nil {
		t.Error("encoded an unknown role")
	}
}

func FuzzDecodeMeta(f *testing.F) {
	good, _ := Meta{ReplicaID: 1, Name: "node-1", ClientHost: "127.0.0.1", TCPPort: 8090, Status: StatusStarting}.Encode()
	f.Add(good)
	f.Add([]byte{2, 0, 0, 1, 0, 0, 7, 0, 0, 0, 1, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		enc, err := m.Encode()
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("accepted meta does not re-encode to itself: %v", err)
		}
	})
}

func TestFromConfig(t *testing.T) {
	cfg, _, err := config.LoadFrom("", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.Enabled = true
	cfg.Cluster.Auth = config.ClusterAuthConfig{Enabled: true, SharedSecret: keyA, PreviousSharedSecret: keyB}
	cfg.Cluster.Nodes[1].Ports.Gossip = config.Port(7946)
	cfg.Cluster.Nodes[1].AdvertisedAddress = "node-2.example.com"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c, err := FromConfig(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Roster[0].Addr.String() != "127.0.0.1:10090" || c.Roster[1].Addr.String() != "127.0.0.1:7946" {
		t.Errorf("roster %+v", c.Roster)
	}
	if c.Meta.ClientHost != "node-2.example.com" || c.Meta.TCPPort != 8091 || c.Meta.Status != StatusStarting {
		t.Errorf("meta %+v", c.Meta)
	}
	if string(c.Secret) != keyA || string(c.PreviousSecret) != keyB || c.ClusterName != "iggy-cluster" {
		t.Errorf("auth or name not mapped")
	}
	if bytes.Equal(GossipKey([]byte(keyA), "a"), GossipKey([]byte(keyA), "b")) || len(GossipKey([]byte(keyA), "a")) != 32 {
		t.Error("gossip key not a 32-byte per-cluster derivation")
	}
}
