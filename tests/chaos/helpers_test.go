package chaos_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggo/iggo/internal/chaos"
	"github.com/iggo/iggo/internal/chaos/schedule"
)

// shortOptions is a short single-node run with faults frequent enough that
// every run sees several; the tests point it at iggo-server and widen it.
func shortOptions(t *testing.T, seed int64, kinds ...schedule.Kind) chaos.Options {
	return chaos.Options{Seed: seed, Duration: 3 * time.Second, Faults: kinds,
		Interval: 400 * time.Millisecond, FaultLength: 300 * time.Millisecond,
		Producers: 2, Consumers: 1, GroupMembers: 1, MetadataWorkers: 1, Partitions: 2,
		LivenessOps: 10, LivenessDeadline: 20 * time.Second, ConvergeTimeout: 20 * time.Second,
		OpTimeout: time.Second, WorkDir: filepath.Join(t.TempDir(), "run")}
}

func runOK(t *testing.T, o chaos.Options) chaos.Summary {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	s, err := chaos.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run output:\n%s", out.String())
		}
	})
	return s
}

// mustHaveInjected fails unless the run injected at least one fault of
// each kind (anti-vacuity: a run without faults proves nothing).
func mustHaveInjected(t *testing.T, s chaos.Summary, kinds ...schedule.Kind) {
	t.Helper()
	for _, k := range kinds {
		if s.Result.Stats.Faults[string(k)] == 0 {
			t.Fatalf("no %s fault was injected (schedule %v, errors %v)", k, s.Schedule.Faults, s.FaultErrors)
		}
	}
	if s.Result.Stats.MsgAcked == 0 || s.Result.Stats.Observations == 0 {
		t.Fatalf("the workload did nothing: %+v", s.Result.Stats)
	}
}
