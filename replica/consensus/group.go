package consensus

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
)

// StateMachine is what a group needs from its state machine besides Apply.
type StateMachine interface {
	vsr.StateMachine
	// Checkpoint makes the state after op durable and returns the
	// checkpoint's manifest. It runs right after the Ready that asked for
	// it, before any other call into the replica, so the state machine
	// still holds exactly the state after op. It records the checkpoint in
	// the superblock with Group.WriteCheckpoint.
	Checkpoint(op uint64, sessions []byte) (vsr.Manifest, error)
	// CheckpointDurable reports that the durable state record now names
	// checkpoint op: older checkpoint artifacts may go.
	CheckpointDurable(op uint64)
	// SyncAppend reports whether the journal append of this prepare must be
	// fdatasync'ed before it counts as written (persisted durability).
	SyncAppend(h *vsr.Header) bool
	// State transfer: serve bytes of an artifact of this replica's latest
	// checkpoint, stage received artifact bytes, and replace the state
	// with a staged checkpoint.
	ReadArtifact(ckpt uint64, id uint32, off uint64, length uint32) ([]byte, error)
	WriteArtifact(ckpt uint64, id uint32, off uint64, data []byte) error
	Install(m vsr.Manifest) error
	// AppliedOp is the last op applied to the state machine.
	AppliedOp() uint64
}

// Waiter is a request waiting for its group's answer, opaque to the group
// (the host's own request type). The group records the answer with the
// setters and hands the waiter back through Host.Deliver.
type Waiter interface {
	// SetReply records the replica's (or the primary's) reply.
	SetReply(rp vsr.Reply)
	// SetCode records a non-zero error code for the reply's status field
	// (CodeUnavailable, a Drop code, or the code a primary answered a
	// forwarded request with).
	SetCode(code uint32)
}

// Host is what a group needs from the program running it. Every call is
// made on the goroutine driving the group.
type Host interface {
	// MarkDirty asks for the group's Ready to be run (Driver.MarkDirty).
	MarkDirty(g *Group)
	// NeedSync asks for the group's journal in the next group commit
	// (Driver.NeedSync).
	NeedSync(g *Group)
	// Send hands a message of the group's Ready to the replica plane.
	Send(g *Group, e vsr.Envelope)
	// SendPeer sends a framed message (a forwarded request) to replica
	// to; an error means it was not queued.
	SendPeer(to uint8, m vsr.Message) error
	// Deliver hands back a waiter whose answer is recorded.
	Deliver(w Waiter)
	// Role reports the group's role when it changed (see RoleChange).
	Role(g *Group, rc RoleChange)
}

// CodeUnavailable answers requests to a group that stopped after a storage
// failure which it never prepared (new ones, and those still in the
// request queue): Iggy's TransientNotAccepted (58), retryable for the
// client, which may reach a restarted node.
const CodeUnavailable = uint32(vsr.StatusTransientNotAccepted)

// CodeInDoubt answers the requests a stopping group had already taken
// into its pipeline (prepared, journaled or forwarded to the primary) but
// not yet answered, and (as a reply status, see forwardFailed) a forward
// the primary did not answer in time: Iggy's TransientNotCommitted (57).
// Such a request may still commit, on the other replicas or from this
// node's journal after the restart, so the answer must not say it was
// refused; the client treats it as a lost reply and retries with the same
// request identity, which the session (or producer) table dedupes.
const CodeInDoubt = uint32(vsr.StatusTransientNotCommitted)

