package vsr

import (
	"fmt"
	"slices"
)

// dvcVote is a parsed DoViewChange.
type dvcVote struct {
	replica   int
	logView   uint32
	commit    uint64
	commitID  Checksum
	op        uint64
	headers   []Header // headers[i] is op (op - i)
	nack      bitset128
	present   bitset128
	nackFloor uint64 // the vote nacks no op at or below this (a fenced replica)
	timestamp uint64
}

// header returns the vote's header of op, or nil outside its window.
func (d *dvcVote) header(op uint64) (*Header, int) {
	if op > d.op || op <= d.commit {
		return nil, -1
	}
	i := int(d.op - op)
	return &d.headers[i], i
}

func parseDVC(from int, m Message) *dvcVote {
	h := m.Header
	d := &dvcVote{
		replica:   from,
		logView:   h.dvcLogView(),
		commit:    h.ctlA(),
		commitID:  h.ctlChecksum(),
		op:        h.ctlB(),
		nack:      h.bits(offDVCNack),
		present:   h.bits(offDVCPresent),
		nackFloor: h.u64(offDVCNackFloor),
		timestamp: h.u64(offDVCTimestamp),
	}
	n := len(m.Body) / HeaderSize
	d.headers = make([]Header, n)
	for i := 0; i < n; i++ {
		d.headers[i] = *suffixHeader(m.Body, i)
	}
	return d
}

// svcFlagEntered marks a StartViewChange from a replica that already
// entered view change status for that view, which it did only on a
// view-change quorum: a replica receiving it may follow at once. Without it a
// replica that moved ahead while the others lost its quorum's votes would be
// stranded in a view nobody else enters.
const svcFlagEntered = 1

func (r *Replica) svcMessage(view uint32) Message {
	h := r.newHeader(CmdStartViewChange)
	h.setView(view)
	if view == r.view && r.logView < r.view {
		h.put32(offCommandArea, svcFlagEntered)
	}
	return r.finish(h, nil)
}

// voteViewChange campaigns for a view: broadcast StartViewChange and count
// this replica's own vote. The replica changes view only once a view-change
// quorum campaigns for the same view, so one replica that cannot hear the
// primary (a one-way partition) cannot depose it alone.
func (r *Replica) voteViewChange(target uint32) {
	if r.solo() || r.status == statusRecoveringHead {
		return
	}
	target = max(target, r.view+1, r.svcView)
	r.campaigning = true
	if target > r.svcView {
		r.svcView = target
		clear(r.svcFrom)
	}
	r.voteFrom(r.self)
	r.broadcast(r.svcMessage(r.svcView))
	r.t.svc.start(r, r.tk.vcRetransmit)
	r.checkSVCQuorum()
}

func (r *Replica) checkSVCQuorum() {
	if r.svcView <= r.view {
		return
	}
	votes := 0
	for i := range r.svcFrom {
		if r.hasVote(i) {
			votes++
		}
	}
	if votes >= r.qVC {
		r.transitionToViewChange(r.svcView)
	}
}

func (r *Replica) onStartViewChange(from int, h *Header) {
	target := h.View()
	if target <= r.view || r.status == statusRecoveringHead {
		return
	}
	if h.u32(offCommandArea)&svcFlagEntered != 0 {
		r.transitionToViewChange(target)
		return
	}
	if target > r.svcView {
		r.svcView = target
		clear(r.svcFrom)
		if r.campaigning {
			// Join the campaign for the higher view instead.
			r.voteFrom(r.self)
			r.broadcast(r.svcMessage(target))
			r.t.svc.start(r, r.tk.vcRetransmit)
		}
	}
	if target == r.svcView {
		r.voteFrom(from)
	}
	r.checkSVCQuorum()
}

