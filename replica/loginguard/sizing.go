package loginguard

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// DefaultVerifications is the semaphore size for cpus CPUs and memBytes of
// memory when each verification holds argonBytes: min(cpus, memBytes / 8 /
// argonBytes), at least 1 and at most 256.
func DefaultVerifications(cpus int, memBytes, argonBytes uint64) int {
	n := max(1, cpus)
	if memBytes > 0 && argonBytes > 0 {
		n = min(n, int(min(memBytes/8/argonBytes, 1<<20)))
	}
	return min(max(1, n), 256)
}

// MemoryLimit is the memory this process may use: the cgroup v2
// memory.max or v1 limit_in_bytes when set, else MemTotal of
// /proc/meminfo; 0 when neither can be read. These are system facts read
// once at boot, not storage.
func MemoryLimit() uint64 {
	total := memTotal()
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v == 0 {
			continue // "max": no limit
		}
		if total == 0 || v < total {
			return v
		}
	}
	return total
}

func memTotal() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
