package wire

import (
	"encoding/binary"
	"math"

	"github.com/zeebo/xxh3"
)

// Batch geometry and limits.
const (
	BatchHeaderSize = 256
	FrameHeaderSize = 48
	// MaxPayloadSize is the largest message payload accepted (Iggy's Rust limit).
	MaxPayloadSize = 64_000_000
	// MaxUserHeadersSize is the largest user-headers block of one message.
	MaxUserHeadersSize = 100_000
)

// Batch header offsets.
const (
	bhPartitionID     = 0
	bhBaseOffset      = 8
	bhBaseTimestamp   = 16
	bhOriginTimestamp = 24
	bhBatchLength     = 32
	bhBatchChecksum   = 40
	bhMessageCount    = 48
	bhReserved        = 52
)

// Frame header offsets.
const (
	fhChecksum       = 0
	fhID             = 8
	fhOffsetDelta    = 24
	fhTimestampDelta = 28
	fhUserHeadersLen = 32
	fhPayloadLen     = 36
	fhReserved       = 40
)

// BatchHeader is the 256-byte header of a message batch record.
//
//	 0..8    partition_id     u64, stamped by the server (producer 0)
//	 8..16   base_offset      u64, stamped by the server at append
//	16..24   base_timestamp   u64 µs, stamped by the server at append
//	24..32   origin_timestamp u64 µs, minimum of the messages' origin times
//	32..40   batch_length     u64, 256 + all frame bytes
//	40..48   batch_checksum   u64, see BatchView.ComputeChecksum
//	48..52   message_count    u32, number of frames
//	52..256  reserved         zero
type BatchHeader struct {
	PartitionID     uint64
	BaseOffset      uint64
	BaseTimestamp   uint64
	OriginTimestamp uint64
	BatchLength     uint64
	BatchChecksum   uint64
	MessageCount    uint32
}

// Put writes the header into b[0:256] (reserved bytes zeroed).
func (h *BatchHeader) Put(b []byte) {
	b = b[:BatchHeaderSize]
	clear(b[bhReserved:])
	binary.LittleEndian.PutUint64(b[bhPartitionID:], h.PartitionID)
	binary.LittleEndian.PutUint64(b[bhBaseOffset:], h.BaseOffset)
	binary.LittleEndian.PutUint64(b[bhBaseTimestamp:], h.BaseTimestamp)
	binary.LittleEndian.PutUint64(b[bhOriginTimestamp:], h.OriginTimestamp)
	binary.LittleEndian.PutUint64(b[bhBatchLength:], h.BatchLength)
	binary.LittleEndian.PutUint64(b[bhBatchChecksum:], h.BatchChecksum)
	binary.LittleEndian.PutUint32(b[bhMessageCount:], h.MessageCount)
}

func readBatchHeader(b []byte) BatchHeader {
	return BatchHeader{
		PartitionID:     binary.LittleEndian.Uint64(b[bhPartitionID:]),
		BaseOffset:      binary.LittleEndian.Uint64(b[bhBaseOffset:]),
		BaseTimestamp:   binary.LittleEndian.Uint64(b[bhBaseTimestamp:]),
		OriginTimestamp: binary.LittleEndian.Uint64(b[bhOriginTimestamp:]),
		BatchLength:     binary.LittleEndian.Uint64(b[bhBatchLength:]),
		BatchChecksum:   binary.LittleEndian.Uint64(b[bhBatchChecksum:]),
		MessageCount:    binary.LittleEndian.Uint32(b[bhMessageCount:]),
	}
}

// DecodeBatchHeader decodes the first 256 bytes of b: batch_length >= 256 and
// the reserved region zero.
func DecodeBatchHeader(b []byte) (BatchHeader, error) {
	const what = "batch header"
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fieldErr(what, "header", 0, "needs %d bytes, got %d", BatchHeaderSize, len(b))
	}
	h := readBatchHeader(b)
	if h.BatchLength < BatchHeaderSize {
		return BatchHeader{}, fieldErr(what, "batch_length", bhBatchLength, "%d does not cover the %d-byte header", h.BatchLength, BatchHeaderSize)
	}
	for i := bhReserved; i < BatchHeaderSize; i += 8 {
		if binary.LittleEndian.Uint32(b[i:]) != 0 || (i+4 < BatchHeaderSize && binary.LittleEndian.Uint32(b[i+4:]) != 0) {
			return BatchHeader{}, fieldErr(what, "reserved", i, "must be zero")
		}
	}
	return h, nil
}

