package config

import (
	"path/filepath"

	"github.com/iggo/iggo/shard"
)

// Config is the whole server configuration, shaped like Iggy 0.9.0's
// config.toml (no [system] table; path, [runtime], [logging], [sharding] ...
// at the top level). Field tags are the TOML keys; the IGGY_* environment
// name of a key is derived from its path (see package doc).
//
// Fields tagged secret are never written to the runtime config file.
type Config struct {
	// Path is the data directory; every other relative path hangs off it.
	Path string `toml:"path"`

	ConsumerGroup       ConsumerGroupConfig       `toml:"consumer_group"`
	DataMaintenance     DataMaintenanceConfig     `toml:"data_maintenance"`
	HTTP                HTTPConfig                `toml:"http"`
	TCP                 TCPConfig                 `toml:"tcp"`
	QUIC                QUICConfig                `toml:"quic"`
	PersonalAccessToken PersonalAccessTokenConfig `toml:"personal_access_token"`
	Heartbeat           HeartbeatConfig           `toml:"heartbeat"`
	Telemetry           TelemetryConfig           `toml:"telemetry"`
	Runtime             RuntimeConfig             `toml:"runtime"`
	Logging             LoggingConfig             `toml:"logging"`
	Encryption          EncryptionConfig          `toml:"encryption"`
	MemoryPool          MemoryPoolConfig          `toml:"memory_pool"`
	Cluster             ClusterConfig             `toml:"cluster"`
	Sharding            ShardingConfig            `toml:"sharding"`
	WebSocket           WebSocketConfig           `toml:"websocket"`
	Metadata            MetadataConfig            `toml:"metadata"`
	Partition           PartitionConfig           `toml:"partition"`
	MessageBus          MessageBusConfig          `toml:"message_bus"`
	Login               LoginConfig               `toml:"login"`
	LongPoll            LongPollConfig            `toml:"long_poll"`
	Node                NodeConfig                `toml:"node"`
}

// RuntimeDir is where current_config.toml lives: runtime.path under path.
// Validation guarantees it is a proper subdirectory of the data directory,
// because it is deleted and recreated at every boot.
func (c *Config) RuntimeDir() string { return filepath.Join(c.Path, c.Runtime.Path) }

// LogDir is logging.path under path, or logging.path itself when absolute.
func (c *Config) LogDir() string {
	if filepath.IsAbs(c.Logging.Path) {
		return c.Logging.Path
	}
	return filepath.Join(c.Path, c.Logging.Path)
}

type ConsumerGroupConfig struct {
	RebalancingTimeout Duration `toml:"rebalancing_timeout"`
	SessionTimeout     Duration `toml:"session_timeout"`
	HeartbeatInterval  Duration `toml:"heartbeat_interval"`
}

type DataMaintenanceConfig struct {
	Messages MessagesMaintenanceConfig `toml:"messages"`
}

type MessagesMaintenanceConfig struct {
	CleanerEnabled bool     `toml:"cleaner_enabled"`
	Interval       Duration `toml:"interval"`
}

type HTTPConfig struct {
	Enabled        bool              `toml:"enabled"`
	Address        string            `toml:"address"`
	MaxRequestSize ByteSize          `toml:"max_request_size"`
	WebUI          bool              `toml:"web_ui"`
	CORS           HTTPCORSConfig    `toml:"cors"`
	JWT            HTTPJWTConfig     `toml:"jwt"`
	Metrics        HTTPMetricsConfig `toml:"metrics"`
	TLS            HTTPTLSConfig     `toml:"tls"`
}

type HTTPCORSConfig struct {
	Enabled             bool     `toml:"enabled"`
	AllowedMethods      []string `toml:"allowed_methods"`
	AllowedOrigins      []string `toml:"allowed_origins"`
	AllowedHeaders      []string `toml:"allowed_headers"`
	ExposedHeaders      []string `toml:"exposed_headers"`
	AllowCredentials    bool     `toml:"allow_credentials"`
	AllowPrivateNetwork bool     `toml:"allow_private_network"`
}

type HTTPJWTConfig struct {
	Algorithm         string          `toml:"algorithm"`
	Issuer            string          `toml:"issuer"`
	Audience          string          `toml:"audience"`
	ValidIssuers      []string        `toml:"valid_issuers"`
	ValidAudiences    []string        `toml:"valid_audiences"`
	AccessTokenExpiry Duration        `toml:"access_token_expiry"`
	ClockSkew         Duration        `toml:"clock_skew"`
	NotBefore         Duration        `toml:"not_before"`
	EncodingSecret    string          `toml:"encoding_secret,omitempty" secret:"true"`
	DecodingSecret    string          `toml:"decoding_secret,omitempty" secret:"true"`
	UseBase64Secret   bool            `toml:"use_base64_secret"`
	TrustedIssuers    []TrustedIssuer `toml:"trusted_issuers,omitempty"`
}

