package replica

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/audit"
	"github.com/iggo/iggo/replica/intake"
	"github.com/iggo/iggo/replica/loginguard"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// readBufferSize is the connection's socket read buffer once logged in.
// Frames larger than it are read straight into the frame buffer.
const readBufferSize = 64 << 10

// frameBufferKeep bounds the frame buffer a connection keeps between
// requests; a larger one (after a big send) is released.
const frameBufferKeep = 16 << 20

// conn serves one client connection. Its goroutine belongs to the shard the
// listener handed the connection to: it reads frames, decodes them, checks
// the session and permissions against the published metadata view, and
// forwards replicated work to the owning shard's inbox, waiting for the
// answer before reading the next frame (exactly one reply per request, in
// order).
type conn struct {
	n     *Node
	shard int
	nc    net.Conn
	id    uint32
	addr  string
	log   *zap.Logger
	// transport is what GET_CLIENT(S) report (wire.TransportTCP, ...) and
	// the label of the request metrics; transportName is its admission and
	// log name ("tcp").
	transport     uint8
	transportName string
	src           netip.Prefix
	ticket        *intake.Ticket
	since         time.Time
	rd            *intake.Reader
	// regRefused says why the last register did not bind a session (for
	// the login-failed line).
	regRefused string

	ebuf []byte // a send's stored form (encryption at rest, single node)
	dbuf []byte // a poll's decoded records (encryption at rest)
	wbuf []byte
	pbuf []byte
	iov  net.Buffers
	t    task         // the one task forwarding every request to a shard
	reqs connRequests // its request values, one per kind

	mu      sync.Mutex // guards the session fields read by other goroutines
	bound   bool
	client  wire.Uint128
	session uint64
	userID  uint32
	// token is the hash of the personal access token the session was opened
	// with (byToken), recorded before the Register is submitted so that its
	// deletion ends the session even while the login is in flight.
	token   metadata.TokenHash
	byToken bool

	audit   *audit.Client
	reqBody []byte // body of the request being served (for denial lines)

	member atomic.Bool // holds a consumer-group membership (heartbeat eviction applies)
	// grouped: a consumer-group join was submitted on this connection, so
	// the node's consumer session reports name its client (consumer_group_sessions.go).
	grouped atomic.Bool
	ended   atomic.Bool
	// busy is set while a request is served; revokedSession once the session's
	// credentials are gone (endRevoked): an idle connection closes at once,
	// a busy one right after its reply, which may answer the very request
	// that revoked them (a CLI deleting the token it logged in with).
	busy           atomic.Bool
	revokedSession atomic.Bool
	rr             uint32   // group polls without a partition: round robin over owned partitions
	lp             connWait // long polling (conn_wait.go)
}

// newConn prepares a connection handed over by transport (its name and
// wire code), admitted under ticket (released when the connection ends;
// nil for the node's local sessions).
func newConn(n *Node, shardIdx int, nc net.Conn, transport string, ticket *intake.Ticket) *conn {
	c := &conn{n: n, shard: shardIdx, nc: nc, addr: nc.RemoteAddr().String(), transport: wireTransport(transport),
		transportName: transport, ticket: ticket, src: intake.AddrKey(nc.RemoteAddr()), since: time.Now()}
	c.id = n.clients.nextID()
	c.log = n.log.Named("conn").With(zap.Uint32("client", c.id), zap.String("addr", c.addr))
	c.audit = n.audit.Client(zap.Uint32("client", c.id), zap.String("addr", c.addr))
	c.t.done = make(chan struct{}, 1)
	return c
}

// abort closes a connection that never started serving.
func (c *conn) abort() {
	_ = c.nc.Close()
	c.ticket.Release()
}

func (c *conn) serve() {
	if !c.handshake() {
		c.abort()
		return
	}
	if !c.n.clients.add(c) {
		c.abort()
		return
	}
	defer c.finish()
	c.rd = intake.NewReader(c.nc, &c.n.limits)
	c.n.clientLog.Info(evAccepted, "connection accepted", c.fields()...)
	for {
		frame, err := c.rd.Next(c.idleLimit())
		if err != nil {
			if c.readFailed(err) {
				continue
			}
			return
		}
		c.busy.Store(true)
		start := time.Now()
		ok := c.handle(frame)
		c.n.metrics.ObserveRequest(c.transport, frame, time.Since(start))
		c.busy.Store(false)
		c.rd.Release()
		if !ok || c.revokedSession.Load() {
			return
		}
		if cap(c.reqs.poll.buf) > frameBufferKeep {
			c.reqs.poll.buf = nil
		}
		if cap(c.ebuf) > frameBufferKeep {
			c.ebuf = nil
		}
		if cap(c.dbuf) > frameBufferKeep {
			c.dbuf = nil
		}
	}
}

