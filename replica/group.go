package replica

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
)

// groupSM is what a group needs from its state machine besides Apply.
type groupSM interface {
	vsr.StateMachine
	// checkpoint makes the state after op durable and returns the
	// checkpoint's manifest. It runs right after the Ready that asked for
	// it, before any other call into the replica, so the state machine
	// still holds exactly the state after op.
	checkpoint(op uint64, sessions []byte) (vsr.Manifest, error)
	// checkpointDurable reports that the durable state record now names
	// checkpoint op: older checkpoint artifacts may go.
	checkpointDurable(op uint64)
	// syncAppend reports whether the journal append of this prepare must be
	// fdatasync'ed before it counts as written (persisted durability).
	syncAppend(h *vsr.Header) bool
	// State transfer (transfer.go): serve bytes of an artifact of this
	// replica's latest checkpoint, stage received artifact bytes, and
	// replace the state with a staged checkpoint.
	readArtifact(ckpt uint64, id uint32, off uint64, length uint32) ([]byte, error)
	writeArtifact(ckpt uint64, id uint32, off uint64, data []byte) error
	install(m vsr.Manifest) error
	// appliedOp is the last op applied to the state machine.
	appliedOp() uint64
}

// groupSpec describes a group to open.
type groupSpec struct {
	id   uint64
	name string
	dir  string
	cfg  vsr.Config
	sm   groupSM
	// metadata selects the metadata journal (dir/journal.wal) instead of a
	// partition journal (dir/journal/).
	metadata    bool
	metaOpts    journal.MetadataOptions
	partOpts    journal.PartitionOptions
	cluster     superblock.Uint128
	incarnation uint64
	// restore rebuilds the state machine at checkpoint op (the one the
	// durable state record names) and returns its manifest and the session
	// table stored with it.
	restore func(op uint64) (*vsr.Manifest, []byte, error)
	// rejoin marks an empty group whose replica may have acknowledged ops
	// before a wipe (vsr.Boot.Rejoin).
	rejoin bool
}

// group drives one vsr.Replica: it executes the replica's Ready (state
// record writes, journal appends, reads, checkpoints), routes replies to the
// waiting tasks and hands replica-plane messages to the transport. It is
// owned by one shard loop.
type group struct {
	sh   *shardLoop
	id   uint64
	name string
	dir  string
	r    *vsr.Replica
	sm   groupSM
	j    *journal.Journal
	vs   *viewState
	sb   *superblock.Superblock
	log  *zap.Logger

	waiting map[uint64]*task
	token   uint64
	// bootBodies holds the journal entries read at boot above the
	// checkpoint, so the replay that follows does not read them twice.
	bootBodies map[uint64][]byte
	// bootOps counts them: the journal ops above the checkpoint that
	// recovery replays ("recovered" log lines).
	bootOps int

	dirty   bool
	syncing []appended
	ticket  journal.SyncTicket

	durableCkpt uint64
	// Cluster mode: forwarded requests (token → deadline in ticks) and
	// the tick count.
	fwd   map[uint64]uint64
	ticks uint64
	held  []heldReply
	// commitNow asks for an immediate commit broadcast once the current
	// Ready is done (vsr CommitNow).
	commitNow bool
	// The last published role (cluster_view.go).
	roleKnown   bool
	roleView    uint32
	roleStatus  string
	rolePrimary bool
	roleCommit  uint64
	failed      error
	closed      bool
	// Lag watch (watchLag): the applied op last seen and the tick it last
	// moved or the replica caught up, and the tick of the last report.
	lagApplied uint64
	lagSince   uint64
	lagLogged  uint64
	lagCheckAt uint64
	lagStatus  string
	lagView    uint32
}

// lagReportTicks: how long a replica may know of committed ops it has not
// applied, without applying any, before watchLag reports it (and how often
// it repeats the report while that lasts).
const lagReportTicks = uint64(5 * time.Second / vsr.TickInterval)

