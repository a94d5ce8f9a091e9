package vsr

import (
	"fmt"
	"slices"
)

// ---------------------------------------------------------------------------
// Inputs.

// Submit hands the replica a client request. The replica answers every
// request with exactly one Reply: the state machine's result once the op
// commits, or a refusal (not primary, queue full, evicted session, …).
func (r *Replica) Submit(req Request) {
	if req.Operation == OperationReserved {
		panic("vsr: Submit with the reserved operation 0")
	}
	refuse := func(st Status) {
		r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session,
			Request: req.Request, Operation: req.Operation, Status: st})
	}
	if r.stopped != nil || r.status != statusNormal || !r.isPrimary() || r.abdicated || !r.viewSettled() {
		refuse(StatusTransientNotAccepted)
		return
	}
	if uint64(len(req.Body))+HeaderSize > uint64(r.cfg.MessageSizeMax) {
		refuse(StatusTransientNotAccepted)
		return
	}
	if r.sessions != nil && !r.admit(&req) {
		return
	}
	if len(r.queue) == 0 && r.canPrepare() {
		r.prepare(req)
	} else if len(r.queue) < r.cfg.RequestQueueDepth {
		r.queue = append(r.queue, req)
	} else {
		refuse(StatusTransientNotAccepted)
		return
	}
	r.pump()
}

// Queued reports whether the request submitted with token still waits in
// the request queue: it was never prepared, so no replica holds it and it
// cannot commit. A request the replica answered or prepared is not queued.
func (r *Replica) Queued(token uint64) bool {
	for i := range r.queue {
		if r.queue[i].Token == token {
			return true
		}
	}
	return false
}

// Step hands the replica a message from a peer. The message must come from
// Decode (or from another replica's Ready); frames of another cluster, group
// or replica count are dropped here.
func (r *Replica) Step(m Message) {
	if r.stopped != nil {
		return
	}
	h := m.Header
	if h.Cluster() != r.cfg.Cluster || h.Group() != r.cfg.Group ||
		h.ReplicaCount() != r.cfg.ReplicaCount || int(h.Replica()) == r.self {
		return
	}
	from := int(h.Replica())
	if !r.notePeer(from, h.Incarnation()) {
		return
	}
	switch h.Command() {
	case CmdPrepare:
		r.onPrepare(from, m)
	case CmdPrepareOk:
		r.onPrepareOk(from, h)
	case CmdCommit:
		r.onCommit(from, h)
	case CmdStartViewChange:
		r.onStartViewChange(from, h)
	case CmdDoViewChange:
		r.onDoViewChange(from, m)
	case CmdStartView:
		r.onStartView(from, m)
	case CmdRequestStartView:
		r.onRequestStartView(from, h)
	case CmdRangeEvicted:
		r.onRangeEvicted(from, h)
	case CmdRequestPrepares:
		r.onRequestPrepares(from, h)
	case CmdRequestManifest:
		r.onRequestManifest(from, h)
	case CmdManifest:
		r.onManifest(from, m)
	case CmdRequestChunk:
		r.onRequestChunk(from, h)
	case CmdChunk:
		r.onChunk(from, m)
	}
	r.pump()
}

// notePeer tracks peer incarnations. Incarnations grow across boots, so a
// higher one means the peer restarted (its acknowledgements in this view no
// longer count) and a lower one is a message from a previous life.
func (r *Replica) notePeer(from int, inc uint64) bool {
	switch {
	case inc < r.peerInc[from]:
		return false
	case inc > r.peerInc[from]:
		if r.peerInc[from] != 0 {
			r.acked[from] = 0
			r.serve[from] = serveState{}
		}
		r.peerInc[from] = inc
	}
	return true
}

