package vsr

import (
	"errors"
	"fmt"
	"time"
)

// TickInterval is the virtual time one Tick stands for. Every duration in
// Config is converted to whole ticks (rounded down, at least one).
const TickInterval = 10 * time.Millisecond

// Durability says when a journal append counts as written.
type Durability uint8

const (
	// Replicated: an append is complete once the write reached the kernel; the
	// node does not fdatasync it. Survives kill -9 of any minority and of every
	// node while the machines stay up.
	Replicated Durability = iota
	// Persisted: an append is complete only after fdatasync. Survives power
	// loss of any minority.
	Persisted
)

func (d Durability) String() string {
	if d == Persisted {
		return "persisted"
	}
	return "replicated"
}

// MetadataGroup is the group id of the metadata consensus group (Iggy's
// METADATA_GROUP sentinel); partition groups use the packed namespace.
const MetadataGroup uint64 = 1 << 63

// Config configures one Replica (one replica of one consensus group). Fields
// marked "group-wide" must be identical on every replica of the group; the
// protocol's safety arguments assume it.
type Config struct {
	// Cluster identifies the cluster (group-wide); frames of another cluster
	// are dropped.
	Cluster Checksum
	// Group is the consensus group id (group-wide).
	Group uint64
	// Replica is this replica's index, 0 ≤ Replica < ReplicaCount.
	Replica uint8
	// ReplicaCount is the number of replicas in the group, 1..ReplicasMax
	// (group-wide).
	ReplicaCount uint8

	// Durability selects the Sync flag of journal appends.
	Durability Durability
	// Sessions enables client sessions (register, at-most-once execution,
	// cached replies). The node enables it for the metadata group and disables
	// it for partition groups (group-wide).
	Sessions bool
	// Dedup enables the producer table of a partition group (exactly-once
	// sends, see the package doc): no Register, a client's first request
	// opens its entry, a retried (client, session, request) is answered with
	// its cached reply and not applied again. Requests with a zero client
	// are applied without checks (at-least-once, as Iggy's SDKs get).
	// Mutually exclusive with Sessions (group-wide).
	Dedup bool
	// ClientsMax bounds the session table (2..65536) when Sessions is on,
	// or the producer table (1..65536) when Dedup is on (group-wide:
	// capacity eviction is part of the replicated state).
	ClientsMax int

	// PrepareQueueDepth bounds uncommitted prepares (1..PipelineMax).
	PrepareQueueDepth int
	// RequestQueueDepth bounds requests waiting for pipeline room (1..65536);
	// a request that does not fit is refused with StatusTransientNotAccepted.
	RequestQueueDepth int
	// JournalSlots is how many of the most recent ops the replica keeps
	// headers for in memory and the journal retains on disk; ops below the
	// window can only be fetched by state transfer (group-wide).
	JournalSlots int
	// CheckpointInterval is how many applied ops trigger a checkpoint request.
	// It must leave room for a full pipeline: ≤ JournalSlots/2.
	CheckpointInterval int
	// MessageSizeMax bounds a frame (header + body) the replica accepts or
	// produces, and so a request body.
	MessageSizeMax uint32
	// BodyCacheBytes bounds the prepare bodies a replica keeps in memory beyond
	// those of its own pipeline; others are read back from the journal.
	BodyCacheBytes int

	// Timeouts, as in Iggy's [cluster] section.
	HeartbeatTimeout                   time.Duration
	CommitBroadcastInterval            time.Duration
	PrepareRetransmitInterval          time.Duration
	ViewChangeRetransmitInterval       time.Duration
	ViewChangeStatusTimeout            time.Duration
	RequestStartViewRetransmitInterval time.Duration
	ViewProbeAttemptsMax               int
	RepairRetryInterval                time.Duration
	// RepairChunkMax is the most prepares or headers one repair request asks
	// for (1..RepairChunkCeiling).
	RepairChunkMax int
	// TransferChunkBytes is the size of one state-transfer chunk.
	TransferChunkBytes int

	// Seed seeds the jitter PRNG. The node derives it from its own entropy;
	// the simulator from its seed.
	Seed uint64
}

// DefaultConfig returns the defaults of Iggy's [cluster] section for one
// replica of a group; callers set Cluster, Group, Replica, ReplicaCount,
// Durability, Sessions and Seed.
func DefaultConfig() Config {
	return Config{
		ReplicaCount:                       1,
		ClientsMax:                         8192,
		PrepareQueueDepth:                  32,
		RequestQueueDepth:                  64,
		JournalSlots:                       1024,
		CheckpointInterval:                 512,
		MessageSizeMax:                     64 << 20,
		BodyCacheBytes:                     64 << 20,
		HeartbeatTimeout:                   5 * time.Second,
		CommitBroadcastInterval:            500 * time.Millisecond,
		PrepareRetransmitInterval:          250 * time.Millisecond,
		ViewChangeRetransmitInterval:       500 * time.Millisecond,
		ViewChangeStatusTimeout:            5 * time.Second,
		RequestStartViewRetransmitInterval: time.Second,
		ViewProbeAttemptsMax:               5,
		RepairRetryInterval:                time.Second,
		RepairChunkMax:                     128,
		TransferChunkBytes:                 256 << 10,
	}
}

// ErrConfig is wrapped by every Validate error.
var ErrConfig = errors.New("vsr: invalid config")

func configError(rule string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(rule, args...))
}

