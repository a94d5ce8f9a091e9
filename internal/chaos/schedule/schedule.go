// Package schedule draws the fault schedule of a chaos run from a seed.
//
// A schedule is a list of faults, each an interval [Start, End) of the
// workload phase during which one kind of fault holds on some nodes. The
// same Params give the same schedule, so a failing run can be replayed
// (the workload's interleavings are not deterministic; the faults are).
//
// Faults never overlap in time and, unless AllowTotal, never affect more
// than MaxFaulty nodes, (n-1)/2 by default: a 3-node cluster loses at most
// one node at a time, which it must survive without losing acknowledged
// data or availability beyond the fault. Total faults (kill-all, or any
// fault on a cluster whose MaxFaulty is 0, such as a single node) are drawn
// only when AllowTotal is set. After a fault that restarts a node, the next
// fault waits at least Settle, so a recovering node is not counted healthy
// the instant it starts.
package schedule

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kind is a fault kind.
type Kind string

// Fault kinds.
const (
	// Kill: SIGKILL the node; restart it at the end.
	Kill Kind = "kill"
	// Pause: SIGSTOP the node; SIGCONT at the end.
	Pause Kind = "pause"
	// Wipe: kill the node and delete its data directory; restart it with
	// --fresh at the end, to rebuild from its peers. Destructive; never
	// drawn for a single node, which has nothing to rebuild from.
	Wipe Kind = "wipe"
	// Corrupt: kill the node and damage one of its data files (Mode);
	// restart it at the end. Destructive.
	Corrupt Kind = "corrupt"
	// Partition: cut the node off from its peers both ways; clients still
	// reach it.
	Partition Kind = "partition"
	// PartitionOneWay: drop the node's traffic to its peers (Direction
	// "out") or its peers' traffic to it ("in").
	PartitionOneWay Kind = "partition-oneway"
	// Isolate: cut the node off from everyone, clients included.
	Isolate Kind = "isolate"
	// KillAll: SIGKILL every node, restart them all at the end. Total.
	KillAll Kind = "kill-all"
)

// Kinds lists every kind.
var Kinds = []Kind{Kill, Pause, Wipe, Corrupt, Partition, PartitionOneWay, Isolate, KillAll}

// Destructive reports whether the kind destroys data on its nodes.
func (k Kind) Destructive() bool { return k == Wipe || k == Corrupt }

// Restarts reports whether the kind ends with nodes booting again.
func (k Kind) Restarts() bool { return k == Kill || k == Wipe || k == Corrupt || k == KillAll }

// Network reports whether the kind needs a network injector.
func (k Kind) Network() bool { return k == Partition || k == PartitionOneWay || k == Isolate }

// ParseKinds parses a comma-separated list of kinds ("all" for every kind).
func ParseKinds(s string) ([]Kind, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(Kinds), nil
	}
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(Kinds, Kind(f)) {
			return nil, fmt.Errorf("schedule: unknown fault kind %q (known: %v)", f, Kinds)
		}
		if !slices.Contains(out, Kind(f)) {
			out = append(out, Kind(f))
		}
	}
	return out, nil
}

// CorruptModes are the modes a Corrupt fault draws from (package fault's
// names).
var CorruptModes = []string{"flip", "truncate", "torn-tail", "zero-block"}

// Params are the inputs of Generate.
type Params struct {
	Seed     int64         `json:"seed"`
	Duration time.Duration `json:"duration"`
	Nodes    int           `json:"nodes"`
	Kinds    []Kind        `json:"kinds"`
	// Interval is the mean quiet time before each fault; Length the mean
	// length of a fault (both exponential, Length at least MinLength).
	Interval  time.Duration `json:"interval"`
	Length    time.Duration `json:"length"`
	MinLength time.Duration `json:"min_length"`
	// Settle is the least quiet time after a fault that restarts nodes.
	Settle time.Duration `json:"settle"`
	// MaxFaulty bounds the nodes a non-total fault affects; 0 means
	// (Nodes-1)/2, or none when that is 0.
	MaxFaulty int `json:"max_faulty"`
	// AllowTotal permits faults beyond MaxFaulty: kill-all, and faults on
	// a cluster that cannot tolerate any (a single node).
	AllowTotal bool `json:"allow_total"`
}

// Fault is one scheduled fault.
type Fault struct {
	ID    int   `json:"id"`
	Kind  Kind  `json:"kind"`
	Nodes []int `json:"nodes"`
	Peers []int `json:"peers,omitempty"`
	// Direction of a one-way partition: "out" drops Nodes -> Peers, "in"
	// drops Peers -> Nodes.
	Direction string `json:"direction,omitempty"`
	// Mode of a corruption; Seed seeds its random choices.
	Mode  string        `json:"mode,omitempty"`
	Seed  uint64        `json:"seed,omitempty"`
	Start time.Duration `json:"start"`
	End   time.Duration `json:"end"`
	Total bool          `json:"total,omitempty"`
}

func (f Fault) String() string {
	s := fmt.Sprintf("#%d %s nodes %v [%v, %v)", f.ID, f.Kind, f.Nodes, f.Start, f.End)
	if len(f.Peers) > 0 {
		s += fmt.Sprintf(" peers %v", f.Peers)
	}
	if f.Direction != "" {
		s += " " + f.Direction
	}
	if f.Mode != "" {
		s += " " + f.Mode
	}
	return s
}

// Schedule is a generated schedule.
type Schedule struct {
	Params Params  `json:"params"`
	Faults []Fault `json:"faults"`
}

