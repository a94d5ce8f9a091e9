package replica

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/intake"
	"github.com/iggo/iggo/replica/loginguard"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/transport"
	"github.com/iggo/iggo/wire"
)

// Glue between the node and the client-intake packages (intake,
// loginguard, ratelog): the one entry every transport's listener hands its
// connections to, and the serving path's reactions to refused frames and
// logins. The mechanisms live in those packages.

// unauthReadBuffer is a connection's read buffer before its login; it moves
// to readBufferSize after. Together with the first 4 KiB frame buffer it is
// what config.UnauthenticatedConnBytes charges.
const unauthReadBuffer = 4 << 10

// Kinds of rate-limited client log lines (ratelog); refusals are kinds per
// limit key (kind + ":" + key), so one limit's flood does not hide another's.
const (
	evAccepted         = "conn-accepted"
	evClosed           = "conn-closed"
	evRefused          = "conn-refused"
	evAcceptFailed     = "accept-failed"
	evFrameRefused     = "frame-refused"
	evHandshakeFailed  = "handshake-failed"
	evTransportRefused = "transport-refused"
	evLoginOK          = "login-ok"
	evLoginFailed      = "login-failed"
	acceptBackoffLo    = 5 * time.Millisecond
	acceptBackoffHi    = 250 * time.Millisecond
)

// initIntake builds the budgets, frame limits and login guard from the
// configuration (New); the connection cap needs the descriptor limit and
// is set by startIntake.
func (n *Node) initIntake() {
	b := n.cfg.MessageBus
	n.unauthBudget = intake.NewBudget(intake.KeyUnauthBytes, int64(b.UnauthenticatedBytesMax.Bytes()))
	n.limits = intake.Limits{
		MaxFrame:         n.maxFrame,
		UnauthFrameMax:   uint32(min(b.UnauthenticatedFrameMax.Bytes(), uint64(n.maxFrame))),
		HeaderTimeout:    b.FrameHeaderTimeout.Duration,
		BodyTimeout:      b.FrameBodyTimeout.Duration,
		Unauth:           n.unauthBudget,
		InFlight:         intake.NewBudget(intake.KeyInFlightBytes, int64(b.InflightBytesMax.Bytes())),
		UnauthReadBuffer: unauthReadBuffer,
		ReadBuffer:       readBufferSize,
		KeepBuffer:       frameBufferKeep,
	}
	l := n.cfg.Login
	slots := l.VerificationsMax
	if slots == 0 {
		slots = loginguard.DefaultVerifications(runtime.GOMAXPROCS(0), loginguard.MemoryLimit(),
			uint64(n.admit.Argon2.MemoryKiB)<<10)
	}
	t := l.Throttle
	n.logins = loginguard.New(loginguard.Config{Verifications: slots, QueueMax: l.VerificationQueueMax,
		QueueTimeout: l.VerificationQueueTimeout.Duration, Throttle: t.Enabled,
		AddressBurst: t.AddressBurst, AddressInterval: t.AddressInterval.Duration,
		UserBurst: t.UserBurst, UserInterval: t.UserInterval.Duration, DelayMax: t.DelayMax.Duration, EntriesMax: t.EntriesMax})
}

// startIntake raises the descriptor limit and derives the connection cap
// (Start, before anything under path is touched).
func (n *Node) startIntake() error {
	b := n.cfg.MessageBus
	d := intake.RaiseNoFile()
	limit, reserve, err := intake.ClientConnections(b.ConnectionsMax, d.Soft, b.DescriptorsReserved)
	if err != nil {
		return err
	}
	n.admission = intake.NewAdmission(intake.AdmissionConfig{ConnectionsMax: limit,
		UnauthPerAddress: b.UnauthenticatedPerAddressMax, UnauthBase: int64(unauthReadBuffer + 4096), Unauth: n.unauthBudget})
	fields := []zap.Field{zap.Uint64("soft", d.Soft), zap.Uint64("hard", d.Hard), zap.Int("connections_max", limit),
		zap.Int("descriptors_reserved", reserve), zap.Int("login_verifications", n.logins.Config().Verifications)}
	if d.Before != d.Soft {
		fields = append(fields, zap.Uint64("raised_from", d.Before))
	}
	if d.Err != nil {
		n.log.Warn("descriptor limit not raised", append(fields, zap.Error(d.Err))...)
	} else {
		n.log.Info("descriptor limit", fields...)
	}
	return nil
}

