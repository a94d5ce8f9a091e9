package replica

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Consumer session reports (consumer_group.heartbeat_interval and
// consumer_group.session_timeout, cluster mode).
//
// Every node, every heartbeat_interval, sends the metadata primary a
// SessionReport (package vsr, session_report.go) over the replica plane:
// its replica id, its boot (the frame's incarnation) and the client ids of
// its connections that hold or are joining a consumer-group membership (a
// connection is marked before its first join is submitted, so a member
// whose join commits is named by every report gathered after the join
// left the node). A report is at most metadata.clients_table_max ids, cut
// into frames that fit message_bus.max_message_size; the primary's own
// report is handed over in process.
//
// The metadata primary keeps, by its own clock, a session per member
// (node, boot, client): it starts when the primary first sees the member
// in its state or when the primary's view starts (so a new primary never
// expires anyone at once after a failover), and every report of that
// node and boot naming the client renews it. A session not renewed for
// session_timeout expires:
//
//   - A node that sent no report for session_timeout (crashed, stopped,
//     cut off) has all its members expired by one EvictNodeMembers{node,
//     Before: newest expired boot + 1}, the op the restart and gossip rules
//     use.
//   - Members a reporting node no longer names (their connection closed
//     and the leave was lost, e.g. across a primary failover) are expired
//     by ExpireMembers{node, boot, clients}, which spares a member that
//     joined again through another node or boot meanwhile.
//
// Either op goes through consensus like every system command and is
// proposed again only if its members are still there another
// session_timeout later. Members of an unknown boot (joined before nodes
// were recorded) are never expired by reports. A single node sends no
// reports: its members' connections are all local, and the restart rule
// removes the members of its earlier runs.
//
// Gossip stays the other signal (consumer_group_evict.go): a node gossip reports dead or
// left for cluster.member_eviction_timeout loses its members even if that
// comes before session_timeout.

// sessionPoll is how often the primary looks for expired sessions: a
// tenth of the timeout, between 10 ms and 1 s.
func sessionPoll(timeout time.Duration) time.Duration { return evictionPoll(timeout) }

// sessionReportChunk bounds one report frame's client ids.
const sessionReportChunk = 4096

// startSessionReports starts the report sender and the primary's expiry
// loop (cluster mode with more than one node).
func (n *Node) startSessionReports() {
	if !n.clustered() || n.replicaCount < 2 {
		return
	}
	g := n.cfg.ConsumerGroup
	n.sessions.init(uint8(n.opts.ReplicaID), g.SessionTimeout.Duration, n.log)
	var seq uint64
	n.every(g.HeartbeatInterval.Duration, func() {
		seq++
		n.sendSessionReport(seq)
	})
	roster := make([]uint8, 0, len(n.cfg.Cluster.Nodes))
	for _, m := range n.cfg.Cluster.Nodes {
		roster = append(roster, uint8(m.ReplicaID))
	}
	var view *metadata.State
	var members []metadata.NodeMember
	n.every(sessionPoll(g.SessionTimeout.Duration), func() {
		lead := n.metadataLeadership()
		if v := n.store.View(); v != view && lead.known && lead.primary == uint8(n.opts.ReplicaID) {
			// Only the primary walks the groups, once per new view.
			view, members = v, v.NodeMembers()
		}
		for _, c := range n.sessions.poll(time.Now(), lead, roster, members) {
			n.submitSystem(c)
		}
	})
}

// reportedClients gathers the client ids this node's session report names:
// bound connections marked as (joining) consumer-group members, in
// ascending byte order, distinct, at most limit.
func (n *Node) reportedClients(limit int) (ids []vsr.Checksum, dropped int) {
	for _, c := range n.clients.list() {
		if !c.grouped.Load() {
			continue
		}
		c.mu.Lock()
		bound, client := c.bound, c.client
		c.mu.Unlock()
		if bound {
			ids = append(ids, toVSR(client))
		}
	}
	slices.SortFunc(ids, func(a, b vsr.Checksum) int { return bytes.Compare(a[:], b[:]) })
	ids = slices.Compact(ids)
	if len(ids) > limit {
		dropped = len(ids) - limit
		ids = ids[:limit]
	}
	return ids, dropped
}

// sendSessionReport sends report seq to the metadata primary this node
// knows of (none while its metadata replica is not in normal status: the
// new primary's clocks start fresh anyway).
func (n *Node) sendSessionReport(seq uint64) {
	lead := n.metadataLeadership()
	if !lead.known {
		return
	}
	ids, dropped := n.reportedClients(n.cfg.Metadata.ClientsTableMax)
	if dropped > 0 {
		n.limitLog.Warn("session_report", "consumer session report cut at metadata.clients_table_max: the members of the clients left out expire after consumer_group.session_timeout",
			zap.Int("clients_table_max", n.cfg.Metadata.ClientsTableMax), zap.Int("left_out", dropped))
	}
	self := uint8(n.opts.ReplicaID)
	if lead.primary == self {
		n.sessions.report(time.Now(), self, n.incarnation, fromVSRs(ids))
		n.sessions.sent(time.Now())
		return
	}
	per := min(sessionReportChunk, vsr.SessionReportMaxClients(n.maxFrame))
	for _, m := range sessionReportFrames(n.sender(vsr.MetadataGroup), seq, ids, per) {
		if err := n.plane.Send(lead.primary, m); err != nil {
			// The next report comes within heartbeat_interval; only a
			// session_timeout of silence expires anything.
			n.log.Debug("consumer session report not sent", zap.Uint8("primary", lead.primary), zap.Error(err))
			return
		}
	}
	n.sessions.sent(time.Now())
}

// sessionReportFrames cuts report seq into frames of at most per client
// ids (one empty frame when there are none).
func sessionReportFrames(s vsr.Sender, seq uint64, ids []vsr.Checksum, per int) []vsr.Message {
	chunks := max(1, (len(ids)+per-1)/per)
	out := make([]vsr.Message, 0, chunks)
	for i := range chunks {
		part := ids[min(i*per, len(ids)):min((i+1)*per, len(ids))]
		out = append(out, vsr.EncodeSessionReport(s, vsr.SessionReport{Sequence: seq, Chunk: uint16(i), Chunks: uint16(chunks), Clients: part}))
	}
	return out
}

// onSessionReport takes a report frame from a peer (replica-plane reader
// goroutine; never blocks beyond the tracker's lock).
func (n *Node) onSessionReport(from uint8, m vsr.Message) {
	if m.Header.Group() != vsr.MetadataGroup || m.Header.Replica() != from {
		n.log.Warn("dropping a malformed consumer session report", zap.Uint8("from", from),
			zap.Uint8("replica", m.Header.Replica()), zap.Uint64("group", m.Header.Group()))
		return
	}
	r := vsr.DecodedSessionReport(m)
	ids := make([]metadata.ClientID, len(r.Clients))
	for i, c := range r.Clients {
		ids[i] = fromVSR(c)
	}
	n.sessions.report(time.Now(), from, m.Header.Incarnation(), ids)
}

func fromVSR(c vsr.Checksum) wire.Uint128 {
	return wire.Uint128{Lo: binary.LittleEndian.Uint64(c[:]), Hi: binary.LittleEndian.Uint64(c[8:])}
}

func fromVSRs(cs []vsr.Checksum) []metadata.ClientID {
	out := make([]metadata.ClientID, len(cs))
	for i, c := range cs {
		out[i] = fromVSR(c)
	}
	return out
}

// sessionTracker is the metadata primary's view of the consumer sessions,
// on its own clock; the zero value is inert until init. Safe for
// concurrent use.
type sessionTracker struct {
	mu      sync.Mutex
	self    uint8
	timeout time.Duration
	log     *zap.Logger
	// active: this node is the metadata primary of view; the clocks below
	// started at that view's start.
	active bool
	view   uint32
	nodes  map[uint8]*reportingNode
	// members are the sessions, keyed by node, boot and client (a member
	// re-stamped with another boot starts a new one).
	members map[sessionKey]*memberSession
	// lastSent is when this node last handed a report over (test reads).
	lastSent time.Time
}

type reportingNode struct {
	last  time.Time // last report, or the view start
	fired time.Time // when its eviction was last proposed (zero: not since its last report)
}

type sessionKey = metadata.NodeMember

type memberSession struct {
	last  time.Time // last report naming it, or when first seen
	fired time.Time // when its expiry was last proposed
	seen  bool      // still in the state (poll's sweep mark)
}

func (t *sessionTracker) init(self uint8, timeout time.Duration, log *zap.Logger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.self, t.timeout, t.log = self, timeout, log
}

func (t *sessionTracker) sent(now time.Time) {
	t.mu.Lock()
	t.lastSent = now
	t.mu.Unlock()
}

// lastReportSent is when this node last sent (or handed itself) a report.
func (t *sessionTracker) lastReportSent() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastSent
}

