package shard

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseCPUAllocation(t *testing.T) {
	cases := []struct {
		in   string
		want CPUAllocation
		str  string
	}{
		{"all", CPUAllocation{Kind: AllocAll}, "all"},
		{" all ", CPUAllocation{Kind: AllocAll}, "all"},
		{"4", CPUAllocation{Kind: AllocCount, Count: 4}, "4"},
		{"2..6", CPUAllocation{Kind: AllocRange, Start: 2, End: 6}, "2..6"},
		{"0..1", CPUAllocation{Kind: AllocRange, Start: 0, End: 1}, "0..1"},
		{"numa:auto", CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{NoHT: true}}, "numa:auto"},
		{"numa:nodes=0,1;cores=4;no_ht=true", CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{Nodes: []int{0, 1}, CoresPerNode: 4, NoHT: true}}, "numa:nodes=0,1;cores=4;no_ht=true"},
		{"numa:nodes=1", CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{Nodes: []int{1}, NoHT: true}}, "numa:nodes=1;cores=0;no_ht=true"},
		{"numa:no_ht=false", CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{}}, "numa:cores=0;no_ht=false"},
		{"numa:cores=2", CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{CoresPerNode: 2, NoHT: true}}, "numa:cores=2;no_ht=true"},
	}
	for _, c := range cases {
		got, err := ParseCPUAllocation(c.in)
		if err != nil {
			t.Fatalf("ParseCPUAllocation(%q): %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseCPUAllocation(%q) = %+v, want %+v", c.in, got, c.want)
		}
		if got.String() != c.str {
			t.Errorf("String() = %q, want %q", got.String(), c.str)
		}
		back, err := ParseCPUAllocation(got.String())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("round trip of %q: %+v, %v", got.String(), back, err)
		}
	}
}

func TestParseCPUAllocationErrors(t *testing.T) {
	cases := []struct{ in, rule string }{
		{"", "empty value"},
		{"0", "must be at least 1"},
		{"-3", "is not all, a count"},
		{"abc", "is not all, a count"},
		{"6..2", "start must be less than end"},
		{"3..3", "start must be less than end"},
		{"1..2..3", "must be start..end"},
		{"x..4", "start"},
		{"1..y", "end"},
		{"numa:", `needs "auto"`},
		{"numa:nodes", "must be key=value"},
		{"numa:nodes=0,a", "numa nodes"},
		{"numa:nodes=0,0", "listed twice"},
		{"numa:cores=x", "numa cores"},
		{"numa:no_ht=maybe", "numa no_ht"},
		{"numa:sockets=2", "unknown numa parameter"},
		{"numa:cores=1;cores=2", "given twice"},
		{"99999999", "is not all, a count"},
	}
	for _, c := range cases {
		_, err := ParseCPUAllocation(c.in)
		if err == nil {
			t.Errorf("ParseCPUAllocation(%q) accepted", c.in)
			continue
		}
		if !errors.Is(err, ErrCPUAllocation) || !strings.Contains(err.Error(), "sharding.cpu_allocation") {
			t.Errorf("error %q for %q does not name the key", err, c.in)
		}
		if !strings.Contains(err.Error(), c.rule) {
			t.Errorf("ParseCPUAllocation(%q) = %q, want rule %q", c.in, err, c.rule)
		}
	}
}

func TestCPUAllocationUnmarshalTOML(t *testing.T) {
	cases := []struct {
		raw  string
		want string
		err  string
	}{
		{`4`, "4", ""},
		{`"4"`, "4", ""},
		{`'2..4'`, "2..4", ""},
		{`"numa:auto"`, "numa:auto", ""},
		{`0`, "", "must be between 1"},
		{`1.5`, "", "neither an integer nor a string"},
		{`true`, "", "neither an integer nor a string"},
	}
	for _, c := range cases {
		var a CPUAllocation
		err := a.UnmarshalTOML([]byte(c.raw))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("UnmarshalTOML(%s) = %v, want %q", c.raw, err, c.err)
			}
			continue
		}
		if err != nil || a.String() != c.want {
			t.Errorf("UnmarshalTOML(%s) = %q, %v; want %q", c.raw, a.String(), err, c.want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		err  bool
	}{
		{"0-3,8-11\n", []int{0, 1, 2, 3, 8, 9, 10, 11}, false},
		{"5", []int{5}, false},
		{"", nil, false},
		{"3,1,1-2", []int{1, 2, 3}, false},
		{"4-2", nil, true},
		{"a", nil, true},
		{"1-", nil, true},
	}
	for _, c := range cases {
		got, err := ParseCPUList(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v", c.in, got, err)
		}
	}
	if s := FormatCPUList([]int{11, 0, 1, 2, 3, 8, 9, 10}); s != "0-3,8-11" {
		t.Errorf("FormatCPUList = %q", s)
	}
	if s := FormatCPUList([]int{0, 2, 4}); s != "0,2,4" {
		t.Errorf("FormatCPUList = %q", s)
	}
}

