package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/shard"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, path string, env ...string) (*Config, []string) {
	t.Helper()
	cfg, warnings, err := LoadFrom(path, env)
	if err != nil {
		t.Fatalf("LoadFrom(%q, %v): %v", path, env, err)
	}
	return cfg, warnings
}

func TestDefaultsLoad(t *testing.T) {
	cfg, warnings := mustLoad(t, "")
	if len(warnings) != 0 {
		t.Fatalf("defaults produce warnings: %v", warnings)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"path", cfg.Path, "local_data"},
		{"tcp.enabled", cfg.TCP.Enabled, true},
		{"tcp.address", cfg.TCP.Address, "127.0.0.1:8090"},
		{"http.enabled", cfg.HTTP.Enabled, true},
		{"quic.enabled", cfg.QUIC.Enabled, false},
		{"websocket.enabled", cfg.WebSocket.Enabled, false},
		{"runtime.path", cfg.Runtime.Path, "runtime"},
		{"runtime.gc_percent", cfg.Runtime.GCPercent, 400},
		{"logging.path", cfg.Logging.Path, "logs"},
		{"logging.max_file_size", cfg.Logging.MaxFileSize, 500 * MB},
		{"logging.retention", cfg.Logging.Retention.Duration, 7 * 24 * time.Hour},
		{"sharding.cpu_allocation", cfg.Sharding.CPUAllocation.Kind, shard.AllocAll},
		{"sharding.inbox_capacity", cfg.Sharding.InboxCapacity, 65536},
		{"sharding.reply_inbox_capacity", cfg.Sharding.ReplyInboxCapacity, 1024},
		{"sharding.shutdown_poll_interval", cfg.Sharding.ShutdownPollInterval.Duration, 50 * time.Millisecond},
		{"partition.prepare_queue_depth", cfg.Partition.PrepareQueueDepth, 32},
		{"partition.wal_bytes_max", cfg.Partition.WALBytesMax, 256 * MiB},
		{"partition.consumer_offsets_max", cfg.Partition.ConsumerOffsetsMax, 4096},
		{"metadata.journal_slots", cfg.Metadata.JournalSlots, 1024},
		{"metadata.clients_table_max", cfg.Metadata.ClientsTableMax, 8192},
		{"message_bus.max_message_size", cfg.MessageBus.MaxMessageSize, 64 * MiB},
		{"message_bus.peer_queue_capacity", cfg.MessageBus.PeerQueueCapacity, 4096},
		{"message_bus.connections_max", cfg.MessageBus.ConnectionsMax, (*int)(nil)},
		{"message_bus.descriptors_reserved", cfg.MessageBus.DescriptorsReserved, 256},
		{"message_bus.unauthenticated_per_address_max", cfg.MessageBus.UnauthenticatedPerAddressMax, 256},
		{"message_bus.unauthenticated_bytes_max", cfg.MessageBus.UnauthenticatedBytesMax, 64 * MiB},
		{"message_bus.unauthenticated_frame_max", cfg.MessageBus.UnauthenticatedFrameMax, 64 * KiB},
		{"message_bus.inflight_bytes_max", cfg.MessageBus.InflightBytesMax, GiB},
		{"message_bus.frame_header_timeout", cfg.MessageBus.FrameHeaderTimeout.Duration, 10 * time.Second},
		{"message_bus.frame_body_timeout", cfg.MessageBus.FrameBodyTimeout.Duration, time.Minute},
		{"message_bus.unauthenticated_idle_timeout", cfg.MessageBus.UnauthenticatedIdleTimeout.Duration, 30 * time.Second},
		{"login.verifications_max", cfg.Login.VerificationsMax, 0},
		{"login.verification_queue_max", cfg.Login.VerificationQueueMax, 1024},
		{"login.verification_queue_timeout", cfg.Login.VerificationQueueTimeout.Duration, 5 * time.Second},
		{"login.throttle.enabled", cfg.Login.Throttle.Enabled, true},
		{"login.throttle.address_burst", cfg.Login.Throttle.AddressBurst, 10},
		{"login.throttle.user_interval", cfg.Login.Throttle.UserInterval.Duration, 500 * time.Millisecond},
		{"login.throttle.delay_max", cfg.Login.Throttle.DelayMax.Duration, 5 * time.Second},
		{"logging.client_events_per_second", cfg.Logging.ClientEventsPerSecond, 20},
		{"heartbeat.interval", cfg.Heartbeat.Interval.Duration, 30 * time.Second},
		{"personal_access_token.max_tokens_per_user", cfg.PersonalAccessToken.MaxTokensPerUser, 100},
		{"data_maintenance.messages.interval", cfg.DataMaintenance.Messages.Interval.Duration, time.Minute},
		{"cluster.enabled", cfg.Cluster.Enabled, false},
		{"cluster.heartbeat_timeout", cfg.Cluster.HeartbeatTimeout.Duration, 5 * time.Second},
		{"cluster.member_eviction_timeout", cfg.Cluster.MemberEvictionTimeout.Duration, 30 * time.Second},
		{"cluster.superblock_wedged_fatal_timeout", cfg.Cluster.SuperblockWedgedFatalTimeout.Duration, 2 * time.Minute},
		{"cluster.coordinator.skip_shard_zero_for_replicas", cfg.Cluster.Coordinator.SkipShardZeroForReplicas, true},
		{"cluster.nodes", len(cfg.Cluster.Nodes), 2},
		{"cluster.nodes[1].ports.tcp_replica", *cfg.Cluster.Nodes[1].Ports.TCPReplica, uint16(9091)},
		{"node.advertised_address", cfg.Node.AdvertisedAddress, ""},
		{"websocket.max_message_size", cfg.WebSocket.MaxMessageSize, (*ByteSize)(nil)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !reflect.DeepEqual(Default(), cfg) {
		t.Error("Default() differs from LoadFrom with no file and no environment")
	}
	if cfg.RuntimeDir() != filepath.Join("local_data", "runtime") || cfg.LogDir() != filepath.Join("local_data", "logs") {
		t.Errorf("RuntimeDir %q LogDir %q", cfg.RuntimeDir(), cfg.LogDir())
	}
}

// Every schema key must appear in the embedded reference file (optional keys
// as commented examples), so the file documents everything.
func TestDefaultTOMLDocumentsEveryKey(t *testing.T) {
	text := string(DefaultTOML())
	var walk func(t reflect.Type)
	walk = func(rt reflect.Type) {
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			key := tomlKey(f)
			if !strings.Contains(text, key) {
				t.Errorf("default.toml never mentions %q", key)
			}
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !isLeaf(ft) {
				walk(ft)
			}
		}
	}
	walk(reflect.TypeFor[Config]())
}

