package config

import (
	"go.uber.org/zap"

	"github.com/iggo/iggo/shard"
)

// ClusterTicks is [cluster]'s timing in consensus ticks (see Ticks).
type ClusterTicks struct {
	HeartbeatTimeout                   uint64
	CommitBroadcastInterval            uint64
	PrepareRetransmitInterval          uint64
	ViewChangeRetransmitInterval       uint64
	ViewChangeStatusTimeout            uint64
	RequestStartViewRetransmitInterval uint64
	RepairRetryInterval                uint64
	RepairGapDebounceInterval          uint64
	// SuperblockWedgedFatalTimeout is 0 when disabled.
	SuperblockWedgedFatalTimeout uint64
}

// Ticks converts every [cluster] duration to consensus ticks.
func (c ClusterConfig) Ticks() ClusterTicks {
	t := ClusterTicks{
		HeartbeatTimeout:                   c.HeartbeatTimeout.Ticks(),
		CommitBroadcastInterval:            c.CommitBroadcastInterval.Ticks(),
		PrepareRetransmitInterval:          c.PrepareRetransmitInterval.Ticks(),
		ViewChangeRetransmitInterval:       c.ViewChangeRetransmitInterval.Ticks(),
		ViewChangeStatusTimeout:            c.ViewChangeStatusTimeout.Ticks(),
		RequestStartViewRetransmitInterval: c.RequestStartViewRetransmitInterval.Ticks(),
		RepairRetryInterval:                c.RepairRetryInterval.Ticks(),
		RepairGapDebounceInterval:          c.RepairGapDebounceInterval.Ticks(),
	}
	if c.SuperblockWedgedFatalTimeout.Duration > 0 {
		t.SuperblockWedgedFatalTimeout = c.SuperblockWedgedFatalTimeout.Ticks()
	}
	return t
}

// RuntimeConfig maps [sharding] onto the shard runtime's configuration for
// the given CPU plan (from Config.ShardCPUs). The consensus tick is the
// fixed ConsensusTick.
func (s ShardingConfig) RuntimeConfig(cpus []int, log *zap.Logger) shard.Config {
	return shard.Config{
		CPUs:          cpus,
		Pin:           s.PinCores,
		InboxCapacity: s.InboxCapacity,
		BatchMax:      s.BatchMax,
		TickInterval:  ConsensusTick,
		DrainTimeout:  s.ShutdownDrainTimeout.Duration,
		PollInterval:  s.ShutdownPollInterval.Duration,
		JoinTimeout:   s.ShutdownJoinTimeout.Duration,
		Logger:        log,
	}
}

// ShardCPUs resolves sharding.cpu_allocation against this machine's topology
// and the process's allowed CPU set: one CPU per shard.
func (cfg *Config) ShardCPUs() ([]int, error) {
	topo, err := shard.ReadSysTopology()
	if err != nil {
		return nil, err
	}
	return shard.Resolve(cfg.Sharding.CPUAllocation, topo, shard.AllowedCPUs())
}
