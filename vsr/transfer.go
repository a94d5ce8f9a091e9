package vsr

import (
	"encoding/binary"
	"fmt"
)

// ---------------------------------------------------------------------------
// Checkpoints.

// maybeCheckpoint asks the node to make the state after commit_min durable
// once CheckpointInterval ops were applied since the last checkpoint. The
// replica applies nothing more until the node has taken the request out of
// Ready, so the node can capture exactly that state.
func (r *Replica) maybeCheckpoint() {
	if r.ckptBusy || !r.checkpointDue() || (r.xfer != nil && r.xfer.installing) || r.journalResetPending {
		return
	}
	id, ok := r.identityOf(r.commitMin)
	if !ok {
		panic(fmt.Sprintf("vsr: replica %d: no identity for applied op %d", r.self, r.commitMin))
	}
	r.ckptBusy = true
	r.ckptFresh = true
	r.ckptOp, r.ckptID = r.commitMin, id
	r.ckptTS = 0
	if s := r.slotAt(r.commitMin); s != nil {
		r.ckptTS = s.h.Timestamp()
	}
	req := &CheckpointRequest{Op: r.commitMin}
	if r.sessions != nil {
		req.Sessions = r.sessions.encode()
	}
	r.out.Checkpoint = req
}

// checkpointDue: CheckpointInterval ops were applied since the last
// checkpoint, or an op CheckpointAfter named has been applied and no
// checkpoint covers it yet.
func (r *Replica) checkpointDue() bool {
	return r.commitMin >= r.checkpoint+uint64(r.cfg.CheckpointInterval) ||
		(r.ckptAfter > r.checkpoint && r.commitMin >= r.ckptAfter)
}

// CheckpointAfter asks for a checkpoint as soon as op is applied (at once
// if it already is), ahead of CheckpointInterval. The state machine calls
// it, from Apply too, when an op left the latest checkpoint's artifacts
// unservable: a peer fetching that checkpoint would fail, and with no
// further ops no newer checkpoint would replace it. The request is not
// durable; a restart that replays op applies it again, which asks again.
func (r *Replica) CheckpointAfter(op uint64) {
	if op <= r.ckptAfter {
		return
	}
	r.ckptAfter = op
	if r.stopped == nil && r.commitMin >= op && !r.ckptFresh {
		r.maybeCheckpoint()
	}
}

// CheckpointDone reports that the checkpoint requested for op is durable,
// with the manifest of its artifacts (Identity and Timestamp may be left
// zero; the replica fills them in). A failed checkpoint is retried later.
func (r *Replica) CheckpointDone(op uint64, m Manifest, err error) {
	if r.stopped != nil {
		return
	}
	if !r.ckptBusy || op != r.ckptOp {
		panic(fmt.Sprintf("vsr: replica %d: CheckpointDone(%d) without that checkpoint in flight", r.self, op))
	}
	r.ckptBusy = false
	if err != nil {
		r.t.checkpoint.start(r, r.tk.repair)
		return
	}
	if op <= r.checkpoint {
		return // a state transfer overtook it
	}
	m.Op, m.Identity, m.Timestamp = op, r.ckptID, r.ckptTS
	r.checkpoint, r.checkpointID, r.checkpointTS = op, r.ckptID, r.ckptTS
	r.manifest = &m
	r.markCheckpoint()
	if r.ckptAfter > op {
		// A CheckpointAfter that came while this checkpoint was in flight.
		r.maybeCheckpoint()
	}
	if r.xfer != nil {
		r.maybeInstall() // a transfer that waited for this checkpoint
	}
	r.pump()
}

