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
