package replica

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

// Clients: the node's registry of live connections (GET_CLIENT(S),
// GET_STATS, shutdown), a connection's client record, and the end of
// sessions whose credentials went away.

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