// Frame is a view over one message frame inside a batch (no copy).
//
//	 0..8   checksum          u64, XXH3-64 over frame[8:] (header tail + payload + user headers)
//	 8..24  id                u128, producer-chosen
//	24..28  offset_delta      u32, offset - base_offset (producers write the frame index)
//	28..32  timestamp_delta   u32 µs, origin time - batch origin_timestamp
//	32..36  user_headers_len  u32
//	36..40  payload_len       u32
//	40..48  reserved          zero
//	48..    payload, then user headers
type Frame []byte

// Checksum is the stored frame checksum.
func (f Frame) Checksum() uint64 { return binary.LittleEndian.Uint64(f[fhChecksum:]) }

// ID is the message id.
func (f Frame) ID() Uint128 { return getU128(f[fhID:]) }

// OffsetDelta is offset - base_offset.
func (f Frame) OffsetDelta() uint32 { return binary.LittleEndian.Uint32(f[fhOffsetDelta:]) }

// TimestampDelta is origin time - batch origin_timestamp, in µs.
func (f Frame) TimestampDelta() uint32 { return binary.LittleEndian.Uint32(f[fhTimestampDelta:]) }

// PayloadLen is the payload length.
func (f Frame) PayloadLen() uint32 { return binary.LittleEndian.Uint32(f[fhPayloadLen:]) }

// UserHeadersLen is the user-headers block length.
func (f Frame) UserHeadersLen() uint32 { return binary.LittleEndian.Uint32(f[fhUserHeadersLen:]) }

// Payload is the message payload (aliases the batch).
func (f Frame) Payload() []byte {
	n := int(f.PayloadLen())
	return f[FrameHeaderSize : FrameHeaderSize+n : FrameHeaderSize+n]
}

// UserHeaders is the raw TLV user-headers block (aliases the batch).
func (f Frame) UserHeaders() []byte {
	start := FrameHeaderSize + int(f.PayloadLen())
	return f[start:len(f):len(f)]
}

// ComputeChecksum hashes the frame as its checksum field should cover it.
func (f Frame) ComputeChecksum() uint64 { return xxh3.Hash(f[fhID:]) }

// BatchView is a batch record (256-byte header + frames) whose layout has
// been validated: batch_length equals the view's length, reserved bytes are
// zero and the frames tile message_count exactly. It aliases the bytes it was
// built from; methods that modify (Stamp) write into them.
type BatchView struct {
	b []byte
}

// ParseBatch validates the layout of exactly one batch record occupying all
// of b, without checking checksums. It does not allocate.
func ParseBatch(b []byte) (BatchView, error) {
	if _, err := walkBatch(b, false); err != nil {
		return BatchView{}, err
	}
	return BatchView{b: b}, nil
}

// VerifyBatch is ParseBatch plus admission: every frame checksum, the batch
// checksum and each user-headers block (TLV structure) are verified, and
// every message must have a payload of 1..MaxPayloadSize bytes and at most
// MaxUserHeadersSize bytes of user headers, in a single pass. It does not
// allocate. A checksum mismatch reports Iggy code 4027 (frame) or 4039
// (batch); an empty payload 4025 (InvalidMessagePayloadLength), a larger
// one 4022 (TooBigMessagePayload), oversized headers 4017
// (TooBigUserHeaders).
func VerifyBatch(b []byte) (BatchView, error) {
	if _, err := walkBatch(b, true); err != nil {
		return BatchView{}, err
	}
	return BatchView{b: b}, nil
}

