package wire

import (
	"encoding/binary"
	"math"
)

// Partitioning kinds of a send.
const (
	PartitionBalanced    uint8 = 1
	PartitionIDKind      uint8 = 2
	PartitionMessagesKey uint8 = 3
)

// Partitioning says where a send goes: [kind u8][len u8][value].
// Balanced has len 0; PartitionID len 4 (u32, 0-based); MessagesKey len
// 1..255 (raw key bytes, routed with XXH32(key) % partitions).
type Partitioning struct {
	Kind        uint8
	PartitionID uint32
	Key         []byte
}

// Balanced lets the server round-robin over the topic's partitions.
func Balanced() Partitioning { return Partitioning{Kind: PartitionBalanced} }

// PartitionByID targets one partition.
func PartitionByID(id uint32) Partitioning {
	return Partitioning{Kind: PartitionIDKind, PartitionID: id}
}

// PartitionByKey routes by message key.
func PartitionByKey(key []byte) Partitioning {
	return Partitioning{Kind: PartitionMessagesKey, Key: key}
}

func (p *Partitioning) appendTo(e *encoder) {
	if e.err != nil {
		return
	}
	switch p.Kind {
	case PartitionBalanced:
		e.raw([]byte{PartitionBalanced, 0})
	case PartitionIDKind:
		e.raw([]byte{PartitionIDKind, 4})
		e.u32(p.PartitionID)
	case PartitionMessagesKey:
		if len(p.Key) < 1 || len(p.Key) > 255 {
			e.err = fieldErrCode(CodeInvalidKeyValueLength, e.what, "partitioning key", -1, "key must be 1..255 bytes, got %d", len(p.Key))
			return
		}
		e.u8(PartitionMessagesKey)
		e.u8(uint8(len(p.Key)))
		e.raw(p.Key)
	default:
		e.err = fieldErr(e.what, "partitioning", -1, "unknown partitioning kind %d", p.Kind)
	}
}

func decodePartitioning(d *decoder) Partitioning {
	kind := d.u8("partitioning kind")
	n := int(d.u8("partitioning length"))
	if d.err != nil {
		return Partitioning{}
	}
	switch kind {
	case PartitionBalanced:
		if n != 0 {
			d.off--
			d.fail("partitioning length", "balanced partitioning must have length 0, got %d", n)
		}
		return Partitioning{Kind: kind}
	case PartitionIDKind:
		if n != 4 {
			d.off--
			d.fail("partitioning length", "partition id partitioning must have length 4, got %d", n)
			return Partitioning{}
		}
		return Partitioning{Kind: kind, PartitionID: d.u32("partition id")}
	case PartitionMessagesKey:
		if n == 0 {
			d.off--
			d.fail("partitioning length", "messages key must not be empty")
			return Partitioning{}
		}
		return Partitioning{Kind: kind, Key: d.raw("messages key", n)}
	}
	d.off -= 2
	d.fail("partitioning kind", "unknown partitioning kind %d", kind)
	return Partitioning{}
}

// Consumer kinds.
const (
	ConsumerKindSingle uint8 = 1
	ConsumerKindGroup  uint8 = 2
)

// Consumer is [kind u8][Identifier]: an individual consumer (kind 1, any id
// the application picks) or a consumer group (kind 2, group id or name).
type Consumer struct {
	Kind uint8
	ID   Identifier
}

// SingleConsumer is an individual consumer.
func SingleConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerKindSingle, ID: id} }

// GroupConsumer is a consumer group.
func GroupConsumer(id Identifier) Consumer { return Consumer{Kind: ConsumerKindGroup, ID: id} }

func (c *Consumer) appendTo(e *encoder) {
	if e.err == nil && c.Kind != ConsumerKindSingle && c.Kind != ConsumerKindGroup {
		e.err = fieldErr(e.what, "consumer kind", -1, "must be 1 or 2, got %d", c.Kind)
		return
	}
	e.u8(c.Kind)
	e.identifier("consumer id", c.ID)
}

func decodeConsumer(d *decoder) Consumer {
	kind := d.u8("consumer kind")
	if d.err == nil && kind != ConsumerKindSingle && kind != ConsumerKindGroup {
		d.off--
		d.fail("consumer kind", "must be 1 (consumer) or 2 (group), got %d", kind)
		return Consumer{}
	}
	return Consumer{Kind: kind, ID: d.identifier("consumer id")}
}

