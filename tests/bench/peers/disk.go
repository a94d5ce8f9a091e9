package peers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Disk is a sequential write bandwidth measurement.
type Disk struct {
	Dir     string  `json:"dir"`
	Bytes   uint64  `json:"bytes"`
	Chunk   uint64  `json:"chunk_bytes"`
	Seconds float64 `json:"seconds"`
	// MBps is 10^6 bytes per second.
	MBps float64 `json:"mb_per_sec"`
	Load float64 `json:"load_avg_1m"`
}

// DiskBandwidth writes total bytes to a new file in dir in chunk-sized
// writes, each followed by fdatasync, and reports the rate from the first
// write to the last fdatasync. The payload is pseudo-random (no
// compression or deduplication helps); the file is removed.
func DiskBandwidth(ctx context.Context, dir string, total, chunk uint64) (Disk, error) {
	if chunk == 0 || total < chunk {
		return Disk{}, fmt.Errorf("disk: want 0 < chunk (%d) <= bytes (%d)", chunk, total)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Disk{}, err
	}
	f, err := os.CreateTemp(dir, "iggo-peers-disk-*")
	if err != nil {
		return Disk{}, err
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	buf := make([]byte, chunk)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	d := Disk{Dir: filepath.Dir(name), Chunk: chunk, Load: loadAvg1()}
	start := time.Now()
	for d.Bytes+chunk <= total {
		if err := ctx.Err(); err != nil {
			return d, err
		}
		if _, err := f.Write(buf); err != nil {
			return d, fmt.Errorf("disk: write: %w", err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return d, fmt.Errorf("disk: fdatasync: %w", err)
		}
		d.Bytes += chunk
	}
	d.Seconds = time.Since(start).Seconds()
	d.MBps = float64(d.Bytes) / 1e6 / d.Seconds
	return d, nil
}
