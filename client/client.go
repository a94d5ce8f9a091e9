package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/wire"
)

// Errors of the client itself (the server's errors are *wire.Error values).
var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("client: closed")
	// ErrNotConnected is returned when there is no connection and
	// reconnection is disabled or exhausted.
	ErrNotConnected = &wire.Error{Code: wire.CodeNotConnected}
)

// ConnError reports a connection that failed during an exchange. The
// connection has been closed; whether the request applied is unknown.
type ConnError struct {
	Addr string
	Op   string // "dial", "write", "read", "correlate"
	Err  error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("client: %s %s: %v", e.Op, e.Addr, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// IggyCode reports Disconnected (8), or CannotEstablishConnection (9) for a
// failed dial.
func (e *ConnError) IggyCode() wire.Code {
	if e.Op == "dial" {
		return wire.CodeCannotEstablishConnection
	}
	return wire.CodeDisconnected
}

// session is the client side of one registration: a random client id, the
// session fence from the login reply, and the request counter (§2.4).
type session struct {
	client  wire.Uint128
	id      uint64
	bound   bool
	counter uint64
}

func (s *session) reset() {
	*s = session{client: newClientID(), counter: 1}
}

func newClientID() wire.Uint128 {
	var b [16]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic("client: crypto/rand failed: " + err.Error())
		}
		id := wire.Uint128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
		if !id.IsZero() {
			return id
		}
	}
}

type credentials struct {
	username, password, token string
}

func (c *credentials) request(cfg *Config) wire.Request {
	v := wire.ClientVersionInfo{Protocol: wire.CurrentProtocol, SDKName: cfg.SDKName, SDKVersion: cfg.SDKVersion}
	if c.token != "" {
		return &wire.LoginRegisterWithPAT{Version: v, Token: c.token}
	}
	return &wire.LoginRegister{Version: v, Username: c.username, Password: c.password}
}

type connection struct {
	nc   net.Conn
	br   *bufio.Reader
	addr string
}

// Client is a connection to an iggo (or Iggy) server. It is safe for
// concurrent use; requests are sent one at a time (lockstep), as the
// protocol requires.
type Client struct {
	cfg Config
	log *zap.Logger

	// connMu orders connection changes against calls: calls hold it for
	// reading, (re)connects, logins, logouts and leader checks for writing.
	connMu sync.RWMutex

	// mu guards the fields below and is held across one request/reply
	// exchange, which is what makes the connection lockstep.
	mu        sync.Mutex
	conn      *connection
	gen       uint64 // incremented on every new connection or session
	sess      session
	addr      string   // current (or last) server address
	known     []string // healthy roster addresses from the last leader check
	creds     *credentials
	loggedOut bool
	closed    bool
	closeCh   chan struct{}
	hbStarted bool
	lastUse   time.Time

	topics topicCache
	groups groupCache

	// sendMu serialises sends that carry the producer identity, retries
	// included, so a retry is always of the producer's latest request
	// (the partition answers an older one RequestAlreadyApplied).
	sendMu sync.Mutex
	// prod is the producer identity (guarded by mu): the client id and
	// session of the first login (or Config.Producer), kept across
	// reconnects and re-logins, and the last producer request number used.
	prod producer
	// retriedSends counts sends confirmed after a lost attempt.
	retriedSends atomic.Uint64
}

// producer is the identity sends carry (exactly-once sends, see the
// package doc).
type producer struct {
	id      wire.Uint128
	session uint64
	request uint64
	// pending is the request number of the last send if it failed with its
	// outcome unknown (0: none), pendingSum the XXH3-64 of its body.
	pending, pendingSum uint64
}