// Tick advances the replica's virtual time by one TickInterval.
func (r *Replica) Tick() {
	if r.stopped != nil {
		return
	}
	r.ticks++
	r.stateRetry.tick()
	// The probe timer also rate-limits probes of newer views in any status,
	// so it must run down everywhere.
	probe := r.t.rsv.tick()
	switch r.status {
	case statusNormal:
		if r.isPrimary() {
			r.tickPrimary()
		} else {
			r.tickBackup()
		}
	case statusViewChange:
		r.tickViewChange()
	case statusRecovering, statusRecoveringHead:
		r.tickRecovering(probe)
	}
	if r.t.repair.tick() {
		r.repairFire()
	}
	if r.t.transfer.tick() {
		r.transferFire()
	}
	if r.t.checkpoint.tick() {
		r.maybeCheckpoint()
	}
	r.pump()
}

func (r *Replica) tickPrimary() {
	if r.solo() {
		return
	}
	heardFrom := 1
	for i := 0; i < r.n; i++ {
		if i != r.self && r.ticks-r.heard[i] <= uint64(r.tk.heartbeat) {
			heardFrom++
		}
	}
	// A primary that no longer hears a replication quorum stops its
	// heartbeats so the backups elect someone who can make progress
	// (asymmetric partitions would otherwise keep it in office forever), and
	// campaigns for the next view itself.
	was := r.abdicated
	r.abdicated = heardFrom < r.qRep
	if r.abdicated && !was {
		r.voteViewChange(max(r.view+1, r.svcView))
	} else if !r.abdicated && was && r.campaigning {
		// It hears a quorum again: it no longer wants a new view.
		r.campaigning = false
		r.svcFrom[r.self] = 0
	}
	r.campaignTick()
	if r.t.commit.tick() {
		if !r.abdicated {
			r.broadcast(r.commitMessage())
		}
		r.t.commit.startExact(r.tk.commit)
	}
	if r.t.prepare.tick() {
		if r.retransmit() {
			r.t.prepare.startBackoff(r, r.tk.prepare)
		}
	}
}

func (r *Replica) tickBackup() {
	if r.t.heartbeat.tick() {
		r.voteViewChange(max(r.view+1, r.svcView))
	}
	r.campaignTick()
}

// ---------------------------------------------------------------------------
// Primary: requests become prepares.

func (r *Replica) canPrepare() bool {
	return r.op-r.commitMax < uint64(r.cfg.PrepareQueueDepth) && r.op+1 <= r.windowLimit() &&
		!r.abdicated && r.status == statusNormal && r.isPrimary() && r.viewSettled()
}

func (r *Replica) pumpQueue() {
	for len(r.queue) > 0 && r.canPrepare() {
		req := r.queue[0]
		r.queue[0] = Request{}
		r.queue = r.queue[1:]
		r.prepare(req)
	}
	if len(r.queue) == 0 {
		r.queue = r.queue[:0:0]
	}
}

func (r *Replica) prepare(req Request) {
	op := r.op + 1
	parent, ok := r.identityOf(r.op)
	if !ok {
		panic(fmt.Sprintf("vsr: replica %d: primary lacks the identity of its head op %d", r.self, r.op))
	}
	ts := max(req.WallClock, r.lastTS+1)
	var ctx [16]byte
	if r.hook != nil {
		c, st := r.hook.Prepare(op, ts, req.Operation, req.Body)
		if st != StatusOK {
			r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session,
				Request: req.Request, Operation: req.Operation, Status: st})
			return
		}
		ctx = c
	}
	var h Header
	h.putSum(offCluster, r.cfg.Cluster)
	h.setSize(uint32(HeaderSize + len(req.Body)))
	h.setView(r.view)
	h.put16(offProtocol, ProtocolVersion)
	h[offCommand] = byte(CmdPrepare)
	h[offReplicaCount] = r.cfg.ReplicaCount
	h.put64(offGroup, r.cfg.Group)
	h.putSum(offPrepParent, parent)
	h.putSum(offPrepClient, req.Client)
	h.put64(offPrepOp, op)
	h.put64(offPrepCommit, r.commitMax)
	h.put64(offPrepTimestamp, ts)
	h.put64(offPrepRequest, req.Request)
	h.put64(offPrepSession, req.Session)
	h.put32(offPrepView, r.view)
	h.put32(offPrepUser, req.User)
	h[offPrepOperation] = req.Operation
	copy(h[offPrepContext:offPrepContext+16], ctx[:])
	h.setChecksumBody(BodyChecksum(req.Body))
	normalize(&h)
	s := r.putHeader(&h)
	r.setBody(s, req.Body)
	s.token, s.hasToken = req.Token, true
	r.op = op
	r.lastTS = ts
	if !r.solo() {
		r.broadcast(r.prepareFrame(s))
		if !r.t.prepare.armed {
			r.t.prepare.start(r, r.tk.prepare)
		}
	}
}

