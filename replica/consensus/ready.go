package consensus

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/vsr"
)

// readyResults collects what one Ready's execution reports back to the
// replica. Every part of the Ready runs first; the completions follow in
// a fixed order (state record, appends, reads, checkpoint, artifacts,
// install), so the replica sees them after its Ready is fully done.
type readyResults struct {
	hasCkpt bool
	ckptOp  uint64
	ckptM   vsr.Manifest
	ckptErr error

	hasState bool
	stateErr error
	stateCk  uint64

	doneNow  []appended
	appendFl []appended
	appendE  error
	reads    []readDone

	artReads, artWrites []xferDone

	hasInstall bool
	installOp  uint64
	installErr error
}

type readDone struct {
	op    uint64
	frame []byte
	err   error
}

type xferDone struct {
	token uint64
	data  []byte
	err   error
}

// process executes one Ready.
func (g *Group) process(rd vsr.Ready) {
	var res readyResults
	g.runCheckpoint(rd.Checkpoint, &res)
	g.writeState(rd.State, &res)
	if res.stateErr != nil {
		// The Ready's journal operations (prepares of the view the record
		// names) must not outlive a record that did not reach the disk: a
		// restart would find them above the durable log view.
		g.Fail(fmt.Errorf("state record: %w", res.stateErr))
		return
	}
	if !g.runJournal(rd.Journal, &res) {
		return
	}
	g.runReads(rd.Reads, &res)
	for _, m := range rd.Messages {
		g.host.Send(g, m)
	}
	g.runArtifacts(rd.ArtifactReads, rd.ArtifactWrites, &res)
	g.runInstall(rd.Install, &res)
	for i := range rd.Replies {
		g.complete(&rd.Replies[i])
	}
	g.reportReady(&res)
	if err := g.r.Err(); err != nil {
		g.Fail(err)
	}
}

func (g *Group) runCheckpoint(c *vsr.CheckpointRequest, res *readyResults) {
	if c == nil {
		return
	}
	res.hasCkpt = true
	res.ckptOp = c.Op
	start := time.Now()
	res.ckptM, res.ckptErr = g.sm.Checkpoint(c.Op, c.Sessions)
	g.met.ObserveStorage(metrics.Checkpoint, time.Since(start))
	if res.ckptErr != nil {
		g.log.Error("checkpoint failed", zap.Uint64("op", c.Op), zap.Error(res.ckptErr))
	}
}

// writeState durably writes the Ready's state record to the view state.
func (g *Group) writeState(state []byte, res *readyResults) {
	if state == nil {
		return
	}
	res.hasState = true
	res.stateErr = g.vs.write(state)
	if res.stateErr == nil {
		if st, err := vsr.DecodeState(state); err == nil {
			res.stateCk = st.Checkpoint
		}
	} else {
		g.log.Error("state record write failed", zap.Error(res.stateErr))
	}
}

// journalRun is a run of consecutive appends written with one call.
type journalRun struct {
	g    *Group
	res  *readyResults
	ents []journal.Entry
	ops  []appended
	sync bool
}

func (r *journalRun) add(op *vsr.JournalOp) {
	r.ents = append(r.ents, journal.Entry{Op: op.Op, Parts: [][]byte{op.Header[:], op.Body}})
	r.ops = append(r.ops, appended{op: op.Op, id: op.Header.Identity()})
	if op.Sync || r.g.sm.SyncAppend(op.Header) {
		r.sync = true
	}
}

// flush appends the run: appends that must be fdatasync'ed wait for the
// group commit, the others are done now.
func (r *journalRun) flush() {
	if len(r.ents) == 0 {
		return
	}
	g, res := r.g, r.res
	start := time.Now()
	err := g.j.Append(r.ents...)
	g.met.ObserveStorage(metrics.JournalWrite, time.Since(start))
	if err != nil {
		res.appendE = err
		res.appendFl = append(res.appendFl, r.ops...)
	} else if r.sync {
		g.syncing = append(g.syncing, r.ops...)
		g.host.NeedSync(g)
	} else {
		res.doneNow = append(res.doneNow, r.ops...)
	}
	clear(r.ents)
	r.ents, r.ops, r.sync = r.ents[:0], r.ops[:0], false
}

// runJournal executes the Ready's journal operations in order; false when
// one failed and stopped the group.
func (g *Group) runJournal(ops []vsr.JournalOp, res *readyResults) bool {
	run := journalRun{g: g, res: res}
	for i := range ops {
		op := &ops[i]
		if op.Kind == vsr.JournalAppend {
			run.add(op)
			continue
		}
		run.flush()
		if err := g.journalOp(op); err != nil {
			g.Fail(err)
			return false
		}
	}
	run.flush()
	return true
}

