package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/chaos/schedule"
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
	o := fakeOptions(t, 71, schedule.Kill, schedule.Pause, schedule.Corrupt)
	o.Fake = false
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
