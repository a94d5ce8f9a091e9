package shard

// Datasyncer is anything that can make its written data durable: a
// vfs.File, or a handle of the vfs engineer's io_uring ring. Implementations
// must be comparable (pointers are), because the group commit deduplicates
// them by identity.
type Datasyncer interface {
	Datasync() error
}

// SyncFailure reports one file whose fdatasync failed during a group commit.
// After a failed fdatasync the kernel may have dropped the dirty pages, so the
// owner must treat every write since that file's last successful sync as
// lost: never retry the sync and ack.
type SyncFailure struct {
	File Datasyncer
	Err  error
}

// GroupCommit collects the files a loop iteration dirtied and makes each
// durable once at the iteration's end, so a burst of N messages to one
// partition costs one fdatasync, not N.
//
// A shard owns its GroupCommit and calls it only from its own goroutine; an
// implementation needs no locking. The default, SyncSet, syncs in
// registration order; an io_uring-backed implementation can submit every
// IORING_OP_FSYNC(DATASYNC) in one io_uring_enter and wait for all of them,
// as long as Flush returns only after every registered file is durable or
// reported failed.
type GroupCommit interface {
	// Add registers f for the end-of-iteration sync. Adding a file already
	// registered this iteration is a no-op.
	Add(f Datasyncer)
	// Len is the number of distinct files registered since the last Flush.
	Len() int
	// Flush syncs every registered file exactly once, forgets them all, and
	// returns the failures (nil when every sync succeeded).
	Flush() []SyncFailure
}

// SyncSet is the portable GroupCommit: a deduplicated, insertion-ordered set
// synced one file after another.
type SyncSet struct {
	index map[Datasyncer]struct{}
	order []Datasyncer
}

// NewSyncSet returns an empty set.
func NewSyncSet() *SyncSet { return &SyncSet{index: map[Datasyncer]struct{}{}} }

// Add implements GroupCommit.
func (s *SyncSet) Add(f Datasyncer) {
	if f == nil {
		panic("shard: GroupCommit.Add(nil)")
	}
	if _, ok := s.index[f]; ok {
		return
	}
	s.index[f] = struct{}{}
	s.order = append(s.order, f)
}

// Len implements GroupCommit.
func (s *SyncSet) Len() int { return len(s.order) }

// Flush implements GroupCommit. Files are synced in the order they were
// first added, which keeps runs reproducible.
func (s *SyncSet) Flush() []SyncFailure {
	var failed []SyncFailure
	for i, f := range s.order {
		if err := f.Datasync(); err != nil {
			failed = append(failed, SyncFailure{File: f, Err: err})
		}
		s.order[i] = nil
	}
	s.order = s.order[:0]
	clear(s.index)
	return failed
}
