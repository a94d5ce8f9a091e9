package chaos

import (
	"context"
	"testing"

	"github.com/iggo/iggo/internal/chaos/schedule"
)

// TestDestructiveFaultWaitsForRefill: a destructive fault on one node waits
// until a node destroyed by an earlier destructive fault holds again what
// was acknowledged (campaign seeds 1001 and 1007 destroyed a second replica
// while the first was still being refilled). A fault on the refilling node
// itself does not wait.
func TestDestructiveFaultWaitsForRefill(t *testing.T) {
	n := newNemesis(&cluster{}, nil)
	acked := []uint64{10, 20}
	n.acked = func() []uint64 { return acked }
	var asked []int
	calls := 0
	n.holds = func(_ context.Context, node int, want []uint64) bool {
		asked = append(asked, node)
		if want[0] != 10 || want[1] != 20 {
			t.Errorf("holds asked for %v", want)
		}
		calls++
		return calls >= 3
	}
	n.refilling = map[int]bool{0: true}
	n.awaitRefilled(context.Background(), []int{0})
	if len(asked) != 0 || !n.refilling[0] {
		t.Fatalf("a fault on the refilling node itself waited: asked %v, refilling %v", asked, n.refilling)
	}
	n.awaitRefilled(context.Background(), []int{1})
	if len(asked) != 3 || asked[0] != 0 || n.refilling[0] {
		t.Fatalf("asked %v, refilling %v: want three checks of node 0, then node 0 refilled", asked, n.refilling)
	}
	if len(n.errs) != 0 {
		t.Fatalf("errors: %v", n.errs)
	}
	if !schedule.Wipe.Destructive() || !schedule.Corrupt.Destructive() {
		t.Fatal("wipe and corrupt must count as destructive")
	}
}