// afterStateDurable runs after every successful state write: once a newer
// checkpoint is on disk the journal may forget the prefix it covers (keeping
// JournalSlots/2 ops of history below it for lagging peers).
func (r *Replica) afterStateDurable() {
	if r.journalResetPending && r.durable.Checkpoint >= r.checkpoint {
		r.journalResetPending = false
		if r.journalKeepTail && r.journalHead > r.checkpoint {
			r.journalKeepTail = false
			r.journalOp(JournalOp{Kind: JournalDiscard, Op: r.checkpoint})
			r.journalFloor, r.discarded = r.checkpoint+1, r.checkpoint
			return
		}
		r.journalKeepTail = false
		r.journalOp(JournalOp{Kind: JournalTruncate, Op: r.checkpoint})
		r.journalOp(JournalOp{Kind: JournalDiscard, Op: r.checkpoint})
		r.journalHead, r.durableHead, r.journalFloor = r.checkpoint, r.checkpoint, 0
		r.discarded = r.checkpoint
		return
	}
	retain := uint64(r.cfg.JournalSlots / 2)
	c := r.durable.Checkpoint
	if r.faultyBelow != 0 && (r.faultyBelow <= r.discarded || r.journalFloor == 0) {
		r.faultyBelow = 0
	}
	if (c <= retain && r.faultyBelow == 0) || r.journalFloor == 0 {
		return
	}
	var d uint64
	if c > retain {
		d = c - retain
	}
	if r.faultyBelow != 0 && r.faultyBelow <= c {
		// A corrupt entry the checkpoint covers is never repaired; the
		// metadata journal compacts by copying the ops it keeps and refuses
		// to copy it, which stopped the group (chaos seed 1033). Discard
		// through it: the history kept for lagging peers is shorter, and a
		// peer that needs it transfers state.
		d = max(d, r.faultyBelow)
	}
	d = min(d, r.journalHead)
	if d >= r.journalFloor && d > r.discarded {
		r.journalOp(JournalOp{Kind: JournalDiscard, Op: d})
		r.discarded = d
		if d >= r.journalHead {
			r.journalFloor = 0
		} else {
			r.journalFloor = d + 1
		}
	}
}

// ---------------------------------------------------------------------------
// State transfer: a replica that needs ops no peer's journal holds any more
// fetches a peer's latest checkpoint instead (manifest, then the artifacts
// chunk by chunk, each verified), installs it, and repairs the journal from
// there.

type transferState struct {
	peer     int
	nonce    uint64
	attempts int
	manifest *Manifest
	index    int // artifact being fetched
	// have is what the node has staged so far, by artifact id. It outlives
	// a manifest: when the peer moves on to a newer checkpoint mid-transfer
	// (it checkpoints every CheckpointInterval ops, so under load it does
	// so many times during a long transfer) the artifacts staged for the
	// older one carry over. A segment is append-only, so its prefix staged
	// earlier is a prefix of the newer artifact; the new manifest's
	// checksum over the whole artifact verifies it, and an artifact that
	// does not verify starts over from offset 0.
	have       map[uint32]*stagedArtifact
	sessions   []byte
	writes     int // ArtifactWrites not yet done
	installing bool
}

// stagedArtifact is the prefix of one artifact the node has staged.
type stagedArtifact struct {
	size    uint64
	sum     *ChecksumStream // over those size bytes
	carried bool            // staged for an older manifest
}

// carryOver keeps, of what is staged, whatever can still be a prefix of
// the new manifest's artifacts; the session table (small, and kept in
// memory here) is always fetched again.
func (x *transferState) carryOver(man *Manifest) {
	if x.have == nil {
		x.have = map[uint32]*stagedArtifact{}
	}
	want := make(map[uint32]*Artifact, len(man.Artifacts))
	for i := range man.Artifacts {
		want[man.Artifacts[i].ID] = &man.Artifacts[i]
	}
	for id, st := range x.have {
		a := want[id]
		switch {
		case a == nil || id == SessionsArtifact || st.size == 0 || st.size > a.Size,
			st.size == a.Size && st.sum.Sum() != a.Checksum:
			delete(x.have, id)
		default:
			st.carried = true
		}
	}
	x.sessions = nil
}

// stagedAt is how much of the artifact being fetched is staged.
func (x *transferState) stagedAt() uint64 {
	if x.manifest == nil || x.index >= len(x.manifest.Artifacts) {
		return 0
	}
	if st := x.have[x.manifest.Artifacts[x.index].ID]; st != nil {
		return st.size
	}
	return 0
}

// staged returns the staged prefix of artifact id, creating an empty one.
func (x *transferState) staged(id uint32) *stagedArtifact {
	if x.have == nil {
		x.have = map[uint32]*stagedArtifact{}
	}
	st := x.have[id]
	if st == nil {
		st = &stagedArtifact{sum: NewChecksumStream()}
		x.have[id] = st
	}
	return st
}

func (r *Replica) startTransfer(peer int) {
	r.rep.nonce++
	r.xfer = &transferState{peer: peer, nonce: r.rep.nonce}
	r.t.repair.stop()
	r.requestManifest()
}

