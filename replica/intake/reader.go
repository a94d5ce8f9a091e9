package intake

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/iggo/iggo/wire"
)

// Conn is what Reader needs of a client stream: bytes and a read deadline.
// net.Conn, *tls.Conn and WebSocket net.Conn adapters all are one.
type Conn interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// Limits are the frame limits of every connection of a node.
type Limits struct {
	// MaxFrame is the largest frame (message_bus.max_message_size).
	MaxFrame uint32
	// UnauthFrameMax is the largest frame before a login.
	UnauthFrameMax uint32
	// HeaderTimeout bounds a frame's header from its first byte; BodyTimeout
	// bounds its body from the complete header. 0: no bound.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	// Unauth and InFlight are the node's budgets; nil charges nothing.
	Unauth   *Budget
	InFlight *Budget
	// UnauthReadBuffer and ReadBuffer size the buffered reader before and
	// after a login.
	UnauthReadBuffer int
	ReadBuffer       int
	// KeepBuffer is the largest frame buffer kept between frames; a larger
	// one (after a big frame) is dropped for the collector.
	KeepBuffer int
}

// TimeoutError is a deadline that passed while a frame was awaited or read.
type TimeoutError struct {
	// Phase is "idle", "header" or "body".
	Phase string
	// After is the deadline's duration.
	After time.Duration
	// Got is how many bytes of the frame had arrived.
	Got int
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("intake: no complete frame %s within %v (%d bytes arrived)", e.Phase, e.After, e.Got)
}

// LimitError is a frame refused by a size cap or a budget.
type LimitError struct {
	// Key is the configuration key of the limit; Limit is its value.
	Key   string
	Limit int64
	// Size is the frame's declared size.
	Size uint32
	// Answerable: the frame came on an authenticated connection, so
	// rather than closing, the caller may Discard the rest of it (the
	// stream stays framed) and answer Header.
	Answerable bool
	// Rest is how many bytes of the frame have not been read.
	Rest int64
	// Header is the frame's header (valid until the next Next).
	Header []byte
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("intake: frame of %d bytes refused: %s (%d) reached", e.Size, e.Key, e.Limit)
}

// Reader reads a connection's frames within the node's limits. It is not
// safe for concurrent use; one goroutine serves a connection.
type Reader struct {
	nc   Conn
	lim  *Limits
	br   *bufio.Reader
	big  bool // br has ReadBuffer bytes (after a login)
	buf  []byte
	auth bool

	// What the current frame holds of each budget.
	inflight int64
	unauth   int64
	refused  *Budget
}

// NewReader reads nc's frames. It starts with UnauthReadBuffer.
func NewReader(nc Conn, lim *Limits) *Reader {
	return &Reader{nc: nc, lim: lim, br: bufio.NewReaderSize(nc, max(lim.UnauthReadBuffer, 16)),
		buf: make([]byte, wire.HeaderSize, 4096)}
}

// SetAuthenticated switches the limits of later frames: an authenticated
// connection's frames are not charged to the unauthenticated budget and
// may use the whole frame size; after the next Release the reader moves to
// the larger read buffer as soon as nothing is buffered.
func (r *Reader) SetAuthenticated(v bool) { r.auth = v }

// Authenticated reports the current mode.
func (r *Reader) Authenticated() bool { return r.auth }