// transitionToViewChange enters view change status for view v: the replica
// freezes the log suffix it vouches for (its view headers), persists
// (v, log_view, view headers) and only then — the send path holds messages
// until the write lands — sends StartViewChange and its DoViewChange.
func (r *Replica) transitionToViewChange(v uint32) {
	if v <= r.view || r.solo() || r.status == statusRecoveringHead {
		return
	}
	if r.logView == r.view && (r.status == statusNormal || r.status == statusRecovering) {
		r.freezeViewHeaders()
	}
	r.refuseQueue()
	r.status = statusViewChange
	r.campaigning = false
	r.view = v
	r.primaryReady = false
	r.abdicated = false
	r.heartbeat = 0
	r.primaryHead = 0
	clear(r.dvcs)
	r.svcView = v
	clear(r.svcFrom)
	r.voteFrom(r.self)
	if !mutationForgetViewDurability() {
		r.markView()
	}
	r.t.heartbeat.stop()
	r.t.commit.stop()
	r.t.prepare.stop()
	r.t.rsv.stop()
	r.broadcast(r.svcMessage(v))
	r.t.svc.start(r, r.tk.vcRetransmit)
	r.t.status.start(r, r.tk.vcStatus)
	if p := int(r.primaryIndex(v)); p != r.self {
		r.send(p, r.dvcMessage())
		r.t.dvc.start(r, r.tk.vcRetransmit)
	} else {
		r.t.dvc.stop()
		r.tryMerge()
	}
}

// refuseQueue answers every queued request when the replica stops being a
// normal primary. Prepared requests keep their tokens: they are answered when
// their op commits or is discarded.
func (r *Replica) refuseQueue() {
	for _, req := range r.queue {
		r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session,
			Request: req.Request, Operation: req.Operation, Status: StatusTransientNotAccepted})
	}
	clear(r.queue)
	r.queue = r.queue[:0]
}

// freezeViewHeaders records the suffix this replica vouches for in its
// log_view: from the highest committed op whose identity it knows up to the
// end of its contiguous canonical headers, at most PipelineMax headers.
//
// The suffix is the union of the ring and the view headers the replica
// already vouches for in this log_view (the log it adopted): headers it could
// not fit in its window when it adopted the log are still part of its log
// and must stay in its DoViewChange, or a canonical vote would end too early
// and drop committed ops above it.
func (r *Replica) freezeViewHeaders() {
	vhHead := r.vhCommit + uint64(len(r.vhHeaders))
	header := func(op uint64) *Header {
		if s := r.slotAt(op); s != nil {
			return &s.h
		}
		if op > r.vhCommit && op <= vhHead {
			return &r.vhHeaders[vhHead-op]
		}
		return nil
	}
	a, aid := r.windowAnchor()
	if r.vhCommit > a {
		a, aid = r.vhCommit, r.vhCommitID // committed by definition of the view headers
	}
	head := a
	for header(head+1) != nil {
		head++
	}
	if head < r.journalHead {
		panic(fmt.Sprintf("vsr: replica %d: journal head %d beyond contiguous headers %d (anchor %d)",
			r.self, r.journalHead, head, a))
	}
	if head-a > PipelineMax {
		// Every op at least PipelineMax below a prepared op is committed: its
		// primary had committed up to op - prepare_queue_depth.
		a = head - PipelineMax
		aid = header(a).Identity()
	}
	hs := make([]Header, 0, head-a)
	for op := head; op > a; op-- {
		hs = append(hs, *header(op))
	}
	if len(hs) > 0 && hs[len(hs)-1].Parent() != aid {
		panic(fmt.Sprintf("vsr: replica %d: view headers above op %d do not chain to it", r.self, a))
	}
	r.vhCommit, r.vhCommitID = a, aid
	r.vhHeaders = hs
}

// windowAnchor returns the highest committed op whose identity is known and
// from which the ring is contiguous upwards.
func (r *Replica) windowAnchor() (uint64, Checksum) {
	if r.commitMax > r.op {
		if id, ok := r.identityOf(r.commitMax); ok {
			return r.commitMax, id
		}
	}
	for a := min(r.commitMax, r.op); ; a-- {
		if id, ok := r.identityOf(a); ok {
			return a, id
		}
		if a == 0 {
			panic("vsr: no anchor")
		}
	}
}

