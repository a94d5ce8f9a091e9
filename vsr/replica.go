package vsr

import (
	"errors"
	"fmt"
)

type status uint8

const (
	statusNormal status = iota
	statusViewChange
	// statusRecovering: restarted with a trustworthy journal; probes the
	// primary with RequestStartView and still votes in view changes.
	statusRecovering
	// statusRecoveringHead: restarted without a trustworthy head (damaged
	// journal tail, or a wiped disk); probes, never votes, and waits for a
	// StartView.
	statusRecoveringHead
)

func (s status) String() string {
	return [...]string{"normal", "view_change", "recovering", "recovering_head"}[s]
}

// jstate is where a slot's prepare stands in the journal.
type jstate uint8

const (
	jNone      jstate = iota // not in the journal
	jWriting                 // append issued, AppendDone not yet seen
	jDurable                 // appended and complete
	jFaulty                  // in the journal but unreadable; not a nack
	jRewriting               // faulty, a verified copy is being written over it; not a nack
)

// slot holds one op of the in-memory window of JournalSlots ops.
type slot struct {
	op      uint64 // 0: empty
	h       Header // normalized canonical header
	body    []byte
	hasBody bool
	j       jstate
	reading bool
	// token routes the reply of a request this replica accepted as primary.
	token    uint64
	hasToken bool
}

// Replica is one replica of one consensus group. It is a deterministic state
// machine: its only inputs are the method calls below and its only outputs
// come out of Ready. It starts no goroutines, reads no clock and does no I/O,
// and it is not safe for concurrent use.
type Replica struct {
	cfg         Config
	sm          StateMachine
	hook        PrepareHook
	n, self     int
	qRep, qVC   int
	qNack       int
	offset      uint8 // PrimaryOffset of the group
	incarnation uint64
	rng         *PRNG
	ticks       uint64
	stopped     error

	status  status
	view    uint32
	logView uint32
	fenced  bool
	fenceOp uint64 // a fenced replica never nacks ops ≤ fenceOp

	// View headers of LogView (see State): kept current while normal is
	// derived from the ring; frozen at the DoViewChange when leaving.
	vhCommit   uint64
	vhCommitID Checksum
	vhHeaders  []Header

	durable       *State // last durably written state
	inflightState *State
	stateBusy     bool // a state write is in flight
	stateDirty    bool // in-memory state differs from durable
	stateRetry    timer
	// viewSeq counts changes of the view state (view, log_view, fence, view
	// headers); durableViewSeq is the newest one on disk. Messages and journal
	// appends wait while they differ.
	viewSeq         uint64
	inflightViewSeq uint64
	durableViewSeq  uint64
	held            []Envelope
	heldDropped     uint64

	ring         []slot
	op           uint64 // highest op with a known canonical header
	commitMin    uint64 // applied
	commitMax    uint64 // known committed
	anchorOp     uint64 // a committed op whose identity is known (repair target)
	anchorID     Checksum
	journalHead  uint64 // last op issued to the journal (contiguous)
	durableHead  uint64 // ops ≤ durableHead completed their append
	journalFloor uint64 // lowest op the journal still holds (0: empty)
	checkpoint   uint64
	checkpointID Checksum
	checkpointTS uint64
	// baseOp/baseID: the op below the first op of a journal that was reset
	// (state transfer, or a boot that dropped the journal), whose header the
	// replica may not hold.
	baseOp    uint64
	baseID    Checksum
	ckptBusy  bool
	ckptFresh bool // a checkpoint request waits in Ready: apply nothing more
	// ckptAfter: CheckpointAfter asked for a checkpoint at the first
	// applied op at or above it, ahead of CheckpointInterval.
	ckptAfter uint64
	resume    bool // Ready released a checkpoint hold: pump on the next HasReady
	ckptOp    uint64
	ckptID    Checksum
	ckptTS    uint64
	discarded uint64 // highest op discarded from the journal
	// faultyBelow: the highest journal entry at or below the checkpoint
	// that boot found corrupt (0: none). Nothing fetches such an entry
	// again (the checkpoint covers it), so the next discard covers it too:
	// a journal that compacts by copying what it keeps cannot keep it.
	faultyBelow uint64
	manifest    *Manifest
	lastTS      uint64
	cachedBytes int
	readRetry   uint64 // tick before which failed reads are not retried

	ackDirty            bool   // a cumulative PrepareOk is owed
	primaryHead         uint64 // the primary's head as its heartbeats report it
	journalResetPending bool   // state transfer: journal reset waits for the state write
	// journalKeepTail: the installed checkpoint lies inside the journal and
	// the journaled ops above it chain to it, so the reset only discards the
	// prefix the checkpoint covers and keeps the tail: truncating it would
	// drop ops this replica acknowledged in its durable log_view.
	journalKeepTail bool
	// fenceHold: a boot that made the replica recovering_head keeps every
	// journal operation (first the truncate of the tail it can no longer
	// vouch for) in heldJournal, in order, until a state record written
	// since — one that says fenced — is durable. Were the truncate to
	// survive a crash that lost the record, the next boot would find a
	// clean, shorter journal under an unfenced record and nack ops it had
	// acknowledged (simulator seed 2063089).
	fenceHold bool
	// viewHold: a journal truncate issued while the view state is not yet
	// durable (a view change that drops a divergent suffix) waits, and every
	// journal operation after it, until the view state of viewHoldSeq is
	// durable. The truncate removes ops acknowledged under the old log_view;
	// were it to survive a crash that lost the new record, the replica would
	// come back in the old log_view with a shorter journal and nack them
	// (simulator seed 2020831).
	viewHold    bool
	viewHoldSeq uint64
	heldJournal []JournalOp
	orphans     []orphanToken

	// Primary state.
	queue     []Request
	scratch   []uint64
	acked     []uint64 // per replica: highest op acknowledged in this view
	heard     []uint64 // per replica: tick of the last message in this view
	heartbeat uint64
	abdicated bool
	peerInc   []uint64

	// View change state.
	svcView      uint32
	svcFrom      []uint64 // per replica: tick+1 of its latest vote for svcView
	dvcs         []*dvcVote
	primaryReady bool // primary-elect adopted the merged log, repairing
	campaigning  bool // this replica wants a new view (its vote follows the highest target)

	probes int
	// rejoining: the disk was wiped; before adopting a view the replica
	// learns the views of n − replication + 1 other replicas (viewOf), so a
	// stale primary cannot lead it back into a view the group left.
	rejoining bool
	viewOf    []int64

	rep        repairState
	xfer       *transferState
	serve      []serveState
	serveReads map[uint64][]int
	tokens     uint64

	sessions *clientTable

	t  timers
	tk tickCounts

	out Ready
}

