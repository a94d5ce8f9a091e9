package config

import (
	"encoding/base64"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iggo/iggo/shard"
)

// Problem is one broken rule: the key it concerns and what the rule demands.
type Problem struct {
	Key  string
	Rule string
}

func (p Problem) String() string { return p.Key + ": " + p.Rule }

// ValidationError lists every broken rule; the server refuses to boot on it.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config: %d problem(s), refusing to start:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Limits the rules below enforce. They are Iggy 0.9.0's, so a file valid
// for one is valid for the other.
const (
	QueueDepthMax          = 127 // a DoViewChange carries one bit per uncommitted op in 128-bit sets
	JournalSlotsMax        = 1 << 20
	ClientsTableMin        = 2
	ClientsTableMax        = 65536
	InboxCapacityMax       = shard.MaxInboxCapacity
	RosterMax              = 255
	SelectorsPerNodeMax    = 16
	SharedSecretMinBytes   = 32
	RepairChunkMax         = 1024
	ViewProbeAttemptsMax   = 100
	MessageSizeCeiling     = 256 * MiB
	MessageSizeFloor       = 4*256 + 256*127 // vsr's floor: a view-change message naming a full pipeline of prepares (4 headers + 127) fits in one frame; TestFrameFloorIsConsensusFloor in replica keeps it equal
	SegmentSizeMax         = 1 * GiB
	WALBytesMin            = 128*MiB + 8*KiB
	WALBytesMax            = 4 * GiB
	WALGroupCommitDelayMax = 10000
	MessageBusMaxBatch     = 512 // IOV_MAX / 2
	// ReplicaHandshakesMax bounds message_bus.replica_handshakes_max and
	// replica_handshakes_per_address: each waiting connection holds a
	// descriptor.
	ReplicaHandshakesMax     = 4096
	ReplicaReadBufferMin     = 4 * KiB
	ReplicaReadBufferMax     = 16 * MiB
	MemoryPoolMin            = 512 * MiB
	MemoryPoolBucketMin      = 128
	QUICMinMTU               = 1200
	QUICMaxMTU               = 1452 // quic-go's largest packet: a larger initial_mtu would be cut to it unannounced
	HTTPMaxRequestCeiling    = 256 * MiB
	EvictedRingCapacityMax   = 65536
	EvictedRingBytesMax      = 256 * MiB
	TransferBytesMax         = 64 * GiB
	SegmentWritebackMin      = 64 * KiB
	BackgroundSyncMin        = 1 * MiB
	SegmentCacheMin          = 1 * MiB
	SegmentCacheMax          = 1024 * GiB
	SegmentWritebackMax      = 1 * GiB
	DedupClientsMax          = 65536
	ConsumerOffsetsMax       = 262144
	OffsetReservationMax     = 1 << 24
	minHeartbeatTimeout      = 2 * time.Second
	minSuperblockFatal       = 30 * time.Second
	maxDrainTimeout          = 600 * time.Second
	maxPollInterval          = 5 * time.Second
	maxJoinTimeout           = 900 * time.Second
	maxReconcileInterval     = 30 * time.Second
	sessionToHeartbeatRatio  = 3                     // a lost consumer session report never expires a member
	sessionHeartbeatMin      = 10 * time.Millisecond // at most one report per node per consensus tick
	heartbeatToCommitRatio   = 4
	statusToRetransmitRatio  = 4
	journalSlotsPerDepth     = 4
	journalSlotsDepthFloor   = 64
	loggingIntervalMin       = time.Second
	partitionIOCapacityMax   = 65536
	pollCompletionsMax       = 1 << 20
	defaultPartitionIOBudget = 256 * MiB
	// Client intake (iggo keys).
	DescriptorsReservedMin  = 16
	DescriptorsReservedMax  = 1 << 20
	UnauthenticatedFrameMin = 4 * KiB
	// UnauthenticatedConnBytes is what a connection holds before its login:
	// a 4 KiB read buffer and a 4 KiB frame buffer.
	UnauthenticatedConnBytes = 8 * KiB
	LoginVerificationsMax    = 1024
	LoginThrottleEntriesMin  = 16
	ClientEventsPerSecondMax = 100000
)

type checker struct{ problems []Problem }

func (c *checker) fail(key, format string, args ...any) {
	c.problems = append(c.problems, Problem{Key: key, Rule: fmt.Sprintf(format, args...)})
}

func (c *checker) intRange(key string, v, lo, hi int) {
	if v < lo || v > hi {
		c.fail(key, "must be between %d and %d, got %d", lo, hi, v)
	}
}

func (c *checker) positive(key string, d Duration) {
	if d.Duration <= 0 {
		c.fail(key, "must be greater than zero, got %s", d)
	}
}

func (c *checker) address(key, addr string) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		c.fail(key, "must be host:port, got %q", addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		c.fail(key, "must be host:port with a port in 0..65535, got %q", addr)
	}
	if strings.ContainsAny(host, " /") {
		c.fail(key, "must be host:port, got %q", addr)
	}
}

// Validate checks every rule and returns a *ValidationError listing all the
// broken ones, or nil. Rules that depend on the machine (cpu_allocation
// against the allowed CPU set) are checked at boot by ShardCPUs.
func (cfg *Config) Validate() error {
	c := &checker{}
	cfg.validatePaths(c)
	cfg.validateTransports(c)
	cfg.validateLogging(c)
	cfg.validateMisc(c)
	cfg.validateSharding(c)
	cfg.validateMetadataPartition(c)
	cfg.validateMessageBus(c)
	cfg.validateLogin(c)
	cfg.validateLongPoll(c)
	cfg.validateCluster(c)
	cfg.validateNode(c)
	cfg.validateRefused(c)
	if len(c.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: c.problems}
}

func (cfg *Config) validatePaths(c *checker) {
	if strings.TrimSpace(cfg.Path) == "" {
		c.fail("path", "must name the data directory")
	}
	rp := cfg.Runtime.Path
	switch clean := filepath.Clean(rp); {
	case strings.TrimSpace(rp) == "":
		c.fail("runtime.path", "must name a subdirectory of path")
	case filepath.IsAbs(rp) || clean == "." || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)):
		// The runtime directory is deleted at every boot; it must never
		// resolve to the data directory or outside it.
		c.fail("runtime.path", "must be a relative subdirectory of path (it is deleted and recreated at every start), got %q", rp)
	}
	if g := cfg.Runtime.GCPercent; g != -1 && (g < 25 || g > 100000) {
		c.fail("runtime.gc_percent", "must be -1 (collector off) or 25..100000, got %d", g)
	}
	if cfg.Logging.FileEnabled && strings.TrimSpace(cfg.Logging.Path) == "" {
		c.fail("logging.path", "must name a directory when logging.file_enabled is true")
	}
}

