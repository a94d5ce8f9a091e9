package replica

import (
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

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
