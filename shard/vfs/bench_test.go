package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchFS returns the implementations worth timing on real disks.
func benchFS(b *testing.B) map[string]FS {
	out := map[string]FS{"portable": NewOS()}
	if r, err := NewRing(DefaultRingEntries); err == nil {
		b.Cleanup(func() { r.Close() })
		out["io_uring"] = r
	}
	if r, err := NewRing(DefaultRingEntries); err == nil {
		b.Cleanup(func() { r.Close() })
		r.SetInlineWrites(true)
		out["io_uring-inline"] = r
	}
	return out
}

// benchDir is a temporary directory under /tmp (same disk as dd's figures
// in the report), removed when the benchmark ends.
func benchDir(b *testing.B) string {
	d, err := os.MkdirTemp("/tmp", "iggo-vfs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// wrapAt bounds the file a sequential benchmark grows, so a long run does
// not fill the disk: at this size the file is cut back to zero outside the
// timer.
const wrapAt = 512 << 20

// BenchmarkAppend1MB appends 1 MiB batches (256 buffers of 4 KiB, one
// vectored write each) sequentially, buffered or with an fdatasync per
// batch. MB/s is the figure to compare with dd.
func BenchmarkAppend1MB(b *testing.B) {
	for _, name := range []string{"io_uring", "io_uring-inline", "portable"} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/fdatasync=%v", name, sync), func(b *testing.B) {
				fsys, ok := benchFS(b)[name]
				if !ok {
					b.Fatalf("%s unavailable on this machine", name)
				}
				f, err := fsys.OpenFile(filepath.Join(benchDir(b), "seq"), O_RDWR|O_CREATE, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				bufs := make([][]byte, 256)
				for i := range bufs {
					bufs[i] = make([]byte, 4096)
					for j := range bufs[i] {
						bufs[i][j] = byte(i + j)
					}
				}
				const batch = 1 << 20
				b.SetBytes(batch)
				b.ResetTimer()
				var off int64
				for i := 0; i < b.N; i++ {
					if off+batch > wrapAt {
						b.StopTimer()
						if err := f.Truncate(0); err != nil {
							b.Fatal(err)
						}
						off = 0
						b.StartTimer()
					}
					if _, err := f.WritevAt(bufs, off); err != nil {
						b.Fatal(err)
					}
					off += batch
					if sync {
						if err := f.Datasync(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// BenchmarkGroupCommit writes 4 KiB to each of 8 files and makes all of it
// durable, per round: "batch" submits the round as one Batch (on io_uring:
// one submission of 8 writes, one of 8 fdatasyncs); "naive" writes and
// syncs file by file. ns/op is per round of 8 writes.
func BenchmarkGroupCommit(b *testing.B) {
	for _, name := range []string{"io_uring", "io_uring-inline", "portable"} {
		for _, mode := range []string{"batch", "naive"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				fsys, ok := benchFS(b)[name]
				if !ok {
					b.Fatalf("%s unavailable on this machine", name)
				}
				dir := benchDir(b)
				var files []File
				for i := 0; i < 8; i++ {
					f, err := fsys.OpenFile(filepath.Join(dir, fmt.Sprint(i)), O_RDWR|O_CREATE, 0o644)
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					files = append(files, f)
				}
				p := make([]byte, 4096)
				var batch Batch
				b.SetBytes(int64(len(files) * len(p)))
				b.ResetTimer()
				var off int64
				for i := 0; i < b.N; i++ {
					if off+int64(len(p)) > 64<<20 {
						off = 0
					}
					if mode == "batch" {
						batch.Reset()
						for _, f := range files {
							batch.WriteAt(f, p, off)
							batch.Datasync(f)
						}
						if err := fsys.Submit(&batch); err != nil {
							b.Fatal(err)
						}
					} else {
						for _, f := range files {
							if _, err := f.WriteAt(p, off); err != nil {
								b.Fatal(err)
							}
							if err := f.Datasync(); err != nil {
								b.Fatal(err)
							}
						}
					}
					off += int64(len(p))
				}
			})
		}
	}
}