// OptionalPartition is the 5-byte [flag u8][partition_id u32]: flag 1 =
// present, flag 0 = absent (the value then 0, as every SDK writes it).
// Iggy reads any flag other than 1 as absent and ignores the value; this
// decoder refuses other flags and a non-zero value after flag 0
// (InvalidCommand), as it does every malformed field.
type OptionalPartition struct {
	Set bool
	ID  uint32
}

// SomePartition returns a present partition id.
func SomePartition(id uint32) OptionalPartition { return OptionalPartition{Set: true, ID: id} }

func (p OptionalPartition) appendTo(e *encoder) {
	if p.Set {
		e.u8(1)
		e.u32(p.ID)
		return
	}
	e.raw([]byte{0, 0, 0, 0, 0})
}

func decodeOptionalPartition(d *decoder) OptionalPartition {
	flag := d.u8("partition flag")
	if d.err == nil && flag > 1 {
		d.off--
		d.fail("partition flag", "must be 0 (absent) or 1 (present), got %d", flag)
		return OptionalPartition{}
	}
	id := d.u32("partition id")
	if flag == 1 {
		return OptionalPartition{Set: true, ID: id}
	}
	if d.err == nil && id != 0 {
		d.off -= 4
		d.fail("partition id", "must be 0 when the partition flag is 0, got %d", id)
	}
	return OptionalPartition{}
}

// strictBool reads a boolean byte that must be 0 or 1.
func strictBool(d *decoder, field string) bool {
	v := d.u8(field)
	if d.err == nil && v > 1 {
		d.off--
		d.fail(field, "must be 0 or 1, got %d", v)
	}
	return v == 1
}

// Polling strategy kinds.
const (
	PollOffset    uint8 = 1
	PollTimestamp uint8 = 2
	PollFirst     uint8 = 3
	PollLast      uint8 = 4
	PollNext      uint8 = 5
)

// PollingStrategy is [kind u8][value u64].
type PollingStrategy struct {
	Kind  uint8
	Value uint64
}

// Strategy constructors.
func PollFromOffset(o uint64) PollingStrategy { return PollingStrategy{Kind: PollOffset, Value: o} }
func PollFromTimestamp(us uint64) PollingStrategy {
	return PollingStrategy{Kind: PollTimestamp, Value: us}
}
func PollFromFirst() PollingStrategy { return PollingStrategy{Kind: PollFirst} }
func PollFromLast() PollingStrategy  { return PollingStrategy{Kind: PollLast} }
func PollFromNext() PollingStrategy  { return PollingStrategy{Kind: PollNext} }

// SendMessages is code 101 (operation 160):
//
//	[metadata_length u32]  bytes of the next four fields
//	[stream_id Id][topic_id Id][partitioning][messages_count u32]
//	[batch]                256-byte batch header + frames, to the end
//
// Encoding uses Batch when it is set, else encodes Messages.
type SendMessages struct {
	StreamID     Identifier
	TopicID      Identifier
	Partitioning Partitioning
	Messages     []Message
	// Batch is the decoded, verified batch (aliases the body).
	Batch BatchView
}

// Code implements Request.
func (*SendMessages) Code() CommandCode { return CmdSendMessages }

// AppendBody implements Request.
func (r *SendMessages) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "send_messages request"}
	lenAt := len(e.b)
	e.u32(0)
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	r.Partitioning.appendTo(&e)
	count := uint32(len(r.Messages))
	if r.Batch.b != nil {
		count = r.Batch.MessageCount()
	}
	e.u32(count)
	if e.err != nil {
		return dst, e.err
	}
	binary.LittleEndian.PutUint32(e.b[lenAt:], uint32(len(e.b)-lenAt-4))
	if r.Batch.b != nil {
		return append(e.b, r.Batch.b...), nil
	}
	out, err := AppendBatch(e.b, r.Messages)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// DecodeBody implements Request.
func (r *SendMessages) DecodeBody(b []byte) error {
	v, err := DecodeSendMessages(b)
	*r = v
	return err
}

