package transport

// QUIC (quic.go): Iggy's QUIC usage seen as a byte stream. A client opens
// one bidirectional stream per command: the request frame on the stream's
// receive side (then FIN), the reply frame on its send side (then FIN);
// one command is in flight per connection (quic.max_concurrent_bidi_streams
// is the peer's stream credit, 1 by default). StreamConn presents such a
// connection as a net.Conn so that the one serving path reads frames from
// it and writes replies to it as it does for TCP: Read takes the next
// stream when the previous command is answered, Write closes the stream's
// send side when a whole reply frame (its size field says how long) is
// written. The only bytes looked at are the frame size fields; commands are
// the serving path's.
//
// Bad streams end the connection with a *ProtocolError (which the serving
// path logs, rate-limited): a stream that opens and carries no whole
// request header within the grace, a stream that ends inside a frame or carries more than
// one frame, a reply written with no request in flight. The connection is
// then closed with application error code QUICProtocolViolation; an
// ordinary close uses QUICShutdown (Iggy's codes).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/internal/udpgro"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

// Application error codes a QUIC connection is closed with (Iggy's).
const (
	QUICShutdown          quic.ApplicationErrorCode = 0x1003
	QUICProtocolViolation quic.ApplicationErrorCode = 0x1004
)

// StreamConn is one QUIC connection as a net.Conn (see the file comment).
// Read and Write are called by one goroutine (the serving path's lockstep
// loop); Close and the deadline setters may come from any.
type StreamConn struct {
	qc    *quic.Conn
	grace time.Duration

	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex
	readDL     time.Time
	writeDL    time.Time
	cur        *quic.Stream
	violation  bool
	closed     bool
	rx, tx     wire.FrameCounter
	finSeen    bool
	graceUntil time.Time // a fresh stream's request header is due by then
}

// NewStreamConn wraps an accepted (handshaken) connection. grace bounds the
// wait for a stream's request header once the stream is open (0: none).
func NewStreamConn(qc *quic.Conn, grace time.Duration) *StreamConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &StreamConn{qc: qc, grace: grace, ctx: ctx, cancel: cancel}
}

// timeoutError is a passed deadline, as net.Conn reports it.
var errTimeout = os.ErrDeadlineExceeded

// refuse records a violation and returns its error.
func (c *StreamConn) refuse(format string, args ...any) error {
	c.mu.Lock()
	c.violation = true
	c.mu.Unlock()
	return &ProtocolError{Transport: QUIC, Reason: fmt.Sprintf(format, args...)}
}

// next waits for the client's next stream under the read deadline.
func (c *StreamConn) next() error {
	c.mu.Lock()
	dl := c.readDL
	c.mu.Unlock()
	ctx := c.ctx
	if !dl.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	s, err := c.qc.AcceptStream(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errTimeout
		}
		if c.ctx.Err() != nil {
			return net.ErrClosed
		}
		var ae *quic.ApplicationError
		var ie *quic.IdleTimeoutError
		if errors.As(err, &ae) || errors.As(err, &ie) || errors.Is(err, quic.ErrServerClosed) {
			return io.EOF
		}
		return err
	}
	c.mu.Lock()
	c.cur, c.finSeen = s, false
	c.rx.Reset()
	c.tx.Reset()
	c.graceUntil = time.Time{}
	if c.grace > 0 {
		c.graceUntil = time.Now().Add(c.grace)
	}
	c.applyReadDeadline()
	c.mu.Unlock()
	return nil
}

// applyReadDeadline sets the current stream's deadline: the caller's, or
// the grace of a stream whose header is not in yet when that is earlier.
// Holds mu.
func (c *StreamConn) applyReadDeadline() {
	if c.cur == nil {
		return
	}
	dl := c.readDL
	if !c.graceUntil.IsZero() && (dl.IsZero() || c.graceUntil.Before(dl)) {
		dl = c.graceUntil
	}
	_ = c.cur.SetReadDeadline(dl)
}

