package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// buildLog writes count single-message records of payload size bytes into
// a fresh directory with the given segment size, syncs and closes it, and
// returns the directory, the config and the records.
func buildLog(t *testing.T, segSize uint64, count, size int) (string, Config, [][]byte) {
	return buildLogSynced(t, segSize, count, count, size)
}

// buildLogSynced is buildLog with only the first synced records synced
// before the rest are appended.
func buildLogSynced(t *testing.T, segSize uint64, synced, count, size int) (string, Config, [][]byte) {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(segSize)
	l, _ := mustOpen(t, vfs.NewOS(), dir, cfg)
	recs := appendN(t, l, synced, size, 1000)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	recs = append(recs, appendN(t, l, count-synced, size, 2000)...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, cfg, recs
}

// readAll reads every stored record back and compares it with want.
func readAll(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	buf := make([]byte, 1<<20)
	res, err := l.Read(buf, ReadRequest{From: 0, MaxMessages: 1 << 30})
	if err != nil {
		t.Fatalf("read all: %v", err)
	}
	if !bytes.Equal(buf[:res.N], bytes.Join(want, nil)) {
		t.Fatalf("read %d records (%d bytes), want %d records", res.Records, res.N, len(want))
	}
}

func TestRecoverTornTail(t *testing.T) {
	const size = 100 // each record: 256 + 48 + 100 = 404 bytes
	recLen := int64(RecordHeaderSize + FrameHeaderSize + size)
	cases := []struct {
		name   string
		synced int
		damage func(t *testing.T, logPath string)
		keep   int // records that survive
		reason string
	}{
		{"partial header", 4, func(t *testing.T, p string) {
			truncate(t, p, 4*recLen+100)
		}, 4, "partial record header"},
		{"partial body", 4, func(t *testing.T, p string) {
			truncate(t, p, 4*recLen+300)
		}, 4, "runs past the log end"},
		{"bad checksum in last record", 4, func(t *testing.T, p string) {
			flip(t, p, 4*recLen+RecordHeaderSize+FrameHeaderSize+10)
		}, 4, "checksum"},
		{"torn sectors before whole records", 2, func(t *testing.T, p string) {
			// A torn vectored write keeps any of its sectors: records 3 and
			// 4 came through whole, record 2 lost a sector.
			b := readFile(t, p)
			clear(b[2*recLen+RecordHeaderSize : 2*recLen+RecordHeaderSize+100])
			writeFile(t, p, b)
		}, 2, "checksum"},
		{"zeros appended", 5, func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(make([]byte, 4096))
			f.Close()
		}, 5, "partition_id 0"},
		{"first record torn", 0, func(t *testing.T, p string) {
			truncate(t, p, 200)
		}, 0, "partial record header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, cfg, recs := buildLogSynced(t, 1<<20, tc.synced, 5, size)
			logPath := segPath(dir, 0, logExt)
			before := fileSize(t, logPath)
			tc.damage(t, logPath)
			damaged := fileSize(t, logPath)
			l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
			defer l.Close()
			if rep.TornTail == nil {
				t.Fatalf("no torn tail reported: %+v", rep)
			}
			tt := rep.TornTail
			if tt.Position != int64(tc.keep)*recLen || tt.Dropped != damaged-tt.Position || !strings.Contains(tt.Reason, tc.reason) {
				t.Fatalf("torn tail %+v, want position %d dropped %d reason ~%q (log was %d bytes)", tt, int64(tc.keep)*recLen, damaged-tt.Position, tc.reason, before)
			}
			if l.NextOffset() != uint64(tc.keep) || l.DurableNextOffset() != uint64(tc.keep) {
				t.Fatalf("next %d durable %d, want %d", l.NextOffset(), l.DurableNextOffset(), tc.keep)
			}
			if got := fileSize(t, logPath); got != int64(tc.keep)*recLen {
				t.Fatalf("log is %d bytes after recovery", got)
			}
			readAll(t, l, recs[:tc.keep])
			// The log goes on from the truncation point.
			more := appendN(t, l, 2, size, 5000)
			readAll(t, l, append(recs[:tc.keep:tc.keep], more...))
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, rep2 := mustOpen(t, vfs.NewOS(), dir, cfg)
			defer l2.Close()
			if !rep2.Clean() {
				t.Fatalf("second open repaired again: %+v", rep2)
			}
		})
	}
}