// DecodeSendMessages decodes and admits a send body the way the server
// must: the metadata section consumes exactly metadata_length; the batch is
// layout-checked and checksum-verified in one pass (4027/4039 on mismatch);
// messages_count > 0 and equal to the batch's message_count. It does not
// allocate for numeric identifiers.
func DecodeSendMessages(b []byte) (SendMessages, error) {
	d := newDecoder("send_messages request", b)
	metaLen := d.u32("metadata_length")
	if d.err != nil {
		return SendMessages{}, d.err
	}
	if uint64(metaLen) > uint64(d.remaining()) {
		return SendMessages{}, fieldErr(d.what, "metadata_length", 0, "%d exceeds the %d bytes that follow", metaLen, d.remaining())
	}
	md := decoder{b: b[:4+int(metaLen)], off: 4, what: d.what}
	var r SendMessages
	r.StreamID = md.identifier("stream_id")
	r.TopicID = md.identifier("topic_id")
	r.Partitioning = decodePartitioning(&md)
	count := md.u32("messages_count")
	if err := md.done(); err != nil {
		return SendMessages{}, err
	}
	if count == 0 {
		return SendMessages{}, fieldErrCode(CodeInvalidMessagesCount, d.what, "messages_count", int(metaLen), "must be > 0")
	}
	v, err := VerifyBatch(b[4+int(metaLen):])
	if err != nil {
		return SendMessages{}, err
	}
	if v.MessageCount() != count {
		return SendMessages{}, fieldErrCode(CodeInvalidMessagesCount, d.what, "messages_count", int(metaLen),
			"metadata says %d messages, batch holds %d", count, v.MessageCount())
	}
	r.Batch = v
	return r, nil
}

// SendConfirmation is one 20-byte entry of the send reply.
type SendConfirmation struct {
	StreamID    uint32
	TopicID     uint32
	PartitionID uint32
	BaseOffset  uint64
}

// SendConfirmations is the send reply (not result-framed, never empty):
// [count u32] then count x [stream u32][topic u32][partition u32][base_offset u64].
type SendConfirmations []SendConfirmation

// AppendTo encodes the reply.
func (c SendConfirmations) AppendTo(dst []byte) ([]byte, error) {
	dst = appendU32(dst, uint32(len(c)))
	for _, x := range c {
		dst = appendU32(dst, x.StreamID)
		dst = appendU32(dst, x.TopicID)
		dst = appendU32(dst, x.PartitionID)
		dst = appendU64(dst, x.BaseOffset)
	}
	return dst, nil
}

// DecodeSendConfirmations decodes the reply; entries must fill it exactly.
func DecodeSendConfirmations(b []byte) (SendConfirmations, error) {
	d := newDecoder("send_messages reply", b)
	n := d.u32("count")
	if d.err != nil {
		return nil, d.err
	}
	if uint64(n)*20 != uint64(d.remaining()) {
		return nil, fieldErr(d.what, "count", 0, "%d entries do not fill the %d remaining bytes", n, d.remaining())
	}
	out := make(SendConfirmations, n)
	for i := range out {
		out[i] = SendConfirmation{d.u32("stream_id"), d.u32("topic_id"), d.u32("partition_id"), d.u64("base_offset")}
	}
	return out, d.done()
}

// PollMessages is code 100 (NonReplicated):
// [consumer][stream_id Id][topic_id Id][OptionalPartition][strategy kind u8][value u64][count u32][auto_commit u8],
// optionally followed by iggo's wait extension (PollWaitTag, below).
// Decoding is strict: consumer kind 1 or 2, partition flag and auto_commit
// 0 or 1, strategy kind 1..5, and after auto_commit nothing but exactly
// the wait extension.
type PollMessages struct {
	Consumer   Consumer
	StreamID   Identifier
	TopicID    Identifier
	Partition  OptionalPartition
	Strategy   PollingStrategy
	Count      uint32
	AutoCommit bool
	// WaitMillis > 0 asks an iggo server to hold a poll that finds no
	// message for up to this many milliseconds, answering as soon as one
	// arrives (the wait extension). 0 encodes Iggy's body unchanged.
	WaitMillis uint32
}

// The wait extension of POLL_MESSAGES (iggo's long polling; Iggy 0.9 has
// none). It is 5 bytes appended after auto_commit, which ends Iggy's body:
//
//	off  size  field
//	  0     1  tag         u8 = PollWaitTag (0x57, 'W')
//	  1     4  wait_ms     u32 LE, 1..4294967295: the longest the server
//	                       may hold a poll that finds nothing
//
// Iggy's SDKs never write a byte after auto_commit, so their polls decode
// exactly as before (WaitMillis 0, an immediate answer). The decoder
// accepts after auto_commit either nothing or exactly these 5 bytes with
// this tag and a non-zero wait; anything else (another tag, a short or
// longer tail, wait_ms 0) is refused like any malformed body. Iggy's
// server stops decoding at auto_commit, so an iggo client that sends the
// extension to it gets an ordinary, immediate poll.
const (
	PollWaitTag     uint8 = 'W'
	PollWaitExtSize       = 5
)