// normalize makes h the canonical stored form of a prepare header: envelope
// fields set to (view = prepare view, replica 0, incarnation 0), identity and
// seal recomputed. Every replica stores and journals byte-identical headers.
func normalize(h *Header) {
	h.setView(h.PrepareView())
	h.setReplica(0)
	h.setIncarnation(0)
	h.putSum(offPrepIdentity, prepareIdentity(h))
	h.Seal()
}

// prepareFrame turns a stored prepare into a frame sent by this replica now.
func (r *Replica) prepareFrame(s *slot) Message {
	h := new(Header)
	*h = s.h
	h.setView(r.frameView())
	h.setReplica(uint8(r.self))
	h.setIncarnation(r.incarnation)
	h.Seal()
	return Message{Header: h, Body: s.body}
}

// frameView is the view a prepare this replica sends (retransmission or
// repair) is stamped with: its view in normal status, else the last view it
// was normal in. A backup takes a prepare stamped with its own view from
// that view's primary as canonical; during a view change this replica's log
// is not yet the new view's, and the start_view may truncate what it serves
// (seed 1012440: the next primary, still in view_change, served an op its
// start_view then truncated, and a backup installed it as canonical).
func (r *Replica) frameView() uint32 {
	if r.status == statusNormal {
		return r.view
	}
	return r.logView
}

// retransmit resends, to every backup that has not acknowledged them in this
// view, the prepares whose bodies are still in memory — whether or not they
// already reached a quorum (a backup missing a committed prepare must not wait
// for a view change to get it). It reports whether anyone is behind.
func (r *Replica) retransmit() bool {
	behind := false
	for i := 0; i < r.n; i++ {
		if i == r.self || r.acked[i] >= r.op {
			continue
		}
		behind = true
		from := r.acked[i] + 1
		if r.commitMin >= uint64(len(r.ring)) && from <= r.commitMin-uint64(len(r.ring)) {
			from = r.commitMin - uint64(len(r.ring)) + 1
		}
		last := min(r.op, from+uint64(r.cfg.PrepareQueueDepth)-1)
		for op := from; op <= last; op++ {
			if s := r.slotAt(op); s != nil && s.hasBody {
				r.send(i, r.prepareFrame(s))
			}
		}
	}
	return behind
}

// ---------------------------------------------------------------------------
// Backup: prepares arrive.

func (r *Replica) onPrepare(from int, m Message) {
	h := m.Header
	switch {
	case h.View() < r.view:
		r.hintStalePrimary(from, h.View())
		r.repairPrepare(m)
		return
	case h.View() > r.view:
		if from == int(r.primaryIndex(h.View())) {
			r.probeNewerView(h.View())
		}
		return
	}
	if r.status != statusNormal || r.isPrimary() || from != int(r.primaryIndex(r.view)) {
		r.repairPrepare(m)
		return
	}
	op := h.Op()
	if op > r.op {
		r.heard[from] = r.ticks
		r.t.heartbeat.start(r, r.tk.heartbeat)
	}
	if op <= r.commitMin && op <= r.journalHead {
		r.ackDirty = true
		return
	}
	if s := r.slotAt(op); s != nil {
		if s.h.Identity() != h.Identity() {
			panic(fmt.Sprintf("vsr: replica %d view %d: primary sent op %d as %s, already held as %s",
				r.self, r.view, op, h.Identity(), s.h.Identity()))
		}
		if !s.hasBody {
			r.setBody(s, m.Body)
		}
		r.ackDirty = true
	} else if op <= r.windowLimit() {
		r.installPrepare(m)
		r.drainPending(op)
	} else {
		return // no room until a checkpoint; the primary retransmits
	}
	r.noteCommit(h.Commit(), Checksum{}, false)
}

