// Package campaign is what the simulators' tests share: the command-line
// flags that replay one seed or size a campaign, and the campaign loop that
// runs seeds one after another, reports each failure with its replay
// command and stops after a bound.
package campaign

import (
	"flag"
	"io"
	"os"
	"testing"
	"time"
)

// The flags every simulator test binary takes.
var (
	Seed    = flag.Uint64("seed", 0, "replay exactly this seed")
	Seeds   = flag.Int("seeds", 0, "number of seeds in the campaign (0: the test's default)")
	Base    = flag.Uint64("base", 1, "first seed of the campaign (0: derived from the clock and printed)")
	Time    = flag.Duration("time", 0, "stop the campaign after this long (0: no limit)")
	Trace   = flag.Bool("simtrace", false, "print every event of a -seed run")
	MaxFail = flag.Int("maxfail", 0, "stop the campaign after this many failing seeds (0: the test's default)")
)

// Plan sizes a campaign from the flags: its seed count (def, or short
// under -short, unless -seeds says) and its first seed.
func Plan(def, short int) (seeds int, base uint64) {
	seeds = *Seeds
	if seeds == 0 {
		seeds = def
		if testing.Short() {
			seeds = short
		}
	}
	base = *Base
	if base == 0 {
		base = uint64(time.Now().UnixNano())
	}
	return seeds, base
}

// Loop runs seeds base, base+1, … (at most seeds of them, within -time):
// run returns a seed's failure, if any. Each failure is reported with
// replay, the command that replays it (%d: the seed); the campaign stops
// after -maxfail failures (maxFail when the flag is 0). It returns how many
// seeds ran and failed, and how long they took.
func Loop(t *testing.T, seeds int, base uint64, maxFail int, replay string, run func(seed uint64) error) (ran, failed int, took time.Duration) {
	t.Helper()
	if *MaxFail > 0 {
		maxFail = *MaxFail
	}
	t.Logf("campaign: %d seeds from %d", seeds, base)
	start := time.Now()
	for i := 0; i < seeds; i++ {
		if *Time > 0 && time.Since(start) > *Time {
			break
		}
		seed := base + uint64(i)
		err := run(seed)
		ran++
		if err != nil {
			// A long campaign goes on past a failing seed so that one run
			// reports every failure it finds (up to the bound).
			failed++
			t.Errorf("seed %d failed: %v\nreplay: "+replay, seed, err, seed)
			if failed >= maxFail {
				t.Fatalf("stopping after %d failing seeds", failed)
			}
		}
	}
	return ran, failed, time.Since(start)
}

// Replay runs the one seed -seed names, if any (with -simtrace its events
// go to stdout): run returns the run's summary and its failure. It reports
// whether there was a seed to replay.
func Replay(t *testing.T, run func(seed uint64, trace io.Writer) (summary string, err error)) bool {
	t.Helper()
	if *Seed == 0 {
		return false
	}
	var trace io.Writer
	if *Trace {
		trace = os.Stdout
	}
	summary, err := run(*Seed, trace)
	t.Logf("%s", summary)
	if err != nil {
		t.Fatalf("seed %d: %v", *Seed, err)
	}
	return true
}