type timers struct {
	heartbeat  timer // backup: primary silent → start view change
	commit     timer // primary: broadcast Commit
	prepare    timer // primary: retransmit prepares
	svc        timer // resend StartViewChange
	dvc        timer // resend DoViewChange
	status     timer // view change took too long → next view
	rsv        timer // resend RequestStartView
	repair     timer // re-request repairs
	transfer   timer // re-request state transfer chunks
	checkpoint timer
}

// ErrStopped is wrapped by Err when the replica stopped itself because a
// journal append failed; the node must drop it and boot the group again from
// disk.
var ErrStopped = errors.New("vsr: replica stopped")

// New builds a replica from its configuration, the node's state machine
// (already restored to the checkpoint named in boot.State) and what the node
// recovered from disk.
func New(cfg Config, sm StateMachine, boot Boot) (*Replica, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sm == nil {
		return nil, fmt.Errorf("%w: nil state machine", ErrConfig)
	}
	if boot.Incarnation == 0 {
		return nil, fmt.Errorf("%w: zero incarnation", ErrConfig)
	}
	n := int(cfg.ReplicaCount)
	r := &Replica{
		cfg:         cfg,
		sm:          sm,
		n:           n,
		self:        int(cfg.Replica),
		incarnation: boot.Incarnation,
		rng:         NewPRNG(cfg.Seed ^ splitmix64(cfg.Group) ^ uint64(cfg.Replica)<<56 ^ boot.Incarnation),
		ring:        make([]slot, cfg.JournalSlots),
		acked:       make([]uint64, n),
		heard:       make([]uint64, n),
		peerInc:     make([]uint64, n),
		svcFrom:     make([]uint64, n),
		dvcs:        make([]*dvcVote, n),
		serve:       make([]serveState, n),
		viewOf:      make([]int64, n),
	}
	r.qRep, r.qVC, r.qNack = quorums(n)
	for i := range r.viewOf {
		r.viewOf[i] = -1
	}
	r.offset = PrimaryOffset(cfg.Group, cfg.ReplicaCount)
	if h, ok := sm.(PrepareHook); ok {
		r.hook = h
	}
	if cfg.Sessions {
		r.sessions = newClientTable(cfg.ClientsMax)
	} else if cfg.Dedup {
		r.sessions = newDedupTable(cfg.ClientsMax)
	}
	r.initTimers()
	if err := r.boot(boot); err != nil {
		return nil, err
	}
	return r, nil
}

