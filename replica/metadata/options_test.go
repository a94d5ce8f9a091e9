package metadata

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestResolveTopicCreateDefaults(t *testing.T) {
	d := DefaultTopicDefaults()
	res, code := ResolveTopicCreate(nil, 1, d)
	if code != OK {
		t.Fatal(code)
	}
	want := TopicConfig{TopicSettings: wire.DefaultTopicSettings(), Durability: DurabilityReplicated, ConsumerOffsetDurability: DurabilityReplicated,
		Compression: CompressionNone}
	if res.Config != want {
		t.Fatalf("config %+v", res.Config)
	}
	if len(res.Explicit) != 0 || len(res.Derived) != len(TopicOptionCatalog) {
		t.Fatalf("explicit %d derived %d", len(res.Explicit), len(res.Derived))
	}
	// With built-in defaults the derived block is the catalog itself, and
	// DESCRIBE_OPTIONS reports the same values.
	desc := DescribeTopicOptions(d)
	for i, spec := range TopicOptionCatalog {
		o := res.Derived[i]
		if string(o.Key.Value) != spec.Key || o.Value.Kind != spec.Kind || string(o.Value.Value) != string(spec.Default) {
			t.Fatalf("derived[%d] = %s/%v %x, catalog says %s/%v %x", i, o.Key.Value, o.Value.Kind, o.Value.Value, spec.Key, spec.Kind, spec.Default)
		}
		if desc[i].Key != spec.Key || string(desc[i].Default) != string(spec.Default) {
			t.Fatalf("describe[%d] = %+v", i, desc[i])
		}
	}
	// The wire catalog is a prefix of ours: Iggy's keys keep their order.
	for i, spec := range wire.TopicOptionCatalog {
		if TopicOptionCatalog[i].Key != spec.Key {
			t.Fatalf("catalog[%d] = %s, wire has %s", i, TopicOptionCatalog[i].Key, spec.Key)
		}
	}
}