// finish is the implicit logout of a closed socket: the session ends and
// the client leaves every consumer group.
func (c *conn) finish() {
	c.ended.Store(true)
	_ = c.nc.Close()
	c.rd.Release()
	c.ticket.Release()
	c.n.clients.remove(c)
	c.mu.Lock()
	bound, client := c.bound, c.client
	closed := c.fields(zap.Duration("duration", time.Since(c.since)))
	if bound {
		closed = append(closed, zap.Uint32("user_id", c.userID))
	}
	c.bound = false
	c.mu.Unlock()
	c.n.clientLog.Info(evClosed, "connection closed", closed...)
	if bound && len(c.n.store.View().Memberships(client)) > 0 {
		c.n.submitSystem(metadata.DisconnectClient{Client: client})
	}
}

// handle processes one request frame; false closes the connection.
func (c *conn) handle(frame []byte) bool {
	h, err := wire.DecodeRequestHeader(frame, c.n.maxFrame)
	if err != nil || int(h.Size) != len(frame) {
		// Iggy drops such frames without answering, which would wedge a
		// lockstep client until its deadline; closing tells it at once.
		c.log.Info("closing connection: malformed request header", zap.Error(err))
		return false
	}
	body := frame[wire.HeaderSize:]
	c.reqBody = body
	defer func() { c.reqBody = nil }() // do not pin a large frame while idle
	if h.Client.IsZero() || !h.Operation.ClientAllowed() {
		c.log.Info("closing connection: request header refused", zap.Stringer("operation", h.Operation))
		return false
	}
	if err := wire.VerifyRequestChecksum(&h, body); err != nil {
		return c.status(&h, wire.CodeInvalidFormat)
	}
	switch h.Operation {
	case wire.OpRegister:
		if h.Validate() != nil {
			return c.evict(&h, wire.EvictSessionError)
		}
		return c.login(&h, body)
	case wire.OpNonReplicated:
		return c.nonReplicated(&h, body)
	case wire.OpLogout:
		return c.logout(&h)
	}
	c.mu.Lock()
	bound, session, client := c.bound, c.session, c.client
	c.mu.Unlock()
	switch {
	case !bound || h.Session == 0:
		return c.evict(&h, wire.EvictNoSession)
	case h.Client != client:
		// Another client id than this connection's session: a request must
		// not act under a session it did not open.
		return c.evict(&h, wire.EvictSessionError)
	case h.Request == 0:
		return c.evict(&h, wire.EvictInvalidRequestBody)
	case h.Session < session:
		return c.evict(&h, wire.EvictSessionTooLow)
	case h.Session > session:
		return c.evict(&h, wire.EvictSessionError)
	}
	switch {
	case h.Operation == wire.OpSendMessages:
		return c.send(&h, body)
	case h.Operation == wire.OpStoreConsumerOffset:
		return c.storeOffset(&h, body)
	case h.Operation == wire.OpDeleteConsumerOffset:
		return c.deleteOffset(&h, body)
	case h.Operation == wire.OpDeleteSegments:
		return c.deleteSegments(&h, body)
	case h.Operation.IsMetadata():
		return c.metadataOp(&h, body)
	}
	return c.status(&h, wire.CodeInvalidCommand)
}

// ---------------------------------------------------------------------------
// Replies.

func (c *conn) write(b []byte) bool {
	if _, err := c.nc.Write(b); err != nil {
		c.log.Debug("connection write failed", zap.Error(err))
		return false
	}
	return true
}

func (c *conn) ok(h *wire.RequestHeader, payload []byte) bool {
	c.wbuf = wire.AppendReply(c.wbuf[:0], h, payload)
	return c.write(c.wbuf)
}

// okPayload encodes p and replies with it.
func (c *conn) okPayload(h *wire.RequestHeader, p wire.ReplyPayload) bool {
	var err error
	c.pbuf, err = p.AppendTo(c.pbuf[:0])
	if err != nil {
		c.log.Error("encoding a reply failed", zap.Error(err))
		return c.status(h, wire.CodeError)
	}
	return c.ok(h, c.pbuf)
}