// Err returns ErrStopped (wrapped with the cause) once the replica stopped.
func (r *Replica) Err() error { return r.stopped }

// Info is a snapshot of the replica's position, for metrics, the cluster
// metadata reply and tests.
type Info struct {
	Replica     uint8
	Status      string
	View        uint32
	LogView     uint32
	Primary     uint8
	IsPrimary   bool
	Op          uint64
	CommitMin   uint64
	CommitMax   uint64
	Checkpoint  uint64
	JournalHead uint64
	DurableHead uint64
	Incarnation uint64
	// Fenced: the replica may have forgotten ops it acknowledged (see
	// State.Fenced).
	Fenced bool
	// HeldDropped counts messages dropped because too many waited for a
	// state write (a wedged superblock).
	HeldDropped uint64
	// Diagnostics of catching up: the journal's lowest retained op (0:
	// none below the head), a committed op whose identity is known above
	// the head, the primary's reported head, whether a state transfer is
	// under way (from TransferPeer, of checkpoint TransferOp once its
	// manifest arrived), and whether the replica still learns the views
	// of its peers after a wipe.
	JournalFloor uint64
	AnchorOp     uint64
	PrimaryHead  uint64
	Transferring bool
	TransferPeer uint8
	TransferOp   uint64
	Rejoining    bool
	// ViewHead is the head op of the log this replica adopted or built in
	// its current view (its own head, or the head a StartView announced
	// while the replica is still too far behind to hold those headers).
	ViewHead uint64
}

// Info returns the replica's current position.
func (r *Replica) Info() Info {
	i := Info{
		Replica:     uint8(r.self),
		Status:      r.status.String(),
		View:        r.view,
		LogView:     r.logView,
		Primary:     r.primaryIndex(r.view),
		IsPrimary:   r.isPrimary(),
		Op:          r.op,
		CommitMin:   r.commitMin,
		CommitMax:   r.commitMax,
		Checkpoint:  r.checkpoint,
		JournalHead: r.journalHead,
		DurableHead: r.durableHead,
		Incarnation: r.incarnation,
		Fenced:      r.fenced,
		HeldDropped: r.heldDropped,

		JournalFloor: r.journalFloor,
		AnchorOp:     r.anchorOp,
		PrimaryHead:  r.primaryHead,
		Transferring: r.xfer != nil,
		Rejoining:    r.rejoining,
		ViewHead:     r.op,
	}
	if r.logView == r.view {
		i.ViewHead = max(i.ViewHead, r.vhCommit+uint64(len(r.vhHeaders)))
	}
	if r.xfer != nil {
		i.TransferPeer = uint8(r.xfer.peer)
		if r.xfer.manifest != nil {
			i.TransferOp = r.xfer.manifest.Op
		}
	}
	return i
}

// CatchUpDetail describes the replica's journal repair or state transfer in
// one line, for logs about a replica that does not catch up.
func (r *Replica) CatchUpDetail() string {
	if x := r.xfer; x != nil {
		var op uint64
		if x.manifest != nil {
			op = x.manifest.Op
		}
		return fmt.Sprintf("transfer from %d of checkpoint %d: artifact %d at %d, attempt %d, writes %d, installing %v, retry in %d ticks",
			x.peer, op, x.index, x.stagedAt(), x.attempts, x.writes, x.installing, r.t.transfer.left)
	}
	if r.status != statusNormal {
		return fmt.Sprintf("%s: probes %d, rejoining %v (views heard %v), svc view %d, primary ready %v",
			r.status, r.probes, r.rejoining, r.viewOf, r.svcView, r.primaryReady)
	}
	lo, hi, toPrimary, ok := r.repairTarget()
	if !ok {
		return "nothing to repair" + r.commitStallDetail()
	}
	return fmt.Sprintf("repair of ops %d..%d (from the primary: %v), attempt %d, timer armed %v, retry in %d ticks",
		lo, hi, toPrimary, r.rep.attempt, r.t.repair.armed, r.t.repair.left)
}