// Producer is a client's producer identity, for a new Client that must
// continue it (Config.Producer): a process that restarts, or replaces its
// Client, and then sends again a batch whose outcome was unknown gets it
// applied at most once. It belongs to the user that logged in.
type Producer struct {
	ID      wire.Uint128
	Session uint64
	// Request is the last producer request number used.
	Request uint64
	// Pending is the request number of the last send if it failed with an
	// unknown outcome (0: none) and PendingSum the XXH3-64 of its body:
	// the next SendMessages with that very body (same messages, ids,
	// timestamps and partition) reuses the number.
	Pending, PendingSum uint64
}

// Producer returns the producer identity (zero before the first login).
func (c *Client) Producer() Producer {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.prod
	return Producer{ID: p.id, Session: p.session, Request: p.request, Pending: p.pending, PendingSum: p.pendingSum}
}

// New returns an unconnected client.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: cfg.Logger, closeCh: make(chan struct{})}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	c.sess.reset()
	c.addr = cfg.Addresses[0]
	if p := cfg.Producer; p != nil && !p.ID.IsZero() {
		c.prod = producer{id: p.ID, session: p.Session, request: p.Request, pending: p.Pending, pendingSum: p.PendingSum}
	}
	switch {
	case cfg.Token != "":
		c.creds = &credentials{token: cfg.Token}
	case cfg.Username != "":
		c.creds = &credentials{username: cfg.Username, password: cfg.Password}
	}
	return c, nil
}

// Dial creates a client and connects it (logging in when the config holds
// credentials).
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Connect dials the first reachable candidate, logs in when credentials are
// known, and moves to the cluster leader if the roster names another node.
func (c *Client) Connect(ctx context.Context) error {
	ctx, cancel := c.budget(ctx)
	defer cancel()
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if err := c.reconnectLocked(ctx); err != nil {
		return err
	}
	c.startHeartbeat()
	return nil
}

// Close closes the connection; later calls fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closeCh)
	cn := c.conn
	c.mu.Unlock()
	// Signal and unblock first, then take the exchange lock: a replay wait or
	// a read in progress ends promptly instead of holding Close for its whole
	// budget.
	if cn != nil {
		_ = cn.nc.SetDeadline(time.Now())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked()
	return nil
}

// Addr is the address of the current (or last) server.
func (c *Client) Addr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addr
}

// ClientID is the id of the current registration (it changes on every
// login and reconnect).
func (c *Client) ClientID() wire.Uint128 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.client
}

// Session is the session fence of the current login (0 when not logged in).
func (c *Client) Session() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.id
}

// KnownNodes are the healthy node addresses of the last roster seen.
func (c *Client) KnownNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.known...)
}

func (c *Client) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.budgetPlus(ctx, 0)
}

// budgetPlus is budget for a request the server may hold for extra (a
// waiting poll).
func (c *Client) budgetPlus(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	limit := c.cfg.RequestTimeout + extra
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= limit {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, limit)
}

// Login logs in with a username and password: fresh client id, Register,
// then the leader check. A bound session is logged out first.
func (c *Client) Login(ctx context.Context, username, password string) (wire.LoginReply, error) {
	return c.login(ctx, &credentials{username: username, password: password})
}

// LoginWithToken logs in with a personal access token.
func (c *Client) LoginWithToken(ctx context.Context, token string) (wire.LoginReply, error) {
	return c.login(ctx, &credentials{token: token})
}

func (c *Client) login(ctx context.Context, cr *credentials) (wire.LoginReply, error) {
	ctx, cancel := c.budget(ctx)
	defer cancel()
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.mu.Lock()
	connected, bound := c.conn != nil, c.sess.bound
	c.mu.Unlock()
	if !connected {
		c.mu.Lock()
		c.creds = nil // dial without logging in; this login is the caller's
		c.mu.Unlock()
		if err := c.reconnectLocked(ctx); err != nil {
			return wire.LoginReply{}, err
		}
	} else if bound {
		if err := c.logoutLocked(ctx); err != nil {
			return wire.LoginReply{}, err
		}
	}
	reply, err := c.registerLocked(ctx, cr)
	if err != nil {
		return wire.LoginReply{}, err
	}
	if err := c.settleOnLeaderLocked(ctx); err != nil {
		return wire.LoginReply{}, err
	}
	c.startHeartbeat()
	return reply, nil
}