// Step is one action of a schedule: inject or heal a fault at At.
type Step struct {
	At    time.Duration
	Heal  bool
	Fault Fault
}

func (p *Params) normalize() error {
	if p.Nodes < 1 {
		return errors.New("schedule: at least one node")
	}
	if p.Duration <= 0 {
		return errors.New("schedule: duration must be positive")
	}
	if p.Interval <= 0 {
		p.Interval = 5 * time.Second
	}
	if p.Length <= 0 {
		p.Length = 3 * time.Second
	}
	if p.MinLength <= 0 {
		p.MinLength = 200 * time.Millisecond
	}
	if p.Settle <= 0 {
		p.Settle = time.Second
	}
	if p.MaxFaulty <= 0 {
		p.MaxFaulty = (p.Nodes - 1) / 2
	}
	return nil
}

// usable reports whether kind k can be drawn for the parameters.
func (p *Params) usable(k Kind) bool {
	switch {
	case k.Network() && k != Isolate && p.Nodes < 2:
		return false // no peers to cut from
	case k == Wipe && p.Nodes < 2:
		return false // nothing to rebuild from: every name and message is gone
	case k == KillAll:
		return p.AllowTotal
	case p.MaxFaulty < 1:
		return p.AllowTotal // any fault on a cluster without redundancy is total
	}
	return true
}

// Generate draws a schedule.
func Generate(p Params) (Schedule, error) {
	if err := p.normalize(); err != nil {
		return Schedule{}, err
	}
	var kinds []Kind
	for _, k := range p.Kinds {
		if p.usable(k) {
			kinds = append(kinds, k)
		}
	}
	s := Schedule{Params: p}
	if len(kinds) == 0 {
		return s, nil // nothing to inject: a fault-free run
	}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0x1660c4a05))
	exp := func(mean time.Duration) time.Duration {
		return time.Duration(rng.ExpFloat64() * float64(mean))
	}
	t := exp(p.Interval)
	for id := 1; t < p.Duration; id++ {
		f := Fault{ID: id, Kind: kinds[rng.IntN(len(kinds))], Start: t}
		f.End = min(t+max(exp(p.Length), p.MinLength), p.Duration)
		node := rng.IntN(p.Nodes)
		f.Nodes = []int{node}
		for i := 0; i < p.Nodes; i++ {
			if i != node {
				f.Peers = append(f.Peers, i)
			}
		}
		switch f.Kind {
		case KillAll:
			f.Nodes, f.Peers = allNodes(p.Nodes), nil
		case PartitionOneWay:
			f.Direction = []string{"out", "in"}[rng.IntN(2)]
		case Corrupt:
			f.Mode = CorruptModes[rng.IntN(len(CorruptModes))]
			f.Seed = rng.Uint64()
		}
		if !f.Kind.Network() {
			f.Peers = nil
		}
		f.Total = f.Kind == KillAll || len(f.Nodes) > p.MaxFaulty
		s.Faults = append(s.Faults, f)
		gap := exp(p.Interval)
		if f.Kind.Restarts() {
			gap = max(gap, p.Settle)
		}
		t = f.End + max(gap, time.Millisecond)
	}
	return s, s.Validate()
}

func allNodes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Validate checks the schedule's invariants: faults ordered and disjoint
// in time, inside the run, on existing nodes, within MaxFaulty unless
// total and allowed.
func (s Schedule) Validate() error {
	p := s.Params
	var prevEnd time.Duration
	for i, f := range s.Faults {
		switch {
		case f.Start < prevEnd || (i > 0 && f.Start == prevEnd):
			return fmt.Errorf("schedule: fault %v overlaps the previous one (ends %v)", f, prevEnd)
		case f.End <= f.Start || f.End > p.Duration:
			return fmt.Errorf("schedule: fault %v outside (start, duration %v]", f, p.Duration)
		case len(f.Nodes) == 0:
			return fmt.Errorf("schedule: fault %v affects no node", f)
		case f.Total && !p.AllowTotal:
			return fmt.Errorf("schedule: total fault %v without AllowTotal", f)
		case !f.Total && len(f.Nodes) > max(p.MaxFaulty, 0):
			return fmt.Errorf("schedule: fault %v affects %d nodes, at most %d tolerated", f, len(f.Nodes), p.MaxFaulty)
		}
		for _, n := range append(slices.Clone(f.Nodes), f.Peers...) {
			if n < 0 || n >= p.Nodes {
				return fmt.Errorf("schedule: fault %v names node %d of %d", f, n, p.Nodes)
			}
		}
		prevEnd = f.End
	}
	return nil
}

// Steps returns the inject and heal actions in time order.
func (s Schedule) Steps() []Step {
	var out []Step
	for _, f := range s.Faults {
		out = append(out, Step{At: f.Start, Fault: f}, Step{At: f.End, Heal: true, Fault: f})
	}
	slices.SortStableFunc(out, func(a, b Step) int {
		if a.At != b.At {
			return int(math.Copysign(1, float64(a.At-b.At)))
		}
		if a.Heal != b.Heal {
			if a.Heal {
				return -1 // heal before the next injection at the same instant
			}
			return 1
		}
		return 0
	})
	return out
}

// Downtime is the total time some fault holds.
func (s Schedule) Downtime() time.Duration {
	var d time.Duration
	for _, f := range s.Faults {
		d += f.End - f.Start
	}
	return d
}
