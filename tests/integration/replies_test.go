package integration

import (
	"testing"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// reply is what Iggy 0.9's server answers a request: an error code, or
// success (code 0) with an empty reply (empty) or a payload.
type reply struct {
	code  wire.Code
	empty bool
}

// checkReply fails unless err and empty match want.
func checkReply(t *testing.T, what string, err error, empty bool, want reply) {
	t.Helper()
	if want.code != 0 {
		wantCode(t, err, want.code, what)
		return
	}
	if err != nil {
		t.Fatalf("%s: %v, want success", what, err)
	}
	if empty != want.empty {
		t.Fatalf("%s: empty reply %v, want %v", what, empty, want.empty)
	}
}

// partitionPlane sets up stream "r", topic "t" (2 partitions, 5 messages
// in partition 0), group "g" with member a owning partitions 0 and 1, and
// member-less group "idle".
func partitionPlane(t *testing.T) (root, a *client.Client) {
	s := start(t)
	root, a = s.Root(t), s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, root, "r", "t", 2, nil)
	_, err := root.SendMessages(ctx, name("r"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 5, 32))
	must(t, err, "send")
	_, err = root.CreateConsumerGroup(ctx, name("r"), name("t"), "g")
	must(t, err, "create group")
	_, err = root.CreateConsumerGroup(ctx, name("r"), name("t"), "idle")
	must(t, err, "create group")
	must(t, a.JoinConsumerGroup(ctx, name("r"), name("t"), name("g")), "join")
	return root, a
}

// TestSendReplies: Iggy 0.9 answers ResourceNotFound (20) for a send whose
// stream, topic or partition does not resolve (dispatch_partition_request).
func TestSendReplies(t *testing.T) {
	root, _ := partitionPlane(t)
	ctx := ctxT(t)
	for _, tc := range []struct {
		what          string
		stream, topic wire.Identifier
		part          wire.Partitioning
		want          reply
	}{
		{"existing partition", name("r"), name("t"), wire.PartitionByID(1), reply{}},
		{"missing stream", name("nope"), name("t"), wire.PartitionByID(0), reply{code: wire.CodeResourceNotFound}},
		{"missing numeric stream", id(99), name("t"), wire.PartitionByID(0), reply{code: wire.CodeResourceNotFound}},
		{"missing topic", name("r"), name("nope"), wire.PartitionByID(0), reply{code: wire.CodeResourceNotFound}},
		{"missing partition", name("r"), name("t"), wire.PartitionByID(2), reply{code: wire.CodeResourceNotFound}},
		{"balanced to a missing topic", name("r"), id(7), wire.Balanced(), reply{code: wire.CodeResourceNotFound}},
		{"key to a missing stream", id(7), name("t"), wire.PartitionByKey([]byte("k")), reply{code: wire.CodeResourceNotFound}},
	} {
		_, err := root.SendMessagesServerPartitioned(ctx, tc.stream, tc.topic, tc.part, payloadMsgs(t, 1, 0, 1, 32))
		checkReply(t, "send: "+tc.what, err, false, tc.want)
	}
}

