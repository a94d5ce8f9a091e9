package journal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// journalOps builds a metadata journal on a fault FS: ops 1..synced
// appended and synced, then ops synced+1..total appended, with a sync after
// them if syncAll. It returns the FS with the journal closed.
func journalOps(t *testing.T, synced, total uint64, syncAll bool) (*vfs.Fault, map[uint64]int64) {
	t.Helper()
	fsys := vfs.NewFault(42)
	j, _ := openMeta(t, fsys, MetadataOptions{})
	for op := uint64(1); op <= total; op++ {
		must(t, j.Append(Bytes(op, content(op, 200, 0))))
		if op == synced {
			must(t, j.Sync())
		}
	}
	if syncAll {
		must(t, j.Sync())
	}
	offs := map[uint64]int64{}
	for op := uint64(1); op <= total; op++ {
		offs[op] = j.ents[op-1].off
	}
	must(t, j.Close())
	return fsys, offs
}

func patch(t *testing.T, fsys vfs.FS, path string, fn func(f vfs.File)) {
	t.Helper()
	f, err := fsys.OpenFile(path, vfs.O_RDWR, 0)
	must(t, err)
	fn(f)
	must(t, f.Datasync())
	must(t, f.Close())
}

const metaPath = "/m/journal.wal"

func TestRecoveryClassification(t *testing.T) {
	const recSize = RecordHeaderSize + 200
	cases := []struct {
		name    string
		synced  uint64
		total   uint64
		syncAll bool
		damage  func(t *testing.T, fsys vfs.FS, offs map[uint64]int64)
		last    uint64
		torn    bool
		faulty  [][2]uint64
		dropped int
	}{
		{
			name: "clean", synced: 5, total: 8, syncAll: true,
			damage: func(*testing.T, vfs.FS, map[uint64]int64) {},
			last:   8,
		},
		{
			name: "tail cut inside a record", synced: 5, total: 8,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) { must(t, f.Truncate(offs[7]+50)) })
			},
			last: 6, torn: true,
		},
		{
			name: "garbage after the last record", synced: 5, total: 5,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt(bytes.Repeat([]byte{0xEE}, 300), offs[5]+recSize)
					must(t, err)
				})
			},
			last: 5, torn: true,
		},
		{
			name: "unsynced record torn, later unsynced one intact", synced: 5, total: 8,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt([]byte{1, 2, 3}, offs[7]+120)
					must(t, err)
				})
			},
			last: 6, torn: true, dropped: 1,
		},
		{
			name: "synced record damaged, later records promise it", synced: 5, total: 8, syncAll: true,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt([]byte{1, 2, 3}, offs[3]+120)
					must(t, err)
				})
			},
			last: 8, faulty: [][2]uint64{{3, 3}},
		},
		{
			name: "header of a synced record damaged", synced: 5, total: 8, syncAll: true,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt([]byte{0xFF}, offs[2]+30)
					must(t, err)
				})
			},
			last: 8, faulty: [][2]uint64{{2, 2}},
		},
		{
			// The documented limit: nothing after the last sync carries its
			// promise, so damage there reads as a torn tail.
			name: "last synced group damaged with no later promise", synced: 5, total: 5, syncAll: true,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt([]byte{1}, offs[3]+150)
					must(t, err)
				})
			},
			last: 2, torn: true, dropped: 2,
		},
		{
			name: "file header damaged", synced: 5, total: 8, syncAll: true,
			damage: func(t *testing.T, fsys vfs.FS, offs map[uint64]int64) {
				patch(t, fsys, metaPath, func(f vfs.File) {
					_, err := f.WriteAt([]byte{0xFF}, 20)
					must(t, err)
				})
			},
			last: 8,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys, offs := journalOps(t, c.synced, c.total, c.syncAll)
			c.damage(t, fsys, offs)
			j, rep := openMeta(t, fsys, MetadataOptions{})
			if rep.Last != c.last || (rep.Torn != nil) != c.torn {
				t.Fatalf("last %d torn %+v, want last %d torn %v", rep.Last, rep.Torn, c.last, c.torn)
			}
			if c.torn && rep.Torn.Dropped != c.dropped {
				t.Fatalf("dropped %d intact records, want %d", rep.Torn.Dropped, c.dropped)
			}
			if len(rep.Faulty) != len(c.faulty) {
				t.Fatalf("faulty %+v, want %v", rep.Faulty, c.faulty)
			}
			for i, f := range c.faulty {
				if rep.Faulty[i].From != f[0] || rep.Faulty[i].To != f[1] || !rep.Faulty[i].Repairable {
					t.Fatalf("faulty %+v, want %v", rep.Faulty[i], f)
				}
			}
			bad := map[uint64]bool{}
			for _, f := range c.faulty {
				for op := f[0]; op <= f[1]; op++ {
					bad[op] = true
				}
			}
			for op := uint64(1); op <= c.last; op++ {
				if bad[op] {
					if _, err := j.Read(op); !errors.Is(err, ErrFaulty) {
						t.Fatalf("faulty op %d: %v", op, err)
					}
					continue
				}
				readOK(t, j, op, content(op, 200, 0))
			}
			if c.name == "file header damaged" && len(rep.HeadersRewritten) != 1 {
				t.Fatalf("header not rebuilt: %+v", rep)
			}
			// The journal continues after recovery, and a second open is
			// clean apart from still-faulty ops.
			must(t, j.Append(Bytes(c.last+1, []byte("next"))))
			must(t, j.Sync())
			must(t, j.Close())
			_, rep2 := openMeta(t, fsys, MetadataOptions{})
			if rep2.Torn != nil || rep2.Last != c.last+1 || len(rep2.Faulty) != len(c.faulty) {
				t.Fatalf("second open: %+v", rep2)
			}
		})
	}
}

