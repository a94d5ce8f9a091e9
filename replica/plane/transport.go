package plane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/vsr"
)

// Errors returned by Send and SendFrame. Each refusal is counted on the peer.
var (
	ErrPeerDown      = errors.New("plane: no link to the peer")
	ErrQueueFull     = errors.New("plane: peer queue full")
	ErrUnknownPeer   = errors.New("plane: not a peer")
	ErrFrameTooLarge = errors.New("plane: frame above max_message_size")
	ErrBadFrame      = errors.New("plane: frame size field does not match its length")
	ErrClosed        = errors.New("plane: transport closed")
)

// Transport is one node's replica plane: a listener, a dialer per
// higher-id peer, one link per peer, and per-peer bounded send queues.
// All methods are safe for concurrent use.
type Transport struct {
	cfg       Config
	log       *zap.Logger
	cluster   vsr.Checksum
	me        local
	self      Member
	tlsServer *tls.Config
	tlsClient *tls.Config
	peers     []*peer // by replica id; nil at Self

	limit      logLimiter
	refusals   [ReasonCount]atomic.Uint64
	accepted   atomic.Uint64
	gate       *gate       // admission of connections that have not sent a hello yet
	bindFailed atomic.Bool // the roster ip is not local: dial unbound

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex // guards ln, started, closed and link attachment against Close
	ln      net.Listener
	started bool
	closed  bool
}

type peer struct {
	Member
	queue chan outFrame
	link  atomic.Pointer[link]
	since atomic.Int64 // unix nanos of the last connect or disconnect
	st    peerCounters

	hsMu sync.Mutex
	hs   net.Conn // the inbound handshake past its hello that claims this peer
}

// handshaking records c as the one inbound handshake past its hello that
// claims p, closing an older one (newest wins, as for links: a peer that
// redials has given up on its previous attempt). done reports whether c
// was superseded by a newer one in the meantime.
func (p *peer) handshaking(c net.Conn) (done func() (superseded bool)) {
	p.hsMu.Lock()
	old := p.hs
	p.hs = c
	p.hsMu.Unlock()
	if old != nil {
		_ = old.Close()
	}
	return func() bool {
		p.hsMu.Lock()
		defer p.hsMu.Unlock()
		if p.hs == c {
			p.hs = nil
			return false
		}
		return true
	}
}

// outFrame is one queued frame: a header slice and an optional separate
// body, written as two iovecs so a vsr.Message is never copied.
type outFrame struct {
	head []byte
	body []byte
}

