package config

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written as a human string: "30s", "1 m",
// "500 ms", "7 days", "1h 30m". Components may repeat units in any order and
// are summed; a bare "0" is zero. It marshals back in the spaced style
// ("1 m 30 s", "7 days"), which parses to the same value.
type Duration struct{ time.Duration }

// D wraps a time.Duration.
func D(d time.Duration) Duration { return Duration{d} }

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond, "nanos": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "usec": time.Microsecond, "micros": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond, "millis": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// ParseDuration parses the human duration forms described on Duration.
func ParseDuration(s string) (Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return Duration{}, fmt.Errorf("empty duration; write e.g. \"5 s\" or \"500 ms\"")
	}
	if in == "0" {
		return Duration{}, nil
	}
	var total time.Duration
	rest := in
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return Duration{}, fmt.Errorf("duration %q: expected a number at %q", s, rest)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return Duration{}, fmt.Errorf("duration %q: number %s too large", s, rest[:i])
		}
		rest = strings.TrimLeft(rest[i:], " \t")
		j := 0
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\t' && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		unit := rest[:j]
		if unit == "" {
			return Duration{}, fmt.Errorf("duration %q: number %d has no unit (ms, s, m, h, days, ...)", s, n)
		}
		mul, ok := durationUnits[unit]
		if !ok {
			return Duration{}, fmt.Errorf("duration %q: unknown unit %q", s, unit)
		}
		if n > int64(math.MaxInt64/mul) {
			return Duration{}, fmt.Errorf("duration %q overflows", s)
		}
		part := time.Duration(n) * mul
		if total > math.MaxInt64-part {
			return Duration{}, fmt.Errorf("duration %q overflows", s)
		}
		total += part
		rest = strings.TrimLeft(rest[j:], " \t")
	}
	return Duration{total}, nil
}

// String renders d in the spaced human style, largest unit first.
func (d Duration) String() string {
	v := d.Duration
	if v == 0 {
		return "0 s"
	}
	neg := v < 0
	if neg {
		// Negative durations are never valid config; render them
		// recognisably rather than silently.
		return "-" + Duration{-v}.String()
	}
	type unit struct {
		size time.Duration
		name string
	}
	units := []unit{
		{24 * time.Hour, "days"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"},
		{time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"},
	}
	var parts []string
	for _, u := range units {
		if n := v / u.size; n > 0 {
			name := u.name
			if name == "days" && n == 1 {
				name = "day"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, name))
			v -= n * u.size
		}
	}
	return strings.Join(parts, " ")
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalTOML accepts a string, or the integer 0; any other bare number is
// refused because its unit would be a guess.
func (d *Duration) UnmarshalTOML(raw []byte) error {
	s, isString, err := tomlScalar(raw)
	if err != nil {
		return err
	}
	if !isString && s != "0" {
		return fmt.Errorf("duration %s needs a unit; write it as a string such as \"%s s\"", s, s)
	}
	return d.UnmarshalText([]byte(s))
}

// ByteSize is a byte count written as a human string: "500 MB" (decimal,
// 10^6), "64 MiB" (binary, 2^20), "1200 B", "2GB", "1.5 GiB". Units are
// case-insensitive: B, KB/K, KiB, MB/M, MiB, GB/G, GiB, TB/T, TiB, PB/P, PiB.
// A bare integer is bytes; "unlimited" and "none" mean 0, which each key
// documents (usually "no limit" or "off"). It marshals back in the most
// compact exact form ("64 MiB", "500 MB", "1200 B").
type ByteSize uint64

// Size constructors for readable defaults.
const (
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
	TiB ByteSize = 1 << 40
	KB  ByteSize = 1000
	MB  ByteSize = 1000 * KB
	GB  ByteSize = 1000 * MB
	TB  ByteSize = 1000 * GB
)

var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pib": 1 << 50,
}

// ParseByteSize parses the forms described on ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	in := strings.TrimSpace(s)
	switch strings.ToLower(in) {
	case "":
		return 0, fmt.Errorf("empty size; write e.g. \"64 MiB\"")
	case "unlimited", "none":
		return 0, nil
	}
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, unit := in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	if num == "" || strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("size %q: expected a number before the unit", s)
	}
	mul, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)", s, in[i:])
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q: malformed number %q", s, num)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).SetUint64(mul)))
	if !r.IsInt() {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	if !r.Num().IsUint64() {
		return 0, fmt.Errorf("size %q overflows", s)
	}
	return ByteSize(r.Num().Uint64()), nil
}

// Bytes returns the size as a uint64.
func (b ByteSize) Bytes() uint64 { return uint64(b) }

// String renders b with the unit that gives the smallest exact integer,
// preferring binary units on a tie.
func (b ByteSize) String() string {
	if b == 0 {
		return "0 B"
	}
	best, bestUnit := uint64(b), "B"
	for _, u := range []struct {
		size uint64
		name string
	}{{1 << 50, "PiB"}, {1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"},
		{1e15, "PB"}, {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}} {
		if uint64(b)%u.size == 0 && uint64(b)/u.size < best {
			best, bestUnit = uint64(b)/u.size, u.name
		}
	}
	return fmt.Sprintf("%d %s", best, bestUnit)
}

// MarshalText implements encoding.TextMarshaler.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *ByteSize) UnmarshalText(t []byte) error {
	v, err := ParseByteSize(string(t))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// UnmarshalTOML accepts a string or a bare non-negative integer (bytes).
func (b *ByteSize) UnmarshalTOML(raw []byte) error {
	s, isString, err := tomlScalar(raw)
	if err != nil {
		return err
	}
	if !isString {
		n, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("size %s is neither a string nor a non-negative integer", s)
		}
		*b = ByteSize(n)
		return nil
	}
	return b.UnmarshalText([]byte(s))
}

// tomlScalar extracts a TOML scalar from its source bytes: a basic or
// literal string (isString), or the bare token otherwise.
func tomlScalar(raw []byte) (s string, isString bool, err error) {
	t := strings.TrimSpace(string(raw))
	switch {
	case strings.HasPrefix(t, `"""`) || strings.HasPrefix(t, `'''`):
		return "", false, fmt.Errorf("multi-line strings are not accepted here")
	case strings.HasPrefix(t, `"`):
		u, err := strconv.Unquote(t)
		if err != nil {
			return "", false, fmt.Errorf("malformed string %s", t)
		}
		return u, true, nil
	case strings.HasPrefix(t, "'") && strings.HasSuffix(t, "'") && len(t) >= 2:
		return t[1 : len(t)-1], true, nil
	}
	return t, false, nil
}

// ConsensusTick is the fixed period of the consensus clock. Every cluster
// timeout is configured as a duration and converted to whole ticks.
const ConsensusTick = 10 * time.Millisecond

// Ticks converts d to consensus ticks: rounded down to whole ticks, and at
// least one, so a sub-tick value fires on the next tick rather than never
// (or on every tick, for zero).
func Ticks(d time.Duration) uint64 {
	if d < ConsensusTick {
		return 1
	}
	return uint64(d / ConsensusTick)
}

// Ticks is the package-level Ticks applied to d.
func (d Duration) Ticks() uint64 { return Ticks(d.Duration) }
