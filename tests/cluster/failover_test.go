package cluster

import (
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

func durabilitySpecs() []*topicSpec {
	return []*topicSpec{
		{stream: "rep", topic: "t", durability: "replicated", partitions: 1},
		{stream: "per", topic: "t", durability: "persisted", partitions: 1},
	}
}

// TestKillPrimaryThenBackup: for each topic (replicated, persisted) the
// producers keep sending while the test kill -9s the partition's primary,
// waits for the cluster to acknowledge again, restarts it, then kill -9s a
// backup of the partition and restarts it. After every restart all
// acknowledged messages are on every node exactly once, in order, at
// their acknowledged offsets, and the segment files are byte-identical.
func TestKillPrimaryThenBackup(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	w.start()
	w.waitProgress(t, 5, 30*time.Second)

	for _, ts := range specs {
		group := ts.group(0)
		primary, view, err := c.WaitPrimary(group, 0, 10*time.Second)
		must(t, err, "primary of "+group)
		t.Logf("%s (%s): primary node %d in view %d; kill -9", group, ts.durability, primary, view)
		c.Kill(primary)
		w.waitProgress(t, 5, 60*time.Second)
		newPrimary, newView, err := c.WaitPrimary(group, view+1, 30*time.Second)
		must(t, err, "view change of "+group)
		if newPrimary == primary {
			t.Fatalf("%s: the killed node %d is still primary in view %d", group, primary, newView)
		}
		c.Restart(primary, false)
		w.waitProgress(t, 3, 60*time.Second)

		backup := 0
		for backup == newPrimary || backup == primary {
			backup++
		}
		if p, _, _ := c.Primary(group); p == backup {
			backup = primary // the restarted node is a backup now
		}
		t.Logf("%s: primary node %d in view %d; kill -9 backup node %d", group, newPrimary, newView, backup)
		c.Kill(backup)
		w.waitProgress(t, 5, 60*time.Second)
		c.Restart(backup, false)
		w.waitProgress(t, 3, 60*time.Second)
	}
	w.halt()
	t.Logf("load:%s", w.summary())
	w.verify(t, "after primary and backup kills")
	w.nextOffsetCheck(t, 1, "after primary and backup kills")
	w.verify(t, "after the next send")
}

// TestKillWholeCluster: kill -9 of all three nodes at once under load,
// twice; after each restart every acknowledged message is there on every
// node (replicated: the journal writes reached the kernel; persisted: they
// were fdatasync'ed), offsets are never handed out twice, and segments are
// byte-identical.
func TestKillWholeCluster(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{Shards: 2})
	specs := durabilitySpecs()
	specs[0].partitions, specs[1].partitions = 2, 2
	createTopics(t, c, 2, specs)
	w := newWorkload(t, c, specs)
	for round := 0; round < 2; round++ {
		w.start()
		w.waitProgress(t, 10+5*round, 60*time.Second)
		c.KillAll()
		w.halt()
		t.Logf("round %d: killed every node;%s", round, w.summary())
		c.StartAll()
		w.verify(t, "after the whole-cluster kill")
		w.nextOffsetCheck(t, round, "after the whole-cluster kill")
	}
	w.verify(t, "at the end")
}

// TestFreshNodeCatchesUp: a node restarted with --fresh (its data wiped)
// refills from its peers — first after it missed a load phase while down,
// then while the producers keep sending — and then holds the same
// messages and byte-identical segment files.
func TestFreshNodeCatchesUp(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 0, specs)
	w := newWorkload(t, c, specs)
	w.start()
	w.waitProgress(t, 10, 60*time.Second)
	c.Kill(2)
	w.waitProgress(t, 20, 60*time.Second)
	w.halt()
	c.Restart(2, true)
	w.verify(t, "node 2 restarted with --fresh after missing a load phase")

	w.start()
	w.waitProgress(t, 5, 60*time.Second)
	c.Kill(0)
	c.Restart(0, true)
	w.waitProgress(t, 10, 60*time.Second)
	w.halt()
	w.verify(t, "node 0 restarted with --fresh under load")
	w.nextOffsetCheck(t, 0, "after --fresh")
}

// TestPausedPrimary: SIGSTOP of the partition's primary (longer than the
// heartbeat timeout) while producers send: the others elect a new primary
// and keep acknowledging; on SIGCONT the old primary, which still believes
// in its view, must not commit or hand out offsets on its own — it rejoins
// as a backup and catches up. Then a paused backup is resumed. Every
// acknowledged message ends up once, in order, on every node.
func TestPausedPrimary(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := durabilitySpecs()
	createTopics(t, c, 1, specs)
	w := newWorkload(t, c, specs)
	w.start()
	w.waitProgress(t, 5, 30*time.Second)
	group := specs[0].group(0)
	primary, view, err := c.WaitPrimary(group, 0, 10*time.Second)
	must(t, err, "primary")
	t.Logf("%s: pausing primary node %d (view %d)", group, primary, view)
	must(t, c.Pause(primary), "SIGSTOP")
	w.waitProgress(t, 10, 60*time.Second)
	newPrimary, newView, err := c.WaitPrimary(group, view+1, 30*time.Second)
	must(t, err, "view change while the primary is paused")
	must(t, c.Resume(primary), "SIGCONT")
	t.Logf("%s: primary node %d in view %d; resumed node %d", group, newPrimary, newView, primary)
	w.waitProgress(t, 10, 60*time.Second)

	backup := 0
	for backup == newPrimary || backup == primary {
		backup++
	}
	must(t, c.Pause(backup), "SIGSTOP backup")
	w.waitProgress(t, 10, 60*time.Second)
	must(t, c.Resume(backup), "SIGCONT backup")
	w.waitProgress(t, 5, 60*time.Second)
	w.halt()
	t.Logf("load:%s", w.summary())
	w.verify(t, "after pausing the primary and a backup")
	w.nextOffsetCheck(t, primary, "after pauses")
	w.verify(t, "after the next send")
}
