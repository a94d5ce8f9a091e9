package integration

import (
	"archive/zip"
	"bytes"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func TestSystemCommands(t *testing.T) { overTransports(t, testSystemCommands) }

func testSystemCommands(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	c := s.Root(t)
	ctx := ctxT(t)

	must(t, c.Ping(ctx), "ping")
	me, err := c.GetMe(ctx)
	must(t, err, "get me")
	if me.UserID != 0 || me.Transport != tr.Wire() || me.Address == "" {
		t.Fatalf("get me: %+v", me)
	}
	clients, err := c.GetClients(ctx)
	must(t, err, "get clients")
	if len(clients) != 1 || clients[0].ClientID != me.ClientID {
		t.Fatalf("get clients: %+v, me %+v", clients, me)
	}
	other := s.Root(t)
	clients, err = c.GetClients(ctx)
	must(t, err, "get clients")
	if len(clients) != 2 {
		t.Fatalf("get clients with two connections: %+v", clients)
	}
	d, err := c.GetClient(ctx, me.ClientID)
	must(t, err, "get client")
	if d.ClientID != me.ClientID {
		t.Fatalf("get client: %+v", d)
	}
	_ = other

	cm, err := c.GetClusterMetadata(ctx)
	must(t, err, "cluster metadata")
	host, port, _ := net.SplitHostPort(s.Addr)
	if len(cm.Nodes) != 1 || cm.Nodes[0].Role != wire.RoleLeader || cm.Nodes[0].Status != wire.NodeHealthy ||
		cm.Nodes[0].IP != host || port != itoa(int(cm.Nodes[0].TCPPort)) {
		t.Fatalf("cluster metadata %+v, bound %s", cm, s.Addr)
	}
	if _, wsPort, _ := net.SplitHostPort(s.WSAddr); (s.WSAddr == "") != (cm.Nodes[0].WSPort == 0) || (s.WSAddr != "" && wsPort != itoa(int(cm.Nodes[0].WSPort))) {
		t.Fatalf("cluster metadata websocket port %d, bound %q", cm.Nodes[0].WSPort, s.WSAddr)
	}
	if _, qPort, _ := net.SplitHostPort(s.QUICAddr); (s.QUICAddr == "") != (cm.Nodes[0].QUICPort == 0) || (s.QUICAddr != "" && qPort != itoa(int(cm.Nodes[0].QUICPort))) {
		t.Fatalf("cluster metadata quic port %d, bound %q", cm.Nodes[0].QUICPort, s.QUICAddr)
	}

	opts, err := c.DescribeOptions(ctx, wire.ScopeTopic)
	must(t, err, "describe options")
	keys := map[string]bool{}
	for _, o := range opts {
		keys[o.Key] = true
	}
	for _, k := range []string{"compression_algorithm", "message_expiry", "max_topic_size", "segment_size", "durability", "consumer_offset_durability"} {
		if !keys[k] {
			t.Fatalf("describe options lacks %s: %+v", k, opts)
		}
	}
	so, err := c.DescribeOptions(ctx, wire.ScopeStream)
	must(t, err, "describe stream options")
	if len(so) != 0 {
		t.Fatalf("stream scope has options: %+v", so)
	}

	createStreamTopic(t, c, "stats", "t", 2, nil)
	_, err = c.SendMessages(ctx, name("stats"), name("t"), wire.PartitionByID(1), payloadMsgs(t, 1, 0, 25, 100))
	must(t, err, "send")
	st, err := c.GetStats(ctx)
	must(t, err, "get stats")
	if st.StreamsCount != 1 || st.TopicsCount != 1 || st.PartitionsCount != 2 || st.MessagesCount != 25 ||
		st.ClientsCount != 2 || st.ProcessID == 0 || st.Version == "" || st.MessagesSizeBytes == 0 {
		t.Fatalf("get stats: %+v", st)
	}

	snap, err := c.GetSnapshot(ctx, wire.SnapshotDeflated, []uint8{wire.SnapshotAll})
	must(t, err, "snapshot")
	zr, err := zip.NewReader(bytes.NewReader(snap), int64(len(snap)))
	must(t, err, "snapshot is a zip")
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	for _, want := range []string{"test.txt", "server_config.toml", "filesystem_overview.txt", "process_list.txt", "resource_usage.txt"} {
		if !slices.Contains(names, want) {
			t.Fatalf("snapshot lacks %s: %v", want, names)
		}
	}
	wantCode(t, c.FlushUnsavedBuffer(ctx, name("stats"), name("t"), 0, true), wire.CodeFeatureUnavailable, "flush")
}

func itoa(v int) string {
	return string(appendInt(nil, v))
}

func appendInt(b []byte, v int) []byte {
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func TestStreamsTopicsPartitions(t *testing.T) { overTransports(t, testStreamsTopicsPartitions) }

func testStreamsTopicsPartitions(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	c := s.Root(t)
	ctx := ctxT(t)

	st, err := c.CreateStream(ctx, "s1", nil)
	must(t, err, "create stream")
	if st.ID != 0 || st.Name != "s1" || st.TopicsCount != 0 {
		t.Fatalf("created stream %+v", st)
	}
	_, err = c.CreateStream(ctx, "s1", nil)
	wantCode(t, err, wire.CodeStreamNameAlreadyExists, "duplicate stream")
	_, err = c.CreateStream(ctx, "s2", nil)
	must(t, err, "create second stream")
	must(t, c.UpdateStream(ctx, name("s2"), "s2-renamed", nil), "rename stream")
	streams, err := c.GetStreams(ctx)
	must(t, err, "get streams")
	if len(streams) != 2 || streams[1].Name != "s2-renamed" {
		t.Fatalf("streams %+v", streams)
	}

	opts := wire.Options{}.
		With("message_expiry", wire.Uint64Value(uint64(time.Hour/time.Microsecond))).
		With("durability", wire.StringValue("persisted"))
	td, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: id(0), PartitionsCount: 3, Name: "t1", Options: opts})
	must(t, err, "create topic")
	if td.ID != 0 || td.PartitionsCount != 3 || len(td.Partitions) != 3 || td.MessageExpiry != uint64(time.Hour/time.Microsecond) {
		t.Fatalf("created topic %+v", td)
	}
	if v, ok := td.Options.Get("durability"); !ok || string(v.Value) != "persisted" {
		t.Fatalf("explicit options %+v", td.Options)
	}
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: id(0), PartitionsCount: 1, Name: "bad",
		Options: wire.Options{}.With("no_such_key", wire.StringValue("x"))})
	wantCode(t, err, wire.CodeUnsupportedOptionKey, "unknown topic option")
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: id(0), PartitionsCount: 1, Name: "t1"})
	wantCode(t, err, wire.CodeTopicNameAlreadyExists, "duplicate topic")
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: id(9), PartitionsCount: 1, Name: "x"})
	wantCode(t, err, wire.CodeStreamIdNotFound, "topic in missing stream")

	must(t, c.UpdateTopic(ctx, wire.UpdateTopic{StreamID: id(0), TopicID: id(0), Name: "t1-renamed",
		Options: wire.Options{}.With("message_expiry", wire.Uint64Value(uint64(2*time.Hour/time.Microsecond)))}), "update topic")
	td, err = c.GetTopic(ctx, id(0), name("t1-renamed"))
	must(t, err, "get renamed topic")
	if td.MessageExpiry != uint64(2*time.Hour/time.Microsecond) {
		t.Fatalf("updated expiry %d", td.MessageExpiry)
	}
	topics, err := c.GetTopics(ctx, id(0))
	must(t, err, "get topics")
	if len(topics) != 1 || topics[0].Name != "t1-renamed" {
		t.Fatalf("topics %+v", topics)
	}

	must(t, c.CreatePartitions(ctx, id(0), id(0), 2), "create partitions")
	td, err = c.GetTopic(ctx, id(0), id(0))
	must(t, err, "get topic")
	if td.PartitionsCount != 5 || len(td.Partitions) != 5 {
		t.Fatalf("after create partitions: %+v", td)
	}
	// The new partitions take messages at once.
	_, err = c.SendMessages(ctx, id(0), id(0), wire.PartitionByID(4), payloadMsgs(t, 4, 0, 3, 64))
	must(t, err, "send to a new partition")
	must(t, c.DeletePartitions(ctx, id(0), id(0), 1), "delete partitions")
	td, err = c.GetTopic(ctx, id(0), id(0))
	must(t, err, "get topic")
	if td.PartitionsCount != 4 {
		t.Fatalf("after delete partitions: %d", td.PartitionsCount)
	}
	_, err = c.SendMessages(ctx, id(0), id(0), wire.PartitionByID(4), payloadMsgs(t, 4, 0, 1, 64))
	wantCode(t, err, wire.CodeResourceNotFound, "send to a deleted partition")

	// Stream and topic stats merged from the partitions' shards.
	for p := uint32(0); p < 4; p++ {
		_, err = c.SendMessages(ctx, id(0), id(0), wire.PartitionByID(p), payloadMsgs(t, p, 0, int(p)+1, 64))
		must(t, err, "send")
	}
	sd, err := c.GetStream(ctx, id(0))
	must(t, err, "get stream")
	if sd.MessagesCount != 10 || len(sd.Topics) != 1 || sd.Topics[0].MessagesCount != 10 || sd.SizeBytes == 0 {
		t.Fatalf("stream stats %+v", sd)
	}
	td, err = c.GetTopic(ctx, id(0), id(0))
	must(t, err, "get topic")
	if td.Partitions[3].MessagesCount != 4 || td.Partitions[3].CurrentOffset != 3 || td.Partitions[3].SegmentsCount < 1 {
		t.Fatalf("partition stats %+v", td.Partitions[3])
	}

	must(t, c.PurgeTopic(ctx, id(0), id(0)), "purge topic")
	waitFor(t, func() bool {
		td, err := c.GetTopic(ctx, id(0), id(0))
		return err == nil && td.MessagesCount == 0
	}, "purged topic to be empty")
	// Offsets continue after a purge: nothing is ever minted twice.
	conf, err := c.SendMessages(ctx, id(0), id(0), wire.PartitionByID(3), payloadMsgs(t, 3, 0, 1, 64))
	must(t, err, "send after purge")
	if conf[0].BaseOffset != 4 {
		t.Fatalf("first offset after purge %d, want 4", conf[0].BaseOffset)
	}
	must(t, c.PurgeStream(ctx, id(0)), "purge stream")

	must(t, c.DeleteTopic(ctx, id(0), id(0)), "delete topic")
	_, err = c.GetTopic(ctx, id(0), id(0))
	wantCode(t, err, wire.CodeTopicIdNotFound, "deleted topic")
	// The id is reused by a new topic that starts empty.
	td, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: id(0), PartitionsCount: 1, Name: "again"})
	must(t, err, "recreate topic")
	pm := poll(t, c, "s1", "again", 0, wire.PollFromOffset(0), 10, wire.SingleConsumer(id(1)), false)
	if pm.MessagesCount != 0 || td.ID != 0 {
		t.Fatalf("recreated topic %d holds %d messages", td.ID, pm.MessagesCount)
	}
	must(t, c.DeleteStream(ctx, name("s2-renamed")), "delete stream")
	_, err = c.GetStream(ctx, name("s2-renamed"))
	wantCode(t, err, wire.CodeStreamIdNotFound, "deleted stream")
	wantCode(t, c.DeleteStream(ctx, id(7)), wire.CodeStreamIdNotFound, "delete missing stream")
}