type TrustedIssuer struct {
	Issuer   string `toml:"issuer"`
	Audience string `toml:"audience"`
	JWKSURL  string `toml:"jwks_url"`
	UserID   int    `toml:"user_id"`
}

type HTTPMetricsConfig struct {
	Enabled  bool   `toml:"enabled"`
	Endpoint string `toml:"endpoint"`
	// OpenAddress (iggo key), when set, also serves Endpoint without
	// authentication on its own listener (for a scraper without a token).
	OpenAddress string `toml:"open_address"`
}

type HTTPTLSConfig struct {
	Enabled  bool   `toml:"enabled"`
	CertFile string `toml:"cert_file"`
	KeyFile  string `toml:"key_file"`
}

type TCPConfig struct {
	Enabled bool      `toml:"enabled"`
	Address string    `toml:"address"`
	TLS     TLSConfig `toml:"tls"`
}

// TLSConfig is the listener TLS block shared by [tcp.tls] and
// [websocket.tls].
type TLSConfig struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
}

type QUICConfig struct {
	Enabled                  bool                  `toml:"enabled"`
	Address                  string                `toml:"address"`
	MaxConcurrentBidiStreams int                   `toml:"max_concurrent_bidi_streams"`
	InitialMTU               ByteSize              `toml:"initial_mtu"`
	SendWindow               ByteSize              `toml:"send_window"`
	ReceiveWindow            ByteSize              `toml:"receive_window"`
	StreamReceiveWindow      ByteSize              `toml:"stream_receive_window"`
	KeepAliveInterval        Duration              `toml:"keep_alive_interval"`
	MaxIdleTimeout           Duration              `toml:"max_idle_timeout"`
	Certificate              QUICCertificateConfig `toml:"certificate"`
}

type QUICCertificateConfig struct {
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
}

type PersonalAccessTokenConfig struct {
	MaxTokensPerUser int           `toml:"max_tokens_per_user"`
	Cleaner          CleanerConfig `toml:"cleaner"`
}

type CleanerConfig struct {
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
}

type HeartbeatConfig struct {
	Enabled  bool     `toml:"enabled"`
	Interval Duration `toml:"interval"`
}

type TelemetryConfig struct {
	Enabled     bool                    `toml:"enabled"`
	ServiceName string                  `toml:"service_name"`
	Logs        TelemetryEndpointConfig `toml:"logs"`
	Traces      TelemetryEndpointConfig `toml:"traces"`
}

type TelemetryEndpointConfig struct {
	Transport string `toml:"transport"`
	Endpoint  string `toml:"endpoint"`
}

type RuntimeConfig struct {
	Path string `toml:"path"`
	// GCPercent is the Go garbage collector's target (GOGC) the server
	// sets at start; -1 turns the collector off. The GOGC environment
	// variable, when set, wins. iggo key.
	GCPercent int `toml:"gc_percent"`
}

type LoggingConfig struct {
	Path                  string   `toml:"path"`
	Level                 string   `toml:"level"`
	FileEnabled           bool     `toml:"file_enabled"`
	MaxFileSize           ByteSize `toml:"max_file_size"`
	MaxTotalSize          ByteSize `toml:"max_total_size"`
	RotationCheckInterval Duration `toml:"rotation_check_interval"`
	Retention             Duration `toml:"retention"`
	SysinfoPrintInterval  Duration `toml:"sysinfo_print_interval"`
	// ClientEventsPerSecond bounds the log lines about clients (connections
	// accepted, closed and refused, logins, refused frames) per kind of
	// event and second; what is held back is counted in the next line.
	// iggo key.
	ClientEventsPerSecond int `toml:"client_events_per_second"`
	// AuditLinesPerSecond and AuditClientLinesPerSecond bound the audit
	// lines of denials and refused changes (package replica/audit) the
	// node writes, and one client connection may cause, per second (bursts
	// of as many); lines over budget are counted and the count logged with
	// the connection's next line. iggo keys.
	AuditLinesPerSecond       int `toml:"audit_lines_per_second"`
	AuditClientLinesPerSecond int `toml:"audit_client_lines_per_second"`
}

type EncryptionConfig struct {
	Enabled bool   `toml:"enabled"`
	Key     string `toml:"key,omitempty" secret:"true"`
}

