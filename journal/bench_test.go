package journal

import (
	"fmt"
	"os"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// benchDisk returns the filesystem impl names ("io_uring" or "portable")
// and a fresh directory for it on the real disk under /tmp, both released
// when b ends.
func benchDisk(b *testing.B, impl string) (vfs.FS, string) {
	b.Helper()
	var fsys vfs.FS = vfs.NewOS()
	if impl == "io_uring" {
		r, err := vfs.NewRing(vfs.DefaultRingEntries)
		if err != nil {
			b.Fatalf("io_uring unavailable: %v", err)
		}
		b.Cleanup(func() { r.Close() })
		fsys = r
	}
	dir, err := os.MkdirTemp("/tmp", "iggo-journal-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return fsys, dir
}

// benchPrepare returns a 256-byte prepare header and a 1 MiB body.
func benchPrepare() (hdr, body []byte) {
	hdr, body = make([]byte, 256), make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i)
	}
	return hdr, body
}

// BenchmarkPartitionAppend1MB appends 1 MiB entries (a 256-byte prepare
// header and a 1 MiB body, as two parts) to a partition journal on a real
// disk under /tmp, through io_uring or the portable path, with a sync per
// entry or none. The journal is discarded whenever a checkpoint is due, as
// the node would after a checkpoint, so the run never fills the disk.
func BenchmarkPartitionAppend1MB(b *testing.B) {
	for _, impl := range []string{"io_uring", "portable"} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/sync=%v", impl, sync), func(b *testing.B) {
				fsys, dir := benchDisk(b, impl)
				j, _, err := OpenPartition(fsys, dir, PartitionOptions{Budget: 1 << 30, FileSize: 64 << 20})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				hdr, body := benchPrepare()
				b.SetBytes(int64(len(hdr) + len(body)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if j.CheckpointDue() {
						b.StopTimer()
						if err := j.DiscardPrefix(j.Last()); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					op := uint64(i + 1)
					if err := j.Append(Entry{Op: op, Parts: [][]byte{hdr, body}}); err != nil {
						b.Fatal(err)
					}
					if sync {
						if err := j.Sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkRecovery measures opening a partition journal of 256 MiB in
// 64 KiB entries (scan, checksums, index).
func BenchmarkRecovery(b *testing.B) {
	dir, err := os.MkdirTemp("/tmp", "iggo-journal-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fsys := vfs.NewOS()
	opts := PartitionOptions{Budget: 1 << 30}
	j, _, err := OpenPartition(fsys, dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 64<<10)
	for op := uint64(1); op <= 4096; op++ {
		if err := j.Append(Bytes(op, body)); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4096 * (64<<10 + RecordHeaderSize))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j, rep, err := OpenPartition(fsys, dir, opts)
		if err != nil || rep.Last != 4096 {
			b.Fatalf("%v %+v", err, rep)
		}
		j.Close()
	}
}

// BenchmarkPartitionCheckpointCycle is the steady state of a busy partition:
// 1 MiB entries appended (with a sync per entry or none) to a journal with
// the default budget and file size, discarded through the last op whenever
// a checkpoint is due, as the node does. One full cycle runs before the
// timer so that, with recycling, the pool is warm: every rotation
// overwrites a retired file instead of creating one.
func BenchmarkPartitionCheckpointCycle(b *testing.B) {
	for _, impl := range []string{"io_uring", "portable"} {
		for _, sync := range []bool{false, true} {
			for _, recycle := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/sync=%v/recycle=%v", impl, sync, recycle), func(b *testing.B) {
					fsys, dir := benchDisk(b, impl)
					opts := PartitionOptions{}
					if !recycle {
						opts.RecycleFiles = -1
					}
					j, _, err := OpenPartition(fsys, dir, opts)
					if err != nil {
						b.Fatal(err)
					}
					defer j.Close()
					hdr, body := benchPrepare()
					op := uint64(0)
					step := func() {
						if j.CheckpointDue() {
							if err := j.DiscardPrefix(j.Last()); err != nil {
								b.Fatal(err)
							}
						}
						op++
						if err := j.Append(Entry{Op: op, Parts: [][]byte{hdr, body}}); err != nil {
							b.Fatal(err)
						}
						if sync {
							if err := j.Sync(); err != nil {
								b.Fatal(err)
							}
						}
					}
					for !j.CheckpointDue() {
						step()
					}
					step()
					created := j.created
					b.SetBytes(int64(len(hdr) + len(body)))
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						step()
					}
					b.StopTimer()
					b.ReportMetric(float64(j.created-created), "created")
					b.ReportMetric(float64(j.recycled), "recycled")
				})
			}
		}
	}
}
