package replica

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/gossip"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// metadataLeadership reads the metadata group's published role (cluster
// view): its primary and view, current only while the replica is in normal
// status.
func (n *Node) metadataLeadership() leadership {
	r, ok := n.roles.get(vsr.MetadataGroup)
	if !ok {
		return leadership{}
	}
	return leadership{known: r.Status == "normal", primary: uint8(r.Primary), view: r.View}
}

// leadership is who leads the metadata group as one node sees it.
type leadership struct {
	// known: the node's metadata replica is in normal status, so primary
	// and view are current; otherwise (view change, recovery) it cannot
	// tell.
	known   bool
	primary uint8
	view    uint32
}

// clusterMetadata answers GET_CLUSTER_METADATA for a client at address
// client (its socket's remote address).
func (n *Node) clusterMetadata(client string) wire.ClusterMetadata {
	if !n.cfg.Cluster.Enabled {
		return n.singleNodeMetadata()
	}
	var peer netip.Addr
	if ap, err := netip.ParseAddrPort(client); err == nil {
		peer = ap.Addr()
	}
	var members []gossip.Member
	if n.ci != nil {
		if g := n.ci.current(); g != nil {
			members = g.Members()
		}
	}
	m := rosterReply(n.cfg.Cluster.Name, n.cfg.Cluster.Nodes, uint8(n.opts.ReplicaID), peer, n.metadataLeadership(), members)
	// The other transports' ports are the roster's (the same on every
	// node's configuration), advertised like the tcp one, for those this
	// node serves (validation requires one on every node for quic and
	// websocket; websocket is ws or wss, as websocket.tls says).
	for i, rn := range n.cfg.Cluster.Nodes {
		if i >= len(m.Nodes) {
			break
		}
		for _, p := range []struct {
			on       bool
			roster   *uint16
			reported *uint16
		}{
			{n.cfg.QUIC.Enabled, rn.Ports.QUIC, &m.Nodes[i].QUICPort},
			{n.cfg.HTTP.Enabled, rn.Ports.HTTP, &m.Nodes[i].HTTPPort},
			{n.cfg.WebSocket.Enabled, rn.Ports.WebSocket, &m.Nodes[i].WSPort},
		} {
			if p.on && p.roster != nil {
				*p.reported = *p.roster
			}
		}
	}
	return m
}

// singleNodeMetadata is the one-node roster: this node, leader, healthy, at
// the bound TCP address (node.advertised_address replacing the host), named
// by its roster entry.
func (n *Node) singleNodeMetadata() wire.ClusterMetadata {
	host, port, _ := net.SplitHostPort(n.bound)
	if adv := n.cfg.Node.AdvertisedAddress; adv != "" {
		host = adv
	}
	p, _ := strconv.Atoi(port)
	name := "iggy-node-1"
	for _, rn := range n.cfg.Cluster.Nodes {
		if rn.ReplicaID == n.opts.ReplicaID && rn.Name != "" {
			name = rn.Name
			break
		}
	}
	var httpPort int
	if n.httpBound != "" {
		_, hp, _ := net.SplitHostPort(n.httpBound)
		httpPort, _ = strconv.Atoi(hp)
	}
	var wsPort int
	if n.wsBound != "" {
		_, wp, _ := net.SplitHostPort(n.wsBound)
		wsPort, _ = strconv.Atoi(wp)
	}
	return wire.ClusterMetadata{Name: n.cfg.Cluster.Name, Nodes: []wire.ClusterNode{{
		Name: name, IP: host, TCPPort: uint16(p), QUICPort: n.quicPort(), HTTPPort: uint16(httpPort), WSPort: uint16(wsPort), Role: wire.RoleLeader, Status: wire.NodeHealthy}}}
}

