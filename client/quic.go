package client

// QUIC (quic.go): Iggy's QUIC usage from the client's side. Each request
// frame goes on a bidirectional stream of its own, whose send side is
// closed after it; the reply frame comes back on that stream, which then
// ends. quicConn presents the connection as a net.Conn so that the
// lockstep exchange (roundTrip) is the same as over TCP: Write opens the
// next stream and closes its send side once a whole frame (by its size
// field) is written; Read reads the reply from it. TLS 1.3 without ALPN
// (Iggy's server and SDK advertise none).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/internal/udpgro"
	"github.com/iggo/iggo/wire"
)

func init() {
	dialers[TransportQUIC] = func(ctx context.Context, addr string, cfg *Config) (net.Conn, error) {
		return dialQUIC(ctx, addr, cfg.TLS, cfg.QUIC, cfg.DialTimeout)
	}
}

// QUICConfig holds the client's QUIC transport settings (Iggy's QUIC client
// options that quic-go has).
type QUICConfig struct {
	// InitialMTU is the initial packet size (at least 1200).
	InitialMTU uint16
	// ReceiveWindow bounds the connection's (and each stream's) receive
	// flow-control window.
	ReceiveWindow uint64
	// KeepAliveInterval sends PINGs this often (0: none).
	KeepAliveInterval time.Duration
	// MaxIdleTimeout closes a connection idle this long (0: quic-go's 30 s).
	MaxIdleTimeout time.Duration
}

// DefaultQUICConfig is Iggy's QUIC client defaults.
func DefaultQUICConfig() QUICConfig {
	return QUICConfig{InitialMTU: 1200, ReceiveWindow: 100_000, KeepAliveInterval: 5 * time.Second,
		MaxIdleTimeout: 10 * time.Second}
}

// quicConn is one QUIC connection as a net.Conn (see the file comment).
type quicConn struct {
	qc  *quic.Conn
	tr  *quic.Transport // the connection's own endpoint, closed with it
	udp *net.UDPConn    // its socket

	mu      sync.Mutex
	readDL  time.Time
	writeDL time.Time
	cur     *quic.Stream
	tx, rx  wire.FrameCounter
	sent    bool // the current stream's request is complete
}

// dialQUIC connects to addr. tlsConf nil does not verify the server's
// certificate (Iggy's QUIC client default, validate_certificate = false).
func dialQUIC(ctx context.Context, addr string, tlsConf *tls.Config, qcfg QUICConfig, timeout time.Duration) (*quicConn, error) {
	var conf *tls.Config
	if tlsConf == nil {
		conf = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // Iggy's default for QUIC
	} else {
		conf = tlsConf.Clone()
	}
	if conf.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		conf.ServerName = host
	}
	conf.MinVersion = tls.VersionTLS13
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	q := &quic.Config{
		HandshakeIdleTimeout:           timeout,
		MaxIdleTimeout:                 qcfg.MaxIdleTimeout,
		KeepAlivePeriod:                qcfg.KeepAliveInterval,
		InitialPacketSize:              qcfg.InitialMTU,
		InitialStreamReceiveWindow:     qcfg.ReceiveWindow,
		MaxStreamReceiveWindow:         qcfg.ReceiveWindow,
		InitialConnectionReceiveWindow: qcfg.ReceiveWindow,
		MaxConnectionReceiveWindow:     qcfg.ReceiveWindow,
		MaxIncomingStreams:             -1,
		MaxIncomingUniStreams:          -1,
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	// A socket of its own per connection, as quic.DialAddr makes, with
	// coalesced reads (internal/udpgro): large replies come in GSO runs.
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4zero})
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: udpgro.Wrap(uc)}
	qc, err := tr.Dial(ctx, ua, conf, q)
	if err != nil {
		_ = tr.Close()
		_ = uc.Close()
		return nil, err
	}
	return &quicConn{qc: qc, tr: tr, udp: uc}, nil
}

// The initial packet sizes quic-go sends as asked: QUIC's minimum and the
// largest its packet buffers hold.
const (
	quicMinMTU = 1200
	quicMaxMTU = 1452
)

var errQUICProtocol = errors.New("quic: reply stream broke the one-frame rule")

// Write sends request bytes, opening the request's stream first and
// closing its send side when the frame is complete.
func (c *quicConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		c.mu.Lock()
		s := c.cur
		if s != nil && c.sent {
			// A new request while the last reply is unread: give up the
			// old stream.
			s.CancelRead(0)
			s, c.cur = nil, nil
		}
		dl := c.writeDL
		c.mu.Unlock()
		if s == nil {
			ctx := context.Background()
			if !dl.IsZero() {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl)
				defer cancel()
			}
			ns, err := c.qc.OpenStreamSync(ctx)
			if err != nil {
				return written, quicErr(err)
			}
			c.mu.Lock()
			c.cur, s, c.sent = ns, ns, false
			c.tx, c.rx = wire.FrameCounter{}, wire.FrameCounter{}
			_ = ns.SetReadDeadline(c.readDL)
			_ = ns.SetWriteDeadline(c.writeDL)
			c.mu.Unlock()
		}
		c.mu.Lock()
		k := c.tx.Take(p[written:])
		done := c.tx.Done()
		c.mu.Unlock()
		if _, err := s.Write(p[written : written+k]); err != nil {
			return written, quicErr(err)
		}
		written += k
		if done {
			c.mu.Lock()
			c.sent = true
			c.mu.Unlock()
			// A server that has the whole frame may stop the receive side
			// before this close (Iggy's drops it after one frame); the
			// reply is still coming, and a broken stream shows in Read.
			_ = s.Close()
		}
	}
	return written, nil
}