// TestConsumerOffsetReplies: store and delete answer ResourceNotFound for
// every target that does not resolve (including a group partition the
// caller does not own and an absent partition); a read of a missing stream,
// topic or group is an empty reply, of a missing partition PartitionNotFound.
func TestConsumerOffsetReplies(t *testing.T) {
	root, a := partitionPlane(t)
	ctx := ctxT(t)
	single := wire.SingleConsumer(name("c"))
	group := wire.GroupConsumer(name("g"))
	p0, p1 := wire.SomePartition(0), wire.SomePartition(1)
	nf := reply{code: wire.CodeResourceNotFound}
	type req struct {
		what          string
		c             *client.Client
		cons          wire.Consumer
		stream, topic wire.Identifier
		part          wire.OptionalPartition
	}
	writes := []struct {
		req
		want reply
	}{
		{req{"single consumer", root, single, name("r"), name("t"), p0}, reply{}},
		{req{"group member on its partition", a, group, name("r"), name("t"), p1}, reply{}},
		{req{"missing stream", root, single, name("nope"), name("t"), p0}, nf},
		{req{"missing topic", root, single, name("r"), name("nope"), p0}, nf},
		{req{"missing partition", root, single, name("r"), name("t"), wire.SomePartition(5)}, nf},
		{req{"absent partition", root, single, name("r"), name("t"), wire.OptionalPartition{}}, nf},
		{req{"missing group", a, wire.GroupConsumer(name("nope")), name("r"), name("t"), p0}, nf},
		{req{"group, caller not a member", root, group, name("r"), name("t"), p0}, nf},
		{req{"group without members", a, wire.GroupConsumer(name("idle")), name("r"), name("t"), p0}, nf},
		{req{"group, absent partition", a, group, name("r"), name("t"), wire.OptionalPartition{}}, nf},
	}
	for _, tc := range writes {
		err := tc.c.StoreConsumerOffset(ctx, tc.cons, tc.stream, tc.topic, tc.part, 0)
		if tc.what == "group member on its partition" {
			// Partition 1 is empty: the store itself is refused by the
			// partition (InvalidOffset), past the resolution.
			wantCode(t, err, wire.CodeInvalidOffset, "store: "+tc.what)
		} else {
			checkReply(t, "store: "+tc.what, err, false, tc.want)
		}
	}
	reads := []struct {
		req
		want reply
	}{
		{req{"stored offset", root, single, name("r"), name("t"), p0}, reply{}},
		{req{"nothing stored", root, wire.SingleConsumer(name("other")), name("r"), name("t"), p0}, reply{empty: true}},
		{req{"absent partition reads 0", root, single, name("r"), name("t"), wire.OptionalPartition{}}, reply{}},
		{req{"missing stream", root, single, name("nope"), name("t"), p0}, reply{empty: true}},
		{req{"missing topic", root, single, name("r"), name("nope"), p0}, reply{empty: true}},
		{req{"missing group", root, wire.GroupConsumer(name("nope")), name("r"), name("t"), p0}, reply{empty: true}},
		{req{"group of a missing stream", root, group, id(42), name("t"), p0}, reply{empty: true}},
		{req{"missing partition", root, single, name("r"), name("t"), wire.SomePartition(5)}, reply{code: wire.CodePartitionNotFound}},
		{req{"any client reads a group's offset", root, group, name("r"), name("t"), p0}, reply{empty: true}},
	}
	for _, tc := range reads {
		off, err := tc.c.GetConsumerOffset(ctx, tc.cons, tc.stream, tc.topic, tc.part)
		checkReply(t, "get offset: "+tc.what, err, off == nil, tc.want)
		if off != nil && (off.PartitionID != 0 || off.StoredOffset != 0 || off.CurrentOffset != 4) {
			t.Fatalf("get offset: %s: %+v", tc.what, off)
		}
	}
	deletes := []struct {
		req
		want reply
	}{
		{req{"stored offset", root, single, name("r"), name("t"), p0}, reply{}},
		{req{"deleted twice", root, single, name("r"), name("t"), p0}, reply{code: wire.CodeConsumerOffsetNotFound}},
		{req{"missing stream", root, single, name("nope"), name("t"), p0}, nf},
		{req{"missing topic", root, single, name("r"), name("nope"), p0}, nf},
		{req{"missing partition", root, single, name("r"), name("t"), wire.SomePartition(5)}, nf},
		{req{"absent partition", root, single, name("r"), name("t"), wire.OptionalPartition{}}, nf},
		{req{"missing group", a, wire.GroupConsumer(name("nope")), name("r"), name("t"), p0}, nf},
		{req{"group, caller not a member", root, group, name("r"), name("t"), p0}, nf},
	}
	for _, tc := range deletes {
		err := tc.c.DeleteConsumerOffset(ctx, tc.cons, tc.stream, tc.topic, tc.part)
		checkReply(t, "delete offset: "+tc.what, err, false, tc.want)
	}
}

