package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/coder/websocket"

	"github.com/iggo/iggo/wire"
)

var contextBackground = context.Background()

// WSOptions are the WebSocket limits of [websocket].
type WSOptions struct {
	// MaxMessage is the largest inbound message (websocket.max_message_size,
	// at most message_bus.max_message_size).
	MaxMessage int64
	// ReadBuffer and WriteBuffer size the connection's buffered reader and
	// writer (websocket.read_buffer_size, write_buffer_size).
	ReadBuffer, WriteBuffer int
	// MaxFrame is the largest inbound WebSocket frame
	// (websocket.max_frame_size; 0: DefaultWSMaxFrame).
	MaxFrame int64
	// MaxWrite is the largest reply written (websocket.max_write_buffer_size;
	// 0: unlimited); a larger one fails the write and closes the connection.
	MaxWrite int64
}

// Defaults of WSOptions' unset sizes (Iggy's: those of its WebSocket
// library).
const (
	DefaultWSMaxMessage  = 64 << 20
	DefaultWSReadBuffer  = 128 << 10
	DefaultWSWriteBuffer = 128 << 10
	DefaultWSMaxFrame    = 16 << 20
)

// sizeEnd is where a frame header's size field ends.
const sizeEnd = 52

// wsConn serves the binary protocol over one WebSocket connection: Read
// yields the frames of consecutive binary messages, one frame a message;
// Write and WriteVec send one binary message each.
type wsConn struct {
	raw  net.Conn // the socket, or the TLS conn under WSS
	name string
	opts WSOptions
	ws   *websocket.Conn

	mr   io.Reader // the message being read
	got  int64     // its bytes so far
	want int64     // its frame's declared size; -1 until known
	hdr  [sizeEnd]byte
}

func newWSConn(name string, raw net.Conn, opts WSOptions) *wsConn {
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultWSMaxMessage
	}
	if opts.ReadBuffer <= 0 {
		opts.ReadBuffer = DefaultWSReadBuffer
	}
	if opts.WriteBuffer <= 0 {
		opts.WriteBuffer = DefaultWSWriteBuffer
	}
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = min(DefaultWSMaxFrame, opts.MaxMessage)
	}
	return &wsConn{raw: raw, name: name, opts: opts}
}

// Handshake runs the TLS handshake (WSS), then answers the upgrade request.
func (c *wsConn) Handshake(timeout time.Duration) error {
	if h, ok := c.raw.(Handshaker); ok {
		if err := h.Handshake(timeout); err != nil {
			return err
		}
	}
	_ = c.raw.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.raw.SetDeadline(time.Time{}) }()
	fr := &frameLimiter{r: c.raw, max: c.opts.MaxFrame, name: c.name}
	br := bufio.NewReaderSize(fr, c.opts.ReadBuffer)
	req, err := http.ReadRequest(br)
	if err != nil {
		return &HandshakeError{Transport: c.name, Err: fmt.Errorf("reading the upgrade request: %w", err)}
	}
	w := &hijackWriter{conn: &limitedConn{Conn: c.raw, r: fr}, brw: bufio.NewReadWriter(br, bufio.NewWriterSize(c.raw, c.opts.WriteBuffer)), h: http.Header{}}
	ws, err := websocket.Accept(w, req, &websocket.AcceptOptions{
		// Iggy's server checks no Origin: the binary protocol logs in.
		InsecureSkipVerify: true,
		CompressionMode:    websocket.CompressionDisabled,
	})
	if err != nil {
		_ = w.brw.Flush()
		return &HandshakeError{Transport: c.name, Err: err}
	}
	ws.SetReadLimit(c.opts.MaxMessage)
	fr.on = true // the upgrade request is read; WebSocket frames follow
	c.ws = ws
	return nil
}

func (c *wsConn) protocol(format string, args ...any) error {
	return &ProtocolError{Transport: c.name, Reason: fmt.Sprintf(format, args...)}
}

// readErr sorts a library read error: timeouts and socket errors pass,
// a close frame is the end of the stream, the rest is the client's fault.
func (c *wsConn) readErr(err error) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return os.ErrDeadlineExceeded
	}
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe
	}
	switch {
	case websocket.CloseStatus(err) != -1, errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return io.EOF
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	return c.protocol("%v", err)
}

