package abuse

import (
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// guardRestart restarts node i of c (killed before) and returns how long it
// took until the node logged replica links up with every peer, and until it
// served a login and a ping (harness Restart).
func guardRestart(t *testing.T, c *harness.Cluster, i int, linked func()) (link, serve time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan time.Duration, 1)
	stop := make(chan struct{})
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			peers := guardLinkedPeers(c.Nodes[i])
			all := true
			for j := range c.Nodes {
				if j != i && !peers[j] {
					all = false
				}
			}
			if all {
				d := time.Since(start)
				if linked != nil {
					linked()
				}
				done <- d
				return
			}
		}
	}()
	c.Restart(i, false)
	serve = time.Since(start)
	select {
	case link = <-done:
	case <-time.After(60 * time.Second):
		close(stop)
		t.Fatalf("node %d serves but logged no replica link to every peer within 60 s of serving", i)
	}
	return link, serve
}

// TestGuardReplicaPlaneFloodDuringRestart: 80 sockets without the cluster
// key, from 20 source addresses that are not in the roster, hold the
// replica port of a node while it restarts (each socket redials the moment
// the node closes it). The node must still link with both peers within its
// normal time and serve clients while the flood is on, close every pre-hello
// socket at its deadline, and log its refusals rate-limited.
func TestGuardReplicaPlaneFloodDuringRestart(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{Nodes: 3, ReadyTimeout: 75 * time.Second})
	const victim = 2 // the highest id: both peers dial it, it dials nobody

	c.Kill(victim)
	normalLink, normalServe := guardRestart(t, c, victim, nil)
	t.Logf("restart without a flood: links up after %v, serving after %v", normalLink, normalServe)

	c.Kill(victim)
	const floodFor = 50 * time.Second
	sources := guardSources(20)
	f := guardStartFlood(t, c.ReplicaAddr(victim), sources, 80/len(sources), floodFor)
	floodStart := time.Now()
	time.Sleep(500 * time.Millisecond) // the flood dials a port nobody listens on yet
	var heldAtLink int64
	link, serve := guardRestart(t, c, victim, func() { heldAtLink = f.held.Load() })
	linkedAt := time.Since(floodStart)
	t.Logf("restart under a flood of %d sockets from %d addresses: links up after %v, serving after %v (flood sockets open at link time: %d, connects so far: %d, closed at once: %d)",
		80/len(sources)*len(sources), len(sources), link, serve, heldAtLink, f.dials.Load(), f.refused.Load())
	if linkedAt >= floodFor-time.Second || heldAtLink == 0 {
		t.Fatalf("the node linked only after the flood ended (%v into a %v flood, %d flood sockets open)", linkedAt, floodFor, heldAtLink)
	}
	// Keep the flood on a while longer: the pre-hello deadline must close
	// every idle socket well before handshake_grace (10 s).
	time.Sleep(6 * time.Second)
	f.Stop()
	held := f.maxHeld()
	t.Logf("longest a flood socket stayed open: %v; connects in all: %d", held, f.dials.Load())
	if held > 6*time.Second {
		t.Fatalf("a pre-hello socket stayed open %v; the hello deadline should close it within a few seconds", held)
	}
	out := guardSinceLastRun(c.Nodes[victim].Output())
	lines := guardCountLines(out, "replica plane refused a connection")
	elapsed := time.Since(floodStart)
	// One line per reason per 10 s (plane.DefaultLogInterval), a handful of
	// reasons at most.
	if bound := 5 * (int(elapsed/(10*time.Second)) + 2); lines > bound {
		t.Fatalf("%d refusal log lines in %v, want at most %d (rate-limited per reason)", lines, elapsed, bound)
	}
	t.Logf("refusal log lines during %v of flood: %d", elapsed.Round(time.Second), lines)
	// The cluster still serves through the restarted node.
	cl := guardDial(t, c.Addr(victim), "iggy", "iggy")
	guardMust(t, cl.Ping(guardCtx(t, 10*time.Second)), "ping the restarted node")
}
