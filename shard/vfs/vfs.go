// Package vfs is the small filesystem interface every piece of iggo's storage
// code (segments, superblocks, journals, snapshots, offset files) goes through.
//
// Three implementations share one contract and one test suite:
//
//   - the io_uring implementation (one ring per shard), used by the server;
//   - the portable implementation over os.File, used when io_uring is denied
//     (the server logs one warning and continues);
//   - a fault-injecting in-memory implementation for tests and the simulator,
//     which can crash (drop writes not yet synced), tear a write, corrupt a
//     sector and fail an operation, all driven by a seed.
//
// The contract is deliberately narrow so that the fault model can be exact:
//
//   - WriteAt and WritevAt change the file's contents as seen by readers at
//     once, but the change is durable only after Datasync (or Sync) on that
//     file returns nil. A crash may keep any prefix of unsynced bytes, tear a
//     sector, or drop them all.
//   - Creating, removing and renaming a name is durable only after SyncDir on
//     the parent directory returns nil.
//   - A short write is never returned as success: WriteAt and WritevAt either
//     write everything or return an error.
//
// Paths are slash-separated and interpreted by the implementation relative to
// nothing: callers pass absolute paths or paths relative to the process's
// working directory, exactly as they would to package os.
package vfs

import (
	"errors"
	"io/fs"
	"os"
)

// ErrInjected is wrapped by every error the fault-injecting filesystem
// produces on purpose, so tests can tell an injected failure from a bug.
var ErrInjected = errors.New("vfs: injected fault")

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
	// Truncate changes the file size.
	Truncate(size int64) error
	// Size returns the current size.
	Size() (int64, error)
	// Close releases the file. It does not sync.
	Close() error
	// Name returns the name the file was opened with.
	Name() string
}

// MaxIovecs is the most buffers one vectored write submission carries.
const MaxIovecs = 1024

// Flags re-exported so storage code needs no import of os for them.
const (
	O_RDONLY = os.O_RDONLY
	O_RDWR   = os.O_RDWR
	O_CREATE = os.O_CREATE
	O_EXCL   = os.O_EXCL
	O_TRUNC  = os.O_TRUNC
)