// lagCheckTicks: how often watchLag looks.
const lagCheckTicks = 16

// watchLag logs a replica that knows ops are committed beyond what it
// applied and makes no progress towards them, or that stays out of normal
// status in one view: a replica that cannot catch up (journal repair, state
// transfer or a view change stuck) is otherwise silent.
func (g *group) watchLag() {
	if g.sh.n.replicaCount <= 1 || g.ticks < g.lagCheckAt {
		return
	}
	g.lagCheckAt = g.ticks + lagCheckTicks
	info := g.r.Info()
	stuck := info.Status != "normal" && info.Status == g.lagStatus && info.View == g.lagView
	g.lagStatus, g.lagView = info.Status, info.View
	if !stuck && (info.CommitMin >= info.CommitMax || info.CommitMin != g.lagApplied) {
		g.lagApplied, g.lagSince = info.CommitMin, g.ticks
		return
	}
	if g.ticks-g.lagSince < lagReportTicks || g.ticks-g.lagLogged < lagReportTicks {
		return
	}
	g.lagLogged = g.ticks
	g.log.Warn("replica behind or out of normal status, not catching up",
		zap.String("status", info.Status), zap.Uint32("view", info.View), zap.Uint32("log_view", info.LogView),
		zap.Uint8("primary", info.Primary), zap.Uint64("op", info.Op),
		zap.Uint64("commit_min", info.CommitMin), zap.Uint64("commit_max", info.CommitMax),
		zap.Uint64("checkpoint", info.Checkpoint), zap.Uint64("journal_floor", info.JournalFloor),
		zap.Uint64("journal_head", info.JournalHead), zap.Uint64("durable_head", info.DurableHead),
		zap.Uint64("anchor", info.AnchorOp), zap.Uint64("primary_head", info.PrimaryHead),
		zap.Bool("transferring", info.Transferring), zap.Uint8("transfer_peer", info.TransferPeer),
		zap.Uint64("transfer_op", info.TransferOp), zap.Bool("rejoining", info.Rejoining),
		zap.Bool("fenced", info.Fenced), zap.String("detail", g.r.CatchUpDetail()), zap.Duration("stalled", time.Duration(g.ticks-g.lagSince)*vsr.TickInterval))
}

type appended struct {
	op uint64
	id vsr.Checksum
}

