package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/zeebo/xxh3"
)

// FrameSizeError reports a header whose size field is out of range; the
// connection must be closed, since the stream can no longer be framed.
type FrameSizeError struct {
	Size, Max uint32
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("wire: frame size %d outside [%d, %d]", e.Size, HeaderSize, e.Max)
}

// IggyCode implements Coder.
func (e *FrameSizeError) IggyCode() Code { return CodeInvalidCommand }

// ReadFrame reads one frame (header + body) from r into buf and returns the
// frame. maxSize 0 means DefaultMaxFrameSize. A size outside [256, maxSize]
// yields *FrameSizeError without reading the body. The buffer grows only as
// body bytes arrive (ReadBody), so a peer that declares a large frame and
// sends little of it costs little memory.
func ReadFrame(r io.Reader, buf []byte, maxSize uint32) ([]byte, error) {
	if maxSize == 0 {
		maxSize = DefaultMaxFrameSize
	}
	if cap(buf) < HeaderSize {
		buf = make([]byte, HeaderSize, 4096)
	}
	buf = buf[:HeaderSize]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	size := FrameSizeOf(buf)
	if size < HeaderSize || size > maxSize {
		return nil, &FrameSizeError{Size: size, Max: maxSize}
	}
	frame, _, err := ReadBody(r, buf, int(size), nil)
	return frame, err
}

// BodyGrowthMin is the first step by which ReadBody extends the room it
// gives a frame beyond its header.
const BodyGrowthMin = 4096

// ReadBody reads the rest of a frame whose header is buf[:HeaderSize] and
// whose total size is size (>= HeaderSize), growing buf as bytes arrive: the
// room it reads into starts at BodyGrowthMin and doubles only once it is
// full, so the memory a frame holds is never more than twice what arrived
// (plus one step). A larger buf is reused without allocating. Before each
// extension of the room by n bytes it calls charge(n) when charge is not
// nil; an error from charge stops the read and is returned as is. It returns
// the buffer (frame is buf[:size] when err is nil) and how many bytes of the
// frame are in it; io.EOF in the middle of a frame becomes
// io.ErrUnexpectedEOF.
func ReadBody(r io.Reader, buf []byte, size int, charge func(n int) error) ([]byte, int, error) {
	got := HeaderSize
	room := HeaderSize
	for got < size {
		if got == room {
			next := min(size, max(2*room, room+BodyGrowthMin))
			if charge != nil {
				if err := charge(next - room); err != nil {
					return buf, got, err
				}
			}
			if cap(buf) < next {
				grown := make([]byte, next)
				copy(grown, buf[:got])
				buf = grown
			}
			buf = buf[:next]
			room = next
		}
		n, err := r.Read(buf[got:room])
		got += n
		if err != nil && got < size {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, got, err
		}
	}
	return buf[:size], got, nil
}

// AppendRequest appends a request frame: the header h (Size is computed) and
// body. Set h.Code for NonReplicated operations.
func AppendRequest(dst []byte, h RequestHeader, body []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = append(dst, body...)
	h.Size = uint32(len(dst) - start)
	h.Put(dst[start:])
	return dst
}

// StampRequestChecksum sets request_checksum of a complete request frame to
// XXH3-64 of its body (the optional stamp the Rust SDK uses).
func StampRequestChecksum(frame []byte) {
	putU128(frame[offReqRequestChecksum:], Uint128{Lo: xxh3.Hash(frame[HeaderSize:])})
}

// VerifyRequestChecksum is the server rule: a zero stamp is not checked; a
// non-zero stamp must equal XXH3-64(body) widened, else InvalidFormat (4).
func VerifyRequestChecksum(h *RequestHeader, body []byte) error {
	if h.RequestChecksum.IsZero() {
		return nil
	}
	if want := (Uint128{Lo: xxh3.Hash(body)}); want != h.RequestChecksum {
		return Errorf(CodeInvalidFormat, "request checksum %#x:%#x does not match the body", h.RequestChecksum.Hi, h.RequestChecksum.Lo)
	}
	return nil
}

// DecodeRequest splits a whole request frame into its decoded header and body
// and applies the field rules (Validate). The body aliases frame.
func DecodeRequest(frame []byte, maxSize uint32) (RequestHeader, []byte, error) {
	h, err := DecodeRequestHeader(frame, maxSize)
	if err != nil {
		return RequestHeader{}, nil, err
	}
	if int(h.Size) != len(frame) {
		return RequestHeader{}, nil, fieldErr("request header", "size", offSize, "declares %d bytes, frame has %d", h.Size, len(frame))
	}
	if err := h.Validate(); err != nil {
		return RequestHeader{}, nil, err
	}
	return h, frame[HeaderSize:], nil
}

// Result section: [count u32] then count x {index u32, result u32}. An empty
// section (count 0) means success and the typed payload follows.

// AppendResultOK appends the success section [0u32].
func AppendResultOK(dst []byte) []byte { return appendU32(dst, 0) }

// AppendResultRejection appends a committed rejection [1][0][code].
func AppendResultRejection(dst []byte, code Code) []byte {
	dst = appendU32(dst, 1)
	dst = appendU32(dst, 0)
	return appendU32(dst, uint32(code))
}