// dvcMessage builds this replica's DoViewChange from its frozen view headers
// and the journal state of each op: present when the body is at hand, nack
// when the replica has provably never acknowledged it (not durable, and the
// replica is not fenced). Faulty entries are neither.
func (r *Replica) dvcMessage() Message {
	h := r.newHeader(CmdDoViewChange)
	var floor uint64
	if r.fenced {
		// It may have acknowledged, and forgotten, any op up to the head of
		// the log it adopted after losing its state (and, before it adopted
		// one, anything at all).
		floor = r.fenceOp
		if r.status == statusRecoveringHead || floor == 0 {
			floor = ^uint64(0)
		}
	}
	var nack, present bitset128
	body := make([]byte, len(r.vhHeaders)*HeaderSize)
	for i := range r.vhHeaders {
		vh := &r.vhHeaders[i]
		copy(body[i*HeaderSize:], vh[:])
		s := r.slotAt(vh.Op())
		same := s != nil && s.h.Identity() == vh.Identity()
		if same && (s.hasBody || s.j == jDurable) {
			present.set(i)
		}
		if vh.Op() > floor {
			if !same || s.j == jNone || s.j == jWriting {
				nack.set(i)
			}
		}
	}
	h.putSum(offCtlChecksum, r.vhCommitID)
	h.put64(offCtlA, r.vhCommit)
	h.put64(offCtlB, r.vhCommit+uint64(len(r.vhHeaders)))
	h.put32(offCtlC, r.logView)
	h.put64(offDVCNackFloor, floor)
	h.put64(offCtlD, r.checkpoint)
	h.putBits(offDVCNack, nack)
	h.putBits(offDVCPresent, present)
	h.put64(offDVCTimestamp, r.lastTS)
	return r.finish(h, body)
}

func (r *Replica) onDoViewChange(from int, m Message) {
	h := m.Header
	v := h.View()
	if v < r.view || r.status == statusRecoveringHead {
		return
	}
	if v > r.view {
		// The sender saw a view-change quorum for v.
		r.transitionToViewChange(v)
	}
	if r.status == statusNormal && v == r.view && r.isPrimary() {
		r.send(from, r.startViewMessage(0))
		return
	}
	if r.status != statusViewChange || v != r.view || !r.isPrimary() {
		return
	}
	r.dvcs[from] = parseDVC(from, m)
	r.tryMerge()
}

// tryMerge runs at the primary-elect once its own view state is durable and
// a view-change quorum of DoViewChanges arrived.
func (r *Replica) tryMerge() {
	if r.status != statusViewChange || !r.isPrimary() || r.primaryReady || !r.viewSettled() {
		return
	}
	r.dvcs[r.self] = parseDVC(r.self, r.dvcMessage())
	votes := make([]*dvcVote, 0, r.n)
	for _, d := range r.dvcs {
		if d != nil {
			votes = append(votes, d)
		}
	}
	if len(votes) < r.qVC {
		return
	}
	res := mergeDVCs(votes, r.n, r.qNack)
	if res.status != mergeOK {
		return
	}
	r.adoptLog(r.view, res.commit, res.commitID, res.headers, res.timestamp, true)
}

type mergeStatus uint8

const (
	mergeOK mergeStatus = iota
	// mergeAwaiting: an op is neither provably uncommitted nor available from
	// any vote so far; more votes may settle it.
	mergeAwaiting
	// mergeStuck: every replica voted and an op can be neither kept nor
	// dropped; the view cannot start (only more storage faults than the
	// fault model allows lead here).
	mergeStuck
)

type mergeResult struct {
	status    mergeStatus
	commit    uint64
	commitID  Checksum
	headers   []Header // ops commit+len … commit+1, highest first
	timestamp uint64
}

