package peers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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
	// ReleasedMBps is the same writes to a second new file with each
	// synced chunk's cached pages released (posix_fadvise DONTNEED), as
	// iggo's segments are (partition.segment_cache_bytes): the page cache
	// stops growing, which on a virtual machine is most of the first
	// figure's cost.
	ReleasedMBps float64 `json:"released_mb_per_sec"`
	Load         float64 `json:"load_avg_1m"`
}

// DiskBandwidth writes total bytes to a new file in dir in chunk-sized
// writes, each followed by fdatasync, and reports the rate from the first
// write to the last fdatasync; then it does the same to another new file,
// releasing each chunk's pages after its fdatasync (ReleasedMBps). The
// payload is pseudo-random (no compression or deduplication helps); the
// files are removed.
func DiskBandwidth(ctx context.Context, dir string, total, chunk uint64) (Disk, error) {
	if chunk == 0 || total < chunk {
		return Disk{}, fmt.Errorf("disk: want 0 < chunk (%d) <= bytes (%d)", chunk, total)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Disk{}, err
	}
	buf := make([]byte, chunk)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := rng.Uint64()
		for j := range 8 {
			buf[i+j] = byte(v >> (8 * j))
		}
	}
	d := Disk{Dir: dir, Chunk: chunk, Load: loadAvg1()}
	n, secs, err := writeSynced(ctx, dir, buf, total, false)
	if err != nil {
		return d, err
	}
	d.Bytes, d.Seconds, d.MBps = n, secs, float64(n)/1e6/secs
	if n, secs, err = writeSynced(ctx, dir, buf, total, true); err != nil {
		return d, err
	}
	d.ReleasedMBps = float64(n) / 1e6 / secs
	return d, nil
}

// writeSynced writes buf to a new file in dir until total bytes, each write
// followed by fdatasync (and with release by a page-cache release of what
// it wrote), and returns the bytes and seconds; the file is removed.
func writeSynced(ctx context.Context, dir string, buf []byte, total uint64, release bool) (uint64, float64, error) {
	f, err := os.CreateTemp(dir, "iggo-peers-disk-*")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	chunk := uint64(len(buf))
	var n uint64
	start := time.Now()
	for n+chunk <= total {
		if err := ctx.Err(); err != nil {
			return n, 0, err
		}
		if _, err := f.Write(buf); err != nil {
			return n, 0, fmt.Errorf("disk: write: %w", err)
		}
		if err := unix.Fdatasync(int(f.Fd())); err != nil {
			return n, 0, fmt.Errorf("disk: fdatasync: %w", err)
		}
		if release {
			if err := unix.Fadvise(int(f.Fd()), int64(n), int64(chunk), unix.FADV_DONTNEED); err != nil {
				return n, 0, fmt.Errorf("disk: fadvise: %w", err)
			}
		}
		n += chunk
	}
	return n, time.Since(start).Seconds(), nil
}