// fakeSys builds a sysfs tree: two NUMA nodes, four physical cores each, two
// hyperthreads per core. Node 0 has CPUs 0-3 and their siblings 8-11; node 1
// has 4-7 and 12-15.
func fakeSys() fstest.MapFS {
	fsys := fstest.MapFS{
		"node/node0/cpulist": {Data: []byte("0-3,8-11\n")},
		"node/node1/cpulist": {Data: []byte("4-7,12-15\n")},
		"node/node2/cpulist": {Data: []byte("\n")}, // memory-only node
		"node/online":        {Data: []byte("0-2\n")},
		"cpu/online":         {Data: []byte("0-15\n")},
	}
	for c := 0; c < 8; c++ {
		fsys[fmt.Sprintf("cpu/cpu%d/topology/thread_siblings_list", c)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d,%d\n", c, c+8))}
		fsys[fmt.Sprintf("cpu/cpu%d/topology/thread_siblings_list", c+8)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("%d,%d\n", c, c+8))}
	}
	return fsys
}

func TestReadTopology(t *testing.T) {
	topo, err := ReadTopology(fakeSys())
	if err != nil {
		t.Fatal(err)
	}
	want := []NUMANode{{0, []int{0, 1, 2, 3, 8, 9, 10, 11}}, {1, []int{4, 5, 6, 7, 12, 13, 14, 15}}}
	if !reflect.DeepEqual(topo.Nodes, want) {
		t.Fatalf("nodes = %+v", topo.Nodes)
	}
	if !slices.Equal(topo.Siblings[9], []int{1, 9}) || topo.coreOf(9) != 1 || topo.coreOf(4) != 4 {
		t.Fatalf("siblings of 9 = %v, core %d", topo.Siblings[9], topo.coreOf(9))
	}

	// No NUMA directory and no siblings: degrades to no nodes, every CPU its
	// own core.
	bare, err := ReadTopology(fstest.MapFS{"cpu/online": {Data: []byte("0-3")}})
	if err != nil || len(bare.Nodes) != 0 || bare.coreOf(3) != 3 {
		t.Fatalf("bare topology = %+v, %v", bare, err)
	}
	if _, err := ReadTopology(fstest.MapFS{"node/node0/cpulist": {Data: []byte("zz")}}); err == nil {
		t.Fatal("malformed cpulist accepted")
	}
}

func TestReadSysTopologyOnThisMachine(t *testing.T) {
	topo, err := ReadSysTopology()
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := Resolve(CPUAllocation{Kind: AllocNUMA, NUMA: NUMAConfig{NoHT: false}}, topo, AllowedCPUs())
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) == 0 {
		t.Fatal("numa:no_ht=false resolved to no CPUs on this machine")
	}
}