func TestRecoverMidLogCorruptionReported(t *testing.T) {
	const size = 100
	recLen := int64(RecordHeaderSize + FrameHeaderSize + size)
	t.Run("last segment payload", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 1<<20, 5, size)
		flip(t, segPath(dir, 0, logExt), 2*recLen+RecordHeaderSize+FrameHeaderSize+3)
		// The index vouches for the record, so Open does not re-hash it by
		// default; a checksum-validating read reports it.
		l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
		if !rep.Clean() {
			t.Fatalf("report %+v", rep)
		}
		_, err := l.Read(make([]byte, 1<<16), ReadRequest{From: 0, MaxMessages: 10})
		if ce := asCorruption(t, err); ce.Position != 2*recLen || ce.Offset != 2 {
			t.Fatalf("read corruption %+v", ce)
		}
		l.Close()
		cfg.VerifyAllOnOpen = true
		_, rep, err = Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Segment != 0 || ce.Position != 2*recLen || ce.Offset != 2 || !strings.Contains(ce.Reason, "below the durable end") {
			t.Fatalf("corruption %+v", ce)
		}
		if rep.TornTail != nil {
			t.Fatalf("mid-log damage also reported as a torn tail: %+v", rep.TornTail)
		}
		// Nothing was truncated.
		if fileSize(t, segPath(dir, 0, logExt)) != 5*recLen {
			t.Fatal("log changed")
		}
	})
	t.Run("last segment misplaced record", func(t *testing.T) {
		// Unsynced, so not below the index's durable end, but a whole valid
		// record cannot be a tear.
		dir, cfg, _ := buildLogSynced(t, 1<<20, 0, 3, size)
		cfg.PartitionID++
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Position != 0 || !strings.Contains(ce.Reason, "whole record with good checksums") {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("last segment impossible header", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 1<<20, 5, size)
		flip(t, segPath(dir, 0, logExt), 1*recLen+hBatchLength+2)
		cfg.VerifyAllOnOpen = true
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Position != recLen {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("sealed segment found by header walk", func(t *testing.T) {
		// Three records per segment; damage a header after the sealed
		// segment's last index entry, which a header walk reads.
		dir, cfg, _ := buildLog(t, 3*uint64(recLen), 7, size)
		idx := segPath(dir, 0, indexExt)
		if err := os.Truncate(idx, IndexEntrySize); err != nil {
			t.Fatal(err)
		}
		flip(t, segPath(dir, 0, logExt), 2*recLen+hReserved+7)
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Segment != 0 || ce.Position != 2*recLen || ce.Offset != 2 {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("last segment below the durable end", func(t *testing.T) {
		// The index vouches for records 0..2 only; damage in record 1 is
		// found by the re-hash (the last entry does not match its record)
		// and is below the durable end.
		dir, cfg, _ := buildLogSynced(t, 1<<20, 3, 5, size)
		flip(t, segPath(dir, 0, logExt), 2*recLen+hBaseOffset)
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Position != 2*recLen || !strings.Contains(ce.Reason, "below the durable end") {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("sealed segment payload with VerifyAllOnOpen", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 3*uint64(recLen), 7, size)
		flip(t, segPath(dir, 3, logExt), 1*recLen+RecordHeaderSize+FrameHeaderSize)
		// Without the option the damage is not read at boot, but a read
		// with checksum validation reports it.
		l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
		if !rep.Clean() {
			t.Fatalf("report %+v", rep)
		}
		_, err := l.Read(make([]byte, 1<<16), ReadRequest{From: 3, MaxMessages: 10})
		ce := asCorruption(t, err)
		if ce.Segment != 3 || ce.Position != recLen || ce.Offset != 4 {
			t.Fatalf("read corruption %+v", ce)
		}
		l.Close()
		cfg.VerifyAllOnOpen = true
		_, _, err = Open(vfs.NewOS(), dir, cfg)
		ce = asCorruption(t, err)
		if ce.Segment != 3 || ce.Position != recLen || ce.Offset != 4 || ce.File != segPath(dir, 3, logExt) {
			t.Fatalf("open corruption %+v", ce)
		}
	})
	t.Run("sealed segment torn", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 3*uint64(recLen), 7, size)
		truncate(t, segPath(dir, 3, logExt), 2*recLen+10)
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Segment != 3 || ce.Position != 2*recLen {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("hole between segments", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 3*uint64(recLen), 10, size)
		for _, ext := range []string{logExt, indexExt} {
			if err := os.Remove(segPath(dir, 3, ext)); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Segment != 6 || ce.Offset != 3 || !strings.Contains(ce.Reason, "hole") {
			t.Fatalf("corruption %+v", ce)
		}
	})
	t.Run("foreign partition", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 1<<20, 3, size)
		cfg.PartitionID++
		_, _, err := Open(vfs.NewOS(), dir, cfg)
		ce := asCorruption(t, err)
		if ce.Position != 0 || !strings.Contains(ce.Reason, "partition_id") {
			t.Fatalf("corruption %+v", ce)
		}
	})
}

func TestRecoverRebuildsIndex(t *testing.T) {
	const size = 100
	recLen := int64(RecordHeaderSize + FrameHeaderSize + size)
	segSize := 4 * uint64(recLen)
	for _, interval := range []uint32{0, 1000} {
		// For the last segment an index missing entries at its end is the
		// routine state after a crash (entries trail the log by a sync):
		// recovery completes it without a report (lagging).
		cases := []struct {
			name    string
			damage  func(t *testing.T, idx string)
			reason  string
			lagging bool
		}{
			{"missing", func(t *testing.T, p string) { os.Remove(p) }, "index holds 0 entries", true},
			{"short", func(t *testing.T, p string) { truncate(t, p, fileSize(t, p)-IndexEntrySize) }, "index holds", true},
			{"partial entry", func(t *testing.T, p string) { truncate(t, p, fileSize(t, p)-IndexEntrySize+5) }, "partial entry", true},
			{"bad checksum", func(t *testing.T, p string) { flip(t, p, fileSize(t, p)-IndexEntrySize+iMaxTS) }, "checksum", false},
			// The fields still name the record; only the stored checksum is
			// wrong. The entry must be rewritten, not kept because its fields
			// agree with the log.
			{"damaged checksum field", func(t *testing.T, p string) { flip(t, p, fileSize(t, p)-IndexEntrySize+iChecksum) }, "checksum", false},
			{"damaged checksum of a middle entry", func(t *testing.T, p string) { flip(t, p, iChecksum+1) }, "checksum", false},
			{"past the log end", func(t *testing.T, p string) {
				b := readFile(t, p)
				last := b[len(b)-IndexEntrySize:]
				e, _ := decodeEntry(last, startOf(p))
				e.pos += 1 << 20
				encodeEntry(last, e, startOf(p))
				writeFile(t, p, b)
			}, "entry", false},
			{"extra entries", func(t *testing.T, p string) {
				b := readFile(t, p)
				writeFile(t, p, append(b, b[len(b)-IndexEntrySize:]...))
			}, "", false},
			{"copied from another segment", func(t *testing.T, p string) {
				other := filepath.Join(filepath.Dir(p), segmentName(0, indexExt))
				writeFile(t, p, readFile(t, other))
			}, "checksum", false},
		}
		for _, tc := range cases {
			for _, seg := range []uint64{4, 8} { // a sealed segment and the last one
				name := tc.name + "/" + map[uint64]string{4: "sealed", 8: "last"}[seg]
				if interval > 0 {
					name += "/sparse"
				}
				t.Run(name, func(t *testing.T) {
					dir := t.TempDir()
					cfg := testConfig(segSize)
					cfg.IndexInterval = interval
					l, _ := mustOpen(t, vfs.NewOS(), dir, cfg)
					recs := appendN(t, l, 10, size, 1000)
					l.Sync()
					l.Close()
					idx := segPath(dir, seg, indexExt)
					orig := readFile(t, idx)
					tc.damage(t, idx)
					l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
					defer l.Close()
					if tc.lagging && seg == 8 {
						if !rep.Clean() {
							t.Fatalf("completing a trailing index reported: %+v", rep)
						}
					} else if len(rep.RebuiltIndexes) != 1 || rep.RebuiltIndexes[0].Segment != seg ||
						!strings.Contains(rep.RebuiltIndexes[0].Reason, tc.reason) {
						t.Fatalf("rebuilt %+v, want segment %d reason ~%q", rep.RebuiltIndexes, seg, tc.reason)
					}
					if rep.TornTail != nil {
						t.Fatalf("torn tail reported: %+v", rep.TornTail)
					}
					// A sparse index also holds a sync entry for the last
					// durable record, which a rebuild from the log cannot
					// know about; otherwise rebuilds are byte-identical.
					if got := readFile(t, idx); !bytes.Equal(got, orig) && (interval == 0 || seg != 8) {
						t.Fatalf("rebuilt index differs from the written one:\n%x\n%x", got, orig)
					}
					readAll(t, l, recs)
					for off := uint64(0); off < 10; off++ {
						ri, err := l.Locate(off)
						if err != nil || ri.BaseOffset != off {
							t.Fatalf("locate %d: %+v %v", off, ri, err)
						}
					}
				})
			}
		}
	}
}

func TestRecoverRemovesOrphanIndexAndFinishesPurge(t *testing.T) {
	t.Run("orphan index", func(t *testing.T) {
		dir, cfg, recs := buildLog(t, 1<<20, 3, 10)
		orphan := segPath(dir, 99, indexExt)
		writeFile(t, orphan, make([]byte, 48))
		l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
		defer l.Close()
		if len(rep.RemovedFiles) != 1 || rep.RemovedFiles[0] != orphan {
			t.Fatalf("report %+v", rep)
		}
		if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("orphan still there: %v", err)
		}
		readAll(t, l, recs)
	})
	t.Run("interrupted purge", func(t *testing.T) {
		dir, cfg, _ := buildLog(t, 1000, 8, 10)
		writeFile(t, segPath(dir, 20, purgeExt), nil)
		// The crash came after some segments were removed.
		os.Remove(segPath(dir, 0, logExt))
		l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
		if !rep.PurgeFinished || rep.PurgeNext != 20 || rep.Segments != 1 {
			t.Fatalf("report %+v", rep)
		}
		if l.NextOffset() != 20 || l.FirstOffset() != 20 || l.MessageCount() != 0 {
			t.Fatalf("offsets [%d, %d)", l.FirstOffset(), l.NextOffset())
		}
		names := dirNames(t, dir)
		if strings.Join(names, " ") != segmentName(20, indexExt)+" "+segmentName(20, logExt) {
			t.Fatalf("directory holds %v", names)
		}
		appendN(t, l, 1, 10, 1)
		l.Close()
		l, rep = mustOpen(t, vfs.NewOS(), dir, cfg)
		defer l.Close()
		if !rep.Clean() || l.NextOffset() != 21 {
			t.Fatalf("reopen: next %d report %+v", l.NextOffset(), rep)
		}
	})
}

func TestRecoverEmptyAndForeignFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "superblock.a"), []byte("not ours"))
	writeFile(t, filepath.Join(dir, "123.log"), []byte("not ours either"))
	l, rep := mustOpen(t, vfs.NewOS(), filepath.Join(dir), testConfig(1000))
	if !rep.Clean() || rep.Segments != 0 || l.NextOffset() != 0 {
		t.Fatalf("report %+v next %d", rep, l.NextOffset())
	}
	if _, ok := l.HighestOffset(); ok {
		t.Fatal("empty log has a highest offset")
	}
	l.Close()
	if len(dirNames(t, dir)) != 2 {
		t.Fatalf("foreign files touched: %v", dirNames(t, dir))
	}
}

func TestRecoverFullLastSegmentIsSealed(t *testing.T) {
	const size = 100
	recLen := uint64(RecordHeaderSize + FrameHeaderSize + size)
	dir, cfg, _ := buildLog(t, 2*recLen, 2, size)
	l, _ := mustOpen(t, vfs.NewOS(), dir, cfg)
	defer l.Close()
	segs := l.Segments()
	if len(segs) != 1 || !segs[0].Sealed {
		t.Fatalf("segments %+v", segs)
	}
	appendN(t, l, 1, size, 1)
	if segs := l.Segments(); len(segs) != 2 || segs[1].StartOffset != 2 || segs[1].Sealed {
		t.Fatalf("segments after append %+v", segs)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	b := readFile(t, path)
	b[at] ^= 0x5a
	writeFile(t, path, b)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func startOf(path string) uint64 {
	start, _, _ := parseName(filepath.Base(path))
	return start
}

var _ = binary.LittleEndian
