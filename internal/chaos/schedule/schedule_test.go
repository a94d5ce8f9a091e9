package schedule

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func params(seed int64, nodes int) Params {
	return Params{Seed: seed, Duration: time.Minute, Nodes: nodes, Kinds: Kinds, Interval: 2 * time.Second, Length: time.Second, AllowTotal: false}
}

func TestDeterministic(t *testing.T) {
	a, err := Generate(params(7, 3))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(params(7, 3))
	c, _ := Generate(params(8, 3))
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different schedules")
	}
	if reflect.DeepEqual(a.Faults, c.Faults) {
		t.Error("different seeds, same schedule")
	}
	if len(a.Faults) < 5 {
		t.Errorf("only %d faults in a minute with a 2 s mean interval", len(a.Faults))
	}
}

func TestInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := Params{
			Seed:       rapid.Int64().Draw(t, "seed"),
			Duration:   time.Duration(rapid.IntRange(1, 120).Draw(t, "seconds")) * time.Second,
			Nodes:      rapid.IntRange(1, 5).Draw(t, "nodes"),
			Kinds:      rapid.SliceOfNDistinct(rapid.SampledFrom(Kinds), 1, len(Kinds), func(k Kind) Kind { return k }).Draw(t, "kinds"),
			Interval:   time.Duration(rapid.IntRange(1, 5000).Draw(t, "interval ms")) * time.Millisecond,
			Length:     time.Duration(rapid.IntRange(1, 5000).Draw(t, "length ms")) * time.Millisecond,
			AllowTotal: rapid.Bool().Draw(t, "total"),
		}
		s, err := Generate(p)
		if err != nil {
			t.Fatal(err)
		}
		f := max((p.Nodes-1)/2, 0)
		var prev *Fault
		for i := range s.Faults {
			x := &s.Faults[i]
			if !slices.Contains(p.Kinds, x.Kind) {
				t.Fatalf("fault %v of a kind not asked for", x)
			}
			if x.Total != (x.Kind == KillAll || len(x.Nodes) > f) {
				t.Fatalf("fault %v: Total %v", x, x.Total)
			}
			if x.Total && !p.AllowTotal {
				t.Fatalf("total fault %v without AllowTotal", x)
			}
			if (x.Kind.Network() && x.Kind != Isolate || x.Kind == Wipe) && p.Nodes < 2 {
				t.Fatalf("%v on a single node", x)
			}
			if x.End-x.Start < min(200*time.Millisecond, p.Duration-x.Start) {
				t.Fatalf("fault %v shorter than the minimum", x)
			}
			if prev != nil {
				if x.Start <= prev.End {
					t.Fatalf("faults %v and %v overlap", prev, x)
				}
				if prev.Kind.Restarts() && x.Start-prev.End < time.Second {
					t.Fatalf("fault %v does not let the restart of %v settle", x, prev)
				}
			}
			prev = x
		}
		steps := s.Steps()
		if len(steps) != 2*len(s.Faults) {
			t.Fatalf("%d steps for %d faults", len(steps), len(s.Faults))
		}
		down := map[int]bool{}
		for i, st := range steps {
			if i > 0 && st.At < steps[i-1].At {
				t.Fatal("steps out of order")
			}
			for _, n := range st.Fault.Nodes {
				if st.Heal {
					delete(down, n)
				} else {
					down[n] = true
				}
			}
			if !st.Heal && !st.Fault.Total && len(down) > f {
				t.Fatalf("%d nodes faulty at %v, tolerance %d", len(down), st.At, f)
			}
		}
	})
}