// serveClient is where every transport hands an accepted client connection:
// admission, then the hand-off to the next shard before a byte is read.
func (n *Node) serveClient(transport string, nc net.Conn) {
	src := intake.AddrKey(nc.RemoteAddr())
	ticket, refusal := n.admission.Admit(transport, src)
	if refusal != nil {
		n.clientLog.Warn(evRefused+":"+refusal.Key, "connection refused", zap.String("limit", refusal.Key), zap.Int64("value", refusal.Limit),
			zap.String("transport", transport), zap.String("addr", nc.RemoteAddr().String()))
		_ = nc.Close()
		return
	}
	k := 0 // QUIC stays on shard 0, where its endpoint is
	if transport != transportQUIC {
		k = n.handoff.Next()
	}
	cn := newConn(n, k, nc, transport, ticket)
	if err := n.rt.Send(k, &task{req: &adoptConnReq{conn: cn}}); err != nil {
		// A full inbox refuses the hand-off; the client reconnects.
		n.log.Warn("connection refused: shard inbox full", zap.Int("shard", k), zap.Error(err))
		cn.abort()
	}
}

// acceptFailed paces an accept loop after err; false: the node stops.
func (n *Node) acceptFailed(bo *intake.AcceptBackoff, transport string, err error) bool {
	d := bo.Failed()
	n.clientLog.Warn(evAcceptFailed, "accept failed; backing off", zap.String("transport", transport), zap.Error(err),
		zap.Duration("backoff", d), zap.Bool("out_of_descriptors", intake.OutOfDescriptors(err)))
	select {
	case <-n.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// idleLimit bounds the wait for the next frame: a consumer-group member
// must show itself within the heartbeat deadline, an unauthenticated
// connection within unauthenticated_idle_timeout; others may idle.
func (c *conn) idleLimit() time.Duration {
	hb := c.n.cfg.Heartbeat
	if stale := time.Duration(float64(hb.Interval.Duration) * 1.2); hb.Enabled && stale > 0 && c.member.Load() {
		return stale
	}
	if !c.rd.Authenticated() {
		return c.n.cfg.MessageBus.UnauthenticatedIdleTimeout.Duration
	}
	return 0
}

// readFailed reacts to a frame the reader refused or could not read; true
// keeps serving the connection.
func (c *conn) readFailed(err error) bool {
	var (
		fe *wire.FrameSizeError
		le *intake.LimitError
		te *intake.TimeoutError
		pe *transport.ProtocolError
	)
	switch {
	case errors.As(err, &le) && le.Answerable:
		h, herr := wire.DecodeRequestHeader(le.Header, c.n.maxFrame)
		c.n.clientLog.Warn(evFrameRefused+":"+le.Key, "request refused: budget exhausted", c.fields(zap.String("limit", le.Key),
			zap.Int64("value", le.Limit), zap.Uint32("size", le.Size))...)
		if herr != nil {
			return false
		}
		if err := c.rd.Discard(le); err != nil {
			return c.readFailed(err)
		}
		return c.status(&h, wire.CodeTransientNotAccepted)
	case errors.As(err, &le):
		c.n.clientLog.Warn(evFrameRefused+":"+le.Key, "closing connection: frame refused", c.fields(zap.String("limit", le.Key),
			zap.Int64("value", le.Limit), zap.Uint32("size", le.Size))...)
	case errors.As(err, &te) && te.Phase == "idle" && c.member.Load():
		c.log.Info("evicting a silent consumer-group member")
		c.evictRaw(wire.EvictStaleClient)
	case errors.As(err, &te):
		key := map[string]string{"idle": intake.KeyUnauthIdleTimeout, "header": intake.KeyFrameHeaderTimeout,
			"body": intake.KeyFrameBodyTimeout}[te.Phase]
		c.n.clientLog.Info(evFrameRefused+":"+key, "closing connection: read deadline passed", c.fields(zap.String("limit", key),
			zap.Duration("value", te.After), zap.Int("bytes", te.Got))...)
	case errors.As(err, &fe):
		c.n.clientLog.Info(evFrameRefused, "closing connection: frame size out of range", c.fields(zap.String("limit", "message_bus.max_message_size"),
			zap.Uint32("max", fe.Max), zap.Uint32("size", fe.Size))...)
	case errors.As(err, &pe):
		c.n.clientLog.Warn(evTransportRefused, "closing connection: message refused", c.fields(zap.String("reason", pe.Reason))...)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
	default:
		c.log.Debug("connection read failed", zap.Error(err))
	}
	return false
}

// fields are the audit fields naming the connection.
func (c *conn) fields(extra ...zap.Field) []zap.Field {
	return append([]zap.Field{zap.String("transport", c.transportName), zap.String("addr", c.addr), zap.Uint32("client", c.id)}, extra...)
}

// credentials checks reg's credentials against view under the login
// guard. It reports the user (nil when refused), the code the check gave,
// whether the token form decided, and how the guard let the attempt end.
func (c *conn) credentials(view *metadata.State, reg *wire.Register) (*metadata.User, wire.Code, bool, loginguard.Verdict) {
	var (
		u     *metadata.User
		code  wire.Code
		token bool
	)
	a := loginguard.Attempt{Addr: c.src}
	if p := reg.Password; p != nil {
		if view.UserByName(p.Username) != nil {
			a.User = p.Username
		}
		a.Costly = !view.PasswordCached(p.Username, p.Password)
	}
	verdict, _ := c.n.logins.Check(c.n.stop, a, func() bool {
		if p := reg.Password; p != nil {
			u, code = view.AuthenticatePassword(p.Username, p.Password)
			if code == wire.CodeUserInactive {
				return true // the password was right
			}
		}
		if u == nil && reg.Token != nil {
			token = true
			u, code = view.AuthenticateToken(reg.Token.Token, nowMicros())
		}
		return u != nil || code == wire.CodeUserInactive
	})
	return u, code, token, verdict
}

// passwordLogin checks username/password for a login that did not come on
// a conn of its own (the HTTP API) under the login guard, and logs the
// outcome like a binary login. A throttled attempt is InvalidCredentials,
// one without a verification slot TransientNotAccepted.
func (n *Node) passwordLogin(transport, addr string, view *metadata.State, username, password string) (*metadata.User, wire.Code) {
	a := loginguard.Attempt{Costly: !view.PasswordCached(username, password)}
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		a.Addr = intake.AddrKey(net.TCPAddrFromAddrPort(ap))
	}
	if view.UserByName(username) != nil {
		a.User = username
	}
	var (
		u    *metadata.User
		code wire.Code
	)
	verdict, _ := n.logins.Check(n.stop, a, func() bool {
		u, code = view.AuthenticatePassword(username, password)
		return u != nil || code == wire.CodeUserInactive
	})
	fields := []zap.Field{zap.String("transport", transport), zap.String("addr", addr), zap.String("user", username)}
	switch {
	case verdict == loginguard.Throttled:
		u, code = nil, wire.CodeInvalidCredentials
		n.clientLog.Info(evLoginFailed, "login failed", append(fields, zap.String("reason", "throttled (login.throttle)"))...)
	case verdict == loginguard.Busy || verdict == loginguard.Stopped:
		u, code = nil, wire.CodeTransientNotAccepted
		n.clientLog.Info(evLoginFailed, "login failed", append(fields, zap.String("reason", "no password verification slot in time (login.verification_queue_*)"))...)
	case u == nil:
		n.clientLog.Info(evLoginFailed, "login failed", append(fields, zap.Stringer("reason", code))...)
	default:
		n.clientLog.Info(evLoginOK, "login succeeded", append(fields, zap.Uint32("user_id", u.ID))...)
	}
	return u, code
}

// loginName is the user name a login gave, for the audit line.
func loginName(reg *wire.Register) string {
	if reg.Password != nil {
		return reg.Password.Username
	}
	return "(token)"
}

func (c *conn) loginFailed(reg *wire.Register, reason string) {
	c.n.clientLog.Info(evLoginFailed, "login failed", c.fields(zap.String("user", loginName(reg)), zap.String("reason", reason))...)
}

// loggedIn moves the connection out of the unauthenticated limits.
func (c *conn) loggedIn(u *metadata.User, token bool) {
	c.ticket.Authenticated()
	c.rd.SetAuthenticated(true)
	c.n.clientLog.Info(evLoginOK, "login succeeded", c.fields(zap.String("user", u.Username), zap.Uint32("user_id", u.ID),
		zap.Bool("token", token))...)
}
