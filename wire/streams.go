package wire

// Request shapes shared by many commands.

func appendIDs(what string, dst []byte, names []string, ids ...Identifier) ([]byte, error) {
	e := encoder{b: dst, what: what}
	for i, id := range ids {
		e.identifier(names[i], id)
	}
	return e.result()
}

var (
	namesStream      = []string{"stream_id"}
	namesStreamTopic = []string{"stream_id", "topic_id"}
	namesGroup       = []string{"stream_id", "topic_id", "group_id"}
)

// GetStream is code 200: [stream_id Id]. Reply: StreamDetails, or an empty
// body when the stream does not exist.
type GetStream struct{ StreamID Identifier }

// Code implements Request.
func (*GetStream) Code() CommandCode { return CmdGetStream }

// AppendBody implements Request.
func (r *GetStream) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_stream request", dst, namesStream, r.StreamID)
}

// DecodeBody implements Request.
func (r *GetStream) DecodeBody(b []byte) error {
	d := newDecoder("get_stream request", b)
	r.StreamID = d.identifier("stream_id")
	return d.done()
}

// GetStreams is code 201, empty body. Reply: Streams.
type GetStreams struct{}

// Code implements Request.
func (*GetStreams) Code() CommandCode { return CmdGetStreams }

// AppendBody implements Request.
func (*GetStreams) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetStreams) DecodeBody(b []byte) error { return emptyBody("get_streams request", b) }

// CreateStream is code 202 (operation 128): [name Name][options to end].
// Reply (result-framed): the new Stream with topics_count 0.
type CreateStream struct {
	Name    string
	Options Options
}

// Code implements Request.
func (*CreateStream) Code() CommandCode { return CmdCreateStream }

// AppendBody implements Request.
func (r *CreateStream) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "create_stream request"}
	e.name("name", r.Name)
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *CreateStream) DecodeBody(b []byte) error {
	d := newDecoder("create_stream request", b)
	r.Name = d.name("name")
	r.Options = d.optionsToEnd()
	return d.done()
}

// DeleteStream is code 203 (operation 130): [stream_id Id]. Reply: result
// section only.
type DeleteStream struct{ StreamID Identifier }

// Code implements Request.
func (*DeleteStream) Code() CommandCode { return CmdDeleteStream }

// AppendBody implements Request.
func (r *DeleteStream) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("delete_stream request", dst, namesStream, r.StreamID)
}

// DecodeBody implements Request.
func (r *DeleteStream) DecodeBody(b []byte) error {
	d := newDecoder("delete_stream request", b)
	r.StreamID = d.identifier("stream_id")
	return d.done()
}

// UpdateStream is code 204 (operation 129): [stream_id Id][name Name][options to end].
type UpdateStream struct {
	StreamID Identifier
	Name     string
	Options  Options
}

// Code implements Request.
func (*UpdateStream) Code() CommandCode { return CmdUpdateStream }

// AppendBody implements Request.
func (r *UpdateStream) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "update_stream request"}
	e.identifier("stream_id", r.StreamID)
	e.name("name", r.Name)
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *UpdateStream) DecodeBody(b []byte) error {
	d := newDecoder("update_stream request", b)
	r.StreamID = d.identifier("stream_id")
	r.Name = d.name("name")
	r.Options = d.optionsToEnd()
	return d.done()
}

// PurgeStream is code 205 (operation 131): [stream_id Id].
type PurgeStream struct{ StreamID Identifier }

// Code implements Request.
func (*PurgeStream) Code() CommandCode { return CmdPurgeStream }

// AppendBody implements Request.
func (r *PurgeStream) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("purge_stream request", dst, namesStream, r.StreamID)
}

// DecodeBody implements Request.
func (r *PurgeStream) DecodeBody(b []byte) error {
	d := newDecoder("purge_stream request", b)
	r.StreamID = d.identifier("stream_id")
	return d.done()
}

// Stream is the stream record:
//
//	[id u32][created_at u64 µs][topics_count u32][size_bytes u64]
//	[messages_count u64][name Name][options: u32 length + TLV]
type Stream struct {
	ID            uint32
	CreatedAt     uint64
	TopicsCount   uint32
	SizeBytes     uint64
	MessagesCount uint64
	Name          string
	Options       Options
}

