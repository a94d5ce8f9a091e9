package consensus

import (
	"time"

	"github.com/iggo/iggo/internal/mutation"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/shard/vfs"
)

// PassHooks let the program running a Driver add its own storage work to
// the driving loop (the node adds its partitions' segment writes and
// syncs). All may be left out (nil hooks).
type PassHooks interface {
	// StageCommit adds work to the group commit's submission, which holds
	// the fdatasync of every journal that needs one; the returned function
	// (may be nil) gets the submission's result.
	StageCommit(b *vfs.Batch) func(err error)
	// AfterPass runs after each pass over the dirty groups and their group
	// commit (the node writes the segment records the applied ops
	// produced).
	AfterPass()
	// Idle runs once the groups are quiet and no group commit is left.
	Idle()
}

// Driver runs the groups of one goroutine: every group marked dirty has
// its Ready run until quiet, then one group commit (one submission
// fdatasyncing every journal that needs it) completes the appends waiting
// for it, and so on until nothing moves. It is what a shard loop runs per
// iteration and what a deterministic simulator runs per step.
type Driver struct {
	fs    vfs.FS
	met   *metrics.Metrics
	hooks PassHooks

	dirty      []*Group
	syncGroups []*Group
	batch      vfs.Batch
	// awake: groups marked dirty since TickAwake last ran (awakeSpare is
	// the other buffer).
	awake, awakeSpare []*Group
}

// NewDriver returns a driver submitting group commits through fs; met and
// hooks may be nil.
func NewDriver(fs vfs.FS, met *metrics.Metrics, hooks PassHooks) *Driver {
	return &Driver{fs: fs, met: met, hooks: hooks}
}

// MarkDirty asks for g's Ready to be run by the next Drive, and puts g on
// the awake list for the next TickAwake.
func (d *Driver) MarkDirty(g *Group) {
	if !g.dirty {
		g.dirty = true
		d.dirty = append(d.dirty, g)
	}
	if !g.awake {
		g.awake = true
		d.awake = append(d.awake, g)
	}
}

// QuietTickEvery is how often (in ticks, 100 ms at the 10 ms tick) a host
// ticks every group; in between TickAwake ticks the awake ones.
const QuietTickEvery = 10

// TickAwake ticks (TickTo now) the groups marked dirty since their last
// tick, except the quiet ones (Group.quiet: a single replica with nothing
// in flight), which the host's next full pass (every QuietTickEvery ticks)
// hands the ticks they missed. A group with peers is never quiet: ticking
// marks it dirty, so it stays awake. Ten thousand idle partitions then
// cost a tick pass every QuietTickEvery ticks instead of every tick.
func (d *Driver) TickAwake(now uint64) {
	list := d.awake
	d.awake = d.awakeSpare[:0]
	for _, g := range list {
		g.awake = false
		if !g.quiet() {
			g.TickTo(now)
		}
	}
	clear(list)
	d.awakeSpare = list[:0]
}

// NeedSync puts g's journal into the next group commit.
func (d *Driver) NeedSync(g *Group) {
	for _, x := range d.syncGroups {
		if x == g {
			return
		}
	}
	d.syncGroups = append(d.syncGroups, g)
}

// Dirty reports whether a group waits to be driven (a caller stepping
// the groups itself, such as a simulator, drives until it is false).
func (d *Driver) Dirty() bool { return len(d.dirty) > 0 || len(d.syncGroups) > 0 }

// Drive runs every dirty group's Ready until all are quiet, with one group
// commit per pass.
func (d *Driver) Drive() {
	for {
		progress := d.runDirty()
		if len(d.syncGroups) > 0 {
			progress = true
			d.groupCommit()
		}
		if d.hooks != nil {
			d.hooks.AfterPass()
		}
		if !progress && len(d.dirty) == 0 {
			if len(d.syncGroups) == 0 && d.hooks != nil {
				d.hooks.Idle()
			}
			return
		}
	}
}

// runDirty runs the dirty groups until none is left; true when any Ready
// ran.
func (d *Driver) runDirty() bool {
	progress := false
	for len(d.dirty) > 0 {
		list := d.dirty
		d.dirty = nil
		for _, g := range list {
			g.dirty = false
			if g.runReadies() {
				progress = true
			}
		}
	}
	return progress
}

// runReadies runs g's Ready until it has none (and the commit broadcast a
// reply asked for), then reports its role and releases held replies.
func (g *Group) runReadies() bool {
	if g.failed != nil || g.closed {
		return false
	}
	progress := false
	for g.r.HasReady() {
		progress = true
		g.process(g.r.Ready())
		if g.failed != nil {
			break
		}
	}
	if g.commitNow && g.failed == nil {
		g.commitNow = false
		g.r.CommitNow()
		for g.r.HasReady() && g.failed == nil {
			progress = true
			g.process(g.r.Ready())
		}
	}
	g.watchRole()
	g.releaseHeld()
	return progress
}

// groupCommit fdatasyncs every journal that needs it (and what the hooks
// add) in one submission and completes the appends waiting for it.
func (d *Driver) groupCommit() {
	d.batch.Reset()
	for _, g := range d.syncGroups {
		if mutation.On(mutation.AckBeforeJournalSync) {
			var lie vfs.Batch // never submitted
			g.ticket = g.j.SyncTo(&lie)
			continue
		}
		g.ticket = g.j.SyncTo(&d.batch)
	}
	var done func(error)
	if d.hooks != nil {
		done = d.hooks.StageCommit(&d.batch)
	}
	var err error
	if !d.batch.Empty() {
		start := time.Now()
		err = d.fs.Submit(&d.batch)
		d.met.ObserveStorage(metrics.GroupCommit, time.Since(start))
	}
	d.batch.Reset()
	if done != nil {
		done(err)
	}
	groups := d.syncGroups
	d.syncGroups = nil
	for _, g := range groups {
		g.syncDone(err)
		d.MarkDirty(g)
	}
}
