package metadata

import "github.com/iggo/iggo/wire"

// Reply records. The metadata state knows the shape of every record but
// not the partition statistics, which live on the shards that own the
// partitions; the node passes a StatsSource that gathers them (nil means
// all zero, as for a just-created topic). The results are wire values the
// node encodes with AppendTo.

func partitionStats(src StatsSource, t *Topic, p Partition) PartitionStats {
	if src == nil {
		return PartitionStats{}
	}
	return src.PartitionStats(t.StreamID, t.ID, p)
}

// StreamRecord is the stream record of GET_STREAMS and CREATE_STREAM.
func StreamRecord(st *Stream, src StatsSource) wire.Stream {
	var size, msgs uint64
	if src != nil {
		size, msgs = StreamTotals(st, src)
	}
	return wire.Stream{ID: st.ID, CreatedAt: st.CreatedAt, TopicsCount: st.topics.live,
		SizeBytes: size, MessagesCount: msgs, Name: st.Name, Options: st.Options}
}

// StreamDetailsRecord is the GET_STREAM reply.
func StreamDetailsRecord(st *Stream, src StatsSource) wire.StreamDetails {
	d := wire.StreamDetails{Stream: wire.Stream{ID: st.ID, CreatedAt: st.CreatedAt, TopicsCount: st.topics.live,
		Name: st.Name, Options: st.Options}}
	for t := range st.topics.all {
		rec := TopicRecord(t, src)
		d.SizeBytes += rec.SizeBytes
		d.MessagesCount += rec.MessagesCount
		d.Topics = append(d.Topics, rec)
	}
	return d
}

// TopicRecord is the topic record of GET_TOPICS and GET_STREAM.
func TopicRecord(t *Topic, src StatsSource) wire.Topic {
	rec := wire.Topic{ID: t.ID, CreatedAt: t.CreatedAt, PartitionsCount: t.PartitionsCount(),
		MessageExpiry: t.Config.MessageExpiry, CompressionAlgorithm: t.Config.CompressionAlgorithm,
		MaxTopicSize: t.Config.MaxTopicSize, Name: t.Name, Options: t.Explicit, DerivedOptions: t.Derived}
	if src != nil {
		rec.SizeBytes, rec.MessagesCount = TopicTotals(t, src)
	}
	return rec
}

// TopicDetailsRecord is the GET_TOPIC and CREATE_TOPIC payload.
func TopicDetailsRecord(t *Topic, src StatsSource) wire.TopicDetails {
	d := wire.TopicDetails{Topic: TopicRecord(t, nil), Partitions: make([]wire.Partition, len(t.Partitions))}
	for i, p := range t.Partitions {
		ps := partitionStats(src, t, p)
		d.Partitions[i] = wire.Partition{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: ps.SegmentsCount,
			CurrentOffset: ps.CurrentOffset, SizeBytes: ps.SizeBytes, MessagesCount: ps.MessagesCount}
		d.SizeBytes += ps.SizeBytes
		d.MessagesCount += ps.MessagesCount
	}
	return d
}

// GroupRecord is the consumer-group record of GET_CONSUMER_GROUPS.
func GroupRecord(t *Topic, g *ConsumerGroup) wire.ConsumerGroup {
	return wire.ConsumerGroup{ID: g.ID, PartitionsCount: t.PartitionsCount(), MembersCount: uint32(len(g.Members)), Name: g.Name}
}

// GroupDetailsRecord is the GET_CONSUMER_GROUP and CREATE_CONSUMER_GROUP
// payload.
func GroupDetailsRecord(t *Topic, g *ConsumerGroup) wire.ConsumerGroupDetails {
	d := wire.ConsumerGroupDetails{ConsumerGroup: GroupRecord(t, g), Members: make([]wire.ConsumerGroupMember, len(g.Members))}
	for i, m := range g.Members {
		d.Members[i] = wire.ConsumerGroupMember{ID: m.ID, Partitions: m.Partitions}
	}
	return d
}

// AssignmentRecord is the SYNC_CONSUMER_GROUP reply for client; ok is
// false when client is not a member (the reply is then an empty body).
func AssignmentRecord(g *ConsumerGroup, client ClientID) (wire.GroupAssignment, bool) {
	gen, ps, ok := g.Assignment(client)
	return wire.GroupAssignment{Generation: gen, Partitions: ps}, ok
}

// UserRecord is the user record of GET_USERS.
func UserRecord(u *User) wire.UserInfo {
	return wire.UserInfo{ID: u.ID, CreatedAt: u.CreatedAt, Status: uint8(u.Status), Username: u.Username, Options: u.Options}
}

// UserDetailsRecord is the GET_USER and CREATE_USER payload.
func UserDetailsRecord(u *User) wire.UserDetails {
	return wire.UserDetails{UserInfo: UserRecord(u), Permissions: u.Permissions}
}

// TokenRecords is the GET_PERSONAL_ACCESS_TOKENS reply for u (sorted by
// name; expiry 0 = never).
func TokenRecords(u *User) wire.PersonalAccessTokens {
	out := make(wire.PersonalAccessTokens, len(u.Tokens))
	for i, p := range u.Tokens {
		out[i] = wire.PersonalAccessTokenInfo{Name: p.Name, ExpiryAt: p.ExpiryAt}
	}
	return out
}