// TestPollAndSyncReplies: a plain poll names the level that missed; a group
// poll whose stream, topic or group does not resolve, or whose partition
// the caller does not own, is the empty poll with the resync sentinel; a
// sync that does not resolve is an empty reply (the client reads it as "not
// a member").
func TestPollAndSyncReplies(t *testing.T) {
	root, a := partitionPlane(t)
	ctx := ctxT(t)
	single := wire.SingleConsumer(name("c"))
	for _, tc := range []struct {
		what          string
		c             *client.Client
		cons          wire.Consumer
		stream, topic wire.Identifier
		part          uint32
		code          wire.Code
		resync        bool
	}{
		{"plain, missing stream", root, single, name("nope"), name("t"), 0, wire.CodeStreamIdNotFound, false},
		{"plain, missing topic", root, single, name("r"), name("nope"), 0, wire.CodeTopicIdNotFound, false},
		{"plain, missing partition", root, single, name("r"), name("t"), 9, wire.CodePartitionNotFound, false},
		{"group, missing stream", a, wire.GroupConsumer(name("g")), name("nope"), name("t"), 0, 0, true},
		{"group, missing topic", a, wire.GroupConsumer(name("g")), name("r"), name("nope"), 0, 0, true},
		{"group, missing group", a, wire.GroupConsumer(name("nope")), name("r"), name("t"), 0, 0, true},
		{"group, not a member", root, wire.GroupConsumer(name("g")), name("r"), name("t"), 0, 0, true},
	} {
		pm, err := tc.c.PollMessages(ctx, wire.PollMessages{Consumer: tc.cons, StreamID: tc.stream, TopicID: tc.topic,
			Partition: wire.SomePartition(tc.part), Strategy: wire.PollFromFirst(), Count: 1})
		if tc.code != 0 {
			wantCode(t, err, tc.code, "poll: "+tc.what)
			continue
		}
		must(t, err, "poll: "+tc.what)
		if tc.resync && (pm.PartitionID != wire.ResyncPartition || pm.MessagesCount != 0) {
			t.Fatalf("poll: %s: %+v, want the resync sentinel", tc.what, pm)
		}
	}
	for _, tc := range []struct {
		what                 string
		stream, topic, group wire.Identifier
	}{
		{"missing stream", name("nope"), name("t"), name("g")},
		{"missing topic", name("r"), name("nope"), name("g")},
		{"missing group", name("r"), name("t"), name("nope")},
		{"not a member", name("r"), name("t"), name("idle")},
	} {
		_, err := a.SyncConsumerGroup(ctx, tc.stream, tc.topic, tc.group)
		// The client reads the empty reply as "not a member".
		wantCode(t, err, wire.CodeConsumerGroupMemberNotFound, "sync: "+tc.what)
	}
	sa, err := a.SyncConsumerGroup(ctx, name("r"), name("t"), name("g"))
	if err != nil || len(sa.Partitions) != 2 {
		t.Fatalf("sync of the member: %+v %v", sa, err)
	}
}

