package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
)

// Bounded wraps a shard's filesystem so that the files opened through it
// hold at most Max descriptors of the inner filesystem at once, however
// many are open: a file nobody is using is closed underneath when room is
// needed (least recently used first) and reopened on its next use, by the
// same path with the same flags less O_CREATE, O_EXCL and O_TRUNC. A node
// with ten thousand partitions (five files each) then fits a descriptor
// limit of twenty thousand, and the limit no longer caps partitions.
//
// What callers see is the File contract unchanged:
//
//   - Data: closing a descriptor loses nothing on Linux; dirty pages belong
//     to the inode and the next Datasync, through whichever descriptor,
//     writes them. A writeback error that happened while the file was
//     closed underneath is reported to the reopened descriptor's first
//     Datasync (Linux's errseq reports an error nobody has seen yet to a
//     descriptor opened after it), so a failed write is not hidden. The
//     fault filesystem keeps unsynced data per file, not per descriptor,
//     in the same way.
//   - Names: an open file follows its inode across renames, and a removed
//     or replaced name stays readable through files opened before. Rename,
//     Remove and RemoveAll through Bounded therefore carry closed files to
//     their new names, and reopen (and never again close underneath) a file
//     whose name is about to disappear.
//   - Hints (Writeback, Release, StartSync) on a file closed underneath are
//     dropped: they change nothing a caller can observe, and reopening a
//     file only to hint would cost more than the hint saves.
//
// Max is a target, not a wall: a file in use (inside one of its calls, or
// named by a Batch being submitted) is never closed underneath, so a batch
// that names more than Max files opens them all, and files whose names are
// gone stay open until closed. Inner opens beyond Max are counted
// (BoundedStats.Over). Bounded is safe for concurrent use; each File keeps
// the inner file's rule (one goroutine at a time).
type Bounded struct {
	inner FS
	max   int

	scratch sync.Pool // *boundedScratch

	mu sync.Mutex
	// lru holds the files open underneath and not in use, least recently
	// used first (a doubly linked ring through boundedFile.prev/next).
	lru  boundedFile
	open int // inner descriptors held
	// byPath indexes the open files by current name; inside counts, for
	// every directory, the indexed files below it at any depth (so that
	// renaming or removing a name costs a lookup unless it is a directory
	// holding open files).
	byPath map[string][]*boundedFile
	inside map[string]int
	stats  BoundedStats
}

// BoundedStats count what Bounded did.
type BoundedStats struct {
	// Open is the inner descriptors held now, Max the target.
	Open, Max int
	// Opens counts inner opens (first opens and reopens), Reopens the
	// reopens alone, Closes the files closed underneath to make room, Over
	// the inner opens made while Max were already held.
	Opens, Reopens, Closes, Over uint64
}

// NewBounded wraps inner to hold at most limit descriptors (below 1: 1).
func NewBounded(inner FS, limit int) *Bounded {
	b := &Bounded{inner: inner, max: max(limit, 1), byPath: make(map[string][]*boundedFile), inside: make(map[string]int)}
	b.lru.prev, b.lru.next = &b.lru, &b.lru
	return b
}

// Inner returns the wrapped filesystem.
func (b *Bounded) Inner() FS { return b.inner }

// Stats returns the counters.
func (b *Bounded) Stats() BoundedStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Open, s.Max = b.open, b.max
	return s
}

// boundedFile is a File of a Bounded filesystem.
type boundedFile struct {
	b    *Bounded
	name string // as opened (Name)
	path string // its current name, filepath.Clean'ed
	flag int    // for reopens
	perm fs.FileMode

	inner    File // nil while closed underneath
	uses     int  // calls and submissions in progress
	closed   bool
	unlinked bool // its name is gone: never closed underneath
	err      error

	prev, next *boundedFile // in b.lru while open, unused and not unlinked
}

const reopenMask = O_CREATE | O_EXCL | O_TRUNC

// OpenFile opens name on the inner filesystem (making room first).
func (b *Bounded) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.makeRoomLocked()
	inner, err := b.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f := &boundedFile{b: b, name: name, path: filepath.Clean(name), flag: flag &^ reopenMask, perm: perm, inner: inner}
	b.noteOpenLocked(false)
	b.index(f)
	b.pushLocked(f)
	return f, nil
}