// installPrepare stores a canonical prepare (header and body) the replica did
// not hold. The caller has established that it is canonical.
func (r *Replica) installPrepare(m Message) *slot {
	h := *m.Header
	normalize(&h)
	op := h.Op()
	if below := r.slotAt(op - 1); below != nil && below.h.Identity() != h.Parent() {
		panic(fmt.Sprintf("vsr: replica %d: canonical op %d does not chain to op %d", r.self, op, op-1))
	}
	if above := r.slotAt(op + 1); above != nil && above.h.Parent() != h.Identity() {
		panic(fmt.Sprintf("vsr: replica %d: canonical op %d does not chain to op %d", r.self, op+1, op))
	}
	s := r.putHeader(&h)
	r.setBody(s, m.Body)
	if op > r.op {
		r.op = op
	}
	return s
}

// repairPrepare accepts a prepare from anyone, in any status, if it is one
// the replica knows to be canonical (by header or by the identity its
// successor or an anchor names) and lacks.
func (r *Replica) repairPrepare(m Message) {
	h := m.Header
	op := h.Op()
	if op <= r.commitMin && op <= r.journalHead {
		return // applied and journaled: nothing left to do with it
	}
	if s := r.slotAt(op); s != nil {
		if s.h.Identity() == h.Identity() && !s.hasBody {
			r.setBody(s, m.Body)
		}
		return
	}
	if op > r.windowLimit() {
		return
	}
	if id, ok := r.expectedIdentity(op); ok {
		if id == h.Identity() {
			r.installPrepare(m)
			r.drainPending(op)
		}
		return
	}
	if op < max(r.op, r.anchorOp) {
		r.bufferRepair(m)
	}
}

// expectedIdentity returns the identity op must have, derived from a known
// canonical neighbour or anchor.
func (r *Replica) expectedIdentity(op uint64) (Checksum, bool) {
	if above := r.slotAt(op + 1); above != nil {
		return above.h.Parent(), true
	}
	if op == r.anchorOp && op != 0 {
		return r.anchorID, true
	}
	return Checksum{}, false
}

func (r *Replica) onPrepareOk(from int, h *Header) {
	if h.View() != r.view || r.status != statusNormal || !r.isPrimary() {
		return
	}
	r.heard[from] = r.ticks
	op := h.ctlA()
	if op <= r.acked[from] || op > r.op {
		return
	}
	id, ok := r.identityOf(op)
	if !ok || id != h.ctlChecksum() {
		return
	}
	r.acked[from] = op
	r.commitCheck()
}

// commitCheck advances commit_max to the highest op acknowledged in this
// view by a replication quorum (the primary's own acknowledgement is its
// durable journal head).
func (r *Replica) commitCheck() {
	if r.status != statusNormal || !r.isPrimary() {
		return
	}
	r.acked[r.self] = r.durableHead
	var c uint64
	if r.solo() {
		c = r.durableHead
	} else {
		vals := append(r.scratch[:0], r.acked...)
		slices.Sort(vals)
		slices.Reverse(vals)
		c = vals[r.qRep-1]
		r.scratch = vals
		if mutationCommitWithoutQuorum() {
			c = vals[0]
		}
	}
	if c > r.commitMax {
		r.commitMax = c
	}
}