// openGroup recovers a group from dir (creating it when new): superblock,
// view state, the checkpoint the view state names, the journal.
func (sh *shardLoop) openGroup(spec groupSpec) (*group, error) {
	fsys := sh.fs
	if err := vfs.MkdirAllSync(fsys, spec.dir, 0o755); err != nil {
		return nil, fmt.Errorf("replica: creating %s: %w", spec.dir, err)
	}
	sb, err := superblock.Open(fsys, spec.dir, spec.cluster, spec.cfg.Replica)
	if errors.Is(err, superblock.ErrClusterMismatch) {
		return nil, fmt.Errorf("replica: group %s: the data in %s belongs to another cluster (this node runs cluster.name %q); refusing to use it: %w",
			spec.name, spec.dir, sh.n.cfg.Cluster.Name, err)
	}
	if errors.Is(err, superblock.ErrReplicaMismatch) {
		return nil, fmt.Errorf("replica: group %s: the data in %s belongs to another replica (this node is --replica-id %d); refusing to use it: %w",
			spec.name, spec.dir, spec.cfg.Replica, err)
	}
	if errors.Is(err, superblock.ErrNotFound) {
		sb, err = superblock.Format(fsys, spec.dir, superblock.State{
			Cluster: spec.cluster, Replica: spec.cfg.Replica, ReplicaCount: spec.cfg.ReplicaCount})
	}
	if err != nil {
		return nil, fmt.Errorf("replica: group %s: %w", spec.name, err)
	}
	g := &group{sh: sh, id: spec.id, name: spec.name, dir: spec.dir, sm: spec.sm, sb: sb,
		log: sh.log.With(zap.String("group", spec.name)), waiting: map[uint64]*task{}}
	fail := func(err error) (*group, error) {
		g.closeFiles()
		return nil, fmt.Errorf("replica: group %s: %w", spec.name, err)
	}
	vs, payload, err := openViewState(fsys, spec.dir)
	if err != nil {
		return fail(err)
	}
	g.vs = vs
	boot := vsr.Boot{Incarnation: spec.incarnation}
	var ckpt uint64
	var st *vsr.State
	if payload != nil {
		st, err = vsr.DecodeState(payload)
		if err != nil {
			return fail(err)
		}
		boot.State = payload
		ckpt = st.Checkpoint
		g.durableCkpt = ckpt
		if ckpt > 0 {
			m, sessions, err := spec.restore(ckpt)
			if err != nil {
				return fail(fmt.Errorf("restoring checkpoint %d: %w", ckpt, err))
			}
			boot.Checkpoint, boot.Sessions = m, sessions
		}
	}
	// A torn journal tail may hold ops this replica acknowledged (see
	// "Damaged journal heads" in the package doc): in a cluster, the fence
	// is made durable before the journal cuts the tail, and vsr boots
	// recovering_head.
	beforeCut := func(t *journal.Torn) error {
		if spec.cfg.ReplicaCount <= 1 || st == nil {
			return nil
		}
		boot.HeadUncertain = true
		fenced, b, err := fenceViewState(vs, st)
		if err != nil {
			return err
		}
		if b != nil {
			st, payload, boot.State = fenced, b, b
		}
		return nil
	}
	if spec.metadata {
		opts := spec.metaOpts
		opts.BeforeCut = beforeCut
		g.j, _, err = journal.OpenMetadata(fsys, spec.dir, opts)
	} else {
		opts := spec.partOpts
		opts.BeforeCut = beforeCut
		g.j, _, err = journal.OpenPartition(fsys, filepath.Join(spec.dir, "journal"), opts)
	}
	if err != nil {
		return fail(err)
	}
	if boot.HeadUncertain {
		g.log.Warn("journal tail damaged and possibly acknowledged: replica fenced, recovering its head from peers",
			zap.Uint64("journal_last", g.j.Last()))
	}
	if rec := g.j.Recovery(); rec != nil && (rec.Torn != nil || len(rec.Faulty) > 0) {
		g.log.Warn("journal recovered with damage", zap.Any("torn", rec.Torn), zap.Any("faulty", rec.Faulty))
	}
	if spec.cfg.ReplicaCount <= 1 {
		if err := soloJournalCorrupt(g.j.Recovery(), ckpt, spec.dir); err != nil {
			return fail(err)
		}
	}
	if payload == nil && g.j.Len() > 0 {
		return fail(fmt.Errorf("journal holds ops %d..%d but no state record names them", g.j.First(), g.j.Last()))
	}
	if g.j.Len() > 0 {
		g.bootBodies = map[uint64][]byte{}
		for op := g.j.First(); op <= g.j.Last(); op++ {
			e := vsr.JournalEntry{Op: op}
			if info, ok := g.j.Info(op); ok && !info.Faulty {
				if b, err := g.j.Read(op); err == nil && len(b) >= vsr.HeaderSize {
					e.Header = new(vsr.Header)
					copy(e.Header[:], b[:vsr.HeaderSize])
					if op > ckpt {
						g.bootBodies[op] = b
					}
				} else if err != nil {
					g.log.Warn("journal entry unreadable at boot", zap.Uint64("op", op), zap.Error(err))
				}
			}
			boot.Journal = append(boot.Journal, e)
		}
		g.bootOps = len(g.bootBodies)
	}
	if payload == nil && spec.rejoin && spec.cfg.ReplicaCount > 1 {
		boot.Rejoin = true
		g.log.Info("empty group rejoins: it takes no part in votes until it caught up from its peers")
	}
	r, err := vsr.New(spec.cfg, spec.sm, boot)
	if err != nil {
		return fail(err)
	}
	g.r = r
	g.sh.markDirty(g)
	return g, nil
}