// Next reads the next frame. idle bounds the wait for its first byte (0:
// no bound). The frame aliases the reader's buffer and holds its budget
// until Release; call Release after the request is answered, before the
// next Next.
func (r *Reader) Next(idle time.Duration) ([]byte, error) {
	r.Release()
	if r.br.Buffered() == 0 {
		r.deadline(idle)
		if _, err := r.br.Peek(1); err != nil {
			return nil, r.fail(err, "idle", idle, 0)
		}
	}
	buf := r.buf[:wire.HeaderSize]
	if r.br.Buffered() < wire.HeaderSize {
		r.deadline(r.lim.HeaderTimeout)
	}
	if n, err := io.ReadFull(r.br, buf); err != nil {
		return nil, r.fail(err, "header", r.lim.HeaderTimeout, n)
	}
	size := wire.FrameSizeOf(buf)
	maxSize := r.lim.MaxFrame
	if maxSize == 0 {
		maxSize = wire.DefaultMaxFrameSize
	}
	if size < wire.HeaderSize || size > maxSize {
		return nil, &wire.FrameSizeError{Size: size, Max: maxSize}
	}
	if !r.auth && r.lim.UnauthFrameMax > 0 && size > r.lim.UnauthFrameMax {
		return nil, &LimitError{Key: KeyUnauthFrame, Limit: int64(r.lim.UnauthFrameMax), Size: size, Header: buf,
			Rest: int64(size) - wire.HeaderSize}
	}
	if r.br.Buffered() < int(size)-wire.HeaderSize {
		r.deadline(r.lim.BodyTimeout)
	}
	if !r.charge(wire.HeaderSize) {
		return nil, r.refusal(size, buf, wire.HeaderSize)
	}
	out, got, err := wire.ReadBody(r.br, buf, int(size), func(n int) error {
		if !r.charge(int64(n)) {
			return errBudget
		}
		return nil
	})
	if cap(out) > cap(r.buf) {
		r.buf = out[:wire.HeaderSize]
	}
	if errors.Is(err, errBudget) {
		return nil, r.refusal(size, out[:wire.HeaderSize], got)
	}
	if err != nil {
		return nil, r.fail(err, "body", r.lim.BodyTimeout, got)
	}
	return out, nil
}

var errBudget = errors.New("intake: budget exhausted")

// charge takes n bytes of the budgets that apply to the current frame.
func (r *Reader) charge(n int64) bool {
	if b := r.lim.InFlight; b != nil {
		if !b.Acquire(n) {
			r.refused = b
			return false
		}
		r.inflight += n
	}
	if b := r.lim.Unauth; b != nil && !r.auth {
		if !b.Acquire(n) {
			r.refused = b
			return false
		}
		r.unauth += n
	}
	return true
}

// refusal releases the frame's budget and names the budget that refused;
// got bytes of the frame have been read.
func (r *Reader) refusal(size uint32, header []byte, got int) *LimitError {
	b := r.refused
	r.Release()
	le := &LimitError{Key: KeyInFlightBytes, Size: size, Header: header, Answerable: r.auth, Rest: int64(size) - int64(got)}
	if b != nil {
		le.Key, le.Limit = b.Key(), b.Limit()
	}
	return le
}

// Discard reads and throws away the rest of the frame le refused (holding
// no budget), under the body deadline, so that its request can be answered.
func (r *Reader) Discard(le *LimitError) error {
	if n, err := io.CopyN(io.Discard, r.br, le.Rest); err != nil {
		return r.fail(err, "body", r.lim.BodyTimeout, int(int64(le.Size)-le.Rest+n))
	}
	le.Rest = 0
	return nil
}

// deadline bounds the reads that follow by d (0: no bound). A connection
// that can no longer take a deadline is closed, and the read says so.
func (r *Reader) deadline(d time.Duration) {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	_ = r.nc.SetReadDeadline(t)
}

// fail releases the frame's budget and turns a passed deadline into a
// *TimeoutError.
func (r *Reader) fail(err error, phase string, d time.Duration, got int) error {
	r.Release()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &TimeoutError{Phase: phase, After: d, Got: got}
	}
	if phase != "idle" && errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Release gives back what the last frame held of the budgets, drops an
// oversized buffer and, once authenticated with nothing buffered, moves to
// the larger read buffer. Next calls it; calling it twice is harmless.
func (r *Reader) Release() {
	if r.inflight > 0 {
		r.lim.InFlight.Release(r.inflight)
		r.inflight = 0
	}
	if r.unauth > 0 {
		r.lim.Unauth.Release(r.unauth)
		r.unauth = 0
	}
	r.refused = nil
	if keep := r.lim.KeepBuffer; keep > 0 && cap(r.buf) > keep {
		r.buf = make([]byte, wire.HeaderSize, 4096)
	}
	if r.auth && !r.big && r.br.Buffered() == 0 && r.lim.ReadBuffer > r.lim.UnauthReadBuffer {
		r.br = bufio.NewReaderSize(r.nc, r.lim.ReadBuffer)
		r.big = true
	}
}