// Logout ends the session. Automatic re-login stays off until the next
// Login.
func (c *Client) Logout(ctx context.Context) error {
	ctx, cancel := c.budget(ctx)
	defer cancel()
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return c.logoutLocked(ctx)
}

func (c *Client) logoutLocked(ctx context.Context) error {
	frame, err := newFrame(&wire.LogoutUser{})
	if err != nil {
		return err
	}
	st := stampState{}
	if _, err := c.roundTrip(ctx, wire.CmdLogoutUser, wire.OpLogout, frame, &st); err != nil {
		return err
	}
	c.mu.Lock()
	c.sess.reset()
	c.gen++
	c.loggedOut = true
	c.mu.Unlock()
	c.topics.clear()
	c.groups.clear()
	return nil
}

// registerLocked sends Register on the current connection and binds the
// session. connMu must be held for writing.
func (c *Client) registerLocked(ctx context.Context, cr *credentials) (wire.LoginReply, error) {
	frame, err := newFrame(cr.request(&c.cfg))
	if err != nil {
		return wire.LoginReply{}, err
	}
	c.mu.Lock()
	c.sess.reset()
	c.gen++
	c.mu.Unlock()
	st := stampState{}
	payload, err := c.roundTrip(ctx, wire.CmdLoginRegister, wire.OpRegister, frame, &st)
	if err != nil {
		return wire.LoginReply{}, err
	}
	reply, err := wire.DecodeLoginReply(payload)
	if err != nil {
		// The server registered a session this client cannot adopt; the
		// connection is unusable.
		c.mu.Lock()
		c.dropLocked()
		c.mu.Unlock()
		return wire.LoginReply{}, err
	}
	c.mu.Lock()
	c.sess.id = reply.Session
	c.sess.bound = true
	c.sess.counter = 1
	if c.prod.id.IsZero() {
		c.prod = producer{id: c.sess.client, session: reply.Session}
	}
	c.creds = cr
	c.loggedOut = false
	c.mu.Unlock()
	c.log.Debug("logged in", zap.Uint32("user_id", reply.UserID), zap.Uint64("session", reply.Session), zap.String("server", reply.ServerVersion))
	return reply, nil
}

// reconnectLocked dials the candidates with backoff and re-logs in when
// credentials are known. connMu must be held for writing.
func (c *Client) reconnectLocked(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.dropLocked()
	candidates := c.candidatesLocked()
	c.mu.Unlock()
	attempts := 1
	backoff := c.cfg.Reconnect.Backoff
	if c.cfg.Reconnect.Enabled {
		attempts = c.cfg.Reconnect.MaxAttempts
	}
	var lastErr error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			if err := c.sleep(ctx, backoff); err != nil {
				return err
			}
			backoff = min(2*backoff, c.cfg.Reconnect.MaxBackoff)
		}
		addr := candidates[i%len(candidates)]
		err := c.connectLocked(ctx, addr)
		if err == nil {
			// A leader check that loses the connection (the leader and
			// the node it came from both unreachable) is a failed
			// attempt like any other: back off and try the next candidate.
			if err = c.settleOnLeaderLocked(ctx); err == nil {
				return nil
			}
		}
		lastErr = err
		var ev *wire.EvictionError
		if errors.As(err, &ev) || wire.HasCode(err, wire.CodeInvalidCredentials) {
			return err // a refused login does not get better by redialing
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Debug("connect failed", zap.String("addr", addr), zap.Error(err))
	}
	return lastErr
}