func TestResolve(t *testing.T) {
	topo, err := ReadTopology(fakeSys())
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, 16)
	for i := range all {
		all[i] = i
	}
	mustParse := func(s string) CPUAllocation {
		a, err := ParseCPUAllocation(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cases := []struct {
		alloc   string
		allowed []int
		topo    Topology
		want    []int
		err     string
	}{
		{"all", all, topo, all, ""},
		{"all", []int{5, 3, 3}, topo, []int{3, 5}, ""},
		{"all", nil, topo, nil, "empty affinity mask"},
		{"4", all, topo, []int{0, 1, 2, 3}, ""},
		{"2", []int{6, 7, 9}, topo, []int{6, 7}, ""},
		{"8", []int{0, 1}, topo, nil, "count 8 exceeds the 2 cores this process may use"},
		{"2..5", all, topo, []int{2, 3, 4}, ""},
		{"2..5", []int{2, 4, 5}, topo, nil, "CPU 3 is outside the set this process may use"},
		{"0..4", []int{0, 1}, topo, nil, "asks for 4 cores but this process may use 2"},
		{"numa:auto", all, topo, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"numa:no_ht=false", all, topo, []int{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15}, ""},
		{"numa:nodes=1;cores=2", all, topo, []int{4, 5}, ""},
		{"numa:nodes=1,0;cores=1", all, topo, []int{4, 0}, ""},
		// CPU 0 forbidden: its sibling 8 stands in for core 0.
		{"numa:nodes=0", []int{1, 2, 3, 8, 9}, topo, []int{1, 2, 3, 8}, ""},
		{"numa:nodes=0;cores=5", all, topo, nil, "numa node 0 has 4 usable cores (no_ht=true), cores=5 requested"},
		{"numa:nodes=0;cores=5;no_ht=false", all, topo, []int{0, 1, 2, 3, 8}, ""},
		{"numa:nodes=3", all, topo, nil, "numa node 3 does not exist"},
		{"numa:nodes=2", all, topo, nil, "numa node 2 does not exist"},
		{"numa:nodes=1", []int{0, 1}, topo, nil, "numa node 1 has no CPU this process may use"},
		// Auto skips nodes the process may not use.
		{"numa:auto", []int{12, 13}, topo, []int{12, 13}, ""},
		// No NUMA information: one node holding the allowed set.
		{"numa:auto", []int{0, 1, 2}, Topology{}, []int{0, 1, 2}, ""},
		{"numa:nodes=1", []int{0, 1, 2}, Topology{}, nil, "numa node 1 does not exist"},
	}
	for _, c := range cases {
		got, err := Resolve(mustParse(c.alloc), c.topo, c.allowed)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "sharding.cpu_allocation: ") {
				t.Errorf("Resolve(%q, allowed %v) = %v, %v; want error %q", c.alloc, c.allowed, got, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Resolve(%q, allowed %v) = %v, %v; want %v", c.alloc, c.allowed, got, err, c.want)
		}
	}
}

func TestResolveRejectsUnparsedBadValues(t *testing.T) {
	// Values built in code rather than parsed are still checked.
	if _, err := Resolve(CPUAllocation{Kind: AllocCount, Count: 0}, Topology{}, []int{0}); err == nil {
		t.Error("count 0 accepted")
	}
	if _, err := Resolve(CPUAllocation{Kind: AllocRange, Start: 3, End: 1}, Topology{}, []int{0, 1, 2, 3}); err == nil {
		t.Error("reversed range accepted")
	}
}

func TestAllowedCPUsAndPinning(t *testing.T) {
	allowed := AllowedCPUs()
	if len(allowed) == 0 || !slices.IsSorted(allowed) {
		t.Fatalf("AllowedCPUs = %v", allowed)
	}
	target := allowed[len(allowed)-1]
	done := make(chan error, 1)
	go func() {
		if err := PinCurrentThread(target); err != nil {
			done <- err
			return
		}
		got, err := currentThreadCPUs()
		if err == nil && !slices.Equal(got, []int{target}) {
			err = fmt.Errorf("thread affinity %v after pinning to %d", got, target)
		}
		done <- err
		// The goroutine exits still locked, so its OS thread (with the
		// narrowed mask) is discarded rather than reused.
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := func() error {
		errc := make(chan error, 1)
		go func() { errc <- PinCurrentThread(1 << 20) }()
		return <-errc
	}(); err == nil {
		t.Fatal("pinning to CPU 1<<20 succeeded")
	}
}

func FuzzParseCPUAllocation(f *testing.F) {
	for _, s := range []string{"all", "4", "2..6", "numa:auto", "numa:nodes=0,1;cores=4;no_ht=true", "numa:no_ht=false", "1..2..3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseCPUAllocation(s)
		if err != nil {
			return
		}
		back, err := ParseCPUAllocation(a.String())
		if err != nil || !reflect.DeepEqual(back, a) {
			t.Fatalf("%q → %q → %+v, %v", s, a.String(), back, err)
		}
		// Resolution never panics and never returns a CPU outside the set.
		allowed := []int{0, 1, 2, 5}
		cpus, err := Resolve(a, Topology{}, allowed)
		if err != nil {
			return
		}
		for _, c := range cpus {
			if !slices.Contains(allowed, c) {
				t.Fatalf("%q resolved to CPU %d outside %v", s, c, allowed)
			}
		}
	})
}

func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8-11", "5", "", "1,3-4\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err != nil || len(cpus) == 0 {
			return
		}
		back, err := ParseCPUList(FormatCPUList(cpus))
		if err != nil || !slices.Equal(back, cpus) {
			t.Fatalf("%q → %v → %q → %v, %v", s, cpus, FormatCPUList(cpus), back, err)
		}
	})
}