func (r *Replica) requestManifest() {
	h := r.newHeader(CmdRequestManifest)
	h.put64(offNonce, r.xfer.nonce)
	r.send(r.xfer.peer, r.finish(h, nil))
	r.t.transfer.startBackoff(r, r.tk.repair)
}

func (r *Replica) transferFire() {
	x := r.xfer
	if x == nil {
		return
	}
	if x.installing || x.writes > 0 {
		r.t.transfer.start(r, r.tk.repair)
		return
	}
	x.attempts++
	if x.manifest == nil || x.attempts%4 == 0 {
		// Try another peer now and then: this one may be down or may have
		// moved to a newer checkpoint.
		if x.attempts%4 == 0 {
			x.peer = (x.peer + 1) % r.n
			if x.peer == r.self {
				x.peer = (x.peer + 1) % r.n
			}
		}
		r.rep.nonce++
		*x = transferState{peer: x.peer, nonce: r.rep.nonce, attempts: x.attempts, have: x.have}
		r.requestManifest()
		return
	}
	r.requestChunk()
}

func (r *Replica) onRequestManifest(from int, h *Header) {
	m := r.newHeader(CmdManifest)
	m.put64(offNonce, h.nonce())
	var body []byte
	if man := r.manifest; man != nil {
		m.put64(offRangeLo, man.Op)
		m.putSum(offRangeHi, man.Identity)
		m.put32(112, uint32(len(man.Artifacts)))
		m.put64(116, man.Timestamp)
		body = make([]byte, len(man.Artifacts)*artifactSize)
		for i, a := range man.Artifacts {
			b := body[i*artifactSize:]
			binary.LittleEndian.PutUint32(b[0:], a.ID)
			binary.LittleEndian.PutUint64(b[8:], a.Size)
			copy(b[16:32], a.Checksum[:])
		}
	}
	r.send(from, r.finish(m, body))
}

func (r *Replica) onManifest(from int, msg Message) {
	x := r.xfer
	h := msg.Header
	if x == nil || from != x.peer || h.nonce() != x.nonce {
		return
	}
	op := h.rangeLo()
	if x.manifest != nil {
		// The peer answers a chunk request of a checkpoint it no longer
		// serves with the manifest of the one it serves now (it checkpoints
		// every CheckpointInterval ops, so under load it moves on while a
		// transfer runs): start over on that one. Without this answer the
		// transfer waited through backed-off retries of chunks nobody
		// serves (chaos seeds 1004, 1019). What is staged carries over.
		if op == x.manifest.Op || x.installing {
			return // a duplicate, or an install under way
		}
		x.manifest = nil
	}
	if op <= r.commitMin {
		// Nothing to gain from this peer's checkpoint; let journal repair or
		// another peer help.
		r.xfer = nil
		r.t.transfer.stop()
		return
	}
	man := &Manifest{Op: op, Identity: h.sum(offRangeHi), Timestamp: h.u64(116)}
	for i := 0; i < len(msg.Body)/artifactSize; i++ {
		b := msg.Body[i*artifactSize:]
		var a Artifact
		a.ID = binary.LittleEndian.Uint32(b[0:])
		a.Size = binary.LittleEndian.Uint64(b[8:])
		copy(a.Checksum[:], b[16:32])
		man.Artifacts = append(man.Artifacts, a)
	}
	x.manifest = man
	x.index = 0
	x.carryOver(man)
	x.attempts = 0
	r.t.transfer.stop() // progress: the next retry waits the base interval again
	r.requestChunk()
}

// requestChunk asks for the next chunk, or installs when everything arrived.
func (r *Replica) requestChunk() {
	x := r.xfer
	if x.manifest.Op <= r.commitMin {
		// Journal repair overtook the transfer: installing now would move
		// the state machine back.
		r.abortTransfer()
		return
	}
	for x.index < len(x.manifest.Artifacts) {
		a := x.manifest.Artifacts[x.index]
		st := x.staged(a.ID)
		if st.size < a.Size {
			break
		}
		if sum := st.sum.Sum(); sum != a.Checksum && (a.Size != 0 || a.Checksum != (Checksum{})) {
			if !st.carried || a.Size == 0 {
				// Fetched whole for this manifest and still wrong.
				r.abortTransfer()
				return
			}
			// A prefix carried over from an older checkpoint was not one
			// of this artifact: fetch it again from the start.
			*st = stagedArtifact{sum: NewChecksumStream()}
			break
		}
		x.index++
	}
	if x.index == len(x.manifest.Artifacts) {
		r.maybeInstall()
		return
	}
	a := x.manifest.Artifacts[x.index]
	off := x.have[a.ID].size
	length := min(uint64(r.cfg.TransferChunkBytes), a.Size-off)
	h := r.newHeader(CmdRequestChunk)
	h.put64(offNonce, x.nonce)
	h.put64(offRangeLo, x.manifest.Op)
	h.put64(offRangeHi, off)
	h.put32(offCountU32, a.ID)
	h.put32(offChunkLen, uint32(length))
	r.send(x.peer, r.finish(h, nil))
	r.t.transfer.startBackoff(r, r.tk.repair)
}