func (cfg *Config) validateTransports(c *checker) {
	if cfg.TCP.Enabled {
		c.address("tcp.address", cfg.TCP.Address)
	}
	tlsFiles := func(key string, t TLSConfig) {
		if t.Enabled && !t.SelfSigned {
			if t.CertFile == "" {
				c.fail(key+".cert_file", "must be set when %s.enabled and not self_signed", key)
			}
			if t.KeyFile == "" {
				c.fail(key+".key_file", "must be set when %s.enabled and not self_signed", key)
			}
		}
	}
	tlsFiles("tcp.tls", cfg.TCP.TLS)

	if q := cfg.QUIC; q.Enabled {
		c.address("quic.address", q.Address)
		if q.MaxConcurrentBidiStreams < 1 {
			c.fail("quic.max_concurrent_bidi_streams", "must be at least 1, got %d", q.MaxConcurrentBidiStreams)
		}
		if q.InitialMTU < QUICMinMTU {
			c.fail("quic.initial_mtu", "must be at least %d B (the QUIC minimum), got %s", QUICMinMTU, q.InitialMTU)
		}
		if q.InitialMTU > QUICMaxMTU {
			c.fail("quic.initial_mtu", "must be at most %d B (the largest packet quic-go, which serves QUIC in this build, sends), got %s", QUICMaxMTU, q.InitialMTU)
		}
		for key, v := range map[string]ByteSize{"quic.send_window": q.SendWindow, "quic.receive_window": q.ReceiveWindow, "quic.stream_receive_window": q.StreamReceiveWindow} {
			if v == 0 {
				c.fail(key, "must be greater than zero")
			}
		}
		if q.StreamReceiveWindow > q.ReceiveWindow {
			c.fail("quic.stream_receive_window", "must not exceed quic.receive_window (%s), got %s", q.ReceiveWindow, q.StreamReceiveWindow)
		}
		if q.KeepAliveInterval.Duration < 0 || q.MaxIdleTimeout.Duration < 0 {
			c.fail("quic.keep_alive_interval", "timers must not be negative")
		}
		if q.KeepAliveInterval.Duration > 0 && q.MaxIdleTimeout.Duration > 0 && q.KeepAliveInterval.Duration >= q.MaxIdleTimeout.Duration {
			c.fail("quic.keep_alive_interval", "must be shorter than quic.max_idle_timeout (%s), got %s", q.MaxIdleTimeout, q.KeepAliveInterval)
		}
		if !q.Certificate.SelfSigned {
			if q.Certificate.CertFile == "" {
				c.fail("quic.certificate.cert_file", "must be set when quic.certificate.self_signed is false")
			}
			if q.Certificate.KeyFile == "" {
				c.fail("quic.certificate.key_file", "must be set when quic.certificate.self_signed is false")
			}
		}
	}

	if h := cfg.HTTP; h.Enabled {
		c.address("http.address", h.Address)
		if h.MaxRequestSize == 0 || h.MaxRequestSize > HTTPMaxRequestCeiling {
			c.fail("http.max_request_size", "must be between 1 B and %s, got %s", ByteSize(HTTPMaxRequestCeiling), h.MaxRequestSize)
		}
		switch h.JWT.Algorithm {
		case "HS256", "HS384", "HS512":
		default:
			c.fail("http.jwt.algorithm", "must be HS256, HS384 or HS512 (tokens are signed with a shared secret), got %q", h.JWT.Algorithm)
		}
		c.positive("http.jwt.access_token_expiry", h.JWT.AccessTokenExpiry)
		if cfg.Cluster.Enabled && len(cfg.Cluster.Nodes) > 1 && h.MaxRequestSize > cfg.MessageBus.MaxMessageSize {
			c.fail("http.max_request_size", "must not exceed message_bus.max_message_size (%s) in a cluster, got %s", cfg.MessageBus.MaxMessageSize, h.MaxRequestSize)
		}
		if h.Metrics.Enabled && !strings.HasPrefix(h.Metrics.Endpoint, "/") {
			c.fail("http.metrics.endpoint", "must start with '/', got %q", h.Metrics.Endpoint)
		}
		if h.Metrics.OpenAddress != "" {
			c.address("http.metrics.open_address", h.Metrics.OpenAddress)
		}
		if h.TLS.Enabled && (h.TLS.CertFile == "" || h.TLS.KeyFile == "") {
			c.fail("http.tls.cert_file", "http.tls.enabled needs both cert_file and key_file")
		}
		for i, o := range h.CORS.AllowedOrigins {
			if o == "*" && i > 0 {
				c.fail("http.cors.allowed_origins", `"*" is only allowed as the first entry`)
			}
		}
		if h.CORS.AllowCredentials && slices.Contains(h.CORS.AllowedOrigins, "*") {
			c.fail("http.cors.allow_credentials", `needs explicit http.cors.allowed_origins, not "*"`)
		}
		for i, ti := range h.JWT.TrustedIssuers {
			key := fmt.Sprintf("http.jwt.trusted_issuers[%d]", i)
			if ti.Issuer == "" || ti.Audience == "" || ti.JWKSURL == "" {
				c.fail(key, "needs issuer, audience and jwks_url")
			}
			if ti.UserID <= 0 {
				c.fail(key+".user_id", "must name a non-root user (> 0), got %d", ti.UserID)
			}
		}
	}

	ws := cfg.WebSocket
	if ws.Enabled {
		c.address("websocket.address", ws.Address)
	}
	tlsFiles("websocket.tls", ws.TLS)
	for key, v := range map[string]*ByteSize{
		"websocket.read_buffer_size": ws.ReadBufferSize, "websocket.write_buffer_size": ws.WriteBufferSize,
		"websocket.max_write_buffer_size": ws.MaxWriteBufferSize, "websocket.max_message_size": ws.MaxMessageSize,
		"websocket.max_frame_size": ws.MaxFrameSize,
	} {
		if v != nil && *v == 0 {
			c.fail(key, "must be greater than zero when set (0, unlimited and none all mean zero); leave it unset for the default")
		}
	}
	if ws.MaxFrameSize != nil && ws.MaxMessageSize != nil && *ws.MaxFrameSize > *ws.MaxMessageSize {
		c.fail("websocket.max_frame_size", "must not exceed websocket.max_message_size (%s), got %s", *ws.MaxMessageSize, *ws.MaxFrameSize)
	}
	if ws.MaxMessageSize != nil && *ws.MaxMessageSize > cfg.MessageBus.MaxMessageSize {
		c.fail("websocket.max_message_size", "must not exceed message_bus.max_message_size (%s), got %s", cfg.MessageBus.MaxMessageSize, *ws.MaxMessageSize)
	}
	if ws.MaxFrameSize != nil && *ws.MaxFrameSize > cfg.MessageBus.MaxMessageSize {
		c.fail("websocket.max_frame_size", "must not exceed message_bus.max_message_size (%s), got %s", cfg.MessageBus.MaxMessageSize, *ws.MaxFrameSize)
	}
	if ws.MaxWriteBufferSize != nil {
		wb := 128 * KiB
		if ws.WriteBufferSize != nil {
			wb = *ws.WriteBufferSize
		}
		if *ws.MaxWriteBufferSize <= wb {
			c.fail("websocket.max_write_buffer_size", "must exceed websocket.write_buffer_size (%s), got %s", wb, *ws.MaxWriteBufferSize)
		}
	}

	if t := cfg.Telemetry; t.Enabled {
		for key, e := range map[string]TelemetryEndpointConfig{"telemetry.logs": t.Logs, "telemetry.traces": t.Traces} {
			if e.Transport != "grpc" && e.Transport != "http" {
				c.fail(key+".transport", `must be "grpc" or "http", got %q`, e.Transport)
			}
			if e.Endpoint == "" {
				c.fail(key+".endpoint", "must be set when telemetry.enabled")
			}
		}
		if t.ServiceName == "" {
			c.fail("telemetry.service_name", "must be set when telemetry.enabled")
		}
	}
}

