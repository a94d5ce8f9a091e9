package peers

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseBytes parses a byte count: a number with an optional unit, B, KB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024),
// e.g. "10GB", "16MiB", "0".
func ParseBytes(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || v < 0 {
		return 0, fmt.Errorf("byte size %q: want a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s)
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("byte size %q: unknown unit %q", s, t[i:])
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("byte size %q is too large", s)
	}
	return uint64(v * mult), nil
}

// ParseInts parses "1,4,16" (positive numbers).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("list %q: %q is not a positive number", s, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list %q", s)
	}
	return out, nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
