package metadata

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
)

func TestResolveTopicCreateDefaults(t *testing.T) {
	d := DefaultTopicDefaults()
	res, code := ResolveTopicCreate(nil, 1, d)
	if code != OK {
		t.Fatal(code)
	}
	want := TopicConfig{
		CompressionAlgorithm: CompressionNone, MessageExpiry: math.MaxUint64, MaxTopicSize: math.MaxUint64,
		SegmentSize: 1 << 30, MessagesRequiredToSave: 1024, SizeOfMessagesRequiredToSave: 1 << 20,
		Durability: DurabilityReplicated, ConsumerOffsetDurability: DurabilityReplicated,
	}
	if res.Config != want {
		t.Fatalf("config %+v", res.Config)
	}
	if len(res.Explicit) != 0 || len(res.Derived) != len(TopicOptionCatalog) {
		t.Fatalf("explicit %d derived %d", len(res.Explicit), len(res.Derived))
	}
	for i, spec := range TopicOptionCatalog {
		o := res.Derived[i]
		if o.Key != spec.Key || o.Kind != spec.Kind {
			t.Fatalf("derived[%d] = %s/%d, catalog says %s/%d", i, o.Key, o.Kind, spec.Key, spec.Kind)
		}
		if dv, ok := DefaultOptionValue(spec.Key, d); !ok || !dv.Equal(o) {
			t.Fatalf("DefaultOptionValue(%s) = %+v, derived %+v", spec.Key, dv, o)
		}
	}
	if !slices.IsSortedFunc(TopicOptionCatalog, func(a, b TopicOptionSpec) int {
		return cmpStr(a.Key, b.Key)
	}) {
		t.Fatal("catalog not in key order")
	}
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func kv(key string, kind HeaderKind, v []byte) Option { return Option{Key: key, Kind: kind, Value: v} }

func TestResolveTopicCreateValues(t *testing.T) {
	d := DefaultTopicDefaults()
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	tests := []struct {
		name  string
		opts  []Option
		parts uint32
		want  Code
		check func(TopicConfig) bool
		canon []Option // expected explicit block
	}{
		{name: "gzip string", opts: []Option{stringOption(OptCompressionAlgorithm, "gzip")},
			check: func(c TopicConfig) bool { return c.CompressionAlgorithm == CompressionGzip },
			canon: []Option{stringOption(OptCompressionAlgorithm, "gzip")}},
		{name: "compression code", opts: []Option{kv(OptCompressionAlgorithm, KindUint8, []byte{2})},
			canon: []Option{stringOption(OptCompressionAlgorithm, "gzip")}},
		{name: "compression lz4", opts: []Option{stringOption(OptCompressionAlgorithm, "lz4")}, want: CodeInvalidOptionValue},
		{name: "compression as u64", opts: []Option{u64Option(OptCompressionAlgorithm, 1)}, want: CodeInvalidOptionValue},
		{name: "expiry humantime", opts: []Option{stringOption(OptMessageExpiry, "7 days")},
			check: func(c TopicConfig) bool { return c.MessageExpiry == 7*86400*1_000_000 },
			canon: []Option{u64Option(OptMessageExpiry, 7*86400*1_000_000)}},
		{name: "expiry never", opts: []Option{stringOption(OptMessageExpiry, "never_expire")},
			check: func(c TopicConfig) bool { return c.MessageExpiry == math.MaxUint64 }},
		{name: "expiry zero sentinel stays explicit", opts: []Option{u64Option(OptMessageExpiry, 0)},
			canon: []Option{u64Option(OptMessageExpiry, math.MaxUint64)}},
		{name: "expiry garbage", opts: []Option{stringOption(OptMessageExpiry, "soon")}, want: CodeInvalidOptionValue},
		{name: "expiry too long", opts: []Option{stringOption(OptMessageExpiry, "200years")}, want: CodeInvalidOptionValue},
		{name: "expiry short u64", opts: []Option{kv(OptMessageExpiry, KindUint64, []byte{1, 2})}, want: CodeInvalidOptionValue},
		{name: "segment size string", opts: []Option{stringOption(OptSegmentSize, "128MiB")},
			canon: []Option{u64Option(OptSegmentSize, 128<<20)}},
		{name: "segment too small", opts: []Option{u64Option(OptSegmentSize, 512<<10)}, want: CodeInvalidOptionValue},
		{name: "segment too big", opts: []Option{u64Option(OptSegmentSize, 2<<30)}, want: CodeInvalidOptionValue},
		{name: "segment not 512 multiple", opts: []Option{u64Option(OptSegmentSize, 1<<20+1)}, want: CodeInvalidOptionValue},
		{name: "cap below segment", opts: []Option{u64Option(OptMaxTopicSize, 1<<29)}, want: CodeInvalidTopicSize},
		{name: "cap equals segment", opts: []Option{u64Option(OptSegmentSize, 1<<20), stringOption(OptMaxTopicSize, "1MiB")},
			check: func(c TopicConfig) bool { return c.MaxTopicSize == 1<<20 }},
		{name: "cap unlimited", opts: []Option{stringOption(OptMaxTopicSize, "unlimited")},
			check: func(c TopicConfig) bool { return c.MaxTopicSize == math.MaxUint64 }},
		{name: "messages to save", opts: []Option{stringOption(OptMessagesRequiredToSave, "500")},
			canon: []Option{u32Option(OptMessagesRequiredToSave, 500)}},
		{name: "messages to save zero", opts: []Option{kv(OptMessagesRequiredToSave, KindUint32, u32(0))}, want: CodeInvalidOptionValue},
		{name: "messages to save too many", opts: []Option{kv(OptMessagesRequiredToSave, KindUint32, u32(16<<20+1))}, want: CodeInvalidOptionValue},
		{name: "size to save over 1GiB", opts: []Option{u64Option(OptSizeOfMessagesRequiredToSave, 1<<30+1)}, want: CodeInvalidOptionValue},
		{name: "fsync string true", opts: []Option{stringOption(OptEnforceFsync, "true")},
			check: func(c TopicConfig) bool {
				return c.EnforceFsync && c.Durability == DurabilityPersisted && c.ConsumerOffsetDurability == DurabilityPersisted
			},
			canon: []Option{boolOption(OptEnforceFsync, true)}},
		{name: "fsync bool 2", opts: []Option{kv(OptEnforceFsync, KindBool, []byte{2})}, want: CodeInvalidOptionValue},
		{name: "fsync TRUE", opts: []Option{stringOption(OptEnforceFsync, "TRUE")}, want: CodeInvalidOptionValue},
		{name: "durability persisted", opts: []Option{stringOption(OptDurability, "persisted")},
			check: func(c TopicConfig) bool {
				return c.EnforceFsync && c.Durability == DurabilityPersisted && c.ConsumerOffsetDurability == DurabilityReplicated
			}},
		{name: "offsets persisted only", opts: []Option{stringOption(OptConsumerOffsetDurability, "persisted")},
			check: func(c TopicConfig) bool {
				return !c.EnforceFsync && c.Durability == DurabilityReplicated && c.ConsumerOffsetDurability == DurabilityPersisted
			}},
		{name: "fsync contradicts durability", opts: []Option{boolOption(OptEnforceFsync, true), stringOption(OptDurability, "replicated")}, want: CodeInvalidOptionValue},
		{name: "fsync false contradicts persisted offsets", opts: []Option{boolOption(OptEnforceFsync, false), stringOption(OptConsumerOffsetDurability, "persisted")}, want: CodeInvalidOptionValue},
		{name: "fsync agrees with durability", opts: []Option{boolOption(OptEnforceFsync, true), stringOption(OptDurability, "persisted")},
			canon: []Option{stringOption(OptDurability, "persisted"), boolOption(OptEnforceFsync, true)}},
		{name: "durability garbage", opts: []Option{stringOption(OptDurability, "eventually")}, want: CodeInvalidOptionValue},
		{name: "preallocate within budget", opts: []Option{boolOption(OptPreallocateSegments, true)}, parts: 64},
		{name: "preallocate over budget", opts: []Option{boolOption(OptPreallocateSegments, true)}, parts: 65, want: CodeInvalidOptionValue},
		{name: "unknown key", opts: []Option{stringOption("replication_factor", "3")}, want: CodeUnsupportedOptionKey},
		{name: "partitions_count is no option", opts: []Option{stringOption("partitions_count", "3")}, want: CodeUnsupportedOptionKey},
		{name: "duplicate key", opts: []Option{boolOption(OptEnforceFsync, true), boolOption(OptEnforceFsync, true)}, want: CodeInvalidOptionValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			parts := tc.parts
			if parts == 0 {
				parts = 1
			}
			res, code := ResolveTopicCreate(tc.opts, parts, d)
			if code != tc.want {
				t.Fatalf("code %v, want %v", code, tc.want)
			}
			if code != OK {
				return
			}
			if tc.check != nil && !tc.check(res.Config) {
				t.Fatalf("config %+v", res.Config)
			}
			if tc.canon != nil && !slices.EqualFunc(res.Explicit, tc.canon, Option.Equal) {
				t.Fatalf("explicit %+v, want %+v", res.Explicit, tc.canon)
			}
			if !validOptionBlocks(res.Config, res.Explicit, res.Derived) || !validTopicConfig(res.Config) {
				t.Fatalf("resolution inconsistent: %+v", res)
			}
			if len(res.Explicit) != len(tc.opts) {
				t.Fatalf("explicit block has %d keys, client sent %d", len(res.Explicit), len(tc.opts))
			}
		})
	}
}