func (r *Replica) onCommit(from int, h *Header) {
	switch {
	case h.View() < r.view:
		r.hintStalePrimary(from, h.View())
		return
	case h.View() > r.view:
		if from == int(r.primaryIndex(h.View())) {
			r.probeNewerView(h.View())
		}
		return
	}
	if r.status != statusNormal || r.isPrimary() || from != int(r.primaryIndex(r.view)) {
		return
	}
	r.heard[from] = r.ticks
	if beat := h.ctlC(); beat > r.heartbeat {
		r.heartbeat = beat
		r.t.heartbeat.start(r, r.tk.heartbeat)
		// A heard primary means this replica's own vote for a new view is
		// moot; it stops campaigning.
		if r.campaigning {
			r.campaigning = false
			r.svcFrom[r.self] = 0
			r.t.svc.stop()
		}
	}
	r.noteCommit(h.ctlA(), h.ctlChecksum(), true)
	if head := h.ctlB(); head > r.primaryHead {
		r.primaryHead = head
	}
	r.ackDirty = true
}

// noteCommit learns that op c is committed (with its identity when withID).
func (r *Replica) noteCommit(c uint64, id Checksum, withID bool) {
	if c == 0 {
		return
	}
	if withID {
		if s := r.slotAt(c); s != nil && s.h.Identity() != id {
			panic(fmt.Sprintf("vsr: replica %d: committed op %d is %s but the log holds %s",
				r.self, c, id, s.h.Identity()))
		}
		if c > r.op && c > r.anchorOp {
			r.anchorOp, r.anchorID = c, id
		}
	}
	if c > r.commitMax {
		if c > r.op && !(withID || c <= r.anchorOp) {
			// Commit learned from a prepare's commit field is always below the
			// prepare's op, which the caller holds.
			panic(fmt.Sprintf("vsr: replica %d: commit %d above head %d without identity", r.self, c, r.op))
		}
		r.commitMax = c
	}
}

func (r *Replica) commitMessage() Message {
	h := r.newHeader(CmdCommit)
	c := r.commitMax
	id, ok := r.identityOf(c)
	if !ok {
		panic(fmt.Sprintf("vsr: replica %d: primary lacks identity of commit %d", r.self, c))
	}
	r.heartbeat++
	h.putSum(offCtlChecksum, id)
	h.put64(offCtlA, c)
	h.put64(offCtlB, r.op)
	h.put64(offCtlC, r.heartbeat)
	h.put64(offCtlD, r.checkpoint)
	return r.finish(h, nil)
}

func (r *Replica) prepareOkMessage() Message {
	h := r.newHeader(CmdPrepareOk)
	op := r.durableHead
	id, ok := r.identityOf(op)
	if !ok {
		panic(fmt.Sprintf("vsr: replica %d: no identity for durable head %d (slot holds %d, journal %d, commit %d/%d, ckpt %d, op %d)", r.self, op, r.ring[op%uint64(len(r.ring))].op, r.journalHead, r.commitMin, r.commitMax, r.checkpoint, r.op))
	}
	h.putSum(offCtlChecksum, id)
	h.put64(offCtlA, op)
	h.put64(offCtlB, r.commitMax)
	return r.finish(h, nil)
}

// flushAcks sends one cumulative PrepareOk per pass instead of one per
// completed append.
func (r *Replica) flushAcks() {
	if !r.ackDirty {
		return
	}
	r.ackDirty = false
	if r.status != statusNormal || r.isPrimary() || r.solo() {
		return
	}
	op := r.durableHead
	if mutationAckBeforeDurable() {
		op = r.journalHead
	}
	if op > r.op || op == 0 {
		return
	}
	m := r.prepareOkMessage()
	if op != r.durableHead {
		id, _ := r.identityOf(op)
		m.Header.putSum(offCtlChecksum, id)
		m.Header.put64(offCtlA, op)
		m.Header.Seal()
	}
	r.send(int(r.primaryIndex(r.view)), m)
}

