package shard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Topology is what cpu_allocation needs to know about the machine: which
// logical CPUs belong to which NUMA node, and which logical CPUs are
// hyperthread siblings of one physical core.
//
// It is read from sysfs (see ReadTopology) rather than from hwloc: the files
// are stable kernel ABI, need no cgo, and can be faked with an fs.FS in tests.
// Reading them is boot-time introspection, not storage I/O, so it does not go
// through shard/vfs.
type Topology struct {
	// Nodes is sorted by ID; each node's CPUs are sorted. Empty when the
	// machine exposes no NUMA information, which Resolve treats as one node
	// 0 holding every allowed CPU.
	Nodes []NUMANode
	// Siblings maps a logical CPU to every logical CPU of its physical core,
	// itself included, sorted. A CPU missing from the map is its own core.
	Siblings map[int][]int
}

// NUMANode is one memory node and its logical CPUs.
type NUMANode struct {
	ID   int
	CPUs []int
}

// SysfsRoot is where ReadSysTopology looks for node/ and cpu/.
const SysfsRoot = "/sys/devices/system"

// ReadSysTopology reads the running machine's topology from SysfsRoot.
func ReadSysTopology() (Topology, error) { return ReadTopology(os.DirFS(SysfsRoot)) }

// ReadTopology reads a topology from a tree shaped like /sys/devices/system:
//
//	node/node<N>/cpulist                      CPUs of NUMA node N, e.g. "0-3,8-11"
//	cpu/online                                online CPUs, e.g. "0-15"
//	cpu/cpu<K>/topology/thread_siblings_list  siblings of CPU K, e.g. "0,8"
//
// Missing pieces degrade instead of failing: no node/ directory (kernels
// without NUMA, some containers) yields no nodes, and a CPU without a
// siblings file is its own core. Only malformed contents are errors.
func ReadTopology(sys fs.FS) (Topology, error) {
	var t Topology
	entries, err := fs.ReadDir(sys, "node")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Topology{}, fmt.Errorf("shard: reading NUMA nodes: %w", err)
	}
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.Name(), "node")
		if !ok || !e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			continue
		}
		raw, err := fs.ReadFile(sys, path.Join("node", e.Name(), "cpulist"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return Topology{}, fmt.Errorf("shard: reading node %d cpulist: %w", n, err)
		}
		cpus, err := ParseCPUList(string(raw))
		if err != nil {
			return Topology{}, fmt.Errorf("shard: node %d cpulist: %w", n, err)
		}
		if len(cpus) == 0 {
			// Memory-only nodes (CXL, some NVDIMM setups) have no CPUs to pin.
			continue
		}
		t.Nodes = append(t.Nodes, NUMANode{ID: n, CPUs: cpus})
	}
	slices.SortFunc(t.Nodes, func(a, b NUMANode) int { return a.ID - b.ID })

	var cpus []int
	if raw, err := fs.ReadFile(sys, "cpu/online"); err == nil {
		if cpus, err = ParseCPUList(string(raw)); err != nil {
			return Topology{}, fmt.Errorf("shard: cpu/online: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Topology{}, fmt.Errorf("shard: reading cpu/online: %w", err)
	}
	for _, node := range t.Nodes {
		cpus = append(cpus, node.CPUs...)
	}
	slices.Sort(cpus)
	cpus = slices.Compact(cpus)
	for _, c := range cpus {
		raw, err := fs.ReadFile(sys, fmt.Sprintf("cpu/cpu%d/topology/thread_siblings_list", c))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return Topology{}, fmt.Errorf("shard: reading cpu %d siblings: %w", c, err)
		}
		sib, err := ParseCPUList(string(raw))
		if err != nil {
			return Topology{}, fmt.Errorf("shard: cpu %d siblings: %w", c, err)
		}
		if !slices.Contains(sib, c) {
			sib = append(sib, c)
			slices.Sort(sib)
		}
		if t.Siblings == nil {
			t.Siblings = map[int][]int{}
		}
		t.Siblings[c] = sib
	}
	return t, nil
}

// coreOf names the physical core of cpu by its lowest-numbered sibling.
func (t Topology) coreOf(cpu int) int {
	if sib := t.Siblings[cpu]; len(sib) > 0 {
		return sib[0]
	}
	return cpu
}

// ParseCPUList parses the kernel's CPU list format ("0-3,8,10-11", possibly
// with a trailing newline; empty means none) into sorted, distinct CPUs.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("malformed CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("malformed CPU list %q", s)
			}
		}
		if b > maxCPUIndex {
			return nil, fmt.Errorf("CPU %d in %q exceeds %d", b, s, maxCPUIndex)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList renders CPUs in the kernel's compact list format.
func FormatCPUList(cpus []int) string {
	if len(cpus) == 0 {
		return "none"
	}
	sorted := slices.Clone(cpus)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var b strings.Builder
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j == i {
			b.WriteString(strconv.Itoa(sorted[i]))
		} else {
			fmt.Fprintf(&b, "%d-%d", sorted[i], sorted[j])
		}
		i = j + 1
	}
	return b.String()
}

