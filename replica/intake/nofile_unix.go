//go:build unix

package intake

import "golang.org/x/sys/unix"

// RaiseNoFile sets the soft RLIMIT_NOFILE to the hard limit (Iggy raises it
// at boot too; the Go runtime usually has already) and reports both.
func RaiseNoFile() Descriptors {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return Descriptors{Err: err}
	}
	d := Descriptors{Before: lim.Cur, Soft: lim.Cur, Hard: lim.Max}
	if lim.Cur >= lim.Max {
		return d
	}
	want := lim
	want.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		d.Err = err
		return d
	}
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil {
		d.Soft, d.Hard = lim.Cur, lim.Max
	}
	return d
}