var logLevels = map[string]bool{"trace": true, "debug": true, "info": true, "warn": true, "error": true, "off": true, "none": true}

// ValidLogLevel reports whether s is a level or a comma-separated list of
// level and target=level directives.
func ValidLogLevel(s string) bool {
	if strings.TrimSpace(s) == "" {
		return false
	}
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(d)
		target, level, hasTarget := strings.Cut(d, "=")
		if !hasTarget {
			level, target = d, ""
		}
		if !logLevels[strings.ToLower(level)] {
			return false
		}
		if hasTarget {
			if target == "" {
				return false
			}
			for _, r := range target {
				if !(r == '_' || r == ':' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
					return false
				}
			}
		}
	}
	return true
}

func (cfg *Config) validateLogging(c *checker) {
	l := cfg.Logging
	if !ValidLogLevel(l.Level) {
		c.fail("logging.level", "must be a level (trace, debug, info, warn, error, off, none) or target=level directives, got %q", l.Level)
	}
	if l.RotationCheckInterval.Duration < loggingIntervalMin {
		c.fail("logging.rotation_check_interval", "must be at least 1 s, got %s", l.RotationCheckInterval)
	}
	if d := l.Retention.Duration; d != 0 && d < loggingIntervalMin {
		c.fail("logging.retention", "must be 0 (keep forever) or at least 1 s, got %s", l.Retention)
	}
	if d := l.SysinfoPrintInterval.Duration; d != 0 && d < loggingIntervalMin {
		c.fail("logging.sysinfo_print_interval", "must be 0 (off) or at least 1 s, got %s", l.SysinfoPrintInterval)
	}
	c.intRange("logging.client_events_per_second", l.ClientEventsPerSecond, 1, ClientEventsPerSecondMax)
	if n := l.AuditLinesPerSecond; n < 1 || n > auditLinesMax {
		c.fail("logging.audit_lines_per_second", "must be 1..%d, got %d", auditLinesMax, n)
	}
	if n := l.AuditClientLinesPerSecond; n < 1 || n > l.AuditLinesPerSecond {
		c.fail("logging.audit_client_lines_per_second", "must be 1..logging.audit_lines_per_second (%d), got %d", l.AuditLinesPerSecond, n)
	}
}

// auditLinesMax bounds logging.audit_lines_per_second.
const auditLinesMax = 100000

func (cfg *Config) validateMisc(c *checker) {
	if e := cfg.Encryption; e.Enabled {
		if key, err := base64.StdEncoding.DecodeString(e.Key); err != nil || len(key) != 32 {
			c.fail("encryption.key", "must be base64 of exactly 32 bytes when encryption.enabled")
		}
	}
	if m := cfg.MemoryPool; m.Enabled {
		if m.Size < MemoryPoolMin || m.Size%4096 != 0 {
			c.fail("memory_pool.size", "must be at least 512 MiB and a multiple of 4096, got %s", m.Size)
		}
		if m.BucketCapacity < MemoryPoolBucketMin || bits.OnesCount(uint(m.BucketCapacity)) != 1 {
			c.fail("memory_pool.bucket_capacity", "must be a power of two, at least %d, got %d", MemoryPoolBucketMin, m.BucketCapacity)
		}
	}
	if p := cfg.PersonalAccessToken; true {
		if p.MaxTokensPerUser < 1 {
			c.fail("personal_access_token.max_tokens_per_user", "must be at least 1, got %d", p.MaxTokensPerUser)
		}
		if p.Cleaner.Enabled {
			c.positive("personal_access_token.cleaner.interval", p.Cleaner.Interval)
		}
	}
	if cfg.Heartbeat.Enabled {
		c.positive("heartbeat.interval", cfg.Heartbeat.Interval)
	}
	if m := cfg.DataMaintenance.Messages; m.CleanerEnabled {
		c.positive("data_maintenance.messages.interval", m.Interval)
	}
	g := cfg.ConsumerGroup
	c.positive("consumer_group.rebalancing_timeout", g.RebalancingTimeout)
	if g.HeartbeatInterval.Duration < sessionHeartbeatMin {
		c.fail("consumer_group.heartbeat_interval", "must be at least %s (one consumer session report per node per interval), got %s", D(sessionHeartbeatMin), g.HeartbeatInterval)
	} else if floor := sessionToHeartbeatRatio * g.HeartbeatInterval.Duration; g.SessionTimeout.Duration < floor {
		c.fail("consumer_group.session_timeout", "must be at least %d x consumer_group.heartbeat_interval = %s (a lost session report must not expire a member), got %s",
			sessionToHeartbeatRatio, D(floor), g.SessionTimeout)
	}
}

