package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/iggo/iggo/internal/chaos/fault"
	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/internal/chaos/schedule"
)

// nemesis applies a schedule to a cluster and records every action. It
// also watches for nodes that exit without being killed (crashes): those
// are recorded as observed faults (a violation) and restarted so the run
// can go on. It is driven from one goroutine.
type nemesis struct {
	c      *cluster
	rec    *history.Recorder
	active map[int]schedule.Fault // injected, not healed, by fault id
	down   map[int]bool           // nodes the nemesis has stopped
	errs   []string
	// injected counts successful injections by kind.
	injected map[schedule.Kind]int
	// refilling holds the nodes whose data a destructive fault destroyed
	// and that have not been seen to hold again what was acknowledged;
	// holds (set by the runner) tells. See awaitRefilled.
	refilling map[int]bool
	holds     func(ctx context.Context, node int, want []uint64) bool
	acked     func() []uint64
}

// refillTimeout bounds how long a destructive fault waits for a node
// destroyed earlier to be refilled by its peers.
const refillTimeout = 60 * time.Second

// awaitRefilled runs before a destructive fault on nodes: every other node
// whose data an earlier destructive fault destroyed must first hold again
// everything acknowledged so far. Destroying a second replica's data while
// the first is still being refilled from its peers leaves one copy of what
// the others had acknowledged — with three nodes that is two failures, more
// than the schedule's MaxFaulty tolerates, and the cluster may lose data or
// stall for good (campaign seeds 1001 and 1007: a corruption or wipe hit a
// second node seconds after a wipe, before the wiped node caught up). A
// node that is not refilled within refillTimeout is reported as a fault
// error: catching up must not take that long.
func (n *nemesis) awaitRefilled(ctx context.Context, nodes []int) {
	if n.holds == nil || len(n.refilling) == 0 {
		return
	}
	want := n.acked()
	ids := make([]int, 0, len(n.refilling))
	for id := range n.refilling {
		if !slices.Contains(nodes, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		deadline := time.Now().Add(refillTimeout)
		for !n.holds(ctx, id, want) {
			if ctx.Err() != nil {
				return
			}
			if time.Now().After(deadline) {
				n.errs = append(n.errs, fmt.Sprintf("node %d not refilled by its peers within %v of a destructive fault", id, refillTimeout))
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			n.watch(ctx)
		}
		delete(n.refilling, id)
	}
}

func newNemesis(c *cluster, rec *history.Recorder) *nemesis {
	return &nemesis{c: c, rec: rec, active: map[int]schedule.Fault{}, down: map[int]bool{}, injected: map[schedule.Kind]int{}}
}

// run executes the steps relative to start until they are done or the
// phase ends, watching for crashes meanwhile. Actions run under ctx, not
// the phase: a heal that starts before the phase ends is carried out.
func (n *nemesis) run(ctx, phase context.Context, start time.Time, steps []schedule.Step) {
	for _, st := range steps {
		for {
			wait := st.At - time.Since(start)
			if wait <= 0 {
				break
			}
			select {
			case <-phase.Done():
				return
			case <-time.After(min(wait, 100*time.Millisecond)):
			}
			n.watch(ctx)
		}
		if phase.Err() != nil {
			return
		}
		if st.Heal {
			if _, ok := n.active[st.Fault.ID]; ok {
				n.heal(ctx, st.Fault)
			}
		} else {
			n.inject(ctx, st.Fault)
		}
		// The history so far reaches the disk at every fault step, so a
		// runner that dies mid-run leaves most of it behind.
		if err := n.rec.Flush(); err != nil {
			n.errs = append(n.errs, err.Error())
		}
	}
	for phase.Err() == nil {
		select {
		case <-phase.Done():
		case <-time.After(100 * time.Millisecond):
			n.watch(ctx)
		}
	}
}

func (n *nemesis) record(kind schedule.Kind, action string, nodes []int, destructive bool, detail string) *history.Pending {
	return n.rec.Invoke(history.NemesisProcess, history.Fault, history.Value{Fault: &history.FaultInfo{
		Kind: string(kind), Action: action, Nodes: nodes, Destructive: destructive, Detail: detail}})
}

func (n *nemesis) fail(h *history.Pending, f schedule.Fault, what string, err error) {
	n.errs = append(n.errs, fmt.Sprintf("%s %v: %v", what, f, err))
	h.Fail(-1, err, 0)
}

func (n *nemesis) inject(ctx context.Context, f schedule.Fault) {
	if f.Kind.Destructive() {
		n.awaitRefilled(ctx, f.Nodes)
		if n.refilling == nil {
			n.refilling = map[int]bool{}
		}
		for _, i := range f.Nodes {
			n.refilling[i] = true
		}
	}
	h := n.record(f.Kind, history.ActionStart, f.Nodes, f.Kind.Destructive(), f.Mode)
	detail, err := n.apply(ctx, f)
	if err != nil {
		n.fail(h, f, "inject", err)
		// Whatever half happened is undone at the next heal.
		n.active[f.ID] = f
		return
	}
	n.active[f.ID] = f
	n.injected[f.Kind]++
	h.OK(-1, history.Value{Fault: &history.FaultInfo{Kind: string(f.Kind), Action: history.ActionStart, Nodes: f.Nodes,
		Destructive: f.Kind.Destructive(), Detail: detail}})
}

func (n *nemesis) needNet() error {
	if n.c.net == nil {
		return fmt.Errorf("%w: no network injector (network %q)", fault.ErrUnsupported, n.c.netKind)
	}
	return nil
}

// apply injects f and returns a description of what it did.
func (n *nemesis) apply(ctx context.Context, f schedule.Fault) (string, error) {
	c := n.c
	kill := func() error {
		var errs []error
		for _, i := range f.Nodes {
			n.down[i] = true
			errs = append(errs, c.nodes[i].Kill())
		}
		return errors.Join(errs...)
	}
	switch f.Kind {
	case schedule.Kill, schedule.KillAll:
		return "", kill()
	case schedule.Pause:
		return "", c.nodes[f.Nodes[0]].Pause()
	case schedule.Wipe:
		if err := kill(); err != nil {
			return "", err
		}
		if c.opts.Nodes > 1 {
			// The heal restarts the node with --fresh, which wipes the
			// directory itself: a cluster node rejoins (no vote until it
			// caught up) only when --fresh finds its old data, and treats
			// an empty directory as a new member. Emptying it here made
			// the wiped replica take part as a new member with nothing,
			// leaving partitions empty for good (campaign seeds 1005,
			// 1020, 1027).
			return "restart with --fresh", nil
		}
		dir := c.nodes[f.Nodes[0]].DataDir()
		if dir == "" {
			return "", fmt.Errorf("%w: node %d's data directory is not reachable", fault.ErrUnsupported, f.Nodes[0])
		}
		return "wiped " + dir, fault.Wipe(dir)
	case schedule.Corrupt:
		if err := kill(); err != nil {
			return "", err
		}
		dir := c.nodes[f.Nodes[0]].DataDir()
		if dir == "" {
			return "", fmt.Errorf("%w: node %d's data directory is not reachable", fault.ErrUnsupported, f.Nodes[0])
		}
		patterns := c.opts.CorruptFiles
		if patterns == nil {
			patterns = fault.DefaultDataFiles
		}
		cr, err := fault.Corrupt(dir, rand.New(rand.NewPCG(f.Seed, uint64(f.ID))), fault.CorruptMode(f.Mode), patterns)
		return cr.String(), err
	case schedule.Partition:
		if err := n.needNet(); err != nil {
			return "", err
		}
		for _, p := range f.Peers {
			if err := errors.Join(c.net.Block(f.Nodes[0], p), c.net.Block(p, f.Nodes[0])); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("node %d <-/-> %v", f.Nodes[0], f.Peers), nil
	case schedule.PartitionOneWay:
		if err := n.needNet(); err != nil {
			return "", err
		}
		for _, p := range f.Peers {
			from, to := f.Nodes[0], p
			if f.Direction == "in" {
				from, to = p, f.Nodes[0]
			}
			if err := c.net.Block(from, to); err != nil {
				return "", err
			}
		}
		if f.Direction == "in" {
			return fmt.Sprintf("%v -/-> node %d", f.Peers, f.Nodes[0]), nil
		}
		return fmt.Sprintf("node %d -/-> %v", f.Nodes[0], f.Peers), nil
	case schedule.Isolate:
		if err := n.needNet(); err != nil {
			return "", err
		}
		return "", c.net.Isolate(f.Nodes[0])
	}
	return "", fmt.Errorf("chaos: unknown fault kind %q", f.Kind)
}

func (n *nemesis) heal(ctx context.Context, f schedule.Fault) {
	delete(n.active, f.ID)
	h := n.record(f.Kind, history.ActionHeal, f.Nodes, false, "")
	var errs []error
	c := n.c
	switch {
	case f.Kind.Restarts():
		// Start them all before waiting: a cluster node serves only
		// with a quorum running.
		var started []int
		for _, i := range f.Nodes {
			if c.procs[i].Running() {
				continue // the injection failed before killing it
			}
			delete(n.down, i)
			if err := c.nodes[i].Start(f.Kind == schedule.Wipe); err != nil {
				errs = append(errs, err)
				continue
			}
			started = append(started, i)
		}
		for _, i := range started {
			errs = append(errs, c.waitReady(ctx, i))
		}
	case f.Kind == schedule.Pause:
		if c.procs[f.Nodes[0]].Paused() {
			errs = append(errs, c.nodes[f.Nodes[0]].Resume())
		}
	case f.Kind.Network():
		if c.net != nil {
			errs = append(errs, c.net.Heal())
		}
	}
	if err := errors.Join(errs...); err != nil {
		n.fail(h, f, "heal", err)
		return
	}
	h.OK(-1, history.Value{})
}

// healAll heals what is still active, then makes sure every node runs,
// none is paused and the network is whole.
func (n *nemesis) healAll(ctx context.Context) {
	ids := make([]int, 0, len(n.active))
	for id := range n.active {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		n.heal(ctx, n.active[id])
	}
	if n.c.net != nil {
		if err := n.c.net.Heal(); err != nil {
			n.errs = append(n.errs, "final network heal: "+err.Error())
		}
	}
	for i, p := range n.c.procs {
		if p.Paused() {
			if err := p.Resume(); err != nil {
				n.errs = append(n.errs, fmt.Sprintf("final resume of node %d: %v", i, err))
			}
		}
	}
	n.watch(ctx)
	var stopped []int
	for i, p := range n.c.procs {
		if !p.Running() {
			stopped = append(stopped, i)
			delete(n.down, i)
		}
	}
	if len(stopped) > 0 {
		if err := n.c.startAll(ctx, stopped); err != nil {
			n.errs = append(n.errs, fmt.Sprintf("final start of nodes %v: %v", stopped, err))
		}
	}
}

// watch records nodes that exited although the nemesis did not stop them,
// and restarts them.
func (n *nemesis) watch(ctx context.Context) {
	for i, p := range n.c.procs {
		if n.down[i] {
			continue
		}
		exited, err := p.Exited()
		if !exited {
			continue
		}
		detail := fmt.Sprintf("%v; log %s:\n%s", err, p.Spec().LogPath, tail(p.Spec().LogPath, 10))
		h := n.rec.Invoke(history.MonitorProcess, history.Fault, history.Value{Fault: &history.FaultInfo{
			Kind: history.FaultCrash, Action: history.ActionObserved, Nodes: []int{i}, Detail: detail}})
		h.OK(i, history.Value{})
		n.errs = append(n.errs, fmt.Sprintf("node %d crashed: %v", i, err))
		if serr := n.c.start(ctx, i, false); serr != nil {
			n.errs = append(n.errs, fmt.Sprintf("restart of crashed node %d: %v", i, serr))
			n.down[i] = true // do not report it again
		}
	}
}