// candidatesLocked: the current address, the configured ones, then the
// healthy nodes of the last roster, without duplicates.
func (c *Client) candidatesLocked() []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range append(append([]string{c.addr}, c.cfg.Addresses...), c.known...) {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// connectLocked dials addr and, when credentials are known and the caller
// has not logged out, registers. connMu must be held for writing.
func (c *Client) connectLocked(ctx context.Context, addr string) error {
	nc, err := c.dial(ctx, addr)
	if err != nil {
		if errors.Is(err, ErrTransportNotBuilt) {
			return err
		}
		return &ConnError{Addr: addr, Op: "dial", Err: err}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		nc.Close()
		return ErrClosed
	}
	c.conn = &connection{nc: nc, br: bufio.NewReaderSize(nc, 64<<10), addr: addr}
	c.addr = addr
	c.sess.reset()
	c.gen++
	creds, loggedOut := c.creds, c.loggedOut
	c.mu.Unlock()
	c.topics.clear()
	c.groups.clear()
	c.log.Debug("connected", zap.String("addr", addr))
	if creds == nil || loggedOut {
		return nil
	}
	if _, err := c.registerLocked(ctx, creds); err != nil {
		c.mu.Lock()
		c.dropLocked()
		c.mu.Unlock()
		return err
	}
	return nil
}

// dropLocked closes the connection and forgets the session. mu held.
func (c *Client) dropLocked() {
	if c.conn != nil {
		c.conn.nc.Close()
		c.conn = nil
	}
	c.sess.reset()
	c.gen++
}

// settleOnLeaderLocked is the leader check: read the roster; with more
// than one node, move to the healthy leader if it is elsewhere (bounded
// redirects); remember healthy nodes. Any roster error keeps the current
// node. A leader that cannot be reached (the roster still names a node that
// just died: gossip has not noticed yet) is not fatal: the client goes back
// to the node it came from and treats the roster as leaderless, polling it
// until a reachable leader appears or LeaderlessWait ends. connMu must be
// held for writing.
func (c *Client) settleOnLeaderLocked(ctx context.Context) error {
	deadline := time.Now().Add(c.cfg.LeaderlessWait)
	redirects := 0
	var unreachable []string // leaders this check failed to reach
	for {
		c.mu.Lock()
		bound, cur := c.sess.bound, c.addr
		c.mu.Unlock()
		if !bound {
			return nil // the roster read is auth-gated
		}
		frame, err := newFrame(&wire.GetClusterMetadata{})
		if err != nil {
			return err
		}
		st := stampState{}
		payload, err := c.roundTrip(ctx, wire.CmdGetClusterMetadata, wire.OpNonReplicated, frame, &st)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.log.Debug("cluster metadata unavailable; staying", zap.Error(err))
			return nil
		}
		md, err := wire.DecodeClusterMetadata(payload)
		if err != nil {
			c.log.Debug("cluster metadata undecodable; staying", zap.Error(err))
			return nil
		}
		healthy, leader := rosterLeader(md, unreachable, c.cfg.portOf)
		c.mu.Lock()
		if len(healthy) > 0 {
			c.known = healthy
		}
		c.mu.Unlock()
		if len(md.Nodes) <= 1 {
			return nil
		}
		if leader == "" {
			if time.Now().After(deadline) {
				return nil
			}
			if err := c.sleep(ctx, c.cfg.LeaderlessPoll); err != nil {
				return err
			}
			continue
		}
		if sameAddress(leader, cur) {
			return nil
		}
		if redirects >= c.cfg.MaxRedirects {
			c.log.Warn("leader redirect limit reached; staying", zap.String("leader", leader))
			return nil
		}
		redirects++
		c.log.Debug("redirecting to leader", zap.String("from", cur), zap.String("to", leader))
		c.mu.Lock()
		c.dropLocked()
		c.mu.Unlock()
		err = c.connectLocked(ctx, leader)
		if err == nil {
			continue
		}
		var ev *wire.EvictionError
		if ctx.Err() != nil || errors.As(err, &ev) || wire.HasCode(err, wire.CodeInvalidCredentials) || errors.Is(err, ErrClosed) {
			return err
		}
		c.log.Info("leader unreachable; back to the previous node", zap.String("leader", leader), zap.String("node", cur), zap.Error(err))
		unreachable = append(unreachable, leader)
		if err := c.connectLocked(ctx, cur); err != nil {
			return err
		}
	}
}

