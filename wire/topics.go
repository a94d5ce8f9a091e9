package wire

// MaxPartitionsPerRequest is the largest partitions_count CREATE_TOPIC and
// CREATE/DELETE_PARTITIONS accept (status 2015 TooManyPartitions beyond).
const MaxPartitionsPerRequest = 1000

// GetTopic is code 300: [stream_id Id][topic_id Id]. Reply: TopicDetails,
// or an empty body when the topic does not exist.
type GetTopic struct{ StreamID, TopicID Identifier }

// Code implements Request.
func (*GetTopic) Code() CommandCode { return CmdGetTopic }

// AppendBody implements Request.
func (r *GetTopic) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_topic request", dst, namesStreamTopic, r.StreamID, r.TopicID)
}

// DecodeBody implements Request.
func (r *GetTopic) DecodeBody(b []byte) error {
	d := newDecoder("get_topic request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	return d.done()
}

// GetTopics is code 301: [stream_id Id]. Reply: Topics (count-prefixed).
type GetTopics struct{ StreamID Identifier }

// Code implements Request.
func (*GetTopics) Code() CommandCode { return CmdGetTopics }

// AppendBody implements Request.
func (r *GetTopics) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_topics request", dst, namesStream, r.StreamID)
}

// DecodeBody implements Request.
func (r *GetTopics) DecodeBody(b []byte) error {
	d := newDecoder("get_topics request", b)
	r.StreamID = d.identifier("stream_id")
	return d.done()
}

// CreateTopic is code 302 (operation 132):
// [stream_id Id][partitions_count u32][name Name][options to end].
// Settings ride the options block (TopicOptionCatalog). Reply
// (result-framed): TopicDetails of the new topic.
type CreateTopic struct {
	StreamID        Identifier
	PartitionsCount uint32
	Name            string
	Options         Options
}

// Code implements Request.
func (*CreateTopic) Code() CommandCode { return CmdCreateTopic }

// AppendBody implements Request.
func (r *CreateTopic) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "create_topic request"}
	e.identifier("stream_id", r.StreamID)
	e.u32(r.PartitionsCount)
	e.name("name", r.Name)
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *CreateTopic) DecodeBody(b []byte) error {
	d := newDecoder("create_topic request", b)
	r.StreamID = d.identifier("stream_id")
	r.PartitionsCount = d.u32("partitions_count")
	r.Name = d.name("name")
	r.Options = d.optionsToEnd()
	return d.done()
}

// DeleteTopic is code 303 (operation 134): [stream_id Id][topic_id Id].
type DeleteTopic struct{ StreamID, TopicID Identifier }

// Code implements Request.
func (*DeleteTopic) Code() CommandCode { return CmdDeleteTopic }

// AppendBody implements Request.
func (r *DeleteTopic) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("delete_topic request", dst, namesStreamTopic, r.StreamID, r.TopicID)
}

// DecodeBody implements Request.
func (r *DeleteTopic) DecodeBody(b []byte) error {
	d := newDecoder("delete_topic request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	return d.done()
}

// UpdateTopic is code 304 (operation 133):
// [stream_id Id][topic_id Id][name Name][options to end]; options are a
// patch limited to the updatable keys.
type UpdateTopic struct {
	StreamID, TopicID Identifier
	Name              string
	Options           Options
}

// Code implements Request.
func (*UpdateTopic) Code() CommandCode { return CmdUpdateTopic }

// AppendBody implements Request.
func (r *UpdateTopic) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "update_topic request"}
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	e.name("name", r.Name)
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *UpdateTopic) DecodeBody(b []byte) error {
	d := newDecoder("update_topic request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	r.Name = d.name("name")
	r.Options = d.optionsToEnd()
	return d.done()
}

// PurgeTopic is code 305 (operation 135): [stream_id Id][topic_id Id].
type PurgeTopic struct{ StreamID, TopicID Identifier }

// Code implements Request.
func (*PurgeTopic) Code() CommandCode { return CmdPurgeTopic }

// AppendBody implements Request.
func (r *PurgeTopic) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("purge_topic request", dst, namesStreamTopic, r.StreamID, r.TopicID)
}

