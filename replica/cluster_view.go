package replica

import (
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/vsr"
)

// Cluster view: what this node knows about the roles of its consensus
// groups, for the cluster-metadata reply, logs and tests. The shard that
// owns a group publishes its role whenever it changes (view, status,
// primary); the accessors below read those publications from any goroutine
// without locks on the hot path and never touch a vsr.Replica.
//
// A single node reports itself (replica 0) as the primary of every group.
// Replica ids are the roster's replica_id values (0..n-1); a group's
// replica index is the node's replica id.

// GroupRole is one consensus group's role on this node.
type GroupRole struct {
	// Group is vsr.MetadataGroup or the partition's packed namespace.
	Group uint64
	// Metadata is set for the metadata group; Stream, Topic and Partition
	// for a partition group.
	Metadata                 bool
	Stream, Topic, Partition uint32
	// View is the group's current view on this node and Primary the
	// replica id of its primary in that view.
	View    uint32
	Primary int
	// IsPrimary: this node is the primary and in normal status.
	IsPrimary bool
	// Status is the replica's status: "normal", "view_change",
	// "recovering", "recovering_head".
	Status string
	// Op and Commit are the head op and the highest op known committed
	// when the role was last published; Applied the highest op applied.
	Op, Commit, Applied uint64
}

// roleBoard holds the published roles, by group id.
type roleBoard struct {
	m sync.Map // uint64 → *atomic.Pointer[GroupRole]
}

func (b *roleBoard) slot(group uint64) *atomic.Pointer[GroupRole] {
	if v, ok := b.m.Load(group); ok {
		return v.(*atomic.Pointer[GroupRole])
	}
	v, _ := b.m.LoadOrStore(group, new(atomic.Pointer[GroupRole]))
	return v.(*atomic.Pointer[GroupRole])
}

func (b *roleBoard) get(group uint64) (GroupRole, bool) {
	v, ok := b.m.Load(group)
	if !ok {
		return GroupRole{}, false
	}
	r := v.(*atomic.Pointer[GroupRole]).Load()
	if r == nil {
		return GroupRole{}, false
	}
	return *r, true
}

func (b *roleBoard) remove(group uint64) { b.m.Delete(group) }

// Role implements consensus.Host: it publishes the group's role (called
// by the driver after driving the group, when its view, status or primary
// changed or its commit point moved on) and logs role changes.
func (sh *shardLoop) Role(g *consensus.Group, rc consensus.RoleChange) {
	info, id := rc.Info, g.ID()
	if rc.ViewUp {
		sh.n.metrics.ViewChange(g.Kind())
	}
	r := &GroupRole{Group: id, View: info.View, Primary: int(info.Primary), IsPrimary: info.IsPrimary && info.Status == "normal",
		Status: info.Status, Op: info.Op, Commit: info.CommitMax, Applied: info.CommitMin}
	if id == vsr.MetadataGroup {
		r.Metadata = true
	} else {
		ns := shard.Namespace(id)
		r.Stream, r.Topic, r.Partition = ns.Stream(), ns.Topic(), ns.Partition()
	}
	sh.n.roles.slot(id).Store(r)
	if id == vsr.MetadataGroup && sh.n.fresh && sh.n.freshTarget == 0 && info.Status == "normal" {
		// Every op committed before the wipe is in the log of the view
		// this replica joined, up to its head: the commit point a StartView
		// names may lag ops an earlier primary committed.
		sh.n.freshTarget = max(info.CommitMax, info.ViewHead, 1)
	}
	if rc.Changed && sh.n.clustered() {
		g.Log().Info("group role", zap.Uint32("view", info.View), zap.String("status", info.Status),
			zap.Int("primary", int(info.Primary)), zap.Bool("is_primary", r.IsPrimary), zap.Uint64("commit", info.CommitMax))
	}
}

// ReplicaID is this node's replica id (0 for a single node).
func (n *Node) ReplicaID() int { return n.opts.ReplicaID }

// ReplicaCount is the number of replicas of every group (the roster size;
// 1 for a single node).
func (n *Node) ReplicaCount() int { return n.replicaCount }

// MetadataPrimary returns the replica id of the metadata group's primary
// (the cluster "leader") and the view it leads, as this node knows it.
// Before the node booted its metadata group it returns the primary of view
// 0.
func (n *Node) MetadataPrimary() (replicaID int, view uint32) {
	if r, ok := n.roles.get(vsr.MetadataGroup); ok {
		return r.Primary, r.View
	}
	return int(vsr.PrimaryIndex(0, vsr.MetadataGroup, uint8(n.replicaCount))), 0
}

// PartitionPrimary returns the replica id of the primary of partition
// (stream, topic, partition) and its view as this node knows it; ok is
// false when the node does not host that partition (yet).
func (n *Node) PartitionPrimary(stream, topic, partition uint32) (replicaID int, view uint32, ok bool) {
	ns, err := shard.NewNamespace(stream, topic, partition)
	if err != nil {
		return 0, 0, false
	}
	r, ok := n.roles.get(uint64(ns))
	if !ok {
		return 0, 0, false
	}
	return r.Primary, r.View, true
}

// GroupRoles returns every group this node hosts with its published role:
// the metadata group first, then partitions by (stream, topic, partition).
func (n *Node) GroupRoles() []GroupRole {
	var out []GroupRole
	n.roles.m.Range(func(_, v any) bool {
		if r := v.(*atomic.Pointer[GroupRole]).Load(); r != nil {
			out = append(out, *r)
		}
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Metadata != b.Metadata {
			return a.Metadata
		}
		return a.Group < b.Group
	})
	return out
}

// PeerLink is the state of this node's replica-plane link to one peer.
type PeerLink struct {
	ReplicaID int
	Name      string
	// Addr is the peer's replica-plane address (ip:tcp_replica).
	Addr      string
	Connected bool
}

// PeerLinks returns the replica-plane links to every other roster member
// (empty for a single node), by replica id.
func (n *Node) PeerLinks() []PeerLink {
	if n.plane == nil {
		return nil
	}
	var out []PeerLink
	for _, m := range n.cfg.Cluster.Nodes {
		if m.ReplicaID == n.opts.ReplicaID {
			continue
		}
		addr := ""
		if m.Ports.TCPReplica != nil {
			addr = net.JoinHostPort(m.IP, strconv.Itoa(int(*m.Ports.TCPReplica)))
		}
		out = append(out, PeerLink{ReplicaID: m.ReplicaID, Name: m.Name, Addr: addr,
			Connected: n.plane.Connected(uint8(m.ReplicaID))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ReplicaID < out[j].ReplicaID })
	return out
}
