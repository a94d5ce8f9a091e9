package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"0", 0, "0 s"},
		{"0 s", 0, "0 s"},
		{"30s", 30 * time.Second, "30 s"},
		{"30 s", 30 * time.Second, "30 s"},
		{"1 m", time.Minute, "1 m"},
		{"1m", time.Minute, "1 m"},
		{"500ms", 500 * time.Millisecond, "500 ms"},
		{"500 ms", 500 * time.Millisecond, "500 ms"},
		{"1 h", time.Hour, "1 h"},
		{"7 days", 7 * 24 * time.Hour, "7 days"},
		{"1 day", 24 * time.Hour, "1 day"},
		{"2w", 14 * 24 * time.Hour, "14 days"},
		{"1h 30m", 90 * time.Minute, "1 h 30 m"},
		{"1h30m", 90 * time.Minute, "1 h 30 m"},
		{"90s", 90 * time.Second, "1 m 30 s"},
		{"2m", 2 * time.Minute, "2 m"},
		{"5 seconds", 5 * time.Second, "5 s"},
		{"3 minutes 4 sec", 184 * time.Second, "3 m 4 s"},
		{"250us", 250 * time.Microsecond, "250 us"},
		{"7µs", 7 * time.Microsecond, "7 us"},
		{"12ns", 12, "12 ns"},
		{"1s 1s", 2 * time.Second, "2 s"},
		{"  10 ms  ", 10 * time.Millisecond, "10 ms"},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if err != nil {
			t.Fatalf("ParseDuration(%q): %v", c.in, err)
		}
		if got.Duration != c.want {
			t.Errorf("ParseDuration(%q) = %v, want %v", c.in, got.Duration, c.want)
		}
		if got.String() != c.out {
			t.Errorf("ParseDuration(%q).String() = %q, want %q", c.in, got.String(), c.out)
		}
		back, err := ParseDuration(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q: %v, %v", got.String(), back, err)
		}
	}
}

func TestParseDurationErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty duration"},
		{"5", "has no unit"},
		{"s", "expected a number"},
		{"5 parsecs", "unknown unit"},
		{"1.5s", "unknown unit"},
		{"-1s", "expected a number"},
		{"99999999999999999999s", "too large"},
		{"999999999 days", "overflows"},
		{"200000 days 200000 days", "overflows"},
	}
	for _, c := range cases {
		_, err := ParseDuration(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseDuration(%q) = %v, want error containing %q", c.in, err, c.want)
		}
	}
}

func TestDurationTOML(t *testing.T) {
	var d Duration
	if err := d.UnmarshalTOML([]byte(`"1 m"`)); err != nil || d.Duration != time.Minute {
		t.Fatalf("string: %v %v", d, err)
	}
	if err := d.UnmarshalTOML([]byte(`'5s'`)); err != nil || d.Duration != 5*time.Second {
		t.Fatalf("literal string: %v %v", d, err)
	}
	if err := d.UnmarshalTOML([]byte(`0`)); err != nil || d.Duration != 0 {
		t.Fatalf("bare zero: %v %v", d, err)
	}
	if err := d.UnmarshalTOML([]byte(`30`)); err == nil || !strings.Contains(err.Error(), "needs a unit") {
		t.Fatalf("bare 30 = %v", err)
	}
	if b, _ := D(90 * time.Second).MarshalText(); string(b) != "1 m 30 s" {
		t.Fatalf("MarshalText = %q", b)
	}
}

