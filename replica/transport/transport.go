package transport

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Transport names: the admission, metric and log name of each listener.
const (
	TCP    = "tcp"
	TCPTLS = "tcp-tls"
	WS     = "ws"
	WSS    = "wss"
	QUIC   = "quic"
)

// DefaultHandshakeTimeout bounds a TLS or WebSocket handshake when the
// caller gives none.
const DefaultHandshakeTimeout = 10 * time.Second

// Listener accepts client connections for one transport. Accept returns
// without reading from the connection (see Handshaker).
type Listener interface {
	// Name is the transport's name (TCP, TCPTLS, WS, WSS, ...).
	Name() string
	Accept() (net.Conn, error)
	Addr() net.Addr
	Close() error
}

// Handshaker is a connection with a handshake to run before its first
// frame; the serving goroutine runs it within timeout.
type Handshaker interface {
	Handshake(timeout time.Duration) error
}

// VecWriter is a connection that writes several buffers as one reply (one
// WebSocket message, few TLS records). The serving path uses it for
// vectored replies when the conn has it, else net.Buffers.
type VecWriter interface {
	WriteVec(bufs net.Buffers) (int64, error)
}

// HandshakeError is a failed TLS or WebSocket handshake.
type HandshakeError struct {
	Transport string
	// Plaintext: the client's first bytes were not a TLS record.
	Plaintext bool
	Err       error
}

func (e *HandshakeError) Error() string {
	if e.Plaintext {
		return fmt.Sprintf("transport %s: client sent plaintext to a TLS listener", e.Transport)
	}
	return fmt.Sprintf("transport %s: handshake failed: %v", e.Transport, e.Err)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// ProtocolError is a WebSocket message the binary protocol does not allow.
type ProtocolError struct {
	Transport string
	Reason    string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("transport %s: %s", e.Transport, e.Reason)
}

// stream is a Listener over a stream socket listener; wrap turns each
// accepted socket into the transport's conn (nil: the socket itself).
type stream struct {
	name string
	ln   net.Listener
	wrap func(net.Conn) net.Conn
}

func (s *stream) Name() string   { return s.name }
func (s *stream) Addr() net.Addr { return s.ln.Addr() }
func (s *stream) Close() error   { return s.ln.Close() }

func (s *stream) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if s.wrap == nil {
		return c, nil
	}
	return s.wrap(c), nil
}

// NewTCP serves plaintext TCP on ln.
func NewTCP(ln net.Listener) Listener { return &stream{name: TCP, ln: ln} }

// NewTCPTLS serves TLS on ln with cfg (see ServerTLS).
func NewTCPTLS(ln net.Listener, cfg *TLSConfig) Listener {
	return &stream{name: TCPTLS, ln: ln, wrap: func(c net.Conn) net.Conn { return newTLSConn(TCPTLS, c, cfg.cfg) }}
}

// NewWS serves WebSocket on ln; with tlsCfg non-nil, WebSocket over TLS.
func NewWS(ln net.Listener, opts WSOptions, tlsCfg *TLSConfig) Listener {
	if tlsCfg == nil {
		return &stream{name: WS, ln: ln, wrap: func(c net.Conn) net.Conn { return newWSConn(WS, c, opts) }}
	}
	return &stream{name: WSS, ln: ln, wrap: func(c net.Conn) net.Conn {
		return newWSConn(WSS, newTLSConn(WSS, c, tlsCfg.cfg), opts)
	}}
}

// Handshake runs c's handshake when it has one (nil otherwise).
func Handshake(c net.Conn, timeout time.Duration) error {
	h, ok := c.(Handshaker)
	if !ok {
		return nil
	}
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	return h.Handshake(timeout)
}

// IsClientFault reports whether err is the client's doing (a handshake or
// protocol error), as opposed to an I/O error or a closed connection.
func IsClientFault(err error) bool {
	var he *HandshakeError
	var pe *ProtocolError
	return errors.As(err, &he) || errors.As(err, &pe)
}