// mergeDVCs computes the log of the new view from a view-change quorum of
// votes (VSR revisited, with TigerBeetle's refinement from Protocol-Aware
// Recovery): the votes with the highest log_view are canonical; every op up to
// the highest committed op any vote reports is kept; above it, ops are kept in
// order from the canonical headers until one is proven uncommitted by a nack
// quorum — replicas that never acknowledged it — which truncates the log
// there. An op that is not proven uncommitted but whose body no vote holds
// blocks the view until more votes arrive. Corrupt entries are never nacks.
func mergeDVCs(votes []*dvcVote, n, qNack int) mergeResult {
	var res mergeResult
	logViewC := uint32(0)
	for _, v := range votes {
		logViewC = max(logViewC, v.logView)
		if v.commit > res.commit {
			res.commit, res.commitID = v.commit, v.commitID
		}
		res.timestamp = max(res.timestamp, v.timestamp)
	}
	for _, v := range votes {
		if v.commit == res.commit && v.commitID != res.commitID {
			panic(fmt.Sprintf("vsr: merge: votes disagree on committed op %d: %s vs %s",
				res.commit, v.commitID, res.commitID))
		}
		if h, _ := v.header(res.commit + 1); h != nil && v.logView == logViewC && h.Parent() != res.commitID {
			panic(fmt.Sprintf("vsr: merge: canonical vote of replica %d does not chain to committed op %d",
				v.replica, res.commit))
		}
	}
	headMax := res.commit
	for _, v := range votes {
		if v.logView == logViewC {
			headMax = max(headMax, v.op)
		}
	}
	prev := res.commitID
	var kept []Header
	for op := res.commit + 1; op <= headMax; op++ {
		var canon *Header
		for _, v := range votes {
			if v.logView != logViewC {
				continue
			}
			if h, _ := v.header(op); h != nil {
				if canon == nil {
					canon = h
				} else if canon.Identity() != h.Identity() {
					panic(fmt.Sprintf("vsr: merge: canonical votes disagree on op %d", op))
				}
			}
		}
		if canon == nil {
			panic(fmt.Sprintf("vsr: merge: no canonical header for op %d ≤ head %d", op, headMax))
		}
		if canon.Parent() != prev {
			panic(fmt.Sprintf("vsr: merge: canonical chain breaks at op %d", op))
		}
		nacks, copies := 0, 0
		for _, v := range votes {
			h, i := v.header(op)
			if h == nil {
				if v.op < op && op > v.nackFloor {
					nacks++ // its log ends below op: it never acknowledged op
				}
				continue
			}
			same := h.Identity() == canon.Identity()
			if same && v.present.has(i) {
				copies++
			}
			if op > v.nackFloor && (v.nack.has(i) || !same) {
				nacks++
			}
		}
		if nacks >= qNack || (nacks > 0 && mutationTruncateWithoutNackQuorum()) {
			break
		}
		if copies == 0 {
			if len(votes) < n {
				res.status = mergeAwaiting
			} else {
				res.status = mergeStuck
			}
			return res
		}
		kept = append(kept, *canon)
		prev = canon.Identity()
	}
	slices.Reverse(kept)
	res.headers = kept
	return res
}