func (b *Bounded) noteOpenLocked(reopen bool) {
	if b.open >= b.max {
		b.stats.Over++
	}
	b.open++
	b.stats.Opens++
	if reopen {
		b.stats.Reopens++
	}
}

func (b *Bounded) index(f *boundedFile) {
	b.byPath[f.path] = append(b.byPath[f.path], f)
	for d := filepath.Dir(f.path); ; d = filepath.Dir(d) {
		b.inside[d]++
		if d == filepath.Dir(d) {
			break
		}
	}
}

func (b *Bounded) unindex(f *boundedFile) {
	l := b.byPath[f.path]
	for i, g := range l {
		if g == f {
			l[i] = l[len(l)-1]
			l[len(l)-1] = nil
			l = l[:len(l)-1]
			break
		}
	}
	if len(l) == 0 {
		delete(b.byPath, f.path)
	} else {
		b.byPath[f.path] = l
	}
	for d := filepath.Dir(f.path); ; d = filepath.Dir(d) {
		if b.inside[d]--; b.inside[d] <= 0 {
			delete(b.inside, d)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
}

// namedLocked returns the indexed files named p or, with tree, inside p.
func (b *Bounded) namedLocked(p string, tree bool) []*boundedFile {
	out := append([]*boundedFile(nil), b.byPath[p]...)
	if tree && b.inside[p] > 0 {
		for q, l := range b.byPath {
			if q != p && under(q, p) {
				out = append(out, l...)
			}
		}
	}
	return out
}

// pushLocked puts an unused open file at the most recently used end.
func (b *Bounded) pushLocked(f *boundedFile) {
	if f.inner == nil || f.uses > 0 || f.unlinked || f.closed || f.next != nil {
		return
	}
	f.prev, f.next = b.lru.prev, &b.lru
	b.lru.prev.next = f
	b.lru.prev = f
}

func (b *Bounded) unlinkLRU(f *boundedFile) {
	if f.next == nil {
		return
	}
	f.prev.next, f.next.prev = f.next, f.prev
	f.prev, f.next = nil, nil
}

// makeRoomLocked closes unused files underneath until one more
// descriptor fits under max (trimLocked).
func (b *Bounded) makeRoomLocked() { b.trimLocked(b.max - 1) }

// trimLocked closes unused files underneath, least recently used first,
// until at most keep are open or none is left to close.
func (b *Bounded) trimLocked(keep int) {
	for b.open > keep && b.lru.next != &b.lru {
		f := b.lru.next
		b.unlinkLRU(f)
		// A close error loses nothing (data is the inode's); the file is
		// reopened on its next use.
		_ = f.inner.Close()
		f.inner = nil
		b.open--
		b.stats.Closes++
	}
}

// reopenLocked makes sure f is open underneath.
func (b *Bounded) reopenLocked(f *boundedFile) error {
	if f.inner != nil {
		return nil
	}
	if f.err != nil {
		return f.err
	}
	b.makeRoomLocked()
	inner, err := b.inner.OpenFile(f.path, f.flag, f.perm)
	if err != nil {
		return fmt.Errorf("vfs: reopening %s: %w", f.name, err)
	}
	f.inner = inner
	b.noteOpenLocked(true)
	return nil
}

// acquire returns f's inner file, open and marked in use, or an error.
func (f *boundedFile) acquire(op string) (File, error) {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: op, Path: f.name, Err: ErrClosed}
	}
	if err := b.reopenLocked(f); err != nil {
		return nil, err
	}
	f.uses++
	b.unlinkLRU(f)
	return f.inner, nil
}

// acquireOpen is acquire for hints: no file and no error when f is closed
// underneath, which it does not reopen.
func (f *boundedFile) acquireOpen(op string) (File, error) {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.closed {
		return nil, &fs.PathError{Op: op, Path: f.name, Err: ErrClosed}
	}
	if f.inner == nil {
		return nil, nil
	}
	f.uses++
	b.unlinkLRU(f)
	return f.inner, nil
}

