package vfs

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Batch collects the writes and syncs one shard-loop iteration needs, so that
// FS.Submit can issue them together: all writes first, then one fdatasync per
// distinct file and one fsync per distinct directory. Writes in one batch
// must not overlap each other (they may run concurrently); syncs always run
// after every write of the batch has completed.
//
// A Batch is reusable (Reset) and is not safe for concurrent use. It keeps
// references to the buffers handed to it until Reset.
type Batch struct {
	writes []BatchWrite
	hints  []BatchHint
	syncs  []File
	dirs   []string
	seen   map[File]struct{}
	seenD  map[string]struct{}
}

// BatchWrite is one vectored write queued in a Batch.
type BatchWrite struct {
	File File
	Bufs [][]byte
	Off  int64
}

// BatchHint is one hint queued in a Batch: a range to write back (Len >
// 0), with Release a range whose cached pages to drop (Batch.Release), or,
// with Sync, an fdatasync to start (StartSync).
type BatchHint struct {
	File    File
	Off     int64
	Len     int64
	Sync    bool
	Release bool
}

// Writeback queues a writeback hint (File.Writeback) for n bytes at off.
// Hints are issued after every write of the batch has completed, so a hint
// may cover a range the same batch writes, and before or alongside its
// syncs. Submit need not wait for them (the io_uring implementation does
// not), and an implementation may leave a hint out when too many are
// outstanding. They never fail the batch: a hint has no outcome that
// matters, and a write error it could reveal is reported by the file's
// next Datasync.
func (b *Batch) Writeback(f File, off, n int64) {
	if n <= 0 {
		return
	}
	b.hints = append(b.hints, BatchHint{File: f, Off: off, Len: n})
}

// Release queues a page-cache release hint (File.Release) for n bytes at
// off, issued with the batch's other hints: after its writes, before or
// alongside its syncs, so it must name a range that was durable before the
// batch. Like a writeback hint it never fails the batch and may be left
// out.
func (b *Batch) Release(f File, off, n int64) {
	if n <= 0 {
		return
	}
	b.hints = append(b.hints, BatchHint{File: f, Off: off, Len: n, Release: true})
}

// StartSync queues the start of an fdatasync of f that nobody waits for
// (see the package function StartSync): a hint like Writeback, issued with
// the batch's other hints.
func (b *Batch) StartSync(f File) {
	b.hints = append(b.hints, BatchHint{File: f, Sync: true})
}

// WritevAt queues a vectored write of bufs at off.
func (b *Batch) WritevAt(f File, bufs [][]byte, off int64) {
	b.writes = append(b.writes, BatchWrite{File: f, Bufs: bufs, Off: off})
}

// WriteAt queues a write of p at off.
func (b *Batch) WriteAt(f File, p []byte, off int64) {
	b.WritevAt(f, [][]byte{p}, off)
}

// Datasync queues an fdatasync of f; a file queued twice is synced once.
func (b *Batch) Datasync(f File) {
	if b.seen == nil {
		b.seen = make(map[File]struct{})
	}
	if _, ok := b.seen[f]; ok {
		return
	}
	b.seen[f] = struct{}{}
	b.syncs = append(b.syncs, f)
}

// SyncDir queues a directory sync; a directory queued twice is synced once.
func (b *Batch) SyncDir(dir string) {
	dir = filepath.Clean(dir)
	if b.seenD == nil {
		b.seenD = make(map[string]struct{})
	}
	if _, ok := b.seenD[dir]; ok {
		return
	}
	b.seenD[dir] = struct{}{}
	b.dirs = append(b.dirs, dir)
}

// Writes, Syncs and Dirs expose what is queued, in the order queued.
func (b *Batch) Writes() []BatchWrite { return b.writes }
func (b *Batch) Syncs() []File        { return b.syncs }
func (b *Batch) Dirs() []string       { return b.dirs }
func (b *Batch) Hints() []BatchHint   { return b.hints }

// Empty reports whether nothing is queued.
func (b *Batch) Empty() bool {
	return len(b.writes) == 0 && len(b.syncs) == 0 && len(b.dirs) == 0 && len(b.hints) == 0
}

