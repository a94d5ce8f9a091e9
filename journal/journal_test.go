package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func content(op uint64, n int, salt uint64) []byte {
	rng := rand.New(rand.NewPCG(op, salt))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// split cuts b into up to three parts, so appends are vectored.
func split(rng *rand.Rand, op uint64, b []byte) Entry {
	if len(b) < 2 || rng.IntN(2) == 0 {
		return Bytes(op, b)
	}
	i := rng.IntN(len(b))
	j := i + rng.IntN(len(b)-i+1)
	return Entry{Op: op, Parts: [][]byte{b[:i], b[i:j], b[j:]}}
}

func openMeta(t testing.TB, fsys vfs.FS, opts MetadataOptions) (*Journal, *Recovery) {
	t.Helper()
	j, rep, err := OpenMetadata(fsys, "/m", opts)
	must(t, err)
	return j, rep
}

func openPart(t testing.TB, fsys vfs.FS, opts PartitionOptions) (*Journal, *Recovery) {
	t.Helper()
	j, rep, err := OpenPartition(fsys, "/p", opts)
	must(t, err)
	return j, rep
}

func readOK(t testing.TB, j *Journal, op uint64, want []byte) {
	t.Helper()
	got, err := j.Read(op)
	if err != nil {
		t.Fatalf("Read(%d): %v", op, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Read(%d): %d bytes differ from the %d appended", op, len(got), len(want))
	}
}

func TestChecksumStreamingMatchesOneShot(t *testing.T) {
	b := content(1, 5000, 1)
	if Checksum(b) != Checksum(b[:100], b[100:4000], nil, b[4000:]) {
		t.Fatal("multi-part checksum differs from the one-shot checksum")
	}
}

func TestMetadataBasic(t *testing.T) {
	fsys := vfs.NewFault(1)
	j, rep := openMeta(t, fsys, MetadataOptions{})
	if rep.Torn != nil || len(rep.Faulty) != 0 || j.Len() != 0 || j.Next() != 0 {
		t.Fatalf("fresh journal: %+v, len %d, next %d", rep, j.Len(), j.Next())
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var ents []Entry
	for op := uint64(1); op <= 10; op++ {
		ents = append(ents, split(rng, op, content(op, int(op*37), 0)))
	}
	must(t, j.Append(ents[:3]...))
	must(t, j.Append(ents[3:]...))
	if err := j.Append(Bytes(12, []byte("x"))); !errors.Is(err, ErrOp) {
		t.Fatalf("gap append: %v", err)
	}
	if j.Synced() != 0 {
		t.Fatalf("synced %d before any sync", j.Synced())
	}
	must(t, j.Sync())
	if j.Synced() != 10 || j.First() != 1 || j.Last() != 10 {
		t.Fatalf("synced %d, ops %d..%d", j.Synced(), j.First(), j.Last())
	}
	for op := uint64(1); op <= 10; op++ {
		readOK(t, j, op, content(op, int(op*37), 0))
	}
	var seen []uint64
	must(t, j.Iterate(4, func(op uint64, e []byte) error {
		seen = append(seen, op)
		return nil
	}))
	if len(seen) != 7 || seen[0] != 4 {
		t.Fatalf("Iterate visited %v", seen)
	}
	if _, err := j.Read(11); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Read past end: %v", err)
	}
	img := fsys.CrashWith(vfs.CrashDropAll)
	j2, rep := openMeta(t, img, MetadataOptions{})
	if rep.Torn != nil || len(rep.Faulty) != 0 || rep.First != 1 || rep.Last != 10 {
		t.Fatalf("recovery %+v", rep)
	}
	for op := uint64(1); op <= 10; op++ {
		readOK(t, j2, op, content(op, int(op*37), 0))
	}
	must(t, j2.Append(Bytes(11, []byte("eleven"))))
	must(t, j2.Sync())
}

func TestMetadataCapacityAndCheckpoint(t *testing.T) {
	fsys := vfs.NewFault(2)
	must(t, vfs.MkdirAllSync(fsys, "/m", 0o755))
	sb, err := superblock.Format(fsys, "/m", superblock.State{ReplicaCount: 1})
	must(t, err)
	opts := MetadataOptions{Slots: 32, CheckpointMargin: 8}
	j, _ := openMeta(t, fsys, opts)
	op := uint64(1)
	for ; !j.CheckpointDue(); op++ {
		must(t, j.Append(Bytes(op, content(op, 50, 0))))
	}
	if op-1 != 32-8+1 {
		t.Fatalf("checkpoint due after op %d, want %d", op-1, 32-8+1)
	}
	for ; op <= 32; op++ {
		must(t, j.Append(Bytes(op, content(op, 50, 0))))
	}
	if err := j.Append(Bytes(33, []byte("x"))); !errors.Is(err, ErrFull) {
		t.Fatalf("append past slots: %v", err)
	}
	must(t, j.Sync())
	snap := []byte("state machine at op 30")
	must(t, Checkpoint(j, sb, "/m", 30, snap))
	if j.First() != 31 || j.Last() != 32 || j.CheckpointDue() {
		t.Fatalf("after checkpoint: %d..%d due %v", j.First(), j.Last(), j.CheckpointDue())
	}
	for op = 33; op <= 40; op++ {
		must(t, j.Append(Bytes(op, content(op, 50, 0))))
	}
	must(t, j.Sync())

	img := fsys.CrashWith(vfs.CrashDropAll)
	s, err := ReadSnapshot(img, "/m")
	must(t, err)
	sb2, err := superblock.Open(img, "/m", superblock.Uint128{}, 0)
	must(t, err)
	if s.Op != 30 || !bytes.Equal(s.Data, snap) || sb2.State().CheckpointOp != 30 ||
		sb2.State().CheckpointChecksum != (superblock.Uint128{Hi: s.Checksum.Hi, Lo: s.Checksum.Lo}) {
		t.Fatalf("snapshot op %d, superblock %+v", s.Op, sb2.State())
	}
	j2, rep := openMeta(t, img, opts)
	if rep.First != 31 || rep.Last != 40 || rep.Torn != nil || len(rep.Faulty) != 0 {
		t.Fatalf("after reopen: %+v", rep)
	}
	for op = 31; op <= 40; op++ {
		readOK(t, j2, op, content(op, 50, 0))
	}
	// Discarding everything leaves an empty journal that continues at 41.
	must(t, j2.DiscardPrefix(40))
	if j2.Len() != 0 || j2.Next() != 41 {
		t.Fatalf("after discarding all: len %d next %d", j2.Len(), j2.Next())
	}
	j3, rep := openMeta(t, img.CrashWith(vfs.CrashDropAll), opts)
	if j3.Next() != 41 || rep.Last != 40 {
		t.Fatalf("empty compacted journal reopened: next %d, %+v", j3.Next(), rep)
	}
	must(t, j3.Append(Bytes(41, []byte("41"))))
}

func TestPartitionRotationDiscardBudget(t *testing.T) {
	fsys := vfs.NewFault(3)
	opts := PartitionOptions{Budget: 64 << 10, FileSize: 4 << 10, MaxEntry: 8 << 10}
	j, _ := openPart(t, fsys, opts)
	op := uint64(100)
	for ; !j.CheckpointDue(); op++ {
		must(t, j.Append(Bytes(op, content(op, 1000, 0))))
	}
	must(t, j.Sync())
	names := func(f vfs.FS) []string {
		ents, err := f.ReadDir("/p")
		must(t, err)
		var out []string
		for _, e := range ents {
			if _, ok := parsePartitionFileName(e.Name()); ok {
				out = append(out, e.Name())
			}
		}
		return out
	}
	files := names(fsys)
	if len(files) < 4 || files[0] != "00000000000000000100.wal" {
		t.Fatalf("files %v", files)
	}
	last := op - 1
	for {
		err := j.Append(Bytes(op, content(op, 1000, 0)))
		if errors.Is(err, ErrFull) {
			break
		}
		must(t, err)
		op++
	}
	if j.Bytes() > opts.Budget {
		t.Fatalf("journal holds %d bytes, budget %d", j.Bytes(), opts.Budget)
	}
	last = op - 1
	must(t, j.Sync())
	// Every name is the first op its file holds.
	img := fsys.CrashWith(vfs.CrashDropAll)
	j2, rep := openPart(t, img, opts)
	if rep.First != 100 || rep.Last != last || rep.Torn != nil || len(rep.Faulty) != 0 {
		t.Fatalf("reopen: %+v (last %d)", rep, last)
	}
	for o := uint64(100); o <= last; o++ {
		readOK(t, j2, o, content(o, 1000, 0))
	}
	before := len(names(img))
	must(t, j2.DiscardPrefix(130))
	after := names(img)
	if len(after) >= before || j2.First() != 131 {
		t.Fatalf("discard: %d files -> %v, first %d, due %v", before, after, j2.First(), j2.CheckpointDue())
	}
	// Files removed are durably gone; ops <= 130 left in the first kept
	// file may reappear (the caller discards them again after open).
	img2 := img.CrashWith(vfs.CrashDropAll)
	j3, rep := openPart(t, img2, opts)
	if rep.First > 131 || rep.Last != last {
		t.Fatalf("after discard and crash: %+v", rep)
	}
	must(t, j3.DiscardPrefix(130))
	if j3.First() != 131 || !j3.CheckpointDue() {
		t.Fatalf("first %d, due %v", j3.First(), j3.CheckpointDue())
	}
	must(t, j3.DiscardPrefix(last-3))
	if j3.CheckpointDue() {
		t.Fatalf("checkpoint still due with %d bytes", j3.Bytes())
	}
	must(t, j3.DiscardPrefix(last+5))
	if j3.Len() != 0 || j3.Next() != last+6 || len(names(img2.CrashWith(vfs.CrashKeepAll))) != 0 {
		t.Fatalf("discard past the end: len %d next %d", j3.Len(), j3.Next())
	}
}

func TestTruncateFrom(t *testing.T) {
	for _, kind := range []string{"metadata", "partition"} {
		t.Run(kind, func(t *testing.T) {
			fsys := vfs.NewFault(4)
			open := func(f vfs.FS) *Journal {
				if kind == "metadata" {
					j, _ := openMeta(t, f, MetadataOptions{})
					return j
				}
				j, _ := openPart(t, f, PartitionOptions{Budget: 1 << 20, FileSize: 2 << 10, MaxEntry: 4 << 10})
				return j
			}
			j := open(fsys)
			for op := uint64(1); op <= 30; op++ {
				must(t, j.Append(Bytes(op, content(op, 300, 0))))
			}
			must(t, j.Sync())
			eff, err := j.TruncateFrom(12)
			must(t, err)
			if eff != 12 || j.Last() != 11 || j.Synced() != 11 {
				t.Fatalf("truncate: eff %d last %d synced %d", eff, j.Last(), j.Synced())
			}
			for op := uint64(12); op <= 20; op++ {
				must(t, j.Append(Bytes(op, content(op, 200, 1))))
			}
			// Truncation is durable on return; the new suffix is not.
			img := fsys.CrashWith(vfs.CrashDropAll)
			j2 := open(img)
			if j2.Last() != 11 {
				t.Fatalf("after crash: last %d", j2.Last())
			}
			for op := uint64(12); op <= 20; op++ {
				must(t, j2.Append(Bytes(op, content(op, 200, 2))))
			}
			must(t, j2.Sync())
			j3 := open(img.CrashWith(vfs.CrashDropAll))
			for op := uint64(1); op <= 11; op++ {
				readOK(t, j3, op, content(op, 300, 0))
			}
			for op := uint64(12); op <= 20; op++ {
				readOK(t, j3, op, content(op, 200, 2))
			}
			if eff, err := j3.TruncateFrom(1); err != nil || eff != 1 || j3.Len() != 0 || j3.Next() != 1 {
				t.Fatalf("truncate all: %d %v len %d next %d", eff, err, j3.Len(), j3.Next())
			}
			must(t, j3.Append(Bytes(1, []byte("again"))))
			must(t, j3.Sync())
		})
	}
}

func TestGroupCommitAcrossJournals(t *testing.T) {
	fsys := vfs.NewFault(5)
	var js []*Journal
	for i := 0; i < 4; i++ {
		j, _, err := OpenPartition(fsys, fmt.Sprintf("/p%d", i), PartitionOptions{Budget: 1 << 20, FileSize: 1 << 10, MaxEntry: 4 << 10})
		must(t, err)
		js = append(js, j)
	}
	var b vfs.Batch
	var tickets []SyncTicket
	for i, j := range js {
		for op := uint64(1); op <= 5; op++ {
			must(t, j.Append(Bytes(op, content(op, 400, uint64(i)))))
		}
		tickets = append(tickets, j.SyncTo(&b))
	}
	// Each journal rotated (1 KiB files), so each needs its files synced
	// once and its directory once.
	if len(b.Dirs()) != 4 {
		t.Fatalf("batch syncs %d directories, want 4", len(b.Dirs()))
	}
	must(t, fsys.Submit(&b))
	// A truncation between the submission and SyncDone voids that
	// ticket's promise for the truncated journal.
	if _, err := js[3].TruncateFrom(3); err != nil {
		t.Fatal(err)
	}
	for i, j := range js {
		j.SyncDone(tickets[i])
	}
	for i, j := range js[:3] {
		if j.Synced() != 5 {
			t.Fatalf("journal %d synced %d", i, j.Synced())
		}
	}
	if js[3].Synced() != 2 {
		t.Fatalf("truncated journal synced %d, want 2", js[3].Synced())
	}
	img := fsys.CrashWith(vfs.CrashDropAll)
	for i := 0; i < 3; i++ {
		j, rep, err := OpenPartition(img, fmt.Sprintf("/p%d", i), PartitionOptions{Budget: 1 << 20, FileSize: 1 << 10, MaxEntry: 4 << 10})
		must(t, err)
		if rep.Last != 5 {
			t.Fatalf("journal %d after crash: %+v", i, rep)
		}
		readOK(t, j, 5, content(5, 400, uint64(i)))
	}
}

func TestAppendLimits(t *testing.T) {
	fsys := vfs.NewFault(6)
	j, _ := openPart(t, fsys, PartitionOptions{Budget: 64 << 10, MaxEntry: 1 << 10})
	if err := j.Append(Bytes(1, make([]byte, 1025))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized entry: %v", err)
	}
	if err := j.Append(Bytes(1, nil), Bytes(3, nil)); !errors.Is(err, ErrOp) {
		t.Fatalf("non-consecutive batch: %v", err)
	}
	if _, _, err := OpenPartition(fsys, "/q", PartitionOptions{Budget: 1000, MaxEntry: 1 << 10}); err == nil {
		t.Fatal("a budget below two entries was accepted")
	}
	// A failed write poisons the journal.
	fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Count: 1})
	if err := j.Append(Bytes(1, []byte("a"))); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("failing append: %v", err)
	}
	if err := j.Append(Bytes(1, []byte("a"))); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after failure: %v", err)
	}
}

func TestSnapshotRoundTripAndDamage(t *testing.T) {
	fsys := vfs.NewFault(7)
	must(t, vfs.MkdirAllSync(fsys, "/m", 0o755))
	if _, err := ReadSnapshot(fsys, "/m"); !errors.Is(err, ErrNoSnapshot) {
		t.Fatalf("missing snapshot: %v", err)
	}
	data := content(9, 3000, 9)
	sum, err := WriteSnapshot(fsys, "/m", 77, data)
	must(t, err)
	img := fsys.CrashWith(vfs.CrashDropAll)
	s, err := ReadSnapshot(img, "/m")
	must(t, err)
	if s.Op != 77 || s.Checksum != sum || !bytes.Equal(s.Data, data) {
		t.Fatalf("snapshot read back: op %d", s.Op)
	}
	img.CorruptSector(filepath.Join("/m", SnapshotFile), 1000)
	if _, err := ReadSnapshot(img, "/m"); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
}
