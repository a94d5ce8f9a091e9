package metadata

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestStreamIDsAreLowestFree(t *testing.T) {
	m := newMachine(t)
	for i, name := range []string{"a", "b", "c", "d"} {
		if st := m.stream(name); st.ID != uint32(i) {
			t.Fatalf("stream %s got id %d, want %d", name, st.ID, i)
		}
	}
	m.must(DeleteStream{Stream: NumericID(1)})
	m.must(DeleteStream{Stream: NamedID("c")})
	if st := m.stream("e"); st.ID != 1 {
		t.Fatalf("after deleting 1 and 2 the next id is %d, want 1", st.ID)
	}
	if st := m.stream("f"); st.ID != 2 {
		t.Fatalf("next id %d, want 2", st.ID)
	}
	if st := m.stream("g"); st.ID != 4 {
		t.Fatalf("next id %d, want 4", st.ID)
	}
	// Deleting the highest id and recreating reuses it, and the new
	// incarnation has a larger revision.
	old := m.s.Stream(4)
	m.must(DeleteStream{Stream: NumericID(4)})
	if st := m.stream("h"); st.ID != 4 || st.Revision <= old.Revision {
		t.Fatalf("recreated id %d revision %d (old revision %d)", st.ID, st.Revision, old.Revision)
	}
	if got := m.s.StreamsCount(); got != 5 {
		t.Fatalf("StreamsCount = %d, want 5", got)
	}
}

func TestStreamRules(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		name string
		cmd  Command
		want wire.Code
	}{
		{"duplicate name", CreateStream{Name: "s0"}, wire.CodeStreamNameAlreadyExists},
		{"empty name", CreateStream{Name: ""}, wire.CodeInvalidStreamName},
		{"name over 255 bytes", CreateStream{Name: long}, wire.CodeInvalidStreamName},
		{"invalid utf-8", CreateStream{Name: "\xff\xfe"}, wire.CodeInvalidStreamName},
		{"any option refused", CreateStream{Name: "x", Options: wire.Options{stringOption("k", "v")}}, wire.CodeUnsupportedOptionKey},
		{"update missing id", UpdateStream{Stream: NumericID(9), Name: "z"}, wire.CodeStreamIdNotFound},
		{"update missing name", UpdateStream{Stream: NamedID("nope"), Name: "z"}, wire.CodeStreamIdNotFound},
		{"update to taken name", UpdateStream{Stream: NumericID(0), Name: "s1"}, wire.CodeStreamNameAlreadyExists},
		{"update to same name", UpdateStream{Stream: NumericID(0), Name: "s0"}, OK},
		{"update with option", UpdateStream{Stream: NumericID(0), Name: "s0", Options: wire.Options{stringOption("k", "v")}}, wire.CodeUnsupportedOptionKey},
		{"delete missing", DeleteStream{Stream: NumericID(7)}, wire.CodeStreamIdNotFound},
		{"purge missing", PurgeStream{Stream: NamedID("nope")}, wire.CodeStreamIdNotFound},
		{"purge empty stream", PurgeStream{Stream: NumericID(1)}, OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.stream("s0")
			m.stream("s1")
			m.expect(tc.want, tc.cmd)
		})
	}
}

func TestStreamRenameAndCreatedAt(t *testing.T) {
	m := newMachine(t)
	st := m.stream("old")
	if st.CreatedAt != m.ts {
		t.Fatalf("created_at %d, want the prepare timestamp %d", st.CreatedAt, m.ts)
	}
	m.must(UpdateStream{Stream: NamedID("old"), Name: "new"})
	if m.s.StreamByName("old") != nil {
		t.Fatal("old name still resolves")
	}
	got := m.s.StreamByName("new")
	if got == nil || got.ID != st.ID || got.CreatedAt != st.CreatedAt {
		t.Fatalf("renamed stream = %+v", got)
	}
	m.stream("old") // the old name is free again
}

func TestTooManyStreams(t *testing.T) {
	m := newMachine(t)
	l := DefaultLimits()
	l.MaxStreams = 2
	m.sys(SetLimits{Limits: l})
	m.stream("a")
	m.stream("b")
	m.expect(wire.CodeTooManyStreams, CreateStream{Name: "c"})
	m.must(DeleteStream{Stream: NumericID(0)})
	if st := m.stream("c"); st.ID != 0 {
		t.Fatalf("id %d, want 0", st.ID)
	}
}