// walkBatch is the single frame walk shared by parse and verify. With verify
// it checks frame checksums and user headers and compares the recomputed
// batch checksum with the stored one.
func walkBatch(b []byte, verify bool) (uint64, error) {
	const what = "batch"
	h, err := DecodeBatchHeader(b)
	if err != nil {
		return 0, err
	}
	if h.BatchLength != uint64(len(b)) {
		return 0, fieldErr(what, "batch_length", bhBatchLength, "declares %d bytes, record has %d", h.BatchLength, len(b))
	}
	var hs batchHasher
	if verify {
		hs.header(b)
	}
	off := BatchHeaderSize
	var n uint32
	for off < len(b) {
		if n == h.MessageCount {
			return 0, fieldErr(what, "frames", off, "%d bytes remain after the %d declared messages", len(b)-off, n)
		}
		if len(b)-off < FrameHeaderSize {
			return 0, fieldErr(what, "frame header", off, "message %d needs %d header bytes, only %d remain", n, FrameHeaderSize, len(b)-off)
		}
		f := b[off:]
		payload := uint64(binary.LittleEndian.Uint32(f[fhPayloadLen:]))
		headers := uint64(binary.LittleEndian.Uint32(f[fhUserHeadersLen:]))
		if binary.LittleEndian.Uint64(f[fhReserved:]) != 0 {
			return 0, fieldErr(what, "frame reserved", off+fhReserved, "message %d: must be zero", n)
		}
		if verify {
			// The producer limits (Iggy's MAX_PAYLOAD_SIZE and
			// MAX_USER_HEADERS_SIZE), refused with the codes its SDKs use.
			// Only admission checks them: records already stored are read
			// whatever they hold.
			switch {
			case payload == 0:
				return 0, fieldErrCode(CodeInvalidMessagePayloadLength, what, "payload_length", off+fhPayloadLen, "message %d has an empty payload", n)
			case payload > MaxPayloadSize:
				return 0, fieldErrCode(CodeTooBigMessagePayload, what, "payload_length", off+fhPayloadLen, "message %d payload of %d bytes exceeds %d", n, payload, MaxPayloadSize)
			case headers > MaxUserHeadersSize:
				return 0, fieldErrCode(CodeTooBigUserHeaders, what, "user_headers_length", off+fhUserHeadersLen, "message %d user headers of %d bytes exceed %d", n, headers, MaxUserHeadersSize)
			}
		}
		size := uint64(FrameHeaderSize) + payload + headers
		if size > uint64(len(b)-off) {
			return 0, fieldErr(what, "frame length", off, "message %d of %d payload and %d header bytes overruns the record", n, payload, headers)
		}
		frame := Frame(b[off : off+int(size)])
		if verify {
			stored := frame.Checksum()
			if got := frame.ComputeChecksum(); got != stored {
				return 0, fieldErrCode(CodeInvalidMessageChecksum, what, "frame checksum", off, "message %d: stored %#x, computed %#x", n, stored, got)
			}
			if headers > 0 {
				if err := validateTLV("user headers", frame.UserHeaders(), false); err != nil {
					return 0, err
				}
			}
			hs.frame(frame)
		}
		off += int(size)
		n++
	}
	if n != h.MessageCount {
		return 0, fieldErr(what, "message_count", bhMessageCount, "declares %d messages, frames hold %d", h.MessageCount, n)
	}
	if !verify {
		return 0, nil
	}
	sum := hs.sum()
	if sum != h.BatchChecksum {
		return 0, fieldErrCode(CodeInvalidBatchChecksum, what, "batch_checksum", bhBatchChecksum, "stored %#x, computed %#x", h.BatchChecksum, sum)
	}
	return sum, nil
}

// batchHasher streams the batch checksum input. Frame checksums are 8 bytes
// each; gathering them into a local buffer before handing them to the
// hasher cuts the per-call overhead that would otherwise dominate stamping.
type batchHasher struct {
	hs    xxh3.Hasher
	wrote bool
	n     int
	buf   [512]byte
}

func (b *batchHasher) header(hdr []byte) {
	b.n = copy(b.buf[:], hdr[:bhBatchChecksum])
	b.n += copy(b.buf[b.n:], hdr[bhMessageCount:bhMessageCount+4])
}

func (b *batchHasher) frame(f []byte) {
	if b.n+8 > len(b.buf) {
		b.hs.Write(b.buf[:b.n])
		b.wrote = true
		b.n = 0
	}
	b.n += copy(b.buf[b.n:], f[:8])
}

func (b *batchHasher) sum() uint64 {
	if !b.wrote {
		return xxh3.Hash(b.buf[:b.n])
	}
	b.hs.Write(b.buf[:b.n])
	return b.hs.Sum64()
}

// Bytes returns the record's bytes.
func (v BatchView) Bytes() []byte { return v.b }

// Len is the record length in bytes.
func (v BatchView) Len() int { return len(v.b) }

// Header decodes the batch header.
func (v BatchView) Header() BatchHeader { return readBatchHeader(v.b) }

// MessageCount is the number of frames.
func (v BatchView) MessageCount() uint32 { return binary.LittleEndian.Uint32(v.b[bhMessageCount:]) }