func TestResolveTopicCreateValues(t *testing.T) {
	d := DefaultTopicDefaults()
	u32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	tests := []struct {
		name  string
		opts  wire.Options
		parts uint32
		want  wire.Code
		check func(TopicConfig) bool
		canon wire.Options // expected explicit block
	}{
		{name: "gzip string", opts: wire.Options{stringOption(wire.OptCompressionAlgorithm, "gzip")},
			check: func(c TopicConfig) bool { return c.CompressionAlgorithm == wire.CompressionGzip },
			canon: wire.Options{stringOption(wire.OptCompressionAlgorithm, "gzip")}},
		{name: "compression code", opts: wire.Options{kv(wire.OptCompressionAlgorithm, wire.KindUint8, []byte{2})},
			canon: wire.Options{stringOption(wire.OptCompressionAlgorithm, "gzip")}},
		{name: "compression lz4", opts: wire.Options{stringOption(wire.OptCompressionAlgorithm, "lz4")}, want: wire.CodeInvalidOptionValue},
		{name: "expiry humantime", opts: wire.Options{stringOption(wire.OptMessageExpiry, "7 days")},
			check: func(c TopicConfig) bool { return c.MessageExpiry == 7*86400*1_000_000 },
			canon: wire.Options{u64Option(wire.OptMessageExpiry, 7*86400*1_000_000)}},
		{name: "expiry zero sentinel is absent", opts: wire.Options{u64Option(wire.OptMessageExpiry, 0)},
			check: func(c TopicConfig) bool { return c.MessageExpiry == math.MaxUint64 },
			canon: wire.Options{}},
		{name: "expiry garbage", opts: wire.Options{stringOption(wire.OptMessageExpiry, "soon")}, want: wire.CodeInvalidOptionValue},
		{name: "segment size string", opts: wire.Options{stringOption(wire.OptSegmentSize, "128MiB")},
			canon: wire.Options{u64Option(wire.OptSegmentSize, 128<<20)}},
		{name: "segment too small", opts: wire.Options{u64Option(wire.OptSegmentSize, 512<<10)}, want: wire.CodeInvalidOptionValue},
		{name: "segment not 512 multiple", opts: wire.Options{u64Option(wire.OptSegmentSize, 1<<20+1)}, want: wire.CodeInvalidOptionValue},
		{name: "cap below segment", opts: wire.Options{u64Option(wire.OptMaxTopicSize, 1<<29)}, want: wire.CodeInvalidTopicSize},
		{name: "cap equals segment", opts: wire.Options{u64Option(wire.OptSegmentSize, 1<<20), stringOption(wire.OptMaxTopicSize, "1MiB")},
			check: func(c TopicConfig) bool { return c.MaxTopicSize == 1<<20 }},
		{name: "messages to save", opts: wire.Options{stringOption(wire.OptMessagesRequiredToSave, "500")},
			canon: wire.Options{u32Option(wire.OptMessagesRequiredToSave, 500)}},
		{name: "messages to save zero", opts: wire.Options{kv(wire.OptMessagesRequiredToSave, wire.KindUint32, u32(0))}, want: wire.CodeInvalidOptionValue},
		{name: "size to save over 1GiB", opts: wire.Options{u64Option(wire.OptSizeOfMessagesRequiredToSave, 1<<30+1)}, want: wire.CodeInvalidOptionValue},
		{name: "fsync string true", opts: wire.Options{stringOption(wire.OptEnforceFsync, "true")},
			check: func(c TopicConfig) bool {
				return c.EnforceFsync && c.Durability == DurabilityPersisted && c.ConsumerOffsetDurability == DurabilityPersisted
			},
			canon: wire.Options{boolOption(wire.OptEnforceFsync, true)}},
		{name: "fsync bool 2", opts: wire.Options{kv(wire.OptEnforceFsync, wire.KindBool, []byte{2})}, want: wire.CodeInvalidOptionValue},
		{name: "durability persisted", opts: wire.Options{stringOption(OptDurability, "persisted")},
			check: func(c TopicConfig) bool {
				return c.EnforceFsync && c.Durability == DurabilityPersisted && c.ConsumerOffsetDurability == DurabilityReplicated
			},
			canon: wire.Options{stringOption(OptDurability, "persisted")}},
		{name: "durability is case-insensitive", opts: wire.Options{stringOption(OptDurability, "Persisted")},
			canon: wire.Options{stringOption(OptDurability, "persisted")}},
		{name: "offsets persisted only", opts: wire.Options{stringOption(OptConsumerOffsetDurability, "persisted")},
			check: func(c TopicConfig) bool {
				return !c.EnforceFsync && c.Durability == DurabilityReplicated && c.ConsumerOffsetDurability == DurabilityPersisted
			}},
		{name: "fsync contradicts durability", opts: wire.Options{boolOption(wire.OptEnforceFsync, true), stringOption(OptDurability, "replicated")}, want: wire.CodeInvalidOptionValue},
		{name: "fsync false contradicts persisted offsets", opts: wire.Options{boolOption(wire.OptEnforceFsync, false), stringOption(OptConsumerOffsetDurability, "persisted")}, want: wire.CodeInvalidOptionValue},
		{name: "fsync agrees with durability", opts: wire.Options{stringOption(OptDurability, "persisted"), boolOption(wire.OptEnforceFsync, true)},
			canon: wire.Options{boolOption(wire.OptEnforceFsync, true), stringOption(OptDurability, "persisted")}},
		{name: "durability garbage", opts: wire.Options{stringOption(OptDurability, "eventually")}, want: wire.CodeInvalidOptionValue},
		{name: "durability as bool", opts: wire.Options{boolOption(OptDurability, true)}, want: wire.CodeInvalidOptionValue},
		{name: "preallocate within budget", opts: wire.Options{boolOption(wire.OptPreallocateSegments, true)}, parts: 64},
		{name: "preallocate over budget", opts: wire.Options{boolOption(wire.OptPreallocateSegments, true)}, parts: 65, want: wire.CodeInvalidOptionValue},
		{name: "unknown key", opts: wire.Options{stringOption("replication_factor", "3")}, want: wire.CodeUnsupportedOptionKey},
		{name: "non-string key", opts: wire.Options{{Key: wire.Uint8Value(1), Value: wire.StringValue("x")}}, want: wire.CodeUnsupportedOptionKey},
		{name: "partitions_count is no option", opts: wire.Options{stringOption("partitions_count", "3")}, want: wire.CodeUnsupportedOptionKey},
		{name: "duplicate key", opts: wire.Options{boolOption(wire.OptEnforceFsync, true), boolOption(wire.OptEnforceFsync, true)}, want: wire.CodeInvalidOptionValue},
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
			if tc.canon != nil && !optionsEqual(res.Explicit, tc.canon) {
				t.Fatalf("explicit %+v, want %+v", res.Explicit, tc.canon)
			}
			if !validOptionBlocks(res.Config, res.Explicit, res.Derived) || !validTopicConfig(res.Config) {
				t.Fatalf("resolution inconsistent: %+v", res)
			}
		})
	}
}

