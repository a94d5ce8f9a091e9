package consensus

import (
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/vsr"
)

// Tick advances the group's replica by n ticks, then looks at its lag,
// expires forwarded requests and releases held replies; the group is marked
// dirty. A failed or closed group is left alone.
func (g *Group) Tick(n uint64) {
	if g.failed != nil || g.closed {
		return
	}
	for i := uint64(0); i < n; i++ {
		g.r.Tick()
	}
	g.ticks += n
	g.watchLag()
	if len(g.fwd) > 0 {
		g.expireForwards()
	}
	g.releaseHeld()
	g.host.MarkDirty(g)
}

// maxTickRun is the most ticks TickTo runs at once: a host stalled for
// long hands its groups the time in one go, and timeouts only need to see
// that time passed, not every step of it.
const maxTickRun = 100

// TickTo runs the ticks since the group's last TickTo (or SetTickBase)
// up to the host's tick count now, at most maxTickRun of them.
func (g *Group) TickTo(now uint64) {
	if now <= g.tickedAt {
		return
	}
	n := min(now-g.tickedAt, maxTickRun)
	g.tickedAt = now
	g.Tick(n)
}

// SetTickBase starts the group's ticks at the host's count now (a group
// added to a running host owes none before it).
func (g *Group) SetTickBase(now uint64) { g.tickedAt = now }

// quiet: the replica is quiet (vsr Replica.Quiet) and the group holds no
// forwarded request, held reply, waiter or unsynced append, so its ticks
// may come in arrears (Driver.TickAwake).
func (g *Group) quiet() bool {
	return g.cfg.ReplicaCount <= 1 && !g.dirty && !g.commitNow && len(g.waiting) == 0 && len(g.syncing) == 0 &&
		len(g.fwd) == 0 && len(g.held) == 0 && g.r.Quiet()
}

// RoleChange is a group's role as last published to the host: the replica's
// Info, whether view, status or primary changed since the last report
// (false: only the commit point moved on by 64 ops or more), and whether
// the view rose (a view change, for the metrics).
type RoleChange struct {
	Info    vsr.Info
	Changed bool
	ViewUp  bool
}

// roleWatch is the last published role.
type roleWatch struct {
	known   bool
	view    uint32
	status  string
	primary bool
	commit  uint64
}

// watchRole reports the group's role to the host when its view, status or
// primary changed, or its commit point moved on by 64 ops (called after
// driving the group).
func (g *Group) watchRole() {
	w := &g.role
	if g.r == nil || g.closed || (w.known && g.cfg.ReplicaCount <= 1) {
		// A single replica's role never changes after boot: keep the hot
		// path free of it.
		return
	}
	info := g.r.Info()
	same := w.known && info.View == w.view && info.Status == w.status && info.IsPrimary == w.primary
	if same && info.CommitMax-w.commit < 64 {
		return
	}
	rc := RoleChange{Info: info, Changed: !same, ViewUp: w.known && info.View > w.view}
	*w = roleWatch{known: true, view: info.View, status: info.Status, primary: info.IsPrimary, commit: info.CommitMax}
	g.host.Role(g, rc)
}

// lagReportTicks: how long a replica may know of committed ops it has not
// applied, without applying any, before watchLag reports it (and how often
// it repeats the report while that lasts).
const lagReportTicks = uint64(5 * time.Second / vsr.TickInterval)

// lagCheckTicks: how often watchLag looks.
const lagCheckTicks = 16

// lagWatch is watchLag's memory: the applied op last seen and the tick it
// last moved or the replica caught up, the tick of the last report, and
// the status and view last seen.
type lagWatch struct {
	applied uint64
	since   uint64
	logged  uint64
	checkAt uint64
	status  string
	view    uint32
}

// watchLag logs a replica that knows ops are committed beyond what it
// applied and makes no progress towards them, or that stays out of normal
// status in one view: a replica that cannot catch up (journal repair, state
// transfer or a view change stuck) is otherwise silent.
func (g *Group) watchLag() {
	l := &g.lag
	if g.cfg.ReplicaCount <= 1 || g.ticks < l.checkAt {
		return
	}
	l.checkAt = g.ticks + lagCheckTicks
	info := g.r.Info()
	stuck := info.Status != "normal" && info.Status == l.status && info.View == l.view
	l.status, l.view = info.Status, info.View
	if !stuck && (info.CommitMin >= info.CommitMax || info.CommitMin != l.applied) {
		l.applied, l.since = info.CommitMin, g.ticks
		return
	}
	if g.ticks-l.since < lagReportTicks || g.ticks-l.logged < lagReportTicks {
		return
	}
	l.logged = g.ticks
	g.log.Warn("replica behind or out of normal status, not catching up",
		zap.String("status", info.Status), zap.Uint32("view", info.View), zap.Uint32("log_view", info.LogView),
		zap.Uint8("primary", info.Primary), zap.Uint64("op", info.Op),
		zap.Uint64("commit_min", info.CommitMin), zap.Uint64("commit_max", info.CommitMax),
		zap.Uint64("checkpoint", info.Checkpoint), zap.Uint64("journal_floor", info.JournalFloor),
		zap.Uint64("journal_head", info.JournalHead), zap.Uint64("durable_head", info.DurableHead),
		zap.Uint64("anchor", info.AnchorOp), zap.Uint64("primary_head", info.PrimaryHead),
		zap.Bool("transferring", info.Transferring), zap.Uint8("transfer_peer", info.TransferPeer),
		zap.Uint64("transfer_op", info.TransferOp), zap.Bool("rejoining", info.Rejoining),
		zap.Bool("fenced", info.Fenced), zap.String("detail", g.r.CatchUpDetail()), zap.Duration("stalled", time.Duration(g.ticks-l.since)*vsr.TickInterval))
}
