package replica

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/replica/plane"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Cluster mode (cluster.enabled = true). Every consensus group — the
// metadata group and each partition — has one replica per roster member;
// this node is replica --replica-id of each. Shard 0 runs the replica
// plane (package plane): it binds the node's tcp_replica port, dials the
// peers and authenticates them; each inbound frame goes to the bounded
// inbox of the shard that owns its group (metadata → shard 0, a partition
// → shard.OwningShard of its namespace), where the group's replica steps
// it. A frame whose group this node does not host (yet) is dropped: VSR
// retransmits, and the group appears once the metadata op creating it
// applies here.
//
// Requests reaching a node whose replica is a backup are forwarded to the
// group's primary (vsr Forward / ForwardReply frames) and the reply relayed
// back, so a client may use any node. A forwarded request that gets no
// answer within cluster.heartbeat_timeout is answered 58
// (TransientNotAccepted), which clients retry.

// clustered reports whether the node runs with more than itself.
func (n *Node) clustered() bool { return n.cfg.Cluster.Enabled }

// clusterMember returns this node's roster entry.
func clusterMember(cfg *config.Config, id int) (config.ClusterNode, error) {
	for _, m := range cfg.Cluster.Nodes {
		if m.ReplicaID == id {
			return m, nil
		}
	}
	ids := make([]int, 0, len(cfg.Cluster.Nodes))
	for _, m := range cfg.Cluster.Nodes {
		ids = append(ids, m.ReplicaID)
	}
	return config.ClusterNode{}, fmt.Errorf("replica: --replica-id %d is not in cluster.nodes (replica ids %v)", id, ids)
}

// clientListenAddr is where the client TCP listener binds: in cluster mode
// the host of tcp.address with the roster's ports.tcp of this node.
func (n *Node) clientListenAddr() string { return n.listenAddr(n.cfg.TCP.Address, n.member.Ports.TCP) }

// listenAddr is a client listener's bind address: addr, or in cluster mode
// its host with this node's roster port when the roster has one.
func (n *Node) listenAddr(addr string, rosterPort *uint16) string {
	if !n.clustered() || rosterPort == nil {
		return addr
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(*rosterPort)))
}

// planeTransport is the Transport of a cluster node.
type planeTransport struct{ t *plane.Transport }

func (p planeTransport) Send(_ uint64, e vsr.Envelope) {
	// ErrPeerDown and ErrQueueFull are counted by the transport; VSR
	// retransmits whatever matters.
	_ = p.t.Send(e.To, e.Message)
}

// newPlane builds the replica-plane transport (not started).
func (n *Node) newPlane() error {
	pc, err := plane.FromConfig(n.cfg, uint8(n.opts.ReplicaID))
	if err != nil {
		return err
	}
	pc.Listener = n.opts.ReplicaListener
	pc.Logger = n.log
	pc.Deliver = n.deliverFrame
	if n.atRest.sealed() {
		pc.DataKeyID = codec.KeyID(n.atRest.key)
	}
	t, err := plane.New(pc)
	if err != nil {
		return err
	}
	if t.ClusterID() != n.clusterID {
		return errors.New("replica: the replica plane and the consensus groups disagree on the cluster id")
	}
	n.plane = t
	n.transport = planeTransport{t}
	return nil
}

// deliverFrame routes an inbound replica-plane frame to the shard owning
// its group (called on a link's reader goroutine; never blocks).
func (n *Node) deliverFrame(from uint8, group uint64, m vsr.Message) error {
	if m.Header.Command() == vsr.CmdSessionReport {
		n.onSessionReport(from, m)
		return nil
	}
	s := 0
	if group != vsr.MetadataGroup {
		ns := shard.Namespace(group)
		if !ns.Valid() {
			return fmt.Errorf("replica: frame for group %#x, not a partition namespace", group)
		}
		s = shard.OwningShard(ns, len(n.shards))
	}
	return n.rt.Send(s, &task{req: &frameReq{from: from, msg: m}})
}

// sender is how this node signs forwarded frames of group g.
func (n *Node) sender(group uint64) vsr.Sender {
	return vsr.Sender{Cluster: n.clusterID, Group: group, Replica: uint8(n.opts.ReplicaID),
		ReplicaCount: uint8(n.replicaCount), Incarnation: n.incarnation}
}

// onFrame handles a replica-plane frame on the shard owning its group.
func (sh *shardLoop) onFrame(f *frameReq) {
	m := f.msg
	g := sh.groups[m.Header.Group()]
	usable := g != nil && g.Usable()
	switch m.Header.Command() {
	case vsr.CmdForward:
		if !usable {
			sh.n.sendPlane(f.from, vsr.EncodeForwardReply(sh.n.sender(m.Header.Group()), vsr.ForwardOriginOf(m),
				vsr.Reply{Status: vsr.StatusTransientNotAccepted}, 0))
			return
		}
		sh.serveForward(g, f.from, m)
	case vsr.CmdForwardReply:
		if g != nil {
			g.ForwardReplied(m)
		}
	default:
		if usable {
			g.Step(m)
		}
	}
}

func (n *Node) sendPlane(to uint8, m vsr.Message) {
	if n.plane != nil {
		_ = n.plane.Send(to, m)
	}
}

