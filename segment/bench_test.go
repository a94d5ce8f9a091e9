package segment

import (
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// benchFS returns the filesystem a shard would get (io_uring when allowed)
// or the portable one. A ring case only runs where io_uring is available
// (ringAvailable), so asking for one without it is a bug in the benchmark.
func benchFS(b *testing.B, ring bool) vfs.FS {
	b.Helper()
	fsys, choice, err := vfs.Open(vfs.Options{Portable: !ring})
	if err != nil {
		b.Fatal(err)
	}
	if ring && choice.Impl != vfs.ImplIOUring {
		fsys.Close()
		b.Fatalf("io_uring case run without io_uring: %v", choice.Reason)
	}
	b.Cleanup(func() { fsys.Close() })
	return fsys
}

// ringAvailable reports whether vfs.Open would give a shard io_uring here,
// and logs why not when it would not: the io_uring cases are then left out
// of the benchmark's table.
func ringAvailable(b *testing.B) bool {
	b.Helper()
	fsys, choice, err := vfs.Open(vfs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	fsys.Close()
	if choice.Impl != vfs.ImplIOUring {
		b.Logf("io_uring cases left out: %v", choice.Reason)
		return false
	}
	return true
}

// mbRecord is a record of 1000 messages of 1000 bytes (about 1 MB).
func mbRecord(base uint64) []byte {
	return simpleRecord(7, base, base, 1000, 1000)
}

func BenchmarkAppend1MB(b *testing.B) {
	ringOK := ringAvailable(b)
	for _, bc := range []struct {
		name string
		ring bool
		sync int // Sync every this many appends; 0 never
	}{
		{"nosync", false, 0},
		{"sync-each", false, 1},
		{"group-commit-8", false, 8},
		{"ring/nosync", true, 0},
		{"ring/sync-each", true, 1},
	} {
		if bc.ring && !ringOK {
			continue
		}
		b.Run(bc.name, func(b *testing.B) {
			fsys := benchFS(b, bc.ring)
			cfg := DefaultConfig(7)
			cfg.SegmentSize = 64 << 20
			l, _, err := Open(fsys, b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			rec := mbRecord(0)
			one := [][]byte{rec}
			b.SetBytes(int64(len(rec)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Restamp the base offset; the checksum is not re-hashed
				// (Append does not verify it), as the state machine stamps
				// and hashes once before appending.
				put64(rec, hBaseOffset, l.NextOffset())
				if err := l.Append(one); err != nil {
					b.Fatal(err)
				}
				if bc.sync > 0 && (i+1)%bc.sync == 0 {
					p, err := l.PlanSync()
					if err != nil {
						b.Fatal(err)
					}
					var batch vfs.Batch
					p.AddTo(&batch)
					if err := l.CompleteSync(p, fsys.Submit(&batch)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkAppendSmallBatches appends 100 records of 10 × 100-byte
// messages per call: the vectored-write path with many iovecs.
func BenchmarkAppendSmallBatches(b *testing.B) {
	fsys := benchFS(b, false)
	cfg := DefaultConfig(7)
	cfg.SegmentSize = 64 << 20
	l, _, err := Open(fsys, b.TempDir(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	recs := make([][]byte, 100)
	var size int64
	for i := range recs {
		recs[i] = simpleRecord(7, 0, 0, 10, 100)
		size += int64(len(recs[i]))
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		next := l.NextOffset()
		for _, r := range recs {
			put64(r, hBaseOffset, next)
			next += 10
		}
		if err := l.Append(recs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPoll reads a 64 MB log sequentially with 1 MiB poll
// buffers, as consumers polling Next do.
func BenchmarkReadPoll(b *testing.B) {
	for _, bc := range []struct {
		name     string
		validate bool
		interval uint32
		maxMsgs  uint32
	}{
		{"validate/1MiB", true, 0, 1 << 20},
		{"novalidate/1MiB", false, 0, 1 << 20},
		{"novalidate/sparse/1MiB", false, 64 << 10, 1 << 20},
		{"novalidate/100msgs", false, 0, 100},
	} {
		b.Run(bc.name, func(b *testing.B) {
			fsys := benchFS(b, false)
			cfg := DefaultConfig(7)
			cfg.SegmentSize = 16 << 20
			cfg.ValidateChecksum = bc.validate
			cfg.IndexInterval = bc.interval
			l, _, err := Open(fsys, b.TempDir(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			// Records of 100 messages of 1000 bytes (about 105 KB).
			for l.Size() < 64<<20 {
				if err := l.Append([][]byte{simpleRecord(7, l.NextOffset(), l.NextOffset(), 100, 1000)}); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 1<<20)
			from := uint64(0)
			var total int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := l.Read(buf, ReadRequest{From: from, MaxMessages: bc.maxMsgs})
				if err != nil {
					b.Fatal(err)
				}
				total += int64(res.N)
				from = res.NextOffset
				if from >= l.NextOffset() {
					from = 0
				}
			}
			b.SetBytes(total / int64(b.N))
		})
	}
}

// BenchmarkLocate looks up random offsets in sealed and active segments.
func BenchmarkLocate(b *testing.B) {
	fsys := benchFS(b, false)
	cfg := DefaultConfig(7)
	cfg.SegmentSize = 4 << 20
	l, _, err := Open(fsys, b.TempDir(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for l.Size() < 32<<20 {
		if err := l.Append([][]byte{simpleRecord(7, l.NextOffset(), l.NextOffset(), 10, 100)}); err != nil {
			b.Fatal(err)
		}
	}
	n := l.NextOffset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := uint64(i*7919) % n
		if _, err := l.Locate(off); err != nil {
			b.Fatal(err)
		}
	}
}