func TestRepairRules(t *testing.T) {
	fsys, offs := journalOps(t, 8, 10, true)
	// Damage ops 3 and 4 together.
	patch(t, fsys, metaPath, func(f vfs.File) {
		_, err := f.WriteAt(bytes.Repeat([]byte{0}, 150), offs[3]+200)
		must(t, err)
	})
	j, rep := openMeta(t, fsys, MetadataOptions{})
	if len(rep.Faulty) != 1 || rep.Faulty[0].From != 3 || rep.Faulty[0].To != 4 {
		t.Fatalf("faulty %+v", rep.Faulty)
	}
	if got := j.Faulty(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("Faulty() = %v", got)
	}
	if err := j.Repair(4, content(4, 200, 0)); !errors.Is(err, ErrRepair) {
		t.Fatalf("out-of-order repair: %v", err)
	}
	if err := j.Repair(5, content(5, 200, 0)); !errors.Is(err, ErrRepair) {
		t.Fatalf("repair of a good op: %v", err)
	}
	must(t, j.Repair(3, content(3, 200, 0)))
	// The last op of a run must end exactly where the damage ends.
	if err := j.Repair(4, content(4, 300, 0)); !errors.Is(err, ErrRepair) {
		t.Fatalf("oversized repair: %v", err)
	}
	if err := j.Repair(4, content(4, 100, 0)); !errors.Is(err, ErrRepair) {
		t.Fatalf("undersized repair: %v", err)
	}
	// Op 4 with other content of the same size does not chain to op 5.
	if err := j.Repair(4, content(4, 200, 9)); !errors.Is(err, ErrRepair) {
		t.Fatalf("divergent repair: %v", err)
	}
	must(t, j.Repair(4, content(4, 200, 0)))
	for op := uint64(1); op <= 10; op++ {
		readOK(t, j, op, content(op, 200, 0))
	}
	must(t, j.Sync())
	must(t, j.Close())
	_, rep = openMeta(t, fsys, MetadataOptions{})
	if len(rep.Faulty) != 0 || rep.Last != 10 {
		t.Fatalf("after repair: %+v", rep)
	}
}

// metaWithFaultyOp6 opens a metadata journal of ops 1..10 (synced through
// 8) whose op 6 was damaged on disk; recovery must report it faulty.
func metaWithFaultyOp6(t *testing.T) (*Journal, *vfs.Fault) {
	t.Helper()
	fsys, offs := journalOps(t, 8, 10, true)
	patch(t, fsys, metaPath, func(f vfs.File) {
		_, err := f.WriteAt([]byte{7}, offs[6]+100)
		must(t, err)
	})
	j, rep := openMeta(t, fsys, MetadataOptions{})
	if len(rep.Faulty) != 1 || rep.Faulty[0].From != 6 {
		t.Fatalf("faulty %+v", rep.Faulty)
	}
	return j, fsys
}