// New checks cfg, derives keys and TLS material and returns a transport
// that does nothing until Start.
func New(cfg Config) (*Transport, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	t := &Transport{
		cfg:     cfg,
		log:     cfg.Logger.Named("plane").With(zap.Uint8("replica", cfg.Self)),
		cluster: ClusterID(cfg.ClusterName),
		peers:   make([]*peer, len(cfg.Roster)),
	}
	// Only lower ids dial this node; their roster ips are admitted ahead
	// of others. Without the source-address check an ip proves nothing,
	// so nobody is preferred.
	var dialers []netip.Addr
	if !cfg.AnySourceAddress {
		for _, m := range cfg.Roster {
			if m.ID < cfg.Self {
				dialers = append(dialers, m.Addr.Addr())
			}
		}
	}
	t.gate = newGate(dialers, cfg.HandshakesPerAddress, cfg.HandshakesMax)
	t.limit.every = cfg.LogInterval
	t.me = local{self: cfg.Self, roster: uint8(len(cfg.Roster)), cluster: t.cluster, dataKey: cfg.DataKeyID}
	if cfg.Auth {
		t.me.flags |= FlagAuth
		t.me.keys = append(t.me.keys, deriveKey(cfg.Secret, t.cluster))
		if len(cfg.PreviousSecret) > 0 {
			t.me.keys = append(t.me.keys, deriveKey(cfg.PreviousSecret, t.cluster))
		}
	} else {
		t.me.keys = []linkKey{deriveKey([]byte(unauthenticatedSecret), t.cluster)}
	}
	if cfg.TLS.Mode != TLSOff {
		t.me.flags |= FlagTLS
	}
	for _, m := range cfg.Roster {
		if m.ID == cfg.Self {
			t.self = m
			continue
		}
		p := &peer{Member: m, queue: make(chan outFrame, cfg.PeerQueueCapacity)}
		p.since.Store(time.Now().UnixNano())
		t.peers[m.ID] = p
	}
	var err error
	if t.tlsServer, t.tlsClient, err = tlsConfigs(cfg.TLS, t.self); err != nil {
		return nil, err
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

// ClusterID is the cluster id this transport stamps and expects.
func (t *Transport) ClusterID() vsr.Checksum { return t.cluster }

// Bind binds (or adopts) the listener without accepting on it: a node
// binds its ports before it recovers storage, so a start that cannot bind
// fails having touched nothing. Peers that connect meanwhile wait in the
// listen backlog. Start binds when Bind was not called.
func (t *Transport) Bind() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bindLocked()
}

func (t *Transport) bindLocked() error {
	if t.closed {
		return ErrClosed
	}
	if t.ln != nil {
		return nil
	}
	ln := t.cfg.Listener
	if ln == nil {
		addr := t.cfg.ListenAddr
		if addr == "" {
			addr = t.self.Addr.String()
		}
		lc := net.ListenConfig{KeepAliveConfig: t.cfg.KeepAlive}
		var err error
		if ln, err = lc.Listen(t.ctx, "tcp", addr); err != nil {
			return fmt.Errorf("plane: listening on %s: %w", addr, err)
		}
	}
	t.ln = ln
	return nil
}

// Start binds (or adopts) the listener unless Bind did, starts accepting,
// and starts dialing every peer with a higher replica id. Lower ids dial
// higher ones, so each pair has exactly one link and no tie-break is
// needed.
func (t *Transport) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	if t.started {
		return errors.New("plane: already started")
	}
	if err := t.bindLocked(); err != nil {
		return err
	}
	ln := t.ln
	t.started = true
	t.wg.Add(1)
	go t.acceptLoop(ln)
	for _, p := range t.peers {
		if p != nil && p.ID > t.cfg.Self {
			t.wg.Add(1)
			go t.dialLoop(p)
		}
	}
	t.log.Info("replica plane started", zap.Stringer("listen", ln.Addr()), zap.Int("roster", len(t.cfg.Roster)),
		zap.Bool("auth", t.cfg.Auth), zap.Stringer("tls_mode", t.cfg.TLS.Mode))
	return nil
}

// Addr is the listener's address (nil before Start).
func (t *Transport) Addr() net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// Connected reports whether a link to replica id is up.
func (t *Transport) Connected(id uint8) bool {
	if int(id) >= len(t.peers) || t.peers[id] == nil {
		return false
	}
	return t.peers[id].link.Load() != nil
}

// Send queues m for replica to. It never blocks: with no link to the peer
// it returns ErrPeerDown, with the peer's queue full ErrQueueFull (both
// counted). The header and body are written as they are, without a copy, so
// neither may change after the call (vsr never modifies a message it
// emitted). A queued frame is not guaranteed to arrive: VSR retransmits.
func (t *Transport) Send(to uint8, m vsr.Message) error {
	if m.Header == nil {
		return fmt.Errorf("%w: no header", ErrBadFrame)
	}
	size := vsr.HeaderSize + len(m.Body)
	if int(m.Header.Size()) != size {
		return fmt.Errorf("%w: size field %d, frame %d bytes", ErrBadFrame, m.Header.Size(), size)
	}
	return t.enqueue(to, outFrame{head: m.Header[:], body: m.Body}, size)
}

// SendFrame queues an encoded frame (header ‖ body), with Send's contract.
func (t *Transport) SendFrame(to uint8, frame []byte) error {
	if len(frame) < vsr.HeaderSize {
		return fmt.Errorf("%w: %d bytes", ErrBadFrame, len(frame))
	}
	if n := (*vsr.Header)(frame[:vsr.HeaderSize]).Size(); int(n) != len(frame) {
		return fmt.Errorf("%w: size field %d, frame %d bytes", ErrBadFrame, n, len(frame))
	}
	return t.enqueue(to, outFrame{head: frame}, len(frame))
}

func (t *Transport) enqueue(to uint8, f outFrame, size int) error {
	if int(to) >= len(t.peers) || t.peers[to] == nil {
		return fmt.Errorf("%w: replica %d", ErrUnknownPeer, to)
	}
	if size > int(t.cfg.MaxMessageSize) {
		return fmt.Errorf("%w: %d > %d", ErrFrameTooLarge, size, t.cfg.MaxMessageSize)
	}
	p := t.peers[to]
	// The two refusals an overloaded or partitioned node hits constantly
	// return bare sentinels: refusing must not allocate.
	if p.link.Load() == nil {
		p.st.refusedDown.Add(1)
		if t.ctx.Err() != nil {
			return ErrClosed
		}
		return ErrPeerDown
	}
	select {
	case p.queue <- f:
		return nil
	default:
		p.st.refusedFull.Add(1)
		return ErrQueueFull
	}
}

