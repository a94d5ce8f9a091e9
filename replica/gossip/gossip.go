package gossip

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/plane"
)

// Liveness is what this node knows about a member's process.
type Liveness uint8

const (
	// LivenessUnknown: never heard from since this node started.
	LivenessUnknown Liveness = iota
	LivenessAlive
	// LivenessSuspect: memberlist still counts it alive, but this node's
	// direct probes have not been answered for SuspectAfter.
	LivenessSuspect
	// LivenessDead: memberlist declared it failed.
	LivenessDead
	// LivenessLeft: it went away after announcing Stopping (Close does).
	LivenessLeft
)

var livenessNames = [...]string{"unknown", "alive", "suspect", "dead", "left"}

func (l Liveness) String() string {
	if int(l) < len(livenessNames) {
		return livenessNames[l]
	}
	return "liveness(" + strconv.Itoa(int(l)) + ")"
}

// Peer is a roster entry for gossip.
type Peer struct {
	ID   uint8
	Name string
	// Addr is the member's gossip address (roster ip, gossip port). Port 0
	// (tests) means "not known": the member is not joined through it.
	Addr netip.AddrPort
}

// Member is one roster member as this node sees it.
type Member struct {
	ReplicaID uint8
	Name      string
	// Addr is where it gossips: the address memberlist last saw, else its
	// roster address.
	Addr     netip.AddrPort
	Liveness Liveness
	// Meta is the last node information it announced; HasMeta is false
	// until it has been heard from.
	Meta    Meta
	HasMeta bool
	// Since is when Liveness last changed (this node's clock).
	Since time.Time
}

// WireStatus is the status byte GET_CLUSTER_METADATA reports for the
// member: its announced status while alive or merely suspect (suspicion is
// often a slow probe, and clients then keep trying it), Unreachable once
// dead, left, or never heard from.
func (m Member) WireStatus() Status {
	switch m.Liveness {
	case LivenessAlive, LivenessSuspect:
		if m.HasMeta {
			return m.Meta.Status
		}
	}
	return StatusUnreachable
}

// EventKind says what changed.
type EventKind uint8

const (
	EventJoin   EventKind = iota + 1 // became alive (first time or again)
	EventUpdate                      // announced new meta
	EventLeave                       // declared dead or left
)

// Event is one membership change. Members is authoritative; events are a
// convenience for reacting promptly.
type Event struct {
	Kind   EventKind
	Member Member
}

// Config configures one node's gossip.
type Config struct {
	Self   uint8
	Roster []Peer
	// ClusterName labels every packet (memberlist's label), so two clusters
	// sharing a network never mix even without a key.
	ClusterName string
	// Secret enables encryption and authentication of every gossip packet
	// (memberlist keyring, AES-256-GCM) with a key derived from it;
	// PreviousSecret's key is also accepted (rotation: a node encrypts with
	// Secret and decrypts with either). Nil: no encryption.
	Secret         []byte
	PreviousSecret []byte
	// BindAddr overrides the bind address (default: Self's roster address).
	BindAddr netip.AddrPort

	// Meta is this node's initial announcement; ReplicaID and Name are
	// taken from the roster.
	Meta Meta

	// Timing. Zero values take the defaults below.
	ProbeInterval  time.Duration // one member probed per interval (memberlist ProbeInterval)
	ProbeTimeout   time.Duration // ack wait for a direct probe
	GossipInterval time.Duration
	PushPull       time.Duration // full-state exchange interval
	SuspicionMult  int           // memberlist: suspicion lasts SuspicionMult × log(n+1) × ProbeInterval before dead
	// SuspectAfter: no direct ack for this long makes an alive member
	// Suspect here. Default 2 × (members − 1) × ProbeInterval + ProbeTimeout,
	// at least two probe rounds of this node.
	SuspectAfter time.Duration
	// RejoinInterval: how often members not alive are joined again through
	// their roster address (a node that started alone, or after a partition
	// healed, finds the others this way).
	RejoinInterval time.Duration
	// EventCapacity bounds the Events channel; events that do not fit are
	// dropped and counted (Stats.EventsDropped).
	EventCapacity int
	// UpdateTimeout bounds SetStatus's wait for the announcement to reach
	// one member.
	UpdateTimeout time.Duration
	// TCPTimeout bounds one join or full-state exchange with a member (and
	// so how long Close may wait for a join in progress).
	TCPTimeout time.Duration

	Logger *zap.Logger
}

