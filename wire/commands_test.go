package wire

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
)

func strp(s string) *string { return &s }
func u8p(v uint8) *uint8    { return &v }

var samplePerms = &Permissions{
	Global:  GlobalPermissions{ReadServers: true, PollMessages: true},
	Streams: []StreamPermissions{{StreamID: 4, SendMessages: true, Topics: []TopicPermissions{{TopicID: 1, ReadTopic: true}}}},
}

var sampleOpts = Options{{Key: StringValue(OptEnforceFsync), Value: BoolValue(true)}, {Key: StringValue("x"), Value: RawValue([]byte{9})}}

func sampleVersion() ClientVersionInfo {
	return ClientVersionInfo{Protocol: CurrentProtocol, SDKName: "iggo", SDKVersion: "0.1.0"}
}

// sampleRequests holds one filled-in value per command (two for some).
func sampleRequests() []Request {
	s, t, g := NumericID(1), MustNamedID("orders"), MustNamedID("workers")
	return []Request{
		&Ping{}, &GetStats{},
		&GetSnapshotFile{Compression: SnapshotDeflated, Types: []uint8{SnapshotServerLogs, SnapshotAll}},
		&GetClusterMetadata{}, &DescribeOptions{Scope: ScopeTopic}, &GetMe{},
		&GetClient{ClientID: 77}, &GetClients{},
		&GetUser{UserID: MustNamedID("bob")}, &GetUsers{},
		&CreateUser{Username: "bob", Password: "", Status: UserActive, Permissions: samplePerms},
		&CreateUser{Username: "eve", Password: "secret", Status: UserInactive, Options: sampleOpts},
		&DeleteUser{UserID: NumericID(3)},
		&UpdateUser{UserID: NumericID(3), Username: strp("bobby"), Status: u8p(UserInactive)},
		&UpdateUser{UserID: NumericID(3)},
		&UpdatePermissions{UserID: NumericID(3), Permissions: samplePerms},
		&UpdatePermissions{UserID: NumericID(3)},
		&ChangePassword{UserID: MustNamedID("bob"), CurrentPassword: "a", NewPassword: "b"},
		&LoginUser{Username: "iggy", Password: "iggy", Version: "1.0", Context: []byte("ctx")},
		&LogoutUser{},
		&LoginRegister{Version: sampleVersion(), Username: "iggy", Password: "iggy"},
		&GetPersonalAccessTokens{},
		&CreatePersonalAccessToken{Name: "ci", Expiry: math.MaxUint64},
		&DeletePersonalAccessToken{Name: "ci"},
		&LoginWithPersonalAccessToken{Token: "tok"},
		&LoginRegisterWithPAT{Version: sampleVersion(), Token: "tok", Context: []byte{1}},
		&PollMessages{Consumer: GroupConsumer(g), StreamID: s, TopicID: t, Partition: SomePartition(2), Strategy: PollFromTimestamp(123), Count: 10, AutoCommit: true},
		&PollMessages{Consumer: SingleConsumer(NumericID(0)), StreamID: s, TopicID: t, Strategy: PollFromNext(), Count: 1},
		&PollMessages{Consumer: SingleConsumer(NumericID(0)), StreamID: s, TopicID: t, Strategy: PollFromNext(), Count: 1, WaitMillis: 30000},
		&SendMessages{StreamID: s, TopicID: t, Partitioning: PartitionByKey([]byte("k1")), Messages: []Message{{ID: Uint128{Lo: 1}, Payload: []byte("a")}}},
		&SendMessages{StreamID: s, TopicID: t, Partitioning: Balanced(), Messages: []Message{{Payload: []byte("a")}, {Payload: []byte("b")}}},
		&FlushUnsavedBuffer{StreamID: s, TopicID: t, PartitionID: 1, Fsync: true},
		&GetConsumerOffset{Consumer: SingleConsumer(MustNamedID("c")), StreamID: s, TopicID: t, Partition: SomePartition(0)},
		&StoreConsumerOffset{Consumer: SingleConsumer(NumericID(5)), StreamID: s, TopicID: t, Offset: 99, Ack: AckQuorum},
		&DeleteConsumerOffset{Consumer: GroupConsumer(NumericID(0)), StreamID: s, TopicID: t, Partition: SomePartition(3), Ack: AckNone},
		&GetStream{StreamID: s}, &GetStreams{},
		&CreateStream{Name: "s1"}, &CreateStream{Name: "s2", Options: sampleOpts},
		&DeleteStream{StreamID: s}, &UpdateStream{StreamID: s, Name: "renamed"}, &PurgeStream{StreamID: s},
		&GetTopic{StreamID: s, TopicID: t}, &GetTopics{StreamID: s},
		&CreateTopic{StreamID: s, PartitionsCount: 3, Name: "orders", Options: Options{{Key: StringValue(OptMessageExpiry), Value: Uint64Value(1000)}}},
		&DeleteTopic{StreamID: s, TopicID: t},
		&UpdateTopic{StreamID: s, TopicID: t, Name: "orders2", Options: Options{{Key: StringValue(OptCompressionAlgorithm), Value: StringValue("gzip")}}},
		&PurgeTopic{StreamID: s, TopicID: t},
		&CreatePartitions{StreamID: s, TopicID: t, PartitionsCount: 2},
		&DeletePartitions{StreamID: s, TopicID: t, PartitionsCount: 1},
		&DeleteSegments{StreamID: s, TopicID: t, PartitionID: 1, SegmentsCount: 4},
		&GetConsumerGroup{StreamID: s, TopicID: t, GroupID: g},
		&GetConsumerGroups{StreamID: s, TopicID: t},
		&CreateConsumerGroup{StreamID: s, TopicID: t, Name: "workers"},
		&DeleteConsumerGroup{StreamID: s, TopicID: t, GroupID: g},
		&JoinConsumerGroup{StreamID: s, TopicID: t, GroupID: g},
		&LeaveConsumerGroup{StreamID: s, TopicID: t, GroupID: NumericID(0)},
		&SyncConsumerGroup{StreamID: s, TopicID: t, GroupID: g},
	}
}

