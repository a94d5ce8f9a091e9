package replica

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/wire"
)

// Local sessions: requests that do not arrive on a socket of their own (the
// HTTP API) are served by the connection-serving path itself. A
// LocalSession owns conns whose socket is a reply capture: it stamps each
// request frame as a client would (client id, session, request number,
// operation, command code) and hands it to conn.handle, which decodes,
// admits, checks permissions, forwards to the owning shard (and, on a
// backup, to the primary) and writes exactly one reply frame into the
// capture; the session decodes that frame with wire.DecodeReply. Nothing of
// a command is implemented twice.
//
// A session starts bound to an authenticated user without a VSR session:
// reads (NonReplicated) need none. The first request that needs one
// (metadata operations, sends, offset writes, segment deletes) registers it
// through the same Register path a binary login takes (conn.register).
// Metadata operations run on one control conn, serialised, so the request
// numbers reach the metadata group in order; reads and partition
// operations, which do not advance the request number, run on up to
// localDataConns conns in parallel.

// localDataConns bounds the conns one session uses for reads and partition
// operations at once; more concurrent requests wait for one.
const localDataConns = 8

// localBufferKeep bounds the buffers an idle local conn keeps (a poll of
// a megabyte is not kept for the next request of every session).
const localBufferKeep = 256 << 10

// Replays of transient answers: TransientNotCommitted (57) on the same
// request number until the context ends, TransientNotAccepted (58) for at
// most localNotAcceptedBudget (then the caller sees 58).
const (
	localReplayInterval    = 20 * time.Millisecond
	localNotAcceptedBudget = 5 * time.Second
)

// ErrSessionClosed is returned by a closed or evicted LocalSession.
var ErrSessionClosed = errors.New("replica: local session closed")

// LocalSession is one in-process client session.
type LocalSession struct {
	n         *Node
	transport uint8
	addr      string
	client    wire.Uint128
	user      uint32

	mu      sync.Mutex // ctrl, session, request, dead
	ctrl    *conn
	session uint64
	request uint64
	dead    bool

	data chan *conn // idle data conns
	made chan struct{}
	// waits counts the session's waiting polls over all its conns
	// (long_poll.waiters_per_connection holds for the session).
	waits longpoll.Slots
}

// OpenLocalSession opens a session of user (already authenticated by the
// caller) for a client at addr, reported with the given transport
// (wire.TransportHTTP for the HTTP API).
func (n *Node) OpenLocalSession(transport uint8, addr string, user uint32) *LocalSession {
	s := &LocalSession{n: n, transport: transport, addr: addr, user: user,
		data: make(chan *conn, localDataConns), made: make(chan struct{}, localDataConns)}
	var b [16]byte
	for s.client.IsZero() {
		_, _ = rand.Read(b[:])
		s.client = wire.Uint128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
	}
	n.metrics.ConnectionOpened(transport)
	return s
}

// User is the session's user id.
func (s *LocalSession) User() uint32 { return s.user }

// Registered reports whether the session holds a VSR session.
func (s *LocalSession) Registered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session != 0
}

// Close ends the session: its conns leave every consumer group they joined
// (none: HTTP cannot join) and are dropped.
func (s *LocalSession) Close() {
	s.mu.Lock()
	s.dead = true
	s.mu.Unlock()
}

func (s *LocalSession) newConn() *conn {
	cc := &capture{addr: localAddr(s.addr)}
	c := newConn(s.n, 0, cc, "local", nil) // no socket: nothing to admit
	c.transport = s.transport
	c.lp.slots = &s.waits
	return c
}

// bind gives c the session's identity (under s.mu).
func (s *LocalSession) bind(c *conn) {
	c.mu.Lock()
	c.bound, c.client, c.session, c.userID = true, s.client, s.session, s.user
	c.mu.Unlock()
}

// Do executes one request: code with the body in frame[wire.HeaderSize:]
// (the first wire.HeaderSize bytes are overwritten with the header). fn
// receives the reply payload (aliasing a buffer reused afterwards) when the
// server answered status 0; the server's refusals come back as *wire.Error
// and evictions as *wire.EvictionError, after which the session is closed.
func (s *LocalSession) Do(ctx context.Context, code wire.CommandCode, frame []byte, fn func(payload []byte) error) error {
	op := code.Operation()
	switch {
	case op == wire.OpRegister, op == wire.OpLogout:
		return wire.Errorf(wire.CodeInvalidCommand, "%v is a session command", code)
	case op.IsMetadata(), op == wire.OpDeleteSegments:
		return s.doControl(ctx, code, op, frame, fn)
	}
	if op != wire.OpNonReplicated {
		if err := s.ensureRegistered(ctx); err != nil {
			return err
		}
	}
	c, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer func() { s.data <- c }()
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	s.bind(c)
	h := wire.RequestHeader{Client: s.client, Operation: op, Session: s.session, Request: s.request, Code: code}
	s.mu.Unlock()
	return s.exchange(ctx, c, &h, frame, fn)
}

