package vsr

import "fmt"

// boot rebuilds the replica's in-memory state from what the node recovered.
//
// The journal is a hash chain by construction (an op is appended only after
// its parent), so a header's commit field proves that every journal op up to
// it is committed. The durable view headers say which suffix the replica
// vouched for in its log_view. The replica keeps the longest journal prefix
// it can show is canonical and truncates the rest; if what it truncates might
// include acknowledged, uncommitted ops (a corrupt entry, or a tail the
// journal cannot prove was never synced) it becomes recovering_head: it may no
// longer vouch for its log, so it will not vote until a primary's StartView
// re-anchors it, and it will not nack ops of that view (it is fenced).
func (r *Replica) boot(b Boot) error {
	if b.State == nil {
		return r.bootFresh(b)
	}
	s, err := DecodeState(b.State)
	if err != nil {
		return fmt.Errorf("vsr: boot: %w", err)
	}
	if s.Cluster != r.cfg.Cluster || s.Group != r.cfg.Group || s.Replica != r.cfg.Replica ||
		s.ReplicaCount != r.cfg.ReplicaCount {
		return fmt.Errorf("%w: state record is of cluster %s group %d replica %d/%d",
			ErrConfig, s.Cluster, s.Group, s.Replica, s.ReplicaCount)
	}
	r.durable = s
	r.view, r.logView = s.View, s.LogView
	r.fenced, r.fenceOp = s.Fenced, s.FenceOp
	r.vhCommit, r.vhCommitID = s.Commit, s.CommitID
	r.vhHeaders = append([]Header(nil), s.Headers...)
	r.checkpoint, r.checkpointID = s.Checkpoint, s.CheckpointID
	r.lastTS = s.Timestamp
	if s.Checkpoint > 0 {
		if b.Checkpoint == nil || b.Checkpoint.Op != s.Checkpoint {
			return fmt.Errorf("%w: state record names checkpoint %d but the node restored %v",
				ErrConfig, s.Checkpoint, b.Checkpoint)
		}
		m := *b.Checkpoint
		m.Identity, m.Timestamp = s.CheckpointID, s.CheckpointTimestamp
		r.manifest = &m
		r.checkpointTS = s.CheckpointTimestamp
	}
	if r.sessions != nil && len(b.Sessions) > 0 {
		t, err := decodeTable(b.Sessions, r.cfg.ClientsMax, r.cfg.Dedup)
		if err != nil {
			return fmt.Errorf("vsr: boot: %w", err)
		}
		r.sessions = t
	}
	r.commitMin, r.commitMax = s.Checkpoint, s.Checkpoint
	r.discarded = 0

	uncertain, err := r.bootJournal(b, s)
	if err != nil {
		return err
	}
	r.heartbeat = 0
	switch {
	case r.solo():
		// A restarted solo replica moves to a new view, so an op lost as a
		// torn write is never reused within one view.
		r.view++
		r.logView = r.view
		r.op = r.journalHead
		r.commitMax = max(r.commitMax, r.journalHead)
		r.freezeViewHeaders()
		r.markView()
		r.enterNormalPrimary()
	case uncertain || b.Rejoin || s.HeadPending:
		r.rejoining = s.Rejoining
		r.fenced = true
		r.markView()
		// The journal truncate bootJournal queued drops ops this replica may
		// have acknowledged; only the fence makes that safe, so the truncate
		// must not outlive a crash the fencing record does not survive.
		r.holdJournalForFence()
		r.status = statusRecoveringHead
		r.t.rsv.start(r, 1)
	case r.logView < r.view:
		r.status = statusViewChange
		r.svcView = r.view
		r.voteFrom(r.self)
		r.t.svc.start(r, 1)
		r.t.status.start(r, r.tk.vcStatus)
		if p := int(r.primaryIndex(r.view)); p != r.self {
			r.t.dvc.start(r, 1)
		} else {
			r.tryMerge()
		}
	case r.isPrimary():
		// A restarted primary lost its pipeline and acknowledgements: it
		// never resumes its view but asks for the next one.
		r.status = statusRecovering
		r.voteViewChange(r.view + 1)
		r.t.rsv.start(r, r.tk.rsv)
	default:
		r.status = statusRecovering
		r.t.rsv.start(r, 1)
	}
	return nil
}

