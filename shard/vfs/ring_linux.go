//go:build linux

package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/pawelgaczynski/giouring"
	"golang.org/x/sys/unix"
)

// DefaultRingEntries is the submission queue size of a shard's ring.
const DefaultRingEntries = 4096

// Ring is the io_uring filesystem of one shard: one ring, and every file
// opened through it reads, writes and syncs on that ring. Names (open,
// rename, remove, mkdir, readdir, stat) use ordinary system calls; they are
// rare and io_uring gains nothing there.
//
// Each call submits its operations and waits for their completions before
// returning, so callers keep the synchronous File contract and buffers are
// never used by the kernel after a call returns. A vectored write is split
// into submissions of at most MaxIovecs buffers that run concurrently; any
// partial completion is resubmitted from where it stopped. A Batch goes in
// one io_uring_enter for all its writes and one for all its syncs. The one
// exception to waiting is a batch's writeback hints (sync_file_range),
// which touch no caller memory: they are submitted after the writes and
// left to complete on their own (fire), at most a quarter of the ring's
// entries outstanding; later calls reap their completions.
//
// The ring belongs to one shard goroutine in production. A mutex guards it
// anyway so that a call from another goroutine (a test, a debugging hook,
// shutdown) waits its turn instead of corrupting the queues; the mutex is
// uncontended on the normal path and costs a few nanoseconds.
type Ring struct {
	mu      sync.Mutex
	ring    *giouring.Ring
	entries uint32
	closed  bool
	broken  error
	cqes    []*giouring.CompletionQueueEvent
	clamp   func(int) int // tests: shorten reported write completions
	// inlineWrites: buffered writes are made with pwritev by the calling
	// thread instead of on the ring (see Options.InlineWrites).
	inlineWrites bool
	// async counts hint operations submitted without waiting (fire) whose
	// completions are not reaped yet; at most maxAsync(), so the
	// completion queue (2 x entries) always has room for them and for a
	// full run.
	async int
	// hintsDropped counts hints not submitted because maxAsync were
	// outstanding or the submission queue was full.
	hintsDropped uint64
}

// asyncTag marks the user data of operations nobody waits for.
const asyncTag = ^uint64(0)

func (r *Ring) maxAsync() int { return max(1, int(r.entries)/4) }

// HintsDropped reports how many writeback hints the ring left out because
// too many were outstanding (see Batch.Writeback: a hint is optional).
func (r *Ring) HintsDropped() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hintsDropped
}

// reapAsync consumes the completions of fired operations that are ready.
// Outside run, every completion in the queue belongs to a fired one. The
// caller holds r.mu.
func (r *Ring) reapAsync() {
	n := r.ring.PeekBatchCQE(r.cqes)
	for _, cqe := range r.cqes[:n] {
		if cqe.UserData != asyncTag {
			panic(fmt.Sprintf("vfs: io_uring completion %d outside a run", cqe.UserData))
		}
		r.async--
	}
	r.ring.CQAdvance(n)
}

// fire submits ops and returns without waiting for them. Only operations
// that touch no caller memory (sync_file_range, fdatasync) may be fired:
// the kernel may run them after fire returns (it holds its own reference
// to the file from the submission on, so a close meanwhile is harmless). Their outcomes are discarded. The
// caller holds r.mu.
func (r *Ring) fire(ops []*ringOp) {
	if r.closed || r.broken != nil || len(ops) == 0 {
		return
	}
	r.reapAsync()
	queued := 0
	for _, op := range ops {
		if r.async >= r.maxAsync() {
			r.hintsDropped++
			continue
		}
		sqe := r.ring.GetSQE()
		if sqe == nil {
			r.hintsDropped++
			continue
		}
		op.prep(sqe, 0)
		sqe.SetData64(asyncTag)
		r.async++
		queued++
	}
	if queued == 0 {
		return
	}
	// The queued entries go in now or with the next run's submission;
	// either way they complete and are reaped (run, reapAsync, abandon).
	for tries := 0; tries < 100 && r.ring.SQReady() > 0; tries++ {
		_, err := r.ring.Submit()
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY) {
			return
		}
	}
}