// DecodeBody implements Request.
func (r *PurgeTopic) DecodeBody(b []byte) error {
	d := newDecoder("purge_topic request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	return d.done()
}

// CreatePartitions is code 402 (operation 136):
// [stream_id Id][topic_id Id][partitions_count u32].
type CreatePartitions struct {
	StreamID, TopicID Identifier
	PartitionsCount   uint32
}

// Code implements Request.
func (*CreatePartitions) Code() CommandCode { return CmdCreatePartitions }

// AppendBody implements Request.
func (r *CreatePartitions) AppendBody(dst []byte) ([]byte, error) {
	b, err := appendIDs("create_partitions request", dst, namesStreamTopic, r.StreamID, r.TopicID)
	if err != nil {
		return dst, err
	}
	return appendU32(b, r.PartitionsCount), nil
}

// DecodeBody implements Request.
func (r *CreatePartitions) DecodeBody(b []byte) error {
	d := newDecoder("create_partitions request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	r.PartitionsCount = d.u32("partitions_count")
	return d.done()
}

// DeletePartitions is code 403 (operation 137): same layout as
// CreatePartitions; removes the highest-numbered partitions.
type DeletePartitions struct {
	StreamID, TopicID Identifier
	PartitionsCount   uint32
}

// Code implements Request.
func (*DeletePartitions) Code() CommandCode { return CmdDeletePartitions }

// AppendBody implements Request.
func (r *DeletePartitions) AppendBody(dst []byte) ([]byte, error) {
	b, err := appendIDs("delete_partitions request", dst, namesStreamTopic, r.StreamID, r.TopicID)
	if err != nil {
		return dst, err
	}
	return appendU32(b, r.PartitionsCount), nil
}

// DecodeBody implements Request.
func (r *DeletePartitions) DecodeBody(b []byte) error {
	d := newDecoder("delete_partitions request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	r.PartitionsCount = d.u32("partitions_count")
	return d.done()
}

// DeleteSegments is code 503 (operation 138, not result-framed):
// [stream_id Id][topic_id Id][partition_id u32][segments_count u32].
type DeleteSegments struct {
	StreamID, TopicID Identifier
	PartitionID       uint32
	SegmentsCount     uint32
}

// Code implements Request.
func (*DeleteSegments) Code() CommandCode { return CmdDeleteSegments }

// AppendBody implements Request.
func (r *DeleteSegments) AppendBody(dst []byte) ([]byte, error) {
	b, err := appendIDs("delete_segments request", dst, namesStreamTopic, r.StreamID, r.TopicID)
	if err != nil {
		return dst, err
	}
	b = appendU32(b, r.PartitionID)
	return appendU32(b, r.SegmentsCount), nil
}

// DecodeBody implements Request.
func (r *DeleteSegments) DecodeBody(b []byte) error {
	d := newDecoder("delete_segments request", b)
	r.StreamID, r.TopicID = d.identifier("stream_id"), d.identifier("topic_id")
	r.PartitionID = d.u32("partition_id")
	r.SegmentsCount = d.u32("segments_count")
	return d.done()
}

// Topic is the topic record:
//
//	 0  4  id u32
//	 4  8  created_at u64 µs
//	12  4  partitions_count u32
//	16  8  message_expiry u64 µs (0 server default, MaxUint64 never)
//	24  1  compression_algorithm u8 (1 none, 2 gzip)
//	25  8  max_topic_size u64 (0 server default, MaxUint64 unlimited)
//	33  8  size_bytes u64
//	41  8  messages_count u64
//	49  1+ name Name
//	    4+ explicit options (u32 length + TLV): keys the client sent
//	    4+ derived options (u32 length + TLV): keys filled from defaults
type Topic struct {
	ID                   uint32
	CreatedAt            uint64
	PartitionsCount      uint32
	MessageExpiry        uint64
	CompressionAlgorithm uint8
	MaxTopicSize         uint64
	SizeBytes            uint64
	MessagesCount        uint64
	Name                 string
	Options              Options
	DerivedOptions       Options
}

const topicMinSize = 49 + 2 + 4 + 4

func (t *Topic) appendTo(e *encoder) {
	e.u32(t.ID)
	e.u64(t.CreatedAt)
	e.u32(t.PartitionsCount)
	e.u64(t.MessageExpiry)
	e.u8(t.CompressionAlgorithm)
	e.u64(t.MaxTopicSize)
	e.u64(t.SizeBytes)
	e.u64(t.MessagesCount)
	e.name("name", t.Name)
	e.prefixedOptions("options", t.Options)
	e.prefixedOptions("derived_options", t.DerivedOptions)
}

func decodeTopic(d *decoder) Topic {
	return Topic{
		ID:                   d.u32("id"),
		CreatedAt:            d.u64("created_at"),
		PartitionsCount:      d.u32("partitions_count"),
		MessageExpiry:        d.u64("message_expiry"),
		CompressionAlgorithm: d.u8("compression_algorithm"),
		MaxTopicSize:         d.u64("max_topic_size"),
		SizeBytes:            d.u64("size_bytes"),
		MessagesCount:        d.u64("messages_count"),
		Name:                 d.name("name"),
		Options:              d.prefixedOptions("options"),
		DerivedOptions:       d.prefixedOptions("derived_options"),
	}
}

// AppendTo encodes one record.
func (t *Topic) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "topic"}
	t.appendTo(&e)
	return e.result()
}

// DecodeTopic decodes one record occupying all of b.
func DecodeTopic(b []byte) (Topic, error) {
	d := newDecoder("topic", b)
	t := decodeTopic(&d)
	return t, d.done()
}

// Topics is the GET_TOPICS reply: [count u32] then count topic records.
type Topics []Topic

// AppendTo encodes the list.
func (l Topics) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "topics"}
	e.u32(uint32(len(l)))
	for i := range l {
		l[i].appendTo(&e)
	}
	return e.result()
}

