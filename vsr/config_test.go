package vsr

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		rule   string // substring of the error; "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"zero replicas", func(c *Config) { c.ReplicaCount = 0 }, "replica_count"},
		{"replica out of range", func(c *Config) { c.ReplicaCount = 3; c.Replica = 3 }, "below replica_count"},
		{"depth zero", func(c *Config) { c.PrepareQueueDepth = 0 }, "prepare_queue_depth"},
		{"depth above ceiling", func(c *Config) { c.PrepareQueueDepth = 128 }, "prepare_queue_depth"},
		{"request queue zero", func(c *Config) { c.RequestQueueDepth = 0 }, "request_queue_depth"},
		{"slots too few", func(c *Config) { c.JournalSlots = 255 }, "journal_slots"},
		{"checkpoint too far", func(c *Config) { c.CheckpointInterval = 513 }, "checkpoint_interval"},
		{"heartbeat below 2s", func(c *Config) { c.HeartbeatTimeout = time.Second }, "at least 2s"},
		{"heartbeat vs broadcast", func(c *Config) { c.CommitBroadcastInterval = 2 * time.Second }, "4 × commit_broadcast_interval"},
		{"status vs retransmit", func(c *Config) { c.ViewChangeRetransmitInterval = 2 * time.Second }, "4 × view_change_retransmit_interval"},
		{"zero retransmit", func(c *Config) { c.PrepareRetransmitInterval = 0 }, "prepare_retransmit_interval must be positive"},
		{"probes zero", func(c *Config) { c.ViewProbeAttemptsMax = 0 }, "view_probe_attempts_max"},
		{"probes 101", func(c *Config) { c.ViewProbeAttemptsMax = 101 }, "view_probe_attempts_max"},
		{"chunk max", func(c *Config) { c.RepairChunkMax = 1025 }, "repair_chunk_max"},
		{"sessions table", func(c *Config) { c.Sessions = true; c.ClientsMax = 1 }, "clients_table_max"},
		{"transfer chunk", func(c *Config) { c.TransferChunkBytes = 100 }, "transfer_chunk_bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.mutate(&cfg)
			err := cfg.Validate()
			if c.rule == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("got %v, want error naming %q", err, c.rule)
			}
		})
	}
}

func TestTicks(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {10 * time.Millisecond, 1}, {19 * time.Millisecond, 1}, {250 * time.Millisecond, 25}, {5 * time.Second, 500}} {
		if got := Ticks(c.d); got != c.want {
			t.Errorf("Ticks(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestQuorums(t *testing.T) {
	for _, c := range []struct{ n, rep, vc, nack int }{
		{1, 1, 1, 1}, {2, 2, 2, 1}, {3, 2, 2, 2}, {4, 2, 3, 3}, {5, 3, 3, 3}, {6, 3, 4, 4}, {7, 4, 4, 4},
	} {
		rep, vc, nack := quorums(c.n)
		if rep != c.rep || vc != c.vc || nack != c.nack {
			t.Errorf("n=%d: got %d/%d/%d want %d/%d/%d", c.n, rep, vc, nack, c.rep, c.vc, c.nack)
		}
		// Every view-change quorum meets every replication quorum, and a nack
		// quorum leaves fewer than a replication quorum of possible holders.
		if rep+vc <= c.n || c.n-nack >= rep {
			t.Errorf("n=%d: quorums do not intersect", c.n)
		}
	}
}

// TestPrimarySpread checks that with many groups every replica leads some of
// them in view 0.
func TestPrimarySpread(t *testing.T) {
	for _, n := range []uint8{2, 3, 5} {
		leads := make([]int, n)
		for g := uint64(0); g < 300; g++ {
			leads[PrimaryIndex(0, g, n)]++
		}
		for i, l := range leads {
			if l < 300/int(n)/2 {
				t.Errorf("n=%d: replica %d leads %d of 300 groups", n, i, l)
			}
		}
		if PrimaryIndex(1, 9, n) != (PrimaryIndex(0, 9, n)+1)%n {
			t.Errorf("n=%d: primaries do not rotate with the view", n)
		}
		// The metadata group's view-v primary is v mod n, replica 0 first.
		for v := uint32(0); v < 7; v++ {
			if got := PrimaryIndex(v, MetadataGroup, n); got != uint8(v%uint32(n)) {
				t.Errorf("n=%d: metadata primary in view %d is %d, want %d", n, v, got, v%uint32(n))
			}
		}
	}
}