// Code implements Request.
func (*PollMessages) Code() CommandCode { return CmdPollMessages }

// AppendBody implements Request.
func (r *PollMessages) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "poll_messages request"}
	r.Consumer.appendTo(&e)
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	r.Partition.appendTo(&e)
	if e.err == nil && (r.Strategy.Kind < PollOffset || r.Strategy.Kind > PollNext) {
		e.err = fieldErr(e.what, "strategy", -1, "unknown polling strategy %d", r.Strategy.Kind)
	}
	e.u8(r.Strategy.Kind)
	e.u64(r.Strategy.Value)
	e.u32(r.Count)
	e.boolean(r.AutoCommit)
	if r.WaitMillis > 0 {
		e.u8(PollWaitTag)
		e.u32(r.WaitMillis)
	}
	return e.result()
}

// decodePollWait reads the optional wait extension that may follow
// auto_commit.
func decodePollWait(d *decoder) uint32 {
	if d.err != nil || d.remaining() == 0 {
		return 0
	}
	tag := d.u8("wait tag")
	if d.err == nil && tag != PollWaitTag {
		d.off--
		d.fail("wait tag", "nothing but the wait extension (tag %#x) may follow auto_commit, got %#x", PollWaitTag, tag)
		return 0
	}
	ms := d.u32("wait_ms")
	if d.err == nil && ms == 0 {
		d.off -= 4
		d.fail("wait_ms", "the wait extension must ask for at least 1 ms")
		return 0
	}
	return ms
}

// DecodeBody implements Request.
func (r *PollMessages) DecodeBody(b []byte) error {
	d := newDecoder("poll_messages request", b)
	r.Consumer = decodeConsumer(&d)
	r.StreamID = d.identifier("stream_id")
	r.TopicID = d.identifier("topic_id")
	r.Partition = decodeOptionalPartition(&d)
	kind := d.u8("strategy kind")
	if d.err == nil && (kind < PollOffset || kind > PollNext) {
		d.off--
		d.fail("strategy kind", "unknown polling strategy %d", kind)
	}
	r.Strategy = PollingStrategy{Kind: kind, Value: d.u64("strategy value")}
	r.Count = d.u32("count")
	r.AutoCommit = strictBool(&d, "auto_commit")
	r.WaitMillis = decodePollWait(&d)
	return d.done()
}

// Poll reply sentinels (the first only on the wire).
const (
	// ResyncPartition in an empty poll reply tells a group member its
	// assignment is stale.
	ResyncPartition uint32 = math.MaxUint32
	// NoAssignedPartition is the client-side marker of a group member that
	// owns no partition (never on the wire).
	NoAssignedPartition uint32 = math.MaxUint32 - 1
)

// PollReplyPrefixSize is the fixed part of a poll reply.
const PollReplyPrefixSize = 16

// AppendPollReplyPrefix appends [partition_id u32][current_offset u64][messages_count u32].
// The batch records follow it back to back.
func AppendPollReplyPrefix(dst []byte, partitionID uint32, currentOffset uint64, messagesCount uint32) []byte {
	dst = appendU32(dst, partitionID)
	dst = appendU64(dst, currentOffset)
	return appendU32(dst, messagesCount)
}

// PolledMessages is a decoded poll reply. Records alias the reply body.
type PolledMessages struct {
	PartitionID   uint32
	CurrentOffset uint64
	MessagesCount uint32
	Records       []BatchView
}

// AppendTo encodes the reply (prefix + records).
func (p *PolledMessages) AppendTo(dst []byte) ([]byte, error) {
	dst = AppendPollReplyPrefix(dst, p.PartitionID, p.CurrentOffset, p.MessagesCount)
	for _, r := range p.Records {
		dst = append(dst, r.b...)
	}
	return dst, nil
}

// PolledMessage is one message of a poll reply.
type PolledMessage struct {
	Offset          uint64 // base_offset + offset_delta
	Timestamp       uint64 // the record's base_timestamp (server append time, µs)
	OriginTimestamp uint64 // origin_timestamp + timestamp_delta
	ID              Uint128
	Checksum        uint64
	Payload         []byte // aliases the reply
	UserHeaders     []byte // aliases the reply
}