func (s *Stream) appendTo(e *encoder) {
	e.u32(s.ID)
	e.u64(s.CreatedAt)
	e.u32(s.TopicsCount)
	e.u64(s.SizeBytes)
	e.u64(s.MessagesCount)
	e.name("name", s.Name)
	e.prefixedOptions("options", s.Options)
}

func decodeStream(d *decoder) Stream {
	return Stream{
		ID:            d.u32("id"),
		CreatedAt:     d.u64("created_at"),
		TopicsCount:   d.u32("topics_count"),
		SizeBytes:     d.u64("size_bytes"),
		MessagesCount: d.u64("messages_count"),
		Name:          d.name("name"),
		Options:       d.prefixedOptions("options"),
	}
}

// AppendTo encodes one record (the CREATE_STREAM payload).
func (s *Stream) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "stream"}
	s.appendTo(&e)
	return e.result()
}

// DecodeStream decodes one record occupying all of b.
func DecodeStream(b []byte) (Stream, error) {
	d := newDecoder("stream", b)
	s := decodeStream(&d)
	return s, d.done()
}

// Streams is the GET_STREAMS reply: records back to back, no count.
type Streams []Stream

// AppendTo encodes the list.
func (l Streams) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "streams"}
	for i := range l {
		l[i].appendTo(&e)
	}
	return e.result()
}

// DecodeStreams decodes the list.
func DecodeStreams(b []byte) (Streams, error) {
	d := newDecoder("streams", b)
	var out Streams
	for d.err == nil && d.remaining() > 0 {
		s := decodeStream(&d)
		if d.err == nil {
			out = append(out, s)
		}
	}
	return out, d.done()
}

// StreamDetails is the GET_STREAM reply: the stream record followed by
// topics_count topic records.
type StreamDetails struct {
	Stream
	Topics []Topic
}

// AppendTo encodes the reply; TopicsCount must equal len(Topics).
func (s *StreamDetails) AppendTo(dst []byte) ([]byte, error) {
	if int(s.TopicsCount) != len(s.Topics) {
		return dst, fieldErr("stream details", "topics_count", -1, "%d does not match %d topics", s.TopicsCount, len(s.Topics))
	}
	e := encoder{b: dst, what: "stream details"}
	s.Stream.appendTo(&e)
	for i := range s.Topics {
		s.Topics[i].appendTo(&e)
	}
	return e.result()
}

// DecodeStreamDetails decodes a non-empty reply.
func DecodeStreamDetails(b []byte) (StreamDetails, error) {
	d := newDecoder("stream details", b)
	s := StreamDetails{Stream: decodeStream(&d)}
	if d.err == nil && s.TopicsCount > 0 {
		s.Topics = make([]Topic, 0, boundedCap(uint64(s.TopicsCount), d.remaining(), topicMinSize))
	}
	for i := uint32(0); d.err == nil && i < s.TopicsCount; i++ {
		t := decodeTopic(&d)
		if d.err == nil {
			s.Topics = append(s.Topics, t)
		}
	}
	return s, d.done()
}

// options helpers on the coders.

func (e *encoder) options(o Options) {
	if e.err != nil {
		return
	}
	var err error
	e.b, err = o.AppendTo(e.b)
	if err != nil {
		e.err = err
	}
}

func (e *encoder) prefixedOptions(field string, o Options) {
	if e.err != nil {
		return
	}
	var err error
	e.b, err = o.appendPrefixed(e.b)
	if err != nil {
		e.err = err
	}
}

func (d *decoder) optionsToEnd() Options {
	if d.err != nil {
		return nil
	}
	start := d.off
	o, err := DecodeOptions(d.rest())
	if err != nil {
		d.off = start
		d.err = err
		return nil
	}
	return o
}

func (d *decoder) prefixedOptions(field string) Options {
	b := d.longBytes(field)
	if d.err != nil {
		return nil
	}
	o, err := DecodeOptions(b)
	if err != nil {
		d.err = err
		return nil
	}
	return o
}