func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSendAndPoll(t *testing.T) { overTransports(t, testSendAndPoll) }

func testSendAndPoll(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "m", "t", 3, nil)
	cons := wire.SingleConsumer(id(7))

	// Partition-id sends: dense offsets per partition, confirmations match.
	for b := 0; b < 4; b++ {
		conf, err := c.SendMessages(ctx, name("m"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, b*10, 10, 200))
		must(t, err, "send")
		if len(conf) != 1 || conf[0].BaseOffset != uint64(b*10) || conf[0].PartitionID != 0 {
			t.Fatalf("confirmation %+v, want base %d", conf, b*10)
		}
	}
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromOffset(0), 100, cons, false), 0, 40)
	// A poll cut inside stored batches returns exactly the range.
	pm := poll(t, c, "m", "t", 0, wire.PollFromOffset(13), 15, cons, false)
	wantOffsets(t, pm, 13, 15)
	for i, m := range pm.Messages() {
		if _, seq := seqOf(m.Payload); seq != uint64(13+i) {
			t.Fatalf("message at offset %d carries seq %d", m.Offset, seq)
		}
	}
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromFirst(), 5, cons, false), 0, 5)
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromLast(), 5, cons, false), 35, 5)
	if pm := poll(t, c, "m", "t", 0, wire.PollFromOffset(40), 5, cons, false); pm.MessagesCount != 0 || pm.CurrentOffset != 39 {
		t.Fatalf("poll past the end: %+v", pm)
	}
	if pm := poll(t, c, "m", "t", 0, wire.PollFromOffset(0), 0, cons, false); pm.MessagesCount != 0 {
		t.Fatalf("poll of 0 messages returned %d", pm.MessagesCount)
	}
	// Next with auto-commit walks the partition.
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromNext(), 12, cons, true), 0, 12)
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromNext(), 12, cons, true), 12, 12)
	off, err := c.GetConsumerOffset(ctx, cons, name("m"), name("t"), wire.SomePartition(0))
	must(t, err, "get offset")
	if off == nil || off.StoredOffset != 23 || off.CurrentOffset != 39 {
		t.Fatalf("auto-committed offset %+v", off)
	}
	// Timestamp polling: messages appended after a point in time.
	mid := uint64(time.Now().UnixMicro())
	time.Sleep(5 * time.Millisecond)
	_, err = c.SendMessages(ctx, name("m"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 40, 5, 200))
	must(t, err, "send")
	wantOffsets(t, poll(t, c, "m", "t", 0, wire.PollFromTimestamp(mid), 100, cons, false), 40, 5)

	// Server-side balanced and keyed partitioning.
	for i := 0; i < 6; i++ {
		_, err := c.SendMessagesServerPartitioned(ctx, name("m"), name("t"), wire.Balanced(), payloadMsgs(t, 9, i, 1, 32))
		must(t, err, "balanced send")
	}
	key := []byte("user-42")
	kp := wire.PartitionForKey(key, 3)
	for i := 0; i < 3; i++ {
		conf, err := c.SendMessagesServerPartitioned(ctx, name("m"), name("t"), wire.PartitionByKey(key), payloadMsgs(t, 8, i, 1, 32))
		must(t, err, "keyed send")
		if conf[0].PartitionID != kp {
			t.Fatalf("keyed send went to %d, want %d", conf[0].PartitionID, kp)
		}
	}
	td, err := c.GetTopic(ctx, name("m"), name("t"))
	must(t, err, "get topic")
	if td.Partitions[1].MessagesCount+td.Partitions[2].MessagesCount < 4 {
		t.Fatalf("balanced sends did not spread: %+v", td.Partitions)
	}

	// Errors of the data plane.
	_, err = c.SendMessages(ctx, name("m"), name("t"), wire.PartitionByID(3), payloadMsgs(t, 0, 0, 1, 32))
	wantCode(t, err, wire.CodeResourceNotFound, "send to a missing partition")
	_, err = c.SendMessages(ctx, name("nope"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 32))
	wantCode(t, err, wire.CodeResourceNotFound, "send to a missing stream")
	_, err = c.PollMessages(ctx, wire.PollMessages{Consumer: cons, StreamID: name("m"), TopicID: name("zz"),
		Partition: wire.SomePartition(0), Strategy: wire.PollFromFirst(), Count: 1})
	wantCode(t, err, wire.CodeTopicIdNotFound, "poll of a missing topic")
	_, err = c.PollMessages(ctx, wire.PollMessages{Consumer: cons, StreamID: name("m"), TopicID: name("t"),
		Partition: wire.SomePartition(9), Strategy: wire.PollFromFirst(), Count: 1})
	wantCode(t, err, wire.CodePartitionNotFound, "poll of a missing partition")
}

