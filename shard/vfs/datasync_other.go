//go:build !linux

package vfs

import "os"

func datasync(f *os.File) error { return f.Sync() }

// pwritev writes the buffers one at a time where pwritev(2) is not used.
func pwritev(f *os.File, bufs [][]byte, off int64) (int, error) {
	done := 0
	for _, b := range bufs {
		n, err := f.WriteAt(b, off+int64(done))
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// writeback is a no-op where sync_file_range does not exist: the hint only
// shortens a later Datasync.
func writeback(*os.File, int64, int64) error { return nil }

// release is a no-op where posix_fadvise is not used: the hint only frees
// page cache sooner.
func release(*os.File, int64, int64) error { return nil }