func TestResolveTopicCreateUsesStampedDefaults(t *testing.T) {
	d := DefaultTopicDefaults()
	d.Durability = DurabilityPersisted
	d.Settings.SegmentSize = 64 << 20
	d.Settings.MessageExpiry = 3_600_000_000
	res, code := ResolveTopicCreate(nil, 1, d)
	if code != OK || res.Config.SegmentSize != 64<<20 || !res.Config.EnforceFsync || res.Config.MessageExpiry != 3_600_000_000 {
		t.Fatalf("%v %+v", code, res.Config)
	}
	if v, _ := res.Derived.Get(wire.OptEnforceFsync); string(v.Value) != "\x01" {
		t.Fatalf("derived enforce_fsync %+v does not follow persisted durability", v)
	}
	// An explicit enforce_fsync=false overrides a persisted default for
	// both durability keys.
	res, code = ResolveTopicCreate(wire.Options{boolOption(wire.OptEnforceFsync, false)}, 1, d)
	if code != OK || res.Config.Durability != DurabilityReplicated || res.Config.EnforceFsync {
		t.Fatalf("%v %+v", code, res.Config)
	}
	d.SegmentSizeMax = 32 << 20
	if _, code := ResolveTopicCreate(nil, 1, d); code != wire.CodeInvalidOptionValue {
		t.Fatalf("defaults above their own ceiling: %v", code)
	}
	d = DefaultTopicDefaults()
	d.SegmentSizeMax = 32 << 20
	if _, code := ResolveTopicCreate(wire.Options{u64Option(wire.OptSegmentSize, 64<<20)}, 1, d); code != wire.CodeInvalidOptionValue {
		t.Fatalf("explicit segment above the node ceiling: %v", code)
	}
	d.Settings.SegmentSize = 16 << 20
	if _, code := ResolveTopicCreate(wire.Options{u64Option(wire.OptSegmentSize, 32<<20)}, 1, d); code != OK {
		t.Fatalf("explicit segment at the node ceiling: %v", code)
	}
}

func TestResolveTopicUpdate(t *testing.T) {
	d := DefaultTopicDefaults()
	cur, _ := ResolveTopicCreate(wire.Options{stringOption(wire.OptCompressionAlgorithm, "gzip")}, 1, d)
	tp := &Topic{Config: cur.Config, Explicit: cur.Explicit, Derived: cur.Derived, Partitions: make([]Partition, 1)}
	tests := []struct {
		name     string
		opts     wire.Options
		want     wire.Code
		explicit []string
	}{
		{"nothing", nil, OK, []string{wire.OptCompressionAlgorithm}},
		{"expiry", wire.Options{u64Option(wire.OptMessageExpiry, 9)}, OK, []string{wire.OptCompressionAlgorithm, wire.OptMessageExpiry}},
		{"compression has no default keyword", wire.Options{u64Option(wire.OptMaxTopicSize, 0), stringOption(wire.OptCompressionAlgorithm, "default")}, wire.CodeInvalidOptionValue, nil},
		{"sentinel returns key to derived", wire.Options{u64Option(wire.OptMaxTopicSize, 2<<30), u64Option(wire.OptMessageExpiry, 0)}, OK, []string{wire.OptCompressionAlgorithm, wire.OptMaxTopicSize}},
		{"segment size is create-only", wire.Options{u64Option(wire.OptSegmentSize, 1<<20)}, wire.CodeUnsupportedOptionKey, nil},
		{"durability is create-only", wire.Options{stringOption(OptDurability, "persisted")}, wire.CodeUnsupportedOptionKey, nil},
		{"unknown", wire.Options{stringOption("x", "y")}, wire.CodeUnsupportedOptionKey, nil},
		{"bad value", wire.Options{stringOption(wire.OptMessageExpiry, "x")}, wire.CodeInvalidOptionValue, nil},
		{"cap below segment", wire.Options{u64Option(wire.OptMaxTopicSize, 1024)}, wire.CodeInvalidTopicSize, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, code := ResolveTopicUpdate(tc.opts, tp, d)
			if code != tc.want {
				t.Fatalf("code %v, want %v", code, tc.want)
			}
			if code != OK {
				return
			}
			var got []string
			for _, e := range res.Explicit {
				got = append(got, string(e.Key.Value))
			}
			if len(got) != len(tc.explicit) {
				t.Fatalf("explicit keys %v, want %v", got, tc.explicit)
			}
			for i := range got {
				if got[i] != tc.explicit[i] {
					t.Fatalf("explicit keys %v, want %v", got, tc.explicit)
				}
			}
			if !validOptionBlocks(res.Config, res.Explicit, res.Derived) {
				t.Fatal("blocks inconsistent with the config")
			}
		})
	}
}

func TestEmptyCatalogs(t *testing.T) {
	if ValidateEmptyCatalog(nil) != OK || ValidateEmptyCatalog(wire.Options{stringOption("a", "b")}) != wire.CodeUnsupportedOptionKey {
		t.Fatal("stream/user catalogs must refuse every key")
	}
}