func TestConsumerOffsets(t *testing.T) { overTransports(t, testConsumerOffsets) }

func testConsumerOffsets(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "o", "t", 2, nil)
	cons := wire.SingleConsumer(name("reader"))
	p0 := wire.SomePartition(0)

	wantCode(t, c.StoreConsumerOffset(ctx, cons, name("o"), name("t"), p0, 0), wire.CodeInvalidOffset, "store on an empty partition")
	_, err := c.SendMessages(ctx, name("o"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 10, 50))
	must(t, err, "send")
	off, err := c.GetConsumerOffset(ctx, cons, name("o"), name("t"), p0)
	must(t, err, "get missing offset")
	if off != nil {
		t.Fatalf("offset before any store: %+v", off)
	}
	must(t, c.StoreConsumerOffset(ctx, cons, name("o"), name("t"), p0, 4), "store")
	wantCode(t, c.StoreConsumerOffset(ctx, cons, name("o"), name("t"), p0, 10), wire.CodeInvalidOffset, "store beyond current")
	off, err = c.GetConsumerOffset(ctx, cons, name("o"), name("t"), p0)
	must(t, err, "get offset")
	if off == nil || off.StoredOffset != 4 || off.CurrentOffset != 9 || off.PartitionID != 0 {
		t.Fatalf("stored offset %+v", off)
	}
	// Explicit stores may rewind.
	must(t, c.StoreConsumerOffset(ctx, cons, name("o"), name("t"), p0, 2), "rewind")
	wantOffsets(t, poll(t, c, "o", "t", 0, wire.PollFromNext(), 3, cons, false), 3, 3)
	// Numeric and named consumers are distinct keys.
	off, err = c.GetConsumerOffset(ctx, wire.SingleConsumer(id(1)), name("o"), name("t"), p0)
	must(t, err, "get other consumer")
	if off != nil {
		t.Fatalf("another consumer sees %+v", off)
	}
	must(t, c.DeleteConsumerOffset(ctx, cons, name("o"), name("t"), p0), "delete offset")
	wantCode(t, c.DeleteConsumerOffset(ctx, cons, name("o"), name("t"), p0), wire.CodeConsumerOffsetNotFound, "delete twice")
	_, err = c.GetConsumerOffset(ctx, cons, name("o"), name("t"), wire.SomePartition(5))
	wantCode(t, err, wire.CodePartitionNotFound, "offset of a missing partition")
}