// TestMetadataReplies: the codes Iggy 0.9's metadata state machine commits
// for each command family (core/metadata/src/stm/result.rs): streams,
// topics, partitions, segments, users, tokens and consumer groups, against
// missing or conflicting resources.
func TestMetadataReplies(t *testing.T) {
	s := start(t)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "m", "t", 2, nil)
	createStreamTopic(t, c, "m2", "t", 1, nil)
	_, err := c.CreateConsumerGroup(ctx, name("m"), name("t"), "g")
	must(t, err, "create group")
	_, err = c.CreateUser(ctx, wire.CreateUser{Username: "bob", Password: "secret-123", Status: 1})
	must(t, err, "create user")
	_, err = c.CreatePersonalAccessToken(ctx, "tok", 0)
	must(t, err, "create token")

	missingStream, missingTopic := id(77), name("nope")
	for _, tc := range []struct {
		what string
		err  error
		want wire.Code
	}{
		// Streams.
		{"create stream, duplicate name", func() error { _, err := c.CreateStream(ctx, "m", nil); return err }(), wire.CodeStreamNameAlreadyExists},
		{"update stream, missing", c.UpdateStream(ctx, missingStream, "x", nil), wire.CodeStreamIdNotFound},
		{"update stream, name taken", c.UpdateStream(ctx, name("m2"), "m", nil), wire.CodeStreamNameAlreadyExists},
		{"delete stream, missing", c.DeleteStream(ctx, missingStream), wire.CodeStreamIdNotFound},
		{"purge stream, missing", c.PurgeStream(ctx, missingStream), wire.CodeStreamIdNotFound},
		// Topics.
		{"create topic, missing stream", func() error {
			_, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: missingStream, PartitionsCount: 1, Name: "x"})
			return err
		}(), wire.CodeStreamIdNotFound},
		{"create topic, duplicate name", func() error {
			_, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: name("m"), PartitionsCount: 1, Name: "t"})
			return err
		}(), wire.CodeTopicNameAlreadyExists},
		{"update topic, missing stream", c.UpdateTopic(ctx, wire.UpdateTopic{StreamID: missingStream, TopicID: name("t"), Name: "x"}), wire.CodeStreamIdNotFound},
		{"update topic, missing topic", c.UpdateTopic(ctx, wire.UpdateTopic{StreamID: name("m"), TopicID: missingTopic, Name: "x"}), wire.CodeTopicIdNotFound},
		{"delete topic, missing stream", c.DeleteTopic(ctx, missingStream, name("t")), wire.CodeStreamIdNotFound},
		{"delete topic, missing topic", c.DeleteTopic(ctx, name("m"), missingTopic), wire.CodeTopicIdNotFound},
		{"purge topic, missing topic", c.PurgeTopic(ctx, name("m"), missingTopic), wire.CodeTopicIdNotFound},
		// Partitions and segments.
		{"create partitions, missing stream", c.CreatePartitions(ctx, missingStream, name("t"), 1), wire.CodeStreamIdNotFound},
		{"create partitions, missing topic", c.CreatePartitions(ctx, name("m"), missingTopic, 1), wire.CodeTopicIdNotFound},
		{"delete partitions, missing topic", c.DeletePartitions(ctx, name("m"), missingTopic, 1), wire.CodeTopicIdNotFound},
		{"delete partitions, more than exist", c.DeletePartitions(ctx, name("m"), name("t"), 5), wire.CodeInvalidPartitionsCount},
		{"delete segments, missing stream", c.DeleteSegments(ctx, missingStream, name("t"), 0, 1), wire.CodeStreamIdNotFound},
		{"delete segments, missing topic", c.DeleteSegments(ctx, name("m"), missingTopic, 0, 1), wire.CodeTopicIdNotFound},
		{"delete segments, missing partition", c.DeleteSegments(ctx, name("m"), name("t"), 9, 1), wire.CodePartitionNotFound},
		// Users and tokens.
		{"create user, duplicate", func() error {
			_, err := c.CreateUser(ctx, wire.CreateUser{Username: "bob", Password: "secret-123", Status: 1})
			return err
		}(), wire.CodeUserAlreadyExists},
		{"update user, missing", c.UpdateUser(ctx, name("nobody"), nil, nil), wire.CodeResourceNotFound},
		{"delete user, missing", c.DeleteUser(ctx, name("nobody")), wire.CodeResourceNotFound},
		{"delete root", c.DeleteUser(ctx, id(0)), wire.CodeCannotDeleteUser},
		{"change password, missing user", c.ChangePassword(ctx, name("nobody"), "a-1234567", "b-1234567"), wire.CodeResourceNotFound},
		{"change password, wrong current", c.ChangePassword(ctx, name("bob"), "wrong-123", "b-1234567"), wire.CodeInvalidCredentials},
		{"update permissions, missing user", c.UpdatePermissions(ctx, name("nobody"), nil), wire.CodeResourceNotFound},
		{"update permissions of root", c.UpdatePermissions(ctx, id(0), nil), wire.CodeCannotChangePermissions},
		{"create token, duplicate", func() error { _, err := c.CreatePersonalAccessToken(ctx, "tok", 0); return err }(), wire.CodePersonalAccessTokenAlreadyExists},
		{"delete token, missing", c.DeletePersonalAccessToken(ctx, "nope"), wire.CodeResourceNotFound},
		// Consumer groups.
		{"create group, missing stream", func() error { _, err := c.CreateConsumerGroup(ctx, missingStream, name("t"), "x"); return err }(), wire.CodeStreamIdNotFound},
		{"create group, missing topic", func() error { _, err := c.CreateConsumerGroup(ctx, name("m"), missingTopic, "x"); return err }(), wire.CodeTopicIdNotFound},
		{"create group, duplicate", func() error { _, err := c.CreateConsumerGroup(ctx, name("m"), name("t"), "g"); return err }(), wire.CodeConsumerGroupNameAlreadyExists},
		{"delete group, missing stream", c.DeleteConsumerGroup(ctx, missingStream, name("t"), name("g")), wire.CodeStreamIdNotFound},
		{"delete group, missing topic", c.DeleteConsumerGroup(ctx, name("m"), missingTopic, name("g")), wire.CodeTopicIdNotFound},
		{"delete group, missing", c.DeleteConsumerGroup(ctx, name("m"), name("t"), name("x")), wire.CodeConsumerGroupIdNotFound},
		{"join group, missing stream", c.JoinConsumerGroup(ctx, missingStream, name("t"), name("g")), wire.CodeStreamIdNotFound},
		{"join group, missing topic", c.JoinConsumerGroup(ctx, name("m"), missingTopic, name("g")), wire.CodeTopicIdNotFound},
		{"join group, missing", c.JoinConsumerGroup(ctx, name("m"), name("t"), name("x")), wire.CodeConsumerGroupIdNotFound},
		{"leave group, missing topic", c.LeaveConsumerGroup(ctx, name("m"), missingTopic, name("g")), wire.CodeTopicIdNotFound},
		{"leave group, missing", c.LeaveConsumerGroup(ctx, name("m"), name("t"), name("x")), wire.CodeConsumerGroupIdNotFound},
		{"leave group, not a member", c.LeaveConsumerGroup(ctx, name("m"), name("t"), name("g")), wire.CodeConsumerGroupMemberNotFound},
	} {
		if tc.err == nil {
			t.Errorf("%s: succeeded, want code %d (%s)", tc.what, tc.want, tc.want)
			continue
		}
		if !wire.HasCode(tc.err, tc.want) {
			got, _ := wire.CodeOf(tc.err)
			t.Errorf("%s: %v (code %d), want code %d (%s) as Iggy 0.9", tc.what, tc.err, got, tc.want, tc.want)
		}
	}
}