func TestRequestRoundTripEveryCommand(t *testing.T) {
	seen := map[CommandCode]bool{}
	for _, req := range sampleRequests() {
		code := req.Code()
		seen[code] = true
		body, err := req.AppendBody(nil)
		if err != nil {
			t.Fatalf("%v: encode: %v", code, err)
		}
		got, err := DecodeRequestBody(code, body)
		if err != nil {
			t.Fatalf("%v: decode: %v", code, err)
		}
		again, err := got.AppendBody(nil)
		if err != nil || !bytes.Equal(again, body) {
			t.Fatalf("%v: re-encode differs: %v\n got %x\nwant %x", code, err, again, body)
		}
		if code == CmdSendMessages {
			sm := got.(*SendMessages)
			if sm.Batch.MessageCount() != uint32(len(req.(*SendMessages).Messages)) {
				t.Fatalf("send batch count %d", sm.Batch.MessageCount())
			}
			continue
		}
		if !reflect.DeepEqual(got, req) {
			t.Fatalf("%v: decoded value differs\n got %+v\nwant %+v", code, got, req)
		}
		// Every strict prefix must fail to decode cleanly or decode to
		// something that re-encodes to that prefix; never panic.
		for n := 0; n < len(body); n++ {
			r, _ := NewRequest(code)
			if err := r.DecodeBody(body[:n]); err == nil {
				again, _ := r.AppendBody(nil)
				if !bytes.Equal(again, body[:n]) {
					t.Fatalf("%v: prefix %d decoded to something else", code, n)
				}
			} else if _, ok := CodeOf(err); !ok {
				t.Fatalf("%v: prefix %d: uncoded error %v", code, n, err)
			}
		}
		// A trailing byte is rejected, except where options or a raw
		// payload run to the end of the body (the byte then makes the
		// options block malformed, which is also rejected).
		r, _ := NewRequest(code)
		if err := r.DecodeBody(append(bytes.Clone(body), 0)); err == nil {
			t.Fatalf("%v: trailing byte accepted", code)
		}
	}
	for _, c := range AllCommands {
		if !seen[c] {
			t.Errorf("no request sample for %v (%d)", c, c)
		}
	}
}

type replySample struct {
	code CommandCode
	v    any
}