func TestSegmentsAndDeleteSegments(t *testing.T) { overTransports(t, testSegmentsAndDeleteSegments) }

func testSegmentsAndDeleteSegments(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "seg", "t", 1, wire.Options{}.With("segment_size", wire.Uint64Value(1<<20)))
	// 12 batches of 100 KiB seal a segment about every 10.
	for b := 0; b < 24; b++ {
		_, err := c.SendMessages(ctx, name("seg"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, b*10, 10, 10<<10))
		must(t, err, "send")
	}
	td, err := c.GetTopic(ctx, name("seg"), name("t"))
	must(t, err, "get topic")
	if td.Partitions[0].SegmentsCount < 3 || td.Partitions[0].MessagesCount != 240 {
		t.Fatalf("partition %+v: want ≥ 3 segments and 240 messages", td.Partitions[0])
	}
	wantOffsets(t, poll(t, c, "seg", "t", 0, wire.PollFromOffset(95), 20, wire.SingleConsumer(id(1)), false), 95, 20)
	must(t, c.DeleteSegments(ctx, name("seg"), name("t"), 0, 1), "delete segments")
	td2, err := c.GetTopic(ctx, name("seg"), name("t"))
	must(t, err, "get topic")
	if td2.Partitions[0].SegmentsCount != td.Partitions[0].SegmentsCount-1 || td2.Partitions[0].MessagesCount >= 240 {
		t.Fatalf("after deleting a segment: %+v (before %+v)", td2.Partitions[0], td.Partitions[0])
	}
	pm := poll(t, c, "seg", "t", 0, wire.PollFromFirst(), 1, wire.SingleConsumer(id(1)), false)
	if first := offsets(pm); len(first) != 1 || first[0] == 0 {
		t.Fatalf("first message after deleting the oldest segment: %v", first)
	}
	// Offsets keep growing.
	conf, err := c.SendMessages(ctx, name("seg"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 10))
	must(t, err, "send")
	if conf[0].BaseOffset != 240 {
		t.Fatalf("next offset %d, want 240", conf[0].BaseOffset)
	}
}