// Stats returns a snapshot of every counter.
func (t *Transport) Stats() Stats {
	s := Stats{Self: t.cfg.Self, Accepted: t.accepted.Load()}
	for i := range s.Refusals {
		s.Refusals[i] = t.refusals[i].Load()
	}
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		s.Peers = append(s.Peers, PeerStats{
			ReplicaID: p.ID, Name: p.Name, Addr: p.Addr.String(),
			Connected: p.link.Load() != nil, Since: time.Unix(0, p.since.Load()),
			Connects: p.st.connects.Load(), Disconnects: p.st.disconnects.Load(), DialFailures: p.st.dialFailures.Load(),
			FramesOut: p.st.framesOut.Load(), BytesOut: p.st.bytesOut.Load(), WriteBatches: p.st.batches.Load(),
			FramesIn: p.st.framesIn.Load(), BytesIn: p.st.bytesIn.Load(),
			RefusedFull: p.st.refusedFull.Load(), RefusedDown: p.st.refusedDown.Load(),
			DroppedIn: p.st.droppedIn.Load(), DroppedQueued: p.st.droppedQueued.Load(), Violations: p.st.violations.Load(),
		})
	}
	return s
}

// Close stops accepting and dialing, closes every link and waits up to
// CloseTimeout for the transport's goroutines. Queued frames are
// discarded. It is idempotent.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.cancel()
	ln := t.ln
	if ln == nil {
		ln = t.cfg.Listener
	}
	t.mu.Unlock()
	var err error
	if ln != nil {
		if cerr := ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}
	for _, p := range t.peers {
		if p == nil {
			continue
		}
		if l := p.link.Load(); l != nil {
			l.close(ErrClosed)
		}
	}
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(t.cfg.CloseTimeout):
		return fmt.Errorf("plane: goroutines still running after %s", t.cfg.CloseTimeout)
	}
	t.log.Info("replica plane closed")
	return err
}

// refused counts and logs a refusal.
func (t *Transport) refused(err error, remote net.Addr, fields ...zap.Field) Reason {
	r := classify(err)
	fields = append(fields, zap.Error(err))
	if remote != nil {
		fields = append(fields, zap.Stringer("remote", remote))
	}
	// Logged before counted: whoever sees the count can find the line.
	t.logRefusal(r, "replica plane refused a connection", fields...)
	t.refusals[r].Add(1)
	return r
}

func classify(err error) Reason {
	var r *refusal
	if errors.As(err, &r) {
		return r.reason
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ReasonTimeout
	}
	return ReasonIO
}

func (t *Transport) tuneTCP(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	// Best effort: a failure leaves Go's defaults (NODELAY is already on).
	_ = tc.SetNoDelay(true)
	_ = tc.SetKeepAliveConfig(t.cfg.KeepAlive)
}

func (t *Transport) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	var delay time.Duration
	for {
		raw, err := ln.Accept()
		if err != nil {
			if t.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or similar: back off instead of spinning.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			t.log.Warn("replica plane accept failed", zap.Error(err), zap.Duration("retry_in", delay))
			if !t.sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		ps, why := t.gate.enter(remoteIP(raw), raw)
		switch why {
		case gateAddressFull:
			t.refused(refuse(ReasonAddressQuota, "message_bus.replica_handshakes_per_address (%d) reached: that many connections from %s wait for their hello",
				t.cfg.HandshakesPerAddress, remoteIP(raw)), raw.RemoteAddr())
			raw.Close()
			continue
		case gatePoolFull:
			t.refused(refuse(ReasonBusy, "message_bus.replica_handshakes_max (%d) reached: that many connections from outside the roster wait for their hello",
				t.cfg.HandshakesMax), raw.RemoteAddr())
			raw.Close()
			continue
		}
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			t.accept(raw, ps)
		}()
	}
}