// Reset empties the batch and drops its buffer references, keeping capacity.
func (b *Batch) Reset() {
	clear(b.writes)
	b.writes = b.writes[:0]
	clear(b.hints)
	b.hints = b.hints[:0]
	clear(b.syncs)
	b.syncs = b.syncs[:0]
	b.dirs = b.dirs[:0]
	clear(b.seen)
	clear(b.seenD)
}

// BatchOp names what a failed batch operation was.
type BatchOp int

const (
	BatchOpWrite BatchOp = iota
	BatchOpSync
	BatchOpSyncDir
)

func (o BatchOp) String() string {
	switch o {
	case BatchOpWrite:
		return "write"
	case BatchOpSync:
		return "datasync"
	case BatchOpSyncDir:
		return "syncdir"
	}
	return fmt.Sprintf("BatchOp(%d)", int(o))
}

// BatchFailure is one failed operation of a batch. Index is its position
// among the batch's Writes, Syncs or Dirs (by Op).
type BatchFailure struct {
	Op    BatchOp
	Index int
	Name  string
	Err   error
}

// BatchError reports every operation of a batch that failed. errors.Is and
// errors.As see through it to each cause.
type BatchError struct {
	Failures []BatchFailure
}

func (e *BatchError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "vfs: %d batch operation(s) failed", len(e.Failures))
	for i, f := range e.Failures {
		if i == 4 {
			fmt.Fprintf(&sb, "; ...")
			break
		}
		fmt.Fprintf(&sb, "; %s %s: %v", f.Op, f.Name, f.Err)
	}
	return sb.String()
}

func (e *BatchError) Unwrap() []error {
	out := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		out[i] = f.Err
	}
	return out
}

// Failed reports whether operation op at index i failed.
func (e *BatchError) Failed(op BatchOp, i int) bool {
	for _, f := range e.Failures {
		if f.Op == op && f.Index == i {
			return true
		}
	}
	return false
}

// SubmitSequential runs a batch one operation at a time through the files'
// own methods and fsys.SyncDir. It is what the portable and fault
// filesystems do, and what FS wrappers can delegate to.
func SubmitSequential(fsys FS, b *Batch) error {
	var fails []BatchFailure
	for i, w := range b.writes {
		if _, err := w.File.WritevAt(w.Bufs, w.Off); err != nil {
			fails = append(fails, BatchFailure{BatchOpWrite, i, w.File.Name(), err})
		}
	}
	runHints(b.hints)
	for i, f := range b.syncs {
		if err := f.Datasync(); err != nil {
			fails = append(fails, BatchFailure{BatchOpSync, i, f.Name(), err})
		}
	}
	for i, d := range b.dirs {
		if err := fsys.SyncDir(d); err != nil {
			fails = append(fails, BatchFailure{BatchOpSyncDir, i, d, err})
		}
	}
	if fails != nil {
		return &BatchError{Failures: fails}
	}
	return nil
}

// runHints issues writeback hints one at a time, ignoring their errors
// (see Batch.Writeback).
func runHints(hints []BatchHint) {
	for _, h := range hints {
		switch {
		case h.Sync:
			StartSync(h.File)
		case h.Release:
			_ = h.File.Release(h.Off, h.Len)
		default:
			_ = h.File.Writeback(h.Off, h.Len)
		}
	}
}

// SyncStarter is implemented by files that can start an fdatasync without
// waiting for it (the io_uring files).
type SyncStarter interface {
	StartSync()
}

// StartSync starts an fdatasync of f that nobody waits for, where f can
// (io_uring files); elsewhere it does nothing. Like a writeback hint it has
// no durability meaning for the caller, who still syncs what must be
// durable: it moves the cost of that later sync out of the caller's way.
// On ext4 the first fdatasync after a run of appends pays for a journal
// commit and a device cache flush of everything written since the last
// one (tens of milliseconds for tens of MiB on a virtual disk); started
// in the background every few MiB, that cost is mostly paid by the time
// a checkpoint syncs. Its outcome is ignored: a write error it could
// reveal is reported by the file's next Datasync.
func StartSync(f File) {
	if s, ok := f.(SyncStarter); ok {
		s.StartSync()
	}
}