// serveForward submits a request a backup forwarded and answers it once
// the replica replied. It is never forwarded again: a replica that is no
// longer primary refuses it, and the origin's client retries.
func (sh *shardLoop) serveForward(g *consensus.Group, from uint8, m vsr.Message) {
	req := vsr.ForwardedRequest(m)
	origin := vsr.ForwardOriginOf(m)
	n := sh.n
	// Early: the reply goes out when the op commits, before this node's
	// segment write, and the commit broadcast follows at the end of the
	// group's Ready loop, so the backup can apply (and answer) meanwhile.
	t := &task{early: true, then: func(t *task) {
		rp := vsr.Reply{Op: t.op, Status: t.vstatus, Eviction: t.evict, Body: t.reply}
		n.sendPlane(from, vsr.EncodeForwardReply(n.sender(g.ID()), origin, rp, t.status))
		if t.status == 0 && t.vstatus == vsr.StatusOK && g.Usable() {
			// Let the backup apply the op now rather than at the next
			// commit heartbeat.
			g.CommitSoon()
		}
	}}
	req.WallClock = max(req.WallClock, nowMicros())
	g.SubmitHere(t, req)
}

// clusterBootstrap queues root's creation on a first boot of a cluster:
// every node proposes it with its own credentials and the first to commit
// wins (the others' are refused with UserAlreadyExists). The node's own
// session registers with the first system command.
func (n *Node) clusterBootstrap() error {
	if n.store.View().Bootstrapped() {
		return nil
	}
	user, pass, generated, err := n.rootCredentials()
	if err != nil {
		return err
	}
	hash, err := metadata.HashPassword(pass, n.admit.Argon2)
	if err != nil {
		return err
	}
	limits := metadata.DefaultLimits()
	limits.MaxTokensPerUser = uint32(n.cfg.PersonalAccessToken.MaxTokensPerUser)
	t := &task{req: &systemReq{cmd: metadata.Bootstrap{RootUsername: user, RootPasswordHash: hash, Limits: limits}}}
	t.then = func(t *task) {
		switch {
		case t.status != 0:
			n.log.Info("root user not created by this node (another node's proposal committed first)", zap.Stringer("code", wire.Code(t.status)))
		case generated:
			n.log.Warn("root user created with a generated password; it is shown only this once",
				zap.String("username", user), zap.String("password", pass))
		default:
			n.log.Info("root user created", zap.String("username", user))
		}
	}
	if err := n.rt.Send(0, t); err != nil {
		return fmt.Errorf("replica: queueing the root user's creation: %w", err)
	}
	return nil
}

// rejoining reports whether a partition created by metadata op op must
// rejoin: on a node started with --fresh, every partition the cluster
// created before this node caught up may hold ops this node acknowledged
// before the wipe.
func (n *Node) rejoining(op uint64) bool {
	return n.fresh && (n.freshTarget == 0 || op <= n.freshTarget)
}

// quarantineDir holds partition storage a cluster node's caught-up
// metadata does not name.
const quarantineDir = "quarantine"

// quarantineUnknownStorage runs at boot: a partition directory the
// recovered metadata does not name is kept when its revision (the
// incarnation file) is above the metadata's revision — the metadata is
// behind its peers' and will name it once it caught up — and otherwise
// (a partition deleted or replaced, storage without an incarnation) moved
// to {path}/quarantine/{stream}-{topic}-{partition}-{unix ns} and logged
// as an error, never deleted: an operator decides.
func (n *Node) quarantineUnknownStorage(view *metadata.State) {
	keep := map[string]bool{}
	for _, st := range view.Streams() {
		for _, tp := range st.Topics() {
			for _, p := range tp.Partitions {
				keep[partitionDir(n.cfg.Path, st.ID, tp.ID, p.ID)] = true
			}
		}
	}
	osfs := vfs.NewOS()
	root := filepath.Join(n.cfg.Path, "streams")
	streams, _ := osfs.ReadDir(root)
	for _, s := range streams {
		topics, _ := osfs.ReadDir(filepath.Join(root, s.Name(), "topics"))
		for _, t := range topics {
			parts, _ := osfs.ReadDir(filepath.Join(root, s.Name(), "topics", t.Name(), "partitions"))
			for _, p := range parts {
				pdir := filepath.Join(root, s.Name(), "topics", t.Name(), "partitions", p.Name())
				if keep[pdir] {
					continue
				}
				if rev, ok := partition.ReadIncarnation(osfs, pdir); ok && rev > view.Revision() {
					n.log.Info("partition storage newer than the recovered metadata is kept (the metadata group catches up from its peers)",
						zap.String("dir", pdir), zap.Uint64("revision", rev), zap.Uint64("metadata_revision", view.Revision()))
					continue
				}
				dst, err := n.quarantine(osfs, pdir, fmt.Sprintf("%s-%s-%s", s.Name(), t.Name(), p.Name()))
				if err != nil {
					n.log.Error("partition storage the metadata does not name could not be quarantined", zap.String("dir", pdir), zap.Error(err))
					continue
				}
				n.log.Error("partition storage the metadata does not name was quarantined; inspect and remove it",
					zap.String("dir", pdir), zap.String("moved_to", dst))
			}
		}
	}
}

// quarantine moves dir to {path}/quarantine/{label}-{unix ns} and returns
// where it went.
func (n *Node) quarantine(fsys vfs.FS, dir, label string) (string, error) {
	qdir := filepath.Join(n.cfg.Path, quarantineDir)
	dst := filepath.Join(qdir, fmt.Sprintf("%s-%d", label, time.Now().UnixNano()))
	if err := vfs.MkdirAllSync(fsys, qdir, 0o755); err != nil {
		return "", err
	}
	if err := fsys.Rename(dir, dst); err != nil {
		return "", err
	}
	if err := fsys.SyncDir(qdir); err != nil {
		return "", err
	}
	return dst, fsys.SyncDir(filepath.Dir(dir))
}