// Validate checks every rule and names the first one broken.
func (c *Config) Validate() error {
	if c.ReplicaCount == 0 {
		return configError("replica_count must be 1..%d, got 0", ReplicasMax)
	}
	if c.Replica >= c.ReplicaCount {
		return configError("replica %d must be below replica_count %d", c.Replica, c.ReplicaCount)
	}
	if c.Sessions && (c.ClientsMax < 2 || c.ClientsMax > 65536) {
		return configError("clients_table_max must be 2..65536, got %d", c.ClientsMax)
	}
	if c.Sessions && c.Dedup {
		return configError("sessions and dedup are exclusive")
	}
	if c.Dedup && (c.ClientsMax < 1 || c.ClientsMax > 65536) {
		return configError("dedup_clients_max must be 1..65536, got %d", c.ClientsMax)
	}
	if c.PrepareQueueDepth < 1 || c.PrepareQueueDepth > PipelineMax {
		return configError("prepare_queue_depth must be 1..%d, got %d", PipelineMax, c.PrepareQueueDepth)
	}
	if c.RequestQueueDepth < 1 || c.RequestQueueDepth > 65536 {
		return configError("request_queue_depth must be 1..65536, got %d", c.RequestQueueDepth)
	}
	minSlots := 4 * max(64, c.PrepareQueueDepth)
	if c.JournalSlots < minSlots || c.JournalSlots > 1<<20 {
		return configError("journal_slots must be %d..%d (≥ 4 × max(64, prepare_queue_depth)), got %d",
			minSlots, 1<<20, c.JournalSlots)
	}
	if c.CheckpointInterval < 1 || c.CheckpointInterval > c.JournalSlots/2 {
		return configError("checkpoint_interval must be 1..journal_slots/2 (%d), got %d",
			c.JournalSlots/2, c.CheckpointInterval)
	}
	if c.MessageSizeMax < 4*HeaderSize+HeaderSize*(PipelineMax) || c.MessageSizeMax > 1<<30 {
		return configError("message_size_max must be %d..%d, got %d",
			4*HeaderSize+HeaderSize*PipelineMax, 1<<30, c.MessageSizeMax)
	}
	if c.BodyCacheBytes < 0 {
		return configError("body_cache_bytes must not be negative, got %d", c.BodyCacheBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"heartbeat_timeout", c.HeartbeatTimeout},
		{"commit_broadcast_interval", c.CommitBroadcastInterval},
		{"prepare_retransmit_interval", c.PrepareRetransmitInterval},
		{"view_change_retransmit_interval", c.ViewChangeRetransmitInterval},
		{"view_change_status_timeout", c.ViewChangeStatusTimeout},
		{"request_start_view_retransmit_interval", c.RequestStartViewRetransmitInterval},
		{"repair_retry_interval", c.RepairRetryInterval},
	} {
		if d.v <= 0 {
			return configError("%s must be positive, got %v", d.name, d.v)
		}
	}
	if c.HeartbeatTimeout < 2*time.Second {
		return configError("heartbeat_timeout must be at least 2s, got %v", c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout < 4*c.CommitBroadcastInterval {
		return configError("heartbeat_timeout (%v) must be at least 4 × commit_broadcast_interval (%v)",
			c.HeartbeatTimeout, c.CommitBroadcastInterval)
	}
	if c.ViewChangeStatusTimeout < 4*c.ViewChangeRetransmitInterval {
		return configError("view_change_status_timeout (%v) must be at least 4 × view_change_retransmit_interval (%v)",
			c.ViewChangeStatusTimeout, c.ViewChangeRetransmitInterval)
	}
	if c.ViewProbeAttemptsMax < 1 || c.ViewProbeAttemptsMax > 100 {
		return configError("view_probe_attempts_max must be 1..100, got %d", c.ViewProbeAttemptsMax)
	}
	if c.RepairChunkMax < 1 || c.RepairChunkMax > RepairChunkCeiling {
		return configError("repair_chunk_max must be 1..%d, got %d", RepairChunkCeiling, c.RepairChunkMax)
	}
	if c.TransferChunkBytes < 4096 || uint64(c.TransferChunkBytes)+HeaderSize > uint64(c.MessageSizeMax) {
		return configError("transfer_chunk_bytes must be 4096..message_size_max-256, got %d", c.TransferChunkBytes)
	}
	return nil
}

// Ticks converts a duration to whole ticks, rounded down, at least one.
func Ticks(d time.Duration) int {
	t := int(d / TickInterval)
	if t < 1 {
		return 1
	}
	return t
}

// Quorums of a group of n replicas. Replication: ⌈n/2⌉ (2 for n = 2), not
// capped (Iggy caps it at 3, so a 5-node commit lives on 3 nodes only). View
// change: n − replication + 1, so every view-change quorum intersects every
// replication quorum. Nack: an op is provably uncommitted once
// n − replication + 1 replicas prove they never prepared it.
func quorums(n int) (replication, viewChange, nack int) {
	switch n {
	case 1:
		return 1, 1, 1
	case 2:
		return 2, 2, 1
	}
	replication = (n + 1) / 2
	viewChange = n - replication + 1
	nack = n - replication + 1
	return
}

// PrimaryOffset spreads primaries: the primary of group g in view v is
// (v + PrimaryOffset(g, n)) mod n, so with many groups every replica leads
// some of them from view 0 on (Iggy makes replica 0 the primary of every
// group). The offset is a fixed mix of the group id, identical everywhere.
func PrimaryOffset(group uint64, n uint8) uint8 {
	return uint8(splitmix64(group) % uint64(n))
}

// PrimaryIndex returns the primary of a group in a view.
func PrimaryIndex(view uint32, group uint64, n uint8) uint8 {
	return uint8((uint64(view) + uint64(PrimaryOffset(group, n))) % uint64(n))
}