func (cfg *Config) validateSharding(c *checker) {
	s := cfg.Sharding
	if s.CPUAllocation.Kind == shard.AllocCount && s.CPUAllocation.Count < 1 {
		c.fail("sharding.cpu_allocation", "count must be at least 1, got %d", s.CPUAllocation.Count)
	}
	if s.CPUAllocation.Kind == shard.AllocRange && s.CPUAllocation.Start >= s.CPUAllocation.End {
		c.fail("sharding.cpu_allocation", "range start must be less than end, got %s", s.CPUAllocation)
	}
	c.intRange("sharding.inbox_capacity", s.InboxCapacity, 1, InboxCapacityMax)
	c.intRange("sharding.reply_inbox_capacity", s.ReplyInboxCapacity, 1, InboxCapacityMax)
	c.intRange("sharding.poll_completion_capacity", s.PollCompletionCapacity, 1, pollCompletionsMax)
	c.intRange("sharding.partition_io_capacity", s.PartitionIOCapacity, 1, partitionIOCapacityMax)
	c.intRange("sharding.batch_max", s.BatchMax, 1, InboxCapacityMax)
	if s.PartitionIOBytesMax != nil && *s.PartitionIOBytesMax == 0 {
		c.fail("sharding.partition_io_bytes_max", "must be greater than zero when set; leave it unset for the automatic budget")
	}
	drain, poll, join := s.ShutdownDrainTimeout.Duration, s.ShutdownPollInterval.Duration, s.ShutdownJoinTimeout.Duration
	if drain <= 0 || drain > maxDrainTimeout {
		c.fail("sharding.shutdown_drain_timeout", "must be greater than zero and at most 600 s, got %s", s.ShutdownDrainTimeout)
	}
	if poll <= 0 || poll > maxPollInterval {
		c.fail("sharding.shutdown_poll_interval", "must be greater than zero and at most 5 s, got %s", s.ShutdownPollInterval)
	}
	if poll > drain {
		c.fail("sharding.shutdown_poll_interval", "must not exceed sharding.shutdown_drain_timeout (%s), got %s", s.ShutdownDrainTimeout, s.ShutdownPollInterval)
	}
	if join < drain {
		c.fail("sharding.shutdown_join_timeout", "must be at least sharding.shutdown_drain_timeout (%s), got %s", s.ShutdownDrainTimeout, s.ShutdownJoinTimeout)
	}
	if join > maxJoinTimeout {
		c.fail("sharding.shutdown_join_timeout", "must be at most 900 s, got %s", s.ShutdownJoinTimeout)
	}
	if r := s.ReconcilePeriodicInterval.Duration; r <= 0 || r > maxReconcileInterval {
		c.fail("sharding.reconcile_periodic_interval", "must be greater than zero and at most 30 s, got %s", s.ReconcilePeriodicInterval)
	}
}

func (cfg *Config) validateMetadataPartition(c *checker) {
	m := cfg.Metadata
	c.intRange("metadata.prepare_queue_depth", m.PrepareQueueDepth, 1, QueueDepthMax)
	minSlots := journalSlotsPerDepth * max(journalSlotsDepthFloor, m.PrepareQueueDepth)
	if m.JournalSlots < minSlots {
		c.fail("metadata.journal_slots", "must be at least 4 x max(64, metadata.prepare_queue_depth) = %d, got %d", minSlots, m.JournalSlots)
	}
	if m.JournalSlots > JournalSlotsMax {
		c.fail("metadata.journal_slots", "must be at most %d, got %d", JournalSlotsMax, m.JournalSlots)
	}
	c.intRange("metadata.clients_table_max", m.ClientsTableMax, ClientsTableMin, ClientsTableMax)
	if m.PartitionsMax < 0 {
		c.fail("metadata.partitions_max", "must be 0 (no cap) or positive, got %d", m.PartitionsMax)
	}

	p := cfg.Partition
	if p.WALBytesMax < WALBytesMin || p.WALBytesMax > WALBytesMax || p.WALBytesMax%(4*KiB) != 0 {
		c.fail("partition.wal_bytes_max", "must be a multiple of 4 KiB between %s and %s, got %s", ByteSize(WALBytesMin), ByteSize(WALBytesMax), p.WALBytesMax)
	}
	c.intRange("partition.wal_group_commit_delay_micros", p.WALGroupCommitDelayMicros, 0, WALGroupCommitDelayMax)
	c.intRange("partition.prepare_queue_depth", p.PrepareQueueDepth, 1, QueueDepthMax)
	c.intRange("partition.dedup_clients_max", p.DedupClientsMax, 1, DedupClientsMax)
	c.intRange("partition.consumer_offsets_max", p.ConsumerOffsetsMax, 1, ConsumerOffsetsMax)
	c.intRange("partition.offset_reservation_lease", p.OffsetReservationLease, 1, OffsetReservationMax)
	c.intRange("partition.evicted_ring_capacity", p.EvictedRingCapacity, 1, EvictedRingCapacityMax)
	if p.EvictedRingBytesMax == 0 || p.EvictedRingBytesMax > EvictedRingBytesMax {
		c.fail("partition.evicted_ring_bytes_max", "must be greater than zero and at most 256 MiB, got %s", p.EvictedRingBytesMax)
	}
	if p.TransferServedCacheBytesMax == 0 || p.TransferServedCacheBytesMax > TransferBytesMax {
		c.fail("partition.transfer_served_cache_bytes_max", "must be greater than zero and at most 64 GiB, got %s", p.TransferServedCacheBytesMax)
	}
	if p.TransferArtifactBytesMax == 0 || p.TransferArtifactBytesMax > TransferBytesMax {
		c.fail("partition.transfer_artifact_bytes_max", "must be greater than zero and at most 64 GiB, got %s", p.TransferArtifactBytesMax)
	}
	if w := p.WALWritebackBytes; w != 0 && (w < SegmentWritebackMin || w > SegmentWritebackMax) {
		c.fail("partition.wal_writeback_bytes", "must be 0 (no writeback hints) or between 64 KiB and 1 GiB, got %s", w)
	}
	if w := p.BackgroundSyncBytes; w != 0 && (w < BackgroundSyncMin || w > SegmentWritebackMax) {
		c.fail("partition.background_sync_bytes", "must be 0 (no background syncs) or between 1 MiB and 1 GiB, got %s", w)
	}
	if p.OpenFilesMax < 0 {
		c.fail("partition.open_files_max", "must be 0 (what the descriptor limit leaves) or positive, got %d", p.OpenFilesMax)
	}
	if w := p.SegmentCacheBytes; w != 0 && (w < SegmentCacheMin || w > SegmentCacheMax) {
		c.fail("partition.segment_cache_bytes", "must be 0 (never release cached segment pages) or between 1 MiB and 1 TiB, got %s", w)
	}
	if w := p.SegmentWritebackBytes; w != 0 && (w < SegmentWritebackMin || w > SegmentWritebackMax) {
		c.fail("partition.segment_writeback_bytes", "must be 0 (no writeback hints) or between 64 KiB and 1 GiB, got %s", w)
	}
	if floor := SegmentSizeMax + cfg.MessageBus.MaxMessageSize; p.TransferArtifactBytesMax < floor {
		c.fail("partition.transfer_artifact_bytes_max", "must be at least the largest segment (1 GiB) + message_bus.max_message_size = %s, got %s (a segment may close one batch past its size)", floor, p.TransferArtifactBytesMax)
	}
}

