//go:build linux

package shard

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// AllowedCPUs returns the CPUs the calling process may run on, ascending,
// from sched_getaffinity. That mask already reflects cgroup cpusets, systemd
// AllowedCPUs= and taskset, which is why it, and not runtime.NumCPU or the
// online list, bounds the shard plan. If the kernel refuses the call the
// fallback is 0..NumCPU-1.
func AllowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		var out []int
		for c := 0; c < len(set)*64; c++ {
			if set.IsSet(c) {
				out = append(out, c)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}

// PinCurrentThread binds the calling goroutine to its OS thread for the rest
// of its life and sets that thread's affinity to cpu alone. Tid 0 in
// sched_setaffinity means the calling thread, which LockOSThread makes stable.
func PinCurrentThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	if cpu < 0 || cpu >= len(set)*64 {
		return fmt.Errorf("shard: cannot pin to CPU %d: outside the affinity mask range", cpu)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("shard: sched_setaffinity(cpu %d): %w", cpu, err)
	}
	return nil
}

// currentThreadCPUs reports the calling thread's affinity; tests use it to
// check that pinning took effect.
func currentThreadCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}