// errJournalCorrupt: a single node's journal holds damaged ops above its
// checkpoint that were synced (intact records or a sync marker after them
// say so) and that no peer can repair.
var errJournalCorrupt = errors.New("replica: journal corrupt")

// soloJournalCorrupt refuses a single replica's journal with damage in the
// middle above the checkpoint (journal.Recovery.Faulty): those ops were
// durable and acknowledged, the node has no peer to repair them from, and
// dropping them (as a torn tail) would lose them and let their offsets be
// minted again. The error names the file, the byte offset and the ways
// out. Damage holding no op, or ops the checkpoint covers (discarded at
// the next checkpoint), is no reason to refuse.
func soloJournalCorrupt(rec *journal.Recovery, ckpt uint64, dir string) error {
	if rec == nil {
		return nil
	}
	for _, f := range rec.Faulty {
		if f.From != 0 && (f.From > f.To || f.To <= ckpt) {
			continue
		}
		ops := fmt.Sprintf("ops %d..%d", f.From, f.To)
		if f.From == 0 {
			ops = fmt.Sprintf("ops up to %d", f.To)
		}
		return fmt.Errorf("%w: %s is damaged at byte offset %d (%s, above checkpoint %d) with intact records after the damage, "+
			"so the damage is corruption of acknowledged records, not a torn tail; a single node has no peer to repair them from "+
			"and refuses to start rather than drop them. Ways out: restore the data directory (at least %s) from a backup, "+
			"or start with --fresh, which wipes this node's data (every stream on it is lost)",
			errJournalCorrupt, f.File, f.Offset, ops, ckpt, dir)
	}
	return nil
}

// fenceViewState durably writes st with Fenced and HeadPending set (vsr
// boots such a record recovering_head and fenced), unless st says so
// already; it returns the new record and its encoding (nil when nothing was
// written). See "Damaged journal heads" in the package doc.
func fenceViewState(vs *viewState, st *vsr.State) (*vsr.State, []byte, error) {
	if st.Fenced && st.HeadPending {
		return st, nil, nil
	}
	fenced := *st
	fenced.Fenced, fenced.HeadPending = true, true
	b := vsr.EncodeState(&fenced)
	if err := vs.write(b); err != nil {
		return nil, nil, fmt.Errorf("writing the fenced view state: %w", err)
	}
	return &fenced, b, nil
}

func (g *group) closeFiles() {
	if g.j != nil {
		_ = g.j.Close()
	}
	if g.vs != nil {
		_ = g.vs.close()
	}
	if g.sb != nil {
		_ = g.sb.Close()
	}
}

// submit hands a request to the replica; the task gets the reply.
func (g *group) submit(t *task, req vsr.Request) {
	if g.failed != nil {
		t.failStatus(wireCodeUnavailable)
		g.sh.deliverTask(t)
		return
	}
	g.token++
	req.Token = g.token
	g.waiting[req.Token] = t
	if g.sh.n.replicaCount > 1 {
		if to, ok := g.forwardTarget(); ok {
			g.forward(to, req)
			return
		}
	}
	g.r.Submit(req)
	g.sh.markDirty(g)
}

// kind is the group's label in the metrics.
func (g *group) kind() metrics.GroupKind {
	if g.id == vsr.MetadataGroup {
		return metrics.Metadata
	}
	return metrics.Partition
}