// DecodeTopics decodes the list.
func DecodeTopics(b []byte) (Topics, error) {
	d := newDecoder("topics", b)
	n := d.u32("count")
	out := make(Topics, 0, boundedCap(uint64(n), d.remaining(), topicMinSize))
	for i := uint32(0); d.err == nil && i < n; i++ {
		t := decodeTopic(&d)
		if d.err == nil {
			out = append(out, t)
		}
	}
	return out, d.done()
}

// Partition is the 40-byte partition record:
// [id u32][created_at u64][segments_count u32][current_offset u64][size_bytes u64][messages_count u64].
type Partition struct {
	ID            uint32
	CreatedAt     uint64
	SegmentsCount uint32
	CurrentOffset uint64
	SizeBytes     uint64
	MessagesCount uint64
}

// PartitionRecordSize is the size of one partition record.
const PartitionRecordSize = 40

// TopicDetails is the GET_TOPIC and CREATE_TOPIC payload: the topic record
// then partition records to the end.
type TopicDetails struct {
	Topic
	Partitions []Partition
}

// AppendTo encodes the payload.
func (t *TopicDetails) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "topic details"}
	t.Topic.appendTo(&e)
	for _, p := range t.Partitions {
		e.u32(p.ID)
		e.u64(p.CreatedAt)
		e.u32(p.SegmentsCount)
		e.u64(p.CurrentOffset)
		e.u64(p.SizeBytes)
		e.u64(p.MessagesCount)
	}
	return e.result()
}

// DecodeTopicDetails decodes a non-empty payload.
func DecodeTopicDetails(b []byte) (TopicDetails, error) {
	d := newDecoder("topic details", b)
	t := TopicDetails{Topic: decodeTopic(&d)}
	if d.err != nil {
		return TopicDetails{}, d.err
	}
	if d.remaining()%PartitionRecordSize != 0 {
		return TopicDetails{}, fieldErr(d.what, "partitions", d.off, "%d bytes are not whole 40-byte partition records", d.remaining())
	}
	if n := d.remaining() / PartitionRecordSize; n > 0 {
		t.Partitions = make([]Partition, n)
		for i := range t.Partitions {
			t.Partitions[i] = Partition{d.u32("partition id"), d.u64("created_at"), d.u32("segments_count"),
				d.u64("current_offset"), d.u64("size_bytes"), d.u64("messages_count")}
		}
	}
	return t, d.done()
}
