package sim

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

var (
	flagSeed  = flag.Uint64("seed", 0, "replay exactly this seed")
	flagSeeds = flag.Int("seeds", 0, "number of seeds in the campaign (0: 300, or 40 with -short)")
	flagBase  = flag.Uint64("base", 1, "first seed of the campaign (0: derived from the clock and printed)")
	flagTime  = flag.Duration("time", 0, "stop the campaign after this long (0: no limit)")
	flagTrace = flag.Bool("simtrace", false, "print every event of a -seed run")
)

// TestSim runs a campaign of seeds, or one seed with -seed. The ordinary
// `go test` runs a short campaign over fixed seeds; `make sim` runs long ones.
func TestSim(t *testing.T) {
	if *flagSeed != 0 {
		o := Options{Seed: *flagSeed}
		if *flagTrace {
			o.Trace = os.Stdout
		}
		res := Run(o)
		t.Logf("%s", summary(res))
		if res.Err != nil {
			t.Fatalf("seed %d: %v", res.Seed, res.Err)
		}
		return
	}
	seeds := *flagSeeds
	if seeds == 0 {
		seeds = 300
		if testing.Short() {
			seeds = 40
		}
	}
	base := *flagBase
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	t.Logf("campaign: %d seeds from %d", seeds, base)
	start := time.Now()
	var ran, ops, completed int
	var faults = map[string]int{}
	for i := 0; i < seeds; i++ {
		if *flagTime > 0 && time.Since(start) > *flagTime {
			break
		}
		res := Run(Options{Seed: base + uint64(i)})
		ran++
		ops += res.Requests
		completed += res.Completed
		for k, v := range res.Faults {
			faults[k] += v
		}
		if res.Err != nil {
			t.Fatalf("seed %d failed: %v\n%s\nreplay: go test ./tests/sim -run 'TestSim$' -seed=%d -v -simtrace",
				res.Seed, res.Err, res.Mix, res.Seed)
		}
	}
	el := time.Since(start)
	t.Logf("%d seeds in %v (%.0f seeds/min), %d client ops (%d acknowledged), %.0f ops/seed; faults %v",
		ran, el.Round(time.Millisecond), float64(ran)/el.Minutes(), ops, completed, float64(ops)/float64(ran), faults)
}

func summary(r Result) string {
	return fmt.Sprintf("seed %d: %s; %d ticks, %d requests, %d acknowledged, commit %d, view %d, %d linearized; faults %v",
		r.Seed, r.Mix, r.Ticks, r.Requests, r.Completed, r.Commits, r.Views, r.Linearized, r.Faults)
}

// TestSeedTimes is a helper for calibrating the campaign: it reports the
// slowest seeds.
func TestSeedTimes(t *testing.T) {
	if *flagSeeds == 0 || *flagSeed != 0 {
		t.Skip("calibration helper: run with -seeds=N")
	}
	for i := 0; i < *flagSeeds; i++ {
		start := time.Now()
		res := Run(Options{Seed: *flagBase + uint64(i)})
		if el := time.Since(start); el > 500*time.Millisecond {
			t.Logf("seed %d took %v: %s err=%v", res.Seed, el, summary(res), res.Err)
		}
	}
}