// BaseOffset is the stamped base offset.
func (v BatchView) BaseOffset() uint64 { return binary.LittleEndian.Uint64(v.b[bhBaseOffset:]) }

// BaseTimestamp is the stamped server time in µs.
func (v BatchView) BaseTimestamp() uint64 { return binary.LittleEndian.Uint64(v.b[bhBaseTimestamp:]) }

// OriginTimestamp is the producer's earliest origin time in µs.
func (v BatchView) OriginTimestamp() uint64 {
	return binary.LittleEndian.Uint64(v.b[bhOriginTimestamp:])
}

// PartitionID is the stamped partition id.
func (v BatchView) PartitionID() uint64 { return binary.LittleEndian.Uint64(v.b[bhPartitionID:]) }

// Frames returns an iterator over the frames (no allocation).
func (v BatchView) Frames() FrameIter { return FrameIter{b: v.b, off: BatchHeaderSize} }

// FrameIter walks the frames of a validated batch.
type FrameIter struct {
	b   []byte
	off int
}

// Next returns the next frame, or false at the end.
func (it *FrameIter) Next() (Frame, bool) {
	if it.off >= len(it.b) {
		return nil, false
	}
	f := it.b[it.off:]
	size := FrameHeaderSize + int(binary.LittleEndian.Uint32(f[fhPayloadLen:])) + int(binary.LittleEndian.Uint32(f[fhUserHeadersLen:]))
	frame := Frame(f[:size:size])
	it.off += size
	return frame, true
}

// Offset is the byte position of the next frame inside the record.
func (it *FrameIter) Offset() int { return it.off }

// ComputeChecksum recomputes the batch checksum from the header fields and
// the stored frame checksums: XXH3-64 over partition_id, base_offset,
// base_timestamp, origin_timestamp, batch_length (8 bytes LE each),
// message_count (4 bytes LE), then every frame's 8 checksum bytes in order.
func (v BatchView) ComputeChecksum() uint64 {
	return splitChecksum(v.b[:BatchHeaderSize], v.b[BatchHeaderSize:])
}

// splitChecksum is ComputeChecksum of the record whose header is head and
// whose frames (validated) are frames.
func splitChecksum(head, frames []byte) uint64 {
	var hs batchHasher
	hs.header(head)
	it := FrameIter{b: frames}
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		hs.frame(f)
	}
	return hs.sum()
}

// VerifyChecksums re-checks every frame checksum and the batch checksum.
func (v BatchView) VerifyChecksums() error {
	_, err := walkBatch(v.b, true)
	return err
}

// CheckDenseDeltas reports an error unless frame i has offset_delta i, which
// every SDK writes and which keeps stamped offsets dense. A server applies it
// at send admission.
func (v BatchView) CheckDenseDeltas() error {
	it := v.Frames()
	var i uint32
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		if f.OffsetDelta() != i {
			return fieldErr("batch", "offset_delta", it.Offset()-len(f)+fhOffsetDelta, "message %d has offset_delta %d, want %d", i, f.OffsetDelta(), i)
		}
		i++
	}
	return nil
}

// LastOffsetDelta is the offset_delta of the last frame (0 for no frames).
func (v BatchView) LastOffsetDelta() uint32 {
	it := v.Frames()
	var last uint32
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		last = f.OffsetDelta()
	}
	return last
}

// Stamp sets partition_id, base_offset and base_timestamp in place and
// recomputes the batch checksum, as the server does at append.
func (v BatchView) Stamp(partitionID, baseOffset, baseTimestamp uint64) {
	StampHeader(v.b[:BatchHeaderSize], v.b[BatchHeaderSize:], partitionID, baseOffset, baseTimestamp)
}

// StampHeader is Stamp for a record held in two pieces: head, its
// BatchHeaderSize-byte header, gets the stamps and the batch checksum;
// frames, the record's frames as a validated batch holds them (ParseBatch),
// is only read. A replicated partition stamps a copy of the header and
// writes the prepare's frames after it as they are, instead of copying
// the whole batch to stamp it.
func StampHeader(head, frames []byte, partitionID, baseOffset, baseTimestamp uint64) {
	binary.LittleEndian.PutUint64(head[bhPartitionID:], partitionID)
	binary.LittleEndian.PutUint64(head[bhBaseOffset:], baseOffset)
	binary.LittleEndian.PutUint64(head[bhBaseTimestamp:], baseTimestamp)
	binary.LittleEndian.PutUint64(head[bhBatchChecksum:], splitChecksum(head, frames))
}