// Long polling bounds.
const (
	LongPollMaxWaitCeiling = 10 * time.Minute
	LongPollWaitersCeiling = 1 << 20
	LongPollPerConnCeiling = 1024
)

func (cfg *Config) validateLongPoll(c *checker) {
	l := cfg.LongPoll
	if l.MaxWait.Duration < time.Millisecond || l.MaxWait.Duration > LongPollMaxWaitCeiling {
		c.fail("long_poll.max_wait", "must be between 1 ms and 10 m, got %s", l.MaxWait)
	}
	c.intRange("long_poll.waiters_max", l.WaitersMax, 0, LongPollWaitersCeiling)
	c.intRange("long_poll.waiters_per_connection", l.WaitersPerConnection, 1, LongPollPerConnCeiling)
}

func (cfg *Config) validateMessageBus(c *checker) {
	b := cfg.MessageBus
	c.intRange("message_bus.max_batch", b.MaxBatch, 1, MessageBusMaxBatch)
	if b.MaxMessageSize < MessageSizeFloor || b.MaxMessageSize > MessageSizeCeiling {
		c.fail("message_bus.max_message_size", "must be between %d B and 256 MiB, got %s", MessageSizeFloor, b.MaxMessageSize)
	}
	if r := b.ReplicaReadBufferSize; r != 0 && (r < ReplicaReadBufferMin || r > ReplicaReadBufferMax) {
		c.fail("message_bus.replica_read_buffer_size", "must be 0 (unbuffered) or between 4 KiB and 16 MiB, got %s", r)
	}
	if b.PeerQueueCapacity < 1 {
		c.fail("message_bus.peer_queue_capacity", "must be at least 1, got %d", b.PeerQueueCapacity)
	}
	if b.ClientQueueCapacity < 1 {
		c.fail("message_bus.client_queue_capacity", "must be at least 1, got %d", b.ClientQueueCapacity)
	}
	c.positive("message_bus.reconnect_period", b.ReconnectPeriod)
	c.positive("message_bus.close_peer_timeout", b.ClosePeerTimeout)
	c.positive("message_bus.close_grace", b.CloseGrace)
	c.positive("message_bus.handshake_grace", b.HandshakeGrace)
	c.positive("message_bus.replica_hello_grace", b.ReplicaHelloGrace)
	if b.ReplicaHelloGrace.Duration > b.HandshakeGrace.Duration {
		c.fail("message_bus.replica_hello_grace", "must not exceed message_bus.handshake_grace (%s), got %s", b.HandshakeGrace, b.ReplicaHelloGrace)
	}
	c.intRange("message_bus.replica_handshakes_per_address", b.ReplicaHandshakesPerAddress, 1, ReplicaHandshakesMax)
	c.intRange("message_bus.replica_handshakes_max", b.ReplicaHandshakesMax, 1, ReplicaHandshakesMax)
	if b.ConnectionsMax != nil && *b.ConnectionsMax < 0 {
		c.fail("message_bus.connections_max", "must be 0 (the descriptor limit minus descriptors_reserved) or positive, got %d", *b.ConnectionsMax)
	}
	c.intRange("message_bus.descriptors_reserved", b.DescriptorsReserved, DescriptorsReservedMin, DescriptorsReservedMax)
	if b.UnauthenticatedPerAddressMax < 0 {
		c.fail("message_bus.unauthenticated_per_address_max", "must be 0 (no cap) or positive, got %d", b.UnauthenticatedPerAddressMax)
	}
	if f := b.UnauthenticatedFrameMax; f < UnauthenticatedFrameMin {
		c.fail("message_bus.unauthenticated_frame_max", "must be at least 4 KiB, got %s", f)
	}
	if floor := b.UnauthenticatedFrameMax + UnauthenticatedConnBytes; b.UnauthenticatedBytesMax < floor {
		c.fail("message_bus.unauthenticated_bytes_max", "must be at least message_bus.unauthenticated_frame_max + 8 KiB = %s (one connection and its login), got %s", floor, b.UnauthenticatedBytesMax)
	}
	if b.InflightBytesMax < b.MaxMessageSize {
		c.fail("message_bus.inflight_bytes_max", "must be at least message_bus.max_message_size (%s): the largest frame must fit, got %s", b.MaxMessageSize, b.InflightBytesMax)
	}
	c.positive("message_bus.frame_header_timeout", b.FrameHeaderTimeout)
	c.positive("message_bus.frame_body_timeout", b.FrameBodyTimeout)
	c.positive("message_bus.unauthenticated_idle_timeout", b.UnauthenticatedIdleTimeout)
}

func (cfg *Config) validateLogin(c *checker) {
	l := cfg.Login
	c.intRange("login.verifications_max", l.VerificationsMax, 0, LoginVerificationsMax)
	if l.VerificationQueueMax < 0 {
		c.fail("login.verification_queue_max", "must be 0 (no waiting) or positive, got %d", l.VerificationQueueMax)
	}
	c.positive("login.verification_queue_timeout", l.VerificationQueueTimeout)
	t := l.Throttle
	if t.AddressBurst < 1 {
		c.fail("login.throttle.address_burst", "must be at least 1, got %d", t.AddressBurst)
	}
	if t.UserBurst < 1 {
		c.fail("login.throttle.user_burst", "must be at least 1, got %d", t.UserBurst)
	}
	c.positive("login.throttle.address_interval", t.AddressInterval)
	c.positive("login.throttle.user_interval", t.UserInterval)
	c.positive("login.throttle.delay_max", t.DelayMax)
	if t.EntriesMax < LoginThrottleEntriesMin {
		c.fail("login.throttle.entries_max", "must be at least %d, got %d", LoginThrottleEntriesMin, t.EntriesMax)
	}
}