// SetInlineWrites makes the ring's files write with pwritev in the calling
// thread while reads and syncs stay on the ring. On filesystems that cannot
// do buffered writes without blocking (ext4 on the kernels seen so far),
// io_uring hands every buffered write to a kernel worker thread; a shard
// that waits for the write anyway then pays two context switches and the
// worker's scheduling delay for nothing. Syncs keep the ring's parallelism.
func (r *Ring) SetInlineWrites(on bool) {
	r.mu.Lock()
	r.inlineWrites = on
	r.mu.Unlock()
}

// NewRing sets up a ring with the given submission queue size (rounded up
// to a power of two by the kernel; DefaultRingEntries if 0). The error is a
// syscall.Errno from io_uring_setup when the kernel refuses; Open turns the
// refusals that mean "io_uring is denied here" into a fallback.
func NewRing(entries uint32) (*Ring, error) {
	if entries == 0 {
		entries = DefaultRingEntries
	}
	gr := giouring.NewRing()
	if err := gr.QueueInit(entries, 0); err != nil {
		return nil, fmt.Errorf("vfs: io_uring_setup(%d): %w", entries, err)
	}
	r := &Ring{ring: gr, entries: entries, cqes: make([]*giouring.CompletionQueueEvent, 2*entries)}
	// A no-op round trip proves io_uring_enter is allowed too: some
	// seccomp profiles permit setup and deny enter.
	op := &ringOp{kind: opNop}
	r.mu.Lock()
	r.run([]*ringOp{op})
	r.mu.Unlock()
	if op.err != nil {
		r.Close()
		return nil, fmt.Errorf("vfs: io_uring no-op: %w", op.err)
	}
	return r, nil
}

// Close tears the ring down. Files opened through it must be closed first;
// their later operations fail with ErrClosed.
func (r *Ring) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.ring.QueueExit()
	return nil
}

const (
	opNop = iota
	opWrite
	opRead
	opFsync
	opSyncRange
	opFadvise
)

// ringOp is one logical operation; it may take several SQEs when the
// kernel completes it partially.
type ringOp struct {
	kind  int
	fd    int
	flags uint32   // fsync and sync_file_range flags
	span  uint32   // sync_file_range length (from off)
	bufs  [][]byte // what is left to transfer
	iov   []unix.Iovec
	off   int64
	done  int
	err   error
	eof   bool
}

func (op *ringOp) prep(sqe *giouring.SubmissionQueueEntry, idx int) {
	*sqe = giouring.SubmissionQueueEntry{}
	switch op.kind {
	case opNop:
		sqe.PrepareNop()
	case opFsync:
		sqe.PrepareFsync(op.fd, op.flags)
	case opSyncRange:
		sqe.PrepareSyncFileRange(op.fd, op.span, uint64(op.off), int(op.flags))
	case opFadvise:
		sqe.PrepareFadvise(op.fd, uint64(op.off), int(op.span), op.flags)
	case opWrite, opRead:
		// The iovec array lives in op (Go heap, kept alive by the caller
		// of run) and points at the caller's buffers, which the Go
		// collector never moves; the kernel may read it until the
		// completion arrives.
		op.iov = op.iov[:0]
		for _, b := range op.bufs {
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			op.iov = append(op.iov, v)
		}
		addr := uintptr(unsafe.Pointer(&op.iov[0]))
		if op.kind == opWrite {
			sqe.PrepareWritev(op.fd, addr, uint32(len(op.iov)), uint64(op.off))
		} else {
			sqe.PrepareReadv(op.fd, addr, uint32(len(op.iov)), uint64(op.off))
		}
	}
	sqe.SetData64(uint64(idx))
}