// Read reads the reply of the request in flight.
func (c *quicConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	s, sent := c.cur, c.sent
	c.mu.Unlock()
	if s == nil || !sent {
		return 0, fmt.Errorf("quic: read with no request in flight")
	}
	n, err := s.Read(p)
	c.mu.Lock()
	k := c.rx.Take(p[:n])
	done := c.rx.Done()
	if done {
		c.cur = nil
	}
	c.mu.Unlock()
	switch {
	case k < n:
		return k, errQUICProtocol
	case done:
		if !errors.Is(err, io.EOF) {
			go drainFIN(s)
		}
		return n, nil
	case errors.Is(err, io.EOF):
		return n, io.ErrUnexpectedEOF
	case err != nil:
		return n, quicErr(err)
	}
	return n, nil
}

// drainFIN waits a little for the FIN that ends an answered reply stream,
// so that the stream completes; bytes instead, or none in time, stop it.
func drainFIN(s *quic.Stream) {
	_ = s.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	if n, err := s.Read(b[:]); n > 0 || !errors.Is(err, io.EOF) {
		s.CancelRead(0)
	}
}

// quicErr turns quic-go's deadline errors into os.ErrDeadlineExceeded, as
// net.Conn reports them.
func quicErr(err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%w: %v", os.ErrDeadlineExceeded, err)
	}
	return err
}

// Close closes the connection, then its endpoint and socket.
func (c *quicConn) Close() error {
	err := c.qc.CloseWithError(0, "")
	_ = c.tr.Close()
	_ = c.udp.Close()
	return err
}

func (c *quicConn) LocalAddr() net.Addr  { return c.qc.LocalAddr() }
func (c *quicConn) RemoteAddr() net.Addr { return c.qc.RemoteAddr() }

func (c *quicConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *quicConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL = t
	if c.cur != nil {
		_ = c.cur.SetReadDeadline(t)
	}
	return nil
}

func (c *quicConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDL = t
	if c.cur != nil {
		_ = c.cur.SetWriteDeadline(t)
	}
	return nil
}

// closedByPeer reports whether the connection has ended (idle check).
func (c *quicConn) closedByPeer() bool {
	select {
	case <-c.qc.Context().Done():
		return true
	default:
		return false
	}
}

// connClosed reports whether the server has closed nc while it was idle
// (Config.IdleCheck).
func connClosed(nc net.Conn) bool {
	if qc, ok := nc.(*quicConn); ok {
		return qc.closedByPeer()
	}
	return peerClosed(nc)
}

// quicOption applies one of Iggy's iggy+quic:// options: initial_mtu,
// receive_window, keep_alive_interval and max_idle_timeout (ms),
// validate_certificate (true verifies against the system roots, server
// name localhost as Iggy's client), reconnection_max_retries; accepted
// without effect (quic-go has no such setting, or this client needs none):
// response_buffer_size, max_concurrent_bidi_streams (a lockstep client
// opens one stream at a time), datagram_send_buffer_size, send_window,
// reconnection_reestablish_after. false: not a QUIC option.
func quicOption(k, v string, cfg *Config) (bool, error) {
	num := func(bits int) (uint64, error) { return strconv.ParseUint(v, 10, bits) }
	var err error
	switch k {
	case "initial_mtu":
		var n uint64
		n, err = num(16)
		cfg.QUIC.InitialMTU = uint16(n)
	case "receive_window":
		cfg.QUIC.ReceiveWindow, err = num(62)
	case "keep_alive_interval", "max_idle_timeout":
		var n uint64
		n, err = num(32)
		d := time.Duration(n) * time.Millisecond
		if k == "keep_alive_interval" {
			cfg.QUIC.KeepAliveInterval = d
		} else {
			cfg.QUIC.MaxIdleTimeout = d
		}
	case "validate_certificate":
		var b bool
		if b, err = strconv.ParseBool(v); err == nil {
			cfg.TLS = nil
			if b {
				cfg.TLS = &tls.Config{ServerName: "localhost", MinVersion: tls.VersionTLS13}
			}
		}
	case "reconnection_max_retries":
		if v == "unlimited" {
			cfg.Reconnect.MaxAttempts = 1 << 30
			break
		}
		var n uint64
		n, err = num(31)
		cfg.Reconnect.MaxAttempts = int(n)
		cfg.Reconnect.Enabled = n > 0
	case "response_buffer_size", "max_concurrent_bidi_streams", "datagram_send_buffer_size", "send_window", "reconnection_reestablish_after":
	default:
		return false, nil
	}
	return true, err
}