func TestFileOverridesDefaults(t *testing.T) {
	p := writeFile(t, `
path = "/srv/iggo"

[tcp]
address = "0.0.0.0:9000"

[node]
advertised_address = "broker-1.example.com"

[sharding]
cpu_allocation = 2
inbox_capacity = 4096
shutdown_drain_timeout = "3 s"

[partition]
wal_bytes_max = "512 MiB"

[[cluster.nodes]]
name = "solo"
ip = "10.0.0.1"
replica_id = 0
ports = { tcp = 8090, tcp_replica = 9090 }
`)
	cfg, warnings := mustLoad(t, p)
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	if cfg.Path != "/srv/iggo" || cfg.TCP.Address != "0.0.0.0:9000" || !cfg.TCP.Enabled {
		t.Fatalf("tcp/path: %+v %q", cfg.TCP, cfg.Path)
	}
	if cfg.Sharding.CPUAllocation.String() != "2" || cfg.Sharding.InboxCapacity != 4096 ||
		cfg.Sharding.ShutdownDrainTimeout.Duration != 3*time.Second || cfg.Sharding.ReplyInboxCapacity != 1024 {
		t.Fatalf("sharding: %+v", cfg.Sharding)
	}
	if cfg.Partition.WALBytesMax != 512*MiB || cfg.Partition.PrepareQueueDepth != 32 {
		t.Fatalf("partition: %+v", cfg.Partition)
	}
	if len(cfg.Cluster.Nodes) != 1 || cfg.Cluster.Nodes[0].Name != "solo" || cfg.Cluster.Nodes[0].Ports.QUIC != nil {
		t.Fatalf("the file's roster must replace the default one: %+v", cfg.Cluster.Nodes)
	}
}