// rosterLeader returns the healthy nodes' addresses and the first healthy
// leader among them that is not in skip.
func rosterLeader(md wire.ClusterMetadata, skip []string, portOf func(wire.ClusterNode) uint16) (healthy []string, leader string) {
	for _, n := range md.Nodes {
		if n.Status != wire.NodeHealthy {
			continue
		}
		a := net.JoinHostPort(n.IP, strconv.Itoa(int(portOf(n))))
		healthy = append(healthy, a)
		if leader == "" && n.Role == wire.RoleLeader && !slices.ContainsFunc(skip, func(s string) bool { return sameAddress(s, a) }) {
			leader = a
		}
	}
	return healthy, leader
}

func sameAddress(a, b string) bool {
	norm := func(s string) (string, string) {
		s = strings.ToLower(s)
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			return s, ""
		}
		if host == "localhost" {
			host = "127.0.0.1"
		}
		return host, port
	}
	ha, pa := norm(a)
	hb, pb := norm(b)
	if pa != pb {
		return false
	}
	if ia, ib := net.ParseIP(ha), net.ParseIP(hb); ia != nil && ib != nil {
		return ia.Equal(ib)
	}
	return ha == hb
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closeCh:
		return ErrClosed
	case <-t.C:
		return nil
	}
}

func newFrame(req wire.Request) ([]byte, error) {
	return req.AppendBody(make([]byte, wire.HeaderSize, wire.HeaderSize+64))
}

// framePool recycles request frames: a producer sends megabyte batches in a
// loop, and a frame is dead once its reply has arrived.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledFrame keeps one pathological frame from pinning memory forever.
const maxPooledFrame = 8 << 20

func pooledFrame(req wire.Request) (*[]byte, error) {
	bp := framePool.Get().(*[]byte)
	b, err := req.AppendBody(append((*bp)[:0], make([]byte, wire.HeaderSize)...))
	if b != nil {
		*bp = b
	}
	if err != nil {
		releaseFrame(bp)
		return nil, err
	}
	return bp, nil
}

func releaseFrame(bp *[]byte) {
	if cap(*bp) <= maxPooledFrame {
		*bp = (*bp)[:0]
		framePool.Put(bp)
	}
}

// stampState remembers which connection generation a frame was stamped
// for: a replay on the same session must carry the same request number,
// a new session needs a new stamp.
type stampState struct {
	gen     uint64
	stamped bool
	request uint64
	// waiting marks a poll the server may hold (the wait extension): a
	// TransientNotAccepted answer (no waiting slot free) goes back to the
	// caller instead of being replayed.
	waiting bool
	// prod is the producer identity a send carries (zero: none); it is
	// the same in every attempt, across reconnects and sessions.
	prod producer
	// written: a frame went out; lost: an attempt's outcome is unknown
	// (the connection broke after a write).
	written, lost bool
}

// errLeaderCheck asks the caller to run a leader check: the request was
// answered TransientNotAccepted for the whole NotAcceptedBudget.
type errLeaderCheck struct{ err error }

func (e *errLeaderCheck) Error() string { return e.err.Error() }
func (e *errLeaderCheck) Unwrap() error { return e.err }

// errUnbound is the local refusal of a replicated request without a
// session; nothing was sent.
var errUnbound = &wire.Error{Code: wire.CodeUnauthenticated, Detail: "not logged in (nothing sent)"}

