package wire

import "encoding/binary"

// Permissions is a user's permission set.
//
// Blob layout:
//
//	[10 x u8 global flags] manage_servers read_servers manage_users read_users
//	                       manage_streams read_streams manage_topics read_topics
//	                       poll_messages send_messages
//	[has_streams u8]
//	  per stream: [stream_id u32][6 x u8: manage_stream read_stream manage_topics
//	              read_topics poll_messages send_messages]
//	              [has_topics u8]
//	                per topic: [topic_id u32][4 x u8: manage_topic read_topic
//	                           poll_messages send_messages][has_next_topic u8]
//	              [has_next_stream u8]
//
// Inside CREATE_USER / UPDATE_PERMISSIONS requests and user replies the blob
// is wrapped as [flag u8 = 1][blob_len u32][blob].
type Permissions struct {
	Global  GlobalPermissions
	Streams []StreamPermissions
}

// GlobalPermissions are the server-wide flags.
type GlobalPermissions struct {
	ManageServers, ReadServers, ManageUsers, ReadUsers, ManageStreams, ReadStreams,
	ManageTopics, ReadTopics, PollMessages, SendMessages bool
}

// StreamPermissions are one stream's flags and its per-topic overrides.
type StreamPermissions struct {
	StreamID                                                                       uint32
	ManageStream, ReadStream, ManageTopics, ReadTopics, PollMessages, SendMessages bool
	Topics                                                                         []TopicPermissions
}

// TopicPermissions are one topic's flags.
type TopicPermissions struct {
	TopicID                                            uint32
	ManageTopic, ReadTopic, PollMessages, SendMessages bool
}

// AppendTo appends the blob.
func (p *Permissions) AppendTo(dst []byte) []byte {
	g := &p.Global
	for _, v := range [10]bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams,
		g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages} {
		dst = appendBool(dst, v)
	}
	dst = appendBool(dst, len(p.Streams) > 0)
	for i := range p.Streams {
		s := &p.Streams[i]
		dst = appendU32(dst, s.StreamID)
		for _, v := range [6]bool{s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages} {
			dst = appendBool(dst, v)
		}
		dst = appendBool(dst, len(s.Topics) > 0)
		for j := range s.Topics {
			t := &s.Topics[j]
			dst = appendU32(dst, t.TopicID)
			for _, v := range [4]bool{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages} {
				dst = appendBool(dst, v)
			}
			dst = appendBool(dst, j < len(s.Topics)-1)
		}
		dst = appendBool(dst, i < len(p.Streams)-1)
	}
	return dst
}

// DecodePermissions decodes a blob occupying exactly b. Flags accept any
// non-zero byte as true, like the server.
func DecodePermissions(b []byte) (Permissions, error) {
	d := newDecoder("permissions", b)
	p := decodePermissions(&d)
	if err := d.done(); err != nil {
		return Permissions{}, err
	}
	return p, nil
}

func decodePermissions(d *decoder) Permissions {
	var p Permissions
	g := &p.Global
	for _, f := range [10]*bool{&g.ManageServers, &g.ReadServers, &g.ManageUsers, &g.ReadUsers, &g.ManageStreams,
		&g.ReadStreams, &g.ManageTopics, &g.ReadTopics, &g.PollMessages, &g.SendMessages} {
		*f = d.boolean("global flags")
	}
	if !d.boolean("has_streams") {
		return p
	}
	for d.err == nil {
		var s StreamPermissions
		s.StreamID = d.u32("stream_id")
		for _, f := range [6]*bool{&s.ManageStream, &s.ReadStream, &s.ManageTopics, &s.ReadTopics, &s.PollMessages, &s.SendMessages} {
			*f = d.boolean("stream flags")
		}
		if d.boolean("has_topics") {
			for d.err == nil {
				var t TopicPermissions
				t.TopicID = d.u32("topic_id")
				for _, f := range [4]*bool{&t.ManageTopic, &t.ReadTopic, &t.PollMessages, &t.SendMessages} {
					*f = d.boolean("topic flags")
				}
				if d.err != nil {
					break
				}
				s.Topics = append(s.Topics, t)
				if !d.boolean("has_next_topic") {
					break
				}
			}
		}
		if d.err != nil {
			break
		}
		p.Streams = append(p.Streams, s)
		if !d.boolean("has_next_stream") {
			break
		}
	}
	return p
}

// appendWrappedPermissions writes [1][len u32][blob] or the single 0 flag.
func appendWrappedPermissions(dst []byte, p *Permissions) []byte {
	if p == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	lenAt := len(dst)
	dst = appendU32(dst, 0)
	dst = p.AppendTo(dst)
	binary.LittleEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst
}

// decodeWrappedPermissions reads [flag u8] and, if 1, [len u32][blob] whose
// decoded length must equal len.
func decodeWrappedPermissions(d *decoder) *Permissions {
	flag := d.u8("has_permissions")
	if d.err != nil || flag == 0 {
		return nil
	}
	if flag != 1 {
		d.off--
		d.fail("has_permissions", "flag must be 0 or 1, got %d", flag)
		return nil
	}
	blob := d.longBytes("permissions")
	if d.err != nil {
		return nil
	}
	p, err := DecodePermissions(blob)
	if err != nil {
		d.err = err
		return nil
	}
	return &p
}