func (cfg *Config) validateCluster(c *checker) {
	cl := cfg.Cluster
	// Checked even when clustering is off: both shape the single-node path
	// too (repair reuses the bus; the superblock watchdog always runs).
	c.intRange("cluster.repair_chunk_max", cl.RepairChunkMax, 1, RepairChunkMax)
	if cl.RepairChunkMax >= cfg.MessageBus.PeerQueueCapacity {
		c.fail("cluster.repair_chunk_max", "must be less than message_bus.peer_queue_capacity (%d), got %d: a repair round rides one peer queue", cfg.MessageBus.PeerQueueCapacity, cl.RepairChunkMax)
	}
	if d := cl.SuperblockWedgedFatalTimeout.Duration; d != 0 && d < minSuperblockFatal {
		c.fail("cluster.superblock_wedged_fatal_timeout", "must be 0 (never exit) or at least 30 s, got %s", cl.SuperblockWedgedFatalTimeout)
	}
	if d := cl.SuperblockWedgedFatalTimeout.Duration; d < 0 {
		c.fail("cluster.superblock_wedged_fatal_timeout", "must not be negative")
	}
	if !cl.Enabled {
		return
	}
	if strings.TrimSpace(cl.Name) == "" {
		c.fail("cluster.name", "must not be empty")
	}
	if cl.HeartbeatTimeout.Duration < minHeartbeatTimeout {
		c.fail("cluster.heartbeat_timeout", "must be at least 2 s, got %s", cl.HeartbeatTimeout)
	}
	c.positive("cluster.commit_broadcast_interval", cl.CommitBroadcastInterval)
	if cl.CommitBroadcastInterval.Duration > 0 && cl.HeartbeatTimeout.Duration < heartbeatToCommitRatio*cl.CommitBroadcastInterval.Duration {
		c.fail("cluster.heartbeat_timeout", "must be at least 4 x cluster.commit_broadcast_interval (%s), got %s", cl.CommitBroadcastInterval, cl.HeartbeatTimeout)
	}
	c.positive("cluster.prepare_retransmit_interval", cl.PrepareRetransmitInterval)
	c.positive("cluster.view_change_retransmit_interval", cl.ViewChangeRetransmitInterval)
	c.positive("cluster.view_change_status_timeout", cl.ViewChangeStatusTimeout)
	if cl.ViewChangeRetransmitInterval.Duration > 0 && cl.ViewChangeStatusTimeout.Duration > 0 &&
		cl.ViewChangeStatusTimeout.Duration < statusToRetransmitRatio*cl.ViewChangeRetransmitInterval.Duration {
		c.fail("cluster.view_change_status_timeout", "must be at least 4 x cluster.view_change_retransmit_interval (%s), got %s", cl.ViewChangeRetransmitInterval, cl.ViewChangeStatusTimeout)
	}
	c.positive("cluster.request_start_view_retransmit_interval", cl.RequestStartViewRetransmitInterval)
	c.intRange("cluster.view_probe_attempts_max", cl.ViewProbeAttemptsMax, 1, ViewProbeAttemptsMax)
	c.positive("cluster.repair_retry_interval", cl.RepairRetryInterval)
	c.positive("cluster.repair_gap_debounce_interval", cl.RepairGapDebounceInterval)
	c.positive("cluster.member_eviction_timeout", cl.MemberEvictionTimeout)

	a := cl.Auth
	if a.Enabled && a.SharedSecret == "" {
		c.fail("cluster.auth.shared_secret", "must be set when cluster.auth.enabled (prefer IGGY_CLUSTER_AUTH_SHARED_SECRET)")
	}
	if a.SharedSecret != "" && len(a.SharedSecret) < SharedSecretMinBytes {
		c.fail("cluster.auth.shared_secret", "must be at least %d bytes, got %d", SharedSecretMinBytes, len(a.SharedSecret))
	}
	if a.PreviousSharedSecret != "" {
		if len(a.PreviousSharedSecret) < SharedSecretMinBytes {
			c.fail("cluster.auth.previous_shared_secret", "must be at least %d bytes, got %d", SharedSecretMinBytes, len(a.PreviousSharedSecret))
		}
		if a.PreviousSharedSecret == a.SharedSecret {
			c.fail("cluster.auth.previous_shared_secret", "must differ from cluster.auth.shared_secret (an identical key rotates nothing)")
		}
	}
	if t := cl.TLS; t.Enabled {
		if !a.Enabled {
			c.fail("cluster.tls.enabled", "requires cluster.auth.enabled: TLS authenticates only the accepting side, the key handshake authenticates the peer")
		}
		if !t.SelfSigned {
			for key, v := range map[string]string{"cert_file": t.CertFile, "key_file": t.KeyFile, "ca_file": t.CAFile} {
				if strings.TrimSpace(v) == "" {
					c.fail("cluster.tls."+key, "must be set when cluster.tls.enabled and not self_signed")
				}
			}
		}
	}
	cfg.validateRoster(c)
}