// adoptLog makes the log of view v — committed op a with identity aid, then
// headers (highest first) — this replica's log. It keeps the longest prefix of
// its own log that provably agrees, truncates the rest (journal included),
// records the new view state and leaves the missing prepares to repair.
func (r *Replica) adoptLog(v uint32, a uint64, aid Checksum, headers []Header, ts uint64, asPrimary bool) {
	h := a + uint64(len(headers))
	target := func(op uint64) *Header { return &headers[h-op] }

	// Ops at or below what this replica knows committed are canonical; above,
	// an op agrees if its identity matches (and then every op below it does,
	// by the hash chain).
	k := min(r.commitMax, r.op)
	if a <= r.op {
		if id, ok := r.identityOf(a); ok {
			if id == aid {
				k = max(k, a)
			} else if a <= r.commitMax {
				panic(fmt.Sprintf("vsr: replica %d: committed op %d is %s here but %s in view %d",
					r.self, a, id, aid, v))
			}
		}
	}
	for op := a + 1; op <= min(r.op, h); op++ {
		s := r.slotAt(op)
		if s == nil || s.h.Identity() != target(op).Identity() {
			break
		}
		k = op
	}
	for op := k + 1; op <= r.op; op++ {
		s := r.slotAt(op)
		if s == nil || !s.hasToken {
			continue
		}
		if op <= a || (op <= h && s.h.Identity() == target(op).Identity()) {
			r.adoptOrphan(s)
		}
	}
	// The view state changes below; marking it first makes the journal
	// truncate wait until the record of the new log_view is durable (see
	// viewHold).
	r.markView()
	r.truncateAbove(k)
	for op := max(k, a) + 1; op <= h && op <= r.windowLimit(); op++ {
		r.putHeader(target(op))
		r.op = op
	}
	if a > k && a > r.anchorOp {
		r.anchorOp, r.anchorID = a, aid
	}
	r.noteCommit(a, aid, true)

	if r.fenced && r.status == statusRecoveringHead {
		r.fenceOp = max(r.fenceOp, h)
	}
	r.view, r.logView = v, v
	r.vhCommit, r.vhCommitID = a, aid
	r.vhHeaders = append(r.vhHeaders[:0], headers...)
	r.lastTS = max(r.lastTS, ts)

	r.primaryReady = asPrimary
	r.campaigning = false
	r.svcView = v
	clear(r.svcFrom)
	r.probes = 0
	r.t.rsv.stop()
	clear(r.acked)
	r.primaryHead = 0
	r.heartbeat = 0
	r.rep = repairState{nonce: r.rep.nonce}
	if asPrimary {
		r.t.repair.stop()
		r.repairFire()
		return
	}
	clear(r.dvcs)
	r.status = statusNormal
	r.t.svc.stop()
	r.t.dvc.stop()
	r.t.status.stop()
	r.t.commit.stop()
	r.t.prepare.stop()
	r.heard[r.primaryIndex(v)] = r.ticks
	r.t.heartbeat.start(r, r.tk.heartbeat)
	r.ackDirty = true
}

// installViewHeaders puts the headers of the adopted log that did not fit in
// the window at adoption (the replica was too far behind) into the ring once
// they fit, so the replica never loses sight of its own view's log.
func (r *Replica) installViewHeaders() {
	if r.logView != r.view || len(r.vhHeaders) == 0 {
		return
	}
	head := r.vhCommit + uint64(len(r.vhHeaders))
	for op := max(r.op, r.vhCommit, r.commitMin) + 1; op <= head && op <= r.windowLimit(); op++ {
		if r.slotAt(op) != nil {
			continue
		}
		h := &r.vhHeaders[head-op]
		if id, ok := r.identityOf(op - 1); ok && id != h.Parent() {
			return // the ring moved on past these headers
		}
		r.putHeader(h)
		r.op = max(r.op, op)
	}
}

// maybeStartView completes a view change at the primary-elect once every op
// of the adopted log is durable in its journal: normal status, StartView to
// everyone, and the uncommitted suffix becomes the pipeline, to be
// acknowledged again in this view.
func (r *Replica) maybeStartView() {
	if !r.primaryReady || r.status != statusViewChange || !r.viewSettled() ||
		r.durableHead < r.op || r.op < r.commitMax || r.op < r.vhCommit+uint64(len(r.vhHeaders)) {
		return
	}
	r.primaryReady = false
	r.status = statusNormal
	clear(r.acked)
	for i := range r.heard {
		r.heard[i] = r.ticks
	}
	r.acked[r.self] = r.durableHead
	r.t.svc.stop()
	r.t.dvc.stop()
	r.t.status.stop()
	r.t.repair.stop()
	r.t.commit.startExact(r.tk.commit)
	if r.op > r.commitMax {
		r.t.prepare.start(r, r.tk.prepare)
	}
	r.broadcast(r.startViewMessage(0))
	r.commitCheck()
}