// FinishFrame completes a frame rewritten in place: f holds the 48-byte
// header whose id and deltas (bytes 8..32) are kept, then the new payload
// of payloadLen bytes and the new user headers, to the end of f. It sets
// both lengths, zeroes the reserved bytes and stamps the checksum. Codecs
// that transform payloads (package replica/codec) use it to rebuild frames
// without another copy.
func FinishFrame(f []byte, payloadLen int) {
	binary.LittleEndian.PutUint32(f[fhUserHeadersLen:], uint32(len(f)-FrameHeaderSize-payloadLen))
	binary.LittleEndian.PutUint32(f[fhPayloadLen:], uint32(payloadLen))
	binary.LittleEndian.PutUint64(f[fhReserved:], 0)
	binary.LittleEndian.PutUint64(f[fhChecksum:], xxh3.Hash(f[fhID:]))
}

// FinishBatch completes a record whose frames were rebuilt (FinishFrame):
// rec is the 256-byte header, whose other fields are kept, then exactly
// count frames. It sets batch_length and message_count and recomputes the
// batch checksum, and fails when the frames do not tile rec.
func FinishBatch(rec []byte, count uint32) error {
	if len(rec) < BatchHeaderSize {
		return fieldErr("batch", "header", 0, "needs %d bytes, got %d", BatchHeaderSize, len(rec))
	}
	binary.LittleEndian.PutUint64(rec[bhBatchLength:], uint64(len(rec)))
	binary.LittleEndian.PutUint32(rec[bhMessageCount:], count)
	v, err := ParseBatch(rec)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(rec[bhBatchChecksum:], v.ComputeChecksum())
	return nil
}

// BatchSlice is a record cut from a stored batch for a poll reply: a freshly
// computed header plus a sub-slice of the original frames (not copied). The
// header keeps base_offset, base_timestamp, origin_timestamp and the frames'
// deltas, so absolute offsets are unchanged; message_count, batch_length and
// batch_checksum describe the slice.
type BatchSlice struct {
	Header [BatchHeaderSize]byte
	Frames []byte
	Count  uint32
}

// Len is the record length (header + frames).
func (s *BatchSlice) Len() int { return BatchHeaderSize + len(s.Frames) }

// AppendTo appends the record (header then frames) to dst.
func (s *BatchSlice) AppendTo(dst []byte) []byte {
	dst = append(dst, s.Header[:]...)
	return append(dst, s.Frames...)
}

// SliceByOffset selects the frames whose absolute offset (base_offset +
// offset_delta) is >= from, at most max of them (max 0 selects none). It
// returns false when no frame qualifies. The frames alias v.
func (v BatchView) SliceByOffset(from uint64, max uint32) (BatchSlice, bool) {
	if max == 0 {
		return BatchSlice{}, false
	}
	base := v.BaseOffset()
	it := v.Frames()
	start, end := -1, -1
	var count uint32
	var hs batchHasher
	for {
		pos := it.Offset()
		f, ok := it.Next()
		if !ok {
			break
		}
		if base+uint64(f.OffsetDelta()) < from {
			continue
		}
		if start < 0 {
			start = pos
		}
		end = pos + len(f)
		count++
		if count == max {
			break
		}
	}
	if start < 0 {
		return BatchSlice{}, false
	}
	var s BatchSlice
	s.Frames = v.b[start:end:end]
	s.Count = count
	copy(s.Header[:], v.b[:BatchHeaderSize])
	binary.LittleEndian.PutUint64(s.Header[bhBatchLength:], uint64(BatchHeaderSize+len(s.Frames)))
	binary.LittleEndian.PutUint32(s.Header[bhMessageCount:], count)
	hs.header(s.Header[:])
	fit := FrameIter{b: s.Frames}
	for f, ok := fit.Next(); ok; f, ok = fit.Next() {
		hs.frame(f)
	}
	binary.LittleEndian.PutUint64(s.Header[bhBatchChecksum:], hs.sum())
	return s, true
}

// Message is one message to encode into a batch.
type Message struct {
	// ID is the producer-chosen id; the server never mints or checks it.
	ID Uint128
	// OriginTimestamp is the producer's time in µs.
	OriginTimestamp uint64
	Payload         []byte
	// UserHeaders is an encoded TLV block (see AppendUserHeaders); may be nil.
	UserHeaders []byte
}