func (cfg *Config) validateRoster(c *checker) {
	nodes := cfg.Cluster.Nodes
	if len(nodes) == 0 {
		c.fail("cluster.nodes", "must list at least one node when cluster.enabled")
		return
	}
	if len(nodes) > RosterMax {
		c.fail("cluster.nodes", "must list at most %d nodes, got %d", RosterMax, len(nodes))
	}
	names := map[string]int{}
	ids := map[int]int{}
	endpoints := map[string]string{}
	var advertised []advertisedEndpoint
	for i, n := range nodes {
		key := fmt.Sprintf("cluster.nodes[%d]", i)
		if strings.TrimSpace(n.Name) == "" {
			c.fail(key+".name", "must not be empty")
		} else if j, dup := names[n.Name]; dup {
			c.fail(key+".name", "must be unique; %q is also cluster.nodes[%d]", n.Name, j)
		} else {
			names[n.Name] = i
		}
		if n.ReplicaID < 0 || n.ReplicaID >= len(nodes) {
			c.fail(key+".replica_id", "must be in 0..%d (ids run from 0 without gaps), got %d", len(nodes)-1, n.ReplicaID)
		} else if j, dup := ids[n.ReplicaID]; dup {
			c.fail(key+".replica_id", "must be unique; %d is also cluster.nodes[%d]", n.ReplicaID, j)
		} else {
			ids[n.ReplicaID] = i
		}
		ip, err := netip.ParseAddr(n.IP)
		switch {
		case err != nil:
			c.fail(key+".ip", "must be a literal IP address (no host names), got %q", n.IP)
		case ip.IsUnspecified():
			c.fail(key+".ip", "must be a reachable address, not %s", n.IP)
		}
		p := n.Ports
		required := []struct {
			name string
			port *uint16
			need bool
		}{
			{"tcp", p.TCP, true},
			{"quic", p.QUIC, cfg.QUIC.Enabled},
			{"http", p.HTTP, cfg.HTTP.Enabled},
			{"websocket", p.WebSocket, cfg.WebSocket.Enabled},
			{"tcp_replica", p.TCPReplica, true},
		}
		for _, r := range required {
			pkey := key + ".ports." + r.name
			if r.port == nil {
				if r.need {
					c.fail(pkey, "must be set: in cluster mode the roster is the only source of ports for every enabled transport")
				}
				continue
			}
			if *r.port == 0 {
				c.fail(pkey, "must not be 0")
				continue
			}
			if err == nil {
				ep := netip.AddrPortFrom(ip.Unmap(), *r.port).String()
				if other, dup := endpoints[ep]; dup {
					c.fail(pkey, "duplicates %s already used by %s", ep, other)
				} else {
					endpoints[ep] = pkey
				}
			}
		}
		// Gossip binds TCP and UDP on its port, explicit or derived; either
		// way it must not collide with another listener.
		gkey := key + ".ports.gossip"
		if gp, ok := n.GossipPort(); !ok {
			switch {
			case p.Gossip != nil:
				c.fail(gkey, "must not be 0")
			case p.TCPReplica != nil && *p.TCPReplica != 0:
				c.fail(gkey, "must be set: the default tcp_replica + %d = %d exceeds 65535", GossipPortOffset, int(*p.TCPReplica)+GossipPortOffset)
			}
		} else if err == nil {
			ep := netip.AddrPortFrom(ip.Unmap(), gp).String()
			if other, dup := endpoints[ep]; dup {
				what := gkey
				if p.Gossip == nil {
					what += fmt.Sprintf(" (default tcp_replica + %d)", GossipPortOffset)
				}
				c.fail(gkey, "%s duplicates %s already used by %s", what, ep, other)
			} else {
				endpoints[ep] = gkey
			}
		}

		var catchAll *advertisedHost
		if n.AdvertisedAddress != "" {
			h, err := parseAdvertised(n.AdvertisedAddress)
			if err != nil {
				c.fail(key+".advertised_address", "%v", err)
			} else {
				catchAll = &h
			}
		} else if err == nil && !ip.IsUnspecified() {
			h := advertisedHost{ip: ip.Unmap()}
			catchAll = &h
		}
		if len(n.AdvertisedAddresses) > SelectorsPerNodeMax {
			c.fail(key+".advertised_addresses", "must have at most %d entries, got %d", SelectorsPerNodeMax, len(n.AdvertisedAddresses))
		}
		type selector struct {
			prefix netip.Prefix
			host   advertisedHost
		}
		var sels []selector
		seen := map[netip.Prefix]int{}
		for j, s := range n.AdvertisedAddresses {
			skey := fmt.Sprintf("%s.advertised_addresses[%d]", key, j)
			pfx, perr := netip.ParsePrefix(s.ClientCIDR)
			if perr != nil {
				c.fail(skey+".client_cidr", "must be a CIDR such as 10.0.0.0/16, got %q", s.ClientCIDR)
				continue
			}
			pfx = canonicalPrefix(pfx)
			if k, dup := seen[pfx]; dup {
				c.fail(skey+".client_cidr", "duplicates advertised_addresses[%d] (%s after masking)", k, pfx)
				continue
			}
			seen[pfx] = j
			h, herr := parseAdvertised(s.Address)
			if herr != nil {
				c.fail(skey+".address", "%v", herr)
				continue
			}
			sels = append(sels, selector{pfx, h})
		}
		var selRanges []addrRange
		for _, s := range sels {
			selRanges = append(selRanges, prefixRange(s.prefix))
		}
		clientPorts := []struct {
			name string
			port *uint16
		}{{"tcp", p.TCP}, {"quic", p.QUIC}, {"http", p.HTTP}, {"websocket", p.WebSocket}}
		addEndpoints := func(host advertisedHost, clients clientSet, network string) {
			for _, cp := range clientPorts {
				if cp.port == nil || *cp.port == 0 {
					continue
				}
				e := advertisedEndpoint{node: i, transport: cp.name, network: network, clients: clients, host: host, port: *cp.port}
				for _, other := range advertised {
					if other.conflicts(e) {
						c.fail(key+".advertised_addresses", "advertises %s to %s, but cluster.nodes[%d] advertises the same endpoint to %s and the client sets overlap, so a client could resolve both nodes to it",
							e.authority(), network, other.node, other.network)
						return
					}
				}
				advertised = append(advertised, e)
			}
		}
		if catchAll != nil {
			addEndpoints(*catchAll, catchAllClients(selRanges), "every other client")
		}
		for j, s := range sels {
			var siblings []addrRange
			for k, r := range selRanges {
				if k != j {
					siblings = append(siblings, r)
				}
			}
			addEndpoints(s.host, clientSet{ranges: prefixRange(s.prefix).subtractNested(siblings)}, "clients in "+s.prefix.String())
		}
	}
}

func (cfg *Config) validateNode(c *checker) {
	if a := cfg.Node.AdvertisedAddress; a != "" {
		if _, err := parseAdvertised(a); err != nil {
			c.fail("node.advertised_address", "%v", err)
		}
	}
	if cfg.Cluster.Enabled || cfg.Node.AdvertisedAddress != "" {
		return
	}
	for _, l := range []struct {
		key, addr string
		on        bool
	}{
		{"tcp.address", cfg.TCP.Address, cfg.TCP.Enabled},
		{"quic.address", cfg.QUIC.Address, cfg.QUIC.Enabled},
		{"http.address", cfg.HTTP.Address, cfg.HTTP.Enabled},
		{"websocket.address", cfg.WebSocket.Address, cfg.WebSocket.Enabled},
	} {
		if !l.on {
			continue
		}
		host, _, err := net.SplitHostPort(l.addr)
		if err != nil {
			continue // reported by the address rule
		}
		if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
			c.fail("node.advertised_address", "must be set when %s binds the wildcard address %q: clients cannot be told to dial it (IGGY_NODE_ADVERTISED_ADDRESS)", l.key, l.addr)
			return
		}
	}
}

