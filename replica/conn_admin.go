package replica

import (
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/loginguard"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Admin commands of a connection: the replicated metadata changes (users,
// tokens, streams, topics, partitions, consumer groups and their
// membership), admitted on the connection's goroutine and committed by the
// metadata group on shard 0. Reads are conn_reads.go; the live client
// registry is clients.go.

// metadataOp admits a replicated metadata command on this connection's
// goroutine (permissions, options, password hashing, token minting) and
// submits it to the metadata group on shard 0.
func (c *conn) metadataOp(h *wire.RequestHeader, body []byte) bool {
	req, err := wire.DecodeRequestBody(h.Code, body)
	if err != nil {
		return c.status(h, errCode(err))
	}
	view := c.n.store.View()
	uid := c.user()
	adm, code := c.admitMetadata(view, uid, req)
	if code != 0 {
		return c.status(h, code)
	}
	if j, ok := adm.Command.(metadata.JoinConsumerGroup); ok {
		adm.Command = c.n.joinInFlight(view, j)
		c.grouped.Store(true) // before the join leaves: every later report names it
	}
	pbody, err := metadata.EncodeOp(metadata.Meta{UserID: uid, Client: h.Client}, adm.Command)
	if err != nil {
		return c.status(h, errCode(err))
	}
	c.reqs.meta.req = vsr.Request{Client: toVSR(h.Client), Session: h.Session, Request: h.Request,
		Operation: uint8(h.Operation), User: uid, Body: pbody}
	if !c.run(0, &c.reqs.meta) {
		return false
	}
	if c.t.status != 0 {
		return c.reject(h, wire.Code(c.t.status))
	}
	switch c.t.vstatus {
	case vsr.StatusOK:
	case vsr.StatusEvicted:
		c.mu.Lock()
		c.bound = false
		c.mu.Unlock()
		return c.evict(h, wire.EvictionReason(c.t.evict))
	default:
		return c.reject(h, wire.Code(c.t.vstatus))
	}
	if code := replyCode(c.t.reply); code != 0 {
		c.changed(view, uid, adm.Command, wire.Code(code), nil)
		return c.reject(h, wire.Code(code))
	}
	c.changed(view, uid, adm.Command, 0, c.t.reply[4:])
	switch adm.Command.(type) {
	case metadata.JoinConsumerGroup:
		c.member.Store(true)
	case metadata.LeaveConsumerGroup:
		c.member.Store(len(c.n.store.View().Memberships(h.Client)) > 0)
	case metadata.CreatePersonalAccessToken:
		return c.okPayload(h, &wire.RawPersonalAccessToken{Token: adm.Token})
	}
	return c.ok(h, c.t.reply[4:])
}

// admitMetadata admits req; the commands that run Argon2 (a password
// change verifies the current password and hashes the new one, a user
// create hashes one) take a verification slot of the login guard first, as
// logins do, so they cannot hold more memory than login.verifications_max
// allows. A password change is also throttled per address and user like a
// login, since a wrong current password is a guess.
func (c *conn) admitMetadata(view *metadata.State, uid uint32, req wire.Request) (metadata.Admitted, wire.Code) {
	var a loginguard.Attempt
	switch r := req.(type) {
	case *wire.ChangePassword:
		a = loginguard.Attempt{Addr: c.src, Costly: true}
		if u := view.ResolveUser(r.UserID); u != nil {
			a.User = u.Username
		}
	case *wire.CreateUser:
		a = loginguard.Attempt{Addr: c.src, Costly: true}
	default:
		return metadata.Admit(view, uid, req, c.n.admit)
	}
	var (
		adm  metadata.Admitted
		code wire.Code
	)
	verdict, _ := c.n.logins.Check(c.n.stop, a, func() bool {
		adm, code = metadata.Admit(view, uid, req, c.n.admit)
		if cp, ok := adm.Command.(metadata.ChangePassword); ok {
			return code == 0 && cp.VerifiedHash != ""
		}
		return true // a user create is not a guess: nothing to throttle
	})
	switch verdict {
	case loginguard.Throttled:
		c.n.clientLog.Info(evLoginFailed, "password change refused", c.fields(zap.String("user", a.User), zap.String("reason", "throttled (login.throttle)"))...)
		return metadata.Admitted{}, wire.CodeInvalidCredentials
	case loginguard.Busy, loginguard.Stopped:
		return metadata.Admitted{}, wire.CodeTransientNotAccepted
	}
	return adm, code
}
