package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// OS is the portable implementation over package os. It is used when
// io_uring is unavailable and as the reference the other implementations
// are tested against. Vectored writes use pwritev where the platform has it.
type OS struct {
	// clamp, when set (tests only), shortens what one write system call is
	// reported to have written, so the resubmission path runs.
	clamp func(n int) int
}

// NewOS returns the portable filesystem.
func NewOS() *OS { return &OS{} }

func (o *OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f, clamp: o.clamp}, nil
}

func (*OS) Remove(name string) error                     { return os.Remove(name) }
func (*OS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (*OS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (*OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (*OS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (*OS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (*OS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

// maxParallelSyncs bounds the goroutines (each holding an OS thread while
// blocked in fdatasync) one Submit uses.
const maxParallelSyncs = 16

// Submit runs the batch's writes one after another (they complete into the
// page cache at memory speed), then its fdatasyncs and directory syncs in
// parallel, as io_uring would: the device sees one burst of flushes instead
// of a queue of them.
func (o *OS) Submit(b *Batch) error {
	var fails []BatchFailure
	for i, w := range b.writes {
		if _, err := w.File.WritevAt(w.Bufs, w.Off); err != nil {
			fails = append(fails, BatchFailure{BatchOpWrite, i, w.File.Name(), err})
		}
	}
	// Hints only queue I/O; they go before the syncs so the device sees
	// their pages in the same burst.
	runHints(b.hints)
	n := len(b.syncs) + len(b.dirs)
	if n <= 1 {
		if err := SubmitSequential(o, &Batch{syncs: b.syncs, dirs: b.dirs}); err != nil {
			fails = append(fails, err.(*BatchError).Failures...)
		}
	} else {
		errs := make([]error, n)
		sem := make(chan struct{}, maxParallelSyncs)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(i int) {
				defer func() { <-sem; wg.Done() }()
				if i < len(b.syncs) {
					errs[i] = b.syncs[i].Datasync()
				} else {
					errs[i] = o.SyncDir(b.dirs[i-len(b.syncs)])
				}
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err == nil {
				continue
			}
			if i < len(b.syncs) {
				fails = append(fails, BatchFailure{BatchOpSync, i, b.syncs[i].Name(), err})
			} else {
				d := i - len(b.syncs)
				fails = append(fails, BatchFailure{BatchOpSyncDir, d, b.dirs[d], err})
			}
		}
	}
	if fails != nil {
		return &BatchError{Failures: fails}
	}
	return nil
}

type osFile struct {
	f     *os.File
	clamp func(int) int
}

func (o *osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }

func (o *osFile) WriteAt(p []byte, off int64) (int, error) {
	return o.WritevAt([][]byte{p}, off)
}

// WritevAt writes with pwritev, at most MaxIovecs buffers per call, and
// resubmits whatever a call left unwritten.
func (o *osFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	total := totalLen(bufs)
	if total == 0 {
		return 0, nil
	}
	rest := make([][]byte, 0, len(bufs))
	for _, b := range bufs {
		if len(b) > 0 {
			rest = append(rest, b)
		}
	}
	done := 0
	for len(rest) > 0 {
		chunk := rest[:min(len(rest), MaxIovecs)]
		n, err := pwritev(o.f, chunk, off+int64(done))
		if err == nil && o.clamp != nil {
			n = o.clamp(n)
		}
		if err != nil {
			return done, &fs.PathError{Op: "pwritev", Path: o.f.Name(), Err: err}
		}
		if n <= 0 {
			return done, fmt.Errorf("vfs: write to %s made no progress at offset %d", o.f.Name(), off+int64(done))
		}
		done += n
		rest = advance(rest, n)
	}
	return done, nil
}

func (o *osFile) Datasync() error { return datasync(o.f) }
func (o *osFile) Sync() error     { return o.f.Sync() }

func (o *osFile) Writeback(off, n int64) error {
	if off < 0 || n < 0 {
		return &fs.PathError{Op: "sync_file_range", Path: o.f.Name(), Err: syscall.EINVAL}
	}
	if n == 0 {
		return nil
	}
	return writeback(o.f, off, n)
}

func (o *osFile) Release(off, n int64) error {
	if off < 0 || n < 0 {
		return &fs.PathError{Op: "fadvise", Path: o.f.Name(), Err: syscall.EINVAL}
	}
	if n == 0 {
		return nil
	}
	return release(o.f, off, n)
}

func (o *osFile) Truncate(size int64) error { return o.f.Truncate(size) }
func (o *osFile) Close() error              { return o.f.Close() }
func (o *osFile) Name() string              { return o.f.Name() }

func (o *osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