// newHeader starts a control header with the common prefix filled in.
func (r *Replica) newHeader(cmd Command) *Header {
	h := new(Header)
	h.putSum(offCluster, r.cfg.Cluster)
	h.setView(r.view)
	h.put16(offProtocol, ProtocolVersion)
	h[offCommand] = byte(cmd)
	h[offReplica] = uint8(r.self)
	h[offReplicaCount] = r.cfg.ReplicaCount
	h.put64(offGroup, r.cfg.Group)
	h.setIncarnation(r.incarnation)
	return h
}

// finish sets size and body checksum and seals.
func (r *Replica) finish(h *Header, body []byte) Message {
	h.setSize(uint32(HeaderSize + len(body)))
	h.setChecksumBody(BodyChecksum(body))
	h.Seal()
	return Message{Header: h, Body: body}
}

// ---------------------------------------------------------------------------
// Storage completions.

// AppendDone reports that journal append op (with the given identity) is
// complete: written, and synced when the JournalOp asked for it. A non-nil
// err stops the replica (see ErrStopped): a journal that failed a write
// cannot be trusted to keep its order.
func (r *Replica) AppendDone(op uint64, id Checksum, err error) {
	if r.stopped != nil {
		return
	}
	if err != nil {
		r.stop(fmt.Errorf("journal append of op %d: %w", op, err))
		return
	}
	s := r.slotAt(op)
	if s != nil && s.h.Identity() == id && s.j == jRewriting {
		s.j = jDurable
		r.maybeDropBody(s)
		return
	}
	if s == nil || s.h.Identity() != id || s.j != jWriting {
		return // truncated or superseded since it was issued
	}
	s.j = jDurable
	for r.durableHead < r.journalHead {
		next := r.slotAt(r.durableHead + 1)
		if next == nil || next.j != jDurable {
			break
		}
		r.durableHead++
	}
	r.ackDirty = true
	r.maybeDropBody(s)
	r.commitCheck()
	r.pump()
}

// ReadDone answers a Read: frame is the stored entry (header ‖ body) or err
// says why it could not be read. A frame that does not verify marks the entry
// faulty; the replica then fetches it from a peer.
func (r *Replica) ReadDone(op uint64, frame []byte, err error) {
	if r.stopped != nil {
		return
	}
	s := r.slotAt(op)
	var body []byte
	ok := err == nil && verifyEntry(op, frame)
	if ok {
		body = frame[HeaderSize:]
	}
	if s != nil && s.reading {
		s.reading = false
		switch {
		case ok && (*Header)(frame[:HeaderSize]).Identity() == s.h.Identity():
			r.setBody(s, body)
		case err != nil:
			// An I/O error may pass: read again later.
			r.readRetry = r.ticks + uint64(r.tk.prepare)
		case s.j == jDurable:
			s.j = jFaulty // the bytes are wrong: fetch it from a peer
		}
	}
	if ok {
		r.serveRead(op, (*Header)(frame[:HeaderSize]), body)
	} else {
		r.serveReadFailed(op)
	}
	r.pump()
}

// verifyEntry checks a journal entry read back from disk.
func verifyEntry(op uint64, frame []byte) bool {
	if len(frame) < HeaderSize {
		return false
	}
	h := (*Header)(frame[:HeaderSize])
	if validatePrepare(h, len(frame)-HeaderSize) != nil || !h.SealValid() || h.Op() != op {
		return false
	}
	return h.ChecksumBody() == BodyChecksum(frame[HeaderSize:])
}

// ---------------------------------------------------------------------------
// Pumps: run after every input until nothing more can happen.

func (r *Replica) pump() {
	if r.stopped != nil {
		return
	}
	r.installViewHeaders()
	r.pumpAppends()
	r.commitCheck()
	r.pumpCommits()
	r.pumpQueue()
	r.maybeStartView()
	r.repairCheck()
}