func (c *wsConn) Read(p []byte) (int, error) {
	if c.ws == nil {
		return 0, c.protocol("read before the handshake")
	}
	for {
		if c.mr == nil {
			typ, r, err := c.ws.Reader(contextBackground)
			if err != nil {
				return 0, c.readErr(err)
			}
			if typ != websocket.MessageBinary {
				return 0, c.protocol("text message (the binary protocol needs binary messages)")
			}
			c.mr, c.got, c.want = r, 0, -1
		}
		n, err := c.mr.Read(p)
		if n > 0 {
			if perr := c.account(p[:n]); perr != nil {
				return 0, perr
			}
		}
		if errors.Is(err, io.EOF) {
			c.mr = nil
			if c.got != c.want {
				return 0, c.protocol("message of %d bytes ends inside a frame (a frame must come whole in one message)", c.got)
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return 0, c.readErr(err)
		}
		if n > 0 {
			return n, nil
		}
	}
}

// account checks the bytes b of the current message against its frame.
func (c *wsConn) account(b []byte) error {
	if c.got < sizeEnd {
		copy(c.hdr[c.got:], b)
	}
	c.got += int64(len(b))
	if c.want < 0 && c.got >= sizeEnd {
		c.want = int64(binary.LittleEndian.Uint32(c.hdr[sizeEnd-4:]))
		if c.want < wire.HeaderSize || c.want > c.opts.MaxMessage {
			return c.protocol("frame declares %d bytes (limits %d..%d)", c.want, wire.HeaderSize, c.opts.MaxMessage)
		}
	}
	if c.want >= 0 && c.got > c.want {
		return c.protocol("message holds more than one frame")
	}
	return nil
}

func (c *wsConn) Write(b []byte) (int, error) {
	if c.ws == nil {
		return 0, net.ErrClosed
	}
	if m := c.opts.MaxWrite; m > 0 && int64(len(b)) > m {
		return 0, fmt.Errorf("transport %s: reply of %d bytes exceeds websocket.max_write_buffer_size (%d)", c.name, len(b), m)
	}
	if err := c.ws.Write(contextBackground, websocket.MessageBinary, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *wsConn) WriteVec(bufs net.Buffers) (int64, error) {
	if c.ws == nil {
		return 0, net.ErrClosed
	}
	if m := c.opts.MaxWrite; m > 0 {
		var size int64
		for _, b := range bufs {
			size += int64(len(b))
		}
		if size > m {
			return 0, fmt.Errorf("transport %s: reply of %d bytes exceeds websocket.max_write_buffer_size (%d)", c.name, size, m)
		}
	}
	w, err := c.ws.Writer(contextBackground, websocket.MessageBinary)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, b := range bufs {
		n, err := w.Write(b)
		total += int64(n)
		if err != nil {
			_ = w.Close()
			return total, err
		}
	}
	return total, w.Close()
}

// Close drops the connection without the close handshake (which would
// wait for the peer).
func (c *wsConn) Close() error {
	if c.ws == nil {
		return c.raw.Close()
	}
	err := c.ws.CloseNow()
	_ = c.raw.Close()
	return err
}

func (c *wsConn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *wsConn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// limitedConn reads the socket through its frameLimiter (the library
// reads the hijacked conn directly once the upgrade is done).
type limitedConn struct {
	net.Conn
	r io.Reader
}

func (c *limitedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// hijackWriter is the http.ResponseWriter of the one upgrade request.
type hijackWriter struct {
	conn   net.Conn
	brw    *bufio.ReadWriter
	h      http.Header
	status int
}

func (w *hijackWriter) Header() http.Header { return w.h }

func (w *hijackWriter) WriteHeader(code int) {
	if w.status != 0 {
		return
	}
	w.status = code
	fmt.Fprintf(w.brw, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
	if code != http.StatusSwitchingProtocols {
		w.h.Set("Connection", "close")
	}
	_ = w.h.Write(w.brw)
	_, _ = w.brw.WriteString("\r\n")
}

func (w *hijackWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.brw.Write(b)
}

// Hijack hands over the socket with the 101 response flushed.
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if err := w.brw.Flush(); err != nil {
		return nil, nil, err
	}
	return w.conn, w.brw, nil
}

// frameLimiter watches the WebSocket frame headers in the client's byte
// stream (RFC 6455 section 5.2) and fails the read of a frame whose
// payload exceeds max. It is a pass-through until on.
type frameLimiter struct {
	r    io.Reader
	max  int64
	name string
	on   bool
	hdr  [14]byte
	have int   // header bytes collected
	need int   // header bytes needed (2 until the length byte is known)
	skip int64 // payload bytes of the current frame still to pass
}

func (f *frameLimiter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if !f.on {
		return n, err
	}
	for b := p[:n]; len(b) > 0; {
		if f.skip > 0 {
			k := int64(len(b))
			if k > f.skip {
				k = f.skip
			}
			f.skip -= k
			b = b[k:]
			continue
		}
		if f.need == 0 {
			f.need = 2
		}
		f.hdr[f.have] = b[0]
		f.have++
		b = b[1:]
		if f.have == 2 {
			f.need = 2 + map[byte]int{126: 2, 127: 8}[f.hdr[1]&0x7f]
			if f.hdr[1]&0x80 != 0 {
				f.need += 4
			}
		}
		if f.have < f.need {
			continue
		}
		size := int64(f.hdr[1] & 0x7f)
		switch size {
		case 126:
			size = int64(binary.BigEndian.Uint16(f.hdr[2:]))
		case 127:
			size = int64(binary.BigEndian.Uint64(f.hdr[2:]) & (1<<63 - 1))
		}
		if size > f.max {
			return 0, &ProtocolError{Transport: f.name, Reason: fmt.Sprintf("WebSocket frame of %d bytes exceeds websocket.max_frame_size (%d)", size, f.max)}
		}
		f.skip, f.have, f.need = size, 0, 0
	}
	return n, err
}