// rosterReply builds the clustered answer: every roster node in roster
// order, its client host chosen for the client (config.ClientHost) with its
// roster tcp port (clusterMetadata adds the quic, http and websocket
// ports of the transports enabled; the others stay 0), role leader for the metadata group's primary and
// follower otherwise, and a status from gossip liveness.
//
// The leader is the primary of the highest view known: this node's own
// (when its metadata replica is in normal status) or one a live member
// announces while claiming leadership; on a tie this node's own wins. With
// neither, no node is leader, which the SDKs take as "election in progress"
// and poll.
//
// Status: this node is always healthy (the client is talking to it); any
// other member reports what it announced while gossip counts it alive or
// merely suspect, and unreachable when it is dead, left, or never heard
// from (Iggy's Go SDK refuses the value 5, unknown, so unreachable stands
// for it). Without gossip (not started yet, or failed) every other node is
// unreachable.
func rosterReply(name string, roster []config.ClusterNode, self uint8, client netip.Addr, own leadership, members []gossip.Member) wire.ClusterMetadata {
	byID := make(map[uint8]gossip.Member, len(members))
	for _, m := range members {
		byID[m.ReplicaID] = m
	}
	leader, leaderView, haveLeader := own.primary, own.view, own.known
	for _, m := range members {
		if m.ReplicaID == self || !m.HasMeta || m.Meta.Role != gossip.RoleLeader || m.WireStatus() != gossip.StatusHealthy {
			continue
		}
		if !haveLeader || m.Meta.View > leaderView {
			leader, leaderView, haveLeader = m.ReplicaID, m.Meta.View, true
		}
	}
	out := wire.ClusterMetadata{Name: name, Nodes: make([]wire.ClusterNode, 0, len(roster))}
	for _, rn := range roster {
		id := uint8(rn.ReplicaID)
		node := wire.ClusterNode{Name: rn.Name, IP: rn.ClientHost(client), Role: wire.RoleFollower, Status: uint8(gossip.StatusUnreachable)}
		if rn.Ports.TCP != nil {
			node.TCPPort = *rn.Ports.TCP
		}
		if haveLeader && id == leader {
			node.Role = wire.RoleLeader
		}
		switch m, ok := byID[id]; {
		case id == self:
			node.Status = wire.NodeHealthy
		case ok:
			node.Status = uint8(m.WireStatus())
		}
		out.Nodes = append(out.Nodes, node)
	}
	return out
}

// ---------------------------------------------------------------------------
// Gossip wiring.

// startGossip starts gossip in cluster mode. It runs before the listener
// accepts, so every connection sees n.ci set. A failure is logged, never
// fatal: without gossip the node serves, and reports its peers unreachable.
func (n *Node) startGossip() {
	if !n.cfg.Cluster.Enabled {
		return
	}
	ci, err := startClusterInfo(n.cfg, uint8(n.opts.ReplicaID), n.log, n.metadataLeadership, n.gossipTune)
	if err != nil {
		n.log.Error("gossip not started: its configuration is unusable", zap.Error(err))
		return
	}
	n.ci = ci
}

func (n *Node) stopGossip() {
	if n.ci != nil {
		n.ci.close()
	}
}