// startViewMessage describes the primary's log: its commit point and the
// uncommitted suffix. nonce echoes a RequestStartView.
func (r *Replica) startViewMessage(nonce uint64) Message {
	h := r.newHeader(CmdStartView)
	c := min(r.commitMax, r.op)
	if r.op-c > PipelineMax {
		c = r.op - PipelineMax
	}
	id, ok := r.identityOf(c)
	if !ok {
		panic(fmt.Sprintf("vsr: replica %d: primary lacks identity of op %d", r.self, c))
	}
	body := make([]byte, (r.op-c)*HeaderSize)
	for i, op := 0, r.op; op > c; i, op = i+1, op-1 {
		copy(body[i*HeaderSize:], r.slotAt(op).h[:])
	}
	h.putSum(offCtlChecksum, id)
	h.put64(offCtlA, c)
	h.put64(offCtlB, r.op)
	h.put64(offCtlC, nonce)
	h.put64(offCtlD, r.checkpoint)
	h.put64(offSVTimestamp, r.lastTS)
	return r.finish(h, body)
}

func (r *Replica) onStartView(from int, m Message) {
	h := m.Header
	v := h.View()
	if from != int(r.primaryIndex(v)) || r.self == int(r.primaryIndex(v)) || v < r.view {
		return
	}
	switch r.status {
	case statusNormal:
		if v == r.view {
			r.refreshFromStartView(m)
			return
		}
	case statusRecovering, statusRecoveringHead:
		if v == r.view && h.ctlC() != r.incarnation {
			return // a start view from before this boot: wait for our probe's answer
		}
	}
	if r.rejoining {
		if int64(v) > r.viewOf[from] {
			r.viewOf[from] = int64(v)
		}
		if !r.rejoinViewKnown(v) {
			return
		}
		r.rejoining = false
	}
	n := len(m.Body) / HeaderSize
	headers := make([]Header, n)
	for i := 0; i < n; i++ {
		headers[i] = *suffixHeader(m.Body, i)
	}
	r.adoptLog(v, h.ctlA(), h.ctlChecksum(), headers, h.u64(offSVTimestamp), false)
}

// refreshFromStartView lets a normal backup learn the primary's commit point
// and suffix headers of its own view (an answer to its probe).
func (r *Replica) refreshFromStartView(m Message) {
	h := m.Header
	r.noteCommit(h.ctlA(), h.ctlChecksum(), true)
	n := len(m.Body) / HeaderSize
	for i := n - 1; i >= 0; i-- {
		ph := suffixHeader(m.Body, i)
		op := ph.Op()
		if r.slotAt(op) != nil || op <= r.commitMin || op > r.windowLimit() {
			continue
		}
		c := *ph
		normalize(&c)
		if below := r.slotAt(op - 1); below != nil && below.h.Identity() != c.Parent() {
			panic(fmt.Sprintf("vsr: replica %d: start view of own view %d breaks chain at op %d", r.self, r.view, op))
		}
		r.putHeader(&c)
		if op > r.op {
			r.op = op
		}
	}
	r.primaryHead = max(r.primaryHead, h.ctlB())
	r.ackDirty = true
}

// RequestStartView flags (offset 88).
const (
	// rsvRejoin: the sender lost its disk and asks everyone for their view.
	rsvRejoin = 1
	// rsvReport: an answer to a rejoining replica; the header's view is the
	// sender's current view.
	rsvReport = 2
)

func (r *Replica) rsvMessage() Message {
	h := r.newHeader(CmdRequestStartView)
	h.put64(offNonce, r.incarnation)
	if r.rejoining {
		h.put32(offRangeLo, rsvRejoin)
	}
	return r.finish(h, nil)
}

func (r *Replica) onRequestStartView(from int, h *Header) {
	flags := h.u32(offRangeLo)
	if flags&rsvReport != 0 {
		if r.rejoining && int64(h.View()) > r.viewOf[from] {
			r.viewOf[from] = int64(h.View())
		}
		return
	}
	if r.status == statusNormal && r.isPrimary() && h.View() <= r.view {
		r.send(from, r.startViewMessage(h.nonce()))
	}
	if flags&rsvRejoin != 0 && !r.rejoining {
		m := r.newHeader(CmdRequestStartView)
		m.put64(offNonce, h.nonce())
		m.put32(offRangeLo, rsvReport)
		r.send(from, r.finish(m, nil))
	}
}

