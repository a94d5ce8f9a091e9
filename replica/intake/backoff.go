package intake

import (
	"errors"
	"syscall"
	"time"
)

// AcceptBackoff paces an accept loop after failures: the first failure
// waits Min, each further one twice as long up to Max, and a successful
// accept starts again from Min. An accept that fails for lack of
// descriptors (EMFILE, ENFILE) or kernel memory would otherwise fail again
// at once, and a loop that retries immediately burns a core and floods the
// log while the condition lasts.
type AcceptBackoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Failed returns how long to wait after a failed accept.
func (b *AcceptBackoff) Failed() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.Min
	case b.cur < b.Max:
		b.cur = min(2*b.cur, b.Max)
	}
	return b.cur
}

// Succeeded resets the backoff.
func (b *AcceptBackoff) Succeeded() { b.cur = 0 }

// OutOfDescriptors reports whether err means the process or the system ran
// out of descriptors or socket memory.
func OutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM)
}