func TestKindsByClusterSize(t *testing.T) {
	single := params(1, 1)
	s, _ := Generate(single)
	if len(s.Faults) != 0 {
		t.Errorf("a single node without AllowTotal got faults: %v", s.Faults)
	}
	single.AllowTotal = true
	s, _ = Generate(single)
	kinds := map[Kind]bool{}
	for _, f := range s.Faults {
		kinds[f.Kind] = true
		if !f.Total {
			t.Errorf("fault %v on a single node is not total", f)
		}
	}
	for _, k := range []Kind{Partition, PartitionOneWay, Wipe} {
		if kinds[k] {
			t.Errorf("single node drew %s", k)
		}
	}
	if !kinds[Kill] || !kinds[Pause] || !kinds[Isolate] {
		t.Errorf("single node kinds drawn: %v", kinds)
	}

	three := params(3, 3)
	s, _ = Generate(three)
	kinds = map[Kind]bool{}
	for _, f := range s.Faults {
		kinds[f.Kind] = true
		if len(f.Nodes) != 1 || f.Total {
			t.Errorf("3-node fault %v", f)
		}
		if f.Kind == Partition && len(f.Peers) != 2 {
			t.Errorf("partition %v must cut the node from both peers", f)
		}
		if f.Kind == PartitionOneWay && f.Direction != "in" && f.Direction != "out" {
			t.Errorf("one-way partition %v without direction", f)
		}
		if f.Kind == Corrupt && (f.Mode == "" || f.Seed == 0) {
			t.Errorf("corruption %v without mode or seed", f)
		}
	}
	if kinds[KillAll] {
		t.Error("kill-all without AllowTotal")
	}
	if len(kinds) < 6 {
		t.Errorf("3-node kinds drawn in a minute: %v", kinds)
	}
	three.AllowTotal = true
	three.Kinds = []Kind{KillAll}
	s, _ = Generate(three)
	if len(s.Faults) == 0 || !reflect.DeepEqual(s.Faults[0].Nodes, []int{0, 1, 2}) || !s.Faults[0].Total {
		t.Errorf("kill-all: %v", s.Faults)
	}
}

func TestValidateRejects(t *testing.T) {
	base := Schedule{Params: Params{Duration: 10 * time.Second, Nodes: 3, MaxFaulty: 1}}
	cases := map[string][]Fault{
		"overlap":    {{Kind: Kill, Nodes: []int{0}, Start: 1e9, End: 3e9}, {Kind: Kill, Nodes: []int{1}, Start: 2e9, End: 4e9}},
		"past end":   {{Kind: Kill, Nodes: []int{0}, Start: 1e9, End: 11e9}},
		"empty":      {{Kind: Kill, Start: 1e9, End: 2e9}},
		"two down":   {{Kind: Kill, Nodes: []int{0, 1}, Start: 1e9, End: 2e9}},
		"total":      {{Kind: KillAll, Nodes: []int{0, 1, 2}, Start: 1e9, End: 2e9, Total: true}},
		"bad node":   {{Kind: Kill, Nodes: []int{3}, Start: 1e9, End: 2e9}},
		"bad peer":   {{Kind: Partition, Nodes: []int{0}, Peers: []int{-1}, Start: 1e9, End: 2e9}},
		"zero width": {{Kind: Kill, Nodes: []int{0}, Start: 1e9, End: 1e9}},
	}
	for name, faults := range cases {
		s := base
		s.Faults = faults
		if err := s.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Generate(Params{Nodes: 0, Duration: time.Second}); err == nil {
		t.Error("zero nodes accepted")
	}
	if _, err := Generate(Params{Nodes: 1}); err == nil {
		t.Error("zero duration accepted")
	}
}

func TestParseKinds(t *testing.T) {
	k, err := ParseKinds("kill, pause,kill")
	if err != nil || !reflect.DeepEqual(k, []Kind{Kill, Pause}) {
		t.Errorf("%v %v", k, err)
	}
	if k, _ := ParseKinds("all"); len(k) != len(Kinds) {
		t.Errorf("all = %v", k)
	}
	if _, err := ParseKinds("kill,melt"); err == nil {
		t.Error("unknown kind accepted")
	}
	if k, err := ParseKinds(""); err != nil || len(k) != 0 {
		t.Errorf("empty: %v %v", k, err)
	}
}

func TestStepsHealBeforeInjectAtSameInstant(t *testing.T) {
	s := Schedule{Params: Params{Duration: 10 * time.Second, Nodes: 3, MaxFaulty: 1}, Faults: []Fault{
		{ID: 1, Kind: Pause, Nodes: []int{0}, Start: 1e9, End: 2e9},
		{ID: 2, Kind: Pause, Nodes: []int{1}, Start: 2e9 + 1, End: 3e9},
	}}
	steps := s.Steps()
	want := []struct {
		id   int
		heal bool
	}{{1, false}, {1, true}, {2, false}, {2, true}}
	for i, w := range want {
		if steps[i].Fault.ID != w.id || steps[i].Heal != w.heal {
			t.Errorf("step %d = %+v", i, steps[i])
		}
	}
	if s.Downtime() != 2e9-1 {
		t.Errorf("downtime %v", s.Downtime())
	}
}