func sampleReplies(t *testing.T) []replySample {
	batch, err := AppendBatch(nil, []Message{{ID: Uint128{Lo: 7}, OriginTimestamp: 10, Payload: []byte("m1")}, {Payload: []byte("m2"), OriginTimestamp: 12}})
	if err != nil {
		t.Fatal(err)
	}
	bv, _ := VerifyBatch(batch)
	bv.Stamp(2, 40, 99)
	topic := Topic{ID: 1, CreatedAt: 5, PartitionsCount: 2, MessageExpiry: math.MaxUint64, CompressionAlgorithm: CompressionNone,
		MaxTopicSize: math.MaxUint64, SizeBytes: 100, MessagesCount: 3, Name: "orders",
		Options: Options{{Key: StringValue(OptEnforceFsync), Value: BoolValue(true)}}, DerivedOptions: Options{{Key: StringValue(OptSegmentSize), Value: Uint64Value(1 << 30)}}}
	stream := Stream{ID: 0, CreatedAt: 1, TopicsCount: 1, SizeBytes: 2, MessagesCount: 3, Name: "s"}
	user := UserInfo{ID: 0, CreatedAt: 9, Status: UserActive, Username: "iggy"}
	client := ClientInfo{ClientID: 4, UserID: 0, Transport: TransportTCP, Address: "127.0.0.1:5000", ConsumerGroupsCount: 1}
	group := ConsumerGroup{ID: 0, PartitionsCount: 3, MembersCount: 2, Name: "workers"}
	return []replySample{
		{CmdGetStats, Stats{ProcessID: 1, CPUUsage: 0.5, MemoryUsage: 10, StreamsCount: 2, MessagesCount: 100, Hostname: "h", OSName: "linux",
			Version: "0.1.0", Semver: 1, CacheMetrics: []CacheMetric{{StreamID: 1, Hits: 3, HitRatio: 0.25}}, ThreadsCount: 4, TotalDiskSpace: 1 << 40}},
		{CmdGetSnapshotFile, SnapshotFile("PK\x03\x04zip")},
		{CmdGetClusterMetadata, ClusterMetadata{Name: "iggo", Nodes: []ClusterNode{
			{Name: "n0", IP: "10.0.0.1", TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WSPort: 8092, Role: RoleLeader, Status: NodeHealthy},
			{Name: "n1", IP: "10.0.0.2", TCPPort: 8090, Role: RoleFollower, Status: NodeStarting}}}},
		{CmdDescribeOptions, OptionDescriptors{{Key: OptSegmentSize, Kind: KindUint64, Default: le64(1 << 30), Description: "segment"}}},
		{CmdGetMe, ClientDetails{ClientInfo: client, Groups: []ClientGroup{{1, 2, 3}}}},
		{CmdGetClient, ClientDetails{ClientInfo: ClientInfo{ClientID: 5, Transport: TransportQUIC, Address: "x"}}},
		{CmdGetClients, ClientInfos{client, {ClientID: 9, Address: "y"}}},
		{CmdGetUser, UserDetails{UserInfo: user, Permissions: samplePerms}},
		{CmdGetUsers, Users{user, {ID: 1, Status: UserInactive, Username: "bob", Options: sampleOpts}}},
		{CmdCreateUser, UserDetails{UserInfo: user}},
		{CmdLoginRegister, LoginReply{UserID: 0, Session: 12, ServerProtocol: CurrentProtocol, ServerVersion: "0.1.0"}},
		{CmdLoginRegisterWithPAT, LoginReply{UserID: 3, Session: 1, ServerProtocol: CurrentProtocol, ServerVersion: "x"}},
		{CmdGetPersonalAccessTokens, PersonalAccessTokens{{Name: "a", ExpiryAt: 0}, {Name: "b", ExpiryAt: 77}}},
		{CmdCreatePersonalAccessToken, RawPersonalAccessToken{Token: "secret-token"}},
		{CmdPollMessages, PolledMessages{PartitionID: 2, CurrentOffset: 41, MessagesCount: 2, Records: []BatchView{bv}}},
		{CmdSendMessages, SendConfirmations{{StreamID: 1, TopicID: 2, PartitionID: 0, BaseOffset: 1000}}},
		{CmdGetConsumerOffset, ConsumerOffsetInfo{PartitionID: 1, CurrentOffset: 10, StoredOffset: 4}},
		{CmdGetStream, StreamDetails{Stream: stream, Topics: []Topic{topic}}},
		{CmdGetStreams, Streams{stream, {ID: 1, Name: "t", Options: sampleOpts}}},
		{CmdCreateStream, Stream{ID: 2, Name: "new"}},
		{CmdGetTopic, TopicDetails{Topic: topic, Partitions: []Partition{{ID: 0, SegmentsCount: 1, CurrentOffset: 5}, {ID: 1, SegmentsCount: 1}}}},
		{CmdGetTopics, Topics{topic, {ID: 2, Name: "b"}}},
		{CmdCreateTopic, TopicDetails{Topic: topic}},
		{CmdGetConsumerGroup, ConsumerGroupDetails{ConsumerGroup: group, Members: []ConsumerGroupMember{{ID: 1, Partitions: []uint32{0, 2}}, {ID: 2, Partitions: []uint32{1}}}}},
		{CmdGetConsumerGroups, ConsumerGroups{group, {ID: 1, Name: "other"}}},
		{CmdCreateConsumerGroup, ConsumerGroupDetails{ConsumerGroup: ConsumerGroup{ID: 1, PartitionsCount: 3, Name: "g"}}},
		{CmdSyncConsumerGroup, GroupAssignment{Generation: 7, Partitions: []uint32{0, 2}}},
	}
}

