package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/shard"
)

// clustered is the default config with clustering on; valid as it stands.
func clustered(c *Config) {
	c.Cluster.Enabled = true
}

func sz(b ByteSize) *ByteSize { return &b }

func TestValidBaselines(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"default":   func(*Config) {},
		"gc off":    func(c *Config) { c.Runtime.GCPercent = -1 },
		"clustered": clustered,
		"clustered with auth and tls": func(c *Config) {
			clustered(c)
			c.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: strings.Repeat("k", 32), PreviousSharedSecret: strings.Repeat("p", 40)}
			c.Cluster.TLS = ClusterTLSConfig{Enabled: true, SelfSigned: true}
		},
		"wildcard bind with advertised address": func(c *Config) {
			c.TCP.Address = "0.0.0.0:8090"
			c.Node.AdvertisedAddress = "broker-1.example.com"
		},
		"wildcard bind clustered": func(c *Config) {
			c.TCP.Address = "[::]:8090"
			clustered(c)
		},
		"disjoint selectors sharing an address": func(c *Config) {
			clustered(c)
			c.Cluster.Nodes[1].IP = "127.0.0.2"
			c.Cluster.Nodes[1].Ports.TCP = Port(8090)
			c.Cluster.Nodes[0].AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/16", "gw.example"}}
			c.Cluster.Nodes[1].AdvertisedAddresses = []AdvertiseSelector{{"10.1.0.0/16", "gw.example"}}
		},
		"nested selectors on one node": func(c *Config) {
			clustered(c)
			c.Cluster.Nodes[1].IP = "127.0.0.2"
			c.Cluster.Nodes[1].Ports.TCP = Port(8090)
			// Node 0 hands 10/8 to gw except 10.1/16, which its longer
			// selector sends elsewhere; node 1 hands gw to exactly 10.1/16,
			// so no client can resolve both nodes to gw:8090.
			c.Cluster.Nodes[0].AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/8", "gw.example"}, {"10.1.0.0/16", "inner.example"}}
			c.Cluster.Nodes[1].AdvertisedAddresses = []AdvertiseSelector{{"10.1.0.0/16", "gw.example"}}
		},
		"log directives":           func(c *Config) { c.Logging.Level = "warn,replica=debug,shard::loop=TRACE" },
		"unbuffered replica reads": func(c *Config) { c.MessageBus.ReplicaReadBufferSize = 0 },
		// Consumer sessions shorter than the view-change timeout: a new
		// primary starts every session afresh, so nothing ties them.
		"short consumer sessions clustered": func(c *Config) {
			clustered(c)
			c.ConsumerGroup.HeartbeatInterval = D(200 * time.Millisecond)
			c.ConsumerGroup.SessionTimeout = D(600 * time.Millisecond)
		},
	} {
		c := Default()
		mut(c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestUnavailableTransportsRefusedOnly turns every transport this build
// does not serve on with otherwise valid settings: the only problems are
// the refusals (their own rules stay checked for when they are served).
func TestUnavailableTransportsRefusedOnly(t *testing.T) {
	c := Default()
	c.QUIC.Enabled, c.WebSocket.Enabled = true, true
	c.WebSocket.MaxMessageSize, c.WebSocket.MaxFrameSize = sz(8*MiB), sz(MiB)
	c.WebSocket.WriteBufferSize, c.WebSocket.MaxWriteBufferSize = sz(64*KiB), sz(MiB)
	c.Telemetry.Enabled = true
	clustered(c)
	var ve *ValidationError
	if !errors.As(c.Validate(), &ve) {
		t.Fatal("unavailable transports were accepted")
	}
	got := map[string]bool{}
	for _, p := range ve.Problems {
		got[p.Key] = true
		if !strings.Contains(p.Rule, "not available in this build") {
			t.Errorf("unexpected problem %s", p)
		}
	}
	// quic.enabled is served: with valid settings it raises no problem.
	for _, k := range []string{"telemetry.enabled"} {
		if !got[k] {
			t.Errorf("%s = true not refused: %v", k, ve)
		}
	}
}

func TestEveryRuleRefuses(t *testing.T) {
	type tc struct {
		name string
		mut  func(*Config)
		key  string
		rule string
	}
	node := func(i int) func(c *Config) *ClusterNode {
		return func(c *Config) *ClusterNode { return &c.Cluster.Nodes[i] }
	}
	n0, n1 := node(0), node(1)
	cases := []tc{
		// paths
		{"path empty", func(c *Config) { c.Path = " " }, "path", "must name the data directory"},
		{"runtime empty", func(c *Config) { c.Runtime.Path = "" }, "runtime.path", "must name a subdirectory of path"},
		{"runtime dot", func(c *Config) { c.Runtime.Path = "." }, "runtime.path", "relative subdirectory of path"},
		{"runtime parent", func(c *Config) { c.Runtime.Path = "../x" }, "runtime.path", "relative subdirectory of path"},
		{"runtime absolute", func(c *Config) { c.Runtime.Path = "/tmp/rt" }, "runtime.path", "relative subdirectory of path"},
		{"logging path", func(c *Config) { c.Logging.Path = "" }, "logging.path", "must name a directory"},

		// tcp
		{"tcp address", func(c *Config) { c.TCP.Address = "localhost" }, "tcp.address", "must be host:port"},
		{"tcp port", func(c *Config) { c.TCP.Address = "127.0.0.1:70000" }, "tcp.address", "port in 0..65535"},
		{"tcp tls cert", func(c *Config) { c.TCP.TLS = TLSConfig{Enabled: true, KeyFile: "k"} }, "tcp.tls.cert_file", "must be set when tcp.tls.enabled"},
		{"tcp tls key", func(c *Config) { c.TCP.TLS = TLSConfig{Enabled: true, CertFile: "c"} }, "tcp.tls.key_file", "must be set when tcp.tls.enabled"},

		// quic
		{"quic address", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.Address = "x" }, "quic.address", "must be host:port"},
		{"quic streams", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.MaxConcurrentBidiStreams = 0 }, "quic.max_concurrent_bidi_streams", "at least 1"},
		{"quic mtu", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.InitialMTU = 1000 }, "quic.initial_mtu", "at least 1200 B"},
		{"quic mtu above quic-go's", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.InitialMTU = 1453 }, "quic.initial_mtu", "at most 1452 B"},
		{"quic send window", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.SendWindow = 0 }, "quic.send_window", "greater than zero"},
		{"quic stream window", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.StreamReceiveWindow = 128 * MiB }, "quic.stream_receive_window", "must not exceed quic.receive_window"},
		{"quic keepalive", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.KeepAliveInterval = D(time.Minute) }, "quic.keep_alive_interval", "shorter than quic.max_idle_timeout"},
		{"quic cert", func(c *Config) {
			c.QUIC.Enabled = true
			c.QUIC.Certificate = QUICCertificateConfig{KeyFile: "k"}
		}, "quic.certificate.cert_file", "self_signed is false"},
		{"quic key", func(c *Config) {
			c.QUIC.Enabled = true
			c.QUIC.Certificate = QUICCertificateConfig{CertFile: "c"}
		}, "quic.certificate.key_file", "self_signed is false"},

		// http
		{"http address", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.Address = "nope" }, "http.address", "must be host:port"},
		{"http request size", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.MaxRequestSize = 0 }, "http.max_request_size", "between 1 B and 256 MiB"},
		{"http request ceiling", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.MaxRequestSize = 300 * MiB }, "http.max_request_size", "between 1 B and 256 MiB"},
		{"jwt algorithm", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.JWT.Algorithm = "RS256" }, "http.jwt.algorithm", "HS256, HS384 or HS512"},
		{"jwt expiry", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.JWT.AccessTokenExpiry = D(0) }, "http.jwt.access_token_expiry", "greater than zero"},
		{"http tls", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.TLS = HTTPTLSConfig{Enabled: true, CertFile: "c"}
		}, "http.tls.cert_file", "needs both cert_file and key_file"},
		{"cors star", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.CORS.AllowedOrigins = []string{"https://a", "*"} }, "http.cors.allowed_origins", `"*" is only allowed as the first entry`},
		{"cors credentials", func(c *Config) { c.HTTP.Enabled = true; c.HTTP.CORS.AllowCredentials = true }, "http.cors.allow_credentials", "explicit http.cors.allowed_origins"},
		{"trusted issuer fields", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "i", UserID: 2}}
		}, "http.jwt.trusted_issuers[0]", "needs issuer, audience and jwks_url"},
		{"trusted issuer root", func(c *Config) {
			c.HTTP.Enabled = true
			c.HTTP.JWT.TrustedIssuers = []TrustedIssuer{{Issuer: "i", Audience: "a", JWKSURL: "u"}}
		}, "http.jwt.trusted_issuers[0].user_id", "non-root user"},

		// websocket
		{"ws address", func(c *Config) { c.WebSocket.Enabled = true; c.WebSocket.Address = ":x" }, "websocket.address", "port in 0..65535"},
		{"ws tls", func(c *Config) { c.WebSocket.TLS = TLSConfig{Enabled: true} }, "websocket.tls.cert_file", "must be set when websocket.tls.enabled"},
		{"ws zero size", func(c *Config) { c.WebSocket.ReadBufferSize = sz(0) }, "websocket.read_buffer_size", "greater than zero when set"},
		{"ws frame vs message", func(c *Config) { c.WebSocket.MaxMessageSize, c.WebSocket.MaxFrameSize = sz(MiB), sz(2*MiB) }, "websocket.max_frame_size", "must not exceed websocket.max_message_size"},
		{"ws message vs bus", func(c *Config) { c.WebSocket.MaxMessageSize = sz(128 * MiB) }, "websocket.max_message_size", "must not exceed message_bus.max_message_size"},
		{"ws frame vs bus", func(c *Config) { c.WebSocket.MaxFrameSize = sz(128 * MiB) }, "websocket.max_frame_size", "must not exceed message_bus.max_message_size"},
		{"ws write buffer", func(c *Config) { c.WebSocket.MaxWriteBufferSize = sz(64 * KiB) }, "websocket.max_write_buffer_size", "must exceed websocket.write_buffer_size"},

		// telemetry
		{"telemetry transport", func(c *Config) { c.Telemetry.Enabled = true; c.Telemetry.Logs.Transport = "udp" }, "telemetry.logs.transport", `"grpc" or "http"`},
		{"telemetry endpoint", func(c *Config) { c.Telemetry.Enabled = true; c.Telemetry.Traces.Endpoint = "" }, "telemetry.traces.endpoint", "must be set when telemetry.enabled"},
		{"telemetry service", func(c *Config) { c.Telemetry.Enabled = true; c.Telemetry.ServiceName = "" }, "telemetry.service_name", "must be set when telemetry.enabled"},

		// logging
		{"log level", func(c *Config) { c.Logging.Level = "loud" }, "logging.level", "must be a level"},
		{"log directive", func(c *Config) { c.Logging.Level = "server=" }, "logging.level", "must be a level"},
		{"log target", func(c *Config) { c.Logging.Level = "=info" }, "logging.level", "must be a level"},
		{"rotation", func(c *Config) { c.Logging.RotationCheckInterval = D(500 * time.Millisecond) }, "logging.rotation_check_interval", "at least 1 s"},
		{"retention", func(c *Config) { c.Logging.Retention = D(500 * time.Millisecond) }, "logging.retention", "0 (keep forever) or at least 1 s"},
		{"sysinfo", func(c *Config) { c.Logging.SysinfoPrintInterval = D(10 * time.Millisecond) }, "logging.sysinfo_print_interval", "0 (off) or at least 1 s"},

		// encryption, memory pool, tokens, heartbeat, maintenance, groups
		{"encryption key", func(c *Config) { c.Encryption = EncryptionConfig{Enabled: true, Key: "c2hvcnQ="} }, "encryption.key", "base64 of exactly 32 bytes"},
		{"pool size small", func(c *Config) { c.MemoryPool.Size = 256 * MiB }, "memory_pool.size", "at least 512 MiB and a multiple of 4096"},
		{"pool size unaligned", func(c *Config) { c.MemoryPool.Size = GiB + 1 }, "memory_pool.size", "at least 512 MiB and a multiple of 4096"},
		{"pool buckets", func(c *Config) { c.MemoryPool.BucketCapacity = 1000 }, "memory_pool.bucket_capacity", "power of two"},
		{"pool buckets small", func(c *Config) { c.MemoryPool.BucketCapacity = 64 }, "memory_pool.bucket_capacity", "at least 128"},
		{"pat max", func(c *Config) { c.PersonalAccessToken.MaxTokensPerUser = 0 }, "personal_access_token.max_tokens_per_user", "at least 1"},
		{"pat cleaner", func(c *Config) { c.PersonalAccessToken.Cleaner.Interval = D(0) }, "personal_access_token.cleaner.interval", "greater than zero"},
		{"heartbeat", func(c *Config) { c.Heartbeat.Interval = D(0) }, "heartbeat.interval", "greater than zero"},
		{"cleaner", func(c *Config) { c.DataMaintenance.Messages.Interval = D(0) }, "data_maintenance.messages.interval", "greater than zero"},
		{"rebalancing", func(c *Config) { c.ConsumerGroup.RebalancingTimeout = D(0) }, "consumer_group.rebalancing_timeout", "greater than zero"},
		{"group heartbeat", func(c *Config) { c.ConsumerGroup.HeartbeatInterval = D(0) }, "consumer_group.heartbeat_interval", "at least 10 ms"},
		{"group heartbeat tiny", func(c *Config) { c.ConsumerGroup.HeartbeatInterval = D(time.Millisecond) }, "consumer_group.heartbeat_interval", "at least 10 ms"},
		{"session floor", func(c *Config) { c.ConsumerGroup.SessionTimeout = D(14 * time.Second) }, "consumer_group.session_timeout", "at least 3 x consumer_group.heartbeat_interval = 15 s"},
		{"session floor short", func(c *Config) {
			c.ConsumerGroup.HeartbeatInterval = D(200 * time.Millisecond)
			c.ConsumerGroup.SessionTimeout = D(599 * time.Millisecond)
		}, "consumer_group.session_timeout", "at least 3 x consumer_group.heartbeat_interval = 600 ms"},

		// sharding
		{"cpu count", func(c *Config) { c.Sharding.CPUAllocation = shard.CPUAllocation{Kind: shard.AllocCount} }, "sharding.cpu_allocation", "count must be at least 1"},
		{"cpu range", func(c *Config) {
			c.Sharding.CPUAllocation = shard.CPUAllocation{Kind: shard.AllocRange, Start: 3, End: 1}
		}, "sharding.cpu_allocation", "range start must be less than end"},
		{"inbox zero", func(c *Config) { c.Sharding.InboxCapacity = 0 }, "sharding.inbox_capacity", "between 1 and 1048576"},
		{"inbox huge", func(c *Config) { c.Sharding.InboxCapacity = 1<<20 + 1 }, "sharding.inbox_capacity", "between 1 and 1048576"},
		{"reply inbox", func(c *Config) { c.Sharding.ReplyInboxCapacity = 0 }, "sharding.reply_inbox_capacity", "between 1 and 1048576"},
		{"poll completions", func(c *Config) { c.Sharding.PollCompletionCapacity = 0 }, "sharding.poll_completion_capacity", "between 1 and"},
		{"partition io", func(c *Config) { c.Sharding.PartitionIOCapacity = 0 }, "sharding.partition_io_capacity", "between 1 and"},
		{"batch max", func(c *Config) { c.Sharding.BatchMax = 0 }, "sharding.batch_max", "between 1 and 1048576"},
		{"gc percent low", func(c *Config) { c.Runtime.GCPercent = 10 }, "runtime.gc_percent", "-1 (collector off) or 25..100000"},
		{"gc percent off is -1 only", func(c *Config) { c.Runtime.GCPercent = -2 }, "runtime.gc_percent", "-1 (collector off)"},
		{"io bytes", func(c *Config) { c.Sharding.PartitionIOBytesMax = sz(0) }, "sharding.partition_io_bytes_max", "greater than zero when set"},
		{"drain zero", func(c *Config) { c.Sharding.ShutdownDrainTimeout = D(0) }, "sharding.shutdown_drain_timeout", "at most 600 s"},
		{"drain long", func(c *Config) {
			c.Sharding.ShutdownDrainTimeout = D(601 * time.Second)
			c.Sharding.ShutdownJoinTimeout = D(700 * time.Second)
		}, "sharding.shutdown_drain_timeout", "at most 600 s"},
		{"poll zero", func(c *Config) { c.Sharding.ShutdownPollInterval = D(0) }, "sharding.shutdown_poll_interval", "at most 5 s"},
		{"poll long", func(c *Config) { c.Sharding.ShutdownPollInterval = D(6 * time.Second) }, "sharding.shutdown_poll_interval", "at most 5 s"},
		{"poll above drain", func(c *Config) {
			c.Sharding.ShutdownDrainTimeout = D(time.Second)
			c.Sharding.ShutdownPollInterval = D(2 * time.Second)
		}, "sharding.shutdown_poll_interval", "must not exceed sharding.shutdown_drain_timeout"},
		{"join below drain", func(c *Config) { c.Sharding.ShutdownJoinTimeout = D(5 * time.Second) }, "sharding.shutdown_join_timeout", "at least sharding.shutdown_drain_timeout"},
		{"join long", func(c *Config) { c.Sharding.ShutdownJoinTimeout = D(901 * time.Second) }, "sharding.shutdown_join_timeout", "at most 900 s"},
		{"reconcile", func(c *Config) { c.Sharding.ReconcilePeriodicInterval = D(31 * time.Second) }, "sharding.reconcile_periodic_interval", "at most 30 s"},

		// metadata
		{"metadata depth zero", func(c *Config) { c.Metadata.PrepareQueueDepth = 0 }, "metadata.prepare_queue_depth", "between 1 and 127"},
		{"metadata depth 128", func(c *Config) { c.Metadata.PrepareQueueDepth = 128 }, "metadata.prepare_queue_depth", "between 1 and 127"},
		{"journal floor", func(c *Config) { c.Metadata.JournalSlots = 255 }, "metadata.journal_slots", "at least 4 x max(64, metadata.prepare_queue_depth) = 256"},
		{"journal deep floor", func(c *Config) {
			c.Metadata.PrepareQueueDepth = 100
			c.Metadata.JournalSlots = 399
		}, "metadata.journal_slots", "= 400"},
		{"journal ceiling", func(c *Config) { c.Metadata.JournalSlots = 1<<20 + 1 }, "metadata.journal_slots", "at most 1048576"},
		{"clients low", func(c *Config) { c.Metadata.ClientsTableMax = 1 }, "metadata.clients_table_max", "between 2 and 65536"},
		{"clients high", func(c *Config) { c.Metadata.ClientsTableMax = 65537 }, "metadata.clients_table_max", "between 2 and 65536"},
		{"partitions max", func(c *Config) { c.Metadata.PartitionsMax = -1 }, "metadata.partitions_max", "0 (no cap) or positive"},

		// partition
		{"wal small", func(c *Config) { c.Partition.WALBytesMax = 128 * MiB }, "partition.wal_bytes_max", "multiple of 4 KiB between"},
		{"wal large", func(c *Config) { c.Partition.WALBytesMax = 4*GiB + 4*KiB }, "partition.wal_bytes_max", "multiple of 4 KiB between"},
		{"wal unaligned", func(c *Config) { c.Partition.WALBytesMax = 256*MiB + 1 }, "partition.wal_bytes_max", "multiple of 4 KiB between"},
		{"group commit delay", func(c *Config) { c.Partition.WALGroupCommitDelayMicros = 10001 }, "partition.wal_group_commit_delay_micros", "between 0 and 10000"},
		{"partition depth", func(c *Config) { c.Partition.PrepareQueueDepth = 128 }, "partition.prepare_queue_depth", "between 1 and 127"},
		{"dedup", func(c *Config) { c.Partition.DedupClientsMax = 0 }, "partition.dedup_clients_max", "between 1 and 65536"},
		{"offsets", func(c *Config) { c.Partition.ConsumerOffsetsMax = 262145 }, "partition.consumer_offsets_max", "between 1 and 262144"},
		{"lease", func(c *Config) { c.Partition.OffsetReservationLease = 0 }, "partition.offset_reservation_lease", "between 1 and 16777216"},
		{"ring capacity", func(c *Config) { c.Partition.EvictedRingCapacity = 65537 }, "partition.evicted_ring_capacity", "between 1 and 65536"},
		{"ring bytes", func(c *Config) { c.Partition.EvictedRingBytesMax = 257 * MiB }, "partition.evicted_ring_bytes_max", "at most 256 MiB"},
		{"served cache", func(c *Config) { c.Partition.TransferServedCacheBytesMax = 65 * GiB }, "partition.transfer_served_cache_bytes_max", "at most 64 GiB"},
		{"artifact ceiling", func(c *Config) { c.Partition.TransferArtifactBytesMax = 65 * GiB }, "partition.transfer_artifact_bytes_max", "at most 64 GiB"},
		{"artifact floor", func(c *Config) { c.Partition.TransferArtifactBytesMax = GiB }, "partition.transfer_artifact_bytes_max", "at least the largest segment (1 GiB) + message_bus.max_message_size"},
		{"writeback too small", func(c *Config) { c.Partition.SegmentWritebackBytes = 4 * KiB }, "partition.segment_writeback_bytes", "between 64 KiB and 1 GiB"},
		{"writeback too large", func(c *Config) { c.Partition.SegmentWritebackBytes = 2 * GiB }, "partition.segment_writeback_bytes", "between 64 KiB and 1 GiB"},
		{"wal writeback too small", func(c *Config) { c.Partition.WALWritebackBytes = 4 * KiB }, "partition.wal_writeback_bytes", "between 64 KiB and 1 GiB"},
		{"background sync too small", func(c *Config) { c.Partition.BackgroundSyncBytes = 512 * KiB }, "partition.background_sync_bytes", "between 1 MiB and 1 GiB"},
		{"open files negative", func(c *Config) { c.Partition.OpenFilesMax = -1 }, "partition.open_files_max", "0 (what the descriptor limit leaves) or positive"},
		{"segment cache too small", func(c *Config) { c.Partition.SegmentCacheBytes = 4 * KiB }, "partition.segment_cache_bytes", "between 1 MiB and 1 TiB"},
		{"segment cache too large", func(c *Config) { c.Partition.SegmentCacheBytes = 2048 * GiB }, "partition.segment_cache_bytes", "between 1 MiB and 1 TiB"},
		{"background sync too large", func(c *Config) { c.Partition.BackgroundSyncBytes = 2 * GiB }, "partition.background_sync_bytes", "between 1 MiB and 1 GiB"},

		// message bus
		{"bus batch", func(c *Config) { c.MessageBus.MaxBatch = 513 }, "message_bus.max_batch", "between 1 and 512"},
		{"bus size floor", func(c *Config) { c.MessageBus.MaxMessageSize = 100 }, "message_bus.max_message_size", "between 33536 B and 256 MiB"},
		{"bus size below a transfer chunk", func(c *Config) { c.MessageBus.MaxMessageSize = 32 * KiB }, "message_bus.max_message_size", "between 33536 B and 256 MiB"},
		{"bus size ceiling", func(c *Config) { c.MessageBus.MaxMessageSize = 257 * MiB }, "message_bus.max_message_size", "between 33536 B and 256 MiB"},
		{"read buffer", func(c *Config) { c.MessageBus.ReplicaReadBufferSize = KiB }, "message_bus.replica_read_buffer_size", "0 (unbuffered) or between 4 KiB and 16 MiB"},
		{"peer queue", func(c *Config) { c.MessageBus.PeerQueueCapacity = 0 }, "message_bus.peer_queue_capacity", "at least 1"},
		{"client queue", func(c *Config) { c.MessageBus.ClientQueueCapacity = 0 }, "message_bus.client_queue_capacity", "at least 1"},
		{"reconnect", func(c *Config) { c.MessageBus.ReconnectPeriod = D(0) }, "message_bus.reconnect_period", "greater than zero"},
		{"close peer", func(c *Config) { c.MessageBus.ClosePeerTimeout = D(0) }, "message_bus.close_peer_timeout", "greater than zero"},
		{"close grace", func(c *Config) { c.MessageBus.CloseGrace = D(0) }, "message_bus.close_grace", "greater than zero"},
		{"handshake", func(c *Config) { c.MessageBus.HandshakeGrace = D(0) }, "message_bus.handshake_grace", "greater than zero"},
		{"connections", func(c *Config) { v := -1; c.MessageBus.ConnectionsMax = &v }, "message_bus.connections_max", "0 (the descriptor limit minus descriptors_reserved) or positive"},
		{"descriptor reserve", func(c *Config) { c.MessageBus.DescriptorsReserved = 8 }, "message_bus.descriptors_reserved", "between 16 and 1048576"},
		{"unauth per address", func(c *Config) { c.MessageBus.UnauthenticatedPerAddressMax = -1 }, "message_bus.unauthenticated_per_address_max", "0 (no cap) or positive"},
		{"unauth frame", func(c *Config) { c.MessageBus.UnauthenticatedFrameMax = KiB }, "message_bus.unauthenticated_frame_max", "at least 4 KiB"},
		{"unauth bytes", func(c *Config) { c.MessageBus.UnauthenticatedBytesMax = 64 * KiB }, "message_bus.unauthenticated_bytes_max", "at least message_bus.unauthenticated_frame_max + 8 KiB"},
		{"inflight bytes", func(c *Config) { c.MessageBus.InflightBytesMax = 32 * MiB }, "message_bus.inflight_bytes_max", "at least message_bus.max_message_size"},
		{"header timeout", func(c *Config) { c.MessageBus.FrameHeaderTimeout = D(0) }, "message_bus.frame_header_timeout", "greater than zero"},
		{"body timeout", func(c *Config) { c.MessageBus.FrameBodyTimeout = D(0) }, "message_bus.frame_body_timeout", "greater than zero"},
		{"unauth idle", func(c *Config) { c.MessageBus.UnauthenticatedIdleTimeout = D(0) }, "message_bus.unauthenticated_idle_timeout", "greater than zero"},

		// login
		{"verifications", func(c *Config) { c.Login.VerificationsMax = 2000 }, "login.verifications_max", "between 0 and 1024"},
		{"verification queue", func(c *Config) { c.Login.VerificationQueueMax = -1 }, "login.verification_queue_max", "0 (no waiting) or positive"},
		{"verification wait", func(c *Config) { c.Login.VerificationQueueTimeout = D(0) }, "login.verification_queue_timeout", "greater than zero"},
		{"address burst", func(c *Config) { c.Login.Throttle.AddressBurst = 0 }, "login.throttle.address_burst", "at least 1"},
		{"user burst", func(c *Config) { c.Login.Throttle.UserBurst = 0 }, "login.throttle.user_burst", "at least 1"},
		{"address interval", func(c *Config) { c.Login.Throttle.AddressInterval = D(0) }, "login.throttle.address_interval", "greater than zero"},
		{"user interval", func(c *Config) { c.Login.Throttle.UserInterval = D(0) }, "login.throttle.user_interval", "greater than zero"},
		{"throttle delay", func(c *Config) { c.Login.Throttle.DelayMax = D(0) }, "login.throttle.delay_max", "greater than zero"},
		{"throttle entries", func(c *Config) { c.Login.Throttle.EntriesMax = 4 }, "login.throttle.entries_max", "at least 16"},
		{"client events", func(c *Config) { c.Logging.ClientEventsPerSecond = 0 }, "logging.client_events_per_second", "between 1 and 100000"},

		// cluster, checked even when off
		{"repair chunk zero", func(c *Config) { c.Cluster.RepairChunkMax = 0 }, "cluster.repair_chunk_max", "between 1 and 1024"},
		{"repair chunk high", func(c *Config) { c.Cluster.RepairChunkMax = 1025 }, "cluster.repair_chunk_max", "between 1 and 1024"},
		{"repair chunk vs queue", func(c *Config) { c.MessageBus.PeerQueueCapacity = 128 }, "cluster.repair_chunk_max", "less than message_bus.peer_queue_capacity"},
		{"superblock", func(c *Config) { c.Cluster.SuperblockWedgedFatalTimeout = D(10 * time.Second) }, "cluster.superblock_wedged_fatal_timeout", "0 (never exit) or at least 30 s"},

		// cluster, enabled
		{"cluster name", func(c *Config) { clustered(c); c.Cluster.Name = "" }, "cluster.name", "must not be empty"},
		{"heartbeat floor", func(c *Config) {
			clustered(c)
			c.Cluster.HeartbeatTimeout = D(time.Second)
			c.Cluster.CommitBroadcastInterval = D(100 * time.Millisecond)
		}, "cluster.heartbeat_timeout", "at least 2 s"},
		{"heartbeat ratio", func(c *Config) {
			clustered(c)
			c.Cluster.HeartbeatTimeout = D(3 * time.Second)
			c.Cluster.CommitBroadcastInterval = D(time.Second)
		}, "cluster.heartbeat_timeout", "at least 4 x cluster.commit_broadcast_interval"},
		{"commit broadcast", func(c *Config) { clustered(c); c.Cluster.CommitBroadcastInterval = D(0) }, "cluster.commit_broadcast_interval", "greater than zero"},
		{"member eviction zero", func(c *Config) { clustered(c); c.Cluster.MemberEvictionTimeout = D(0) }, "cluster.member_eviction_timeout", "greater than zero"},
		{"member eviction negative", func(c *Config) { clustered(c); c.Cluster.MemberEvictionTimeout = D(-time.Second) }, "cluster.member_eviction_timeout", "greater than zero"},
		{"prepare retransmit", func(c *Config) { clustered(c); c.Cluster.PrepareRetransmitInterval = D(0) }, "cluster.prepare_retransmit_interval", "greater than zero"},
		{"vc retransmit", func(c *Config) { clustered(c); c.Cluster.ViewChangeRetransmitInterval = D(0) }, "cluster.view_change_retransmit_interval", "greater than zero"},
		{"vc status", func(c *Config) { clustered(c); c.Cluster.ViewChangeStatusTimeout = D(0) }, "cluster.view_change_status_timeout", "greater than zero"},
		{"vc ratio", func(c *Config) { clustered(c); c.Cluster.ViewChangeStatusTimeout = D(time.Second) }, "cluster.view_change_status_timeout", "at least 4 x cluster.view_change_retransmit_interval"},
		{"rsv", func(c *Config) { clustered(c); c.Cluster.RequestStartViewRetransmitInterval = D(0) }, "cluster.request_start_view_retransmit_interval", "greater than zero"},
		{"probes zero", func(c *Config) { clustered(c); c.Cluster.ViewProbeAttemptsMax = 0 }, "cluster.view_probe_attempts_max", "between 1 and 100"},
		{"probes high", func(c *Config) { clustered(c); c.Cluster.ViewProbeAttemptsMax = 101 }, "cluster.view_probe_attempts_max", "between 1 and 100"},
		{"repair retry", func(c *Config) { clustered(c); c.Cluster.RepairRetryInterval = D(0) }, "cluster.repair_retry_interval", "greater than zero"},
		{"repair debounce", func(c *Config) { clustered(c); c.Cluster.RepairGapDebounceInterval = D(0) }, "cluster.repair_gap_debounce_interval", "greater than zero"},
		{"auth without secret", func(c *Config) { clustered(c); c.Cluster.Auth.Enabled = true }, "cluster.auth.shared_secret", "must be set when cluster.auth.enabled"},
		{"short secret", func(c *Config) {
			clustered(c)
			c.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: "short"}
		}, "cluster.auth.shared_secret", "at least 32 bytes"},
		{"short previous", func(c *Config) {
			clustered(c)
			c.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: strings.Repeat("a", 32), PreviousSharedSecret: "b"}
		}, "cluster.auth.previous_shared_secret", "at least 32 bytes"},
		{"same previous", func(c *Config) {
			clustered(c)
			c.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: strings.Repeat("a", 32), PreviousSharedSecret: strings.Repeat("a", 32)}
		}, "cluster.auth.previous_shared_secret", "must differ from cluster.auth.shared_secret"},
		{"tls without auth", func(c *Config) { clustered(c); c.Cluster.TLS = ClusterTLSConfig{Enabled: true, SelfSigned: true} }, "cluster.tls.enabled", "requires cluster.auth.enabled"},
		{"tls files", func(c *Config) {
			clustered(c)
			c.Cluster.Auth = ClusterAuthConfig{Enabled: true, SharedSecret: strings.Repeat("a", 32)}
			c.Cluster.TLS = ClusterTLSConfig{Enabled: true, CertFile: "c", KeyFile: "k"}
		}, "cluster.tls.ca_file", "must be set when cluster.tls.enabled and not self_signed"},

		// roster
		{"no nodes", func(c *Config) { clustered(c); c.Cluster.Nodes = nil }, "cluster.nodes", "at least one node"},
		{"too many nodes", func(c *Config) {
			clustered(c)
			c.Cluster.Nodes = nil
			for i := 0; i < 256; i++ {
				c.Cluster.Nodes = append(c.Cluster.Nodes, ClusterNode{Name: fmt.Sprint(i), IP: fmt.Sprintf("10.0.%d.%d", i/200, i%200+1), ReplicaID: i,
					Ports: NodePorts{TCP: Port(8090), TCPReplica: Port(9090)}})
			}
		}, "cluster.nodes", "at most 255 nodes"},
		{"node name", func(c *Config) { clustered(c); n0(c).Name = "" }, "cluster.nodes[0].name", "must not be empty"},
		{"duplicate name", func(c *Config) { clustered(c); n1(c).Name = n0(c).Name }, "cluster.nodes[1].name", "must be unique"},
		{"replica id range", func(c *Config) { clustered(c); n1(c).ReplicaID = 2 }, "cluster.nodes[1].replica_id", "must be in 0..1 (ids run from 0 without gaps)"},
		{"replica id negative", func(c *Config) { clustered(c); n1(c).ReplicaID = -1 }, "cluster.nodes[1].replica_id", "must be in 0..1"},
		{"duplicate replica id", func(c *Config) { clustered(c); n1(c).ReplicaID = 0 }, "cluster.nodes[1].replica_id", "must be unique"},
		{"ip hostname", func(c *Config) { clustered(c); n0(c).IP = "localhost" }, "cluster.nodes[0].ip", "must be a literal IP"},
		{"ip unspecified", func(c *Config) { clustered(c); n0(c).IP = "0.0.0.0" }, "cluster.nodes[0].ip", "must be a reachable address"},
		{"tcp port missing", func(c *Config) { clustered(c); n0(c).Ports.TCP = nil }, "cluster.nodes[0].ports.tcp", "only source of ports"},
		{"replica port missing", func(c *Config) { clustered(c); n1(c).Ports.TCPReplica = nil }, "cluster.nodes[1].ports.tcp_replica", "only source of ports"},
		{"quic port missing", func(c *Config) {
			clustered(c)
			c.QUIC.Enabled = true
			n0(c).Ports.QUIC = nil
		}, "cluster.nodes[0].ports.quic", "only source of ports"},
		{"port zero", func(c *Config) { clustered(c); n0(c).Ports.HTTP = Port(0) }, "cluster.nodes[0].ports.http", "must not be 0"},
		{"gossip port zero", func(c *Config) { clustered(c); n0(c).Ports.Gossip = Port(0) }, "cluster.nodes[0].ports.gossip", "must not be 0"},
		{"gossip default overflows", func(c *Config) { clustered(c); n1(c).Ports.TCPReplica = Port(65000) }, "cluster.nodes[1].ports.gossip", "tcp_replica + 1000 = 66000 exceeds 65535"},
		{"gossip default collides", func(c *Config) { clustered(c); n1(c).Ports.TCP = Port(10090) }, "cluster.nodes[1].ports.tcp", "duplicates 127.0.0.1:10090 already used by cluster.nodes[0].ports.gossip"},
		{"gossip explicit collides", func(c *Config) { clustered(c); n1(c).Ports.Gossip = Port(9090) }, "cluster.nodes[1].ports.gossip", "duplicates 127.0.0.1:9090 already used by cluster.nodes[0].ports.tcp_replica"},
		{"gossip derived collides with explicit", func(c *Config) { clustered(c); n0(c).Ports.Gossip = Port(10091) }, "cluster.nodes[1].ports.gossip", "(default tcp_replica + 1000) duplicates 127.0.0.1:10091"},
		{"duplicate endpoint", func(c *Config) { clustered(c); n1(c).Ports.TCP = Port(9090) }, "cluster.nodes[1].ports.tcp", "duplicates 127.0.0.1:9090"},
		{"duplicate endpoint within node", func(c *Config) { clustered(c); n0(c).Ports.HTTP = Port(8090) }, "cluster.nodes[0].ports.http", "duplicates 127.0.0.1:8090"},
		{"advertised port", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "node.example:8090" }, "cluster.nodes[0].advertised_address", "without a port"},
		{"advertised v6 port", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "[::1]:8090" }, "cluster.nodes[0].advertised_address", "without a port"},
		{"advertised unspecified", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "::" }, "cluster.nodes[0].advertised_address", "an address clients can dial"},
		{"advertised charset", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "bad_host.example" }, "cluster.nodes[0].advertised_address", "letters, digits"},
		{"advertised hyphen", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "-x.example" }, "cluster.nodes[0].advertised_address", "starting or ending with '-'"},
		{"advertised numeric", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "300.1.1.1" }, "cluster.nodes[0].advertised_address", "neither a valid IPv4 address nor a host name"},
		{"advertised empty label", func(c *Config) { clustered(c); n0(c).AdvertisedAddress = "a..b" }, "cluster.nodes[0].advertised_address", "empty or over-long label"},
		{"too many selectors", func(c *Config) {
			clustered(c)
			for i := 0; i < 17; i++ {
				n0(c).AdvertisedAddresses = append(n0(c).AdvertisedAddresses, AdvertiseSelector{fmt.Sprintf("10.%d.0.0/16", i), "10.0.0.1"})
			}
		}, "cluster.nodes[0].advertised_addresses", "at most 16 entries"},
		{"selector cidr", func(c *Config) {
			clustered(c)
			n0(c).AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0", "10.0.0.1"}}
		}, "cluster.nodes[0].advertised_addresses[0].client_cidr", "must be a CIDR"},
		{"selector duplicate", func(c *Config) {
			clustered(c)
			n0(c).AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/16", "10.0.0.1"}, {"10.0.1.0/16", "10.0.0.2"}}
		}, "cluster.nodes[0].advertised_addresses[1].client_cidr", "duplicates advertised_addresses[0]"},
		{"selector mapped duplicate", func(c *Config) {
			clustered(c)
			n0(c).AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/16", "10.0.0.1"}, {"::ffff:10.0.0.0/112", "10.0.0.2"}}
		}, "cluster.nodes[0].advertised_addresses[1].client_cidr", "duplicates advertised_addresses[0]"},
		{"selector address", func(c *Config) {
			clustered(c)
			n0(c).AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/16", "10.0.0.1:80"}}
		}, "cluster.nodes[0].advertised_addresses[0].address", "without a port"},
		{"catch-all conflict", func(c *Config) {
			clustered(c)
			n1(c).IP = "127.0.0.2"
			n1(c).Ports.TCP = Port(8090)
			n0(c).AdvertisedAddress = "gw.example"
			n1(c).AdvertisedAddress = "gw.example"
		}, "cluster.nodes[1].advertised_addresses", "advertises gw.example:8090"},
		{"selector conflict", func(c *Config) {
			clustered(c)
			n1(c).IP = "127.0.0.2"
			n1(c).Ports.TCP = Port(8090)
			n0(c).AdvertisedAddresses = []AdvertiseSelector{{"10.0.0.0/8", "gw.example"}}
			n1(c).AdvertisedAddresses = []AdvertiseSelector{{"10.1.0.0/16", "gw.example"}}
		}, "cluster.nodes[1].advertised_addresses", "the client sets overlap"},
		{"selector vs catch-all conflict", func(c *Config) {
			clustered(c)
			n1(c).IP = "127.0.0.2"
			n1(c).Ports.TCP = Port(8090)
			n0(c).AdvertisedAddress = "gw.example"
			n1(c).AdvertisedAddresses = []AdvertiseSelector{{"192.168.0.0/16", "gw.example"}}
		}, "cluster.nodes[1].advertised_addresses", "the client sets overlap"},

		// node
		{"node advertised port", func(c *Config) { c.Node.AdvertisedAddress = "1.2.3.4:5" }, "node.advertised_address", "without a port"},
		{"node advertised unspecified", func(c *Config) { c.Node.AdvertisedAddress = "0.0.0.0" }, "node.advertised_address", "an address clients can dial"},
		{"wildcard v4", func(c *Config) { c.TCP.Address = "0.0.0.0:8090" }, "node.advertised_address", "must be set when tcp.address binds the wildcard address"},
		{"wildcard v6", func(c *Config) { c.TCP.Address = "[::]:8090" }, "node.advertised_address", "binds the wildcard address"},
		{"wildcard empty host", func(c *Config) { c.TCP.Address = ":8090" }, "node.advertised_address", "binds the wildcard address"},
		{"wildcard quic", func(c *Config) { c.QUIC.Enabled = true; c.QUIC.Address = "0.0.0.0:8080" }, "node.advertised_address", "quic.address binds the wildcard"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		cfg := Default()
		c.mut(cfg)
		err := cfg.Validate()
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: Validate() = %v, want a ValidationError", c.name, err)
			continue
		}
		found := false
		for _, p := range ve.Problems {
			if p.Key == c.key && strings.Contains(p.Rule, c.rule) {
				found = true
			}
		}
		if !found || !strings.Contains(err.Error(), c.key+": ") {
			t.Errorf("%s: want %s: ...%s..., got %v", c.name, c.key, c.rule, err)
		}
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	c := Default()
	c.Metadata.PrepareQueueDepth = 0
	c.Partition.PrepareQueueDepth = 0
	c.Sharding.InboxCapacity = 0
	err := c.Validate()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 3 {
		t.Fatalf("want 3 problems, got %v", err)
	}
	if !strings.Contains(err.Error(), "3 problem(s)") {
		t.Fatalf("summary missing: %v", err)
	}
}