// commitStallDetail says, when commits lag commit_max, what the next op to
// apply waits for (empty otherwise).
func (r *Replica) commitStallDetail() string {
	if r.commitMin >= r.commitMax {
		return ""
	}
	op := r.commitMin + 1
	s := r.slotAt(op)
	if s == nil {
		return fmt.Sprintf("; op %d to apply: no header", op)
	}
	installing := r.xfer != nil && r.xfer.installing
	return fmt.Sprintf("; op %d to apply: body %v, journal state %d, reading %v, read retry at tick %d (now %d), checkpoint pending %v, installing %v",
		op, s.hasBody, s.j, s.reading, r.readRetry, r.ticks, r.ckptFresh, installing)
}

// Identity returns the identity of committed op, when the replica still holds
// its header; tests and the simulator compare logs with it.
func (r *Replica) Identity(op uint64) (Checksum, bool) {
	if op > r.commitMin {
		return Checksum{}, false
	}
	return r.identityOf(op)
}

func (r *Replica) primaryIndex(view uint32) uint8 {
	return uint8((uint64(view) + uint64(r.offset)) % uint64(r.n))
}

func (r *Replica) isPrimary() bool { return int(r.primaryIndex(r.view)) == r.self }

func (r *Replica) solo() bool { return r.n == 1 }

// Quiet reports whether a tick can only run timers down: a single replica
// in normal status with nothing queued, in flight, unapplied or unwritten,
// no state transfer, no checkpoint or outputs waiting. The host may then
// hand it ticks in arrears (several in one go, later); a replica with peers
// is never quiet, its heartbeats and timeouts are what ticks are for.
func (r *Replica) Quiet() bool {
	return r.solo() && r.stopped == nil && r.status == statusNormal && len(r.queue) == 0 &&
		r.op == r.commitMin && r.commitMin == r.commitMax && r.journalHead == r.op && r.durableHead == r.op &&
		r.xfer == nil && !r.ckptFresh && !r.resume && r.out.Empty()
}

// HasReady reports whether Ready would return anything.
func (r *Replica) HasReady() bool {
	if r.resume {
		r.resume = false
		r.pump()
	}
	r.flushAcks()
	r.flushState()
	return !r.out.Empty()
}

// Ready returns the accumulated outputs and starts a new batch. The returned
// value and its slices stay valid until the next call of Ready.
func (r *Replica) Ready() Ready {
	r.flushAcks()
	r.flushState()
	rd := r.out
	if r.ckptFresh {
		r.ckptFresh = false
		r.resume = true
	}
	r.out = Ready{
		Journal:  rd.Journal[:0],
		Reads:    rd.Reads[:0],
		Messages: rd.Messages[:0],
		Replies:  rd.Replies[:0],
	}
	// The caller owns rd's slices until the next call; clearing the backing
	// arrays now would corrupt them, so the next batch reuses them only after
	// this call returns. Ensure new appends do not alias rd by reslicing to
	// zero capacity when rd holds elements.
	if len(rd.Journal) > 0 {
		r.out.Journal = nil
	}
	if len(rd.Reads) > 0 {
		r.out.Reads = nil
	}
	if len(rd.Messages) > 0 {
		r.out.Messages = nil
	}
	if len(rd.Replies) > 0 {
		r.out.Replies = nil
	}
	return rd
}

// ---------------------------------------------------------------------------
// Durable state and held outputs.

// markView records that the view state or view headers changed; the next
// flush writes a new record, and messages and appends wait for it.
func (r *Replica) markView() {
	r.stateDirty = true
	r.viewSeq++
}

// markCheckpoint records a checkpoint change; it needs a write but holds
// nothing back.
func (r *Replica) markCheckpoint() { r.stateDirty = true }

// viewSettled reports whether the current view state is durable.
func (r *Replica) viewSettled() bool { return r.durableViewSeq == r.viewSeq }

func (r *Replica) currentState() *State {
	s := &State{
		Cluster:      r.cfg.Cluster,
		Group:        r.cfg.Group,
		Replica:      r.cfg.Replica,
		ReplicaCount: r.cfg.ReplicaCount,
		View:         r.view,
		LogView:      r.logView,
		Fenced:       r.fenced,
		HeadPending:  r.status == statusRecoveringHead,
		Rejoining:    r.rejoining,
		FenceOp:      r.fenceOp,
		Commit:       r.vhCommit,
		CommitID:     r.vhCommitID,
		Headers:      append([]Header(nil), r.vhHeaders...),
		Checkpoint:   r.checkpoint,
		CheckpointID: r.checkpointID,
		Timestamp:    r.lastTS,

		CheckpointTimestamp: r.checkpointTS,
	}
	return s
}

