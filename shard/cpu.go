package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// AllocationKind says how cpu_allocation picks the shard CPUs.
type AllocationKind uint8

const (
	// AllocAll uses every CPU the process may run on.
	AllocAll AllocationKind = iota
	// AllocCount uses the first Count CPUs of the allowed set.
	AllocCount
	// AllocRange uses CPUs Start..End-1, each of which must be allowed.
	AllocRange
	// AllocNUMA picks CPUs node by node from the NUMA topology.
	AllocNUMA
)

// CPUAllocation is the parsed `sharding.cpu_allocation` setting. The zero
// value is "all".
//
// Accepted forms (TOML string unless noted):
//
//	"all"                                 every allowed CPU
//	4  or  "4"                            the first 4 allowed CPUs
//	"2..6"                                CPUs 2,3,4,5 (start < end)
//	"numa:auto"                           every node, every core, no hyperthread siblings
//	"numa:nodes=0,1;cores=4;no_ht=true"   semicolon-separated key=value; any key may be
//	                                      omitted: nodes (default all), cores per node
//	                                      (0 = all, default 0), no_ht (default true)
type CPUAllocation struct {
	Kind  AllocationKind
	Count int // AllocCount
	Start int // AllocRange, inclusive
	End   int // AllocRange, exclusive
	NUMA  NUMAConfig
}

// NUMAConfig is the node-aware form of cpu_allocation.
type NUMAConfig struct {
	// Nodes lists the NUMA node ids to use; empty means every node.
	Nodes []int
	// CoresPerNode is how many CPUs to take from each node; 0 takes all.
	CoresPerNode int
	// NoHT keeps one logical CPU per physical core (the lowest-numbered
	// allowed sibling), so two shards never share a core's execution units.
	NoHT bool
}

// ErrCPUAllocation is wrapped by every cpu_allocation parse or resolution
// error.
var ErrCPUAllocation = errors.New("sharding.cpu_allocation")

func allocErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCPUAllocation}, args...)...)
}

// ParseCPUAllocation parses the string form of cpu_allocation. Surrounding
// whitespace is ignored; keywords are case-sensitive, as in Iggy.
func ParseCPUAllocation(s string) (CPUAllocation, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return CPUAllocation{}, allocErr(`empty value; use "all", a count, "a..b" or "numa:..."`)
	case s == "all":
		return CPUAllocation{Kind: AllocAll}, nil
	case strings.HasPrefix(s, "numa:"):
		return parseNUMA(strings.TrimPrefix(s, "numa:"))
	case strings.Contains(s, ".."):
		parts := strings.Split(s, "..")
		if len(parts) != 2 {
			return CPUAllocation{}, allocErr("range %q must be start..end", s)
		}
		start, err := parseCPUIndex(parts[0])
		if err != nil {
			return CPUAllocation{}, allocErr("range %q: start: %v", s, err)
		}
		end, err := parseCPUIndex(parts[1])
		if err != nil {
			return CPUAllocation{}, allocErr("range %q: end: %v", s, err)
		}
		if start >= end {
			return CPUAllocation{}, allocErr("range %q: start must be less than end", s)
		}
		return CPUAllocation{Kind: AllocRange, Start: start, End: end}, nil
	default:
		n, err := parseCPUIndex(s)
		if err != nil {
			return CPUAllocation{}, allocErr("%q is not all, a count, a range a..b or numa:...", s)
		}
		return CountAllocation(n)
	}
}

// CountAllocation is the integer form; a count must be at least 1.
func CountAllocation(n int) (CPUAllocation, error) {
	if n < 1 {
		return CPUAllocation{}, allocErr("count %d must be at least 1", n)
	}
	return CPUAllocation{Kind: AllocCount, Count: n}, nil
}

// maxCPUIndex bounds parsed CPU numbers; it is far above any real machine and
// keeps a typo from asking for a billion shards.
const maxCPUIndex = 1 << 16

func parseCPUIndex(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a non-negative integer", s)
	}
	if n < 0 || n > maxCPUIndex {
		return 0, fmt.Errorf("%d is outside 0..%d", n, maxCPUIndex)
	}
	return n, nil
}