func TestTopicIDsPerStream(t *testing.T) {
	m := newMachine(t)
	m.stream("s0")
	m.stream("s1")
	for i := range 3 {
		if tp := m.topic("s0", "t"+string(rune('a'+i)), 1); tp.ID != uint32(i) || tp.StreamID != 0 {
			t.Fatalf("topic %d in s0 got %d/%d", i, tp.StreamID, tp.ID)
		}
	}
	// Topic ids and names are per stream.
	if tp := m.topic("s1", "ta", 2); tp.ID != 0 || tp.StreamID != 1 {
		t.Fatalf("first topic of s1 got %d/%d", tp.StreamID, tp.ID)
	}
	m.must(DeleteTopic{Stream: NamedID("s0"), Topic: NumericID(1)})
	if tp := m.topic("s0", "tz", 1); tp.ID != 1 {
		t.Fatalf("reused topic id %d, want 1", tp.ID)
	}
	if n := m.s.Stream(0).TopicsCount(); n != 3 {
		t.Fatalf("TopicsCount = %d", n)
	}
}

func TestTopicRules(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
		want wire.Code
	}{
		{"missing stream", CreateTopic{Stream: NumericID(5), Name: "t", PartitionsCount: 1, Defaults: DefaultTopicDefaults()}, wire.CodeStreamIdNotFound},
		{"duplicate name", CreateTopic{Stream: NumericID(0), Name: "t0", PartitionsCount: 1, Defaults: DefaultTopicDefaults()}, wire.CodeTopicNameAlreadyExists},
		{"1001 partitions", CreateTopic{Stream: NumericID(0), Name: "t", PartitionsCount: 1001, Defaults: DefaultTopicDefaults()}, wire.CodeTooManyPartitions},
		{"1000 partitions", CreateTopic{Stream: NumericID(0), Name: "t", PartitionsCount: 1000, Defaults: DefaultTopicDefaults()}, OK},
		{"zero partitions", CreateTopic{Stream: NumericID(0), Name: "t", PartitionsCount: 0, Defaults: DefaultTopicDefaults()}, OK},
		{"empty name", CreateTopic{Stream: NumericID(0), Name: "", Defaults: DefaultTopicDefaults()}, wire.CodeInvalidTopicName},
		{"unknown option", CreateTopic{Stream: NumericID(0), Name: "t", Options: wire.Options{u64Option("retention", 1)}, Defaults: DefaultTopicDefaults()}, wire.CodeUnsupportedOptionKey},
		{"bad option value", CreateTopic{Stream: NumericID(0), Name: "t", Options: wire.Options{u64Option(wire.OptSegmentSize, 1000)}, Defaults: DefaultTopicDefaults()}, wire.CodeInvalidOptionValue},
		{"invalid stamped defaults", CreateTopic{Stream: NumericID(0), Name: "t", Defaults: TopicDefaults{}}, wire.CodeInvalidOptionValue},
		{"update missing topic", UpdateTopic{Stream: NumericID(0), Topic: NumericID(9), Name: "x"}, wire.CodeTopicIdNotFound},
		{"update missing stream", UpdateTopic{Stream: NumericID(9), Topic: NumericID(0), Name: "x"}, wire.CodeStreamIdNotFound},
		{"update to taken name", UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t1"}, wire.CodeTopicNameAlreadyExists},
		{"update create-only key", UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t0", Options: wire.Options{u64Option(wire.OptSegmentSize, 1<<20)}}, wire.CodeUnsupportedOptionKey},
		{"update cap below segment", UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t0", Options: wire.Options{u64Option(wire.OptMaxTopicSize, 1<<20)}}, wire.CodeInvalidTopicSize},
		{"delete missing", DeleteTopic{Stream: NumericID(0), Topic: NamedID("zz")}, wire.CodeTopicIdNotFound},
		{"purge missing", PurgeTopic{Stream: NumericID(0), Topic: NumericID(3)}, wire.CodeTopicIdNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.stream("s0")
			m.topic("s0", "t0", 2)
			m.topic("s0", "t1", 2)
			m.expect(tc.want, tc.cmd)
		})
	}
}

func TestTooManyTopics(t *testing.T) {
	m := newMachine(t)
	l := DefaultLimits()
	l.MaxTopicsPerStream = 1
	m.sys(SetLimits{Limits: l})
	m.stream("s")
	m.topic("s", "a", 1)
	m.expect(wire.CodeTooManyTopics, CreateTopic{Stream: NumericID(0), Name: "b", Defaults: DefaultTopicDefaults()})
}

func TestCreateTopicRecord(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	r := m.must(CreateTopic{
		Stream: NamedID("s"), Name: "orders", PartitionsCount: 3, Defaults: DefaultTopicDefaults(),
		Options: wire.Options{stringOption(wire.OptEnforceFsync, "true"), u64Option(wire.OptMessageExpiry, 5_000_000)},
	})
	tp := r.Topic
	if tp.CreatedAt != m.ts || tp.PartitionsCount() != 3 || r.Stream.TopicsCount() != 1 {
		t.Fatalf("topic %+v", tp)
	}
	for i, p := range tp.Partitions {
		if p.ID != uint32(i) || p.CreatedAt != m.ts || p.Revision != tp.Revision {
			t.Fatalf("partition %d = %+v (topic revision %d)", i, p, tp.Revision)
		}
	}
	if !tp.Config.EnforceFsync || tp.Config.Durability != DurabilityPersisted || tp.Config.MessageExpiry != 5_000_000 {
		t.Fatalf("config %+v", tp.Config)
	}
	// The explicit block is canonical and in catalog order: the String
	// "true" comes back Bool 1.
	want := wire.Options{u64Option(wire.OptMessageExpiry, 5_000_000), boolOption(wire.OptEnforceFsync, true)}
	if !optionsEqual(tp.Explicit, want) {
		t.Fatalf("explicit = %+v", tp.Explicit)
	}
	if len(tp.Derived) != 9 {
		t.Fatalf("derived has %d keys, want 9", len(tp.Derived))
	}
	var created []uint32
	for _, e := range r.Effects {
		if e.Kind == EffectPartitionCreated && e.Revision == tp.Revision {
			created = append(created, e.Partition)
		}
	}
	if !slices.Equal(created, []uint32{0, 1, 2}) {
		t.Fatalf("created effects %v", created)
	}
}

func TestUpdateTopicPatchesOptions(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 1)
	d := DefaultTopicDefaults()
	r := m.must(UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t2", Defaults: d, Options: wire.Options{
		stringOption(wire.OptCompressionAlgorithm, "gzip"), u64Option(wire.OptMaxTopicSize, 10<<30),
	}})
	tp := m.s.Stream(0).TopicByName("t2")
	if tp == nil || tp != r.Topic {
		t.Fatal("renamed topic does not resolve")
	}
	if tp.Config.CompressionAlgorithm != wire.CompressionGzip || tp.Config.MaxTopicSize != 10<<30 {
		t.Fatalf("config %+v", tp.Config)
	}
	if v, ok := tp.Explicit.Get(wire.OptCompressionAlgorithm); !ok || string(v.Value) != "gzip" {
		t.Fatalf("explicit %+v", tp.Explicit)
	}
	if _, ok := tp.Derived.Get(wire.OptCompressionAlgorithm); ok {
		t.Fatal("updated key still in the derived block")
	}
	if len(tp.Explicit) != 2 || len(tp.Explicit)+len(tp.Derived) != len(TopicOptionCatalog) {
		t.Fatalf("blocks hold %d + %d keys", len(tp.Explicit), len(tp.Derived))
	}
	if len(r.Effects) != 1 || r.Effects[0].Kind != EffectTopicUpdated {
		t.Fatalf("effects %+v", r.Effects)
	}
	// A rename alone, or a sentinel for a key already at its default,
	// changes no setting and emits nothing.
	r = m.must(UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t3", Defaults: d, Options: wire.Options{u64Option(wire.OptMessageExpiry, 0)}})
	if len(r.Effects) != 0 || r.Topic.Config.MessageExpiry != math.MaxUint64 {
		t.Fatalf("sentinel update changed things: %+v %+v", r.Effects, r.Topic.Config)
	}
	// A sentinel for an explicit key returns it to the stamped default as
	// a derived key.
	d.Settings.MaxTopicSize = 20 << 30
	r = m.must(UpdateTopic{Stream: NumericID(0), Topic: NumericID(0), Name: "t3", Defaults: d, Options: wire.Options{stringOption(wire.OptMaxTopicSize, "server_default")}})
	if r.Topic.Config.MaxTopicSize != 20<<30 || len(r.Effects) != 1 {
		t.Fatalf("reset to default: %+v %+v", r.Topic.Config, r.Effects)
	}
	if _, ok := r.Topic.Explicit.Get(wire.OptMaxTopicSize); ok {
		t.Fatal("reset key still explicit")
	}
	if v, ok := r.Topic.Derived.Get(wire.OptMaxTopicSize); !ok || v.Kind != wire.KindUint64 {
		t.Fatalf("reset key not derived: %+v", r.Topic.Derived)
	}
}

