package replica

import (
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/intake"
	"github.com/iggo/iggo/replica/transport"
	"github.com/iggo/iggo/wire"
)

// Glue between the node and replica/transport: which client listeners the
// configuration asks for, their accept loops on behalf of shard 0, and the
// serving path's reaction to a failed handshake.

// bindClientListeners binds tcp (plaintext or TLS) and, when enabled, the
// WebSocket listener (plaintext or TLS). Certificates load here, so a
// missing or unreadable file refuses the start before storage is touched.
func (n *Node) bindClientListeners() error {
	var tcpTLS, wsTLS *transport.TLSConfig
	var err error
	if t := n.cfg.TCP.TLS; t.Enabled {
		if tcpTLS, err = transport.ServerTLS(n.tlsSpec("tcp.tls", t), n.certHosts()...); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	ws := n.cfg.WebSocket
	if ws.Enabled && ws.TLS.Enabled {
		if wsTLS, err = transport.ServerTLS(n.tlsSpec("websocket.tls", ws.TLS), n.certHosts()...); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
	}
	ln := n.opts.ClientListener
	if ln == nil {
		addr := n.clientListenAddr()
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("replica: binding tcp %s: %w", addr, err)
		}
	}
	n.ln = ln
	n.bound = ln.Addr().String()
	if tcpTLS != nil {
		n.listeners = append(n.listeners, transport.NewTCPTLS(ln, tcpTLS))
		n.logTLS("tcp.tls", tcpTLS)
	} else {
		n.listeners = append(n.listeners, transport.NewTCP(ln))
	}
	if ws.Enabled {
		addr := n.wsListenAddr()
		wl, err := net.Listen("tcp", addr)
		if err != nil {
			n.closeClientListeners()
			return fmt.Errorf("replica: binding websocket %s: %w", addr, err)
		}
		n.wsBound = wl.Addr().String()
		if wsTLS != nil {
			n.logTLS("websocket.tls", wsTLS)
		}
		n.listeners = append(n.listeners, transport.NewWS(wl, n.wsOptions(), wsTLS))
	}
	return nil
}

func (n *Node) logTLS(key string, t *transport.TLSConfig) {
	if t.Generated {
		n.log.Warn("serving TLS with a generated self-signed certificate (clients must skip verification or trust it)", zap.String("key", key))
		return
	}
	n.log.Info("serving TLS with the configured certificate", zap.String("key", key))
}

func (n *Node) tlsSpec(key string, t config.TLSConfig) transport.TLSSpec {
	return transport.TLSSpec{Key: key, SelfSigned: t.SelfSigned, CertFile: t.CertFile, KeyFile: t.KeyFile}
}

// certHosts are the names a generated certificate carries besides
// localhost: the advertised address and the bind hosts.
func (n *Node) certHosts() []string {
	hosts := []string{n.cfg.Node.AdvertisedAddress}
	for _, a := range []string{n.cfg.TCP.Address, n.cfg.WebSocket.Address} {
		if h, _, err := net.SplitHostPort(a); err == nil {
			hosts = append(hosts, h)
		}
	}
	if n.clustered() {
		hosts = append(hosts, n.member.IP)
	}
	return hosts
}

func (n *Node) wsOptions() transport.WSOptions {
	ws := n.cfg.WebSocket
	o := transport.WSOptions{MaxMessage: int64(min(uint64(n.maxFrame), uint64(transport.DefaultWSMaxMessage)))}
	if ws.MaxMessageSize != nil {
		o.MaxMessage = int64(ws.MaxMessageSize.Bytes())
	}
	if ws.ReadBufferSize != nil {
		o.ReadBuffer = int(ws.ReadBufferSize.Bytes())
	}
	if ws.WriteBufferSize != nil {
		o.WriteBuffer = int(ws.WriteBufferSize.Bytes())
	}
	if ws.MaxFrameSize != nil {
		o.MaxFrame = int64(ws.MaxFrameSize.Bytes())
	}
	if ws.MaxWriteBufferSize != nil {
		o.MaxWrite = int64(ws.MaxWriteBufferSize.Bytes())
	}
	return o
}

// wsListenAddr is websocket.address, its port replaced by the roster's in
// cluster mode.
func (n *Node) wsListenAddr() string {
	return n.listenAddr(n.cfg.WebSocket.Address, n.member.Ports.WebSocket)
}

func (n *Node) closeClientListeners() {
	for _, l := range n.listeners {
		_ = l.Close()
	}
	if len(n.listeners) == 0 && n.ln != nil {
		_ = n.ln.Close()
	}
}

// WSAddr is the bound WebSocket address ("" when websocket.enabled is
// false).
func (n *Node) WSAddr() string { return n.wsBound }

// acceptLoop runs l's accepts on behalf of shard 0: each accepted
// connection goes to serveClient before a byte is read. Failed accepts (out
// of descriptors, above all) back off instead of spinning.
func (n *Node) acceptLoop(l transport.Listener) {
	defer n.bg.Done()
	bo := intake.AcceptBackoff{Min: acceptBackoffLo, Max: acceptBackoffHi}
	for {
		c, err := l.Accept()
		if err != nil {
			if n.stopping.Load() {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if !n.acceptFailed(&bo, l.Name(), err) {
				return
			}
			continue
		}
		bo.Succeeded()
		n.serveClient(l.Name(), c)
	}
}

// wireTransport is what GET_CLIENT(S) reports for a transport name.
func wireTransport(name string) uint8 {
	switch name {
	case transport.WS, transport.WSS:
		return wire.TransportWebSocket
	case transport.QUIC:
		return wire.TransportQUIC
	}
	return wire.TransportTCP
}

// handshakeTimeout bounds a TLS or WebSocket handshake:
// message_bus.frame_header_timeout (the bound of a frame header once it
// has started), or transport.DefaultHandshakeTimeout when that is 0.
func (n *Node) handshakeTimeout() time.Duration {
	if d := n.cfg.MessageBus.FrameHeaderTimeout.Duration; d > 0 {
		return d
	}
	return transport.DefaultHandshakeTimeout
}

// handshake runs the connection's transport handshake in its serving
// goroutine; false: it failed (logged once, rate-limited, per kind) and
// the connection is to be closed.
func (c *conn) handshake() bool {
	err := transport.Handshake(c.nc, c.n.handshakeTimeout())
	if err == nil {
		return true
	}
	var he *transport.HandshakeError
	switch {
	case errors.As(err, &he) && he.Plaintext:
		c.n.clientLog.Warn(evHandshakeFailed+":plaintext", "closing connection: plaintext on a TLS listener", c.fields(zap.Error(err))...)
	default:
		c.n.clientLog.Warn(evHandshakeFailed, "closing connection: handshake failed", c.fields(zap.Error(err))...)
	}
	return false
}
