package wire

// Consumer-group requests all start with [stream_id Id][topic_id Id].

// GetConsumerGroup is code 600: [stream_id Id][topic_id Id][group_id Id].
// Reply: ConsumerGroupDetails, or an empty body when the group is missing.
type GetConsumerGroup struct{ StreamID, TopicID, GroupID Identifier }

// Code implements Request.
func (*GetConsumerGroup) Code() CommandCode { return CmdGetConsumerGroup }

// AppendBody implements Request.
func (r *GetConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_consumer_group request", dst, namesGroup, r.StreamID, r.TopicID, r.GroupID)
}

// DecodeBody implements Request.
func (r *GetConsumerGroup) DecodeBody(b []byte) error {
	return decodeGroupIDs("get_consumer_group request", b, &r.StreamID, &r.TopicID, &r.GroupID)
}

func decodeGroupIDs(what string, b []byte, s, t, g *Identifier) error {
	d := newDecoder(what, b)
	*s, *t, *g = d.identifier("stream_id"), d.identifier("topic_id"), d.identifier("group_id")
	return d.done()
}

// GetConsumerGroups is code 601: [stream_id Id][topic_id Id]. Reply:
// ConsumerGroups (records back to back).
type GetConsumerGroups struct{ StreamID, TopicID Identifier }

// Code implements Request.
func (*GetConsumerGroups) Code() CommandCode { return CmdGetConsumerGroups }

// AppendBody implements Request.
func (r *GetConsumerGroups) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_consumer_groups request", dst, namesStreamTopic, r.StreamID, r.TopicID)
}

// DecodeBody implements Request.
func (r *GetConsumerGroups) DecodeBody(b []byte) error {
	d := newDecoder("get_consumer_groups request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	return d.done()
}

// CreateConsumerGroup is code 602 (operation 139): [stream_id Id][topic_id Id][name Name].
// Reply (result-framed): ConsumerGroupDetails with no members.
type CreateConsumerGroup struct {
	StreamID, TopicID Identifier
	Name              string
}

// Code implements Request.
func (*CreateConsumerGroup) Code() CommandCode { return CmdCreateConsumerGroup }

// AppendBody implements Request.
func (r *CreateConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "create_consumer_group request"}
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	e.name("name", r.Name)
	return e.result()
}

// DecodeBody implements Request.
func (r *CreateConsumerGroup) DecodeBody(b []byte) error {
	d := newDecoder("create_consumer_group request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	r.Name = d.name("name")
	return d.done()
}

// DeleteConsumerGroup is code 603 (operation 140): [stream_id Id][topic_id Id][group_id Id].
type DeleteConsumerGroup struct{ StreamID, TopicID, GroupID Identifier }

// Code implements Request.
func (*DeleteConsumerGroup) Code() CommandCode { return CmdDeleteConsumerGroup }

// AppendBody implements Request.
func (r *DeleteConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("delete_consumer_group request", dst, namesGroup, r.StreamID, r.TopicID, r.GroupID)
}

// DecodeBody implements Request.
func (r *DeleteConsumerGroup) DecodeBody(b []byte) error {
	return decodeGroupIDs("delete_consumer_group request", b, &r.StreamID, &r.TopicID, &r.GroupID)
}

// JoinConsumerGroup is code 604 (operation 148): same ids. Membership is
// keyed by the connection's registered client id; joining twice is fine.
type JoinConsumerGroup struct{ StreamID, TopicID, GroupID Identifier }

// Code implements Request.
func (*JoinConsumerGroup) Code() CommandCode { return CmdJoinConsumerGroup }

// AppendBody implements Request.
func (r *JoinConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("join_consumer_group request", dst, namesGroup, r.StreamID, r.TopicID, r.GroupID)
}

// DecodeBody implements Request.
func (r *JoinConsumerGroup) DecodeBody(b []byte) error {
	return decodeGroupIDs("join_consumer_group request", b, &r.StreamID, &r.TopicID, &r.GroupID)
}

// LeaveConsumerGroup is code 605 (operation 149): same ids.
type LeaveConsumerGroup struct{ StreamID, TopicID, GroupID Identifier }

// Code implements Request.
func (*LeaveConsumerGroup) Code() CommandCode { return CmdLeaveConsumerGroup }

// AppendBody implements Request.
func (r *LeaveConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("leave_consumer_group request", dst, namesGroup, r.StreamID, r.TopicID, r.GroupID)
}

// DecodeBody implements Request.
func (r *LeaveConsumerGroup) DecodeBody(b []byte) error {
	return decodeGroupIDs("leave_consumer_group request", b, &r.StreamID, &r.TopicID, &r.GroupID)
}

// SyncConsumerGroup is code 606 (NonReplicated): same ids. Reply:
// GroupAssignment, or an empty body when the caller is not a member.
type SyncConsumerGroup struct{ StreamID, TopicID, GroupID Identifier }

// Code implements Request.
func (*SyncConsumerGroup) Code() CommandCode { return CmdSyncConsumerGroup }

// AppendBody implements Request.
func (r *SyncConsumerGroup) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("sync_consumer_group request", dst, namesGroup, r.StreamID, r.TopicID, r.GroupID)
}

