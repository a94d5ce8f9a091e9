//go:build !linux

package shard

import (
	"errors"
	"runtime"
)

// AllowedCPUs returns 0..NumCPU-1: affinity masks are a Linux facility.
func AllowedCPUs() []int {
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}

// PinCurrentThread locks the goroutine to its thread but cannot set an
// affinity outside Linux; the error says so and the caller logs it.
func PinCurrentThread(cpu int) error {
	runtime.LockOSThread()
	return errors.New("shard: CPU pinning is only supported on Linux")
}

func currentThreadCPUs() ([]int, error) { return AllowedCPUs(), nil }