// report renews the sessions of node's boot that the report names and
// the node's own clock. A report reaching a node that is not the primary
// (any more) changes nothing.
func (t *sessionTracker) report(now time.Time, node uint8, boot uint64, clients []metadata.ClientID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.active {
		return
	}
	nd := t.nodes[node]
	if nd == nil {
		return // not in the roster
	}
	nd.last, nd.fired = now, time.Time{}
	for _, c := range clients {
		if s := t.members[sessionKey{Node: node, Boot: boot, Client: c}]; s != nil {
			s.last, s.fired = now, time.Time{}
		}
	}
}

// poll follows the metadata leadership (starting every clock afresh when
// this node becomes primary of a new view, dropping everything when it is
// not primary), starts a session for each member seen for the first time,
// and returns the ops expiring the sessions older than the timeout.
func (t *sessionTracker) poll(now time.Time, lead leadership, roster []uint8, members []metadata.NodeMember) []metadata.Command {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !lead.known || lead.primary != t.self {
		t.active, t.nodes, t.members = false, nil, nil
		return nil
	}
	if !t.active || t.view != lead.view {
		t.active, t.view = true, lead.view
		t.nodes = make(map[uint8]*reportingNode, len(roster))
		for _, id := range roster {
			t.nodes[id] = &reportingNode{last: now}
		}
		t.members = map[sessionKey]*memberSession{}
	}
	for _, s := range t.members {
		s.seen = false
	}
	// members is ordered by node, boot, client; so are the ops.
	type stale struct {
		boot    uint64
		clients []metadata.ClientID
	}
	var out []metadata.Command
	flush := func(node uint8, expired []stale, all int) {
		if len(expired) == 0 {
			return
		}
		nd := t.nodes[node]
		n := 0
		for _, e := range expired {
			n += len(e.clients)
		}
		if n == all && now.Sub(nd.last) >= t.timeout {
			// The node itself is silent and every member of it expired.
			if !nd.fired.IsZero() && now.Sub(nd.fired) < t.timeout {
				return
			}
			nd.fired = now
			t.markFired(node, expired[len(expired)-1].boot, now)
			out = append(out, metadata.EvictNodeMembers{Node: node, Before: expired[len(expired)-1].boot + 1})
			t.log.Info("consumer sessions expired: the node sent no session report for consumer_group.session_timeout",
				zap.Uint8("node", node), zap.Int("members", n), zap.Duration("silent", now.Sub(nd.last)))
			return
		}
		for _, e := range expired {
			for len(e.clients) > 0 {
				part := e.clients[:min(len(e.clients), metadata.ExpireMembersMax)]
				e.clients = e.clients[len(part):]
				for _, c := range part {
					t.members[sessionKey{Node: node, Boot: e.boot, Client: c}].fired = now
				}
				out = append(out, metadata.ExpireMembers{Node: node, Boot: e.boot, Clients: part})
				t.log.Info("consumer sessions expired: the node's session reports stopped naming them for consumer_group.session_timeout",
					zap.Uint8("node", node), zap.Uint64("boot", e.boot), zap.Int("members", len(part)))
			}
		}
	}
	var expired []stale
	cur, all := -1, 0
	for _, m := range members {
		if t.nodes[m.Node] == nil {
			continue // not a roster node: nobody reports for it
		}
		if int(m.Node) != cur {
			if cur >= 0 {
				flush(uint8(cur), expired, all)
			}
			cur, expired, all = int(m.Node), nil, 0
		}
		all++
		s := t.members[m]
		if s == nil {
			s = &memberSession{last: now}
			t.members[m] = s
		}
		s.seen = true
		if now.Sub(s.last) < t.timeout || (!s.fired.IsZero() && now.Sub(s.fired) < t.timeout) {
			continue
		}
		if len(expired) == 0 || expired[len(expired)-1].boot != m.Boot {
			expired = append(expired, stale{boot: m.Boot})
		}
		e := &expired[len(expired)-1]
		e.clients = append(e.clients, m.Client)
	}
	if cur >= 0 {
		flush(uint8(cur), expired, all)
	}
	for k, s := range t.members {
		if !s.seen {
			delete(t.members, k)
		}
	}
	return out
}

// markFired stamps every session of node up to boot as proposed at now.
func (t *sessionTracker) markFired(node uint8, boot uint64, now time.Time) {
	for k, s := range t.members {
		if k.Node == node && k.Boot <= boot {
			s.fired = now
		}
	}
}