// rejoinViewKnown reports whether a rejoining replica may adopt a StartView
// of view v: it heard the views of n − replication + 1 other replicas, a set
// that meets every replication quorum even without this replica, so the
// newest view in which anything committed is among them, and v is not older
// than any of them.
func (r *Replica) rejoinViewKnown(v uint32) bool {
	heard, newest := 0, int64(-1)
	for i, w := range r.viewOf {
		if i != r.self && w >= 0 {
			heard++
			newest = max(newest, w)
		}
	}
	return heard >= r.n-r.qRep+1 && int64(v) >= newest
}

// probeNewerView asks the primary of a newer view for its StartView, at most
// once per retransmit interval.
func (r *Replica) probeNewerView(v uint32) {
	if r.t.rsv.armed || r.solo() {
		return
	}
	r.send(int(r.primaryIndex(v)), r.rsvMessage())
	r.t.rsv.start(r, r.tk.rsv)
}

// hintStalePrimary answers a message from a primary of an older view with
// this view's StartView, so a deposed primary that was cut off catches up.
func (r *Replica) hintStalePrimary(from int, theirView uint32) {
	if r.status != statusNormal || !r.isPrimary() || theirView >= r.view {
		return
	}
	if r.ticks-r.serve[from].hintTick < uint64(r.tk.commit) && r.serve[from].hintTick != 0 {
		return
	}
	r.serve[from].hintTick = r.ticks
	r.send(from, r.startViewMessage(0))
}

func (r *Replica) tickViewChange() {
	if r.t.svc.tick() {
		r.broadcast(r.svcMessage(r.view)) // "entered": others may follow
		if r.campaigning && r.svcView > r.view {
			r.voteFrom(r.self)
			r.broadcast(r.svcMessage(r.svcView))
		}
		r.t.svc.start(r, r.tk.vcRetransmit)
		r.checkSVCQuorum()
	}
	if r.t.dvc.tick() && !r.isPrimary() && r.logView < r.view {
		r.send(int(r.primaryIndex(r.view)), r.dvcMessage())
		r.t.dvc.startBackoff(r, r.tk.vcRetransmit)
	}
	if r.t.status.tick() {
		r.voteViewChange(r.view + 1)
		r.t.status.start(r, r.tk.vcStatus)
	}
}

func (r *Replica) tickRecovering(probe bool) {
	if probe {
		r.probes++
		m := r.rsvMessage()
		if r.probes <= 1 && int(r.primaryIndex(r.view)) != r.self {
			r.send(int(r.primaryIndex(r.view)), m)
		} else {
			r.broadcast(m)
		}
		r.t.rsv.start(r, r.tk.rsv)
		if r.view > r.logView {
			// This replica entered a view change for its view before it
			// restarted: let the others follow, so that view starts and can
			// answer the probe.
			r.broadcast(r.svcMessage(r.view))
		}
		if r.status == statusRecovering && r.probes >= r.cfg.ViewProbeAttemptsMax {
			// Nobody answers as primary of our view (a whole-cluster restart):
			// elect one among the restarted logs.
			r.voteViewChange(max(r.view+1, r.svcView))
		}
	}
	r.campaignTick()
}

// Votes for a view expire: a replica that stopped campaigning (it heard its
// primary again) must not help depose the primary later with an old vote.
// Campaigners repeat their vote every view_change_retransmit_interval.
func (r *Replica) voteFrom(i int) { r.svcFrom[i] = r.ticks + 1 }

func (r *Replica) hasVote(i int) bool {
	v := r.svcFrom[i]
	return v != 0 && r.ticks+1-v <= uint64(4*r.tk.vcRetransmit)
}

// campaignTick repeats this replica's vote while it campaigns.
func (r *Replica) campaignTick() {
	if r.t.svc.tick() && r.campaigning && r.svcView > r.view {
		r.voteFrom(r.self)
		r.broadcast(r.svcMessage(r.svcView))
		r.t.svc.start(r, r.tk.vcRetransmit)
		r.checkSVCQuorum()
	}
}
