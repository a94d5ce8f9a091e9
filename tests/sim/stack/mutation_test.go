//go:build stackmutations

package stack

import (
	"testing"
	"time"

	"github.com/iggo/iggo/internal/mutation"
	"github.com/iggo/iggo/tests/sim/campaign"
)

// TestStackMutations breaks one rule of the real storage stack at a time
// (internal/mutation) and asserts that the real-stack simulator catches
// each within the campaign, reporting how many seeds and how long it took.
// Run with `make sim-stack-mutations` (the stackmutations build tag).
func TestStackMutations(t *testing.T) {
	seeds, base := campaign.Plan(400, 400)
	defer mutation.Set(mutation.None)
	for _, m := range mutation.Kinds {
		t.Run(m.String(), func(t *testing.T) {
			mutation.Set(m)
			start := time.Now()
			for i := 0; i < seeds; i++ {
				res := Run(Options{Seed: base + uint64(i)})
				if res.Err != nil {
					// Only a seed that passes without the breakage counts.
					mutation.Set(mutation.None)
					base := Run(Options{Seed: res.Seed})
					mutation.Set(m)
					if base.Err != nil {
						t.Logf("%s: seed %d fails without the breakage too; skipped", m, res.Seed)
						continue
					}
					t.Logf("%s: caught after %d seeds (%v): seed %d: %s", m, i+1, time.Since(start).Round(time.Millisecond), res.Seed, firstLine(res.Err.Error()))
					return
				}
			}
			t.Fatalf("%s survived %d seeds: the simulator does not catch it", m, seeds)
		})
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	if len(s) > 300 {
		return s[:300]
	}
	return s
}