// Spec describes a group to open.
type Spec struct {
	ID   uint64
	Name string
	Dir  string
	// FS holds the group's files; its Submit runs nothing of the group's
	// (the Driver submits group commits).
	FS     vfs.FS
	Config vsr.Config
	SM     StateMachine
	Host   Host
	// Log is the shard's logger (the group adds its name); Metrics may be
	// nil.
	Log     *zap.Logger
	Metrics *metrics.Metrics
	// Metadata selects the metadata journal (Dir/journal.wal) instead of a
	// partition journal (Dir/journal/).
	Metadata bool
	MetaOpts journal.MetadataOptions
	PartOpts journal.PartitionOptions
	// Cluster is the cluster id the superblock must carry; ClusterName the
	// configured cluster.name, for the refusal when it does not.
	Cluster     superblock.Uint128
	ClusterName string
	Incarnation uint64
	// Restore rebuilds the state machine at checkpoint op (the one the
	// durable state record names) and returns its manifest and the session
	// table stored with it.
	Restore func(op uint64) (*vsr.Manifest, []byte, error)
	// Rejoin marks an empty group whose replica may have acknowledged ops
	// before a wipe (vsr.Boot.Rejoin).
	Rejoin bool
	// Sender signs the group's forwarded frames; ForwardTimeoutTicks is how
	// long a forwarded request (and a forwarded reply waiting for its op to
	// apply here) may wait.
	Sender              vsr.Sender
	ForwardTimeoutTicks uint64
}

// Group drives one vsr.Replica: it executes the replica's Ready (state
// record writes, journal appends, reads, checkpoints), routes replies to
// the waiters and hands replica-plane messages to the host. It is owned by
// one goroutine.
type Group struct {
	host Host
	id   uint64
	name string
	dir  string
	cfg  vsr.Config
	r    *vsr.Replica
	sm   StateMachine
	j    *journal.Journal
	vs   *viewState
	sb   *superblock.Superblock
	log  *zap.Logger
	met  *metrics.Metrics

	waiting map[uint64]Waiter
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
	sender     vsr.Sender
	fwdTimeout uint64
	fwd        map[uint64]uint64
	ticks      uint64
	// tickedAt is the host's tick count the group last ran to (TickTo);
	// awake: it is on its driver's awake list.
	tickedAt uint64
	awake    bool
	held     []heldReply
	// commitNow asks for an immediate commit broadcast once the current
	// Ready is done (vsr CommitNow).
	commitNow bool
	role      roleWatch
	lag       lagWatch
	failed    error
	closed    bool
}

type appended struct {
	op uint64
	id vsr.Checksum
}

// Open recovers a group from spec.Dir (creating it when new): superblock,
// view state, the checkpoint the view state names, the journal. The group
// is marked dirty so the next drive replays the journal.
func Open(spec Spec) (*Group, error) {
	sb, err := openSuperblock(spec)
	if err != nil {
		return nil, err
	}
	g := &Group{host: spec.Host, id: spec.ID, name: spec.Name, dir: spec.Dir, cfg: spec.Config, sm: spec.SM, sb: sb,
		log: spec.Log.With(zap.String("group", spec.Name)), met: spec.Metrics, waiting: map[uint64]Waiter{},
		sender: spec.Sender, fwdTimeout: spec.ForwardTimeoutTicks}
	boot, err := g.recover(spec)
	if err != nil {
		g.CloseFiles()
		return nil, fmt.Errorf("replica: group %s: %w", spec.Name, err)
	}
	r, err := vsr.New(spec.Config, spec.SM, boot)
	if err != nil {
		g.CloseFiles()
		return nil, fmt.Errorf("replica: group %s: %w", spec.Name, err)
	}
	g.r = r
	g.host.MarkDirty(g)
	return g, nil
}

// openSuperblock opens (formatting when new) the group's superblock.
func openSuperblock(spec Spec) (*superblock.Superblock, error) {
	fsys := spec.FS
	if err := vfs.MkdirAllSync(fsys, spec.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("replica: creating %s: %w", spec.Dir, err)
	}
	sb, err := superblock.Open(fsys, spec.Dir, spec.Cluster, spec.Config.Replica)
	if errors.Is(err, superblock.ErrClusterMismatch) {
		return nil, fmt.Errorf("replica: group %s: the data in %s belongs to another cluster (this node runs cluster.name %q); refusing to use it: %w",
			spec.Name, spec.Dir, spec.ClusterName, err)
	}
	if errors.Is(err, superblock.ErrReplicaMismatch) {
		return nil, fmt.Errorf("replica: group %s: the data in %s belongs to another replica (this node is --replica-id %d); refusing to use it: %w",
			spec.Name, spec.Dir, spec.Config.Replica, err)
	}
	if errors.Is(err, superblock.ErrNotFound) {
		sb, err = superblock.Format(fsys, spec.Dir, superblock.State{
			Cluster: spec.Cluster, Replica: spec.Config.Replica, ReplicaCount: spec.Config.ReplicaCount})
	}
	if err != nil {
		return nil, fmt.Errorf("replica: group %s: %w", spec.Name, err)
	}
	return sb, nil
}