// Messages flattens the records into messages; the result holds
// MessagesCount entries.
func (p *PolledMessages) Messages() []PolledMessage {
	out := make([]PolledMessage, 0, p.MessagesCount)
	for _, r := range p.Records {
		base, ts, origin := r.BaseOffset(), r.BaseTimestamp(), r.OriginTimestamp()
		it := r.Frames()
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			out = append(out, PolledMessage{
				Offset:          base + uint64(f.OffsetDelta()),
				Timestamp:       ts,
				OriginTimestamp: origin + uint64(f.TimestampDelta()),
				ID:              f.ID(),
				Checksum:        f.Checksum(),
				Payload:         f.Payload(),
				UserHeaders:     f.UserHeaders(),
			})
		}
	}
	return out
}

// DecodePollReply decodes a poll reply: the 16-byte prefix (an empty body is
// accepted as "no messages", like the Go SDK), then batch records back to
// back, each layout-checked (checksums are passed through, as SDKs do), with
// the total frame count equal to messages_count.
func DecodePollReply(b []byte) (PolledMessages, error) {
	if len(b) == 0 {
		return PolledMessages{}, nil
	}
	d := newDecoder("poll reply", b)
	p := PolledMessages{PartitionID: d.u32("partition_id"), CurrentOffset: d.u64("current_offset"), MessagesCount: d.u32("messages_count")}
	if d.err != nil {
		return PolledMessages{}, d.err
	}
	var total uint64
	for d.remaining() > 0 {
		if d.remaining() < BatchHeaderSize {
			return PolledMessages{}, fieldErr(d.what, "record", d.off, "%d bytes cannot hold a batch header", d.remaining())
		}
		length := binary.LittleEndian.Uint64(b[d.off+bhBatchLength:])
		if length < BatchHeaderSize || length > uint64(d.remaining()) {
			return PolledMessages{}, fieldErr(d.what, "batch_length", d.off+bhBatchLength, "record of %d bytes does not fit the %d remaining", length, d.remaining())
		}
		v, err := ParseBatch(b[d.off : d.off+int(length) : d.off+int(length)])
		if err != nil {
			return PolledMessages{}, err
		}
		total += uint64(v.MessageCount())
		if p.Records == nil {
			p.Records = make([]BatchView, 0, boundedCap(uint64(p.MessagesCount), d.remaining(), BatchHeaderSize+FrameHeaderSize))
		}
		p.Records = append(p.Records, v)
		d.off += int(length)
	}
	if total != uint64(p.MessagesCount) {
		return PolledMessages{}, fieldErr(d.what, "messages_count", 12, "declares %d messages, records hold %d", p.MessagesCount, total)
	}
	return p, nil
}

// FlushUnsavedBuffer is code 102: [stream_id Id][topic_id Id][partition_id u32][fsync u8].
// Iggy's server always denies it with status 5 (FeatureUnavailable).
type FlushUnsavedBuffer struct {
	StreamID    Identifier
	TopicID     Identifier
	PartitionID uint32
	Fsync       bool
}

// Code implements Request.
func (*FlushUnsavedBuffer) Code() CommandCode { return CmdFlushUnsavedBuffer }

// AppendBody implements Request.
func (r *FlushUnsavedBuffer) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "flush_unsaved_buffer request"}
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	e.u32(r.PartitionID)
	e.boolean(r.Fsync)
	return e.result()
}

// DecodeBody implements Request.
func (r *FlushUnsavedBuffer) DecodeBody(b []byte) error {
	d := newDecoder("flush_unsaved_buffer request", b)
	r.StreamID = d.identifier("stream_id")
	r.TopicID = d.identifier("topic_id")
	r.PartitionID = d.u32("partition_id")
	r.Fsync = d.boolean("fsync")
	return d.done()
}

// Ack levels of consumer-offset writes.
const (
	AckNone   uint8 = 0 // leader-local
	AckQuorum uint8 = 1 // what the Go SDK always sends
)

// GetConsumerOffset is code 120: [consumer][stream_id Id][topic_id Id][OptionalPartition].
type GetConsumerOffset struct {
	Consumer  Consumer
	StreamID  Identifier
	TopicID   Identifier
	Partition OptionalPartition
}

// Code implements Request.
func (*GetConsumerOffset) Code() CommandCode { return CmdGetConsumerOffset }

// AppendBody implements Request.
func (r *GetConsumerOffset) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "get_consumer_offset request"}
	r.Consumer.appendTo(&e)
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	r.Partition.appendTo(&e)
	return e.result()
}