func (c *conn) status(h *wire.RequestHeader, code wire.Code) bool {
	c.denied(h, code)
	c.wbuf = wire.AppendStatusReply(c.wbuf[:0], h, code)
	return c.write(c.wbuf)
}

func (c *conn) reject(h *wire.RequestHeader, code wire.Code) bool {
	c.denied(h, code)
	c.wbuf = wire.AppendRejectionReply(c.wbuf[:0], h, code)
	return c.write(c.wbuf)
}

func (c *conn) evict(h *wire.RequestHeader, reason wire.EvictionReason) bool {
	c.wbuf = wire.AppendEviction(c.wbuf[:0], wire.Prefix{Cluster: h.Cluster}, h.Client, reason, 0, 0)
	return c.write(c.wbuf)
}

// evictRaw sends an eviction outside any request (stale member).
func (c *conn) evictRaw(reason wire.EvictionReason) {
	c.mu.Lock()
	client := c.client
	c.mu.Unlock()
	if client.IsZero() {
		client = wire.Uint128{Lo: uint64(c.id)}
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.wbuf = wire.AppendEviction(c.wbuf[:0], wire.Prefix{}, client, reason, 0, 0)
	c.write(c.wbuf)
}

// errCode is the Iggy code a decode or admission error carries.
func errCode(err error) wire.Code {
	if code, ok := wire.CodeOf(err); ok && code != 0 {
		return code
	}
	return wire.CodeInvalidCommand
}

// ---------------------------------------------------------------------------
// Forwarding to shards.

// run sends the connection's task with request r to shard i and waits for
// the answer. false means the node is stopping (the connection closes).
func (c *conn) run(i int, r request) bool {
	c.t.req = r
	c.t.resetResult()
	if err := c.n.rt.Send(i, &c.t); err != nil {
		if errors.Is(err, shard.ErrStopped) {
			return false
		}
		c.t.status = uint32(vsr.StatusTransientNotAccepted)
		return true
	}
	select {
	case <-c.t.done:
		return true
	case <-c.n.stop:
		// The shard still owns the task; the connection closes without
		// touching it again.
		select {
		case <-c.t.done:
			return true
		case <-time.After(c.n.cfg.Sharding.ShutdownDrainTimeout.Duration + time.Second):
			return false
		}
	}
}

func (c *conn) user() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.userID
}

func (c *conn) clientID() wire.Uint128 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

func toVSR(u wire.Uint128) vsr.Checksum {
	var c vsr.Checksum
	binary.LittleEndian.PutUint64(c[:], u.Lo)
	binary.LittleEndian.PutUint64(c[8:], u.Hi)
	return c
}

// ---------------------------------------------------------------------------
// Session.

func (c *conn) login(h *wire.RequestHeader, body []byte) bool {
	reg, err := wire.DecodeRegister(body)
	if err != nil {
		return c.evict(h, wire.EvictMalformedLogin)
	}
	lo, hi := wire.AcceptWindow(wire.CurrentProtocol)
	if !wire.Accepts(wire.CurrentProtocol, lo, reg.Version.Protocol) {
		c.wbuf = wire.AppendEviction(c.wbuf[:0], wire.Prefix{Cluster: h.Cluster}, h.Client,
			wire.EvictIncompatibleProtocol, uint32(lo), uint32(hi))
		return c.write(c.wbuf)
	}
	c.mu.Lock()
	bound, session, uid, client := c.bound, c.session, c.userID, c.client
	c.mu.Unlock()
	if bound && client == h.Client {
		return c.loginReply(h, uid, session)
	}
	if reg.Password == nil && reg.Token == nil {
		return c.evict(h, wire.EvictMalformedLogin)
	}
	view := c.n.store.View()
	if c.n.clustered() && !view.Bootstrapped() {
		// No metadata quorum has created root yet, or this node's
		// metadata is still catching up after a restart: the client
		// replays the login rather than being told its credentials are
		// wrong.
		return c.reject(h, wire.CodeTransientNotAccepted)
	}
	u, code, token, verdict := c.credentials(view, &reg)
	switch verdict {
	case loginguard.Stopped:
		return false
	case loginguard.Busy:
		c.loginFailed(&reg, "no password verification slot in time (login.verification_queue_*)")
		return c.reject(h, wire.CodeTransientNotAccepted)
	case loginguard.Throttled:
		c.loginFailed(&reg, "throttled (login.throttle)")
		return c.evict(h, wire.EvictInvalidCredentials)
	}
	switch {
	case code == wire.CodeUserInactive:
		c.loginFailed(&reg, "user inactive")
		return c.evict(h, wire.EvictUserInactive)
	case u == nil && token:
		c.loginFailed(&reg, "invalid token")
		return c.evict(h, wire.EvictInvalidToken)
	case u == nil:
		c.loginFailed(&reg, "invalid credentials")
		return c.evict(h, wire.EvictInvalidCredentials)
	}
	var tok *metadata.TokenHash
	if token { // the token form decided (credentials)
		th := metadata.HashToken(reg.Token.Token)
		tok = &th
	}
	c.regRefused = ""
	ok := c.register(h, u.ID, tok, bound, client)
	c.mu.Lock()
	registered := c.bound && c.client == h.Client && c.userID == u.ID
	c.mu.Unlock()
	switch {
	case registered && ok:
		c.loggedIn(u, token)
	case c.regRefused != "":
		c.loginFailed(&reg, c.regRefused)
	}
	return ok
}