func TestConfigPathFromEnvironment(t *testing.T) {
	p := writeFile(t, "[tcp]\naddress = \"127.0.0.1:7000\"\n")
	cfg, _ := mustLoad(t, "", EnvConfigPath+"="+p)
	if cfg.TCP.Address != "127.0.0.1:7000" {
		t.Fatalf("IGGY_CONFIG_PATH not read: %q", cfg.TCP.Address)
	}
	// --config wins over the variable.
	q := writeFile(t, "[tcp]\naddress = \"127.0.0.1:7001\"\n")
	cfg, _ = mustLoad(t, q, EnvConfigPath+"="+p)
	if cfg.TCP.Address != "127.0.0.1:7001" {
		t.Fatalf("explicit path lost to IGGY_CONFIG_PATH: %q", cfg.TCP.Address)
	}
}

func TestMissingExplicitFileIsAnError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.toml")
	if _, _, err := LoadFrom(missing, nil); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing --config file: %v", err)
	}
	if _, _, err := LoadFrom("", []string{EnvConfigPath + "=" + missing}); err == nil {
		t.Fatal("missing IGGY_CONFIG_PATH file accepted")
	}
}

func TestMalformedFileNamesTheKey(t *testing.T) {
	p := writeFile(t, "[sharding]\nshutdown_drain_timeout = \"ten seconds\"\n")
	_, _, err := LoadFrom(p, nil)
	if err == nil || !strings.Contains(err.Error(), "sharding.shutdown_drain_timeout") || !strings.Contains(err.Error(), "ten seconds") {
		t.Fatalf("bad duration: %v", err)
	}
	p = writeFile(t, "[sharding]\ncpu_allocation = 0\n[quic]\ninitial_mtu = \"big\"\n")
	_, _, err = LoadFrom(p, nil)
	if err == nil || !strings.Contains(err.Error(), "sharding.cpu_allocation") || !strings.Contains(err.Error(), "quic.initial_mtu") {
		t.Fatalf("bad custom values: %v", err)
	}
	p = writeFile(t, "[tcp]\nenabled = \"yes\"\n")
	_, _, err = LoadFrom(p, nil)
	if err == nil || !strings.Contains(err.Error(), "tcp.enabled") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad scalar: %v", err)
	}
	p = writeFile(t, "[tcp\n")
	if _, _, err := LoadFrom(p, nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	p := writeFile(t, `
[cluster]
enabled = true

[[cluster.nodes]]
name = "a"
ip = "10.0.0.1"
replica_id = 0
ports = { tcp = 8090, tcp_replica = 9090 }
`)
	env := []string{
		"IGGY_TCP_ADDRESS=127.0.0.1:7777",
		"IGGY_PATH=/data/node-2",
		"IGGY_SHARDING_CPU_ALLOCATION=numa:nodes=0;cores=1",
		"IGGY_SHARDING_PIN_CORES=false",
		"IGGY_RUNTIME_GC_PERCENT=-1",
		"IGGY_CLUSTER_ENABLED=true",
		"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=10s",
		"IGGY_CLUSTER_MEMBER_EVICTION_TIMEOUT=45s",
		"IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE=32 MiB",
		"IGGY_HTTP_CORS_ALLOWED_ORIGINS=https://a.example, https://b.example",
		// The roster below gives no ports.http, which an enabled HTTP API needs.
		"IGGY_HTTP_ENABLED=false",
		"IGGY_PARTITION_PREPARE_QUEUE_DEPTH=100",
		"IGGY_WEBSOCKET_MAX_FRAME_SIZE=1 MiB",
		"IGGY_CLUSTER_AUTH_ENABLED=true",
		"IGGY_CLUSTER_AUTH_SHARED_SECRET=0123456789abcdef0123456789abcdef",
		// Roster by index: change node 0, create nodes 1 and 2.
		"IGGY_CLUSTER_NODES_0_PORTS_TCP_REPLICA=9190",
		"IGGY_CLUSTER_NODES_1_NAME=b",
		"IGGY_CLUSTER_NODES_1_IP=10.0.0.2",
		"IGGY_CLUSTER_NODES_1_REPLICA_ID=1",
		"IGGY_CLUSTER_NODES_1_PORTS_TCP=8090",
		"IGGY_CLUSTER_NODES_1_PORTS_TCP_REPLICA=9090",
		"IGGY_CLUSTER_NODES_2_NAME=c",
		"IGGY_CLUSTER_NODES_2_IP=10.0.0.3",
		"IGGY_CLUSTER_NODES_2_REPLICA_ID=2",
		"IGGY_CLUSTER_NODES_2_PORTS_TCP=8090",
		"IGGY_CLUSTER_NODES_2_PORTS_TCP_REPLICA=9090",
		"IGGY_CLUSTER_NODES_2_ADVERTISED_ADDRESS=node-c.example",
		"IGGY_CLUSTER_NODES_2_ADVERTISED_ADDRESSES_0_CLIENT_CIDR=10.0.0.0/8",
		"IGGY_CLUSTER_NODES_2_ADVERTISED_ADDRESSES_0_ADDRESS=10.0.0.3",
		"IGGY_ROOT_USERNAME=admin",
		"IGGY_ROOT_PASSWORD=secret",
		"PATH=/usr/bin",
	}
	cfg, warnings := mustLoad(t, p, env...)
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	if cfg.TCP.Address != "127.0.0.1:7777" || cfg.Path != "/data/node-2" {
		t.Fatalf("tcp %q path %q", cfg.TCP.Address, cfg.Path)
	}
	if cfg.Sharding.CPUAllocation.String() != "numa:nodes=0;cores=1;no_ht=true" || cfg.Sharding.PinCores {
		t.Fatalf("sharding %+v", cfg.Sharding)
	}
	if cfg.Runtime.GCPercent != -1 {
		t.Fatalf("runtime.gc_percent from the environment: %d", cfg.Runtime.GCPercent)
	}
	if cfg.Cluster.HeartbeatTimeout.Duration != 10*time.Second || cfg.MessageBus.MaxMessageSize != 32*MiB ||
		cfg.Cluster.MemberEvictionTimeout.Duration != 45*time.Second {
		t.Fatalf("cluster/bus: %v %v %v", cfg.Cluster.HeartbeatTimeout, cfg.MessageBus.MaxMessageSize, cfg.Cluster.MemberEvictionTimeout)
	}
	if !reflect.DeepEqual(cfg.HTTP.CORS.AllowedOrigins, []string{"https://a.example", "https://b.example"}) {
		t.Fatalf("origins %q", cfg.HTTP.CORS.AllowedOrigins)
	}
	if cfg.Partition.PrepareQueueDepth != 100 || cfg.WebSocket.MaxFrameSize == nil || *cfg.WebSocket.MaxFrameSize != MiB {
		t.Fatalf("partition/ws: %d %v", cfg.Partition.PrepareQueueDepth, cfg.WebSocket.MaxFrameSize)
	}
	nodes := cfg.Cluster.Nodes
	if len(nodes) != 3 {
		t.Fatalf("roster has %d nodes, want 3: %+v", len(nodes), nodes)
	}
	if nodes[0].Name != "a" || *nodes[0].Ports.TCP != 8090 || *nodes[0].Ports.TCPReplica != 9190 {
		t.Fatalf("node 0 %+v", nodes[0])
	}
	if nodes[1].Name != "b" || nodes[1].IP != "10.0.0.2" || nodes[1].ReplicaID != 1 || *nodes[1].Ports.TCPReplica != 9090 {
		t.Fatalf("node 1 %+v", nodes[1])
	}
	if nodes[2].AdvertisedAddress != "node-c.example" || len(nodes[2].AdvertisedAddresses) != 1 ||
		nodes[2].AdvertisedAddresses[0] != (AdvertiseSelector{ClientCIDR: "10.0.0.0/8", Address: "10.0.0.3"}) {
		t.Fatalf("node 2 %+v", nodes[2])
	}
}