// complete records a completion and reports whether op must be submitted
// again (partial transfer or a transient error).
func (op *ringOp) complete(res int32, clamp func(int) int) bool {
	if res < 0 {
		errno := syscall.Errno(-res)
		if errno == unix.EINTR || errno == unix.EAGAIN {
			return true
		}
		op.err = errno
		return false
	}
	switch op.kind {
	case opWrite, opRead:
		n := int(res)
		if op.kind == opWrite && clamp != nil {
			n = clamp(n)
		}
		if n == 0 {
			if op.kind == opRead {
				op.eof = true
			} else {
				op.err = io.ErrShortWrite
			}
			return false
		}
		op.done += n
		op.off += int64(n)
		op.bufs = advance(op.bufs, n)
		return len(op.bufs) > 0
	}
	return false
}

// run submits ops and returns when every one has completed. The caller
// holds r.mu. It keeps at most r.entries operations in flight so the
// completion queue (twice the size) cannot overflow.
func (r *Ring) run(ops []*ringOp) {
	if r.closed || r.broken != nil {
		err := r.broken
		if r.closed {
			err = ErrClosed
		}
		for _, op := range ops {
			op.err = err
		}
		return
	}
	queue := make([]int, len(ops))
	for i := range queue {
		queue[i] = i
	}
	inflight := 0
	for len(queue) > 0 || inflight > 0 {
		for len(queue) > 0 && inflight < int(r.entries) {
			sqe := r.ring.GetSQE()
			if sqe == nil {
				break
			}
			ops[queue[0]].prep(sqe, queue[0])
			queue = queue[1:]
			inflight++
		}
		// Wait for everything in flight: the kernel returns early by
		// itself if it could not take the whole submission.
		_, err := r.ring.SubmitAndWait(uint32(inflight))
		if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EBUSY) {
			r.abandon(ops, inflight, err)
			return
		}
		n := r.ring.PeekBatchCQE(r.cqes)
		for _, cqe := range r.cqes[:n] {
			if cqe.UserData == asyncTag {
				r.async--
				continue
			}
			idx := int(cqe.UserData)
			inflight--
			if ops[idx].complete(cqe.Res, r.clamp) {
				queue = append(queue, idx)
			}
		}
		r.ring.CQAdvance(n)
		if n == 0 && err != nil {
			runtime.Gosched()
		}
	}
}

// abandon handles a failing io_uring_enter (never expected: EINTR, EAGAIN
// and EBUSY are retried; anything else means the ring itself is unusable).
// The ring is marked broken so nothing queued is ever submitted, every
// unfinished operation fails with err, and the operations the kernel already
// holds are waited for, because they may still touch their buffers; if even
// that is impossible the process cannot stay memory-safe and panics.
func (r *Ring) abandon(ops []*ringOp, inflight int, err error) {
	r.broken = fmt.Errorf("vfs: io_uring ring unusable: %w", err)
	held := inflight - int(r.ring.SQReady())
	for tries := 0; held > 0; tries++ {
		if tries > 1000 {
			panic(fmt.Sprintf("vfs: io_uring_enter failed (%v) with %d operations in the kernel that cannot be reaped", err, held))
		}
		if _, werr := r.ring.WaitCQENr(1); werr != nil && !errors.Is(werr, unix.EINTR) {
			panic(fmt.Sprintf("vfs: io_uring_enter failed (%v) and waiting for %d in-flight operations failed too (%v)", err, held, werr))
		}
		n := r.ring.PeekBatchCQE(r.cqes)
		for _, cqe := range r.cqes[:n] {
			if cqe.UserData == asyncTag {
				r.async-- // a fired hint: holds no memory of ours
			} else {
				held--
			}
		}
		r.ring.CQAdvance(n)
	}
	for _, op := range ops {
		if op.err == nil && !op.eof && (op.kind == opFsync || op.kind == opSyncRange || op.kind == opFadvise || op.kind == opNop || len(op.bufs) > 0) {
			op.err = r.broken
		}
	}
}

func (r *Ring) runOne(op *ringOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run([]*ringOp{op})
}