func TestResolveTopicCreateUsesStampedDefaults(t *testing.T) {
	d := DefaultTopicDefaults()
	d.Durability = DurabilityPersisted
	d.SegmentSize = 64 << 20
	d.MessageExpiry = 3_600_000_000
	res, code := ResolveTopicCreate(nil, 1, d)
	if code != OK || res.Config.SegmentSize != 64<<20 || !res.Config.EnforceFsync || res.Config.MessageExpiry != 3_600_000_000 {
		t.Fatalf("%v %+v", code, res.Config)
	}
	// An explicit enforce_fsync=false overrides a persisted default for
	// both durability keys.
	res, code = ResolveTopicCreate([]Option{boolOption(OptEnforceFsync, false)}, 1, d)
	if code != OK || res.Config.Durability != DurabilityReplicated || res.Config.EnforceFsync {
		t.Fatalf("%v %+v", code, res.Config)
	}
	d.SegmentSizeMax = 32 << 20
	if _, code := ResolveTopicCreate(nil, 1, d); code != CodeInvalidOptionValue {
		t.Fatalf("defaults above their own ceiling: %v", code)
	}
}

func TestResolveTopicUpdate(t *testing.T) {
	cur, _ := ResolveTopicCreate(nil, 1, DefaultTopicDefaults())
	tests := []struct {
		name  string
		opts  []Option
		want  Code
		patch int
	}{
		{"nothing", nil, OK, 0},
		{"compression", []Option{stringOption(OptCompressionAlgorithm, "gzip")}, OK, 1},
		{"three keys", []Option{stringOption(OptCompressionAlgorithm, "none"), u64Option(OptMessageExpiry, 9), stringOption(OptMaxTopicSize, "2GiB")}, OK, 3},
		{"expiry sentinel", []Option{u64Option(OptMessageExpiry, 0)}, OK, 0},
		{"segment size is create-only", []Option{u64Option(OptSegmentSize, 1 << 20)}, CodeUnsupportedOptionKey, 0},
		{"durability is create-only", []Option{stringOption(OptDurability, "persisted")}, CodeUnsupportedOptionKey, 0},
		{"unknown", []Option{stringOption("x", "y")}, CodeUnsupportedOptionKey, 0},
		{"bad value", []Option{stringOption(OptMessageExpiry, "x")}, CodeInvalidOptionValue, 0},
		{"cap below segment", []Option{u64Option(OptMaxTopicSize, 1024)}, CodeInvalidTopicSize, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next, patch, code := ResolveTopicUpdate(tc.opts, cur.Config)
			if code != tc.want || len(patch) != tc.patch {
				t.Fatalf("code %v patch %+v", code, patch)
			}
			if code == OK && len(patch) == 0 && next != cur.Config {
				t.Fatal("empty patch changed the config")
			}
			if !slices.IsSortedFunc(patch, func(a, b Option) int { return cmpStr(a.Key, b.Key) }) {
				t.Fatal("patch not sorted")
			}
		})
	}
}

