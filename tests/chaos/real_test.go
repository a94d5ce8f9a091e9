package chaos_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/internal/chaos"
	"github.com/iggo/iggo/internal/chaos/fault"
	"github.com/iggo/iggo/internal/chaos/schedule"
	"github.com/iggo/iggo/tests/harness"
)

// TestRunRealServer runs the runner against one real iggo-server (built
// from this checkout by the harness, or IGGO_SERVER_BINARY) with kill -9,
// pauses and corruption of segment index files, which recovery rebuilds from
// the log. Damage to a single node's .log files or journals is data loss
// with no peer to repair it from: the server refuses to boot (a checkpoint
// its segments no longer reach, interior journal damage) rather than mint
// an offset twice, which the long campaigns report
// (make chaos CHAOS_ARGS="--faults kill,pause,corrupt").
func TestRunRealServer(t *testing.T) {
	o := shortOptions(t, 71, schedule.Kill, schedule.Pause, schedule.Corrupt)
	o.Server = harness.Binary(t)
	o.Duration = 6 * time.Second
	o.Interval = 700 * time.Millisecond
	o.FaultLength = 400 * time.Millisecond
	o.CorruptFiles = []string{"[0-9]*.index"}
	s := runOK(t, o)
	mustHaveInjected(t, s, schedule.Kill)
	if !s.Valid {
		var sb strings.Builder
		s.Print(&sb)
		t.Fatalf("iggo-server failed the checks:\n%s", sb.String())
	}
}

// clusterSeed returns the first seed from 1 whose schedule for o injects
// every kind in want, so the short cluster test covers each of them
// whatever the generator's draws.
func clusterSeed(t *testing.T, o chaos.Options, want ...schedule.Kind) int64 {
	t.Helper()
	for seed := int64(1); seed <= 1000; seed++ {
		d := o
		d.Seed = seed
		d = d.Defaults()
		sched, err := schedule.Generate(schedule.Params{Seed: seed, Duration: d.Duration, Nodes: d.Nodes, Kinds: d.Faults,
			Interval: d.Interval, Length: d.FaultLength, AllowTotal: *d.AllowTotal})
		if err != nil {
			t.Fatal(err)
		}
		got := map[schedule.Kind]bool{}
		for _, f := range sched.Faults {
			got[f.Kind] = true
		}
		all := true
		for _, k := range want {
			all = all && got[k]
		}
		if all {
			return seed
		}
	}
	t.Fatalf("no seed in 1..1000 schedules all of %v", want)
	return 0
}

// TestRunRealCluster runs the runner against a real three-node iggo
// cluster (local processes; network namespaces when this runs as root
// with ip and nft, else loopback without network faults) with kill -9,
// SIGSTOP/SIGCONT, a `--fresh` wipe of one node's data directory,
// corruption of one node's data file, and a partition when namespaces are
// available. Every check must pass: no acknowledged message lost or
// duplicated, per-partition order, offsets never reused, group offsets
// monotonic, metadata linearizable, and the cluster serves again after
// healing with every node holding every message (a wiped or corrupted node
// refilled from its peers by repair and state transfer).
func TestRunRealCluster(t *testing.T) {
	kinds := []schedule.Kind{schedule.Kill, schedule.Pause, schedule.Wipe, schedule.Corrupt}
	if err := fault.NetnsAvailable(); err == nil {
		kinds = append(kinds, schedule.Partition)
	} else {
		t.Logf("no partitions: %v", err)
	}
	o := shortOptions(t, 0, kinds...)
	o.Server = harness.Binary(t)
	o.Nodes = 3
	o.Duration = 14 * time.Second
	o.Interval = time.Second
	o.FaultLength = 1500 * time.Millisecond
	o.LivenessDeadline = 30 * time.Second
	o.ConvergeTimeout = 30 * time.Second
	o.OpTimeout = 2 * time.Second
	o.Seed = clusterSeed(t, o, kinds...)
	s := runOK(t, o)
	mustHaveInjected(t, s, kinds...)
	if s.Network == chaos.NetworkNetns != slices.Contains(kinds, schedule.Partition) {
		t.Fatalf("network %s with faults %v", s.Network, kinds)
	}
	if !s.Valid || len(s.FaultErrors) != 0 {
		var sb strings.Builder
		s.Print(&sb)
		t.Fatalf("the iggo cluster failed the checks (seed %d):\n%s", s.Seed, sb.String())
	}
}

// TestCampaignExactlyOnce is the CI form of `make chaos-campaign`: two
// short schedules on a real three-node cluster with kills, pauses and (with
// network namespaces) partitions and one-way partitions, producers retrying
// every batch under its producer identity. The checker allows no duplicate
// at all; the campaign totals must show faults, acknowledged messages and
// not one duplicate or retry mismatch.
func TestCampaignExactlyOnce(t *testing.T) {
	kinds := []schedule.Kind{schedule.Kill, schedule.Pause}
	if err := fault.NetnsAvailable(); err == nil {
		kinds = append(kinds, schedule.Partition, schedule.PartitionOneWay)
	} else {
		t.Logf("no partitions: %v", err)
	}
	o := shortOptions(t, 0, kinds...)
	o.Server = harness.Binary(t)
	o.Nodes = 3
	o.Duration = 8 * time.Second
	o.Interval = time.Second
	o.FaultLength = time.Second
	o.LivenessDeadline = 30 * time.Second
	o.ConvergeTimeout = 30 * time.Second
	o.OpTimeout = 2 * time.Second
	o.Seed = clusterSeed(t, o, schedule.Kill, schedule.Pause)
	var out strings.Builder
	o.Out = &out
	sums, err := chaos.Campaign(t.Context(), o, 2)
	if err != nil {
		t.Fatalf("campaign: %v\n%s", err, out.String())
	}
	tot := chaos.Sum(sums)
	tot.Print(&out)
	if tot.Runs != 2 || tot.Invalid != 0 || tot.Duplicates != 0 || tot.RetryMismatch != 0 || tot.FaultTotal == 0 || tot.MsgAcked == 0 {
		t.Fatalf("campaign totals %+v:\n%s", tot, out.String())
	}
	t.Logf("%s", out.String()[strings.LastIndex(out.String(), "== campaign"):])
}