// advertisedHost is a client-facing address: a literal IP or a host name.
type advertisedHost struct {
	ip   netip.Addr
	name string
}

func (h advertisedHost) authority(port uint16) string {
	if h.ip.IsValid() {
		return netip.AddrPortFrom(h.ip, port).String()
	}
	return net.JoinHostPort(h.name, strconv.Itoa(int(port)))
}

func (h advertisedHost) equal(o advertisedHost) bool { return h.ip == o.ip && h.name == o.name }

// parseAdvertised accepts a literal IP (IPv6 optionally in brackets) or an
// RFC 1123 host name, and refuses ports and the unspecified address.
func parseAdvertised(s string) (advertisedHost, error) {
	if s == "" {
		return advertisedHost{}, fmt.Errorf("must not be empty")
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if ip, err := netip.ParseAddr(inner); err == nil && (inner == s || strings.HasPrefix(s, "[") && ip.Is6()) {
		if ip.IsUnspecified() {
			return advertisedHost{}, fmt.Errorf("must be an address clients can dial, not %s", s)
		}
		return advertisedHost{ip: ip.Unmap()}, nil
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if _, err := strconv.Atoi(s[i+1:]); err == nil && !strings.Contains(s[:i], ":") || strings.HasPrefix(s, "[") {
			return advertisedHost{}, fmt.Errorf("must be a host without a port (ports come from the roster), got %q", s)
		}
		return advertisedHost{}, fmt.Errorf("must be a literal IP or a host name, got malformed %q", s)
	}
	if len(s) > 253 {
		return advertisedHost{}, fmt.Errorf("host name is longer than 253 characters")
	}
	numeric := true
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return advertisedHost{}, fmt.Errorf("host name %q has an empty or over-long label", s)
		}
		if label[0] == '-' || label[len(label)-1] == '-' {
			return advertisedHost{}, fmt.Errorf("host name %q has a label starting or ending with '-'", s)
		}
		for _, r := range label {
			if !(r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return advertisedHost{}, fmt.Errorf("host name %q contains %q (letters, digits, '-' and '.' only)", s, r)
			}
			if r < '0' || r > '9' {
				numeric = false
			}
		}
	}
	if numeric {
		return advertisedHost{}, fmt.Errorf("%q is neither a valid IPv4 address nor a host name", s)
	}
	return advertisedHost{name: strings.ToLower(s)}, nil
}

// canonicalPrefix masks host bits and treats IPv4-mapped IPv6 prefixes of
// /96 or longer as the IPv4 prefix they describe.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// u128 is an address as a number, so ranges of either family compare alike.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }
func (a u128) addOne() (u128, bool) {
	lo, carry := bits.Add64(a.lo, 1, 0)
	hi, over := bits.Add64(a.hi, 0, carry)
	return u128{hi, lo}, over == 0
}
func (a u128) subOne() u128 {
	lo, borrow := bits.Sub64(a.lo, 1, 0)
	hi, _ := bits.Sub64(a.hi, 0, borrow)
	return u128{hi, lo}
}

type addrRange struct {
	v4          bool
	first, last u128
}

func addrNum(a netip.Addr) u128 {
	b := a.As16()
	var hi, lo uint64
	for i := 0; i < 8; i++ {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return u128{hi, lo}
}

func prefixRange(p netip.Prefix) addrRange {
	first := addrNum(p.Addr())
	hostBits := 128 - p.Bits()
	if p.Addr().Is4() {
		hostBits = 32 - p.Bits()
	}
	last := first
	if hostBits >= 64 {
		// A shift by 64 yields 0 in Go, so /0 sets every high bit.
		last.lo = ^uint64(0)
		last.hi |= (uint64(1) << (hostBits - 64)) - 1
	} else if hostBits > 0 {
		last.lo |= (uint64(1) << hostBits) - 1
	}
	return addrRange{v4: p.Addr().Is4(), first: first, last: last}
}

func (r addrRange) overlaps(o addrRange) bool {
	return r.v4 == o.v4 && !r.last.less(o.first) && !o.last.less(r.first)
}

// subtractNested removes from r the ranges wholly inside it (a longer
// prefix wins there), returning what r still serves.
func (r addrRange) subtractNested(ranges []addrRange) []addrRange {
	var nested []addrRange
	for _, o := range ranges {
		if o.v4 == r.v4 && !o.first.less(r.first) && !r.last.less(o.last) {
			nested = append(nested, o)
		}
	}
	slices.SortFunc(nested, func(a, b addrRange) int {
		if a.first.less(b.first) {
			return -1
		}
		if b.first.less(a.first) {
			return 1
		}
		return 0
	})
	var out []addrRange
	cursor, open := r.first, true
	for _, n := range nested {
		if !open {
			break
		}
		if cursor.less(n.first) {
			out = append(out, addrRange{v4: r.v4, first: cursor, last: n.first.subOne()})
		}
		if next, ok := n.last.addOne(); ok {
			if cursor.less(next) {
				cursor = next
			}
		} else {
			open = false
		}
	}
	if open && !r.last.less(cursor) {
		out = append(out, addrRange{v4: r.v4, first: cursor, last: r.last})
	}
	return out
}

// clientSet is the set of client addresses an advertised endpoint is handed
// to; unknown is set for the catch-all, which also serves clients whose
// address is not known (proxies, unix sockets).
type clientSet struct {
	ranges  []addrRange
	unknown bool
}

func catchAllClients(selectors []addrRange) clientSet {
	all4 := prefixRange(netip.MustParsePrefix("0.0.0.0/0"))
	all6 := prefixRange(netip.MustParsePrefix("::/0"))
	return clientSet{ranges: append(all4.subtractNested(selectors), all6.subtractNested(selectors)...), unknown: true}
}

func (s clientSet) overlaps(o clientSet) bool {
	if s.unknown && o.unknown {
		return true
	}
	for _, a := range s.ranges {
		for _, b := range o.ranges {
			if a.overlaps(b) {
				return true
			}
		}
	}
	return false
}

type advertisedEndpoint struct {
	node      int
	transport string
	network   string
	clients   clientSet
	host      advertisedHost
	port      uint16
}

func (e advertisedEndpoint) authority() string { return e.host.authority(e.port) }

// conflicts reports two nodes advertising one host:port to clients that
// could receive both, which would send such a client to the wrong node.
func (e advertisedEndpoint) conflicts(o advertisedEndpoint) bool {
	return e.node != o.node && e.port == o.port && e.host.equal(o.host) && e.clients.overlaps(o.clients)
}