// register binds this connection to a new session of an authenticated user
// (the Register operation of the metadata group; tok: the personal access
// token it logged in with, whose deletion ends the session) and answers
// the login; bound and client describe the session the connection held
// before.
func (c *conn) register(h *wire.RequestHeader, uid uint32, tok *metadata.TokenHash, bound bool, client wire.Uint128) bool {
	body5 := []byte{registerUser, 0, 0, 0, 0}
	var th metadata.TokenHash
	if tok != nil {
		th = *tok
		body5[0] = registerToken
		body5 = append(body5, th[:]...)
	}
	c.setLoginToken(th, tok != nil)
	binary.LittleEndian.PutUint32(body5[1:], uid)
	c.reqs.meta.req = vsr.Request{Client: toVSR(h.Client), Operation: vsr.OperationRegister, User: uid, Body: body5}
	if !c.run(0, &c.reqs.meta) {
		return false
	}
	if c.t.status != 0 {
		return c.reject(h, wire.Code(c.t.status))
	}
	switch c.t.vstatus {
	case vsr.StatusOK:
	case vsr.StatusEvicted:
		return c.evict(h, wire.EvictionReason(c.t.evict))
	default:
		return c.reject(h, wire.Code(c.t.vstatus))
	}
	switch replyCode(c.t.reply) {
	case 0:
	case uint32(wire.CodeUserInactive):
		c.regRefused = "user inactive"
		return c.evict(h, wire.EvictUserInactive)
	case uint32(wire.CodeInvalidPersonalAccessToken):
		c.regRefused = "invalid token (deleted or expired at commit)"
		return c.evict(h, wire.EvictInvalidToken)
	default:
		c.regRefused = "refused by the metadata group"
		return c.evict(h, wire.EvictInvalidCredentials)
	}
	if bound {
		c.leaveGroupsOf(client)
	}
	c.mu.Lock()
	c.bound, c.client, c.session, c.userID = true, h.Client, c.t.op, uid
	c.mu.Unlock()
	c.member.Store(false)
	if c.revoked() {
		return false
	}
	return c.loginReply(h, uid, c.t.op)
}

func (c *conn) loginReply(h *wire.RequestHeader, uid uint32, session uint64) bool {
	r := wire.LoginReply{UserID: uid, Session: session, ServerProtocol: wire.CurrentProtocol, ServerVersion: ServerVersion}
	return c.okPayload(h, &r)
}

func (c *conn) logout(h *wire.RequestHeader) bool {
	c.mu.Lock()
	bound, client := c.bound, c.client
	c.bound, c.session, c.userID = false, 0, 0
	c.client = wire.Uint128{}
	c.token, c.byToken = metadata.TokenHash{}, false
	c.mu.Unlock()
	c.member.Store(false)
	c.rd.SetAuthenticated(false)
	if bound {
		c.leaveGroupsOf(client)
	}
	return c.ok(h, nil)
}

// leaveGroupsOf removes client from every consumer group and waits for the
// rebalance to commit, so the next request sees it.
func (c *conn) leaveGroupsOf(client wire.Uint128) {
	if len(c.n.store.View().Memberships(client)) == 0 {
		return
	}
	c.reqs.system.cmd = metadata.DisconnectClient{Client: client}
	c.run(0, &c.reqs.system)
	c.reqs.system.cmd = nil
}