func TestValidLogLevel(t *testing.T) {
	for s, want := range map[string]bool{
		"info": true, "INFO": true, "off": true, "none": true, "warn,replica=debug": true, "a::b=trace": true,
		"": false, "loud": false, "x=": false, "=info": false, "replica": false, "a b=info": false,
	} {
		if ValidLogLevel(s) != want {
			t.Errorf("ValidLogLevel(%q) = %v", s, !want)
		}
	}
}

func TestShardCPUsOnThisMachine(t *testing.T) {
	c := Default()
	cpus, err := c.ShardCPUs()
	if err != nil || len(cpus) != len(shard.AllowedCPUs()) {
		t.Fatalf("all → %v, %v", cpus, err)
	}
	c.Sharding.CPUAllocation, _ = shard.CountAllocation(1 << 15)
	if _, err := c.ShardCPUs(); err == nil || !strings.Contains(err.Error(), "exceeds the") {
		t.Fatalf("oversized count: %v", err)
	}
	rc := c.Sharding.RuntimeConfig(cpus, nil)
	if rc.InboxCapacity != 65536 || rc.TickInterval != ConsensusTick || rc.JoinTimeout != 30*time.Second || len(rc.CPUs) != len(cpus) {
		t.Fatalf("runtime config %+v", rc)
	}
	if _, err := shard.New[int](rc); err != nil {
		t.Fatalf("the mapped runtime config is rejected: %v", err)
	}
}

func TestGossipPort(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports NodePorts
		want  uint16
		ok    bool
	}{
		{"derived", NodePorts{TCPReplica: Port(9090)}, 10090, true},
		{"explicit wins", NodePorts{TCPReplica: Port(9090), Gossip: Port(7946)}, 7946, true},
		{"explicit without replica port", NodePorts{Gossip: Port(7946)}, 7946, true},
		{"derived at the edge", NodePorts{TCPReplica: Port(64535)}, 65535, true},
		{"derived overflow", NodePorts{TCPReplica: Port(64536)}, 0, false},
		{"explicit zero", NodePorts{TCPReplica: Port(9090), Gossip: Port(0)}, 0, false},
		{"nothing", NodePorts{}, 0, false},
	} {
		got, ok := ClusterNode{Ports: tc.ports}.GossipPort()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: GossipPort() = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