func (f *boundedFile) done() {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	f.doneLocked()
}

// doneLocked ends a use; descriptors opened beyond max while files were
// in use (a large batch) are closed again as they fall out of use.
func (f *boundedFile) doneLocked() {
	f.uses--
	f.b.pushLocked(f)
	f.b.trimLocked(f.b.max)
}

func (f *boundedFile) ReadAt(p []byte, off int64) (int, error) {
	in, err := f.acquire("read")
	if err != nil {
		return 0, err
	}
	defer f.done()
	return in.ReadAt(p, off)
}

func (f *boundedFile) WriteAt(p []byte, off int64) (int, error) {
	in, err := f.acquire("write")
	if err != nil {
		return 0, err
	}
	defer f.done()
	return in.WriteAt(p, off)
}

func (f *boundedFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	in, err := f.acquire("write")
	if err != nil {
		return 0, err
	}
	defer f.done()
	return in.WritevAt(bufs, off)
}

func (f *boundedFile) Datasync() error {
	in, err := f.acquire("datasync")
	if err != nil {
		return err
	}
	defer f.done()
	return in.Datasync()
}

func (f *boundedFile) Sync() error {
	in, err := f.acquire("sync")
	if err != nil {
		return err
	}
	defer f.done()
	return in.Sync()
}

func (f *boundedFile) Writeback(off, n int64) error {
	in, err := f.acquireOpen("writeback")
	if in == nil {
		return err
	}
	defer f.done()
	return in.Writeback(off, n)
}

func (f *boundedFile) Release(off, n int64) error {
	in, err := f.acquireOpen("release")
	if in == nil {
		return err
	}
	defer f.done()
	return in.Release(off, n)
}

// StartSync forwards to the inner file while it is open (SyncStarter).
func (f *boundedFile) StartSync() {
	if in, _ := f.acquireOpen("datasync"); in != nil {
		defer f.done()
		StartSync(in)
	}
}

func (f *boundedFile) Truncate(size int64) error {
	in, err := f.acquire("truncate")
	if err != nil {
		return err
	}
	defer f.done()
	return in.Truncate(size)
}

func (f *boundedFile) Size() (int64, error) {
	in, err := f.acquire("stat")
	if err != nil {
		return 0, err
	}
	defer f.done()
	return in.Size()
}

func (f *boundedFile) Close() error {
	b := f.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: ErrClosed}
	}
	f.closed = true
	b.unlinkLRU(f)
	b.unindex(f)
	if f.inner == nil {
		return nil
	}
	err := f.inner.Close()
	f.inner = nil
	b.open--
	return err
}

func (f *boundedFile) Name() string { return f.name }

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) || dir == string(filepath.Separator)
}

// pinNamesLocked reopens, and keeps open for good, every file whose name
// is p or (tree) inside p: the name is about to be removed or replaced, and
// the file must stay reachable as an open descriptor does. A file that
// cannot be reopened keeps the error for its next call.
func (b *Bounded) pinNamesLocked(p string, tree bool) {
	for _, f := range b.namedLocked(p, tree) {
		if f.unlinked {
			continue
		}
		if err := b.reopenLocked(f); err != nil {
			f.err = err
		}
		f.unlinked = true
		b.unlinkLRU(f)
	}
}

// Remove removes name; files open on it stay readable.
func (b *Bounded) Remove(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pinNamesLocked(filepath.Clean(name), false)
	return b.inner.Remove(name)
}

// RemoveAll removes a tree; files open inside it stay readable.
func (b *Bounded) RemoveAll(name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pinNamesLocked(filepath.Clean(name), true)
	return b.inner.RemoveAll(name)
}

// Rename renames oldpath to newpath; files open on oldpath (or, for a
// directory, inside it) follow, files open on a replaced newpath stay
// readable.
func (b *Bounded) Rename(oldpath, newpath string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	op, np := filepath.Clean(oldpath), filepath.Clean(newpath)
	if op == np {
		return b.inner.Rename(oldpath, newpath)
	}
	b.pinNamesLocked(np, false)
	if err := b.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	for _, f := range b.namedLocked(op, true) {
		if f.unlinked {
			continue
		}
		b.unindex(f)
		f.path = np + f.path[len(op):]
		b.index(f)
	}
	return nil
}

