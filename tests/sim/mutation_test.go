//go:build vsrmutations

package sim

import (
	"testing"
	"time"

	"github.com/iggo/iggo/tests/sim/campaign"
	"github.com/iggo/iggo/vsr"
)

// TestMutations breaks one safety rule of the consensus core at a time (see
// vsr/mutation_on.go) and asserts that the simulator catches each within the
// short campaign. It also reports how many seeds the outcome checks alone
// (agreement, acknowledged writes, linearizability; no checks of the
// durability contract on outgoing messages) need, within the same budget.
// Run with `make sim-mutations` (the vsrmutations build tag).
func TestMutations(t *testing.T) {
	seeds, base := campaign.Plan(300, 300)
	defer vsr.SetMutation(vsr.MutationNone)
	for _, m := range vsr.Mutations {
		t.Run(m.String(), func(t *testing.T) {
			vsr.SetMutation(m)
			if n, err := hunt(base, seeds, false); err != nil {
				t.Logf("%s: caught after %d seeds: %s", m, n, err)
			} else {
				t.Fatalf("%s survived %d seeds: the simulator does not catch it", m, seeds)
			}
			if n, err := hunt(base, seeds, true); err != nil {
				t.Logf("%s: outcome checks alone catch it after %d seeds: %s", m, n, err)
			} else {
				t.Logf("%s: outcome checks alone do not catch it within %d seeds", m, seeds)
			}
		})
	}
}

func hunt(base uint64, seeds int, outcomesOnly bool) (int, error) {
	start := time.Now()
	for i := 0; i < seeds; i++ {
		res := Run(Options{Seed: base + uint64(i), NoContractChecks: outcomesOnly})
		if res.Err != nil {
			return i + 1, &caught{seed: res.Seed, took: time.Since(start), msg: firstLine(res.Err.Error())}
		}
	}
	return seeds, nil
}

type caught struct {
	seed uint64
	took time.Duration
	msg  string
}

func (c *caught) Error() string {
	return "seed " + itoa(c.seed) + " (" + c.took.Round(time.Millisecond).String() + "): " + c.msg
}

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

func firstLine(s string) string {
	for i := range s {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
