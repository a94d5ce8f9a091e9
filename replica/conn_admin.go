package replica

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/loginguard"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

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
	}
	pbody, err := metadata.EncodeOp(metadata.Meta{UserID: uid, Client: h.Client}, adm.Command)
	if err != nil {
		return c.status(h, errCode(err))
	}
	c.t.kind = tkMeta
	c.t.req = vsr.Request{Client: toVSR(h.Client), Session: h.Session, Request: h.Request,
		Operation: uint8(h.Operation), User: uid, Body: pbody}
	if !c.run(0) {
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

// nonReplicated serves ping, reads, polls and offset reads. Reads come from
// the published metadata view on this goroutine; partition reads go to the
// owning shard.
func (c *conn) nonReplicated(h *wire.RequestHeader, body []byte) bool {
	code := h.Code
	if code == wire.CmdPing {
		return c.ok(h, nil)
	}
	c.mu.Lock()
	bound := c.bound
	c.mu.Unlock()
	if !bound {
		return c.status(h, wire.CodeUnauthenticated)
	}
	switch code {
	case wire.CmdLoginUser, wire.CmdLoginWithPersonalAccessToken:
		return c.evict(h, wire.EvictMalformedLogin)
	case wire.CmdPollMessages:
		return c.poll(h, body)
	case wire.CmdFlushUnsavedBuffer:
		return c.status(h, wire.CodeFeatureUnavailable)
	}
	if !code.Known() || code.Operation() != wire.OpNonReplicated {
		return c.status(h, wire.CodeInvalidCommand)
	}
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return c.refuseBody(h, "request body", err)
	}
	view := c.n.store.View()
	uid := c.user()
	deny := func() bool { return c.status(h, wire.CodeUnauthorized) }
	switch r := req.(type) {
	case *wire.GetStats:
		if !view.Allowed(uid, metadata.ActionGetStats, 0, 0) {
			return deny()
		}
		s := c.n.stats(view)
		s.Extended = r.Extended
		return c.okPayload(h, &s)
	case *wire.GetSnapshotFile:
		if !view.Allowed(uid, metadata.ActionGetSnapshot, 0, 0) {
			return deny()
		}
		zip, err := c.n.snapshotZip(r.Compression, r.Types)
		if err != nil {
			c.log.Error("snapshot failed", zap.Error(err))
			return c.status(h, wire.CodeError)
		}
		if len(zip)+wire.HeaderSize > int(c.n.maxFrame) {
			return c.status(h, wire.CodeSnapshotFileCompletionFailed)
		}
		return c.ok(h, zip)
	case *wire.GetClusterMetadata:
		if !view.Allowed(uid, metadata.ActionGetClusterMetadata, 0, 0) {
			return deny()
		}
		m := c.n.clusterMetadata(c.addr)
		return c.okPayload(h, &m)
	case *wire.DescribeOptions:
		if !view.Allowed(uid, metadata.ActionDescribeOptions, 0, 0) {
			return deny()
		}
		var d wire.OptionDescriptors
		if r.Scope == wire.ScopeTopic {
			d = metadata.DescribeTopicOptions(c.n.admit.TopicDefaults)
		}
		return c.okPayload(h, d)
	case *wire.GetMe:
		if !view.Allowed(uid, metadata.ActionGetMe, 0, 0) {
			return deny()
		}
		d := c.details(view)
		return c.okPayload(h, &d)
	case *wire.GetClient:
		if !view.Allowed(uid, metadata.ActionGetClient, 0, 0) {
			return deny()
		}
		other := c.n.clients.get(r.ClientID)
		if other == nil {
			return c.ok(h, nil)
		}
		d := other.details(view)
		return c.okPayload(h, &d)
	case *wire.GetClients:
		if !view.Allowed(uid, metadata.ActionGetClients, 0, 0) {
			return deny()
		}
		var out wire.ClientInfos
		for _, o := range c.n.clients.list() {
			out = append(out, o.details(view).ClientInfo)
		}
		return c.okPayload(h, out)
	case *wire.GetUser:
		target := view.ResolveUser(r.UserID)
		if target == nil {
			if !view.Allowed(uid, metadata.ActionGetUser, 0, 0) {
				return deny()
			}
			return c.ok(h, nil)
		}
		if !view.AllowedOnUser(uid, metadata.ActionGetUser, target.ID) {
			return deny()
		}
		d := metadata.UserDetailsRecord(target)
		return c.okPayload(h, &d)
	case *wire.GetUsers:
		if !view.Allowed(uid, metadata.ActionGetUsers, 0, 0) {
			return deny()
		}
		var out wire.Users
		for _, u := range view.Users() {
			out = append(out, metadata.UserRecord(u))
		}
		return c.okPayload(h, out)
	case *wire.GetPersonalAccessTokens:
		if !view.Allowed(uid, metadata.ActionGetPersonalAccessTokens, 0, 0) {
			return deny()
		}
		u := view.User(uid)
		if u == nil {
			return deny()
		}
		return c.okPayload(h, metadata.TokenRecords(u))
	case *wire.GetStream:
		st := view.ResolveStream(r.StreamID)
		if st == nil {
			return c.ok(h, nil)
		}
		if !view.Allowed(uid, metadata.ActionGetStream, st.ID, 0) {
			return deny()
		}
		d := metadata.StreamDetailsRecord(st, c.n)
		return c.okPayload(h, &d)
	case *wire.GetStreams:
		if !view.Allowed(uid, metadata.ActionGetStreams, 0, 0) {
			return deny()
		}
		var out wire.Streams
		for _, st := range view.Streams() {
			out = append(out, metadata.StreamRecord(st, c.n))
		}
		return c.okPayload(h, out)
	case *wire.GetTopic:
		st, tp, code := view.ResolveTopic(r.StreamID, r.TopicID)
		if code != 0 {
			if st != nil && !view.Allowed(uid, metadata.ActionGetTopics, st.ID, 0) {
				return deny()
			}
			return c.ok(h, nil)
		}
		if !view.Allowed(uid, metadata.ActionGetTopic, st.ID, tp.ID) {
			return deny()
		}
		d := metadata.TopicDetailsRecord(tp, c.n)
		return c.okPayload(h, &d)
	case *wire.GetTopics:
		st := view.ResolveStream(r.StreamID)
		if st == nil {
			return c.okPayload(h, wire.Topics(nil))
		}
		if !view.Allowed(uid, metadata.ActionGetTopics, st.ID, 0) {
			return deny()
		}
		var out wire.Topics
		for _, tp := range st.Topics() {
			out = append(out, metadata.TopicRecord(tp, c.n))
		}
		return c.okPayload(h, out)
	case *wire.GetConsumerGroup:
		tp, g, code := view.ResolveGroup(r.StreamID, r.TopicID, r.GroupID)
		if tp == nil {
			return c.status(h, code)
		}
		if !view.Allowed(uid, metadata.ActionGetConsumerGroup, tp.StreamID, tp.ID) {
			return deny()
		}
		if g == nil {
			return c.ok(h, nil)
		}
		d := metadata.GroupDetailsRecord(tp, g)
		return c.okPayload(h, &d)
	case *wire.GetConsumerGroups:
		st, tp, code := view.ResolveTopic(r.StreamID, r.TopicID)
		if code != 0 {
			return c.status(h, code)
		}
		if !view.Allowed(uid, metadata.ActionGetConsumerGroups, st.ID, tp.ID) {
			return deny()
		}
		var out wire.ConsumerGroups
		for _, g := range tp.Groups() {
			out = append(out, metadata.GroupRecord(tp, g))
		}
		return c.okPayload(h, out)
	case *wire.SyncConsumerGroup:
		// Iggy 0.9 answers an empty reply (no assignment) when the stream,
		// topic or group does not resolve or the caller is no member.
		tp, g, _ := view.ResolveGroup(r.StreamID, r.TopicID, r.GroupID)
		if tp == nil {
			return c.ok(h, nil)
		}
		if !view.Allowed(uid, metadata.ActionSyncConsumerGroup, tp.StreamID, tp.ID) {
			return deny()
		}
		if g == nil {
			return c.ok(h, nil)
		}
		a, ok := metadata.AssignmentRecord(g, c.clientID())
		if !ok {
			return c.ok(h, nil)
		}
		return c.okPayload(h, &a)
	case *wire.GetConsumerOffset:
		return c.getOffset(h, r)
	}
	// A known NonReplicated code without a handler of its own.
	return c.ok(h, nil)
}