func TestDeleteAndPurgeEffects(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "a", 2)
	m.topic("s", "b", 1)
	m.must(CreateConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Name: "g"})
	r := m.must(PurgeTopic{Stream: NumericID(0), Topic: NumericID(0)})
	if len(r.Effects) != 2 || r.Effects[1].Kind != EffectPartitionPurged || r.Effects[1].Generation != 1 {
		t.Fatalf("purge topic effects %+v", r.Effects)
	}
	r = m.must(PurgeStream{Stream: NumericID(0)})
	gens := map[[2]uint32]uint64{}
	for _, e := range r.Effects {
		gens[[2]uint32{e.Topic, e.Partition}] = e.Generation
	}
	if len(r.Effects) != 3 || gens[[2]uint32{0, 1}] != 2 || gens[[2]uint32{1, 0}] != 1 {
		t.Fatalf("purge stream effects %+v", r.Effects)
	}
	if p, _ := m.s.Stream(0).Topic(0).Partition(1); p.PurgeGeneration != 2 {
		t.Fatalf("purge generation %d", p.PurgeGeneration)
	}
	r = m.must(DeleteStream{Stream: NumericID(0)})
	var deleted, groups int
	for _, e := range r.Effects {
		switch e.Kind {
		case EffectPartitionDeleted:
			deleted++
		case EffectGroupDeleted:
			groups++
		}
	}
	if deleted != 3 || groups != 1 {
		t.Fatalf("delete stream effects %+v", r.Effects)
	}
}