// flushState starts a state write when one is wanted and none is in flight.
func (r *Replica) flushState() {
	if !r.stateDirty || r.stateBusy || r.stopped != nil || r.stateRetry.armed {
		return
	}
	s := r.currentState()
	r.stateBusy = true
	r.stateDirty = false
	r.inflightState = s
	r.inflightViewSeq = r.viewSeq
	r.out.State = EncodeState(s)
}

// StateDone reports that the last State record handed out by Ready was
// written (err == nil) or failed. A failed write is retried with backoff;
// until one succeeds the replica keeps its view-scoped messages and journal
// operations to itself.
func (r *Replica) StateDone(err error) {
	if !r.stateBusy {
		panic("vsr: StateDone without a state write in flight")
	}
	r.stateBusy = false
	if err != nil {
		r.stateDirty = true
		r.stateRetry.startBackoff(r, Ticks(10*TickInterval))
		return
	}
	r.stateRetry.stop()
	r.durable = r.inflightState
	r.inflightState = nil
	r.durableViewSeq = r.inflightViewSeq
	r.releaseJournalHold()
	r.afterStateDurable()
	if r.viewSettled() {
		r.releaseHeld()
		r.tryMerge()
	}
	r.pump()
}

func (r *Replica) releaseHeld() {
	for _, e := range r.held {
		// A message of an older view is stale; its view never became durable
		// as the current one, and the receiver would ignore it anyway.
		if e.Message.Header.View() == r.view {
			r.out.Messages = append(r.out.Messages, e)
		}
	}
	clear(r.held)
	r.held = r.held[:0]
}

// heldMax bounds the messages kept back while a view change is not yet
// durable.
const heldMax = 4096

// send queues a message. Messages wait while a state write is pending, so no
// message of a view leaves before the view is durable.
func (r *Replica) send(to int, m Message) {
	if to == r.self {
		panic("vsr: send to self")
	}
	e := Envelope{To: uint8(to), Message: m}
	if !r.viewSettled() {
		if len(r.held) >= heldMax {
			// A state write that does not finish would otherwise let held
			// messages grow without bound; every replica-plane message is
			// retransmitted by a timer, so dropping one only delays.
			r.heldDropped++
			return
		}
		r.held = append(r.held, e)
		return
	}
	r.out.Messages = append(r.out.Messages, e)
}

func (r *Replica) broadcast(m Message) {
	for i := 0; i < r.n; i++ {
		if i != r.self {
			r.send(i, m)
		}
	}
}

func (r *Replica) reply(rp Reply) {
	rp.Primary = r.primaryIndex(r.view)
	r.out.Replies = append(r.out.Replies, rp)
}

func (r *Replica) stop(cause error) {
	if r.stopped == nil {
		r.stopped = fmt.Errorf("%w: %w", ErrStopped, cause)
	}
}

// ---------------------------------------------------------------------------
// The in-memory window.

func (r *Replica) slotAt(op uint64) *slot {
	if op == 0 {
		return nil
	}
	s := &r.ring[op%uint64(len(r.ring))]
	if s.op != op {
		return nil
	}
	return s
}

// windowLimit is the highest op the replica may hold: the ring must keep every
// op above the checkpoint (a restart replays them) and every op whose append
// has not completed (its completion must find it).
func (r *Replica) windowLimit() uint64 {
	return min(r.checkpoint, r.durableHead) + uint64(len(r.ring)) - 1
}

// putHeader installs a canonical header; the slot's previous occupant must be
// old enough to forget.
func (r *Replica) putHeader(h *Header) *slot {
	op := h.Op()
	if op > r.windowLimit() {
		panic(fmt.Sprintf("vsr: op %d beyond window limit %d", op, r.windowLimit()))
	}
	s := &r.ring[op%uint64(len(r.ring))]
	if s.op == op {
		if s.h.Identity() != h.Identity() {
			panic(fmt.Sprintf("vsr: replica %d: conflicting canonical headers for op %d: %s vs %s",
				r.self, op, s.h.Identity(), h.Identity()))
		}
		return s
	}
	if s.op != 0 && (s.op > r.commitMin || s.j == jWriting) {
		panic(fmt.Sprintf("vsr: replica %d: evicting op %d (applied through %d, journal state %d) for op %d",
			r.self, s.op, r.commitMin, s.j, op))
	}
	r.dropBody(s)
	*s = slot{op: op, h: *h}
	if h.Timestamp() > r.lastTS {
		r.lastTS = h.Timestamp()
	}
	return s
}