// recover reads the view state, restores the checkpoint it names, opens
// the journal and returns what vsr boots from.
func (g *Group) recover(spec Spec) (vsr.Boot, error) {
	boot := vsr.Boot{Incarnation: spec.Incarnation}
	vs, payload, err := openViewState(spec.FS, spec.Dir)
	if err != nil {
		return boot, err
	}
	g.vs = vs
	var ckpt uint64
	var st *vsr.State
	if payload != nil {
		st, err = vsr.DecodeState(payload)
		if err != nil {
			return boot, err
		}
		boot.State = payload
		ckpt = st.Checkpoint
		g.durableCkpt = ckpt
		if ckpt > 0 {
			m, sessions, err := spec.Restore(ckpt)
			if err != nil {
				return boot, fmt.Errorf("restoring checkpoint %d: %w", ckpt, err)
			}
			boot.Checkpoint, boot.Sessions = m, sessions
		}
	}
	// A torn journal tail may hold ops this replica acknowledged (see
	// "Damaged journal heads" in the replica package doc): in a cluster,
	// the fence is made durable before the journal cuts the tail, and vsr
	// boots recovering_head.
	beforeCut := func(*journal.Torn) error {
		if spec.Config.ReplicaCount <= 1 || st == nil {
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
	if err := g.openJournal(spec, beforeCut); err != nil {
		return boot, err
	}
	if boot.HeadUncertain {
		g.log.Warn("journal tail damaged and possibly acknowledged: replica fenced, recovering its head from peers",
			zap.Uint64("journal_last", g.j.Last()))
	}
	if rec := g.j.Recovery(); rec != nil && (rec.Torn != nil || len(rec.Faulty) > 0) {
		g.log.Warn("journal recovered with damage", zap.Any("torn", rec.Torn), zap.Any("faulty", rec.Faulty))
	}
	if spec.Config.ReplicaCount <= 1 {
		if err := soloJournalCorrupt(g.j.Recovery(), ckpt, spec.Dir); err != nil {
			return boot, err
		}
	}
	if payload == nil && g.j.Len() > 0 {
		return boot, fmt.Errorf("%w: journal holds ops %d..%d but no state record names them", ErrStateLost, g.j.First(), g.j.Last())
	}
	boot.Journal = g.readBootJournal(ckpt)
	if payload == nil && spec.Rejoin && spec.Config.ReplicaCount > 1 {
		boot.Rejoin = true
		g.log.Info("empty group rejoins: it takes no part in votes until it caught up from its peers")
	}
	return boot, nil
}

func (g *Group) openJournal(spec Spec, beforeCut func(*journal.Torn) error) error {
	var err error
	if spec.Metadata {
		opts := spec.MetaOpts
		opts.BeforeCut = beforeCut
		g.j, _, err = journal.OpenMetadata(spec.FS, spec.Dir, opts)
	} else {
		opts := spec.PartOpts
		opts.BeforeCut = beforeCut
		g.j, _, err = journal.OpenPartition(spec.FS, filepath.Join(spec.Dir, "journal"), opts)
	}
	return err
}

// readBootJournal reads every journal entry's header for vsr and keeps
// the frames above the checkpoint for the replay.
func (g *Group) readBootJournal(ckpt uint64) []vsr.JournalEntry {
	if g.j.Len() == 0 {
		return nil
	}
	var out []vsr.JournalEntry
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
		out = append(out, e)
	}
	g.bootOps = len(g.bootBodies)
	return out
}

// ErrJournalCorrupt: a single node's journal holds damaged ops above its
// checkpoint that were synced (intact records or a sync marker after them
// say so) and that no peer can repair.
var ErrJournalCorrupt = errors.New("replica: journal corrupt")

// ErrStateLost: the view state holds no valid record while the journal
// holds ops, so the record was destroyed (its only written slot, or both,
// damaged). The storage is damaged: a cluster node sets it aside and
// refills the replica from its peers.
var ErrStateLost = errors.New("replica: view state lost")

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
			ErrJournalCorrupt, f.File, f.Offset, ops, ckpt, dir)
	}
	return nil
}