// DecodeBody implements Request.
func (r *SyncConsumerGroup) DecodeBody(b []byte) error {
	return decodeGroupIDs("sync_consumer_group request", b, &r.StreamID, &r.TopicID, &r.GroupID)
}

// ConsumerGroup is the group record:
// [id u32][partitions_count u32][members_count u32][name Name].
type ConsumerGroup struct {
	ID              uint32
	PartitionsCount uint32
	MembersCount    uint32
	Name            string
}

func (g *ConsumerGroup) appendTo(e *encoder) {
	e.u32(g.ID)
	e.u32(g.PartitionsCount)
	e.u32(g.MembersCount)
	e.name("name", g.Name)
}

func decodeGroup(d *decoder) ConsumerGroup {
	return ConsumerGroup{d.u32("id"), d.u32("partitions_count"), d.u32("members_count"), d.name("name")}
}

// ConsumerGroups is the GET_CONSUMER_GROUPS reply: records back to back.
type ConsumerGroups []ConsumerGroup

// AppendTo encodes the list.
func (l ConsumerGroups) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "consumer groups"}
	for i := range l {
		l[i].appendTo(&e)
	}
	return e.result()
}

// DecodeConsumerGroups decodes the list.
func DecodeConsumerGroups(b []byte) (ConsumerGroups, error) {
	d := newDecoder("consumer groups", b)
	var out ConsumerGroups
	for d.err == nil && d.remaining() > 0 {
		g := decodeGroup(&d)
		if d.err == nil {
			out = append(out, g)
		}
	}
	return out, d.done()
}

// ConsumerGroupMember is [member_id u32][partitions_count u32][partition_id u32 x count].
type ConsumerGroupMember struct {
	ID         uint32
	Partitions []uint32
}

// ConsumerGroupDetails is the group record followed by members_count member
// records.
type ConsumerGroupDetails struct {
	ConsumerGroup
	Members []ConsumerGroupMember
}

// AppendTo encodes the payload; MembersCount must equal len(Members).
func (g *ConsumerGroupDetails) AppendTo(dst []byte) ([]byte, error) {
	if int(g.MembersCount) != len(g.Members) {
		return dst, fieldErr("consumer group details", "members_count", -1, "%d does not match %d members", g.MembersCount, len(g.Members))
	}
	e := encoder{b: dst, what: "consumer group details"}
	g.ConsumerGroup.appendTo(&e)
	for _, m := range g.Members {
		e.u32(m.ID)
		e.u32(uint32(len(m.Partitions)))
		for _, p := range m.Partitions {
			e.u32(p)
		}
	}
	return e.result()
}

// DecodeConsumerGroupDetails decodes a non-empty payload.
func DecodeConsumerGroupDetails(b []byte) (ConsumerGroupDetails, error) {
	d := newDecoder("consumer group details", b)
	g := ConsumerGroupDetails{ConsumerGroup: decodeGroup(&d)}
	if d.err == nil && g.MembersCount > 0 {
		g.Members = make([]ConsumerGroupMember, 0, boundedCap(uint64(g.MembersCount), d.remaining(), 8))
	}
	for i := uint32(0); d.err == nil && i < g.MembersCount; i++ {
		m := ConsumerGroupMember{ID: d.u32("member_id")}
		n := d.u32("member partitions_count")
		if d.err == nil && uint64(n)*4 > uint64(d.remaining()) {
			d.off -= 4
			d.fail("member partitions_count", "%d partitions overrun the %d remaining bytes", n, d.remaining()-4)
			break
		}
		if n > 0 {
			m.Partitions = make([]uint32, n)
			for j := range m.Partitions {
				m.Partitions[j] = d.u32("member partition_id")
			}
		}
		g.Members = append(g.Members, m)
	}
	return g, d.done()
}

// GroupAssignment is the SYNC_CONSUMER_GROUP reply:
// [generation u64][count u32][partition_id u32 x count] = the caller's
// pollable partitions.
type GroupAssignment struct {
	Generation uint64
	Partitions []uint32
}

// AppendTo encodes the reply.
func (a *GroupAssignment) AppendTo(dst []byte) ([]byte, error) {
	dst = appendU64(dst, a.Generation)
	dst = appendU32(dst, uint32(len(a.Partitions)))
	for _, p := range a.Partitions {
		dst = appendU32(dst, p)
	}
	return dst, nil
}

// DecodeGroupAssignment decodes a non-empty reply; the ids must fill it.
func DecodeGroupAssignment(b []byte) (GroupAssignment, error) {
	d := newDecoder("group assignment", b)
	a := GroupAssignment{Generation: d.u64("generation")}
	n := d.u32("count")
	if d.err != nil {
		return GroupAssignment{}, d.err
	}
	if uint64(n)*4 != uint64(d.remaining()) {
		return GroupAssignment{}, fieldErr(d.what, "count", 8, "%d partitions do not fill the %d remaining bytes", n, d.remaining())
	}
	a.Partitions = make([]uint32, n)
	for i := range a.Partitions {
		a.Partitions[i] = d.u32("partition_id")
	}
	return a, d.done()
}