func TestPartitions(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	tp := m.topic("s", "t", 2)
	rev := m.s.Revision()
	r := m.must(CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 3})
	if got := r.Topic.PartitionsCount(); got != 5 {
		t.Fatalf("partitions %d", got)
	}
	for i, p := range r.Topic.Partitions {
		if p.ID != uint32(i) {
			t.Fatalf("partition ids not dense: %+v", r.Topic.Partitions)
		}
		if i >= 2 && p.Revision != rev+1 {
			t.Fatalf("new partition %d revision %d, want %d", i, p.Revision, rev+1)
		}
		if i < 2 && p.Revision != tp.Revision {
			t.Fatalf("old partition %d revision changed", i)
		}
	}
	r = m.must(DeletePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 4})
	if got := r.Topic.PartitionsCount(); got != 1 {
		t.Fatalf("after delete %d partitions", got)
	}
	var deleted []uint32
	for _, e := range r.Effects {
		if e.Kind == EffectPartitionDeleted {
			deleted = append(deleted, e.Partition)
		}
	}
	if !slices.Equal(deleted, []uint32{1, 2, 3, 4}) {
		t.Fatalf("deleted %v, want the highest ids", deleted)
	}
	// Recreating reuses ids 1.. with a newer revision.
	r = m.must(CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 1})
	if p := r.Topic.Partitions[1]; p.Revision != m.s.Revision() {
		t.Fatalf("recreated partition %+v, state revision %d", p, m.s.Revision())
	}

	for _, tc := range []struct {
		name string
		cmd  Command
		want wire.Code
	}{
		{"create zero", CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 0}, wire.CodeTooManyPartitions},
		{"create 1001", CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 1001}, wire.CodeTooManyPartitions},
		{"delete zero", DeletePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 0}, wire.CodeTooManyPartitions},
		{"delete more than exist", DeletePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 3}, wire.CodeInvalidPartitionsCount},
		{"missing topic", CreatePartitions{Stream: NumericID(0), Topic: NumericID(4), Count: 1}, wire.CodeTopicIdNotFound},
		{"missing stream", DeletePartitions{Stream: NumericID(4), Topic: NumericID(0), Count: 1}, wire.CodeStreamIdNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { m.expect(tc.want, tc.cmd) })
	}
}

func TestPartitionIDSpace(t *testing.T) {
	m := newMachine(t)
	l := DefaultLimits()
	l.MaxPartitionsPerTopic = 5
	m.sys(SetLimits{Limits: l})
	m.stream("s")
	m.expect(wire.CodePartitionIdSpaceExhausted, CreateTopic{Stream: NumericID(0), Name: "big", PartitionsCount: 6, Defaults: DefaultTopicDefaults()})
	m.topic("s", "t", 4)
	m.must(CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 1})
	m.expect(wire.CodePartitionIdSpaceExhausted, CreatePartitions{Stream: NumericID(0), Topic: NumericID(0), Count: 1})
}