func TestUsersPermissionsAndTokens(t *testing.T) { overTransports(t, testUsersPermissionsAndTokens) }

func testUsersPermissionsAndTokens(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	root := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, root, "perm", "t", 1, nil)
	createStreamTopic(t, root, "other", "t", 1, nil)

	u, err := root.CreateUser(ctx, wire.CreateUser{Username: "alice", Password: "secret-1", Status: 1})
	must(t, err, "create user")
	if u.Username != "alice" || u.ID == 0 {
		t.Fatalf("created user %+v", u)
	}
	_, err = root.CreateUser(ctx, wire.CreateUser{Username: "alice", Password: "secret-1", Status: 1})
	wantCode(t, err, wire.CodeUserAlreadyExists, "duplicate user")
	users, err := root.GetUsers(ctx)
	must(t, err, "get users")
	if len(users) != 2 {
		t.Fatalf("users %+v", users)
	}

	alice := s.Client(t, "alice", "secret-1")
	// No permissions: every guarded command is refused with 41, never 40.
	_, err = alice.CreateStream(ctx, "mine", nil)
	wantCode(t, err, wire.CodeUnauthorized, "create stream without permission")
	_, err = alice.GetStreams(ctx)
	wantCode(t, err, wire.CodeUnauthorized, "list streams without permission")
	_, err = alice.SendMessages(ctx, name("perm"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 10))
	wantCode(t, err, wire.CodeUnauthorized, "send without permission")
	_, err = alice.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(id(1)), StreamID: name("perm"), TopicID: name("t"),
		Partition: wire.SomePartition(0), Strategy: wire.PollFromFirst(), Count: 1})
	wantCode(t, err, wire.CodeUnauthorized, "poll without permission")
	_, err = alice.GetStats(ctx)
	wantCode(t, err, wire.CodeUnauthorized, "stats without permission")
	_, err = alice.GetUsers(ctx)
	wantCode(t, err, wire.CodeUnauthorized, "users without permission")
	// Self-service still works.
	self, err := alice.GetUser(ctx, name("alice"))
	must(t, err, "get own user")
	if self.Username != "alice" {
		t.Fatalf("own user %+v", self)
	}

	// Grant send+poll on stream "perm" only.
	sid := uint32(0)
	perms := &wire.Permissions{Streams: []wire.StreamPermissions{{StreamID: sid, SendMessages: true, PollMessages: true, ReadStream: true, ReadTopics: true}}}
	must(t, root.UpdatePermissions(ctx, name("alice"), perms), "grant")
	waitFor(t, func() bool {
		_, err := alice.SendMessages(ctx, name("perm"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 10))
		return err == nil
	}, "the grant to apply")
	_, err = alice.SendMessages(ctx, name("other"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 10))
	wantCode(t, err, wire.CodeUnauthorized, "send to a stream without a grant")
	if pm := poll(t, alice, "perm", "t", 0, wire.PollFromFirst(), 10, wire.SingleConsumer(id(1)), false); pm.MessagesCount == 0 {
		t.Fatal("granted poll returned nothing")
	}
	_, err = alice.GetStream(ctx, name("perm"))
	must(t, err, "get granted stream")
	_, err = alice.GetStream(ctx, name("other"))
	wantCode(t, err, wire.CodeUnauthorized, "get stream without a grant")

	// Password change, rename, deactivation.
	must(t, alice.ChangePassword(ctx, name("alice"), "secret-1", "secret-2"), "change own password")
	_, err = client.Dial(ctx, s.ClientConfig("alice", "secret-1"))
	wantCode(t, err, wire.CodeInvalidCredentials, "login with the old password")
	_ = s.Client(t, "alice", "secret-2")
	newName := "alice2"
	must(t, root.UpdateUser(ctx, name("alice"), &newName, nil), "rename user")
	inactive := uint8(2)
	must(t, root.UpdateUser(ctx, name("alice2"), nil, &inactive), "deactivate user")
	_, err = client.Dial(ctx, s.ClientConfig("alice2", "secret-2"))
	if err == nil {
		t.Fatal("an inactive user logged in")
	}

	// Personal access tokens.
	tok, err := root.CreatePersonalAccessToken(ctx, "ci", 0)
	must(t, err, "create token")
	_, err = root.CreatePersonalAccessToken(ctx, "ci", 0)
	wantCode(t, err, wire.CodePersonalAccessTokenAlreadyExists, "duplicate token")
	toks, err := root.GetPersonalAccessTokens(ctx)
	must(t, err, "list tokens")
	if len(toks) != 1 || toks[0].Name != "ci" {
		t.Fatalf("tokens %+v", toks)
	}
	cfg := s.ClientConfig("", "")
	cfg.Token = tok
	pc, err := client.Dial(ctx, cfg)
	must(t, err, "login with token")
	me, err := pc.GetMe(ctx)
	must(t, err, "get me with token")
	if me.UserID != 0 {
		t.Fatalf("token session belongs to user %d", me.UserID)
	}
	_ = pc.Close()
	must(t, root.DeletePersonalAccessToken(ctx, "ci"), "delete token")
	_, err = client.Dial(ctx, cfg)
	wantCode(t, err, wire.CodeInvalidPersonalAccessToken, "login with a deleted token")

	must(t, root.DeleteUser(ctx, name("alice2")), "delete user")
	wantCode(t, root.DeleteUser(ctx, id(0)), wire.CodeCannotDeleteUser, "delete root")
	users, err = root.GetUsers(ctx)
	must(t, err, "get users")
	if len(users) != 1 {
		t.Fatalf("users after delete %+v", users)
	}
}