// roundTrip sends frame on the current connection and returns the reply
// payload. It replays 57 on the same session until the context ends and 58
// until NotAcceptedBudget (Register: until the context ends) with the same
// request number. Connection failures close the connection.
func (c *Client) roundTrip(ctx context.Context, code wire.CommandCode, op wire.Operation, frame []byte, st *stampState) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.conn == nil {
		return nil, ErrNotConnected
	}
	if !st.stamped || st.gen != c.gen {
		if st.lost && st.stamped && st.prod.id.IsZero() && op.IsReplicated() {
			// In doubt on an earlier session (answered 57, then moved by a
			// leader check): under a new session it would be a new request
			// the cluster may apply a second time. Reported as a lost
			// reply would be.
			return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, &wire.Error{Code: wire.CodeTransientNotCommitted,
				Detail: "answered TransientNotCommitted on an earlier session; not sent again"})
		}
		if err := c.stampLocked(frame, code, op, st); err != nil {
			return nil, err
		}
	}
	cn := c.conn
	if c.cfg.IdleCheck > 0 && time.Since(c.lastUse) >= c.cfg.IdleCheck && connClosed(cn.nc) {
		// Nothing was written: the caller may reconnect and send it.
		c.log.Debug("connection closed by the server while idle", zap.String("addr", cn.addr))
		c.dropLocked()
		return nil, ErrNotConnected
	}
	var dlMu sync.Mutex
	finished := false
	stop := context.AfterFunc(ctx, func() {
		dlMu.Lock()
		defer dlMu.Unlock()
		if !finished {
			_ = cn.nc.SetDeadline(time.Now()) // unblock the exchange
		}
	})
	defer func() {
		stop()
		dlMu.Lock()
		finished = true
		_ = cn.nc.SetDeadline(time.Time{}) // idle connections must not time out
		dlMu.Unlock()
	}()
	if d, ok := ctx.Deadline(); ok {
		_ = cn.nc.SetDeadline(d)
	}
	notAccepted := time.Now().Add(c.cfg.NotAcceptedBudget)
	for {
		c.lastUse = time.Now()
		st.written = true
		if _, err := cn.nc.Write(frame); err != nil {
			st.lost = true
			c.dropLocked()
			return nil, c.ctxOr(ctx, &ConnError{Addr: cn.addr, Op: "write", Err: err})
		}
		reply, err := wire.ReadFrame(cn.br, nil, c.cfg.MaxFrameSize)
		if err != nil {
			st.lost = true
			c.dropLocked()
			return nil, c.ctxOr(ctx, &ConnError{Addr: cn.addr, Op: "read", Err: err})
		}
		if wire.FrameKindOf(reply) == wire.FrameReply {
			if echoed := binary.LittleEndian.Uint64(reply[200:208]); echoed != st.request {
				c.dropLocked()
				return nil, &ConnError{Addr: cn.addr, Op: "correlate", Err: fmt.Errorf("reply answers request %d, %d is in flight", echoed, st.request)}
			}
		}
		_, payload, err := wire.DecodeReply(reply, c.cfg.MaxFrameSize)
		var ev *wire.EvictionError
		switch {
		case err == nil:
			return payload, nil
		case errors.As(err, &ev):
			c.log.Debug("evicted", zap.Stringer("reason", ev.Reason))
			c.dropLocked()
			return nil, err
		case wire.HasCode(err, wire.CodeTransientNotCommitted):
			// Outcome unknown, exactly as after a lost reply (a group that
			// stopped answers so what it had already prepared): only this
			// session may replay it, with the same request number, so the
			// server can answer from its table; a send keeps its producer
			// identity and stays in doubt however the call ends.
			st.lost = true
		case wire.HasCode(err, wire.CodeTransientNotAccepted):
			if st.waiting {
				return nil, err
			}
			if op != wire.OpRegister && time.Now().After(notAccepted) {
				return nil, &errLeaderCheck{err: err}
			}
		default:
			return nil, err
		}
		if werr := c.sleepLocked(ctx, c.cfg.ReplayInterval); werr != nil {
			return nil, werr
		}
	}
}