func (s *LocalSession) acquire(ctx context.Context) (*conn, error) {
	select {
	case c := <-s.data:
		return c, nil
	default:
	}
	select {
	case s.made <- struct{}{}:
		return s.newConn(), nil
	default:
	}
	select {
	case c := <-s.data:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// doControl runs a metadata operation on the control conn.
func (s *LocalSession) doControl(ctx context.Context, code wire.CommandCode, op wire.Operation, frame []byte, fn func([]byte) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.registerLocked(ctx); err != nil {
		return err
	}
	h := wire.RequestHeader{Client: s.client, Operation: op, Session: s.session, Request: s.request, Code: code}
	s.request++
	return s.exchange(ctx, s.ctrl, &h, frame, fn)
}

func (s *LocalSession) ensureRegistered(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registerLocked(ctx)
}

// registerLocked binds a VSR session on the control conn unless one is
// bound (under s.mu).
func (s *LocalSession) registerLocked(ctx context.Context) error {
	if s.dead {
		return ErrSessionClosed
	}
	if s.session != 0 {
		return nil
	}
	if s.ctrl == nil {
		s.ctrl = s.newConn()
	}
	h := wire.RequestHeader{Client: s.client, Operation: wire.OpRegister, Code: wire.CmdLoginRegister}
	frame := make([]byte, wire.HeaderSize)
	var reply wire.LoginReply
	err := s.replay(ctx, &h, func() (bool, []byte, error) {
		c := s.ctrl
		h.Size = uint32(len(frame))
		h.Put(frame)
		capOf(c).buf = capOf(c).buf[:0]
		if !c.register(&h, s.user, nil, false, wire.Uint128{}) {
			return false, nil, ErrSessionClosed
		}
		return true, capOf(c).buf, nil
	}, func(p []byte) error {
		var err error
		reply, err = wire.DecodeLoginReply(p)
		return err
	})
	if err != nil {
		var ev *wire.EvictionError
		if errors.As(err, &ev) {
			s.dead = true
		}
		return err
	}
	s.session, s.request = reply.Session, 1
	return nil
}

// exchange sends h with frame's body on c and decodes the reply, replaying
// transient answers.
func (s *LocalSession) exchange(ctx context.Context, c *conn, h *wire.RequestHeader, frame []byte, fn func([]byte) error) error {
	err := s.replay(ctx, h, func() (bool, []byte, error) {
		h.Size = uint32(len(frame))
		h.Put(frame[:wire.HeaderSize])
		capOf(c).buf = capOf(c).buf[:0]
		start := time.Now()
		c.lp.cancel = ctx.Done() // a waiting poll ends when the request does
		ok := c.handle(frame)
		c.lp.cancel = nil
		s.n.metrics.ObserveRequest(s.transport, frame, time.Since(start))
		return ok, capOf(c).buf, nil
	}, fn)
	if cp := capOf(c); cap(cp.buf) > localBufferKeep {
		cp.buf = nil
	}
	if cap(c.reqs.poll.buf) > localBufferKeep {
		c.reqs.poll.buf = nil
	}
	if cap(c.pbuf) > localBufferKeep {
		c.pbuf = nil
	}
	if cap(c.wbuf) > localBufferKeep {
		c.wbuf = nil
	}
	var ev *wire.EvictionError
	if errors.As(err, &ev) || errors.Is(err, ErrSessionClosed) {
		s.mu.Lock()
		s.dead = true
		s.mu.Unlock()
	}
	return err
}

// replay runs one exchange (send returns whether the conn stays usable and
// the captured reply frame) and repeats it with the same request number
// while the answer is transient.
func (s *LocalSession) replay(ctx context.Context, h *wire.RequestHeader, send func() (bool, []byte, error), fn func([]byte) error) error {
	notAccepted := time.Now().Add(localNotAcceptedBudget)
	for {
		ok, reply, err := send()
		if err != nil {
			return err
		}
		if len(reply) == 0 {
			// handle closed the connection without a reply (the node is
			// stopping or the frame was refused outright).
			return ErrSessionClosed
		}
		if wire.FrameKindOf(reply) == wire.FrameReply && len(reply) >= wire.HeaderSize {
			if echoed := binary.LittleEndian.Uint64(reply[200:208]); echoed != h.Request {
				s.n.log.Error("local session: reply answers another request", zap.Uint64("echoed", echoed), zap.Uint64("request", h.Request))
				return ErrSessionClosed
			}
		}
		_, payload, derr := wire.DecodeReply(reply, 0)
		switch {
		case derr == nil:
			if !ok {
				s.mu.Lock()
				s.dead = true
				s.mu.Unlock()
			}
			if fn != nil {
				return fn(payload)
			}
			return nil
		case wire.HasCode(derr, wire.CodeTransientNotCommitted):
		case wire.HasCode(derr, wire.CodeTransientNotAccepted):
			if time.Now().After(notAccepted) {
				return derr
			}
		default:
			return derr
		}
		if !ok {
			return ErrSessionClosed
		}
		t := time.NewTimer(localReplayInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return derr
		case <-t.C:
		}
	}
}

// capOf is the capture behind a local conn.
func capOf(c *conn) *capture { return c.nc.(*capture) }

// capture is the socket of a local conn: it keeps what the conn writes.
type capture struct {
	buf  []byte
	addr net.Addr
}

func (c *capture) Read([]byte) (int, error) { return 0, net.ErrClosed }
func (c *capture) Write(b []byte) (int, error) {
	c.buf = append(c.buf, b...)
	return len(b), nil
}
func (c *capture) Close() error                     { return nil }
func (c *capture) LocalAddr() net.Addr              { return c.addr }
func (c *capture) RemoteAddr() net.Addr             { return c.addr }
func (c *capture) SetDeadline(time.Time) error      { return nil }
func (c *capture) SetReadDeadline(time.Time) error  { return nil }
func (c *capture) SetWriteDeadline(time.Time) error { return nil }

// localAddr is the client's address as a net.Addr (a TCP address when it
// parses as one, so cluster metadata picks the client's network).
func localAddr(s string) net.Addr {
	if a, err := net.ResolveTCPAddr("tcp", s); err == nil && a.IP != nil {
		return a
	}
	return strAddr(s)
}

type strAddr string

func (a strAddr) Network() string { return "http" }
func (a strAddr) String() string  { return string(a) }
