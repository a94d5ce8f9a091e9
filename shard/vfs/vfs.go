// Package vfs is the small filesystem interface every piece of iggo's storage
// code (segments, superblocks, journals, snapshots, offset files) goes through.
//
// Three implementations share one contract and one conformance suite
// (conformance_test.go):
//
//   - Ring (ring_linux.go): io_uring, one ring per shard, used by the server.
//     Files opened through a Ring do their reads, writes and syncs on it.
//   - OS (osfs.go): portable, over package os and pwritev, used when io_uring
//     is denied (the server logs one warning and continues; see Open).
//   - Fault (faultfs.go): in-memory, for tests and the simulator. It can crash
//     (drop writes and directory changes not yet synced), tear writes, corrupt
//     sectors and fail operations, all driven by a seed.
//
// # Contract
//
// The contract is deliberately narrow so that the fault model can be exact:
//
//   - WriteAt and WritevAt change the file's contents as seen by readers at
//     once, but the change is durable only after Datasync (or Sync) on that
//     file returns nil. A crash may keep any prefix of unsynced writes, tear
//     the next one at sector granularity, or drop them all.
//   - Creating, removing and renaming a name (files and directories alike,
//     MkdirAll included) is durable only after SyncDir on the parent
//     directory returns nil. MkdirAllSync and WriteFileAtomic do this right.
//   - A short write is never returned as success: WriteAt and WritevAt either
//     write everything or return an error. Implementations resubmit partial
//     writes themselves.
//   - Writeback asks the kernel to start writing a range to the device and
//     does not wait. It has no durability meaning: a crash after it may
//     still lose the range. It exists so that a later Datasync finds most
//     pages already written and returns quickly (RocksDB's bytes_per_sync).
//     It reports no write error; the next Datasync does.
//   - Release lets the kernel drop a range's cached pages. It changes no
//     data and has no durability meaning; callers name ranges they made
//     durable (clean pages), which the kernel frees at once, so the memory
//     is reused by the next writes instead of the page cache growing. It
//     reports no error that matters.
//   - A failed Datasync leaves the state of the unsynced data unknown (Linux
//     may already have dropped the dirty pages, so a retry can "succeed"
//     without the data being on disk). Callers treat it as fatal for the
//     file: stop using it and recover from what is durable.
//
// # Group commit (the reason FS has Submit)
//
// A shard loop gathers, per wake-up, the writes and fdatasyncs many
// partitions need into one Batch and hands it to FS.Submit. Each distinct file
// is synced once per batch however many appends asked for it. On io_uring all
// writes of a batch go to the kernel in one io_uring_enter and all syncs in a
// second one, so N partitions cost two system calls, not 2N. Submit is part
// of FS rather than a helper so that each implementation can do this its own
// way; wrappers that cannot do better call SubmitSequential.
//
// Paths are slash-separated and interpreted by the implementation relative to
// nothing: callers pass absolute paths or paths relative to the process's
// working directory, exactly as they would to package os.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrInjected is wrapped by every error the fault-injecting filesystem
// produces on purpose, so tests can tell an injected failure from a bug.
var ErrInjected = errors.New("vfs: injected fault")

// ErrClosed is returned by operations on a closed file or ring.
var ErrClosed = errors.New("vfs: closed")

// FS is the filesystem seen by storage code.
type FS interface {
	// OpenFile opens name with os.O_* flags, like os.OpenFile.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// RemoveAll deletes a directory tree.
	RemoveAll(name string) error
	// Rename atomically replaces newpath with oldpath.
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string, perm fs.FileMode) error
	// ReadDir lists the names in a directory, sorted.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat describes a file.
	Stat(name string) (fs.FileInfo, error)
	// SyncDir makes creations, removals and renames inside dir durable.
	SyncDir(dir string) error
	// Submit performs every write in b, then every sync in b (each
	// distinct file once). Files in b must have been opened by this FS.
	// It returns nil or a *BatchError naming each failed operation. b is
	// left as it was; the caller resets it for reuse.
	Submit(b *Batch) error
}

// File is an open file. It is not safe for concurrent use unless the
// implementation says so; each file belongs to one shard.
type File interface {
	// ReadAt reads len(p) bytes at off; io.EOF when fewer exist.
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes all of p at off or returns an error.
	WriteAt(p []byte, off int64) (int, error)
	// WritevAt writes the buffers back to back starting at off, all of them
	// or an error. Implementations split into submissions of at most
	// MaxIovecs buffers and resubmit partial writes.
	WritevAt(bufs [][]byte, off int64) (int, error)
	// Datasync flushes the file's data (fdatasync).
	Datasync() error
	// Sync flushes data and metadata (fsync).
	Sync() error
	// Writeback starts writeback of n bytes at off without waiting for
	// it (sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux, nothing
	// elsewhere). A hint: it makes nothing durable.
	Writeback(off, n int64) error
	// Release lets the kernel drop the cached pages of n bytes at off
	// (posix_fadvise(POSIX_FADV_DONTNEED) on Linux, nothing elsewhere).
	// A hint for ranges already durable: it changes no data, a later read
	// brings the pages back, and dirty pages are not dropped.
	Release(off, n int64) error
	// Truncate changes the file size.
	Truncate(size int64) error
	// Size returns the current size.
	Size() (int64, error)
	// Close releases the file. It does not sync.
	Close() error
	// Name returns the name the file was opened with.
	Name() string
}

// MaxIovecs is the most buffers one vectored write submission carries
// (Linux's UIO_MAXIOV).
const MaxIovecs = 1024

// Flags re-exported so storage code needs no import of os for them.
const (
	O_RDONLY = os.O_RDONLY
	O_WRONLY = os.O_WRONLY
	O_RDWR   = os.O_RDWR
	O_CREATE = os.O_CREATE
	O_EXCL   = os.O_EXCL
	O_TRUNC  = os.O_TRUNC
)

// MkdirAllSync creates dir and any missing parents and makes each new
// directory entry durable by syncing its parent, which plain MkdirAll does
// not promise.
func MkdirAllSync(fsys FS, dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
		if parent := filepath.Dir(d); parent == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir, perm); err != nil {
		return err
	}
	// Sync parents from the top down so that each level is reachable before
	// the level below it is made durable.
	for i := len(missing) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic replaces name with data so that after a crash the file
// holds either its old contents or data, never a mixture: it writes
// name+".tmp", syncs it, renames it over name and syncs the directory.
func WriteFileAtomic(fsys FS, name string, data []byte, perm fs.FileMode) error {
	tmp := name + ".tmp"
	f, err := fsys.OpenFile(tmp, O_RDWR|O_CREATE|O_TRUNC, perm)
	if err != nil {
		return err
	}
	if len(data) > 0 {
		if _, err := f.WriteAt(data, 0); err != nil {
			_ = f.Close()
			return fmt.Errorf("vfs: writing %s: %w", tmp, err)
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("vfs: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return err
	}
	return fsys.SyncDir(filepath.Dir(name))
}

// ReadFile reads a whole file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, err
	}
	return buf, nil
}

// totalLen is the byte count of a vectored write.
func totalLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

// advance drops the first n bytes from bufs (which it may modify) and
// returns what is left; it is how partial vectored writes are resubmitted.
func advance(bufs [][]byte, n int) [][]byte {
	for n > 0 && len(bufs) > 0 {
		if n < len(bufs[0]) {
			bufs[0] = bufs[0][n:]
			return bufs
		}
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	for len(bufs) > 0 && len(bufs[0]) == 0 {
		bufs = bufs[1:]
	}
	return bufs
}
