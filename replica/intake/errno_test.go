package intake

import "syscall"

var errEMFILE = syscall.EMFILE

type osSyscallErr struct{ err error }

func (e *osSyscallErr) Error() string { return "accept4: " + e.err.Error() }
func (e *osSyscallErr) Unwrap() error { return e.err }