func (r *Replica) setBody(s *slot, body []byte) {
	if s.hasBody {
		return
	}
	s.body = body
	s.hasBody = true
	r.cachedBytes += len(body)
	if s.j == jFaulty {
		// A verified copy of a corrupt entry: write it back over the damage
		// so the journal holds a good copy again (and a restart need not
		// truncate there).
		s.j = jRewriting
		r.journalOp(JournalOp{Kind: JournalRewrite, Op: s.op, Header: &s.h, Body: s.body,
			Sync: r.cfg.Durability == Persisted})
	}
}

func (r *Replica) dropBody(s *slot) {
	if s.hasBody {
		r.cachedBytes -= len(s.body)
	}
	s.body = nil
	s.hasBody = false
}

// identityOf returns the identity of op when the replica knows it.
func (r *Replica) identityOf(op uint64) (Checksum, bool) {
	if op == 0 {
		return Checksum{}, true
	}
	if s := r.slotAt(op); s != nil {
		return s.h.Identity(), true
	}
	if op == r.anchorOp && op != 0 {
		return r.anchorID, true
	}
	if op == r.checkpoint {
		return r.checkpointID, true
	}
	if op == r.baseOp && op != 0 {
		return r.baseID, true
	}
	if op == r.vhCommit {
		return r.vhCommitID, true
	}
	return Checksum{}, false
}

// contiguousFrom returns the highest op x ≥ from such that every op in
// (from, x] has a header in the ring.
func (r *Replica) contiguousFrom(from uint64) uint64 {
	x := from
	for x < r.op && r.slotAt(x+1) != nil {
		x++
	}
	return x
}

// truncateAbove forgets every op above keep: ring slots, the journal suffix,
// and the replies owed for them.
func (r *Replica) truncateAbove(keep uint64) {
	if keep < r.commitMin {
		panic(fmt.Sprintf("vsr: replica %d: truncating to %d below applied op %d", r.self, keep, r.commitMin))
	}
	for op := keep + 1; op <= r.op; op++ {
		s := r.slotAt(op)
		if s == nil {
			continue
		}
		if s.hasToken {
			r.reply(Reply{Token: s.token, Client: s.h.Client(), Session: s.h.Session(),
				Request: s.h.Request(), Operation: s.h.Operation(), Status: StatusTransientNotCommitted})
		}
		r.dropBody(s)
		*s = slot{}
	}
	if r.op > keep {
		r.op = keep
	}
	if r.journalHead > keep {
		r.journalOp(JournalOp{Kind: JournalTruncate, Op: keep})
		r.journalHead = keep
		if r.durableHead > keep {
			r.durableHead = keep
		}
		if keep < r.journalFloor {
			// The journal is empty now and its head is keep (the
			// checkpoint, the floor being at most one above it): remember
			// keep's identity, which no slot holds and a later checkpoint
			// would no longer give, for as long as it is the durable head.
			if id, ok := r.identityOf(keep); ok {
				r.baseOp, r.baseID = keep, id
			}
			r.journalFloor = 0
		}
	}
	if r.anchorOp > keep && r.anchorOp > r.commitMax {
		r.anchorOp, r.anchorID = 0, Checksum{}
	}
}

// journalOp queues a journal operation.
func (r *Replica) journalOp(op JournalOp) {
	if op.Kind == JournalTruncate && !r.viewSettled() && !mutationTruncateBeforeView() {
		r.viewHold, r.viewHoldSeq = true, r.viewSeq
	}
	if r.fenceHold || r.viewHold {
		r.heldJournal = append(r.heldJournal, op)
		return
	}
	r.out.Journal = append(r.out.Journal, op)
}

// holdJournalForFence makes the journal operations queued so far, and every
// later one, wait until a state record written from now on is durable (see
// fenceHold).
func (r *Replica) holdJournalForFence() {
	if mutationTruncateBeforeFence() {
		return
	}
	r.fenceHold = true
	r.heldJournal = append(r.heldJournal, r.out.Journal...)
	r.out.Journal = r.out.Journal[:0]
}

// releaseJournalHold hands the held journal operations to the node once the
// state record they wait for (fencing, or of the view that truncated) is
// durable.
func (r *Replica) releaseJournalHold() {
	if r.fenceHold && r.durable.Fenced {
		r.fenceHold = false
	}
	if r.viewHold && r.durableViewSeq >= r.viewHoldSeq {
		r.viewHold = false
	}
	if r.fenceHold || r.viewHold || len(r.heldJournal) == 0 {
		return
	}
	r.out.Journal = append(r.out.Journal, r.heldJournal...)
	clear(r.heldJournal)
	r.heldJournal = nil
}