// Resolve turns a cpu_allocation into the CPUs the shards run on, one shard
// per returned CPU, shard i on CPUs[i]. allowed is the process's permitted CPU
// set (AllowedCPUs): every returned CPU is inside it, so pinning never asks
// the kernel for a CPU that cgroups, systemd AllowedCPUs= or taskset forbid.
//
// Rules, each failure naming the one it broke:
//   - all: every allowed CPU (at least one must exist);
//   - count N: 1 <= N <= len(allowed), the first N allowed CPUs;
//   - range a..b: a < b and every CPU in a..b-1 allowed;
//   - numa: each named node must exist and have an allowed CPU; with no_ht
//     only the lowest allowed sibling of each physical core counts; cores=K
//     needs K such CPUs on every used node.
//
// The same CPU list sizes the runtime whether or not pin_cores is set, so
// shard counts never exceed what the process may actually run in parallel.
func Resolve(a CPUAllocation, t Topology, allowed []int) ([]int, error) {
	allowed = slices.Clone(allowed)
	slices.Sort(allowed)
	allowed = slices.Compact(allowed)
	if len(allowed) == 0 {
		return nil, allocErr("this process may not run on any CPU (empty affinity mask)")
	}
	switch a.Kind {
	case AllocAll:
		return allowed, nil
	case AllocCount:
		if a.Count < 1 {
			return nil, allocErr("count %d must be at least 1", a.Count)
		}
		if a.Count > len(allowed) {
			return nil, allocErr("count %d exceeds the %d cores this process may use (%s)",
				a.Count, len(allowed), FormatCPUList(allowed))
		}
		return allowed[:a.Count], nil
	case AllocRange:
		if a.Start >= a.End {
			return nil, allocErr("range %d..%d: start must be less than end", a.Start, a.End)
		}
		if w := a.End - a.Start; w > len(allowed) {
			return nil, allocErr("range %d..%d asks for %d cores but this process may use %d (%s)",
				a.Start, a.End, w, len(allowed), FormatCPUList(allowed))
		}
		out := make([]int, 0, a.End-a.Start)
		for c := a.Start; c < a.End; c++ {
			if _, ok := slices.BinarySearch(allowed, c); !ok {
				return nil, allocErr("range %d..%d: CPU %d is outside the set this process may use (%s)",
					a.Start, a.End, c, FormatCPUList(allowed))
			}
			out = append(out, c)
		}
		return out, nil
	case AllocNUMA:
		return resolveNUMA(a.NUMA, t, allowed)
	}
	return nil, allocErr("unknown allocation kind %d", a.Kind)
}

func resolveNUMA(cfg NUMAConfig, t Topology, allowed []int) ([]int, error) {
	nodes := t.Nodes
	if len(nodes) == 0 {
		nodes = []NUMANode{{ID: 0, CPUs: allowed}}
	}
	byID := make(map[int]NUMANode, len(nodes))
	ids := make([]int, 0, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
		ids = append(ids, n.ID)
	}
	explicit := len(cfg.Nodes) > 0
	want := cfg.Nodes
	if !explicit {
		want = ids
	}
	var out []int
	for _, id := range want {
		node, ok := byID[id]
		if !ok {
			return nil, allocErr("numa node %d does not exist (nodes with CPUs: %s)", id, FormatCPUList(ids))
		}
		usable := usableCPUs(node.CPUs, allowed, t, cfg.NoHT)
		if len(usable) == 0 {
			if explicit {
				return nil, allocErr("numa node %d has no CPU this process may use (allowed: %s)", id, FormatCPUList(allowed))
			}
			continue
		}
		if cfg.CoresPerNode > 0 {
			if cfg.CoresPerNode > len(usable) {
				return nil, allocErr("numa node %d has %d usable cores (no_ht=%t), cores=%d requested",
					id, len(usable), cfg.NoHT, cfg.CoresPerNode)
			}
			usable = usable[:cfg.CoresPerNode]
		}
		out = append(out, usable...)
	}
	if len(out) == 0 {
		return nil, allocErr("no NUMA node has a CPU this process may use (allowed: %s)", FormatCPUList(allowed))
	}
	return out, nil
}

// usableCPUs is node ∩ allowed, reduced to one CPU per physical core when
// noHT is set.
func usableCPUs(nodeCPUs, allowed []int, t Topology, noHT bool) []int {
	var out []int
	seenCore := map[int]bool{}
	for _, c := range nodeCPUs {
		if _, ok := slices.BinarySearch(allowed, c); !ok {
			continue
		}
		if noHT {
			core := t.coreOf(c)
			if seenCore[core] {
				continue
			}
			seenCore[core] = true
		}
		out = append(out, c)
	}
	return out
}
