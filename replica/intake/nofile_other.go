//go:build !unix

package intake

import "errors"

// RaiseNoFile has no descriptor limit to raise on this platform.
func RaiseNoFile() Descriptors {
	return Descriptors{Soft: 1 << 16, Hard: 1 << 16, Before: 1 << 16, Err: errors.New("intake: RLIMIT_NOFILE is not available on this platform")}
}