type MemoryPoolConfig struct {
	Enabled        bool     `toml:"enabled"`
	Size           ByteSize `toml:"size"`
	BucketCapacity int      `toml:"bucket_capacity"`
}

type ClusterConfig struct {
	Enabled                            bool     `toml:"enabled"`
	Name                               string   `toml:"name"`
	HeartbeatTimeout                   Duration `toml:"heartbeat_timeout"`
	CommitBroadcastInterval            Duration `toml:"commit_broadcast_interval"`
	PrepareRetransmitInterval          Duration `toml:"prepare_retransmit_interval"`
	ViewChangeRetransmitInterval       Duration `toml:"view_change_retransmit_interval"`
	ViewChangeStatusTimeout            Duration `toml:"view_change_status_timeout"`
	RequestStartViewRetransmitInterval Duration `toml:"request_start_view_retransmit_interval"`
	ViewProbeAttemptsMax               int      `toml:"view_probe_attempts_max"`
	RepairRetryInterval                Duration `toml:"repair_retry_interval"`
	RepairGapDebounceInterval          Duration `toml:"repair_gap_debounce_interval"`
	RepairChunkMax                     int      `toml:"repair_chunk_max"`
	SuperblockWedgedFatalTimeout       Duration `toml:"superblock_wedged_fatal_timeout"`
	// MemberEvictionTimeout: how long gossip must report a node dead or
	// left before the metadata primary removes the consumer-group members
	// whose connections lived on it.
	MemberEvictionTimeout Duration `toml:"member_eviction_timeout"`

	Auth        ClusterAuthConfig        `toml:"auth"`
	TLS         ClusterTLSConfig         `toml:"tls"`
	Coordinator ClusterCoordinatorConfig `toml:"coordinator"`
	Nodes       []ClusterNode            `toml:"nodes"`
}

type ClusterAuthConfig struct {
	Enabled              bool   `toml:"enabled"`
	SharedSecret         string `toml:"shared_secret,omitempty" secret:"true"`
	PreviousSharedSecret string `toml:"previous_shared_secret,omitempty" secret:"true"`
}

type ClusterTLSConfig struct {
	Enabled    bool   `toml:"enabled"`
	SelfSigned bool   `toml:"self_signed"`
	CertFile   string `toml:"cert_file"`
	KeyFile    string `toml:"key_file"`
	CAFile     string `toml:"ca_file"`
}

type ClusterCoordinatorConfig struct {
	SkipShardZeroForReplicas bool `toml:"skip_shard_zero_for_replicas"`
	SkipShardZeroForClients  bool `toml:"skip_shard_zero_for_clients"`
}

// ClusterNode is one roster entry. The running process picks its own entry
// with --replica-id.
type ClusterNode struct {
	Name                string              `toml:"name"`
	IP                  string              `toml:"ip"`
	AdvertisedAddress   string              `toml:"advertised_address,omitempty"`
	AdvertisedAddresses []AdvertiseSelector `toml:"advertised_addresses,omitempty"`
	ReplicaID           int                 `toml:"replica_id"`
	Ports               NodePorts           `toml:"ports"`
}

// AdvertiseSelector hands clients whose address falls in ClientCIDR the
// address Address instead of the node's catch-all.
type AdvertiseSelector struct {
	ClientCIDR string `toml:"client_cidr"`
	Address    string `toml:"address"`
}

// NodePorts are a node's listener ports; nil means not configured. In
// cluster mode they are the only source of ports (the transports' own
// addresses supply the bind host).
type NodePorts struct {
	TCP        *uint16 `toml:"tcp,omitempty"`
	QUIC       *uint16 `toml:"quic,omitempty"`
	HTTP       *uint16 `toml:"http,omitempty"`
	WebSocket  *uint16 `toml:"websocket,omitempty"`
	TCPReplica *uint16 `toml:"tcp_replica,omitempty"`
	// Gossip is an iggo key: the memberlist port (TCP and UDP) used for
	// liveness and node info. Unset means tcp_replica + GossipPortOffset.
	Gossip *uint16 `toml:"gossip,omitempty"`
}

// GossipPortOffset derives a node's default gossip port from its
// tcp_replica port. A fixed offset keeps the default roster (replica ports
// 9090, 9091, ... on one IP) free of collisions, which +1 would not.
const GossipPortOffset = 1000