// SplitResult strips the result section of a result-framed body: a
// rejection (first entry's result != 0) is returned as *Error; otherwise the
// payload after the section.
func SplitResult(body []byte) ([]byte, error) {
	if len(body) < 4 {
		return nil, fieldErr("result section", "count", 0, "needs 4 bytes, body has %d", len(body))
	}
	count := uint64(binary.LittleEndian.Uint32(body))
	section := 4 + count*8
	if uint64(len(body)) < section {
		return nil, fieldErr("result section", "entries", 4, "%d entries need %d bytes, body has %d", count, section, len(body))
	}
	if count > 0 {
		if code := binary.LittleEndian.Uint32(body[8:]); code != 0 {
			return nil, NewError(Code(code))
		}
	}
	return body[section:], nil
}

// AppendReply appends a status-0 reply to req carrying payload. For
// result-framed operations the success section [0u32] is put in front of the
// payload automatically (Register included, whose success body is never
// empty). The reply echoes the request's correlation fields (see ReplyTo).
func AppendReply(dst []byte, req *RequestHeader, payload []byte) []byte {
	h := ReplyTo(req)
	return AppendReplyWith(dst, &h, payload)
}

// AppendReplyWith is AppendReply with a caller-built header (to set view,
// replica, op or commit). Status must be 0.
func AppendReplyWith(dst []byte, h *ReplyHeader, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	if ResultFramed(h.Operation, len(payload)) || h.Operation == OpRegister {
		dst = AppendResultOK(dst)
	}
	dst = append(dst, payload...)
	hh := *h
	hh.Status = 0
	hh.Size = uint32(len(dst) - start)
	hh.Put(dst[start:])
	return dst
}

// AppendStatusReply appends a pre-commit denial: status = code, empty body.
func AppendStatusReply(dst []byte, req *RequestHeader, code Code) []byte {
	h := ReplyTo(req)
	h.Status = code
	h.Size = HeaderSize
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h.Put(dst[start:])
	return dst
}

// AppendRejectionReply appends a committed rejection for a result-framed
// operation: status 0, body [1][0][code]. For operations that are not
// result-framed it falls back to a status reply, the only shape their
// clients can read.
func AppendRejectionReply(dst []byte, req *RequestHeader, code Code) []byte {
	if !ResultFramed(req.Operation, 1) {
		return AppendStatusReply(dst, req, code)
	}
	h := ReplyTo(req)
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	dst = AppendResultRejection(dst, code)
	h.Size = uint32(len(dst) - start)
	h.Put(dst[start:])
	return dst
}

// DecodeReply is the client's decode of a whole reply frame, in the order the
// Go SDK applies it:
//  1. kind 13: the eviction as *EvictionError;
//  2. kind other than 8, bad size or unknown operation: *FieldError;
//  3. status != 0: *Error with that code (the body is ignored);
//  4. SendMessages with an empty body: *FieldError (a committed send always
//     carries confirmations);
//  5. result-framed operations: a rejection as *Error, else the payload
//     after the section; others: the whole body.
//
// The caller checks the echoed request number itself (ReplyHeader.Request)
// before trusting anything else. The payload aliases frame.
func DecodeReply(frame []byte, maxSize uint32) (ReplyHeader, []byte, error) {
	if len(frame) >= HeaderSize && FrameKindOf(frame) == FrameEviction {
		return ReplyHeader{}, nil, evictionFromHeader(frame)
	}
	h, err := DecodeReplyHeader(frame, maxSize)
	if err != nil {
		// A denial is reported even when the operation byte is not one this
		// package knows: the status is read before the operation, as SDKs do.
		var fe *FieldError
		if errors.As(err, &fe) && fe.Field == "operation" {
			readReplyTail(&h, frame)
			h.Prefix = getPrefix(frame)
			if h.Status != 0 && int(h.Size) == len(frame) {
				return h, nil, NewError(h.Status)
			}
		}
		return ReplyHeader{}, nil, err
	}
	if int(h.Size) != len(frame) {
		return h, nil, fieldErr("reply header", "size", offSize, "declares %d bytes, frame has %d", h.Size, len(frame))
	}
	if h.Status != 0 {
		return h, nil, NewError(h.Status)
	}
	body := frame[HeaderSize:]
	if h.Operation == OpSendMessages && len(body) == 0 {
		return h, nil, fieldErr("reply", "body", HeaderSize, "a send reply must carry confirmations")
	}
	if ResultFramed(h.Operation, len(body)) {
		payload, err := SplitResult(body)
		return h, payload, err
	}
	return h, body, nil
}

// FrameCounter follows one frame through bytes passing by in pieces (a
// message transport that ends a unit of transfer per frame, as QUIC ends a
// stream): the header's size field says where the frame ends. The zero
// value waits for a frame's first byte.
type FrameCounter struct {
	hdr  [HeaderSize]byte
	got  int
	want int // 0 until the header is complete
}

// Take accounts for the bytes of p that belong to the current frame and
// returns how many do (fewer than len(p) when p runs past its end). A size
// field below HeaderSize counts as a header-only frame.
func (f *FrameCounter) Take(p []byte) int {
	n := 0
	if f.got < HeaderSize {
		n = copy(f.hdr[f.got:], p)
		f.got += n
		if f.got < HeaderSize {
			return n
		}
		f.want = max(int(FrameSizeOf(f.hdr[:])), HeaderSize)
	}
	m := min(len(p)-n, f.want-f.got)
	f.got += m
	return n + m
}

// Done reports whether the whole frame has passed.
func (f *FrameCounter) Done() bool { return f.want > 0 && f.got == f.want }

// Got is how many bytes of the frame have passed.
func (f *FrameCounter) Got() int { return f.got }

// Reset waits for the next frame.
func (f *FrameCounter) Reset() { f.got, f.want = 0, 0 }
