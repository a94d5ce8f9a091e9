package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

func datasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// pwritev is one pwritev(2) call, retried on EINTR.
func pwritev(f *os.File, bufs [][]byte, off int64) (int, error) {
	for {
		n, err := unix.Pwritev(int(f.Fd()), bufs, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// release drops the clean cached pages of a range:
// posix_fadvise(POSIX_FADV_DONTNEED).
func release(f *os.File, off, n int64) error {
	if err := unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED); err != nil {
		return &os.PathError{Op: "fadvise", Path: f.Name(), Err: err}
	}
	return nil
}

// writeback starts writeback of a range: sync_file_range with only
// SYNC_FILE_RANGE_WRITE queues the dirty pages for I/O and returns without
// waiting for it (it can still wait for a congested device queue).
func writeback(f *os.File, off, n int64) error {
	for {
		err := unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "sync_file_range", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