// DecodeBody implements Request.
func (r *GetConsumerOffset) DecodeBody(b []byte) error {
	d := newDecoder("get_consumer_offset request", b)
	r.Consumer = decodeConsumer(&d)
	r.StreamID = d.identifier("stream_id")
	r.TopicID = d.identifier("topic_id")
	r.Partition = decodeOptionalPartition(&d)
	return d.done()
}

// StoreConsumerOffset is code 121 (operation 161):
// [consumer][stream_id Id][topic_id Id][OptionalPartition][offset u64][ack u8].
type StoreConsumerOffset struct {
	Consumer  Consumer
	StreamID  Identifier
	TopicID   Identifier
	Partition OptionalPartition
	Offset    uint64
	Ack       uint8
}

// Code implements Request.
func (*StoreConsumerOffset) Code() CommandCode { return CmdStoreConsumerOffset }

// AppendBody implements Request.
func (r *StoreConsumerOffset) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "store_consumer_offset request"}
	r.Consumer.appendTo(&e)
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	r.Partition.appendTo(&e)
	e.u64(r.Offset)
	if e.err == nil && r.Ack > AckQuorum {
		e.err = fieldErr(e.what, "ack", -1, "must be 0 or 1, got %d", r.Ack)
	}
	e.u8(r.Ack)
	return e.result()
}

// DecodeBody implements Request.
func (r *StoreConsumerOffset) DecodeBody(b []byte) error {
	d := newDecoder("store_consumer_offset request", b)
	r.Consumer = decodeConsumer(&d)
	r.StreamID = d.identifier("stream_id")
	r.TopicID = d.identifier("topic_id")
	r.Partition = decodeOptionalPartition(&d)
	r.Offset = d.u64("offset")
	r.Ack = decodeAck(&d)
	return d.done()
}

func decodeAck(d *decoder) uint8 {
	ack := d.u8("ack")
	if d.err == nil && ack > AckQuorum {
		d.off--
		d.fail("ack", "must be 0 (none) or 1 (quorum), got %d", ack)
	}
	return ack
}

// DeleteConsumerOffset is code 122 (operation 162):
// [consumer][stream_id Id][topic_id Id][OptionalPartition][ack u8].
type DeleteConsumerOffset struct {
	Consumer  Consumer
	StreamID  Identifier
	TopicID   Identifier
	Partition OptionalPartition
	Ack       uint8
}

// Code implements Request.
func (*DeleteConsumerOffset) Code() CommandCode { return CmdDeleteConsumerOffset }

// AppendBody implements Request.
func (r *DeleteConsumerOffset) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "delete_consumer_offset request"}
	r.Consumer.appendTo(&e)
	e.identifier("stream_id", r.StreamID)
	e.identifier("topic_id", r.TopicID)
	r.Partition.appendTo(&e)
	if e.err == nil && r.Ack > AckQuorum {
		e.err = fieldErr(e.what, "ack", -1, "must be 0 or 1, got %d", r.Ack)
	}
	e.u8(r.Ack)
	return e.result()
}

// DecodeBody implements Request.
func (r *DeleteConsumerOffset) DecodeBody(b []byte) error {
	d := newDecoder("delete_consumer_offset request", b)
	r.Consumer = decodeConsumer(&d)
	r.StreamID = d.identifier("stream_id")
	r.TopicID = d.identifier("topic_id")
	r.Partition = decodeOptionalPartition(&d)
	r.Ack = decodeAck(&d)
	return d.done()
}

// ConsumerOffsetInfo is the GET_CONSUMER_OFFSET reply (20 bytes; an empty
// body means no offset is stored):
// [partition_id u32][current_offset u64][stored_offset u64].
type ConsumerOffsetInfo struct {
	PartitionID   uint32
	CurrentOffset uint64
	StoredOffset  uint64
}

// AppendTo encodes the reply.
func (o *ConsumerOffsetInfo) AppendTo(dst []byte) ([]byte, error) {
	dst = appendU32(dst, o.PartitionID)
	dst = appendU64(dst, o.CurrentOffset)
	return appendU64(dst, o.StoredOffset), nil
}

// DecodeConsumerOffsetInfo decodes a non-empty reply.
func DecodeConsumerOffsetInfo(b []byte) (ConsumerOffsetInfo, error) {
	d := newDecoder("consumer offset reply", b)
	o := ConsumerOffsetInfo{d.u32("partition_id"), d.u64("current_offset"), d.u64("stored_offset")}
	return o, d.done()
}