func TestTruncateBelowFaulty(t *testing.T) {
	j, fsys := metaWithFaultyOp6(t)
	eff, err := j.TruncateFrom(7)
	must(t, err)
	if eff != 6 || j.Last() != 5 || len(j.Faulty()) != 0 {
		t.Fatalf("truncate from 7 below faulty 6: eff %d last %d", eff, j.Last())
	}
	must(t, j.Append(Bytes(6, []byte("six"))))
	must(t, j.Sync())
	must(t, j.Close())
	j2, rep := openMeta(t, fsys, MetadataOptions{})
	if rep.Last != 6 || len(rep.Faulty) != 0 || rep.Torn != nil {
		t.Fatalf("after truncate and append: %+v", rep)
	}
	readOK(t, j2, 6, []byte("six"))
}

func TestPartitionMissingMiddleFile(t *testing.T) {
	fsys := vfs.NewFault(9)
	opts := PartitionOptions{Budget: 1 << 20, FileSize: 1 << 10, MaxEntry: 4 << 10}
	j, _ := openPart(t, fsys, opts)
	for op := uint64(1); op <= 20; op++ {
		must(t, j.Append(Bytes(op, content(op, 300, 0))))
		must(t, j.Sync())
	}
	names := []string{}
	for _, f := range j.files {
		names = append(names, f.path)
	}
	must(t, j.Close())
	if len(names) < 4 {
		t.Fatalf("only %d files", len(names))
	}
	must(t, fsys.Remove(names[1]))
	j2, rep := openPart(t, fsys, opts)
	if len(rep.Faulty) != 1 || rep.Faulty[0].Repairable || rep.Last != 20 {
		t.Fatalf("missing file: %+v", rep)
	}
	if _, err := j2.Read(rep.Faulty[0].From); !errors.Is(err, ErrFaulty) {
		t.Fatalf("op in the missing file: %v", err)
	}
	if err := j2.Repair(rep.Faulty[0].From, content(rep.Faulty[0].From, 300, 0)); !errors.Is(err, ErrRepair) {
		t.Fatalf("repair across files: %v", err)
	}
}

// FuzzRecordHeader: the decoder never panics, and what it accepts
// re-encodes to the same bytes.
func FuzzRecordHeader(f *testing.F) {
	b := make([]byte, RecordHeaderSize)
	encodeRecordHeader(b, recordHeader{op: 7, offset: 64, length: 10, synced: 6, entry: Uint128{1, 2}, prev: Uint128{3, 4}})
	f.Add(b, int64(64))
	f.Add(make([]byte, RecordHeaderSize), int64(0))
	stamped := make([]byte, RecordHeaderSize)
	encodeRecordHeader(stamped, recordHeader{op: 9, offset: 64, length: 3, synced: 8, entry: Uint128{1, 2}, file: 9})
	f.Add(stamped, int64(64))
	end := make([]byte, RecordHeaderSize)
	encodeRecordHeader(end, recordHeader{op: 9, offset: 460, synced: 8, prev: Uint128{3, 4}, end: true, file: 9})
	f.Add(end, int64(460))
	f.Fuzz(func(t *testing.T, b []byte, off int64) {
		h, err := decodeRecordHeader(b, off, DefaultMaxEntry)
		if err != nil {
			return
		}
		again := make([]byte, RecordHeaderSize)
		encodeRecordHeader(again, h)
		if !bytes.Equal(again, b[:RecordHeaderSize]) {
			t.Fatal("accepted header does not re-encode identically")
		}
	})
}

func FuzzFileHeader(f *testing.F) {
	b := make([]byte, FileHeaderSize)
	encodeFileHeader(b, fileHeader{kind: kindPartition, firstOp: 9, prev: Uint128{5, 6}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := decodeFileHeader(b)
		if err != nil {
			return
		}
		again := make([]byte, FileHeaderSize)
		encodeFileHeader(again, h)
		if !bytes.Equal(again, b[:FileHeaderSize]) {
			t.Fatal("accepted file header does not re-encode identically")
		}
	})
}