// accept runs the acceptor side of the handshake on a new connection
// admitted by the gate and, if it succeeds, installs the link (replacing
// any older link from the same peer: a restarted peer's old connection may
// still look alive here). The connection must deliver a valid hello within
// HelloGrace, and finish within HandshakeGrace.
func (t *Transport) accept(raw net.Conn, ps *pass) {
	defer ps.release()
	t.tuneTCP(raw)
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeGrace)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	deadline, _ := ctx.Deadline()
	helloBy := time.Now().Add(t.cfg.HelloGrace)
	if deadline.Before(helloBy) {
		helloBy = deadline
	}
	_ = raw.SetDeadline(helloBy)
	p, conn, err := t.acceptHandshake(ctx, raw, ps, deadline)
	if !stop() || err != nil {
		if ps.release() {
			err = refuse(ReasonAddressQuota, "message_bus.replica_handshakes_per_address (%d) reached for roster address %s: the oldest connection waiting for its hello was closed for a newer one",
				t.cfg.HandshakesPerAddress, ps.addr)
		}
		err = t.handshakeErr(ctx, err)
		raw.Close()
		if t.ctx.Err() == nil {
			t.refused(err, raw.RemoteAddr())
		}
		return
	}
	_ = raw.SetDeadline(time.Time{})
	t.accepted.Add(1)
	t.startLink(p, conn, raw)
}

// noHello turns a timeout before the hello arrived into the refusal that
// names the hello deadline.
func (t *Transport) noHello(err error) error {
	if classify(err) == ReasonTimeout {
		return refuse(ReasonTimeout, "no hello within message_bus.replica_hello_grace (%s): %v", t.cfg.HelloGrace, err)
	}
	return err
}

func (t *Transport) acceptHandshake(ctx context.Context, raw net.Conn, ps *pass, deadline time.Time) (*peer, net.Conn, error) {
	conn := raw
	if t.tlsServer != nil {
		tc := tls.Server(raw, t.tlsServer)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, nil, t.noHello(tlsErr(err))
		}
		conn = tc
	}
	exp, err := exporter(conn)
	if err != nil {
		return nil, nil, err
	}
	var helloRaw, finishRaw [HandshakeSize]byte
	if _, err := io.ReadFull(conn, helloRaw[:]); err != nil {
		return nil, nil, t.noHello(fmt.Errorf("reading hello: %w", err))
	}
	hello, key, challenge, err := t.me.acceptHello(helloRaw[:], exp)
	if err != nil {
		return nil, nil, err
	}
	p := t.peers[hello.Sender]
	if !t.cfg.AnySourceAddress {
		from := remoteIP(raw)
		if from != p.Addr.Addr().Unmap() {
			return nil, nil, refuse(ReasonSourceAddress, "replica %d must connect from its roster ip %s, came from %s", p.ID, p.Addr.Addr(), from)
		}
	}
	if t.cfg.TLS.Mode == TLSCA {
		if err := certNames(conn, p.Addr.Addr()); err != nil {
			return nil, nil, refuse(ReasonCertIdentity, "replica %d: %v", p.ID, err)
		}
	}
	// A plausible hello from the claimed replica's address: the connection
	// leaves the admission gate and has the rest of handshake_grace. One
	// such handshake per claimed replica at a time.
	if ps.release() {
		return nil, nil, refuse(ReasonAddressQuota, "evicted from the admission gate")
	}
	superseded := p.handshaking(raw)
	_ = raw.SetDeadline(deadline)
	fail := func(err error) (*peer, net.Conn, error) {
		if superseded() {
			return nil, nil, refuse(ReasonSuperseded, "a newer handshake claiming replica %d replaced this one", p.ID)
		}
		return nil, nil, err
	}
	if _, err := conn.Write(challenge[:]); err != nil {
		return fail(fmt.Errorf("writing challenge: %w", err))
	}
	if _, err := io.ReadFull(conn, finishRaw[:]); err != nil {
		return fail(fmt.Errorf("reading finish: %w", err))
	}
	if err := t.me.acceptFinish(hello, key, helloRaw[:], challenge[:], finishRaw[:], exp); err != nil {
		return fail(err)
	}
	superseded()
	return p, conn, nil
}