// Read reads the request of the current stream, taking the next stream
// when the previous command has been answered.
func (c *StreamConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	s, rxDone := c.cur, c.rx.Done()
	c.mu.Unlock()
	if s != nil && rxDone {
		// The serving path answers before it reads again; more reading
		// means it is after a second frame on this stream.
		return 0, c.refuse("a second frame was asked for before the reply")
	}
	if s == nil {
		if err := c.next(); err != nil {
			return 0, err
		}
		c.mu.Lock()
		s = c.cur
		c.mu.Unlock()
	}
	n, err := s.Read(p)
	c.mu.Lock()
	graced := !c.graceUntil.IsZero()
	k := c.rx.Take(p[:n])
	if graced && c.rx.Got() >= wire.HeaderSize {
		c.graceUntil = time.Time{}
		c.applyReadDeadline()
	}
	done, started := c.rx.Done(), c.rx.Got() > 0
	if errors.Is(err, io.EOF) && done {
		c.finSeen = true
	}
	c.mu.Unlock()
	switch {
	case k < n:
		return k, c.refuse("the stream carries more than one request frame")
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF) && done:
		return n, nil
	case errors.Is(err, io.EOF) && !started:
		return n, c.refuse("the stream closed without a request")
	case errors.Is(err, io.EOF):
		return n, c.refuse("the stream ended inside its request frame")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		if graced {
			return n, c.refuse("the stream sent no whole request header within %s", c.grace)
		}
		return n, errTimeout
	}
	var se *quic.StreamError
	if errors.As(err, &se) {
		return n, c.refuse("the client reset the stream (code %d)", se.ErrorCode)
	}
	if c.ctx.Err() != nil {
		return n, net.ErrClosed
	}
	return n, err
}

// Write writes reply bytes to the current stream and closes its send side
// once the reply frame is complete.
func (c *StreamConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		c.mu.Lock()
		s, rxDone := c.cur, c.rx.Done()
		c.mu.Unlock()
		if s == nil || !rxDone {
			if c.ctx.Err() != nil {
				return written, net.ErrClosed
			}
			return written, c.refuse("a frame was written with no request in flight")
		}
		c.mu.Lock()
		k := c.tx.Take(p[written:])
		done := c.tx.Done()
		c.mu.Unlock()
		if _, err := s.Write(p[written : written+k]); err != nil {
			if c.ctx.Err() != nil {
				return written, net.ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return written, errTimeout
			}
			return written, err
		}
		written += k
		if done {
			c.finishStream(s)
		}
	}
	return written, nil
}

// finishStream ends the answered stream: FIN on the send side. When the
// request's FIN has not been read yet it is awaited off the serving path
// (drainFIN): stopping the receive side at once would race the client's
// own close of its send side, which then fails (quic-go, quinn).
func (c *StreamConn) finishStream(s *quic.Stream) {
	c.mu.Lock()
	fin := c.finSeen
	c.cur = nil
	c.mu.Unlock()
	_ = s.Close()
	if !fin {
		go drainFIN(s, c.grace)
	}
}

// drainFIN waits up to d (5 s when 0) for the FIN that ends the receive
// side of an answered stream, so that the stream completes and its credit
// returns to the peer; bytes instead of the FIN, or none in time, stop the
// receive side.
func drainFIN(s *quic.Stream, d time.Duration) {
	if d <= 0 {
		d = 5 * time.Second
	}
	_ = s.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	if n, err := s.Read(b[:]); n > 0 || !errors.Is(err, io.EOF) {
		s.CancelRead(0)
	}
}

// Close closes the connection: with QUICProtocolViolation after a refused
// stream, QUICShutdown otherwise.
func (c *StreamConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	code, msg := QUICShutdown, "shutdown"
	if c.violation {
		code, msg = QUICProtocolViolation, "protocol violation"
	}
	c.mu.Unlock()
	c.cancel()
	return c.qc.CloseWithError(code, msg)
}

func (c *StreamConn) LocalAddr() net.Addr  { return c.qc.LocalAddr() }
func (c *StreamConn) RemoteAddr() net.Addr { return c.qc.RemoteAddr() }

func (c *StreamConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *StreamConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL = t
	c.applyReadDeadline()
	return nil
}

func (c *StreamConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDL = t
	if c.cur != nil {
		_ = c.cur.SetWriteDeadline(t)
	}
	return nil
}