func encodeReply(t *testing.T, v any) []byte {
	t.Helper()
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	b, err := p.Interface().(ReplyPayload).AppendTo(nil)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	return b
}

func TestReplyRoundTripEveryCommand(t *testing.T) {
	withPayload := map[CommandCode]bool{}
	for _, s := range sampleReplies(t) {
		withPayload[s.code] = true
		b := encodeReply(t, s.v)
		got, err := DecodeReplyPayload(s.code, b)
		if err != nil {
			t.Fatalf("%v: decode: %v", s.code, err)
		}
		if !bytes.Equal(encodeReply(t, got), b) {
			t.Fatalf("%v: re-encode differs", s.code)
		}
		if s.code != CmdPollMessages && !reflect.DeepEqual(got, s.v) {
			t.Fatalf("%v: decoded differs\n got %+v\nwant %+v", s.code, got, s.v)
		}
		for n := 0; n < len(b); n++ {
			got, err := DecodeReplyPayload(s.code, b[:n])
			if err == nil {
				emptyPoll := s.code == CmdPollMessages && n == 0
				if got != nil && !emptyPoll && !bytes.Equal(encodeReply(t, got), b[:n]) {
					t.Fatalf("%v: prefix %d decoded to something else", s.code, n)
				}
			} else if _, ok := CodeOf(err); !ok {
				t.Fatalf("%v: uncoded error %v", s.code, err)
			}
		}
		if s.code != CmdGetSnapshotFile {
			if _, err := DecodeReplyPayload(s.code, append(bytes.Clone(b), 1)); err == nil {
				t.Fatalf("%v: trailing byte accepted", s.code)
			}
		}
	}
	// Every other command replies with nothing (beyond the result section).
	for _, c := range AllCommands {
		if withPayload[c] {
			continue
		}
		if v, err := DecodeReplyPayload(c, nil); err != nil || v != nil {
			t.Errorf("%v: empty reply: %v %v", c, v, err)
		}
		if _, err := DecodeReplyPayload(c, []byte{1}); err == nil {
			t.Errorf("%v: non-empty reply accepted", c)
		}
	}
	// Not-found convention.
	for _, c := range []CommandCode{CmdGetStream, CmdGetTopic, CmdGetUser, CmdGetConsumerGroup, CmdGetClient, CmdGetConsumerOffset, CmdSyncConsumerGroup} {
		if v, err := DecodeReplyPayload(c, nil); err != nil || v != nil {
			t.Errorf("%v: empty means not found: %v %v", c, v, err)
		}
	}
}