// handshakeErr names the failure of a handshake run under ctx: when the
// grace period ran out, the socket was closed under the handshake and err is
// whatever that close produced, so the deadline is reported instead.
func (t *Transport) handshakeErr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && t.ctx.Err() == nil {
		return refuse(ReasonTimeout, "handshake not finished within %s (%v)", t.cfg.HandshakeGrace, err)
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

func tlsErr(err error) error {
	if classify(err) == ReasonTimeout {
		return err
	}
	return refuse(ReasonTLS, "%v", err)
}

func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// dialLoop keeps one link to p: dial, hold the link until it fails, redial
// after a jittered exponential backoff.
func (t *Transport) dialLoop(p *peer) {
	defer t.wg.Done()
	failures := 0
	for t.ctx.Err() == nil {
		l, err := t.dial(p)
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			failures++
			p.st.dialFailures.Add(1)
			if failures == 1 {
				t.log.Info("replica plane cannot reach peer", zap.Uint8("peer", p.ID), zap.Stringer("addr", p.Addr), zap.Error(err))
			} else {
				t.log.Debug("replica plane redial failed", zap.Uint8("peer", p.ID), zap.Int("failures", failures), zap.Error(err))
			}
			if !t.sleep(t.backoff(failures)) {
				return
			}
			continue
		}
		failures = 0
		select {
		case <-l.done:
		case <-t.ctx.Done():
			return
		}
		if !t.sleep(t.backoff(0)) {
			return
		}
	}
}

// backoff is the delay before redial attempt n (0 after a link was lost):
// ReconnectMin doubled per failure up to ReconnectMax, jittered to [d/2, d].
func (t *Transport) backoff(failures int) time.Duration {
	d := t.cfg.ReconnectMin
	for i := 1; i < failures && d < t.cfg.ReconnectMax; i++ {
		d *= 2
	}
	d = min(d, t.cfg.ReconnectMax)
	return d/2 + rand.N(d/2+1)
}

func (t *Transport) sleep(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// dial connects to p and runs the dialer side of the handshake. Handshake
// failures are counted as refusals; an unreachable peer is not.
func (t *Transport) dial(p *peer) (*link, error) {
	ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HandshakeGrace)
	defer cancel()
	d := net.Dialer{KeepAliveConfig: t.cfg.KeepAlive}
	bound := !t.cfg.AnySourceAddress && !t.bindFailed.Load()
	if bound {
		// Connect from our roster ip: the acceptor checks it.
		d.LocalAddr = &net.TCPAddr{IP: t.self.Addr.Addr().AsSlice()}
	}
	raw, err := d.DialContext(ctx, "tcp", p.Addr.String())
	if bound && errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.bindFailed.Store(true)
		t.log.Warn("this node's roster ip is not a local address; dialing peers from any address (peers will refuse unless they allow any source address)",
			zap.Stringer("ip", t.self.Addr.Addr()))
		d.LocalAddr = nil
		raw, err = d.DialContext(ctx, "tcp", p.Addr.String())
	}
	if err != nil {
		return nil, err
	}
	t.tuneTCP(raw)
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	deadline, _ := ctx.Deadline()
	_ = raw.SetDeadline(deadline)
	conn, err := t.dialHandshake(ctx, raw, p)
	if !stop() || err != nil {
		err = t.handshakeErr(ctx, err)
		raw.Close()
		if t.ctx.Err() == nil {
			t.refused(err, raw.RemoteAddr(), zap.Uint8("peer", p.ID))
		}
		return nil, err
	}
	_ = raw.SetDeadline(time.Time{})
	l := t.startLink(p, conn, raw)
	if l == nil {
		return nil, ErrClosed
	}
	return l, nil
}

func (t *Transport) dialHandshake(ctx context.Context, raw net.Conn, p *peer) (net.Conn, error) {
	conn := raw
	if t.tlsClient != nil {
		cfg := t.tlsClient.Clone()
		cfg.ServerName = p.Addr.Addr().String()
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, tlsErr(err)
		}
		conn = tc
	}
	exp, err := exporter(conn)
	if err != nil {
		return nil, err
	}
	_, hello := t.me.dialerHello(p.ID)
	if _, err := conn.Write(hello[:]); err != nil {
		return nil, fmt.Errorf("writing hello: %w", err)
	}
	var challenge [HandshakeSize]byte
	if _, err := io.ReadFull(conn, challenge[:]); err != nil {
		return nil, fmt.Errorf("reading challenge: %w", err)
	}
	finish, err := t.me.dialerFinish(p.ID, hello[:], challenge[:], exp)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Write(finish[:]); err != nil {
		return nil, fmt.Errorf("writing finish: %w", err)
	}
	return conn, nil
}
