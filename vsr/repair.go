package vsr

import "sort"

// repairState tracks journal repair: fetching prepares the replica needs (a
// missing header, a missing body, a corrupt journal entry) from peers.
type repairState struct {
	nonce    uint64
	attempt  int
	lastLo   uint64
	lastHi   uint64
	progress [4]uint64
	// pending holds repair prepares that could not be verified yet because
	// the prepare above them had not arrived (responses may be reordered).
	pending map[uint64]Message
}

// serveState is per-peer bookkeeping of what this replica serves.
type serveState struct {
	hintTick uint64
	// An outstanding artifact read for the peer's state transfer.
	busy     bool
	token    uint64
	nonce    uint64
	op       uint64
	artifact uint32
	offset   uint64
	length   uint32
}

// repairTarget returns the next range of ops to fetch and whom to ask: the
// lowest op the replica needs (to journal or to apply) and lacks, extended
// over a run of such ops.
//
// Ops whose header or identity (the anchor) is known verify against it, so
// any peer may serve them. Other ops are asked of the primary of the current view by a
// normal backup: what that primary sends in its view is canonical. Anyone
// else asks for them just below the nearest op whose identity it knows, so
// each arriving prepare verifies by the hash chain from the top down.
func (r *Replica) repairTarget() (lo, hi uint64, toPrimary, ok bool) {
	if r.xfer != nil || r.solo() {
		return 0, 0, false, false
	}
	chunk := uint64(r.cfg.RepairChunkMax)
	backup := r.status == statusNormal && !r.isPrimary()
	start := min(r.journalHead, r.commitMin)
	top := max(r.op, r.anchorOp)
	limit := min(top, r.windowLimit())
	for x := start + 1; x <= limit; x++ {
		s := r.slotAt(x)
		if s == nil {
			// y: the lowest op from x up whose identity is known — the
			// anchor (x itself, possibly) or the op below a known header.
			// Any peer's copy verifies against it, so a primary whose own
			// copy is corrupt cannot hold the repair up (seed 2078896).
			y := x
			for y <= top && r.slotAt(y) == nil && y != r.anchorOp {
				y++
			}
			if r.slotAt(y) != nil {
				y-- // y's header is known: fetch from just below it
			}
			if y > top || y > r.windowLimit() {
				// Nothing known above within reach: only the primary can vouch
				// for these (a peer that no longer holds them answers
				// RangeEvicted, and the replica transfers state instead).
				if !backup {
					return 0, 0, false, false
				}
				return x, min(limit, x+chunk-1), true, true
			}
			lo = x
			if y+1 > chunk && y+1-chunk > x {
				lo = y + 1 - chunk
			}
			return lo, y, false, true
		}
		if !s.hasBody && !s.reading && (x > r.journalHead || (x > r.commitMin && s.j == jFaulty)) {
			hi = x
			for hi+1 <= limit && hi-x+1 < chunk {
				n := r.slotAt(hi + 1)
				if n == nil || n.hasBody || n.reading {
					break
				}
				hi++
			}
			return x, hi, false, true
		}
	}
	if backup && r.primaryHead > r.op && r.op < r.windowLimit() {
		return r.op + 1, min(r.primaryHead, r.op+chunk, r.windowLimit()), true, true
	}
	return 0, 0, false, false
}

// repairCheck runs after every input: it arms the repair timer when
// something is missing (after a short debounce, since the primary's
// retransmissions may already be on their way), fires at once when the
// previous request was satisfied, and asks again soon — without backing off —
// when the previous request was only partly answered (the server may serve
// fewer ops per request than asked).
func (r *Replica) repairCheck() {
	lo, hi, _, ok := r.repairTarget()
	if !ok {
		if r.t.repair.armed {
			r.t.repair.stop()
		}
		r.rep.lastLo, r.rep.lastHi = 0, 0
		return
	}
	switch {
	case !r.t.repair.armed:
		if r.primaryReady {
			r.repairFire()
		} else {
			r.t.repair.start(r, r.tk.prepare)
		}
	case r.rep.lastHi != 0 && lo > r.rep.lastHi:
		r.repairFire()
	case r.rep.lastLo != 0 && (lo != r.rep.lastLo || hi != r.rep.lastHi):
		r.rep.lastLo, r.rep.lastHi = lo, hi
		r.t.repair.startExact(max(1, r.tk.prepare/4))
	}
}

func (r *Replica) repairFire() {
	lo, hi, toPrimary, ok := r.repairTarget()
	if !ok {
		r.t.repair.stop()
		return
	}
	progress := [4]uint64{r.op, r.journalHead, r.commitMin, hi}
	if progress != r.rep.progress {
		r.rep.progress = progress
		r.rep.attempt = 0
	}
	peer := r.repairPeer(lo)
	if toPrimary {
		peer = int(r.primaryIndex(r.view))
	}
	r.rep.nonce++
	r.rep.lastLo, r.rep.lastHi = lo, hi
	h := r.newHeader(CmdRequestPrepares)
	h.put64(offNonce, r.rep.nonce)
	h.put64(offRangeLo, lo)
	h.put64(offRangeHi, hi)
	r.send(peer, r.finish(h, nil))
	r.rep.attempt++
	r.t.repair.startBackoff(r, r.tk.repair)
}