func TestPolledMessagesFlatten(t *testing.T) {
	var s replySample
	for _, x := range sampleReplies(t) {
		if x.code == CmdPollMessages {
			s = x
		}
	}
	p := s.v.(PolledMessages)
	b := encodeReply(t, p)
	back, err := DecodePollReply(b)
	if err != nil {
		t.Fatal(err)
	}
	msgs := back.Messages()
	if len(msgs) != 2 || msgs[0].Offset != 40 || msgs[1].Offset != 41 || msgs[0].Timestamp != 99 ||
		msgs[0].OriginTimestamp != 10 || msgs[1].OriginTimestamp != 12 || string(msgs[1].Payload) != "m2" || msgs[0].ID.Lo != 7 {
		t.Fatalf("%+v", msgs)
	}
	// Count mismatch is refused.
	bad := bytes.Clone(b)
	bad[12] = 3
	if _, err := DecodePollReply(bad); err == nil {
		t.Fatal("count mismatch accepted")
	}
	if _, err := DecodePollReply(b[:10]); err == nil {
		t.Fatal("short prefix accepted")
	}
	empty, err := DecodePollReply(AppendPollReplyPrefix(nil, ResyncPartition, 0, 0))
	if err != nil || empty.PartitionID != ResyncPartition || len(empty.Messages()) != 0 {
		t.Fatal("resync sentinel")
	}
}

func TestDecodeRequestBodyErrors(t *testing.T) {
	if _, err := DecodeRequestBody(999, nil); !HasCode(err, CodeInvalidCommand) {
		t.Fatal(err)
	}
	_, err := DecodeRequestBody(CmdCreateTopic, []byte{1, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "name" || fe.Struct != "create_topic request" || fe.Offset != 10 {
		t.Fatalf("want a named field error, got %v", err)
	}
	// Options in a request body must be well-formed.
	body, _ := (&CreateStream{Name: "a"}).AppendBody(nil)
	body = append(body, 2, 1, 0, 0, 0, 'k')
	if _, err := DecodeRequestBody(CmdCreateStream, body); err == nil {
		t.Fatal("odd TLV accepted")
	}
	// Legacy and special-shape checks.
	if _, err := DecodeRequestBody(CmdDescribeOptions, []byte{4}); err == nil {
		t.Fatal("scope 4 accepted")
	}
	if _, err := DecodeRequestBody(CmdStoreConsumerOffset, append(mustBody(t, &StoreConsumerOffset{Consumer: SingleConsumer(NumericID(1))})[:22], 2)); err == nil {
		t.Fatal("ack 2 accepted")
	}
	if _, err := DecodeRequestBody(CmdPollMessages, mustBody(t, &PollMessages{Consumer: Consumer{Kind: 1}, Strategy: PollFromFirst()})[:20]); err == nil {
		t.Fatal("truncated poll accepted")
	}
}

func mustBody(t *testing.T, r Request) []byte {
	t.Helper()
	b, err := r.AppendBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUserDetailsNoPermissionsMarker(t *testing.T) {
	u := UserDetails{UserInfo: UserInfo{Status: UserActive, Username: "u"}}
	b := encodeReply(t, u)
	if !bytes.Equal(b[len(b)-4:], []byte{0, 0, 0, 0}) {
		t.Fatalf("no-permissions marker %x", b[len(b)-4:])
	}
	b[len(b)-2] = 1
	if _, err := DecodeUserDetails(b); err == nil {
		t.Fatal("non-zero padding accepted")
	}
}

func TestSendMessagesAdmission(t *testing.T) {
	req := &SendMessages{StreamID: NumericID(1), TopicID: NumericID(2), Partitioning: PartitionByID(0), Messages: []Message{{Payload: []byte("a")}}}
	body := mustBody(t, req)
	// metadata_length = 6 + 6 + 6 + 4 = 22
	if body[0] != 22 {
		t.Fatalf("metadata_length %d", body[0])
	}
	bad := bytes.Clone(body)
	bad[22] = 2 // messages_count 2 vs batch 1
	if _, err := DecodeSendMessages(bad); !HasCode(err, CodeInvalidMessagesCount) {
		t.Fatalf("count mismatch: %v", err)
	}
	bad = bytes.Clone(body)
	bad[len(bad)-1] ^= 1
	if _, err := DecodeSendMessages(bad); !HasCode(err, CodeInvalidMessageChecksum) {
		t.Fatalf("corrupt payload: %v", err)
	}
	bad = bytes.Clone(body)
	bad[0] = 30
	if _, err := DecodeSendMessages(bad); err == nil {
		t.Fatal("wrong metadata_length accepted")
	}
	if _, err := (&SendMessages{Partitioning: PartitionByKey(nil), Messages: req.Messages}).AppendBody(nil); !HasCode(err, CodeInvalidKeyValueLength) {
		t.Fatalf("empty key: %v", err)
	}
}