func FuzzSnapshotTrailer(f *testing.F) {
	b := make([]byte, SnapshotTrailerSize)
	encodeSnapshotTrailer(b, 12, 100, Uint128{1, 1})
	f.Add(b, int64(164))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		op, length, sum, err := decodeSnapshotTrailer(b, size)
		if err != nil {
			return
		}
		again := make([]byte, SnapshotTrailerSize)
		encodeSnapshotTrailer(again, op, int(length), sum)
		if !bytes.Equal(again, b) || length+SnapshotTrailerSize != size {
			t.Fatal("accepted trailer does not re-encode identically")
		}
	})
}

// FuzzRecoverMetadata opens a metadata journal whose file holds arbitrary
// bytes after a valid prefix: recovery must not panic or fail, and every op
// it reports must read back (or be faulty).
func FuzzRecoverMetadata(f *testing.F) {
	fsys, _ := journalOpsF(f)
	good, err := vfs.ReadFile(fsys, metaPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, uint16(len(good)), uint16(0))
	f.Add(good, uint16(300), uint16(5))
	f.Fuzz(func(t *testing.T, tail []byte, cut uint16, flip uint16) {
		img := vfs.NewFault(1)
		must(t, vfs.MkdirAllSync(img, "/m", 0o755))
		data := append([]byte{}, good[:min(int(cut), len(good))]...)
		data = append(data, tail...)
		if len(data) > 0 {
			data[int(flip)%len(data)] ^= 0x40
		}
		must(t, vfs.WriteFileAtomic(img, metaPath, data, 0o644))
		j, rep, err := OpenMetadata(img, "/m", MetadataOptions{})
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		for op := rep.First; op <= rep.Last && j.Len() > 0; op++ {
			if _, err := j.Read(op); err != nil && !errors.Is(err, ErrFaulty) {
				t.Fatalf("reported op %d unreadable: %v", op, err)
			}
		}
		next := j.Next()
		if next == 0 {
			next = 1
		}
		if err := j.Append(Bytes(next, []byte("after"))); err != nil && !errors.Is(err, ErrFull) {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}

func journalOpsF(f *testing.F) (*vfs.Fault, error) {
	fsys := vfs.NewFault(3)
	j, _, err := OpenMetadata(fsys, "/m", MetadataOptions{})
	if err != nil {
		return nil, err
	}
	for op := uint64(1); op <= 6; op++ {
		if err := j.Append(Bytes(op, content(op, 60, 0))); err != nil {
			return nil, err
		}
		if op%2 == 0 {
			if err := j.Sync(); err != nil {
				return nil, err
			}
		}
	}
	return fsys, j.Close()
}

// TestBeforeCut: recovery calls the hook with the torn tail before it cuts
// anything; a failing hook aborts the open and leaves every byte on disk, and
// a later open with a hook that succeeds cuts the same tail. A clean journal
// never calls the hook.
func TestBeforeCut(t *testing.T) {
	fsys, offs := journalOps(t, 3, 6, true)
	calls := 0
	clean := MetadataOptions{BeforeCut: func(*Torn) error { calls++; return nil }}
	j, rep := openMeta(t, fsys, clean)
	must(t, j.Close())
	if calls != 0 || rep.Torn != nil || rep.Last != 6 {
		t.Fatalf("clean journal: %d hook calls, %+v", calls, rep)
	}
	// Damage op 5: nothing after it promises it was synced, so it is torn.
	patch(t, fsys, metaPath, func(f vfs.File) {
		_, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, offs[5]+RecordHeaderSize+10)
		must(t, err)
	})
	sizeOf := func() int64 {
		f, err := fsys.OpenFile(metaPath, vfs.O_RDWR, 0)
		must(t, err)
		defer func() { _ = f.Close() }()
		n, err := f.Size()
		must(t, err)
		return n
	}
	before := sizeOf()
	boom := errors.New("fence write failed")
	var seen *Torn
	_, _, err := OpenMetadata(fsys, "/m", MetadataOptions{BeforeCut: func(tn *Torn) error { seen = tn; return boom }})
	if !errors.Is(err, boom) {
		t.Fatalf("open with a failing hook: %v", err)
	}
	if seen == nil || seen.Offset != offs[5] || seen.Dropped != 1 {
		t.Fatalf("hook saw %+v, want a tail from offset %d with 1 intact record dropped", seen, offs[5])
	}
	if got := sizeOf(); got != before {
		t.Fatalf("a failed hook let recovery cut the file: %d bytes, had %d", got, before)
	}
	j, rep = openMeta(t, fsys, clean)
	if calls != 1 || rep.Torn == nil || rep.Last != 4 || j.Last() != 4 {
		t.Fatalf("open after the hook succeeded: %d calls, %+v", calls, rep)
	}
	must(t, j.Close())
	if got := sizeOf(); got != offs[5] {
		t.Fatalf("tail not cut: %d bytes, want %d", got, offs[5])
	}

	// Partition journal: the hook runs before later files are removed.
	pfs := vfs.NewFault(7)
	popts := PartitionOptions{Budget: 1 << 20, FileSize: 1 << 10, MaxEntry: 4 << 10}
	pj, _ := openPart(t, pfs, popts)
	for op := uint64(1); op <= 12; op++ {
		must(t, pj.Append(Bytes(op, content(op, 300, 0))))
	}
	// No sync: a synced journal carries a sync marker, and damage it
	// covers is corruption (TestSyncMarker), not a torn tail.
	var names []string
	for _, f := range pj.files {
		names = append(names, f.path)
	}
	tornOff := pj.ents[pj.files[1].first-1].off
	must(t, pj.Close())
	if len(names) < 3 {
		t.Fatalf("only %d partition files", len(names))
	}
	// Tear the first record of the second file: that file and every later
	// one are the torn tail.
	patch(t, pfs, names[1], func(f vfs.File) {
		_, err := f.WriteAt([]byte{1, 2, 3, 4}, tornOff+RecordHeaderSize+5)
		must(t, err)
	})
	popts.BeforeCut = func(tn *Torn) error {
		seen = tn
		for _, n := range names {
			if _, err := pfs.Stat(n); err != nil {
				t.Errorf("%s gone before the hook ran: %v", n, err)
			}
		}
		return nil
	}
	seen = nil
	pj, prep := openPart(t, pfs, popts)
	defer func() { _ = pj.Close() }()
	if seen == nil || prep.Torn == nil || len(seen.Removed) != len(names)-1 {
		t.Fatalf("partition tail: hook saw %+v, report %+v", seen, prep)
	}
	for _, n := range names[1:] {
		if _, err := pfs.Stat(n); err == nil {
			t.Fatalf("%s kept after the cut", n)
		}
	}
}

// TestCompactThroughFaulty: compacting the metadata journal through a faulty
// op (a replica drops a corrupt entry its checkpoint covers) takes the link
// below the kept ops from the next record; before, it used the faulty op's
// unknown link and panicked (chaos seed 1033).
func TestCompactThroughFaulty(t *testing.T) {
	j, fsys := metaWithFaultyOp6(t)
	must(t, j.DiscardPrefix(6))
	if j.First() != 7 || j.Last() != 10 || len(j.Faulty()) != 0 {
		t.Fatalf("after discarding through the faulty op: %d..%d, faulty %v", j.First(), j.Last(), j.Faulty())
	}
	must(t, j.Append(Bytes(11, content(11, 200, 0))))
	must(t, j.Sync())
	must(t, j.Close())
	j2, rep := openMeta(t, fsys, MetadataOptions{})
	if rep.Torn != nil || len(rep.Faulty) != 0 || j2.First() != 7 || rep.Last != 11 {
		t.Fatalf("reopened: %+v, first %d", rep, j2.First())
	}
	for op := uint64(7); op <= 11; op++ {
		readOK(t, j2, op, content(op, 200, 0))
	}
}

// TestSyncMarker: a partition journal whose last appends were covered by
// one sync, with nothing appended after it, tells corruption among them
// from a torn tail by the sync marker written after the sync: a record
// damaged on the medium (bit rot) with intact records after it, or the
// last record damaged, is reported faulty and nothing after it is cut. If
// the marker itself never reached the disk (a power loss right after the
// sync), the damage carries no promise and is cut as a torn tail, the
// documented limit.
func TestSyncMarker(t *testing.T) {
	opts := PartitionOptions{Budget: 1 << 20, FileSize: 1 << 20, MaxEntry: 4 << 10}
	const n = 10
	build := func(t *testing.T) (*vfs.Fault, []int64) {
		fsys := vfs.NewFault(3)
		j, _ := openPart(t, fsys, opts)
		var offs []int64
		for op := uint64(1); op <= n; op++ {
			must(t, j.Append(Bytes(op, content(op, 300, 0))))
			offs = append(offs, j.ents[op-1].off)
		}
		must(t, j.Sync())
		must(t, j.Close())
		return fsys, offs
	}
	file := "/p/" + partitionFileName(1)
	check := func(t *testing.T, rep *Recovery, j *Journal, damaged uint64) {
		t.Helper()
		if rep.Torn != nil {
			t.Fatalf("damage of synced op %d cut as a torn tail: %+v", damaged, rep.Torn)
		}
		if len(rep.Faulty) != 1 || rep.Faulty[0].From > damaged || rep.Faulty[0].To < damaged || rep.Faulty[0].File != file {
			t.Fatalf("faulty %+v, want one run covering op %d in %s", rep.Faulty, damaged, file)
		}
		if j.Last() != n {
			t.Fatalf("journal ends at %d after recovery, want %d: acknowledged ops dropped", j.Last(), n)
		}
		f := rep.Faulty[0]
		for op := uint64(1); op <= n; op++ {
			if op < f.From || op > f.To {
				readOK(t, j, op, content(op, 300, 0))
			} else if _, err := j.Read(op); !errors.Is(err, ErrFaulty) {
				t.Fatalf("Read(%d) of a faulty op: %v", op, err)
			}
		}
	}
	t.Run("middle", func(t *testing.T) {
		fsys, offs := build(t)
		if !fsys.CorruptSector(file, offs[4]+RecordHeaderSize+100) {
			t.Fatal("op 5 not durable")
		}
		j, rep := openPart(t, fsys, opts)
		defer func() { _ = j.Close() }()
		check(t, rep, j, 5)
	})
	t.Run("last", func(t *testing.T) {
		fsys, offs := build(t)
		if !fsys.CorruptSector(file, offs[n-1]+RecordHeaderSize+250) {
			t.Fatal("op 10 not durable")
		}
		j, rep := openPart(t, fsys, opts)
		defer func() { _ = j.Close() }()
		check(t, rep, j, n)
		// The journal goes on after the faulty op once it is repaired.
		must(t, j.Repair(n, content(n, 300, 0)))
		must(t, j.Append(Bytes(n+1, content(n+1, 300, 0))))
		must(t, j.Sync())
		must(t, j.Close())
		j, rep = openPart(t, fsys, opts)
		if rep.Torn != nil || len(rep.Faulty) != 0 || j.Last() != n+1 {
			t.Fatalf("after repair and append: %+v", rep)
		}
		for op := uint64(1); op <= n+1; op++ {
			readOK(t, j, op, content(op, 300, 0))
		}
	})
	t.Run("marker lost", func(t *testing.T) {
		fsys, offs := build(t)
		fsys = fsys.CrashWith(vfs.CrashDropAll)
		if !fsys.CorruptSector(file, offs[4]+RecordHeaderSize+100) {
			t.Fatal("op 5 not durable")
		}
		j, rep := openPart(t, fsys, opts)
		defer func() { _ = j.Close() }()
		if rep.Torn == nil || len(rep.Faulty) != 0 || j.Last() >= 5 {
			t.Fatalf("without the marker: %+v, last %d; want the documented torn cut", rep, j.Last())
		}
	})
	t.Run("appended after", func(t *testing.T) {
		// An append after the sync overwrites the marker; its record
		// carries the promise instead.
		fsys, offs := build(t)
		j, _ := openPart(t, fsys, opts)
		must(t, j.Append(Bytes(n+1, content(n+1, 300, 0))))
		must(t, j.Close())
		if !fsys.CorruptSector(file, offs[4]+RecordHeaderSize+100) {
			t.Fatal("op 5 not durable")
		}
		j, rep := openPart(t, fsys, opts)
		defer func() { _ = j.Close() }()
		if rep.Torn != nil || len(rep.Faulty) != 1 || j.Last() != n+1 {
			t.Fatalf("with a later record: %+v, last %d", rep, j.Last())
		}
	})
}

// TestMisdirectedAppendOverMarker: an append that a misdirected write put
// elsewhere leaves the sync marker it should have overwritten in place.
// The marker written after that append's sync names the later op: the old
// marker is no clean end, and the lost (acknowledged) op is reported
// faulty, not silently forgotten (stack simulator seed 4002090).
func TestMisdirectedAppendOverMarker(t *testing.T) {
	opts := PartitionOptions{Budget: 1 << 20, FileSize: 1 << 20, MaxEntry: 4 << 10}
	file := "/p/" + partitionFileName(1)
	for _, by := range []int64{4096, -512} {
		fsys := vfs.NewFault(5)
		j, _ := openPart(t, fsys, opts)
		for op := uint64(1); op <= 10; op++ {
			must(t, j.Append(Bytes(op, content(op, 300, 0))))
		}
		must(t, j.Sync()) // writes the marker of op 10
		fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: file, Count: 1, Action: vfs.Misdirect, MisdirectBy: by})
		must(t, j.Append(Bytes(11, content(11, 300, 0))))
		must(t, j.Sync()) // acknowledged; the marker of op 11 lands where it belongs
		must(t, j.Close())

		j, rep := openPart(t, fsys, opts)
		if rep.Torn != nil || j.Last() != 11 || len(rep.Faulty) != 1 || rep.Faulty[0].To < 11 {
			t.Fatalf("misdirected by %d: last %d, %+v; want op 11 kept as faulty", by, j.Last(), rep)
		}
		if _, err := j.Read(11); !errors.Is(err, ErrFaulty) {
			t.Fatalf("misdirected by %d: Read(11): %v, want ErrFaulty", by, err)
		}
		for op := rep.Faulty[0].From; op <= 11; op++ {
			must(t, j.Repair(op, content(op, 300, 0)))
		}
		for op := uint64(1); op <= 11; op++ {
			readOK(t, j, op, content(op, 300, 0))
		}
		must(t, j.Close())
	}
}

