package replica

import (
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/gossip"
	"github.com/iggo/iggo/replica/metadata"
)

// Consumer-group members of a crashed or restarted node.
//
// A member's connection lives on one node, and only that node submits its
// DisconnectClient (logout, socket close). Every join records the node and
// its incarnation (metadata.Member.Node, Boot: the admitting node stamps
// them into the command), so members whose node went away are found by
// node rather than by connection:
//
//   - Restart: a node submits EvictNodeMembers{self, its incarnation} once
//     its metadata replica reached normal status after boot (a single node
//     during boot). Every member an earlier run of it registered is
//     removed; members of this run have Boot == incarnation and stay.
//   - Death: the metadata primary watches gossip. A roster node reported
//     dead or left continuously for cluster.member_eviction_timeout gets
//     EvictNodeMembers{node, Before: the primary's clock (µs) when it
//     first saw the node down}, once per death (re-armed when the node is
//     seen alive again).
//   - Silence: the metadata primary expires the members a node's consumer
//     session reports have not named for consumer_group.session_timeout,
//     a silent node's all at once (consumer_group_sessions.go). Whichever of gossip and
//     the reports acts first removes the members; the other's op then
//     finds none.
//
// Clocks: Before comes from the primary's clock and Boot from the member
// node's. A node that restarts after the primary saw it go down has a
// larger incarnation, so the members of its new run are kept, provided the
// clocks agree to better than the time between the crash and the restart
// (a restart sooner than that is covered by the restart rule). Using the
// time the node was first seen down rather than the time of the decision
// keeps the members of a node that restarted during the timeout but was
// not seen alive yet when the primary decided.
//
// A client that reconnects through another node and joins again is
// re-stamped with that node (metadata: a repeated join from another node
// or boot), so the eviction follows where its connection lives now.
//
// Members recorded before this scheme (snapshot or prepare body version 1)
// have an unknown boot and are never removed by node; a single node still
// disconnects them one by one at boot, as before.

// evictOwnMembers queues the restart rule's command once, after the
// metadata replica reached normal status (cluster mode; shard 0's tick).
func (m *metaSM) evictOwnMembers() {
	if m.bootEvicted || !m.n.clustered() || !m.n.metadataLeadership().known {
		return
	}
	m.bootEvicted = true
	m.enqueueSystem(metadata.EvictNodeMembers{Node: uint8(m.n.opts.ReplicaID), Before: m.n.incarnation}, nil)
}

// evictionPoll is how often the primary compares gossip with the eviction
// timeout: a tenth of it, between 10 ms and 1 s.
func evictionPoll(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 10*time.Millisecond), time.Second)
}

// memberEvictor is the death rule's state, owned by its polling goroutine.
type memberEvictor struct {
	self    uint8
	timeout time.Duration
	log     *zap.Logger
	// submit queues a system command on shard 0; an error (full inbox)
	// leaves the death armed for the next poll.
	submit func(metadata.Command) error
	down   map[uint8]*downNode
}

func newMemberEvictor(self uint8, timeout time.Duration, log *zap.Logger, submit func(metadata.Command) error) *memberEvictor {
	return &memberEvictor{self: self, timeout: timeout, log: log, submit: submit, down: map[uint8]*downNode{}}
}

// downNode is a roster node seen dead or left: since when (this node's
// clock), and whether its members were already evicted for this death.
type downNode struct {
	since time.Time
	fired bool
}

func (n *Node) startMemberEviction() {
	if !n.clustered() || n.ci == nil {
		return
	}
	e := newMemberEvictor(uint8(n.opts.ReplicaID), n.cfg.Cluster.MemberEvictionTimeout.Duration, n.log,
		func(c metadata.Command) error { return n.rt.Send(0, &task{req: &systemReq{cmd: c}}) })
	n.every(evictionPoll(e.timeout), func() {
		g := n.ci.current()
		if g == nil {
			return
		}
		e.observe(time.Now(), g.Members(), n.metadataLeadership())
	})
}

// observe applies the death rule to one gossip reading taken at now.
func (e *memberEvictor) observe(now time.Time, members []gossip.Member, lead leadership) {
	primary := lead.known && lead.primary == e.self
	for _, m := range members {
		if m.ReplicaID == e.self {
			continue
		}
		if m.Liveness != gossip.LivenessDead && m.Liveness != gossip.LivenessLeft {
			delete(e.down, m.ReplicaID) // alive (or never heard from): re-arm
			continue
		}
		d := e.down[m.ReplicaID]
		if d == nil {
			since := m.Since
			if since.IsZero() || since.After(now) {
				since = now
			}
			d = &downNode{since: since}
			e.down[m.ReplicaID] = d
		}
		if d.fired || !primary || now.Sub(d.since) < e.timeout {
			continue
		}
		cmd := metadata.EvictNodeMembers{Node: m.ReplicaID, Before: uint64(d.since.UnixMicro())}
		if err := e.submit(cmd); err != nil {
			e.log.Warn("member eviction not queued (retrying)", zap.Uint8("node", m.ReplicaID), zap.Error(err))
			continue
		}
		d.fired = true
		e.log.Info("evicting the consumer-group members of a node gossip reports down",
			zap.Uint8("node", m.ReplicaID), zap.Stringer("liveness", m.Liveness), zap.Time("down_since", d.since))
	}
}