// QUICConfig is the quic-go configuration [quic] and the handshake grace
// give: Iggy's stream credit, windows, initial packet size, keep-alive and
// idle timeout; no unidirectional streams, no datagrams, no 0-RTT.
func QUICConfig(q config.QUICConfig, handshakeGrace time.Duration) *quic.Config {
	idle := q.MaxIdleTimeout.Duration
	if idle == 0 {
		// "0 s" disables the idle timeout (Iggy); quic-go reads 0 as its
		// default, so ask for the longest the transport parameter carries.
		idle = maxIdleTimeout
	}
	return &quic.Config{
		HandshakeIdleTimeout:           max(handshakeGrace/2, time.Millisecond), // quic-go aborts at twice this
		MaxIdleTimeout:                 idle,
		InitialStreamReceiveWindow:     q.StreamReceiveWindow.Bytes(),
		MaxStreamReceiveWindow:         q.StreamReceiveWindow.Bytes(),
		InitialConnectionReceiveWindow: q.ReceiveWindow.Bytes(),
		MaxConnectionReceiveWindow:     q.ReceiveWindow.Bytes(),
		MaxIncomingStreams:             int64(q.MaxConcurrentBidiStreams),
		MaxIncomingUniStreams:          -1,
		KeepAlivePeriod:                q.KeepAliveInterval.Duration,
		InitialPacketSize:              uint16(min(q.InitialMTU.Bytes(), 65535)),
	}
}

// maxIdleTimeout stands for "no idle timeout": a century.
const maxIdleTimeout = 100 * 365 * 24 * time.Hour

// QUICTLS is the listener's TLS configuration from [quic.certificate]: the
// PEM files, or with self_signed a certificate generated at start for hosts,
// localhost and the loopback addresses (the files are then not read, as in
// Iggy). QUIC
// runs TLS 1.3; no ALPN is advertised (Iggy's server and SDK set none).
// A missing or unreadable file is an error naming its key.
func QUICTLS(c config.QUICCertificateConfig, hosts ...string) (*tls.Config, error) {
	var cert tls.Certificate
	if c.SelfSigned {
		var err error
		if cert, err = SelfSigned(hosts...); err != nil {
			return nil, fmt.Errorf("quic.certificate.self_signed: %w", err)
		}
	} else {
		certPEM, err := os.ReadFile(c.CertFile)
		if err != nil {
			return nil, fmt.Errorf("quic.certificate.cert_file: %w", err)
		}
		keyPEM, err := os.ReadFile(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("quic.certificate.key_file: %w", err)
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, fmt.Errorf("quic.certificate.cert_file / key_file: %w", err)
		}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, nil
}

// QUICListener is a QUIC endpoint as a net.Listener: Accept returns each
// handshaken connection as a *StreamConn. It binds one UDP socket (no
// address reuse: a port held by another process is an error).
type QUICListener struct {
	pc    net.PacketConn
	ln    *quic.Listener
	grace time.Duration
}

// ListenQUIC listens on pc (a bound UDP socket, see BindUDP), which the
// listener owns from then on. grace is StreamConn's wait for a stream's
// first byte.
func ListenQUIC(pc net.PacketConn, tlsConf *tls.Config, qc *quic.Config, grace time.Duration) (*QUICListener, error) {
	ln, err := quic.Listen(pc, tlsConf, qc)
	if err != nil {
		_ = pc.Close()
		return nil, err
	}
	return &QUICListener{pc: pc, ln: ln, grace: grace}, nil
}

// BindUDP binds the UDP socket of a QUIC endpoint ("host:port", port 0 for
// any), without address reuse: a port another process holds is an error.
// On Linux the socket takes coalesced reads (UDP_GRO, internal/udpgro).
func BindUDP(addr string) (net.PacketConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, err
	}
	return udpgro.Wrap(c), nil
}

// Accept waits for the next connection whose handshake has completed.
func (l *QUICListener) Accept() (net.Conn, error) {
	qc, err := l.ln.Accept(context.Background())
	if err != nil {
		if errors.Is(err, quic.ErrServerClosed) {
			return nil, net.ErrClosed
		}
		return nil, err
	}
	return NewStreamConn(qc, l.grace), nil
}

// Close stops accepting and closes the socket (and every connection on it).
func (l *QUICListener) Close() error {
	err := l.ln.Close()
	if cerr := l.pc.Close(); err == nil {
		err = cerr
	}
	return err
}

// Addr is the bound UDP address.
func (l *QUICListener) Addr() net.Addr { return l.pc.LocalAddr() }

// Name is the transport's name (QUIC).
func (l *QUICListener) Name() string { return QUIC }