func TestConsumerGroups(t *testing.T) { overTransports(t, testConsumerGroups) }

func testConsumerGroups(t *testing.T, tr harness.Transport) {
	s := startOver(t, tr)
	root := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, root, "g", "t", 4, nil)
	for p := uint32(0); p < 4; p++ {
		_, err := root.SendMessages(ctx, name("g"), name("t"), wire.PartitionByID(p), payloadMsgs(t, p, 0, 10, 32))
		must(t, err, "send")
	}
	g, err := root.CreateConsumerGroup(ctx, name("g"), name("t"), "workers")
	must(t, err, "create group")
	if g.ID != 0 || g.Name != "workers" || g.PartitionsCount != 4 {
		t.Fatalf("created group %+v", g)
	}
	_, err = root.CreateConsumerGroup(ctx, name("g"), name("t"), "workers")
	wantCode(t, err, wire.CodeConsumerGroupNameAlreadyExists, "duplicate group")
	groups, err := root.GetConsumerGroups(ctx, name("g"), name("t"))
	must(t, err, "list groups")
	if len(groups) != 1 {
		t.Fatalf("groups %+v", groups)
	}
	_, err = root.GetConsumerGroups(ctx, name("g"), name("nope"))
	wantCode(t, err, wire.CodeTopicIdNotFound, "groups of a missing topic")

	a, b := s.Root(t), s.Root(t)
	gid := name("workers")
	must(t, a.JoinConsumerGroup(ctx, name("g"), name("t"), gid), "a joins")
	must(t, a.JoinConsumerGroup(ctx, name("g"), name("t"), gid), "a joins twice")
	sa, err := a.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
	must(t, err, "a syncs")
	if len(sa.Partitions) != 4 {
		t.Fatalf("a alone owns %v", sa.Partitions)
	}
	must(t, b.JoinConsumerGroup(ctx, name("g"), name("t"), gid), "b joins")
	sa, _ = a.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
	sb, err := b.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
	must(t, err, "b syncs")
	if len(sa.Partitions) != 2 || len(sb.Partitions) != 2 || sb.Generation <= 1 {
		t.Fatalf("after rebalance a owns %v, b owns %v (generation %d)", sa.Partitions, sb.Partitions, sb.Generation)
	}
	gd, err := root.GetConsumerGroup(ctx, name("g"), name("t"), gid)
	must(t, err, "get group")
	if gd.MembersCount != 2 || len(gd.Members) != 2 {
		t.Fatalf("group %+v", gd)
	}

	// The fences: a member polling or committing a partition it does not
	// own gets the resync sentinel and ResourceNotFound (as Iggy 0.9).
	notA := sb.Partitions[0]
	pm, err := a.PollMessages(ctx, wire.PollMessages{Consumer: wire.GroupConsumer(gid), StreamID: name("g"), TopicID: name("t"),
		Partition: wire.SomePartition(notA), Strategy: wire.PollFromFirst(), Count: 5})
	must(t, err, "poll a foreign partition")
	if pm.PartitionID != wire.ResyncPartition || pm.MessagesCount != 0 {
		t.Fatalf("foreign poll answered %+v", pm)
	}
	wantCode(t, a.StoreConsumerOffset(ctx, wire.GroupConsumer(gid), name("g"), name("t"), wire.SomePartition(notA), 1),
		wire.CodeResourceNotFound, "store on a foreign partition")

	// Group polling consumes every message exactly once across members.
	seen := map[[2]uint64]bool{}
	for round := 0; round < 20; round++ {
		for _, m := range []*client.Client{a, b} {
			pm, err := m.PollGroup(ctx, name("g"), name("t"), gid, wire.PollFromNext(), 5, true)
			must(t, err, "group poll")
			for _, msg := range pm.Messages() {
				k := [2]uint64{uint64(pm.PartitionID), msg.Offset}
				if seen[k] {
					t.Fatalf("message %v delivered twice", k)
				}
				seen[k] = true
			}
		}
	}
	if len(seen) != 40 {
		t.Fatalf("group consumed %d distinct messages, want 40", len(seen))
	}

	// Leaving and disconnecting rebalance.
	must(t, b.LeaveConsumerGroup(ctx, name("g"), name("t"), gid), "b leaves")
	wantCode(t, b.LeaveConsumerGroup(ctx, name("g"), name("t"), gid), wire.CodeConsumerGroupMemberNotFound, "b leaves twice")
	sa, _ = a.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
	if len(sa.Partitions) != 4 {
		t.Fatalf("after b left a owns %v", sa.Partitions)
	}
	c := s.Root(t)
	must(t, c.JoinConsumerGroup(ctx, name("g"), name("t"), gid), "c joins")
	sa, _ = a.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
	if len(sa.Partitions) != 2 {
		t.Fatalf("after c joined a owns %v", sa.Partitions)
	}
	_ = c.Close()
	waitFor(t, func() bool {
		sa, err := a.SyncConsumerGroup(ctx, name("g"), name("t"), gid)
		return err == nil && len(sa.Partitions) == 4
	}, "the disconnected member to be removed")
	me, err := a.GetMe(ctx)
	must(t, err, "get me")
	if me.ConsumerGroupsCount != 1 || len(me.Groups) != 1 {
		t.Fatalf("member's client record %+v", me)
	}

	must(t, root.DeleteConsumerGroup(ctx, name("g"), name("t"), gid), "delete group")
	_, err = root.GetConsumerGroup(ctx, name("g"), name("t"), gid)
	wantCode(t, err, wire.CodeConsumerGroupIdNotFound, "deleted group")
	wantCode(t, root.DeleteConsumerGroup(ctx, name("g"), name("t"), gid), wire.CodeConsumerGroupIdNotFound, "delete twice")
}