func (b *Bounded) MkdirAll(name string, perm fs.FileMode) error { return b.inner.MkdirAll(name, perm) }
func (b *Bounded) ReadDir(name string) ([]fs.DirEntry, error)   { return b.inner.ReadDir(name) }
func (b *Bounded) Stat(name string) (fs.FileInfo, error)        { return b.inner.Stat(name) }
func (b *Bounded) SyncDir(dir string) error                     { return b.inner.SyncDir(dir) }

// Close closes the inner filesystem when it has a lifetime (a ShardFS);
// its files should be closed first.
func (b *Bounded) Close() error {
	if c, ok := b.inner.(ShardFS); ok {
		return c.Close()
	}
	return nil
}

// errForeign: a batch named a file another filesystem opened.
var errForeign = errors.New("vfs: file not opened by this Bounded filesystem")

// Submit submits b's operations as one inner batch: every file it names
// is opened underneath if it was closed (hints on closed files are
// dropped) and kept open until the inner batch is done. Failures keep the
// indices of b.
func (b *Bounded) Submit(batch *Batch) error {
	sc, _ := b.scratch.Get().(*boundedScratch)
	if sc == nil {
		sc = new(boundedScratch)
	}
	defer b.scratch.Put(sc)
	defer sc.reset()
	var (
		inner        = &sc.inner
		used         = sc.used[:0]
		fails        []BatchFailure
		wIdx, sIdx   = sc.wIdx[:0], sc.sIdx[:0]
		acquireBatch = func(f File, op BatchOp, i int) File {
			bf, ok := f.(*boundedFile)
			if !ok || bf.b != b {
				fails = append(fails, BatchFailure{op, i, f.Name(), errForeign})
				return nil
			}
			in, err := bf.acquire(op.String())
			if err != nil {
				fails = append(fails, BatchFailure{op, i, f.Name(), err})
				return nil
			}
			used = append(used, bf)
			return in
		}
	)
	defer func() {
		b.mu.Lock()
		for _, f := range used {
			f.doneLocked()
		}
		b.mu.Unlock()
		sc.used, sc.wIdx, sc.sIdx = used, wIdx, sIdx
	}()
	for i, w := range batch.writes {
		if in := acquireBatch(w.File, BatchOpWrite, i); in != nil {
			inner.WritevAt(in, w.Bufs, w.Off)
			wIdx = append(wIdx, i)
		}
	}
	for _, h := range batch.hints {
		bf, ok := h.File.(*boundedFile)
		if !ok || bf.b != b {
			continue
		}
		in, _ := bf.acquireOpen("hint")
		if in == nil {
			continue
		}
		used = append(used, bf)
		h.File = in
		inner.hints = append(inner.hints, h)
	}
	for i, f := range batch.syncs {
		if in := acquireBatch(f, BatchOpSync, i); in != nil {
			inner.Datasync(in)
			sIdx = append(sIdx, i)
		}
	}
	for _, d := range batch.dirs {
		inner.SyncDir(d)
	}
	if inner.Empty() {
		return batchErr(fails)
	}
	err := b.inner.Submit(inner)
	var be *BatchError
	switch {
	case err == nil:
	case errors.As(err, &be):
		for _, f := range be.Failures {
			switch f.Op {
			case BatchOpWrite:
				f.Index = wIdx[f.Index]
			case BatchOpSync:
				f.Index = sIdx[f.Index]
			}
			fails = append(fails, f)
		}
	default:
		return err
	}
	return batchErr(fails)
}

// boundedScratch is what one Submit needs, reused across calls.
type boundedScratch struct {
	inner      Batch
	used       []*boundedFile
	wIdx, sIdx []int
}

func (s *boundedScratch) reset() {
	s.inner.Reset()
	clear(s.used)
	s.used = s.used[:0]
}

func batchErr(fails []BatchFailure) error {
	if len(fails) == 0 {
		return nil
	}
	return &BatchError{Failures: fails}
}