// TestMisdirectedAppendLostMarker: as TestMisdirectedAppendOverMarker, but
// power is lost after the append's sync and before the marker written
// after it reached the disk. The old marker stays in place and the only
// trace of the synced (acknowledged) op is its record at the wrong offset:
// the old marker is no clean end, and the tail is reported torn (a cluster
// replica fences itself) instead of silently ending at the op before
// (stack simulator seed 600237).
func TestMisdirectedAppendLostMarker(t *testing.T) {
	opts := PartitionOptions{Budget: 1 << 20, FileSize: 1 << 20, MaxEntry: 4 << 10}
	file := "/p/" + partitionFileName(1)
	fsys := vfs.NewFault(5)
	j, _ := openPart(t, fsys, opts)
	for op := uint64(1); op <= 10; op++ {
		must(t, j.Append(Bytes(op, content(op, 300, 0))))
	}
	must(t, j.Sync()) // writes the marker of op 10
	fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: file, Count: 1, Action: vfs.Misdirect, MisdirectBy: 3072})
	must(t, j.Append(Bytes(11, content(11, 300, 0))))
	must(t, j.Sync()) // acknowledged; the marker of op 11 is not yet durable
	fsys = fsys.CrashWith(vfs.CrashDropAll)

	j, rep := openPart(t, fsys, opts)
	defer func() { _ = j.Close() }()
	if rep.Torn == nil && (len(rep.Faulty) == 0 || rep.Faulty[len(rep.Faulty)-1].To < 11) {
		t.Fatalf("last %d, %+v: the lost op 11 was forgotten without a torn or faulty report", j.Last(), rep)
	}
}