// GossipPort returns the node's gossip port: ports.gossip when set, else
// tcp_replica + GossipPortOffset. ok is false when neither yields a port in
// 1..65535 (Validate reports that case).
func (n ClusterNode) GossipPort() (port uint16, ok bool) {
	if n.Ports.Gossip != nil {
		return *n.Ports.Gossip, *n.Ports.Gossip != 0
	}
	if n.Ports.TCPReplica == nil || *n.Ports.TCPReplica == 0 {
		return 0, false
	}
	d := int(*n.Ports.TCPReplica) + GossipPortOffset
	if d > 65535 {
		return 0, false
	}
	return uint16(d), true
}

// Port returns a pointer to v, for building NodePorts in code.
func Port(v uint16) *uint16 { return &v }

type ShardingConfig struct {
	CPUAllocation             shard.CPUAllocation `toml:"cpu_allocation"`
	PinCores                  bool                `toml:"pin_cores"`
	InboxCapacity             int                 `toml:"inbox_capacity"`
	ReplyInboxCapacity        int                 `toml:"reply_inbox_capacity"`
	PollCompletionCapacity    int                 `toml:"poll_completion_capacity"`
	PartitionIOCapacity       int                 `toml:"partition_io_capacity"`
	PartitionIOBytesMax       *ByteSize           `toml:"partition_io_bytes_max,omitempty"`
	ShutdownDrainTimeout      Duration            `toml:"shutdown_drain_timeout"`
	ShutdownPollInterval      Duration            `toml:"shutdown_poll_interval"`
	ShutdownJoinTimeout       Duration            `toml:"shutdown_join_timeout"`
	ReconcilePeriodicInterval Duration            `toml:"reconcile_periodic_interval"`
	// BatchMax is an iggo key: the most inbox messages one shard loop
	// iteration takes before running its group commit.
	BatchMax int `toml:"batch_max"`
}

type WebSocketConfig struct {
	Enabled              bool      `toml:"enabled"`
	Address              string    `toml:"address"`
	ReadBufferSize       *ByteSize `toml:"read_buffer_size,omitempty"`
	WriteBufferSize      *ByteSize `toml:"write_buffer_size,omitempty"`
	MaxWriteBufferSize   *ByteSize `toml:"max_write_buffer_size,omitempty"`
	MaxMessageSize       *ByteSize `toml:"max_message_size,omitempty"`
	MaxFrameSize         *ByteSize `toml:"max_frame_size,omitempty"`
	AcceptUnmaskedFrames bool      `toml:"accept_unmasked_frames"`
	TLS                  TLSConfig `toml:"tls"`
}

type MetadataConfig struct {
	PrepareQueueDepth int `toml:"prepare_queue_depth"`
	JournalSlots      int `toml:"journal_slots"`
	ClientsTableMax   int `toml:"clients_table_max"`
	PartitionsMax     int `toml:"partitions_max"`
}

type PartitionConfig struct {
	WALBytesMax                 ByteSize `toml:"wal_bytes_max"`
	WALGroupCommitDelayMicros   int      `toml:"wal_group_commit_delay_micros"`
	ValidateChecksum            bool     `toml:"validate_checksum"`
	PrepareQueueDepth           int      `toml:"prepare_queue_depth"`
	DedupClientsMax             int      `toml:"dedup_clients_max"`
	ConsumerOffsetsMax          int      `toml:"consumer_offsets_max"`
	OffsetReservationLease      int      `toml:"offset_reservation_lease"`
	EvictedRingCapacity         int      `toml:"evicted_ring_capacity"`
	EvictedRingBytesMax         ByteSize `toml:"evicted_ring_bytes_max"`
	TransferServedCacheBytesMax ByteSize `toml:"transfer_served_cache_bytes_max"`
	TransferArtifactBytesMax    ByteSize `toml:"transfer_artifact_bytes_max"`
	SegmentWritebackBytes       ByteSize `toml:"segment_writeback_bytes"`
	WALWritebackBytes           ByteSize `toml:"wal_writeback_bytes"`
	BackgroundSyncBytes         ByteSize `toml:"background_sync_bytes"`
	SegmentCacheBytes           ByteSize `toml:"segment_cache_bytes"`
	OpenFilesMax                int      `toml:"open_files_max"`
}