func TestParseByteSize(t *testing.T) {
	cases := []struct {
		in   string
		want ByteSize
		out  string
	}{
		{"0", 0, "0 B"},
		{"unlimited", 0, "0 B"},
		{"None", 0, "0 B"},
		{"1200 B", 1200, "1200 B"},
		{"1200", 1200, "1200 B"},
		{"500 MB", 500 * MB, "500 MB"},
		{"500MB", 500 * MB, "500 MB"},
		{"64 MiB", 64 * MiB, "64 MiB"},
		{"64 mib", 64 * MiB, "64 MiB"},
		{"2 GB", 2 * GB, "2 GB"},
		{"4 GiB", 4 * GiB, "4 GiB"},
		{"2176 MiB", 2176 * MiB, "2176 MiB"},
		{"1088 MiB", 1088 * MiB, "1088 MiB"},
		{"1.5 GiB", 1536 * MiB, "1536 MiB"},
		{"1 KiB", 1024, "1 KiB"},
		{"1 KB", 1000, "1 KB"},
		{"1k", 1000, "1 KB"},
		{"2 MB", 2 * MB, "2 MB"},
		{"32 KiB", 32 * KiB, "32 KiB"},
		{"1 TiB", TiB, "1 TiB"},
		{"3 TB", 3 * TB, "3 TB"},
		{"1 PiB", 1 << 50, "1 PiB"},
		{"1024 KiB", MiB, "1 MiB"},
	}
	for _, c := range cases {
		got, err := ParseByteSize(c.in)
		if err != nil {
			t.Fatalf("ParseByteSize(%q): %v", c.in, err)
		}
		if got != c.want {
			t.Errorf("ParseByteSize(%q) = %d, want %d", c.in, got, c.want)
		}
		if got.String() != c.out {
			t.Errorf("ParseByteSize(%q).String() = %q, want %q", c.in, got.String(), c.out)
		}
		back, err := ParseByteSize(got.String())
		if err != nil || back != got {
			t.Errorf("round trip of %q: %v, %v", got.String(), back, err)
		}
	}
}

func TestParseByteSizeErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "empty size"},
		{"MB", "expected a number"},
		{"5 parsecs", "unknown unit"},
		{"1.5 B", "not a whole number"},
		{"1.2.3 MB", "expected a number"},
		{"-5 MB", "expected a number"},
		{"99999999 PiB", "overflows"},
	}
	for _, c := range cases {
		_, err := ParseByteSize(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseByteSize(%q) = %v, want error containing %q", c.in, err, c.want)
		}
	}
}

func TestByteSizeTOML(t *testing.T) {
	var b ByteSize
	if err := b.UnmarshalTOML([]byte(`"64 MiB"`)); err != nil || b != 64*MiB {
		t.Fatalf("string: %v %v", b, err)
	}
	if err := b.UnmarshalTOML([]byte(`4096`)); err != nil || b != 4096 {
		t.Fatalf("integer: %v %v", b, err)
	}
	if err := b.UnmarshalTOML([]byte(`-1`)); err == nil {
		t.Fatal("negative integer accepted")
	}
	if err := b.UnmarshalTOML([]byte(`"""x"""`)); err == nil {
		t.Fatal("multi-line string accepted")
	}
}

func TestTicks(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want uint64
	}{
		{0, 1},
		{time.Millisecond, 1},
		{9 * time.Millisecond, 1},
		{10 * time.Millisecond, 1},
		{19 * time.Millisecond, 1},
		{20 * time.Millisecond, 2},
		{250 * time.Millisecond, 25},
		{500 * time.Millisecond, 50},
		{5 * time.Second, 500},
		{2 * time.Minute, 12000},
		{-time.Second, 1},
	}
	for _, c := range cases {
		if got := Ticks(c.d); got != c.want {
			t.Errorf("Ticks(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	ticks := Default().Cluster.Ticks()
	want := ClusterTicks{
		HeartbeatTimeout: 500, CommitBroadcastInterval: 50, PrepareRetransmitInterval: 25,
		ViewChangeRetransmitInterval: 50, ViewChangeStatusTimeout: 500, RequestStartViewRetransmitInterval: 100,
		RepairRetryInterval: 100, RepairGapDebounceInterval: 100, SuperblockWedgedFatalTimeout: 12000,
	}
	if ticks != want {
		t.Fatalf("default cluster ticks %+v, want %+v", ticks, want)
	}
	c := Default().Cluster
	c.SuperblockWedgedFatalTimeout = D(0)
	if c.Ticks().SuperblockWedgedFatalTimeout != 0 {
		t.Fatal("disabled superblock timeout converted to a tick count")
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"1 m", "30s", "7 days", "1h 30m", "0", "500 ms", "5", "µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d.Duration < 0 {
			t.Fatalf("ParseDuration(%q) negative: %v", s, d.Duration)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("%q → %q → %v, %v", s, d.String(), back, err)
		}
	})
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"64 MiB", "500 MB", "1200 B", "1.5 GiB", "unlimited", "0", "1k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseByteSize(s)
		if err != nil {
			return
		}
		back, err := ParseByteSize(b.String())
		if err != nil || back != b {
			t.Fatalf("%q → %q → %v, %v", s, b.String(), back, err)
		}
	})
}