// sleepLocked waits while holding mu; the connection is lockstep, so
// nothing else could use it meanwhile anyway.
func (c *Client) sleepLocked(ctx context.Context, d time.Duration) error {
	return c.sleep(ctx, d)
}

// ctxOr reports the context's error in place of an I/O error the context
// caused (the connection deadline equals the context deadline and may fire
// a moment before the context notices).
func (c *Client) ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return err
}

// stampLocked writes the request header for the current session (§2.4).
func (c *Client) stampLocked(frame []byte, code wire.CommandCode, op wire.Operation, st *stampState) error {
	h := wire.RequestHeader{Client: c.sess.client, Operation: op}
	switch op {
	case wire.OpRegister:
		// request 0, session 0
	case wire.OpNonReplicated:
		h.Request = c.sess.counter
		h.Session = c.sess.id
		h.Code = code
	default:
		if !c.sess.bound {
			return errUnbound
		}
		h.Session = c.sess.id
		h.Request = c.sess.counter
		if op.AdvancesRequest() {
			if c.sess.counter == ^uint64(0) {
				return wire.Errorf(wire.CodeInvalidSession, "request counter exhausted")
			}
			c.sess.counter++
		}
	}
	if op == wire.OpSendMessages {
		h.Producer, h.ProducerSession, h.ProducerRequest = st.prod.id, st.prod.session, st.prod.request
	}
	h.Size = uint32(len(frame))
	h.Put(frame[:wire.HeaderSize])
	st.gen, st.stamped, st.request = c.gen, true, h.Request
	return nil
}

// call is the full request path: stamp, send, replay transients, run the
// leader check after a prolonged 58, and reconnect (re-login included)
// when the failure proves the request did not apply or it is safe to
// repeat.
func (c *Client) call(ctx context.Context, req wire.Request) ([]byte, error) {
	return c.callPlus(ctx, req, 0)
}

// callPlus is call for a request the server may hold for extra.
func (c *Client) callPlus(ctx context.Context, req wire.Request, extra time.Duration) ([]byte, error) {
	return c.callAs(ctx, req, extra, nil)
}

// callAs is callPlus for a send that carries the producer identity st
// (nil: none). Such a send may be sent again after any failure: the
// partition applies it at most once and answers a retry with the first
// confirmation.
func (c *Client) callAs(ctx context.Context, req wire.Request, extra time.Duration, st0 *stampState) ([]byte, error) {
	code := req.Code()
	op := code.Operation()
	if op == wire.OpRegister || op == wire.OpLogout || code == wire.CmdLoginUser || code == wire.CmdLoginWithPersonalAccessToken {
		return nil, fmt.Errorf("client: %v is a session command; use Login/LoginWithToken/Logout", code)
	}
	bp, err := pooledFrame(req)
	if err != nil {
		return nil, err
	}
	defer releaseFrame(bp)
	frame := *bp
	if len(frame) > int(c.cfg.MaxFrameSize) {
		return nil, wire.Errorf(wire.CodeInvalidCommand, "request frame of %d bytes exceeds %d", len(frame), c.cfg.MaxFrameSize)
	}
	ctx, cancel := c.budgetPlus(ctx, extra)
	defer cancel()
	st := st0
	if st == nil {
		st = &stampState{waiting: extra > 0}
	}
	idempotent := !st.prod.id.IsZero()
	recoveries := 0
	for {
		c.connMu.RLock()
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		payload, err := c.roundTrip(ctx, code, op, frame, st)
		c.connMu.RUnlock()
		if err == nil {
			return payload, nil
		}
		if cerr := c.ctxOr(ctx, nil); cerr != nil {
			return nil, cerr
		}
		var lc *errLeaderCheck
		if errors.As(err, &lc) {
			if err := c.leaderCheck(ctx); err != nil {
				return nil, err
			}
			continue // same session: same stamp; new session: re-stamped
		}
		if !c.shouldRecover(op, hasSideEffects(req), idempotent, err) || recoveries >= c.cfg.Reconnect.MaxPerCall {
			return nil, err
		}
		recoveries++
		if rerr := c.recover(ctx, gen); rerr != nil {
			if errors.Is(rerr, context.DeadlineExceeded) || errors.Is(rerr, context.Canceled) {
				return nil, rerr
			}
			return nil, fmt.Errorf("%w (reconnect failed: %v)", err, rerr)
		}
	}
}

