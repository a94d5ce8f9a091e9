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
	var slowest time.Duration
	var slowSeed uint64
	var faults = map[string]int{}
	for i := 0; i < seeds; i++ {
		if *flagTime > 0 && time.Since(start) > *flagTime {
			break
		}
		seedStart := time.Now()
		res := Run(Options{Seed: base + uint64(i)})
		if d := time.Since(seedStart); d > slowest {
			slowest, slowSeed = d, res.Seed
		}
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
	t.Logf("%d seeds in %v (%.0f seeds/min, slowest: seed %d, %v), %d client ops (%d acknowledged), %.0f ops/seed; faults %v",
		ran, el.Round(time.Millisecond), float64(ran)/el.Minutes(), slowSeed, slowest.Round(time.Millisecond),
		ops, completed, float64(ops)/float64(ran), faults)
}

func summary(r Result) string {
	return fmt.Sprintf("seed %d: %s; %d ticks, %d requests, %d acknowledged, commit %d, view %d, %d linearized; faults %v",
		r.Seed, r.Mix, r.Ticks, r.Requests, r.Completed, r.Commits, r.Views, r.Linearized, r.Faults)
}
