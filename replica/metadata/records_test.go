package metadata

import (
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
)

// fakeStats reports deterministic figures derived from the partition key
// and refuses to report for a stale incarnation.
type fakeStats struct {
	t    *testing.T
	revs map[[3]uint32]uint64
}

func (f fakeStats) PartitionStats(stream, topic uint32, p Partition) PartitionStats {
	if rev, ok := f.revs[[3]uint32{stream, topic, p.ID}]; ok && rev != p.Revision {
		f.t.Fatalf("asked for a stale incarnation of %d/%d/%d", stream, topic, p.ID)
	}
	k := uint64(stream*100 + topic*10 + p.ID)
	return PartitionStats{SegmentsCount: 1, CurrentOffset: k, SizeBytes: 1000 * (k + 1), MessagesCount: k + 1}
}

func TestRecords(t *testing.T) {
	m := newMachine(t)
	m.stream("s0")
	m.stream("s1")
	m.topic("s1", "a", 2)
	m.must(CreateTopic{Stream: NamedID("s1"), Name: "b", PartitionsCount: 1, Defaults: DefaultTopicDefaults(),
		Options: wire.Options{stringOption(wire.OptCompressionAlgorithm, "gzip")}})
	m.must(CreateConsumerGroup{Stream: NamedID("s1"), Topic: NamedID("a"), Name: "g"})
	m.client(cl(5), JoinConsumerGroup{Stream: NamedID("s1"), Topic: NamedID("a"), Group: NamedID("g")})
	m.client(cl(6), JoinConsumerGroup{Stream: NamedID("s1"), Topic: NamedID("a"), Group: NamedID("g")})
	src := fakeStats{t: t, revs: map[[3]uint32]uint64{}}

	st := m.s.StreamByName("s1")
	d := StreamDetailsRecord(st, src)
	b, err := d.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.DecodeStreamDetails(b)
	if err != nil {
		t.Fatal(err)
	}
	// s1 = stream 1; partitions 1/0/0, 1/0/1, 1/1/0 have k 100, 101, 110.
	if got.ID != 1 || got.TopicsCount != 2 || got.MessagesCount != 101+102+111 || got.SizeBytes != 1000*(101+102+111) {
		t.Fatalf("stream details %+v", got.Stream)
	}
	if got.Topics[1].Name != "b" || got.Topics[1].CompressionAlgorithm != wire.CompressionGzip || len(got.Topics[1].Options) != 1 ||
		len(got.Topics[1].DerivedOptions) != len(TopicOptionCatalog)-1 {
		t.Fatalf("topic record %+v", got.Topics[1])
	}
	if r := StreamRecord(st, src); r.SizeBytes != d.SizeBytes || r.MessagesCount != d.MessagesCount {
		t.Fatal("StreamRecord and StreamDetailsRecord disagree")
	}

	td := TopicDetailsRecord(st.TopicByName("a"), src)
	b, _ = td.AppendTo(nil)
	gotT, err := wire.DecodeTopicDetails(b)
	if err != nil {
		t.Fatal(err)
	}
	if gotT.PartitionsCount != 2 || len(gotT.Partitions) != 2 || gotT.Partitions[1].CurrentOffset != 101 || gotT.MessagesCount != 101+102 {
		t.Fatalf("topic details %+v", gotT)
	}
	if created := TopicDetailsRecord(st.TopicByName("a"), nil); created.SizeBytes != 0 || created.Partitions[0].SegmentsCount != 0 {
		t.Fatal("nil source must report zeros")
	}

	tp := st.TopicByName("a")
	gd := GroupDetailsRecord(tp, tp.GroupByName("g"))
	b, _ = gd.AppendTo(nil)
	gotG, err := wire.DecodeConsumerGroupDetails(b)
	if err != nil {
		t.Fatal(err)
	}
	if gotG.PartitionsCount != 2 || gotG.MembersCount != 2 || !slices.Equal(gotG.Members[1].Partitions, []uint32{1}) {
		t.Fatalf("group details %+v", gotG)
	}
	if a, ok := AssignmentRecord(tp.GroupByName("g"), cl(5)); !ok || a.Generation != 2 || !slices.Equal(a.Partitions, []uint32{0}) {
		t.Fatalf("assignment %+v", a)
	}
	if _, ok := AssignmentRecord(tp.GroupByName("g"), cl(9)); ok {
		t.Fatal("non-member has an assignment")
	}

	u := m.user("alice", streamPerms(wire.StreamPermissions{StreamID: 1, ReadStream: true}))
	m.as(u.ID, CreatePersonalAccessToken{Name: "b", Hash: TokenHash{1}})
	m.as(u.ID, CreatePersonalAccessToken{Name: "a", Expiry: 5, Hash: TokenHash{2}})
	ud := UserDetailsRecord(m.s.User(u.ID))
	b, err = ud.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	gotU, err := wire.DecodeUserDetails(b)
	if err != nil || gotU.Username != "alice" || gotU.Permissions == nil || !gotU.Permissions.Streams[0].ReadStream {
		t.Fatalf("user details %+v (%v)", gotU, err)
	}
	toks := TokenRecords(m.s.User(u.ID))
	if len(toks) != 2 || toks[0].Name != "a" || toks[0].ExpiryAt == 0 || toks[1].ExpiryAt != 0 {
		t.Fatalf("tokens %+v", toks)
	}
}