// writeOps splits a vectored write into operations of at most MaxIovecs
// buffers each, at their own offsets, so they can run concurrently.
func writeOps(fd int, bufs [][]byte, off int64) []*ringOp {
	var ops []*ringOp
	var chunk [][]byte
	pos := off
	start := off
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		chunk = append(chunk, b)
		pos += int64(len(b))
		if len(chunk) == MaxIovecs {
			ops = append(ops, &ringOp{kind: opWrite, fd: fd, bufs: chunk, off: start, iov: make([]unix.Iovec, 0, len(chunk))})
			chunk, start = nil, pos
		}
	}
	if len(chunk) > 0 {
		ops = append(ops, &ringOp{kind: opWrite, fd: fd, bufs: chunk, off: start, iov: make([]unix.Iovec, 0, len(chunk))})
	}
	return ops
}

// maxSyncRange is the longest range one IORING_OP_SYNC_FILE_RANGE takes
// (its length field is 32 bits); longer hints are split.
const maxSyncRange = 1 << 30

// rangeOps turns a writeback hint into sync_file_range operations.
func rangeOps(fd int, off, n int64) []*ringOp {
	return splitRange(opSyncRange, unix.SYNC_FILE_RANGE_WRITE, fd, off, n)
}

// releaseOps turns a release hint into fadvise(DONTNEED) operations.
func releaseOps(fd int, off, n int64) []*ringOp {
	return splitRange(opFadvise, unix.FADV_DONTNEED, fd, off, n)
}

// splitRange makes operations of kind over n bytes at off, each at most
// maxSyncRange long (both ops carry a 32-bit length).
func splitRange(kind int, flags uint32, fd int, off, n int64) []*ringOp {
	var ops []*ringOp
	for n > 0 {
		l := min(n, maxSyncRange)
		ops = append(ops, &ringOp{kind: kind, fd: fd, off: off, span: uint32(l), flags: flags})
		off += l
		n -= l
	}
	return ops
}

// writeResult turns finished write operations into WritevAt's result: the
// bytes written contiguously from the start, and the first error.
func writeResult(ops []*ringOp, name string) (int, error) {
	n := 0
	for _, op := range ops {
		n += op.done
		if op.err != nil {
			return n, &fs.PathError{Op: "writev", Path: name, Err: op.err}
		}
		if len(op.bufs) > 0 {
			return n, &fs.PathError{Op: "writev", Path: name, Err: io.ErrShortWrite}
		}
	}
	return n, nil
}

func (r *Ring) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &ringFile{r: r, f: f, fd: int(f.Fd())}, nil
}

func (*Ring) Remove(name string) error                     { return os.Remove(name) }
func (*Ring) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (*Ring) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (*Ring) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (*Ring) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (*Ring) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

// SyncDir opens the directory and fsyncs it on the ring.
func (r *Ring) SyncDir(dir string) error {
	fd, err := openDir(dir)
	if err != nil {
		return err
	}
	op := &ringOp{kind: opFsync, fd: fd}
	r.runOne(op)
	cerr := unix.Close(fd)
	if op.err != nil {
		return &fs.PathError{Op: "fsync", Path: dir, Err: op.err}
	}
	return cerr
}