// journalOp executes a truncate, a repair or a discard.
func (g *Group) journalOp(op *vsr.JournalOp) error {
	switch op.Kind {
	case vsr.JournalTruncate:
		if _, err := g.j.TruncateFrom(op.Op + 1); err != nil {
			return fmt.Errorf("journal truncate above %d: %w", op.Op, err)
		}
	case vsr.JournalRewrite:
		if err := g.j.Repair(op.Op, op.Header[:], op.Body); err != nil {
			return fmt.Errorf("journal repair of op %d: %w", op.Op, err)
		}
		g.log.Info("journal entry repaired from a peer", zap.Uint64("op", op.Op))
		g.met.Repair(g.Kind())
		g.syncing = append(g.syncing, appended{op: op.Op, id: op.Header.Identity()})
		g.host.NeedSync(g)
	case vsr.JournalDiscard:
		if err := g.j.DiscardPrefix(op.Op); err != nil {
			return fmt.Errorf("journal discard through %d: %w", op.Op, err)
		}
	}
	return nil
}

// runReads reads journal frames, from the boot's copies when it has them.
func (g *Group) runReads(rs []vsr.Read, res *readyResults) {
	for _, rr := range rs {
		if b, ok := g.bootBodies[rr.Op]; ok {
			delete(g.bootBodies, rr.Op)
			res.reads = append(res.reads, readDone{op: rr.Op, frame: b})
			continue
		}
		b, err := g.j.Read(rr.Op)
		if errors.Is(err, journal.ErrCorrupt) || errors.Is(err, journal.ErrFaulty) {
			// The stored bytes are wrong, which no retry mends: report the
			// entry as one that does not verify, so the replica marks it
			// faulty and fetches it from a peer (an error here means "read
			// again later").
			g.log.Warn("journal entry damaged; fetching it from a peer", zap.Uint64("op", rr.Op), zap.Error(err))
			b, err = nil, nil
		}
		res.reads = append(res.reads, readDone{op: rr.Op, frame: b, err: err})
	}
}

// runArtifacts serves and stages state-transfer artifact bytes.
func (g *Group) runArtifacts(reads []vsr.ArtifactRead, writes []vsr.ArtifactWrite, res *readyResults) {
	for _, ar := range reads {
		b, err := g.sm.ReadArtifact(ar.Checkpoint, ar.Artifact, ar.Offset, ar.Length)
		if err != nil {
			g.log.Warn("state transfer: serving an artifact failed", zap.Uint64("checkpoint", ar.Checkpoint),
				zap.Uint32("artifact", ar.Artifact), zap.Error(err))
		}
		res.artReads = append(res.artReads, xferDone{token: ar.Token, data: b, err: err})
	}
	for _, aw := range writes {
		err := g.sm.WriteArtifact(aw.Checkpoint, aw.Artifact, aw.Offset, aw.Data)
		if err != nil {
			g.log.Warn("state transfer: staging an artifact failed", zap.Uint64("checkpoint", aw.Checkpoint),
				zap.Uint32("artifact", aw.Artifact), zap.Error(err))
		}
		res.artWrites = append(res.artWrites, xferDone{token: aw.Token, err: err})
	}
}

func (g *Group) runInstall(in *vsr.InstallRequest, res *readyResults) {
	if in == nil {
		return
	}
	res.hasInstall = true
	res.installOp = in.Manifest.Op
	res.installErr = g.sm.Install(in.Manifest)
	if res.installErr != nil {
		g.log.Error("state transfer: installing a checkpoint failed", zap.Uint64("checkpoint", res.installOp), zap.Error(res.installErr))
	} else {
		g.log.Info("state transfer: checkpoint installed", zap.Uint64("checkpoint", res.installOp))
	}
}

// reportReady reports the Ready's completions to the replica.
func (g *Group) reportReady(res *readyResults) {
	if res.hasState {
		g.r.StateDone(res.stateErr)
		if res.stateErr == nil && res.stateCk > g.durableCkpt {
			g.durableCkpt = res.stateCk
			g.sm.CheckpointDurable(res.stateCk)
		}
	}
	for _, a := range res.appendFl {
		g.r.AppendDone(a.op, a.id, res.appendE)
	}
	for _, a := range res.doneNow {
		g.r.AppendDone(a.op, a.id, nil)
	}
	for _, rdn := range res.reads {
		g.r.ReadDone(rdn.op, rdn.frame, rdn.err)
	}
	if res.hasCkpt {
		g.r.CheckpointDone(res.ckptOp, res.ckptM, res.ckptErr)
	}
	for _, d := range res.artReads {
		g.r.ArtifactReadDone(d.token, d.data, d.err)
	}
	for _, d := range res.artWrites {
		g.r.ArtifactWriteDone(d.token, d.err)
	}
	if res.hasInstall {
		g.r.InstallDone(res.installOp, res.installErr)
	}
}

// syncDone completes the appends that waited for the group commit.
func (g *Group) syncDone(err error) {
	ops := g.syncing
	g.syncing = nil
	if err == nil {
		g.j.SyncDone(g.ticket)
	}
	for _, a := range ops {
		g.r.AppendDone(a.op, a.id, err)
	}
	g.host.MarkDirty(g)
	if err := g.r.Err(); err != nil {
		g.Fail(err)
	}
}