// details is this connection's client record.
func (c *conn) details(view *metadata.State) wire.ClientDetails {
	c.mu.Lock()
	uid, client, bound := c.userID, c.client, c.bound
	c.mu.Unlock()
	d := wire.ClientDetails{ClientInfo: wire.ClientInfo{ClientID: c.id, UserID: uid, Transport: c.transport, Address: c.addr}}
	if bound {
		for _, g := range view.Memberships(client) {
			d.Groups = append(d.Groups, wire.ClientGroup{StreamID: g.Stream, TopicID: g.Topic, GroupID: g.Group})
		}
	}
	d.ConsumerGroupsCount = uint32(len(d.Groups))
	return d
}

// ---------------------------------------------------------------------------
// Client registry.

// clientRegistry tracks live connections for GET_CLIENT(S), GET_STATS,
// session ends on user deletion, and shutdown.
type clientRegistry struct {
	mu   sync.RWMutex
	m    map[uint32]*conn
	seq  atomic.Uint32
	wg   sync.WaitGroup
	shut bool
}

func (r *clientRegistry) init() { r.m = map[uint32]*conn{} }

func (r *clientRegistry) nextID() uint32 { return r.seq.Add(1) }

func (r *clientRegistry) add(c *conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shut {
		return false
	}
	r.m[c.id] = c
	r.wg.Add(1)
	c.n.metrics.ConnectionOpened(c.transport)
	return true
}