func openDir(dir string) (int, error) {
	for {
		fd, err := unix.Open(filepath.Clean(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return fd, nil
	}
}

// Submit issues all writes of b in one submission (resubmitting partial
// ones), then all fdatasyncs and directory fsyncs in another.
func (r *Ring) Submit(b *Batch) error {
	var fails []BatchFailure
	type span struct{ from, to int }
	var wops []*ringOp
	spans := make([]span, len(b.writes))
	foreign := map[int]bool{}
	r.mu.Lock()
	inline := r.inlineWrites
	r.mu.Unlock()
	for i, w := range b.writes {
		rf, ok := w.File.(*ringFile)
		if !ok || rf.r != r || rf.closed || inline {
			foreign[i] = true
			continue
		}
		ops := writeOps(rf.fd, w.Bufs, w.Off)
		spans[i] = span{len(wops), len(wops) + len(ops)}
		wops = append(wops, ops...)
	}
	r.mu.Lock()
	r.run(wops)
	r.mu.Unlock()
	for i, w := range b.writes {
		var err error
		if foreign[i] {
			_, err = w.File.WritevAt(w.Bufs, w.Off)
		} else {
			_, err = writeResult(wops[spans[i].from:spans[i].to], w.File.Name())
		}
		if err != nil {
			fails = append(fails, BatchFailure{BatchOpWrite, i, w.File.Name(), err})
		}
	}

	// Hints go to the kernel now that the writes are done, and nobody
	// waits for them: the syncs below do not wait behind the writeback
	// they start. Their outcome is ignored (Batch.Writeback).
	var hops []*ringOp
	for _, h := range b.hints {
		rf, ok := h.File.(*ringFile)
		if !ok || rf.r != r || rf.closed || h.Off < 0 {
			runHints([]BatchHint{h})
			continue
		}
		switch {
		case h.Sync:
			hops = append(hops, &ringOp{kind: opFsync, fd: rf.fd, flags: giouring.FsyncDatasync})
		case h.Release:
			hops = append(hops, releaseOps(rf.fd, h.Off, h.Len)...)
		default:
			hops = append(hops, rangeOps(rf.fd, h.Off, h.Len)...)
		}
	}
	if len(hops) > 0 {
		r.mu.Lock()
		r.fire(hops)
		r.mu.Unlock()
	}
	var sops []*ringOp
	sidx := make([]int, len(b.syncs))
	for i, f := range b.syncs {
		rf, ok := f.(*ringFile)
		if !ok || rf.r != r || rf.closed {
			sidx[i] = -1
			continue
		}
		sidx[i] = len(sops)
		sops = append(sops, &ringOp{kind: opFsync, fd: rf.fd, flags: giouring.FsyncDatasync})
	}
	dirFDs := make([]int, len(b.dirs))
	dirErr := make([]error, len(b.dirs))
	didx := make([]int, len(b.dirs))
	for i, d := range b.dirs {
		fd, err := openDir(d)
		dirFDs[i], dirErr[i], didx[i] = fd, err, -1
		if err == nil {
			didx[i] = len(sops)
			sops = append(sops, &ringOp{kind: opFsync, fd: fd})
		}
	}
	r.mu.Lock()
	r.run(sops)
	r.mu.Unlock()
	for i, f := range b.syncs {
		var err error
		if sidx[i] < 0 {
			err = f.Datasync()
		} else if e := sops[sidx[i]].err; e != nil {
			err = &fs.PathError{Op: "fdatasync", Path: f.Name(), Err: e}
		}
		if err != nil {
			fails = append(fails, BatchFailure{BatchOpSync, i, f.Name(), err})
		}
	}
	for i, d := range b.dirs {
		err := dirErr[i]
		if didx[i] >= 0 {
			if e := sops[didx[i]].err; e != nil {
				err = &fs.PathError{Op: "fsync", Path: d, Err: e}
			}
			if cerr := unix.Close(dirFDs[i]); err == nil && cerr != nil {
				err = cerr
			}
		}
		if err != nil {
			fails = append(fails, BatchFailure{BatchOpSyncDir, i, d, err})
		}
	}
	if fails != nil {
		return &BatchError{Failures: fails}
	}
	return nil
}

type ringFile struct {
	r      *Ring
	f      *os.File
	fd     int
	closed bool
}

func (rf *ringFile) check(op string) error {
	if rf.closed {
		return &fs.PathError{Op: op, Path: rf.f.Name(), Err: ErrClosed}
	}
	return nil
}

func (rf *ringFile) ReadAt(p []byte, off int64) (int, error) {
	if err := rf.check("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: rf.f.Name(), Err: unix.EINVAL}
	}
	if len(p) == 0 {
		return 0, nil
	}
	op := &ringOp{kind: opRead, fd: rf.fd, bufs: [][]byte{p}, off: off, iov: make([]unix.Iovec, 0, 1)}
	rf.r.runOne(op)
	if op.err != nil {
		return op.done, &fs.PathError{Op: "read", Path: rf.f.Name(), Err: op.err}
	}
	if op.done < len(p) {
		return op.done, io.EOF
	}
	return op.done, nil
}

func (rf *ringFile) WriteAt(p []byte, off int64) (int, error) {
	return rf.WritevAt([][]byte{p}, off)
}

func (rf *ringFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	if err := rf.check("write"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: rf.f.Name(), Err: unix.EINVAL}
	}
	rf.r.mu.Lock()
	inline := rf.r.inlineWrites
	rf.r.mu.Unlock()
	if inline {
		return (&osFile{f: rf.f, clamp: rf.r.clamp}).WritevAt(bufs, off)
	}
	ops := writeOps(rf.fd, bufs, off)
	if len(ops) == 0 {
		return 0, nil
	}
	rf.r.mu.Lock()
	rf.r.run(ops)
	rf.r.mu.Unlock()
	return writeResult(ops, rf.f.Name())
}

func (rf *ringFile) fsync(flags uint32, name string) error {
	if err := rf.check(name); err != nil {
		return err
	}
	op := &ringOp{kind: opFsync, fd: rf.fd, flags: flags}
	rf.r.runOne(op)
	if op.err != nil {
		return &fs.PathError{Op: name, Path: rf.f.Name(), Err: op.err}
	}
	return nil
}

func (rf *ringFile) Datasync() error { return rf.fsync(giouring.FsyncDatasync, "fdatasync") }
func (rf *ringFile) Sync() error     { return rf.fsync(0, "fsync") }

// Writeback issues sync_file_range(SYNC_FILE_RANGE_WRITE) on the ring.
func (rf *ringFile) Writeback(off, n int64) error {
	return rf.runRange("sync_file_range", rangeOps, off, n)
}

// Release issues fadvise(POSIX_FADV_DONTNEED) on the ring.
func (rf *ringFile) Release(off, n int64) error {
	return rf.runRange("fadvise", releaseOps, off, n)
}

// runRange runs the operations ops makes for n bytes at off and waits for
// them; name is the operation in errors.
func (rf *ringFile) runRange(name string, ops func(fd int, off, n int64) []*ringOp, off, n int64) error {
	if err := rf.check(name); err != nil {
		return err
	}
	if off < 0 || n < 0 {
		return &fs.PathError{Op: name, Path: rf.f.Name(), Err: unix.EINVAL}
	}
	run := ops(rf.fd, off, n)
	if len(run) == 0 {
		return nil
	}
	rf.r.mu.Lock()
	rf.r.run(run)
	rf.r.mu.Unlock()
	for _, op := range run {
		if op.err != nil {
			return &fs.PathError{Op: name, Path: rf.f.Name(), Err: op.err}
		}
	}
	return nil
}

// StartSync fires an fdatasync on the ring without waiting for it
// (vfs.StartSync); it is left out, like a writeback hint, when too many
// fired operations are outstanding.
func (rf *ringFile) StartSync() {
	if rf.closed {
		return
	}
	rf.r.mu.Lock()
	rf.r.fire([]*ringOp{{kind: opFsync, fd: rf.fd, flags: giouring.FsyncDatasync}})
	rf.r.mu.Unlock()
}

func (rf *ringFile) Truncate(size int64) error {
	if err := rf.check("truncate"); err != nil {
		return err
	}
	return rf.f.Truncate(size)
}

func (rf *ringFile) Size() (int64, error) {
	if err := rf.check("stat"); err != nil {
		return 0, err
	}
	st, err := rf.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (rf *ringFile) Close() error {
	if err := rf.check("close"); err != nil {
		return err
	}
	rf.closed = true
	return rf.f.Close()
}

func (rf *ringFile) Name() string { return rf.f.Name() }