// shouldRecover decides whether a failed call reconnects and sends again:
// reads, pings and sends with a producer identity (idempotent) always may;
// another replicated request, or a read with side effects (a poll with
// auto-commit), only when nothing was sent or the server provably refused
// it before applying (Unauthenticated, StaleClient).
func (c *Client) shouldRecover(op wire.Operation, sideEffects, idempotent bool, err error) bool {
	if errors.Is(err, ErrClosed) || !c.cfg.Reconnect.Enabled {
		return false
	}
	c.mu.Lock()
	loggedOut, haveCreds := c.loggedOut, c.creds != nil
	c.mu.Unlock()
	notApplied := errors.Is(err, ErrNotConnected) || errors.Is(err, errUnbound) ||
		wire.HasCode(err, wire.CodeUnauthenticated) || wire.HasCode(err, wire.CodeStaleClient)
	var ce *ConnError
	lost := errors.As(err, &ce)
	if !notApplied && !lost {
		return false
	}
	if idempotent && (loggedOut || !haveCreds) {
		return false
	}
	if (op.IsReplicated() || sideEffects) && !idempotent {
		if !notApplied || loggedOut || !haveCreds {
			return false
		}
		return true
	}
	if errors.Is(err, errUnbound) || wire.HasCode(err, wire.CodeUnauthenticated) {
		return haveCreds && !loggedOut
	}
	return true
}

// hasSideEffects reports whether a non-replicated request changes server
// state: a poll with auto-commit stores the consumer's offset, so resending it
// after a lost reply would skip the messages the lost reply carried.
func hasSideEffects(req wire.Request) bool {
	p, ok := req.(*wire.PollMessages)
	return ok && p.AutoCommit
}

// recover re-establishes the connection (and session) unless another call
// already did so since generation gen.
func (c *Client) recover(ctx context.Context, gen uint64) error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.mu.Lock()
	same := c.gen == gen
	alive := c.conn != nil
	bound := c.sess.bound
	creds, loggedOut := c.creds, c.loggedOut
	c.mu.Unlock()
	if !same && alive {
		return nil
	}
	if alive && !bound && creds != nil && !loggedOut {
		if _, err := c.registerLocked(ctx, creds); err == nil {
			return c.settleOnLeaderLocked(ctx)
		}
	}
	return c.reconnectLocked(ctx)
}

// leaderCheck runs the leader check between attempts of a call.
func (c *Client) leaderCheck(ctx context.Context) error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	return c.settleOnLeaderLocked(ctx)
}

// Do sends any request and returns the raw reply payload (after the result
// section for result-framed operations). Session commands are refused; use
// Login/Logout.
func (c *Client) Do(ctx context.Context, req wire.Request) ([]byte, error) {
	return c.call(ctx, req)
}

func (c *Client) startHeartbeat() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hbStarted || c.cfg.HeartbeatInterval <= 0 || c.closed {
		return
	}
	c.hbStarted = true
	go c.heartbeat()
}

func (c *Client) heartbeat() {
	t := time.NewTicker(c.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.closeCh:
			return
		case <-t.C:
		}
		c.mu.Lock()
		idle := time.Since(c.lastUse) >= c.cfg.HeartbeatInterval && c.conn != nil
		c.mu.Unlock()
		if !idle {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HeartbeatInterval)
		if err := c.Ping(ctx); err != nil {
			c.log.Debug("heartbeat failed", zap.Error(err))
		}
		cancel()
	}
}