// BatchSize returns the encoded size of a batch holding msgs.
func BatchSize(msgs []Message) int {
	n := BatchHeaderSize
	for i := range msgs {
		n += FrameHeaderSize + len(msgs[i].Payload) + len(msgs[i].UserHeaders)
	}
	return n
}

// AppendBatch encodes msgs as one batch record the way a producer does:
// partition_id, base_offset and base_timestamp zero; origin_timestamp the
// minimum origin time; offset_delta the frame index; timestamp_delta each
// message's distance from the minimum (at most 2^32-1 µs); checksums filled.
// It allocates nothing when dst has room for BatchSize(msgs) more bytes.
func AppendBatch(dst []byte, msgs []Message) ([]byte, error) {
	const what = "batch encode"
	if len(msgs) == 0 {
		return dst, fieldErrCode(CodeInvalidMessagesCount, what, "messages", -1, "a batch needs at least one message")
	}
	if uint64(len(msgs)) > math.MaxUint32 {
		return dst, fieldErrCode(CodeTooManyMessages, what, "messages", -1, "%d messages do not fit a u32 count", len(msgs))
	}
	origin := msgs[0].OriginTimestamp
	for i := range msgs {
		m := &msgs[i]
		if m.OriginTimestamp < origin {
			origin = m.OriginTimestamp
		}
		if len(m.Payload) == 0 {
			return dst, fieldErrCode(CodeEmptyMessagePayload, what, "payload", -1, "message %d has an empty payload", i)
		}
		if len(m.Payload) > MaxPayloadSize {
			return dst, fieldErrCode(CodeTooBigMessagePayload, what, "payload", -1, "message %d payload of %d bytes exceeds %d", i, len(m.Payload), MaxPayloadSize)
		}
		if len(m.UserHeaders) > MaxUserHeadersSize {
			return dst, fieldErrCode(CodeTooBigUserHeaders, what, "user headers", -1, "message %d headers of %d bytes exceed %d", i, len(m.UserHeaders), MaxUserHeadersSize)
		}
		if len(m.UserHeaders) > 0 {
			if err := validateTLV("user headers", m.UserHeaders, false); err != nil {
				return dst, err
			}
		}
	}
	for i := range msgs {
		if d := msgs[i].OriginTimestamp - origin; d > math.MaxUint32 {
			return dst, fieldErrCode(CodeInvalidMessageTimestampDelta, what, "origin_timestamp", -1,
				"message %d is %d µs past the batch's earliest message (limit %d)", i, d, uint32(math.MaxUint32))
		}
	}
	start := len(dst)
	size := BatchSize(msgs)
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+size]
	rec := dst[start:]
	clear(rec[:BatchHeaderSize])
	off := BatchHeaderSize
	var hs batchHasher
	binary.LittleEndian.PutUint64(rec[bhOriginTimestamp:], origin)
	binary.LittleEndian.PutUint64(rec[bhBatchLength:], uint64(size))
	binary.LittleEndian.PutUint32(rec[bhMessageCount:], uint32(len(msgs)))
	hs.header(rec)
	for i := range msgs {
		m := &msgs[i]
		f := rec[off:]
		putU128(f[fhID:], m.ID)
		binary.LittleEndian.PutUint32(f[fhOffsetDelta:], uint32(i))
		binary.LittleEndian.PutUint32(f[fhTimestampDelta:], uint32(m.OriginTimestamp-origin))
		binary.LittleEndian.PutUint32(f[fhUserHeadersLen:], uint32(len(m.UserHeaders)))
		binary.LittleEndian.PutUint32(f[fhPayloadLen:], uint32(len(m.Payload)))
		binary.LittleEndian.PutUint64(f[fhReserved:], 0)
		copy(f[FrameHeaderSize:], m.Payload)
		copy(f[FrameHeaderSize+len(m.Payload):], m.UserHeaders)
		n := FrameHeaderSize + len(m.Payload) + len(m.UserHeaders)
		binary.LittleEndian.PutUint64(f[fhChecksum:], xxh3.Hash(f[fhID:n]))
		hs.frame(f)
		off += n
	}
	binary.LittleEndian.PutUint64(rec[bhBatchChecksum:], hs.sum())
	return dst, nil
}
