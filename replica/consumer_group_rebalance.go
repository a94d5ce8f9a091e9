package replica

import (
	"slices"
	"time"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard"
)

// Cooperative consumer-group rebalancing (metadata: rebalanceCooperative,
// CompleteRevocation), as Iggy 0.9.
//
// A join takes partitions from the members holding more than their share.
// A partition that may hold messages its owner polled but has not
// committed is not moved at once: it stays the owner's (for commits; its
// polls of it get the resync sentinel) as a pending hand-off until
// CompleteRevocation moves it, so the joiner never receives messages the
// old owner is still working on before the owner committed them or
// consumer_group.rebalancing_timeout passed.
//
// In flight. Each partition remembers, per consumer group, the last offset
// a group poll on this node returned (package partition; polls are
// served by the node holding the consumer's connection) and publishes
// whether it is past the group's committed offset (partition.Stats.GroupState).
// The node admitting a join lists in the command (InFlight, prepare body
// version 4) the partitions of members whose connection is on this node
// (same node, same boot) that are in flight here, and every partition of
// members connected through other nodes, whose polls it cannot see: those
// are handed off when their own node says they are drained.
//
// Completion. Every node runs the hand-off loop (every handoffPoll): for
// each pending hand-off whose source member is connected here, once the
// partition is no longer in flight here (the member committed what it
// polled, or never polled it), it submits CompleteRevocation; the
// metadata primary submits it for every hand-off pending for at least
// rebalancing_timeout by its clock, against the hand-off's Since (the
// timestamp the primary gave the join). Apply reads no clock and ignores a
// completion no longer pending, so several nodes proposing the same one is
// harmless. A member that leaves, disconnects or is evicted with its node
// re-deals the group, which drops its pending hand-offs.

// handoffPoll is how often the hand-off loop runs.
const handoffPoll = 50 * time.Millisecond

// handoffRetry is how long the loop waits before proposing the same
// completion again while it is still pending.
const handoffRetry = time.Second

// groupInFlight reports whether group has polled, uncommitted messages in
// the partition, as far as this node's polls tell.
func (n *Node) groupInFlight(stream, topic, partition, group uint32) bool {
	in, _, _ := n.groupState(stream, topic, partition, group)
	return in
}

// groupState is the partition's published state for group on this node:
// whether it has polled, uncommitted messages, and its stored offset.
func (n *Node) groupState(stream, topic, partition, group uint32) (inFlight bool, committed uint64, has bool) {
	ns, err := shard.NewNamespace(stream, topic, partition)
	if err != nil {
		return false, 0, false
	}
	v, ok := n.partStats.Load(ns)
	if !ok {
		return false, 0, false
	}
	return v.(*partStats).GroupState(group)
}

// handOffWaitMax bounds how long the new owner's node holds back polls of
// a handed-off partition while its replica catches up with the old
// owner's commit.
const handOffWaitMax = 5 * time.Second

type handOffKey struct {
	ns    shard.Namespace
	group uint32
}

type handOffWait struct {
	offset uint64
	until  time.Time
}

// noteHandedOff records a completed hand-off after a commit (shard 0, as
// the metadata command applies on this node).
func (n *Node) noteHandedOff(e metadata.Effect) {
	ns, err := shard.NewNamespace(e.Stream, e.Topic, e.Partition)
	if err != nil {
		return
	}
	n.handOffs.Store(handOffKey{ns, e.Group}, handOffWait{offset: e.Offset, until: time.Now().Add(handOffWaitMax)})
}

// handOffPending reports whether a group poll of partition must wait: the
// partition was handed over after its old owner committed an offset this
// node's replica has not applied yet (for at most handOffWaitMax), so a
// poll from the next offset here would return what the old owner already
// consumed.
func (n *Node) handOffPending(stream, topic, partition, group uint32) bool {
	ns, err := shard.NewNamespace(stream, topic, partition)
	if err != nil {
		return false
	}
	k := handOffKey{ns, group}
	v, ok := n.handOffs.Load(k)
	if !ok {
		return false
	}
	w := v.(handOffWait)
	if _, committed, has := n.groupState(stream, topic, partition, group); (has && committed >= w.offset) || time.Now().After(w.until) {
		n.handOffs.CompareAndDelete(k, v)
		return false
	}
	return true
}

// localMember reports whether m's connection is on this node, this boot.
func (n *Node) localMember(m metadata.Member) bool {
	return m.Node == uint8(n.opts.ReplicaID) && m.Boot == n.incarnation
}

// joinInFlight stamps a join with the partitions that may hold polled,
// uncommitted messages (see above).
func (n *Node) joinInFlight(view *metadata.State, j metadata.JoinConsumerGroup) metadata.JoinConsumerGroup {
	j.InFlight = []uint32{}
	tp, g, code := view.ResolveGroup(j.Stream, j.Topic, j.Group)
	if code != 0 || tp == nil || g == nil {
		return j
	}
	for _, m := range g.Members {
		local := n.localMember(m)
		for _, p := range m.Partitions {
			if !local || n.groupInFlight(tp.StreamID, tp.ID, p, g.ID) {
				j.InFlight = append(j.InFlight, p)
			}
		}
	}
	slices.Sort(j.InFlight)
	return j
}

// startHandoffs runs the hand-off loop.
func (n *Node) startHandoffs() {
	proposed := map[metadata.CompleteRevocation]time.Time{}
	timeout := n.cfg.ConsumerGroup.RebalancingTimeout.Duration
	// A view without pending hand-offs is not walked again: views are
	// immutable, a new one comes with each metadata commit.
	var idle *metadata.State
	n.every(handoffPoll, func() {
		view := n.store.View()
		if view == idle {
			return
		}
		pending := view.PendingRevocations()
		if len(pending) == 0 {
			clear(proposed)
			idle = view
			return
		}
		now := time.Now()
		lead := n.metadataLeadership()
		primary := !n.clustered() || (lead.known && lead.primary == uint8(n.opts.ReplicaID))
		live := make(map[metadata.CompleteRevocation]bool, len(pending))
		for _, pr := range pending {
			c := metadata.CompleteRevocation{Stream: pr.Stream, Topic: pr.Topic, Group: pr.Group, Client: pr.Source.Client, Partition: pr.Partition}
			live[c] = true
			inFlight, committed, has := n.groupState(pr.Stream, pr.Topic, pr.Partition, pr.Group)
			drained := n.localMember(pr.Source) && !inFlight
			expired := primary && now.UnixMicro()-int64(pr.Since) >= timeout.Microseconds()
			if !drained && !expired {
				continue
			}
			if at, ok := proposed[c]; ok && now.Sub(at) < handoffRetry {
				continue
			}
			proposed[c] = now
			if drained {
				c.HasCommitted, c.Committed = has, committed
			}
			n.submitSystem(c)
		}
		for c := range proposed {
			if !live[c] {
				delete(proposed, c)
			}
		}
	})
}