func TestParseHumanDuration(t *testing.T) {
	tests := []struct {
		in     string
		secs   uint64
		micros uint64
		ok     bool
	}{
		{"7 days", 7 * 86400, 0, true},
		{"1h 30m", 5400, 0, true},
		{"15days2min2s", 15*86400 + 122, 0, true},
		{"1s 500ms", 1, 500_000, true},
		{"2500ms", 2, 500_000, true},
		{"1 month", 2_630_016, 0, true},
		{"1y", 31_557_600, 0, true},
		{"3w", 3 * 604800, 0, true},
		{"10us", 0, 10, true},
		{"1M 1m", 2_630_016 + 60, 0, true},
		{"", 0, 0, false},
		{"5", 0, 0, false},
		{"5 fortnights", 0, 0, false},
		{"h", 0, 0, false},
		{"-1s", 0, 0, false},
		{"99999999999999999999s", 0, 0, false},
	}
	for _, tc := range tests {
		secs, micros, ok := ParseHumanDuration(tc.in)
		if ok != tc.ok || (ok && (secs != tc.secs || micros != tc.micros)) {
			t.Errorf("ParseHumanDuration(%q) = %d, %d, %v; want %d, %d, %v", tc.in, secs, micros, ok, tc.secs, tc.micros, tc.ok)
		}
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"100", 100, true},
		{"1KB", 1000, true},
		{"1 KiB", 1024, true},
		{"128MiB", 128 << 20, true},
		{"1 GB", 1_000_000_000, true},
		{"1gib", 1 << 30, true},
		{"1.5 GiB", 3 << 29, true},
		{"2 k", 2000, true},
		{"10 B", 10, true},
		{"1 EiB", 1 << 60, true},
		{"16 EiB", 0, false},
		{"1.", 0, false},
		{"GiB", 0, false},
		{"1 XB", 0, false},
		{"1 GiBs", 0, false},
		{"", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseByteSize(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestEmptyCatalogs(t *testing.T) {
	if ValidateEmptyCatalog(nil) != OK || ValidateEmptyCatalog([]Option{stringOption("a", "b")}) != CodeUnsupportedOptionKey {
		t.Fatal("stream/user catalogs must refuse every key")
	}
}