// repairPeer picks whom to ask: a normal backup asks its primary first; a
// primary-elect asks the voters that reported the op present; everyone
// rotates over the other replicas on retries.
func (r *Replica) repairPeer(op uint64) int {
	var cands []int
	if r.primaryReady {
		for _, d := range r.dvcs {
			if d == nil || d.replica == r.self {
				continue
			}
			if _, i := d.header(op); i >= 0 && d.present.has(i) {
				cands = append(cands, d.replica)
			}
		}
	}
	if len(cands) == 0 {
		p := int(r.primaryIndex(r.view))
		if r.status == statusNormal && p != r.self {
			cands = append(cands, p)
		}
		for i := 1; i < r.n; i++ {
			if c := (r.self + i) % r.n; len(cands) == 0 || c != cands[0] {
				cands = append(cands, c)
			}
		}
	}
	return cands[r.rep.attempt%len(cands)]
}

// bufferRepair keeps a repair prepare that cannot be verified yet.
func (r *Replica) bufferRepair(m Message) {
	op := m.Header.Op()
	if r.rep.pending == nil {
		r.rep.pending = make(map[uint64]Message)
	}
	if len(r.rep.pending) >= r.cfg.RepairChunkMax {
		// Verification runs top-down, so the lowest op is the least useful.
		low := op
		for k := range r.rep.pending {
			low = min(low, k)
		}
		if low == op {
			return
		}
		delete(r.rep.pending, low)
	}
	r.rep.pending[op] = m
}

// drainPending installs buffered repair prepares that became verifiable
// after op was installed.
func (r *Replica) drainPending(op uint64) {
	for op > 1 && len(r.rep.pending) > 0 {
		m, ok := r.rep.pending[op-1]
		if !ok {
			return
		}
		delete(r.rep.pending, op-1)
		id, known := r.expectedIdentity(op - 1)
		if !known || id != m.Header.Identity() || r.slotAt(op-1) != nil {
			return
		}
		r.installPrepare(m)
		op--
	}
}

func (r *Replica) serveFloor() uint64 {
	if r.journalFloor != 0 {
		return r.journalFloor
	}
	return r.journalHead + 1
}

func (r *Replica) onRequestPrepares(from int, h *Header) {
	lo, hi := h.rangeLo(), h.rangeHi()
	if floor := r.serveFloor(); lo < floor {
		e := r.newHeader(CmdRangeEvicted)
		e.put64(offNonce, h.nonce())
		e.put64(offRangeLo, floor)
		r.send(from, r.finish(e, nil))
		lo = floor
	}
	// Serve the top of the range first: a requester that verifies by the
	// hash chain from above needs the highest op before the lower ones.
	hi = min(hi, r.op)
	if hi >= lo && hi-lo+1 > uint64(r.cfg.RepairChunkMax) {
		lo = hi - uint64(r.cfg.RepairChunkMax) + 1
	}
	for x := hi; x >= lo && x > 0; x-- {
		s := r.slotAt(x)
		switch {
		case s != nil && s.hasBody:
			r.send(from, r.prepareFrame(s))
		case s != nil && s.j == jDurable,
			s == nil && r.journalFloor != 0 && x >= r.journalFloor && x <= r.journalHead:
			r.queueServeRead(x, from, s)
		}
	}
}

func (r *Replica) queueServeRead(op uint64, peer int, s *slot) {
	if r.serveReads == nil {
		r.serveReads = make(map[uint64][]int)
	}
	peers, pending := r.serveReads[op]
	for _, p := range peers {
		if p == peer {
			return
		}
	}
	if !pending && len(r.serveReads) >= 2*r.cfg.RepairChunkMax {
		return // bounded: the requester retries
	}
	r.serveReads[op] = append(peers, peer)
	if pending || (s != nil && s.reading) {
		return
	}
	var id Checksum
	if s != nil {
		id = s.h.Identity()
		s.reading = true
	}
	r.out.Reads = append(r.out.Reads, Read{Op: op, Identity: id})
}

// serveRead answers the peers waiting for a journal entry read back for them.
func (r *Replica) serveRead(op uint64, stored *Header, body []byte) {
	peers := r.serveReads[op]
	if len(peers) == 0 {
		return
	}
	delete(r.serveReads, op)
	// The read was queued before it completed; a view change may have
	// truncated the op in between. A frame goes out in the current view, and
	// a backup takes a prepare from its primary as canonical, so serve only
	// what is still this replica's entry for op: the slot's own prepare, or
	// a committed op below the window (seed 1012440: a primary served an op
	// its new view had truncated, and a backup installed it).
	if s := r.slotAt(op); s != nil {
		if s.h.Identity() != stored.Identity() {
			return
		}
	} else if op > r.commitMin {
		return
	}
	sort.Ints(peers)
	for _, p := range peers {
		h := new(Header)
		*h = *stored
		h.setView(r.frameView())
		h.setReplica(uint8(r.self))
		h.setIncarnation(r.incarnation)
		h.Seal()
		r.send(p, Message{Header: h, Body: body})
	}
	if s := r.slotAt(op); s != nil {
		r.maybeDropBody(s)
	}
}

func (r *Replica) serveReadFailed(op uint64) { delete(r.serveReads, op) }

func (r *Replica) onRangeEvicted(from int, h *Header) {
	floor := h.rangeLo()
	need := r.commitMin + 1
	if floor <= need || r.xfer != nil || r.solo() {
		return
	}
	// The peer's checkpoint covers at least floor-1, and every checkpoint is
	// of committed ops: a replica that knows ops up to floor-1 were
	// committed (or holds or heard of an op at or above it) gains by
	// installing it. Comparing with floor itself stranded a backup whose
	// primary had evicted everything up to its commit (seed 1002324).
	if r.commitMax+1 >= floor || r.anchorOp+1 >= floor || r.op+1 >= floor || r.primaryHead+1 >= floor {
		r.startTransfer(from)
	}
}