func (r *clientRegistry) remove(c *conn) {
	r.mu.Lock()
	_, ok := r.m[c.id]
	delete(r.m, c.id)
	r.mu.Unlock()
	if ok {
		r.wg.Done()
	}
}

func (r *clientRegistry) get(id uint32) *conn {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.m[id]
}

func (r *clientRegistry) count() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.m)
}

func (r *clientRegistry) list() []*conn {
	r.mu.RLock()
	out := make([]*conn, 0, len(r.m))
	for _, c := range r.m {
		out = append(out, c)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *conn) int { return int(a.id) - int(b.id) })
	return out
}

// setLoginToken records the token a login in flight uses (byToken), or
// that it uses none, so a token's deletion ends the sessions opened with it
// (see endTokenSessions).
func (c *conn) setLoginToken(h metadata.TokenHash, byToken bool) {
	c.mu.Lock()
	c.token, c.byToken = h, byToken
	c.mu.Unlock()
}

// revoked reports whether this connection's session lost its credentials
// while its login was committing: the user deleted or deactivated, or the
// token it logged in with deleted. It runs after the session is bound, so
// with endUserSessions and endTokenSessions (which run after the view that
// removed the credentials is published) every such session ends.
func (c *conn) revoked() bool {
	c.mu.Lock()
	uid, tok, byToken := c.userID, c.token, c.byToken
	c.mu.Unlock()
	view := c.n.store.View()
	u := view.User(uid)
	gone := u == nil || u.Status != metadata.UserActive
	if !gone && byToken {
		owner, _, ok := view.TokenByHash(tok)
		gone = !ok || owner.ID != uid
	}
	if gone {
		c.log.Info("session ended: its credentials were revoked while it logged in")
	}
	return gone
}

// endRevoked ends a connection whose session lost its credentials: at once
// when no request is in flight, else after that request's reply (the
// serve loop checks revoked after clearing busy; this sets it before
// reading busy, so one of the two always closes it).
func (c *conn) endRevoked() {
	c.revokedSession.Store(true)
	if c.busy.Load() {
		return
	}
	_ = c.nc.SetReadDeadline(time.Now())
	_ = c.nc.Close()
}

// endTokenSessions closes the connections whose session was opened (or is
// being opened) with the personal access token h, once it is deleted or
// expired: a session lasts only as long as the credential it was opened
// with.
func (r *clientRegistry) endTokenSessions(h metadata.TokenHash) {
	for _, c := range r.list() {
		c.mu.Lock()
		hit := c.byToken && c.token == h
		c.mu.Unlock()
		if hit {
			c.log.Info("session ended: its personal access token was deleted")
			c.endRevoked()
		}
	}
}

// endUserSessions closes the connections of a deleted or deactivated user.
func (r *clientRegistry) endUserSessions(user uint32) {
	for _, c := range r.list() {
		c.mu.Lock()
		hit := c.bound && c.userID == user
		c.mu.Unlock()
		if hit {
			c.endRevoked()
		}
	}
}

func (r *clientRegistry) closeAll() {
	r.mu.Lock()
	r.shut = true
	conns := make([]*conn, 0, len(r.m))
	for _, c := range r.m {
		conns = append(conns, c)
	}
	r.mu.Unlock()
	for _, c := range conns {
		_ = c.nc.Close()
	}
}

func (r *clientRegistry) wait() {
	done := make(chan struct{})
	go func() {
		r.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
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