func (r *Replica) onRequestChunk(from int, h *Header) {
	man := r.manifest
	if r.serve[from].busy {
		return
	}
	if man == nil || h.rangeLo() != man.Op {
		// That checkpoint is gone here: tell the requester which one this
		// replica serves now, so it starts over at once instead of retrying.
		r.onRequestManifest(from, h)
		return
	}
	var art *Artifact
	for i := range man.Artifacts {
		if man.Artifacts[i].ID == h.count32() {
			art = &man.Artifacts[i]
		}
	}
	length := uint64(h.chunkLen())
	if art == nil || h.rangeHi() >= art.Size || length > art.Size-h.rangeHi() ||
		length > uint64(r.cfg.TransferChunkBytes) {
		return
	}
	r.tokens++
	r.serve[from] = serveState{hintTick: r.serve[from].hintTick, busy: true, token: r.tokens,
		nonce: h.nonce(), op: man.Op, artifact: art.ID, offset: h.rangeHi(), length: uint32(length)}
	r.out.ArtifactReads = append(r.out.ArtifactReads, ArtifactRead{Token: r.tokens, Checkpoint: man.Op,
		Artifact: art.ID, Offset: h.rangeHi(), Length: uint32(length)})
}

// ArtifactReadDone answers an ArtifactRead with the bytes read (exactly
// Length of them) or an error.
func (r *Replica) ArtifactReadDone(token uint64, data []byte, err error) {
	for peer := range r.serve {
		s := &r.serve[peer]
		if !s.busy || s.token != token {
			continue
		}
		s.busy = false
		if err != nil || len(data) != int(s.length) {
			if r.manifest != nil && r.manifest.Op != s.op {
				// The checkpoint moved on while the read ran (its files may be
				// gone): point the requester at the current one.
				h := r.newHeader(CmdRequestManifest)
				h.put64(offNonce, s.nonce)
				r.onRequestManifest(peer, h)
			}
			return
		}
		h := r.newHeader(CmdChunk)
		h.put64(offNonce, s.nonce)
		h.put64(offRangeLo, s.op)
		h.put64(offRangeHi, s.offset)
		h.put32(offCountU32, s.artifact)
		h.put32(offChunkLen, s.length)
		r.send(peer, r.finish(h, data))
		return
	}
}

func (r *Replica) onChunk(from int, msg Message) {
	x := r.xfer
	h := msg.Header
	if x == nil || x.manifest == nil || from != x.peer || h.nonce() != x.nonce ||
		x.index >= len(x.manifest.Artifacts) || h.rangeLo() != x.manifest.Op {
		return
	}
	a := x.manifest.Artifacts[x.index]
	st := x.have[a.ID]
	if st == nil || h.count32() != a.ID || h.rangeHi() != st.size || uint64(len(msg.Body)) > a.Size-st.size {
		return
	}
	st.sum.Write(msg.Body)
	if a.ID == SessionsArtifact && r.sessions != nil {
		x.sessions = append(x.sessions, msg.Body...)
	}
	r.tokens++
	x.writes++
	r.out.ArtifactWrites = append(r.out.ArtifactWrites, ArtifactWrite{Token: r.tokens,
		Checkpoint: x.manifest.Op, Artifact: a.ID, Offset: st.size, Data: msg.Body})
	st.size += uint64(len(msg.Body))
	x.attempts = 0
	r.t.transfer.stop() // progress: the next retry waits the base interval again
	r.requestChunk()
}