func parseNUMA(params string) (CPUAllocation, error) {
	cfg := NUMAConfig{NoHT: true}
	if params == "auto" {
		return CPUAllocation{Kind: AllocNUMA, NUMA: cfg}, nil
	}
	if params == "" {
		return CPUAllocation{}, allocErr(`"numa:" needs "auto" or key=value pairs, e.g. numa:nodes=0,1;cores=4;no_ht=true`)
	}
	seen := map[string]bool{}
	for _, param := range strings.Split(params, ";") {
		key, value, ok := strings.Cut(param, "=")
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if !ok || key == "" {
			return CPUAllocation{}, allocErr("numa parameter %q must be key=value (keys: nodes, cores, no_ht)", param)
		}
		if seen[key] {
			return CPUAllocation{}, allocErr("numa parameter %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "nodes":
			cfg.Nodes = cfg.Nodes[:0]
			for _, item := range strings.Split(value, ",") {
				n, err := parseCPUIndex(item)
				if err != nil {
					return CPUAllocation{}, allocErr("numa nodes: %v", err)
				}
				for _, prev := range cfg.Nodes {
					if prev == n {
						return CPUAllocation{}, allocErr("numa nodes: node %d listed twice", n)
					}
				}
				cfg.Nodes = append(cfg.Nodes, n)
			}
		case "cores":
			n, err := parseCPUIndex(value)
			if err != nil {
				return CPUAllocation{}, allocErr("numa cores: %v", err)
			}
			cfg.CoresPerNode = n
		case "no_ht":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return CPUAllocation{}, allocErr("numa no_ht: %q is not true or false", value)
			}
			cfg.NoHT = b
		default:
			return CPUAllocation{}, allocErr("unknown numa parameter %q (keys: nodes, cores, no_ht)", key)
		}
	}
	return CPUAllocation{Kind: AllocNUMA, NUMA: cfg}, nil
}

// String renders the allocation in the form ParseCPUAllocation accepts.
func (a CPUAllocation) String() string {
	switch a.Kind {
	case AllocAll:
		return "all"
	case AllocCount:
		return strconv.Itoa(a.Count)
	case AllocRange:
		return fmt.Sprintf("%d..%d", a.Start, a.End)
	case AllocNUMA:
		if len(a.NUMA.Nodes) == 0 && a.NUMA.CoresPerNode == 0 && a.NUMA.NoHT {
			return "numa:auto"
		}
		var b strings.Builder
		b.WriteString("numa:")
		if len(a.NUMA.Nodes) > 0 {
			b.WriteString("nodes=")
			for i, n := range a.NUMA.Nodes {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.Itoa(n))
			}
			b.WriteByte(';')
		}
		fmt.Fprintf(&b, "cores=%d;no_ht=%t", a.NUMA.CoresPerNode, a.NUMA.NoHT)
		return b.String()
	}
	return fmt.Sprintf("CPUAllocation(kind=%d)", a.Kind)
}

// MarshalText renders the string form (a count marshals as a string; both
// forms are accepted back).
func (a CPUAllocation) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText parses the string form.
func (a *CPUAllocation) UnmarshalText(b []byte) error {
	v, err := ParseCPUAllocation(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// UnmarshalTOML accepts the raw TOML value: a bare integer (`4`) or a basic
// or literal string. go-toml hands it the value's source bytes when the
// decoder has its unmarshaler interface enabled.
func (a *CPUAllocation) UnmarshalTOML(raw []byte) error {
	s := strings.TrimSpace(string(raw))
	switch {
	case strings.HasPrefix(s, `"`):
		u, err := strconv.Unquote(s)
		if err != nil {
			return allocErr("malformed string %s", s)
		}
		s = u
	case strings.HasPrefix(s, "'") && strings.HasSuffix(s, "'") && len(s) >= 2:
		s = s[1 : len(s)-1]
	default:
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)
		if err != nil {
			return allocErr("%s is neither an integer nor a string", s)
		}
		if n < 1 || n > maxCPUIndex {
			return allocErr("count %d must be between 1 and %d", n, maxCPUIndex)
		}
		v, err := CountAllocation(int(n))
		if err != nil {
			return err
		}
		*a = v
		return nil
	}
	return a.UnmarshalText([]byte(s))
}
