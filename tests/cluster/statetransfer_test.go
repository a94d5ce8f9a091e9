package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// TestFreshNodeStateTransfer: a node wiped with --fresh after its peers
// moved far past their journals (so journal repair cannot serve the gap)
// is refilled by state transfer of
// the peers' checkpoints and then holds the same messages and
// byte-identical segment files.
func TestFreshNodeStateTransfer(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	// Many small ops: the journals' 256 slots are passed quickly.
	w.gap, w.batch = time.Millisecond, 2
	w.start()
	w.waitProgress(t, 5, 60*time.Second)
	c.Kill(1)
	// Partition journals hold 256 ops; 600 batches later node 1's view of
	// them is long gone from every peer.
	w.waitProgress(t, 600, 120*time.Second)
	w.halt()
	c.Restart(1, true)
	w.verify(t, "node 1 restarted with --fresh far behind")
	// Journal repair could not have served the gap: every partition came
	// from a peer's checkpoint.
	out := c.Nodes[1].Output()
	for _, ts := range specs {
		if !containsLine(out, "partition installed from a peer's checkpoint", `"partition": "`+ts.group(0)+`"`) {
			t.Fatalf("node 1 did not log a state transfer of partition %s:\n%s", ts.group(0), grepLines(out, "installed"))
		}
	}
	t.Log(grepLines(out, "installed from a peer"))
	w.nextOffsetCheck(t, 1, "after state transfer")
	w.verify(t, "after the next send")
}

// containsLine reports whether one line of s holds every part.
func containsLine(s string, parts ...string) bool {
	for _, l := range strings.Split(s, "\n") {
		ok := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestFreshNodeInterrupted: a node wiped with --fresh far behind is killed
// -9 again while it refills, then restarted (without --fresh); meanwhile a
// peer restarts too. It still ends with the same messages and
// byte-identical segments.
func TestFreshNodeInterrupted(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	w.gap, w.batch = time.Millisecond, 2
	w.start()
	w.waitProgress(t, 5, 60*time.Second)
	c.Kill(2)
	w.waitProgress(t, 400, 120*time.Second)
	c.Restart(2, true)
	time.Sleep(150 * time.Millisecond)
	c.Kill(2)
	w.waitProgress(t, 50, 60*time.Second)
	c.Restart(2, false)
	c.Kill(0)
	// Node 2 may still be refilling, and a wiped replica does not vote
	// until it has heard the views of two peers: with node 0 down the
	// cluster may rightly have no quorum. Progress is required once node 0
	// is back.
	time.Sleep(2 * time.Second)
	c.Restart(0, false)
	w.waitProgress(t, 50, 60*time.Second)
	w.halt()
	t.Logf("node 2 runs and installs:\n%s\n%s", grepLines(c.Nodes[2].Output(), "harness: restart"), grepLines(c.Nodes[2].Output(), "installed from a peer"))
	w.verify(t, "after an interrupted refill")
	w.nextOffsetCheck(t, 2, "after an interrupted refill")
}