func (r *Replica) bootFresh(b Boot) error {
	if len(b.Journal) > 0 || b.Checkpoint != nil || b.HeadUncertain {
		return fmt.Errorf("%w: journal or checkpoint without a state record", ErrConfig)
	}
	r.markView()
	if b.Rejoin && !r.solo() {
		r.fenced = true
		r.rejoining = true
		r.status = statusRecoveringHead
		r.t.rsv.start(r, 1)
		return nil
	}
	if r.isPrimary() {
		r.enterNormalPrimary()
	} else {
		r.enterNormalBackup()
	}
	return nil
}

// bootJournal loads the recovered journal; it reports whether the replica
// may have lost acknowledged ops.
func (r *Replica) bootJournal(b Boot, s *State) (bool, error) {
	entries := b.Journal
	uncertain := b.HeadUncertain
	for i := range entries {
		e := &entries[i]
		if i > 0 && e.Op != entries[i-1].Op+1 {
			return false, fmt.Errorf("%w: journal entries not contiguous at op %d", ErrConfig, e.Op)
		}
		if e.Header != nil && (validatePrepare(e.Header, -1) != nil || e.Header.Op() != e.Op || !e.Header.SealValid()) {
			e.Header = nil // unverifiable: treat as corrupt
		}
		if i > 0 && e.Header != nil && entries[i-1].Header != nil &&
			e.Header.Parent() != entries[i-1].Header.Identity() {
			return false, fmt.Errorf("%w: journal is not a hash chain at op %d", ErrConfig, e.Op)
		}
	}
	var jFloor, jHead uint64
	if len(entries) > 0 {
		jFloor, jHead = entries[0].Op, entries[len(entries)-1].Op
	}
	at := func(op uint64) *Header {
		if op < jFloor || op > jHead || len(entries) == 0 {
			return nil
		}
		return entries[op-jFloor].Header
	}
	// Every intact header's commit field proves its prefix of the chain
	// committed.
	committed := r.checkpoint
	for i := range entries {
		if h := entries[i].Header; h != nil {
			committed = max(committed, min(h.Commit(), h.Op()))
		}
	}
	// A corrupt entry above the checkpoint ends the usable journal; one at or
	// below it is dropped at the next discard (faultyBelow).
	for i := range entries {
		if entries[i].Header == nil && entries[i].Op <= r.checkpoint {
			r.faultyBelow = entries[i].Op
		}
	}
	cut := jHead
	for i := range entries {
		if entries[i].Header == nil && entries[i].Op > r.checkpoint {
			if r.solo() {
				return false, fmt.Errorf("%w: solo replica: journal op %d is corrupt and no peer holds it",
					ErrConfig, entries[i].Op)
			}
			cut = entries[i].Op - 1
			break
		}
	}
	if cut < jHead && jHead > committed {
		uncertain = true
	}
	if jFloor > r.checkpoint+1 && cut > r.checkpoint {
		return false, fmt.Errorf("%w: journal starts at op %d above checkpoint %d", ErrConfig, jFloor, r.checkpoint)
	}
	// A damaged tail the journal left out (HeadUncertain) is still on disk
	// until a truncate removes it; boot fences the replica first (see
	// holdJournalForFence), so the truncate is issued even when it keeps
	// every entry handed over.
	if len(entries) == 0 || cut <= r.checkpoint {
		// Nothing beyond the checkpoint: start the journal afresh after it.
		if (len(entries) > 0 && jHead > r.checkpoint) || b.HeadUncertain {
			r.journalOp(JournalOp{Kind: JournalTruncate, Op: r.checkpoint})
		}
		if len(entries) > 0 || r.checkpoint > 0 {
			r.journalOp(JournalOp{Kind: JournalDiscard, Op: r.checkpoint})
		}
		r.journalHead, r.durableHead, r.journalFloor, r.op = r.checkpoint, r.checkpoint, 0, r.checkpoint
		r.discarded = r.checkpoint
		r.baseOp, r.baseID = r.checkpoint, r.checkpointID
		r.loadViewHeaders(s, r.checkpoint)
		r.commitMax = max(r.commitMax, min(committed, r.checkpoint), s.Commit)
		return uncertain, nil
	}

	// Which journal prefix is canonical for log_view? Three kinds of proof,
	// each covering the whole chain below the op it applies to:
	//   - an op at or below the committed point the commit fields show;
	//   - an op prepared in log_view itself: the one primary of that view
	//     prepared it, so it is in that view's log;
	//   - an op matching the view headers (their anchor — op 0, the root,
	//     for a replica that never adopted a StartView — or one of them).
	// Entries above the proven prefix are leftovers of older views whose
	// truncation did not survive a crash: the replica never acknowledged them
	// in log_view (above an op prepared in log_view every op of that view's
	// log was prepared in it too), so dropping them cannot make a nack false.
	journalID := func(x uint64) (Checksum, bool) {
		if x == 0 {
			return Checksum{}, true
		}
		if x <= cut {
			if h := at(x); h != nil {
				return h.Identity(), true
			}
		}
		if x+1 <= cut {
			if h := at(x + 1); h != nil {
				return h.Parent(), true
			}
		}
		return Checksum{}, false
	}
	k := max(r.checkpoint, min(cut, committed))
	for x := cut; x > k; x-- {
		if h := at(x); h != nil && h.PrepareView() == r.logView {
			k = x
			break
		}
	}
	vhHead := s.head()
	for x := min(cut, vhHead); x > k && x+1 > s.Commit; x-- {
		want := s.CommitID
		if x > s.Commit {
			want = s.Headers[vhHead-x].Identity()
		}
		if have, ok := journalID(x); ok && have == want {
			k = x
			break
		}
	}
	if r.solo() {
		k = cut // a solo replica committed every op it journaled
	}
	k = max(k, r.checkpoint)
	r.journalHead, r.durableHead = k, k
	if k > r.windowLimit() {
		return false, fmt.Errorf("%w: journal holds op %d, more than journal_slots above checkpoint %d",
			ErrConfig, k, r.checkpoint)
	}
	if jHead > k || b.HeadUncertain {
		r.journalOp(JournalOp{Kind: JournalTruncate, Op: k})
	}
	ringLow := jFloor
	if k+1 > uint64(len(r.ring)) {
		ringLow = max(ringLow, k+1-uint64(len(r.ring)))
	}
	for op := ringLow; op <= k; op++ {
		if h := at(op); h != nil {
			sl := r.putHeader(h)
			sl.j = jDurable
		}
	}
	r.journalFloor, r.op = jFloor, k
	r.loadViewHeaders(s, k)
	r.commitMax = max(r.commitMax, min(committed, k), s.Commit)
	return uncertain, nil
}

// loadViewHeaders installs the durable view headers above op k as canonical
// headers without bodies (a solo replica has no use for them: what it did not
// journal it never committed).
func (r *Replica) loadViewHeaders(s *State, k uint64) {
	if r.solo() {
		return
	}
	vhHead := s.head()
	for op := max(k, s.Commit) + 1; op <= vhHead && op <= r.windowLimit(); op++ {
		r.putHeader(&s.Headers[vhHead-op])
		r.op = op
	}
	if s.Commit > k && s.Commit > r.anchorOp {
		r.anchorOp, r.anchorID = s.Commit, s.CommitID
	}
}

func (r *Replica) enterNormalPrimary() {
	r.status = statusNormal
	clear(r.acked)
	for i := range r.heard {
		r.heard[i] = r.ticks
	}
	r.acked[r.self] = r.durableHead
	r.t.commit.startExact(r.tk.commit)
	if r.op > r.commitMax && !r.solo() {
		r.t.prepare.start(r, r.tk.prepare)
	}
}

func (r *Replica) enterNormalBackup() {
	r.status = statusNormal
	r.heard[r.primaryIndex(r.view)] = r.ticks
	r.t.heartbeat.start(r, r.tk.heartbeat)
}