func TestSplitEnvList(t *testing.T) {
	cases := map[string][]string{
		"":                       {},
		"[]":                     {},
		"a":                      {"a"},
		"a, b ,c":                {"a", "b", "c"},
		"[GET, POST]":            {"GET", "POST"},
		`["a,b", "c"]`:           {"a,b", "c"},
		`['x', "y"]`:             {"x", "y"},
		" [ https://a.example ]": {"https://a.example"},
	}
	for in, want := range cases {
		if got := splitEnvList(in); !reflect.DeepEqual(got, want) {
			t.Errorf("splitEnvList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEnvironmentUnsetsOptionalKey(t *testing.T) {
	p := writeFile(t, "[websocket]\nmax_frame_size = \"1 MiB\"\n")
	cfg, _ := mustLoad(t, p)
	if cfg.WebSocket.MaxFrameSize == nil {
		t.Fatal("file did not set websocket.max_frame_size")
	}
	cfg, _ = mustLoad(t, p, "IGGY_WEBSOCKET_MAX_FRAME_SIZE=")
	if cfg.WebSocket.MaxFrameSize != nil {
		t.Fatalf("empty variable did not unset the key: %v", *cfg.WebSocket.MaxFrameSize)
	}
}

func TestEnvironmentOrderDoesNotMatter(t *testing.T) {
	a := []string{"IGGY_CLUSTER_NODES_3_NAME=d", "IGGY_CLUSTER_NODES_2_NAME=c"}
	b := []string{"IGGY_CLUSTER_NODES_2_NAME=c", "IGGY_CLUSTER_NODES_3_NAME=d"}
	ca, _ := mustLoad(t, "", a...)
	cb, _ := mustLoad(t, "", b...)
	if !reflect.DeepEqual(ca, cb) || len(ca.Cluster.Nodes) != 4 || ca.Cluster.Nodes[3].Name != "d" {
		t.Fatalf("order-dependent roster: %+v / %+v", ca.Cluster.Nodes, cb.Cluster.Nodes)
	}
}

func TestEnvironmentWarningsAndErrors(t *testing.T) {
	_, warnings := mustLoad(t, "", "IGGY_TCP_ADRESS=x", "IGGY_CLUSTER_NODES_0_PORT=1", "IGGY_USERNAME=someone")
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"IGGY_TCP_ADRESS", "IGGY_CLUSTER_NODES_0_PORT"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning mentioning %s in %q", want, joined)
		}
	}
	if strings.Contains(joined, "IGGY_USERNAME") {
		t.Errorf("unrelated IGGY_USERNAME warned about: %q", joined)
	}

	cases := []struct {
		env  string
		want []string
	}{
		{"IGGY_TCP_ENABLED=maybe", []string{"tcp.enabled", "IGGY_TCP_ENABLED", "not a boolean"}},
		{"IGGY_SHARDING_INBOX_CAPACITY=lots", []string{"sharding.inbox_capacity", "not an integer"}},
		{"IGGY_CLUSTER_NODES_0_PORTS_TCP=70000", []string{"cluster.nodes[0].ports.tcp", "uint16"}},
		{"IGGY_CLUSTER_HEARTBEAT_TIMEOUT=5", []string{"cluster.heartbeat_timeout", "has no unit"}},
		{"IGGY_CLUSTER_MEMBER_EVICTION_TIMEOUT=30", []string{"cluster.member_eviction_timeout", "has no unit"}},
		{"IGGY_SHARDING_CPU_ALLOCATION=numa:bogus=1", []string{"sharding.cpu_allocation", "unknown numa parameter"}},
		{"IGGY_SYSTEM_PATH=/data", []string{"IGGY_SYSTEM_PATH", "use IGGY_PATH"}},
		{"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION=all", []string{"IGGY_SYSTEM_SHARDING_CPU_ALLOCATION", "use IGGY_SHARDING_CPU_ALLOCATION"}},
		{"IGGY_SYSTEM_SEGMENT_SIZE=1GiB", []string{"IGGY_SYSTEM_SEGMENT_SIZE", "removed"}},
	}
	for _, c := range cases {
		_, _, err := LoadFrom("", []string{c.env})
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: error %v is not a ValidationError", c.env, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.env, err, w)
			}
		}
	}
}