// pumpAppends appends, in op order, every canonical prepare the replica holds
// beyond its journal head. Nothing is appended while a view change of this
// replica is not yet durable: an entry must never be journaled under a
// log_view it does not belong to.
func (r *Replica) pumpAppends() {
	if !r.viewSettled() || r.journalResetPending {
		return
	}
	if r.status != statusNormal && !(r.status == statusViewChange && r.primaryReady) {
		return
	}
	for r.journalHead < r.op {
		op := r.journalHead + 1
		s := r.slotAt(op)
		if s == nil || !s.hasBody || op > r.windowLimit() {
			return
		}
		if id, ok := r.identityOf(op - 1); !ok || s.h.Parent() != id {
			panic(fmt.Sprintf("vsr: replica %d: op %d does not chain to journal head", r.self, op))
		}
		s.j = jWriting
		if r.journalFloor == 0 {
			r.journalFloor = op
		}
		r.journalOp(JournalOp{Kind: JournalAppend, Op: op, Header: &s.h, Body: s.body,
			Sync: r.cfg.Durability == Persisted})
		r.journalHead = op
	}
}

// pumpCommits applies committed ops in order while their bodies are at hand,
// reading them back from the journal or fetching them from peers otherwise.
func (r *Replica) pumpCommits() {
	for r.commitMin < r.commitMax && r.commitMin < r.op {
		if (r.xfer != nil && r.xfer.installing) || r.ckptFresh {
			return
		}
		op := r.commitMin + 1
		s := r.slotAt(op)
		if s == nil {
			return // header missing: repair fills it
		}
		if !s.hasBody {
			if s.j == jDurable && !s.reading && r.ticks >= r.readRetry {
				s.reading = true
				r.out.Reads = append(r.out.Reads, Read{Op: op, Identity: s.h.Identity()})
			}
			return
		}
		r.apply(s)
	}
}

func (r *Replica) apply(s *slot) {
	h := &s.h
	op := h.Op()
	if op != r.commitMin+1 {
		panic(fmt.Sprintf("vsr: replica %d: applying op %d after %d", r.self, op, r.commitMin))
	}
	var (
		body     []byte
		status   = StatusOK
		eviction EvictionReason
		replyOp  = op
	)
	if r.sessions != nil {
		body, status, eviction, replyOp = r.sessions.apply(h, s.body, r.sm)
	} else {
		body = r.sm.Apply(h, s.body)
	}
	r.commitMin = op
	if s.hasToken {
		r.reply(Reply{Token: s.token, Client: h.Client(), Session: h.Session(), Request: h.Request(),
			Operation: h.Operation(), Op: replyOp, Commit: r.commitMax, Timestamp: h.Timestamp(),
			Status: status, Eviction: eviction, Body: body})
		s.hasToken = false
	}
	r.applyOrphans(h, body, status, eviction, replyOp)
	r.maybeDropBody(s)
	if r.checkpointDue() {
		r.maybeCheckpoint()
	}
}

// maybeDropBody releases a body once nothing needs it in memory: applied,
// journaled, and (on a primary within its cache budget) acknowledged by every
// backup, so retransmission does not need a journal read.
func (r *Replica) maybeDropBody(s *slot) {
	if !s.hasBody || s.op > r.commitMin || (s.j != jDurable && s.j != jFaulty) {
		// (A rewriting slot keeps its body until the rewrite completes.)
		return
	}
	if r.isPrimary() && r.status == statusNormal && r.cachedBytes <= r.cfg.BodyCacheBytes && !r.allAcked(s.op) {
		return
	}
	r.dropBody(s)
}

func (r *Replica) allAcked(op uint64) bool {
	if r.status != statusNormal || !r.isPrimary() {
		return true
	}
	for i, a := range r.acked {
		if i != r.self && a < op {
			return false
		}
	}
	return true
}