// process executes one Ready.
func (g *group) process(rd vsr.Ready) {
	var (
		ckptOp   uint64
		ckptM    vsr.Manifest
		ckptErr  error
		hasCkpt  = rd.Checkpoint != nil
		stateErr error
		stateCk  uint64
		hasState = rd.State != nil
		doneNow  []appended
		appendFl []appended
		appendE  error
		reads    []readDone
	)
	if hasCkpt {
		ckptOp = rd.Checkpoint.Op
		ckptM, ckptErr = g.sm.checkpoint(ckptOp, rd.Checkpoint.Sessions)
		if ckptErr != nil {
			g.log.Error("checkpoint failed", zap.Uint64("op", ckptOp), zap.Error(ckptErr))
		}
	}
	if hasState {
		stateErr = g.vs.write(rd.State)
		if stateErr == nil {
			if st, err := vsr.DecodeState(rd.State); err == nil {
				stateCk = st.Checkpoint
			}
		} else {
			g.log.Error("state record write failed", zap.Error(stateErr))
		}
	}

	var run []journal.Entry
	var runOps []appended
	runSync := false
	flush := func() {
		if len(run) == 0 {
			return
		}
		start := time.Now()
		err := g.j.Append(run...)
		g.sh.n.metrics.ObserveStorage(metrics.JournalWrite, time.Since(start))
		if err != nil {
			appendE = err
			appendFl = append(appendFl, runOps...)
		} else if runSync {
			g.syncing = append(g.syncing, runOps...)
			g.sh.needSync(g)
		} else {
			doneNow = append(doneNow, runOps...)
		}
		clear(run)
		run, runOps, runSync = run[:0], runOps[:0], false
	}
	for i := range rd.Journal {
		op := &rd.Journal[i]
		switch op.Kind {
		case vsr.JournalAppend:
			run = append(run, journal.Entry{Op: op.Op, Parts: [][]byte{op.Header[:], op.Body}})
			runOps = append(runOps, appended{op: op.Op, id: op.Header.Identity()})
			if op.Sync || g.sm.syncAppend(op.Header) {
				runSync = true
			}
		case vsr.JournalTruncate:
			flush()
			if _, err := g.j.TruncateFrom(op.Op + 1); err != nil {
				g.fail(fmt.Errorf("journal truncate above %d: %w", op.Op, err))
				return
			}
		case vsr.JournalRewrite:
			flush()
			if err := g.j.Repair(op.Op, op.Header[:], op.Body); err != nil {
				g.fail(fmt.Errorf("journal repair of op %d: %w", op.Op, err))
				return
			}
			g.log.Info("journal entry repaired from a peer", zap.Uint64("op", op.Op))
			g.sh.n.metrics.Repair(g.kind())
			g.syncing = append(g.syncing, appended{op: op.Op, id: op.Header.Identity()})
			g.sh.needSync(g)
		case vsr.JournalDiscard:
			flush()
			if err := g.j.DiscardPrefix(op.Op); err != nil {
				g.fail(fmt.Errorf("journal discard through %d: %w", op.Op, err))
				return
			}
		}
	}
	flush()
	for _, rr := range rd.Reads {
		if b, ok := g.bootBodies[rr.Op]; ok {
			delete(g.bootBodies, rr.Op)
			reads = append(reads, readDone{op: rr.Op, frame: b})
			continue
		}
		b, err := g.j.Read(rr.Op)
		reads = append(reads, readDone{op: rr.Op, frame: b, err: err})
	}
	for _, m := range rd.Messages {
		g.sh.n.transport.Send(g.id, m)
	}
	type xferDone struct {
		token uint64
		data  []byte
		err   error
	}
	var artReads, artWrites []xferDone
	for _, ar := range rd.ArtifactReads {
		b, err := g.sm.readArtifact(ar.Checkpoint, ar.Artifact, ar.Offset, ar.Length)
		if err != nil {
			g.log.Warn("state transfer: serving an artifact failed", zap.Uint64("checkpoint", ar.Checkpoint),
				zap.Uint32("artifact", ar.Artifact), zap.Error(err))
		}
		artReads = append(artReads, xferDone{token: ar.Token, data: b, err: err})
	}
	for _, aw := range rd.ArtifactWrites {
		err := g.sm.writeArtifact(aw.Checkpoint, aw.Artifact, aw.Offset, aw.Data)
		if err != nil {
			g.log.Warn("state transfer: staging an artifact failed", zap.Uint64("checkpoint", aw.Checkpoint),
				zap.Uint32("artifact", aw.Artifact), zap.Error(err))
		}
		artWrites = append(artWrites, xferDone{token: aw.Token, err: err})
	}
	var installOp uint64
	var installErr error
	hasInstall := rd.Install != nil
	if hasInstall {
		installOp = rd.Install.Manifest.Op
		installErr = g.sm.install(rd.Install.Manifest)
		if installErr != nil {
			g.log.Error("state transfer: installing a checkpoint failed", zap.Uint64("checkpoint", installOp), zap.Error(installErr))
		} else {
			g.log.Info("state transfer: checkpoint installed", zap.Uint64("checkpoint", installOp))
		}
	}
	for i := range rd.Replies {
		g.complete(&rd.Replies[i])
	}

	if hasState {
		g.r.StateDone(stateErr)
		if stateErr == nil && stateCk > g.durableCkpt {
			g.durableCkpt = stateCk
			g.sm.checkpointDurable(stateCk)
		}
	}
	for _, a := range appendFl {
		g.r.AppendDone(a.op, a.id, appendE)
	}
	for _, a := range doneNow {
		g.r.AppendDone(a.op, a.id, nil)
	}
	for _, rdn := range reads {
		g.r.ReadDone(rdn.op, rdn.frame, rdn.err)
	}
	if hasCkpt {
		g.r.CheckpointDone(ckptOp, ckptM, ckptErr)
	}
	for _, d := range artReads {
		g.r.ArtifactReadDone(d.token, d.data, d.err)
	}
	for _, d := range artWrites {
		g.r.ArtifactWriteDone(d.token, d.err)
	}
	if hasInstall {
		g.r.InstallDone(installOp, installErr)
	}
	if err := g.r.Err(); err != nil {
		g.fail(err)
	}
}