// fenceViewState durably writes st with Fenced and HeadPending set (vsr
// boots such a record recovering_head and fenced), unless st says so
// already; it returns the new record and its encoding (nil when nothing was
// written). See "Damaged journal heads" in the replica package doc.
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

// WriteCheckpoint durably records checkpoint op in the superblock: its op
// (and the commit point, at least op), the checksum of its checkpoint file
// and the offset frontier (raised to frontier; 0 leaves it). The state
// machine calls it from Checkpoint and Install.
//
// The superblock is written before the view state names the checkpoint,
// so after a crash in between it may name a newer checkpoint than the one
// the replica restarts from, and the replica's next checkpoint may be
// older than that one (CheckpointAfter requests are not durable, so the
// checkpoint ops differ after a restart). The superblock then keeps the
// newer checkpoint (its files stay until the view state names a newer
// one) and only the commit point and frontier are raised; recording the
// older op would move the superblock's checkpoint back, which it refuses
// (real-stack simulator, seed 1226: a torn superblock write left
// checkpoint 33 on disk, and every restart panicked at checkpoint 32).
//
// A failed write stops the group: the superblock refuses every later
// write, so no checkpoint could complete again until a restart recovers
// the group from disk.
func (g *Group) WriteCheckpoint(op uint64, checksum superblock.Uint128, frontier uint64) error {
	st := g.sb.State()
	if op >= st.CheckpointOp {
		st.CheckpointOp = op
		st.CheckpointChecksum = checksum
	}
	st.Commit = max(st.Commit, op)
	st.OffsetFrontier = max(st.OffsetFrontier, frontier)
	if err := g.sb.Write(st); err != nil {
		g.Fail(err)
		return err
	}
	return nil
}