func TestRelocatedKeysRefuseBoot(t *testing.T) {
	cases := []struct {
		toml string
		key  string
		msg  string
	}{
		{"[system]\npath = \"d\"\n", "system.path", "moved to the top-level key path"},
		{"[system.sharding]\ncpu_allocation = \"all\"\n", "system.sharding.cpu_allocation", "moved to [sharding]"},
		{"[system.partition]\nenforce_fsync = true\n", "system.partition.enforce_fsync", "per-topic option durability"},
		{"[partition]\nenforce_fsync = true\n", "partition.enforce_fsync", "per-topic option durability"},
		{"[system.segment]\nsize = \"1 GiB\"\n", "system.segment.size", "per-topic option segment_size"},
		{"[system.topic]\nmessage_expiry = \"1 h\"\n", "system.topic.message_expiry", "per-topic option message_expiry"},
		{"[system.partition]\nvalidate_checksum = true\n", "system.partition.validate_checksum", "moved to partition.validate_checksum"},
		{"[system.recovery]\nrecreate_missing_state = false\n", "system.recovery.recreate_missing_state", "not supported"},
		{"[system.message_deduplication]\nenabled = true\n", "system.message_deduplication.enabled", "removed"},
		{"[system.state]\nx = 1\n", "system.state.x", "the [system] table was removed"},
		{"[segment]\nsize = \"1 GiB\"\n", "segment.size", "per-topic options"},
		{"[extra]\nx = 1\n", "extra.x", "removed"},
	}
	for _, c := range cases {
		_, _, err := LoadFrom(writeFile(t, c.toml), nil)
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%q: error %v is not a ValidationError", c.toml, err)
			continue
		}
		found := false
		for _, p := range ve.Problems {
			if p.Key == c.key && strings.Contains(p.Rule, c.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %s: ...%s..., got %v", c.toml, c.key, c.msg, err)
		}
	}
}

