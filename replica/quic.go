package replica

import (
	"fmt"
	"net"
	"strconv"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/transport"
)

// The QUIC client listener ([quic]): shard 0's UDP endpoint. Its
// connections are served on shard 0 (a QUIC connection's state lives in its
// endpoint and cannot move), through serveClient like every transport, so
// partition work reaches the owning shards' inboxes as any request does.

// transportQUIC is the QUIC listener's name (serveClient keeps it on
// shard 0).
const transportQUIC = transport.QUIC

// quicListenAddr is where the QUIC endpoint binds: quic.address, or in
// cluster mode its host with the roster's ports.quic of this node.
func (n *Node) quicListenAddr() string { return n.listenAddr(n.cfg.QUIC.Address, n.member.Ports.QUIC) }

// bindQUIC builds the listener's TLS (a missing or unreadable certificate
// file refuses the start, naming its key) and binds the UDP socket.
// Nothing when quic.enabled is false.
func (n *Node) bindQUIC() error {
	q := n.cfg.QUIC
	if !q.Enabled {
		return nil
	}
	tlsConf, err := transport.QUICTLS(q.Certificate, n.certHosts()...)
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	if c := q.Certificate; c.SelfSigned && (c.CertFile != "" || c.KeyFile != "") {
		n.log.Warn("quic.certificate.self_signed is true: the certificate files are not read",
			zap.String("cert_file", c.CertFile), zap.String("key_file", c.KeyFile))
	}
	addr := n.quicListenAddr()
	pc, err := transport.BindUDP(addr)
	if err != nil {
		return fmt.Errorf("replica: binding quic (udp) %s: %w", addr, err)
	}
	b := n.cfg.MessageBus
	ln, err := transport.ListenQUIC(pc, tlsConf, transport.QUICConfig(q, b.HandshakeGrace.Duration), b.FrameHeaderTimeout.Duration)
	if err != nil {
		return fmt.Errorf("replica: quic listener: %w", err)
	}
	n.listeners = append(n.listeners, ln)
	n.quicBound = ln.Addr().String()
	n.log.Info("quic listening", zap.String("address", n.quicBound))
	return nil
}

// QUICAddr is the bound QUIC (UDP) address, empty without [quic].
func (n *Node) QUICAddr() string { return n.quicBound }

// quicPort is the bound QUIC port (0 without [quic]).
func (n *Node) quicPort() uint16 {
	_, p, err := net.SplitHostPort(n.quicBound)
	if err != nil {
		return 0
	}
	v, _ := strconv.Atoi(p)
	return uint16(v)
}
