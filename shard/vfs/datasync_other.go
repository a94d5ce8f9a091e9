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