func TestUnknownFileKeysWarn(t *testing.T) {
	p := writeFile(t, "[tcp]\nadress = \"x\"\n[[cluster.nodes]]\nname = \"a\"\nport = 1\n[mystery]\nk = 1\n")
	_, warnings := mustLoad(t, p)
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"tcp.adress", "cluster.nodes[0].port", "mystery.k"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no warning for %s in %q", want, joined)
		}
	}
}

func TestInvalidFileRefusesWithAllProblems(t *testing.T) {
	p := writeFile(t, "[metadata]\nprepare_queue_depth = 200\n[partition]\nprepare_queue_depth = 0\n")
	_, _, err := LoadFrom(p, nil)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v", err)
	}
	for _, want := range []string{"metadata.prepare_queue_depth", "partition.prepare_queue_depth"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
}

// The client-intake and login keys take IGGY_* overrides like every key.
func TestIntakeKeysFromEnvironment(t *testing.T) {
	cfg, warnings := mustLoad(t, "",
		"IGGY_MESSAGE_BUS_CONNECTIONS_MAX=50",
		"IGGY_MESSAGE_BUS_DESCRIPTORS_RESERVED=64",
		"IGGY_MESSAGE_BUS_UNAUTHENTICATED_PER_ADDRESS_MAX=8",
		"IGGY_MESSAGE_BUS_UNAUTHENTICATED_BYTES_MAX=1 MiB",
		"IGGY_MESSAGE_BUS_UNAUTHENTICATED_FRAME_MAX=8 KiB",
		"IGGY_MESSAGE_BUS_INFLIGHT_BYTES_MAX=128 MiB",
		"IGGY_MESSAGE_BUS_FRAME_HEADER_TIMEOUT=2 s",
		"IGGY_MESSAGE_BUS_FRAME_BODY_TIMEOUT=3 s",
		"IGGY_MESSAGE_BUS_UNAUTHENTICATED_IDLE_TIMEOUT=4 s",
		"IGGY_LOGIN_VERIFICATIONS_MAX=3",
		"IGGY_LOGIN_VERIFICATION_QUEUE_MAX=7",
		"IGGY_LOGIN_VERIFICATION_QUEUE_TIMEOUT=1 s",
		"IGGY_LOGIN_THROTTLE_ENABLED=false",
		"IGGY_LOGIN_THROTTLE_ADDRESS_BURST=3",
		"IGGY_LOGIN_THROTTLE_ADDRESS_INTERVAL=2 s",
		"IGGY_LOGIN_THROTTLE_USER_BURST=4",
		"IGGY_LOGIN_THROTTLE_USER_INTERVAL=250 ms",
		"IGGY_LOGIN_THROTTLE_DELAY_MAX=1 s",
		"IGGY_LOGIN_THROTTLE_ENTRIES_MAX=100",
		"IGGY_LOGGING_CLIENT_EVENTS_PER_SECOND=5",
	)
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b, l := cfg.MessageBus, cfg.Login
	got := []any{*b.ConnectionsMax, b.DescriptorsReserved, b.UnauthenticatedPerAddressMax, b.UnauthenticatedBytesMax,
		b.UnauthenticatedFrameMax, b.InflightBytesMax, b.FrameHeaderTimeout.Duration, b.FrameBodyTimeout.Duration,
		b.UnauthenticatedIdleTimeout.Duration, l.VerificationsMax, l.VerificationQueueMax, l.VerificationQueueTimeout.Duration,
		l.Throttle.Enabled, l.Throttle.AddressBurst, l.Throttle.AddressInterval.Duration, l.Throttle.UserBurst,
		l.Throttle.UserInterval.Duration, l.Throttle.DelayMax.Duration, l.Throttle.EntriesMax, cfg.Logging.ClientEventsPerSecond}
	want := []any{50, 64, 8, MiB, 8 * KiB, 128 * MiB, 2 * time.Second, 3 * time.Second, 4 * time.Second, 3, 7, time.Second,
		false, 3, 2 * time.Second, 4, 250 * time.Millisecond, time.Second, 100, 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

// TestConsumerSessionKeys: consumer_group.session_timeout and
// heartbeat_interval default to Iggy's 30 s and 5 s, load any value that
// keeps three reports per session (no longer only the default), and refuse
// the rest naming the key.
func TestConsumerSessionKeys(t *testing.T) {
	cfg, _ := mustLoad(t, "")
	if g := cfg.ConsumerGroup; g.SessionTimeout.Duration != 30*time.Second || g.HeartbeatInterval.Duration != 5*time.Second {
		t.Fatalf("defaults: session %v heartbeat %v", g.SessionTimeout, g.HeartbeatInterval)
	}
	cfg, _ = mustLoad(t, "", "IGGY_CONSUMER_GROUP_SESSION_TIMEOUT=1s", "IGGY_CONSUMER_GROUP_HEARTBEAT_INTERVAL=200ms")
	if g := cfg.ConsumerGroup; g.SessionTimeout.Duration != time.Second || g.HeartbeatInterval.Duration != 200*time.Millisecond {
		t.Fatalf("from the environment: session %v heartbeat %v", g.SessionTimeout, g.HeartbeatInterval)
	}
	cfg, _ = mustLoad(t, "", "IGGY_CONSUMER_GROUP_SESSION_TIMEOUT=2m")
	if cfg.ConsumerGroup.SessionTimeout.Duration != 2*time.Minute {
		t.Fatalf("a longer session: %v", cfg.ConsumerGroup.SessionTimeout)
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"IGGY_CONSUMER_GROUP_SESSION_TIMEOUT=10s"}, "consumer_group.session_timeout: must be at least 3 x consumer_group.heartbeat_interval = 15 s"},
		{[]string{"IGGY_CONSUMER_GROUP_HEARTBEAT_INTERVAL=11s"}, "consumer_group.session_timeout: must be at least 3 x consumer_group.heartbeat_interval = 33 s"},
		{[]string{"IGGY_CONSUMER_GROUP_HEARTBEAT_INTERVAL=5ms"}, "consumer_group.heartbeat_interval: must be at least 10 ms"},
		{[]string{"IGGY_CONSUMER_GROUP_HEARTBEAT_INTERVAL=0s"}, "consumer_group.heartbeat_interval: must be at least 10 ms"},
	} {
		if _, _, err := LoadFrom("", tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		}
	}
}