// Defaults.
const (
	DefaultProbeInterval  = time.Second
	DefaultProbeTimeout   = 500 * time.Millisecond
	DefaultGossipInterval = 200 * time.Millisecond
	DefaultPushPull       = 15 * time.Second
	DefaultSuspicionMult  = 4
	DefaultRejoinInterval = 5 * time.Second
	DefaultEventCapacity  = 256
	DefaultUpdateTimeout  = 2 * time.Second
	DefaultTCPTimeout     = 2 * time.Second
	// queueDepthMax bounds memberlist's pending broadcast queue.
	queueDepthMax = 1024
)

func (c *Config) applyDefaults() error {
	if len(c.Roster) == 0 || len(c.Roster) > 255 {
		return fmt.Errorf("gossip: roster has %d members", len(c.Roster))
	}
	found := false
	names := map[string]bool{}
	ids := map[uint8]bool{}
	for _, p := range c.Roster {
		if p.Name == "" || names[p.Name] || ids[p.ID] {
			return fmt.Errorf("gossip: roster names and ids must be unique and non-empty (%q, %d)", p.Name, p.ID)
		}
		names[p.Name], ids[p.ID] = true, true
		if p.ID == c.Self {
			found = true
		}
	}
	if !found {
		return fmt.Errorf("gossip: self %d is not in the roster", c.Self)
	}
	if c.ClusterName == "" {
		return errors.New("gossip: ClusterName is required")
	}
	if len(c.Secret) == 0 && len(c.PreviousSecret) > 0 {
		return errors.New("gossip: PreviousSecret without Secret")
	}
	if !c.Meta.Status.announceable() {
		return fmt.Errorf("gossip: initial status %s cannot be announced", c.Meta.Status)
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur(&c.ProbeInterval, DefaultProbeInterval)
	setDur(&c.ProbeTimeout, DefaultProbeTimeout)
	setDur(&c.GossipInterval, DefaultGossipInterval)
	setDur(&c.PushPull, DefaultPushPull)
	setDur(&c.SuspectAfter, 2*time.Duration(max(len(c.Roster)-1, 1))*c.ProbeInterval+c.ProbeTimeout)
	setDur(&c.RejoinInterval, DefaultRejoinInterval)
	setDur(&c.UpdateTimeout, DefaultUpdateTimeout)
	setDur(&c.TCPTimeout, DefaultTCPTimeout)
	if c.SuspicionMult <= 0 {
		c.SuspicionMult = DefaultSuspicionMult
	}
	if c.EventCapacity <= 0 {
		c.EventCapacity = DefaultEventCapacity
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// FromConfig maps the server configuration onto a gossip Config for replica
// self: roster (ip, gossip port), cluster.name, the cluster key when
// cluster.auth is enabled, and this node's announcement (client host =
// advertised_address or ip, tcp port; status Starting). The caller sets
// Logger.
func FromConfig(cfg *config.Config, self uint8) (Config, error) {
	cl := cfg.Cluster
	c := Config{Self: self, ClusterName: cl.Name}
	for _, n := range cl.Nodes {
		ip, err := netip.ParseAddr(n.IP)
		if err != nil {
			return Config{}, fmt.Errorf("gossip: cluster.nodes %q ip: %w", n.Name, err)
		}
		port, ok := n.GossipPort()
		if !ok || n.ReplicaID < 0 || n.ReplicaID > 255 {
			return Config{}, fmt.Errorf("gossip: cluster.nodes %q has no usable gossip port or replica id", n.Name)
		}
		c.Roster = append(c.Roster, Peer{ID: uint8(n.ReplicaID), Name: n.Name, Addr: netip.AddrPortFrom(ip.Unmap(), port)})
		if n.ReplicaID == int(self) {
			host := n.AdvertisedAddress
			if host == "" {
				host = n.IP
			}
			c.Meta = Meta{ClientHost: host, Status: StatusStarting}
			if n.Ports.TCP != nil {
				c.Meta.TCPPort = *n.Ports.TCP
			}
		}
	}
	if a := cl.Auth; a.Enabled {
		c.Secret = []byte(a.SharedSecret)
		if a.PreviousSharedSecret != "" {
			c.PreviousSecret = []byte(a.PreviousSharedSecret)
		}
	}
	return c, nil
}

// GossipKey derives the 32-byte AES-256 gossip key from a cluster secret:
// HKDF-SHA256(secret, salt "iggo gossip v1", info cluster id). It differs
// from the replica plane's link keys (other salt) and between clusters.
func GossipKey(secret []byte, clusterName string) []byte {
	id := plane.ClusterID(clusterName)
	k, err := hkdf.Key(sha256.New, secret, []byte("iggo gossip v1"), string(id[:]), 32)
	if err != nil {
		panic(fmt.Sprintf("gossip: hkdf: %v", err))
	}
	return k
}

// Stats are gossip counters.
type Stats struct {
	EventsDropped uint64 // events that did not fit the Events channel
	Refused       uint64 // alive announcements refused (not in the roster, or id mismatch)
	Rejoins       uint64 // rejoin attempts through roster addresses
}

// Gossip is one node's membership and liveness view.
type Gossip struct {
	cfg    Config
	log    *zap.Logger
	ml     *memberlist.Memberlist
	byName map[string]Peer
	events chan Event

	mu       sync.Mutex
	evClosed bool
	meta     Meta
	metaEnc  []byte
	members  map[string]*entry

	eventsDropped, refused, rejoins atomic.Uint64
	closed                          atomic.Bool // Close or Kill began

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// startHook and startLockedHook, when set (tests), run in Start right after
// memberlist starts listening (when peers' state pushes may begin) and at the
// start of the section Start holds g.mu for.
var (
	startHook       func(*memberlist.Memberlist)
	startLockedHook func()
)

type entry struct {
	m       Member
	lastAck time.Time
}

// Start binds the gossip port and returns; in the background it joins
// whichever roster members answer, and keeps rejoining the others every
// RejoinInterval. A node that finds nobody is alone until a peer comes up.
func Start(cfg Config) (*Gossip, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	g := &Gossip{
		cfg:     cfg,
		log:     cfg.Logger.Named("gossip").With(zap.Uint8("replica", cfg.Self)),
		byName:  map[string]Peer{},
		events:  make(chan Event, cfg.EventCapacity),
		members: map[string]*entry{},
		stop:    make(chan struct{}),
	}
	var self Peer
	for _, p := range cfg.Roster {
		g.byName[p.Name] = p
		g.members[p.Name] = &entry{m: Member{ReplicaID: p.ID, Name: p.Name, Addr: p.Addr, Since: time.Now()}}
		if p.ID == cfg.Self {
			self = p
		}
	}
	g.meta = cfg.Meta
	g.meta.ReplicaID, g.meta.Name = self.ID, self.Name
	enc, err := g.meta.Encode()
	if err != nil {
		return nil, err
	}
	g.metaEnc = enc

	mc := memberlist.DefaultLANConfig()
	mc.Name = self.Name
	bind := cfg.BindAddr
	if !bind.IsValid() {
		bind = self.Addr
	}
	mc.BindAddr, mc.BindPort = bind.Addr().String(), int(bind.Port())
	mc.AdvertiseAddr, mc.AdvertisePort = self.Addr.Addr().String(), int(bind.Port())
	id := plane.ClusterID(cfg.ClusterName)
	mc.Label = "iggo/" + hex.EncodeToString(id[:8])
	mc.ProbeInterval, mc.ProbeTimeout = cfg.ProbeInterval, cfg.ProbeTimeout
	mc.GossipInterval, mc.PushPullInterval = cfg.GossipInterval, cfg.PushPull
	mc.SuspicionMult = cfg.SuspicionMult
	mc.TCPTimeout = cfg.TCPTimeout
	mc.GossipToTheDeadTime = cfg.PushPull
	// A restarted node comes back under the same name, possibly at another
	// address (containers): let it reclaim its name once declared dead.
	mc.DeadNodeReclaimTime = cfg.ProbeInterval
	mc.HandoffQueueDepth = queueDepthMax
	mc.RequireNodeNames = true
	mc.Delegate = (*delegate)(g)
	mc.Events = (*events)(g)
	mc.Alive = (*alive)(g)
	mc.Ping = (*pings)(g)
	// memberlist's timers may still log for a moment after Shutdown
	// returns; nothing is written once Close or Kill began (a test's logger
	// panics when written to after its test ended).
	mlLog := g.log.Named("memberlist")
	mc.Logger = log.New(writerFunc(func(p []byte) (int, error) {
		if !g.closed.Load() {
			mlLog.Debug(strings.TrimRight(string(p), "\n"))
		}
		return len(p), nil
	}), "", 0)
	mc.LogOutput = nil
	if len(cfg.Secret) > 0 {
		primary := GossipKey(cfg.Secret, cfg.ClusterName)
		keys := [][]byte{primary}
		if len(cfg.PreviousSecret) > 0 {
			keys = append(keys, GossipKey(cfg.PreviousSecret, cfg.ClusterName))
		}
		kr, err := memberlist.NewKeyring(keys, primary)
		if err != nil {
			return nil, fmt.Errorf("gossip: keyring: %w", err)
		}
		mc.Keyring = kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("gossip: binding %s: %w", bind, err)
	}
	g.ml = ml
	if startHook != nil {
		startHook(ml)
	}
	// Lock order is memberlist's node lock, then g.mu: memberlist calls the
	// event callbacks (which take g.mu) under its node lock, and peers may
	// already be pushing state to the listener Create opened. So ask
	// memberlist first and take g.mu only after, never around a memberlist
	// call.
	var selfAddr netip.AddrPort
	if ln := ml.LocalNode(); ln != nil {
		if ap, ok := netip.AddrFromSlice(ln.Addr); ok {
			selfAddr = netip.AddrPortFrom(ap.Unmap(), ln.Port)
		}
	}
	g.mu.Lock()
	if startLockedHook != nil {
		startLockedHook()
	}
	if e := g.members[self.Name]; e != nil {
		e.m.Liveness, e.m.Meta, e.m.HasMeta = LivenessAlive, g.meta, true
		if selfAddr.IsValid() {
			e.m.Addr = selfAddr
		}
	}
	g.mu.Unlock()
	g.wg.Add(1)
	go g.rejoinLoop()
	g.log.Info("gossip started", zap.Stringer("bind", bind), zap.Bool("encrypted", mc.Keyring != nil))
	return g, nil
}

// LocalAddr is the address this node gossips on (useful with port 0).
func (g *Gossip) LocalAddr() netip.AddrPort {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members[g.meta.Name].m.Addr
}

// Events delivers membership changes. It is closed by Close.
func (g *Gossip) Events() <-chan Event { return g.events }

// Members returns every roster member in roster order, this node included.
func (g *Gossip) Members() []Member {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Member, 0, len(g.cfg.Roster))
	for _, p := range g.cfg.Roster {
		e := g.members[p.Name]
		m := e.m
		if p.ID != g.cfg.Self && m.Liveness == LivenessAlive && now.Sub(e.lastAck) > g.cfg.SuspectAfter {
			m.Liveness = LivenessSuspect
			m.Since = e.lastAck.Add(g.cfg.SuspectAfter)
		}
		out = append(out, m)
	}
	return out
}

// Member returns one member by replica id.
func (g *Gossip) Member(id uint8) (Member, bool) {
	for _, m := range g.Members() {
		if m.ReplicaID == id {
			return m, true
		}
	}
	return Member{}, false
}

// SetStatus announces a new status for this node and waits up to
// UpdateTimeout for the announcement to reach a member (no wait when
// alone). The local view changes at once either way.
func (g *Gossip) SetStatus(s Status) error {
	if !s.announceable() {
		return fmt.Errorf("gossip: status %s cannot be announced", s)
	}
	return g.announce("status "+s.String(), func(m *Meta) { m.Status = s })
}

// SetRole announces this node's part in the metadata group and its view,
// waiting like SetStatus.
func (g *Gossip) SetRole(r Role, view uint32) error {
	if r > RoleFollower {
		return fmt.Errorf("gossip: role %s cannot be announced", r)
	}
	return g.announce("role "+r.String(), func(m *Meta) { m.Role, m.View = r, view })
}

// Self is what this node currently announces.
func (g *Gossip) Self() Meta {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.meta
}

func (g *Gossip) announce(what string, change func(*Meta)) error {
	g.mu.Lock()
	next := g.meta
	change(&next)
	enc, err := next.Encode()
	if err == nil {
		g.meta, g.metaEnc = next, enc
		g.members[g.meta.Name].m.Meta = g.meta
	}
	timeout := g.cfg.UpdateTimeout
	g.mu.Unlock()
	if err != nil {
		return err
	}
	if err := g.ml.UpdateNode(timeout); err != nil {
		return fmt.Errorf("gossip: announcing %s: %w", what, err)
	}
	return nil
}

// Stats returns the counters.
func (g *Gossip) Stats() Stats {
	return Stats{EventsDropped: g.eventsDropped.Load(), Refused: g.refused.Load(), Rejoins: g.rejoins.Load()}
}

// Close announces Stopping, leaves the cluster (each step waiting up to
// timeout for the announcement to go out) and shuts memberlist down; the
// others then see this node as Left rather than Dead. Idempotent.
func (g *Gossip) Close(timeout time.Duration) error {
	var err error
	g.once.Do(func() {
		close(g.stop)
		g.wg.Wait()
		defer g.closed.Store(true) // Leave and Shutdown may still log
		g.mu.Lock()
		g.cfg.UpdateTimeout = timeout
		g.mu.Unlock()
		if serr := g.SetStatus(StatusStopping); serr != nil {
			g.log.Debug("gossip stopping announcement", zap.Error(serr))
		}
		if lerr := g.ml.Leave(timeout); lerr != nil {
			g.log.Debug("gossip leave", zap.Error(lerr))
		}
		err = g.ml.Shutdown()
		g.closeEvents()
	})
	return err
}

// Kill shuts memberlist down without announcing anything, as a crash would
// (tests).
func (g *Gossip) Kill() error {
	var err error
	g.once.Do(func() {
		close(g.stop)
		g.wg.Wait()
		g.closed.Store(true)
		err = g.ml.Shutdown()
		g.closeEvents()
	})
	return err
}

func (g *Gossip) closeEvents() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.evClosed = true
	close(g.events)
}

func (g *Gossip) rejoinLoop() {
	defer g.wg.Done()
	// The first join runs here rather than in Start: joining a peer whose
	// address blackholes blocks for memberlist's TCP timeout, and boot must
	// not wait for it.
	g.rejoin()
	t := time.NewTicker(g.cfg.RejoinInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.rejoin()
		}
	}
}

// rejoin joins, through their roster addresses, the members that are not
// alive here. Bounded: one attempt per such member per interval.
func (g *Gossip) rejoin() {
	var addrs []string
	g.mu.Lock()
	for _, p := range g.cfg.Roster {
		e := g.members[p.Name]
		if p.ID == g.cfg.Self || e.m.Liveness == LivenessAlive || p.Addr.Port() == 0 {
			continue
		}
		addrs = append(addrs, p.Name+"/"+p.Addr.String())
	}
	g.mu.Unlock()
	if len(addrs) == 0 {
		return
	}
	g.rejoins.Add(1)
	n, err := g.ml.Join(addrs)
	if err != nil {
		g.log.Debug("gossip join", zap.Strings("peers", addrs), zap.Int("reached", n), zap.Error(err))
	}
}

// emit queues an event without blocking memberlist (its callbacks run
// under its locks); a full channel drops and counts. Called with g.mu held.
func (g *Gossip) emit(e Event) {
	if g.evClosed {
		return
	}
	select {
	case g.events <- e:
	default:
		g.eventsDropped.Add(1)
	}
}

// observe records a memberlist node state change; called from memberlist's
// callbacks with a node that must be copied, not kept.
func (g *Gossip) observe(n *memberlist.Node, kind EventKind) {
	now := time.Now()
	var meta Meta
	metaOK := false
	if len(n.Meta) > 0 {
		if m, err := DecodeMeta(n.Meta); err == nil {
			meta, metaOK = m, true
		}
	}
	addr := netip.AddrPort{}
	if ip, ok := netip.AddrFromSlice(n.Addr); ok {
		addr = netip.AddrPortFrom(ip.Unmap(), n.Port)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.members[n.Name]
	if e == nil || n.Name == g.meta.Name {
		return
	}
	prev := e.m.Liveness
	switch kind {
	case EventJoin, EventUpdate:
		e.m.Liveness = LivenessAlive
		e.lastAck = now
	case EventLeave:
		// memberlist's callbacks do not say whether a node left or failed
		// (the Node they pass carries a stale state), so a member that
		// announced Stopping before going away left; any other died.
		if e.m.HasMeta && e.m.Meta.Status == StatusStopping {
			e.m.Liveness = LivenessLeft
		} else {
			e.m.Liveness = LivenessDead
		}
	}
	if prev != e.m.Liveness {
		e.m.Since = now
	}
	if addr.IsValid() {
		e.m.Addr = addr
	}
	if metaOK {
		e.m.Meta, e.m.HasMeta = meta, true
	}
	if prev != e.m.Liveness {
		g.logLiveness(e.m, prev)
	}
	g.emit(Event{Kind: kind, Member: e.m})
}

// logLiveness logs a member coming up (alive) or going down (dead or
// left) at INFO.
func (g *Gossip) logLiveness(m Member, prev Liveness) {
	msg := "gossip peer up"
	if m.Liveness != LivenessAlive {
		msg = "gossip peer down"
	}
	fields := []zap.Field{zap.String("peer", m.Name), zap.Uint8("peer_replica", m.ReplicaID),
		zap.Stringer("liveness", m.Liveness), zap.Stringer("was", prev)}
	if m.Addr.IsValid() {
		fields = append(fields, zap.Stringer("addr", m.Addr))
	}
	if m.HasMeta {
		fields = append(fields, zap.Stringer("status", m.Meta.Status))
	}
	g.log.Info(msg, fields...)
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// The memberlist callbacks, as distinct types so Gossip's own method set
// stays the public API.
type (
	delegate Gossip
	events   Gossip
	alive    Gossip
	pings    Gossip
)

func (d *delegate) NodeMeta(limit int) []byte {
	g := (*Gossip)(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.metaEnc) > limit {
		panic(fmt.Sprintf("gossip: node meta %d bytes above memberlist's limit %d", len(g.metaEnc), limit))
	}
	return append([]byte(nil), g.metaEnc...)
}
func (d *delegate) NotifyMsg([]byte)                    {}
func (d *delegate) GetBroadcasts(_, _ int) [][]byte     { return nil }
func (d *delegate) LocalState(bool) []byte              { return nil }
func (d *delegate) MergeRemoteState(buf []byte, _ bool) {}

func (e *events) NotifyJoin(n *memberlist.Node)   { (*Gossip)(e).observe(n, EventJoin) }
func (e *events) NotifyLeave(n *memberlist.Node)  { (*Gossip)(e).observe(n, EventLeave) }
func (e *events) NotifyUpdate(n *memberlist.Node) { (*Gossip)(e).observe(n, EventUpdate) }

// NotifyAlive refuses members that are not in the roster or whose meta
// names another replica id than the roster gives their name, so a stray
// process (another cluster's node on a shared key, a misconfigured roster)
// never appears as a member.
func (a *alive) NotifyAlive(n *memberlist.Node) error {
	g := (*Gossip)(a)
	p, ok := g.byName[n.Name]
	if !ok {
		g.refused.Add(1)
		return fmt.Errorf("gossip: %q is not in the roster", n.Name)
	}
	m, err := DecodeMeta(n.Meta)
	if err != nil {
		g.refused.Add(1)
		return fmt.Errorf("gossip: %q: %w", n.Name, err)
	}
	if m.ReplicaID != p.ID || m.Name != p.Name {
		g.refused.Add(1)
		return fmt.Errorf("gossip: %q announces replica %d (%q), roster says %d", n.Name, m.ReplicaID, m.Name, p.ID)
	}
	return nil
}

func (p *pings) AckPayload() []byte { return nil }
func (p *pings) NotifyPingComplete(n *memberlist.Node, _ time.Duration, _ []byte) {
	g := (*Gossip)(p)
	g.mu.Lock()
	if e := g.members[n.Name]; e != nil {
		e.lastAck = time.Now()
	}
	g.mu.Unlock()
}