// clusterInfo runs this node's gossip in cluster mode: it starts memberlist
// on the node's roster gossip port (retrying in the background when the
// port cannot be bound: gossip feeds health reports, it never stops the
// node from serving), announces the node's role and view whenever they
// change, and leaves the cluster on close.
type clusterInfo struct {
	log    *zap.Logger
	cfg    gossip.Config
	lead   func() leadership
	self   uint8
	every  time.Duration // how often leadership is compared with the announcement
	closeT time.Duration // bound of the leave announcement on close
	failed int           // failed start attempts (loop goroutine, after the first)

	g    atomic.Pointer[gossip.Gossip]
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// startClusterInfo maps the configuration onto gossip (gossip.FromConfig:
// roster, cluster name, the cluster key when cluster.auth is on) and starts
// it. tune, when not nil, adjusts the gossip configuration (tests shorten
// the timings). A configuration gossip cannot use is returned; a bind
// failure is only logged and retried.
func startClusterInfo(cfg *config.Config, self uint8, log *zap.Logger, lead func() leadership, tune func(*gossip.Config)) (*clusterInfo, error) {
	gc, err := gossip.FromConfig(cfg, self)
	if err != nil {
		return nil, err
	}
	gc.Logger = log
	if tune != nil {
		tune(&gc)
	}
	// Leadership is compared with the announcement every gossip interval,
	// so a change reaches the others within about two gossip rounds.
	every := gc.GossipInterval
	if every <= 0 {
		every = gossip.DefaultGossipInterval
	}
	ci := &clusterInfo{log: log.Named("cluster"), cfg: gc, lead: lead, self: self, every: every,
		closeT: cfg.MessageBus.ClosePeerTimeout.Duration, stop: make(chan struct{})}
	// The node serves clients from here on: announce healthy (tryStart
	// adds the leadership it has right now).
	ci.cfg.Meta.Status = gossip.StatusHealthy
	started := ci.tryStart()
	ci.wg.Add(1)
	go ci.loop(started)
	return ci, nil
}

// claim is the role and view this node announces: leader when its metadata
// replica is the primary in normal status, follower when it is a backup in
// normal status, unknown otherwise.
func (ci *clusterInfo) claim() (gossip.Role, uint32) {
	l := ci.lead()
	switch {
	case !l.known:
		return gossip.RoleUnknown, l.view
	case l.primary == ci.self:
		return gossip.RoleLeader, l.view
	default:
		return gossip.RoleFollower, l.view
	}
}

func (ci *clusterInfo) tryStart() bool {
	ci.cfg.Meta.Role, ci.cfg.Meta.View = ci.claim()
	g, err := gossip.Start(ci.cfg)
	if err != nil {
		// Warn once; the retries every rejoin interval stay quiet.
		if ci.failed == 0 {
			ci.log.Warn("gossip not started; peers will read unreachable until it is (retrying)", zap.Error(err))
		} else {
			ci.log.Debug("gossip still not started", zap.Int("attempts", ci.failed+1), zap.Error(err))
		}
		ci.failed++
		return false
	}
	if ci.failed > 0 {
		ci.log.Info("gossip started after failed attempts", zap.Int("attempts", ci.failed))
	}
	ci.g.Store(g)
	return true
}

func (ci *clusterInfo) current() *gossip.Gossip { return ci.g.Load() }

func (ci *clusterInfo) loop(started bool) {
	defer ci.wg.Done()
	t := time.NewTicker(ci.every)
	defer t.Stop()
	retry := ci.cfg.RejoinInterval
	if retry <= 0 {
		retry = gossip.DefaultRejoinInterval
	}
	nextTry := time.Now().Add(retry)
	for {
		select {
		case <-ci.stop:
			return
		case now := <-t.C:
			if !started {
				if now.Before(nextTry) {
					continue
				}
				started = ci.tryStart()
				nextTry = now.Add(retry)
				continue
			}
			g := ci.g.Load()
			r, v := ci.claim()
			if s := g.Self(); s.Role != r || s.View != v {
				if err := g.SetRole(r, v); err != nil {
					ci.log.Debug("role announcement not acknowledged yet", zap.Stringer("role", r), zap.Uint32("view", v), zap.Error(err))
				}
			}
		}
	}
}

// close stops the loop and leaves the cluster (announcing Stopping first),
// bounded by message_bus.close_peer_timeout per step. Idempotent.
func (ci *clusterInfo) close() {
	ci.once.Do(func() {
		close(ci.stop)
		ci.wg.Wait()
		if g := ci.g.Load(); g != nil {
			if err := g.Close(ci.closeT); err != nil {
				ci.log.Warn("gossip shutdown", zap.Error(err))
			}
		}
	})
}