// ArtifactWriteDone reports that an ArtifactWrite landed (or failed, which
// restarts the transfer).
func (r *Replica) ArtifactWriteDone(token uint64, err error) {
	x := r.xfer
	if x == nil || x.writes == 0 {
		return
	}
	x.writes--
	if err != nil {
		r.abortTransfer()
		return
	}
	r.maybeInstall()
	r.pump()
}

func (r *Replica) maybeInstall() {
	x := r.xfer
	if x == nil || x.manifest == nil || x.installing || x.writes > 0 || x.index < len(x.manifest.Artifacts) {
		return
	}
	if r.ckptBusy {
		// A local checkpoint is being written; install after it settles
		// (CheckpointDone, or the retry timer if that checkpoint fails:
		// nothing else would come back here, and the transfer would hold
		// journal repair off for good; sim seed 503862).
		r.t.transfer.start(r, r.tk.repair)
		return
	}
	if x.manifest.Op <= r.commitMin {
		r.abortTransfer() // overtaken by journal repair: nothing to install
		return
	}
	x.installing = true
	r.out.Install = &InstallRequest{Manifest: *x.manifest}
	r.t.transfer.start(r, r.tk.repair)
}

func (r *Replica) abortTransfer() {
	r.xfer = nil
	r.t.transfer.stop()
}

// InstallDone reports that the node replaced the state machine's state with
// the transferred checkpoint (or failed to, which restarts the transfer).
func (r *Replica) InstallDone(op uint64, err error) {
	x := r.xfer
	if r.stopped != nil || x == nil || !x.installing || x.manifest.Op != op {
		return
	}
	if err != nil {
		r.abortTransfer()
		return
	}
	man := *x.manifest
	if r.sessions != nil {
		t, derr := decodeTable(x.sessions, r.cfg.ClientsMax, r.cfg.Dedup)
		if derr != nil {
			r.stop(fmt.Errorf("state transfer: session table of checkpoint %d: %w", op, derr))
			return
		}
		r.sessions = t
	}
	r.xfer = nil
	r.t.transfer.stop()
	for o := r.commitMin + 1; o <= man.Op; o++ {
		if s := r.slotAt(o); s != nil {
			if s.hasToken {
				r.reply(Reply{Token: s.token, Client: s.h.Client(), Session: s.h.Session(),
					Request: s.h.Request(), Operation: s.h.Operation(), Status: StatusTransientNotCommitted})
			}
			r.dropBody(s)
			*s = slot{}
		}
	}
	r.expireOrphans(man.Op)
	// Ops above the checkpoint that the journal already holds, chained to
	// it, stay there: re-appending them after a truncate to the checkpoint
	// would leave them off the disk for a while, and a crash then would
	// bring the replica back in the same log_view without ops it had
	// acknowledged (sim seed 4002830).
	keep := false
	if r.journalHead > man.Op && r.journalFloor != 0 && r.journalFloor <= man.Op+1 {
		next := r.slotAt(man.Op + 1)
		keep = next != nil && next.j != jNone && next.h.Parent() == man.Identity
	}
	r.journalKeepTail = keep
	if !keep {
		for o := man.Op + 1; o <= r.op; o++ {
			if s := r.slotAt(o); s != nil {
				s.j, s.reading = jNone, false
			}
		}
	}
	r.commitMin = man.Op
	r.commitMax = max(r.commitMax, man.Op)
	r.checkpoint, r.checkpointID, r.checkpointTS = man.Op, man.Identity, man.Timestamp
	r.baseOp, r.baseID = man.Op, man.Identity
	r.manifest = &man
	r.lastTS = max(r.lastTS, man.Timestamp)
	if r.op < man.Op {
		r.op = man.Op
	}
	if r.anchorOp <= man.Op {
		r.anchorOp, r.anchorID = 0, Checksum{}
	}
	if keep {
		// Ops up to the checkpoint count as durable now; the tail's own
		// appends complete as before.
		if r.durableHead < man.Op {
			r.durableHead = man.Op
			for r.durableHead < r.journalHead {
				next := r.slotAt(r.durableHead + 1)
				if next == nil || next.j != jDurable {
					break
				}
				r.durableHead++
			}
		}
	} else if r.journalHead < man.Op {
		// The journal restarts after the checkpoint (once the state record
		// naming it is durable); until then nothing is appended.
		r.journalHead, r.durableHead = man.Op, man.Op
	}
	r.journalResetPending = true
	r.markCheckpoint()
	r.pump()
}