type MessageBusConfig struct {
	MaxBatch              int      `toml:"max_batch"`
	MaxMessageSize        ByteSize `toml:"max_message_size"`
	ReplicaReadBufferSize ByteSize `toml:"replica_read_buffer_size"`
	PeerQueueCapacity     int      `toml:"peer_queue_capacity"`
	ClientQueueCapacity   int      `toml:"client_queue_capacity"`
	ReconnectPeriod       Duration `toml:"reconnect_period"`
	ClosePeerTimeout      Duration `toml:"close_peer_timeout"`
	CloseGrace            Duration `toml:"close_grace"`
	HandshakeGrace        Duration `toml:"handshake_grace"`
	// Replica-plane admission (iggo keys): an accepted replica connection
	// must send its hello within ReplicaHelloGrace; at most
	// ReplicaHandshakesPerAddress wait per source address and
	// ReplicaHandshakesMax in all from addresses outside the roster.
	ReplicaHelloGrace           Duration `toml:"replica_hello_grace"`
	ReplicaHandshakesPerAddress int      `toml:"replica_handshakes_per_address"`
	ReplicaHandshakesMax        int      `toml:"replica_handshakes_max"`
	// ConnectionsMax caps open client connections (all transports); nil
	// means half the soft RLIMIT_NOFILE after the server raises it, 0 means
	// the soft limit minus DescriptorsReserved. Never more than that.
	ConnectionsMax *int `toml:"connections_max,omitempty"`

	// The keys below are iggo's (client intake limits, package
	// replica/intake).

	// DescriptorsReserved are descriptors client connections never take:
	// replica plane, partition files, rings, listeners, logs.
	DescriptorsReserved int `toml:"descriptors_reserved"`
	// UnauthenticatedPerAddressMax caps connections per source address
	// (IPv6: per /64) that have not logged in; 0 means no cap.
	UnauthenticatedPerAddressMax int `toml:"unauthenticated_per_address_max"`
	// UnauthenticatedBytesMax is the node's budget of bytes held by
	// connections that have not logged in (buffers and frames).
	UnauthenticatedBytesMax ByteSize `toml:"unauthenticated_bytes_max"`
	// UnauthenticatedFrameMax is the largest frame before a login.
	UnauthenticatedFrameMax ByteSize `toml:"unauthenticated_frame_max"`
	// InflightBytesMax is the node's budget of bytes of request frames
	// being read or served.
	InflightBytesMax ByteSize `toml:"inflight_bytes_max"`
	// FrameHeaderTimeout bounds a header from its first byte,
	// FrameBodyTimeout a body from its complete header.
	FrameHeaderTimeout Duration `toml:"frame_header_timeout"`
	FrameBodyTimeout   Duration `toml:"frame_body_timeout"`
	// UnauthenticatedIdleTimeout bounds the wait for the next frame on a
	// connection that has not logged in.
	UnauthenticatedIdleTimeout Duration `toml:"unauthenticated_idle_timeout"`
}

// LoginConfig ([login], an iggo table) bounds what logins can cost: the
// password verifications run at once and the throttle of failed logins
// (package replica/loginguard).
type LoginConfig struct {
	// VerificationsMax is how many password verifications (Argon2id) run
	// at once; 0 sizes it from the CPUs and memory.
	VerificationsMax int `toml:"verifications_max"`
	// VerificationQueueMax logins may wait for a verification, each at most
	// VerificationQueueTimeout; beyond, the login is answered
	// TransientNotAccepted (SDKs replay it).
	VerificationQueueMax     int      `toml:"verification_queue_max"`
	VerificationQueueTimeout Duration `toml:"verification_queue_timeout"`

	Throttle LoginThrottleConfig `toml:"throttle"`
}

// LoginThrottleConfig is [login.throttle]: token buckets of failed logins
// per client address and per user name.
type LoginThrottleConfig struct {
	Enabled         bool     `toml:"enabled"`
	AddressBurst    int      `toml:"address_burst"`
	AddressInterval Duration `toml:"address_interval"`
	UserBurst       int      `toml:"user_burst"`
	UserInterval    Duration `toml:"user_interval"`
	DelayMax        Duration `toml:"delay_max"`
	EntriesMax      int      `toml:"entries_max"`
}

// LongPollConfig bounds polls that wait for messages (iggo's wait
// extension of POLL_MESSAGES; Iggy has no such keys).
type LongPollConfig struct {
	// MaxWait is the longest a poll is held; a longer wait asked for is
	// cut to it.
	MaxWait Duration `toml:"max_wait"`
	// WaitersMax is the most polls waiting on the node at once; 0 turns
	// long polling off (a wait is refused with FeatureUnavailable).
	WaitersMax int `toml:"waiters_max"`
	// WaitersPerConnection is the most waiting polls of one connection
	// (an HTTP session's requests count together).
	WaitersPerConnection int `toml:"waiters_per_connection"`
}

type NodeConfig struct {
	// AdvertisedAddress is this node's client-facing host (IP or DNS name,
	// no port) when cluster mode is off. Required when a listener binds a
	// wildcard address, because clients cannot dial 0.0.0.0.
	AdvertisedAddress string `toml:"advertised_address,omitempty"`
}