type readDone struct {
	op    uint64
	frame []byte
	err   error
}

// syncDone completes the appends that waited for the group commit.
func (g *group) syncDone(err error) {
	ops := g.syncing
	g.syncing = nil
	if err == nil {
		g.j.SyncDone(g.ticket)
	}
	for _, a := range ops {
		g.r.AppendDone(a.op, a.id, err)
	}
	g.sh.markDirty(g)
	if err := g.r.Err(); err != nil {
		g.fail(err)
	}
}

// complete routes a reply to its task.
func (g *group) complete(rp *vsr.Reply) {
	t, ok := g.waiting[rp.Token]
	if !ok {
		return
	}
	delete(g.waiting, rp.Token)
	t.vstatus = rp.Status
	t.evict = rp.Eviction
	t.op = rp.Op
	t.reply = rp.Body
	if rp.Op != 0 && g.id == vsr.MetadataGroup && g.sh.n.replicaCount > 1 {
		// Metadata changes are rare and every node serves reads of them:
		// tell the backups now, not at the next commit heartbeat.
		g.commitNow = true
	}
	g.sh.deliverTask(t)
}

// fail stops the group: the replica can no longer be trusted to keep its
// journal's order (a failed write or fdatasync). Waiting requests are
// answered; new ones are refused until the node restarts and recovers the
// group from disk.
func (g *group) fail(err error) {
	if g.failed != nil {
		return
	}
	g.failed = err
	g.log.Error("consensus group stopped; restart the server to recover it from disk", zap.Error(err))
	for tok, t := range g.waiting {
		delete(g.waiting, tok)
		t.failStatus(wireCodeUnavailable)
		g.sh.deliverTask(t)
	}
	g.releaseHeld()
}

// drop closes the group's files and answers every waiting request with
// code (the group is being deleted).
func (g *group) drop(code uint32) {
	for tok, t := range g.waiting {
		delete(g.waiting, tok)
		t.failStatus(code)
		g.sh.deliverTask(t)
	}
	g.closed = true
	g.releaseHeld()
	g.closeFiles()
}