// CloseFiles closes the journal, view state and superblock (without
// answering waiters: see Drop).
func (g *Group) CloseFiles() {
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

// ID is the group id (vsr.MetadataGroup or a partition's namespace).
func (g *Group) ID() uint64 { return g.id }

// Name is the group's name in logs.
func (g *Group) Name() string { return g.name }

// Log is the group's logger (the shard's, with the group's name).
func (g *Group) Log() *zap.Logger { return g.log }

// Replica is the group's vsr replica, for reads of its state (Info) and
// requests that need no waiter (CheckpointAfter).
func (g *Group) Replica() *vsr.Replica { return g.r }

// Superblock returns the group's durable control record.
func (g *Group) Superblock() superblock.State { return g.sb.State() }

// Failed is the error that stopped the group, nil while it runs.
func (g *Group) Failed() error { return g.failed }

// Closed reports whether the group was dropped.
func (g *Group) Closed() bool { return g.closed }

// Usable reports whether the group takes requests and frames.
func (g *Group) Usable() bool { return !g.closed && g.failed == nil }

// DurableCheckpoint is the checkpoint the durable state record names.
func (g *Group) DurableCheckpoint() uint64 { return g.durableCkpt }

// BootOps is the number of journal ops above the checkpoint the boot
// replayed.
func (g *Group) BootOps() int { return g.bootOps }

// EndBoot drops the journal frames kept for the boot replay (call after
// the first drive).
func (g *Group) EndBoot() { g.bootBodies = nil }

// Kind is the group's label in the metrics.
func (g *Group) Kind() metrics.GroupKind {
	if g.id == vsr.MetadataGroup {
		return metrics.Metadata
	}
	return metrics.Partition
}

// Submit hands a request to the replica (or, on a backup in normal
// status, forwards it to the primary); w gets the answer.
func (g *Group) Submit(w Waiter, req vsr.Request) {
	if g.failed != nil {
		w.SetCode(CodeUnavailable)
		g.host.Deliver(w)
		return
	}
	g.token++
	req.Token = g.token
	g.waiting[req.Token] = w
	if g.cfg.ReplicaCount > 1 {
		if to, ok := g.forwardTarget(); ok {
			g.forward(to, req)
			return
		}
	}
	g.r.Submit(req)
	g.host.MarkDirty(g)
}

// SubmitHere hands a request to this replica, never forwarding it (a
// request a backup forwarded here: a replica that is no longer primary
// refuses it, and the origin's client retries).
func (g *Group) SubmitHere(w Waiter, req vsr.Request) {
	g.token++
	req.Token = g.token
	g.waiting[req.Token] = w
	g.r.Submit(req)
	g.host.MarkDirty(g)
}

// Step hands the replica a replica-plane message.
func (g *Group) Step(m vsr.Message) {
	g.r.Step(m)
	g.host.MarkDirty(g)
}

// CommitNow asks the replica for an immediate commit broadcast.
func (g *Group) CommitNow() {
	g.r.CommitNow()
	g.host.MarkDirty(g)
}

// CommitSoon is CommitNow for a caller inside the group's Ready
// processing (a waiter answered by a reply): the broadcast goes out when
// the current Ready loop ends, in the same pass.
func (g *Group) CommitSoon() {
	g.commitNow = true
	g.host.MarkDirty(g)
}

// complete routes a reply to its waiter.
func (g *Group) complete(rp *vsr.Reply) {
	w, ok := g.waiting[rp.Token]
	if !ok {
		return
	}
	delete(g.waiting, rp.Token)
	w.SetReply(*rp)
	if rp.Op != 0 && g.id == vsr.MetadataGroup && g.cfg.ReplicaCount > 1 {
		// Metadata changes are rare and every node serves reads of them:
		// tell the backups now, not at the next commit heartbeat.
		g.commitNow = true
	}
	g.host.Deliver(w)
}

// Fail stops the group: the replica can no longer be trusted to keep its
// journal's order (a failed write or fdatasync). Waiting requests are
// answered (CodeInDoubt, or CodeUnavailable for those never prepared);
// new ones are refused until the node restarts and recovers the group
// from disk.
func (g *Group) Fail(err error) {
	if g.failed != nil {
		return
	}
	g.failed = err
	g.log.Error("consensus group stopped; restart the server to recover it from disk", zap.Error(err))
	g.answerInDoubt()
	g.releaseHeld()
}

// Drop closes the group's files and answers every waiting request with
// code (the group is being deleted).
func (g *Group) Drop(code uint32) {
	g.answerAll(func(uint64) uint32 { return code })
	g.closeDropped()
}

// Stop closes the group's files on shutdown: waiting requests are
// answered as Fail answers them (a prepared one may commit after the
// restart).
func (g *Group) Stop() {
	g.answerInDoubt()
	g.closeDropped()
}

func (g *Group) closeDropped() {
	g.closed = true
	g.releaseHeld()
	g.CloseFiles()
}

// answerAll answers every waiting request, in submission order, with the
// code codeOf gives its token.
func (g *Group) answerAll(codeOf func(token uint64) uint32) {
	for _, tok := range slices.Sorted(maps.Keys(g.waiting)) {
		w := g.waiting[tok]
		delete(g.waiting, tok)
		w.SetCode(codeOf(tok))
		g.host.Deliver(w)
	}
}

// answerInDoubt answers every waiting request of a group that stops:
// CodeUnavailable if it still waits in the replica's request queue (never
// prepared: it cannot commit anywhere), CodeInDoubt otherwise. The
// otherwise is deliberately wide: a prepared op may commit on the other
// replicas or after the restart, a forwarded request may be in the
// primary's pipeline, and a reply of the Ready the failure cut short was
// not delivered.
func (g *Group) answerInDoubt() {
	g.answerAll(func(tok uint64) uint32 {
		if g.r.Queued(tok) {
			return CodeUnavailable
		}
		return CodeInDoubt
	})
}
