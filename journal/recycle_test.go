package journal

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// recycleOpts: 300-byte entries make 396-byte records, eleven to a file
// (the eleventh crosses 4 KiB), so every incarnation of a file has its
// records at the same offsets: the stale records of a recycled file sit
// exactly where the next records are expected, the hardest case for
// recovery.
var recycleOpts = PartitionOptions{Budget: 32 << 10, FileSize: 4 << 10, MaxEntry: 1 << 10}

const recycleEntry = 300

// recycleSetup fills four files with ops 1..44, syncs, and discards through
// 33: the files of ops 1..11, 12..22 and 23..33 go to the pool, and the
// next append (op 45) rotates into the pooled file that held ops 1..11.
func recycleSetup(t *testing.T, fsys vfs.FS) *Journal {
	t.Helper()
	j, _ := openPart(t, fsys, recycleOpts)
	for op := uint64(1); op <= 44; op++ {
		must(t, j.Append(Bytes(op, content(op, recycleEntry, 1))))
	}
	must(t, j.Sync())
	if len(j.files) != 4 {
		t.Fatalf("setup: %d files, want 4", len(j.files))
	}
	must(t, j.DiscardPrefix(33))
	if len(j.pool) != 3 || len(j.files) != 1 || j.files[0].size < recycleOpts.FileSize {
		t.Fatalf("setup: pool %+v, %d files", j.pool, len(j.files))
	}
	return j
}

// dirNames lists /p, split into log files and pooled files.
func dirNames(t *testing.T, fsys vfs.FS) (logs, pool []string) {
	t.Helper()
	ents, err := fsys.ReadDir("/p")
	must(t, err)
	for _, e := range ents {
		switch {
		case strings.HasPrefix(e.Name(), "recycle-"):
			pool = append(pool, e.Name())
		default:
			logs = append(logs, e.Name())
		}
	}
	return logs, pool
}

// checkHeld: the journal holds exactly ops first..last, each with the bytes
// appended for it (salt), and nothing else.
func checkHeld(t *testing.T, j *Journal, first, last uint64, salt func(uint64) uint64) {
	t.Helper()
	if j.First() != first || j.Last() != last {
		t.Fatalf("journal holds %d..%d, want %d..%d", j.First(), j.Last(), first, last)
	}
	for op := first; op <= last; op++ {
		readOK(t, j, op, content(op, recycleEntry, salt(op)))
	}
}

func salt1(uint64) uint64 { return 1 }

// TestRecycleReusesFiles: after the first checkpoint, rotations take pooled
// files instead of creating new ones, the pool shrinks by one per rotation
// and refills at each discard, the number of files stays bounded, and a
// reopen after a process kill (every write kept) at any point finds a clean
// end (the end marker) rather than a torn tail, with the pool intact.
func TestRecycleReusesFiles(t *testing.T) {
	fsys := vfs.NewFault(1)
	opts := PartitionOptions{Budget: 64 << 10, FileSize: 4 << 10, MaxEntry: 2 << 10}
	j, _ := openPart(t, fsys, opts)
	rng := rand.New(rand.NewPCG(1, 2))
	model := map[uint64][]byte{}
	next, discarded := uint64(1), uint64(0)
	checkpoints, recycledRotations, reopens := 0, 0, 0
	maxFiles := 0
	var created uint64 // files created by earlier incarnations of j
	for step := 0; step < 3000; step++ {
		if j.CheckpointDue() {
			through := j.Last() - uint64(rng.IntN(3))
			must(t, j.DiscardPrefix(through))
			for op := discarded + 1; op <= through; op++ {
				delete(model, op)
			}
			discarded = through
			checkpoints++
			continue
		}
		// Unaligned sizes: an end of data rarely meets a stale record.
		b := content(next, 1+rng.IntN(1500), 3)
		files, pool, created, recycled := len(j.files), len(j.pool), j.created, j.recycled
		must(t, j.Append(Bytes(next, b)))
		model[next] = b
		next++
		if len(j.files) > files {
			if pool > 0 {
				if j.created != created || j.recycled != recycled+1 || len(j.pool) != pool-1 {
					t.Fatalf("step %d: rotation with %d pooled files created %d, recycled %d, pool now %d",
						step, pool, j.created-created, j.recycled-recycled, len(j.pool))
				}
				recycledRotations++
			}
		}
		if rng.IntN(4) == 0 {
			must(t, j.Sync())
		}
		logs, pooled := dirNames(t, fsys)
		if len(logs) != len(j.files) || len(pooled) != len(j.pool) {
			t.Fatalf("step %d: directory %v %v, journal %d files, pool %d", step, logs, pooled, len(j.files), len(j.pool))
		}
		maxFiles = max(maxFiles, len(logs)+len(pooled))
		if rng.IntN(50) == 0 {
			// A process kill: every write reached the kernel.
			pool := len(j.pool)
			created += j.created
			fsys = fsys.CrashWith(vfs.CrashKeepAll)
			var rep *Recovery
			j, rep = openPart(t, fsys, opts)
			if rep.Torn != nil || len(rep.Faulty) != 0 {
				t.Fatalf("step %d: reopen after a kill: torn %+v faulty %+v", step, rep.Torn, rep.Faulty)
			}
			if len(j.pool) != pool {
				t.Fatalf("step %d: pool of %d came back as %d", step, pool, len(j.pool))
			}
			if j.Len() > 0 {
				must(t, j.DiscardPrefix(discarded))
			}
			reopens++
		}
		for op, want := range model {
			readOK(t, j, op, want)
		}
		if j.Len() != len(model) {
			t.Fatalf("step %d: journal holds %d ops, model %d", step, j.Len(), len(model))
		}
	}
	if checkpoints < 5 || recycledRotations < 20 || reopens < 10 {
		t.Fatalf("%d checkpoints, %d recycled rotations, %d reopens: too few to test", checkpoints, recycledRotations, reopens)
	}
	// Files are created only while the pool is empty: the files ever
	// created, all still on disk, stay within the budget's count.
	bound := int(opts.Budget/opts.FileSize) + 2
	if created += j.created; int(created) > bound || maxFiles > bound {
		t.Fatalf("%d files created, up to %d on disk, bound %d", created, maxFiles, bound)
	}
}

// TestRecycleDisabled: a negative RecycleFiles removes retired files, and
// opening with a smaller pool trims the pooled files on disk.
func TestRecycleDisabled(t *testing.T) {
	fsys := vfs.NewFault(2)
	j := recycleSetup(t, fsys)
	must(t, j.Close())
	small := recycleOpts
	small.RecycleFiles = 1
	j, _ = openPart(t, fsys.CrashWith(vfs.CrashDropAll), small)
	if len(j.pool) != 1 {
		t.Fatalf("pool of %d with RecycleFiles 1", len(j.pool))
	}
	if _, pool := dirNames(t, j.fs); len(pool) != 1 {
		t.Fatalf("pooled files on disk %v", pool)
	}
	must(t, j.Close())
	off := recycleOpts
	off.RecycleFiles = -1
	fs2 := j.fs.(*vfs.Fault).CrashWith(vfs.CrashDropAll)
	j, _ = openPart(t, fs2, off)
	if _, pool := dirNames(t, fs2); len(pool) != 0 || len(j.pool) != 0 {
		t.Fatalf("pooled files %v with recycling off", pool)
	}
	for op := uint64(45); op <= 80; op++ {
		must(t, j.Append(Bytes(op, content(op, recycleEntry, 1))))
	}
	must(t, j.DiscardPrefix(70))
	if j.recycled != 0 || len(j.pool) != 0 {
		t.Fatalf("recycling off: %d recycled, pool %d", j.recycled, len(j.pool))
	}
	if _, pool := dirNames(t, fs2); len(pool) != 0 {
		t.Fatalf("pooled files %v with recycling off", pool)
	}
}

// TestRecycleCrashSteps cuts the power at every step of a rotation into a
// recycled file: the rename alone, the new header, part of the first
// record, a torn tail after intact records. Whatever the crash keeps,
// recovery holds exactly the acknowledged ops (1..44 synced before) plus
// intact unsynced ones of this incarnation, never a stale record, and never
// reports corruption. A rotation that left only the rename (the old header)
// is not even a torn tail.
func TestRecycleCrashSteps(t *testing.T) {
	const rec = RecordHeaderSize + recycleEntry
	cases := []struct {
		name   string
		n      int    // ops appended by the rotating append (45..)
		tearAt int    // bytes of its write to the new file that land
		last   uint64 // last op held after a crash that kept everything
		torn   bool
		tornAt int64
	}{
		{"rename", 1, 0, 44, false, 0},
		{"header", 1, FileHeaderSize, 44, true, FileHeaderSize},
		{"partial-record", 2, FileHeaderSize + rec/2, 44, true, FileHeaderSize},
		{"record-header-only", 2, FileHeaderSize + RecordHeaderSize, 44, true, FileHeaderSize},
		{"torn-tail", 4, FileHeaderSize + 2*rec + 150, 46, true, FileHeaderSize + 2*rec},
		{"torn-at-boundary", 4, FileHeaderSize + 3*rec, 47, true, FileHeaderSize + 3*rec},
		{"all-but-end-marker", 4, FileHeaderSize + 4*rec, 48, true, FileHeaderSize + 4*rec},
		{"all", 4, FileHeaderSize + 4*rec + RecordHeaderSize, 48, false, 0},
	}
	for _, c := range cases {
		for _, mode := range []vfs.CrashMode{vfs.CrashKeepAll, vfs.CrashDropAll, vfs.CrashRandom} {
			fsys := vfs.NewFault(uint64(len(c.name)) + uint64(mode))
			j := recycleSetup(t, fsys)
			target := filepath.Join("/p", partitionFileName(45))
			fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: target, Count: 1, Action: vfs.Halt, TearAt: c.tearAt})
			var ents []Entry
			for i := 0; i < c.n; i++ {
				op := uint64(45 + i)
				ents = append(ents, Bytes(op, content(op, recycleEntry, 2)))
			}
			err := j.Append(ents...)
			if !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("%s: append: %v", c.name, err)
			}
			if j.recycled != 1 {
				t.Fatalf("%s: the rotation did not recycle (%d created)", c.name, j.created)
			}
			img := fsys.CrashWith(mode)
			j2, rep, err := OpenPartition(img, "/p", recycleOpts)
			if err != nil {
				t.Fatalf("%s/%v: recovery: %v", c.name, mode, err)
			}
			if len(rep.Faulty) != 0 {
				t.Fatalf("%s/%v: a crash reported corruption %+v", c.name, mode, rep.Faulty)
			}
			salt := func(op uint64) uint64 {
				if op >= 45 {
					return 2
				}
				return 1
			}
			last := j2.Last()
			if last < 44 || last > c.last {
				t.Fatalf("%s/%v: holds up to %d, want 44..%d (torn %+v)", c.name, mode, last, c.last, rep.Torn)
			}
			checkHeld(t, j2, j2.First(), last, salt)
			if mode == vfs.CrashKeepAll {
				if last != c.last || (rep.Torn != nil) != c.torn {
					t.Fatalf("%s: holds up to %d (want %d), torn %+v (want %v)", c.name, last, c.last, rep.Torn, c.torn)
				}
				if c.torn {
					// Stale records after the damage are not log: not
					// dropped records either.
					wantFile := target
					if c.tornAt == FileHeaderSize {
						if len(rep.Torn.Removed) != 1 || rep.Torn.Removed[0] != target {
							t.Fatalf("%s: torn %+v, want %s removed", c.name, rep.Torn, target)
						}
					} else if rep.Torn.File != wantFile || rep.Torn.Offset != c.tornAt {
						t.Fatalf("%s: torn %+v, want a cut of %s at %d", c.name, rep.Torn, wantFile, c.tornAt)
					}
					if rep.Torn.Dropped != 0 {
						t.Fatalf("%s: %d records dropped after the tear: stale records counted as log", c.name, rep.Torn.Dropped)
					}
				}
			}
			// The recovered journal keeps working: append, sync, recover.
			next := j2.Last() + 1
			for op := next; op < next+30; op++ {
				must(t, j2.Append(Bytes(op, content(op, recycleEntry, 2))))
			}
			must(t, j2.Sync())
			j3, rep3, err := OpenPartition(img.CrashWith(vfs.CrashDropAll), "/p", recycleOpts)
			if err != nil || rep3.Torn != nil || len(rep3.Faulty) != 0 {
				t.Fatalf("%s/%v: second recovery: %v %+v", c.name, mode, err, rep3)
			}
			checkHeld(t, j3, j2.First(), next+29, salt)
		}
	}
}

// TestRecycleStaleOpsAboveFirst: even a pooled file whose records carry
// ops at and above the new file's first op (the pool invariant broken, here
// by a misnamed pooled file) never yields a stale entry: the stale
// records are told apart by their file stamp, so a clean end is clean and
// a torn record followed by an intact one over stale data is a torn tail,
// not corruption, although the stale records promise later syncs.
func TestRecycleStaleOpsAboveFirst(t *testing.T) {
	fsys := vfs.NewFault(3)
	// An old incarnation holding ops 61..71, synced.
	a, _, err := OpenPartition(fsys, "/a", recycleOpts)
	must(t, err)
	for op := uint64(61); op <= 71; op++ {
		must(t, a.Append(Bytes(op, content(op, recycleEntry, 9))))
		must(t, a.Sync())
	}
	must(t, a.Close())
	must(t, vfs.MkdirAllSync(fsys, "/p", 0o755))
	must(t, fsys.Rename(filepath.Join("/a", partitionFileName(61)), filepath.Join("/p", recycleFileName(0))))
	must(t, fsys.SyncDir("/p"))

	j, _ := openPart(t, fsys, recycleOpts)
	for op := uint64(1); op <= 5; op++ {
		must(t, j.Append(Bytes(op, content(op, recycleEntry, 2))))
	}
	must(t, j.Sync())
	if j.recycled != 1 {
		t.Fatalf("the misnamed file was not recycled")
	}
	salt := func(uint64) uint64 { return 2 }
	// A clean end over stale ops 66..71.
	img := fsys.CrashWith(vfs.CrashKeepAll)
	j2, rep, err := OpenPartition(img, "/p", recycleOpts)
	must(t, err)
	if rep.Torn != nil || len(rep.Faulty) != 0 {
		t.Fatalf("clean end over stale ops: torn %+v faulty %+v", rep.Torn, rep.Faulty)
	}
	checkHeld(t, j2, 1, 5, salt)
	// Ops 6 and 7 unsynced, op 6 torn: a torn tail, though op 7 is intact
	// and the stale records after it (ops 69..71, each written after the
	// sync of the op before) promise syncs up to op 70.
	must(t, j2.Append(Bytes(6, content(6, recycleEntry, 2)), Bytes(7, content(7, recycleEntry, 2))))
	must(t, j2.Close())
	f, err := img.OpenFile(filepath.Join("/p", partitionFileName(1)), vfs.O_RDWR, 0)
	must(t, err)
	off := int64(FileHeaderSize + 5*(RecordHeaderSize+recycleEntry) + RecordHeaderSize + 10)
	_, err = f.WriteAt([]byte{0xff, 0xfe, 0xfd}, off)
	must(t, err)
	// The end marker after op 7 did not land either: the stale records
	// after it are in reach of recovery.
	_, err = f.WriteAt([]byte{0xff, 0xfe, 0xfd}, FileHeaderSize+7*(RecordHeaderSize+recycleEntry)+30)
	must(t, err)
	must(t, f.Close())
	j3, rep, err := OpenPartition(img, "/p", recycleOpts)
	must(t, err)
	if len(rep.Faulty) != 0 || rep.Torn == nil || rep.Torn.Dropped != 1 {
		t.Fatalf("torn op over stale ops: torn %+v faulty %+v", rep.Torn, rep.Faulty)
	}
	checkHeld(t, j3, 1, 5, salt)
}

// TestRecycleCorruptionDetected: damage in the middle of a recycled file,
// covered by later sync promises, is still reported faulty (not cut as a
// torn tail, not hidden by the stale bytes after the data) and repairs.
func TestRecycleCorruptionDetected(t *testing.T) {
	for victim := uint64(46); victim <= 52; victim++ {
		fsys := vfs.NewFault(victim)
		j := recycleSetup(t, fsys)
		for op := uint64(45); op <= 52; op++ {
			must(t, j.Append(Bytes(op, content(op, recycleEntry, 2))))
		}
		must(t, j.Sync())
		// Promise carriers: written after the sync of 45..52.
		for op := uint64(53); op <= 54; op++ {
			must(t, j.Append(Bytes(op, content(op, recycleEntry, 2))))
		}
		must(t, j.Sync())
		if j.recycled != 1 || j.files[len(j.files)-1].phys <= j.files[len(j.files)-1].size {
			t.Fatalf("setup: not a recycled file with stale bytes after the data")
		}
		img := fsys.CrashWith(vfs.CrashDropAll)
		off := int64(FileHeaderSize) + int64(victim-45)*(RecordHeaderSize+recycleEntry) + RecordHeaderSize + 100
		if !img.CorruptSector(filepath.Join("/p", partitionFileName(45)), off) {
			t.Fatalf("corrupting %d", off)
		}
		j2, rep, err := OpenPartition(img, "/p", recycleOpts)
		must(t, err)
		if rep.Torn != nil || len(rep.Faulty) != 1 || rep.Faulty[0].From > victim || rep.Faulty[0].To < victim ||
			!rep.Faulty[0].Repairable {
			t.Fatalf("victim %d: torn %+v faulty %+v", victim, rep.Torn, rep.Faulty)
		}
		if j2.Last() != 54 {
			t.Fatalf("victim %d: holds up to %d", victim, j2.Last())
		}
		for op := rep.Faulty[0].From; op <= rep.Faulty[0].To; op++ {
			must(t, j2.Repair(op, content(op, recycleEntry, 2)))
		}
		must(t, j2.Sync())
		j3, rep, err := OpenPartition(img.CrashWith(vfs.CrashDropAll), "/p", recycleOpts)
		must(t, err)
		if rep.Torn != nil || len(rep.Faulty) != 0 {
			t.Fatalf("victim %d after repair: %+v", victim, rep)
		}
		checkHeld(t, j3, j3.First(), 54, func(op uint64) uint64 {
			if op >= 45 {
				return 2
			}
			return 1
		})
	}
}

// TestRecycleDiscardCrash cuts the power in the directory sync of a
// DiscardPrefix that pools files: with the renames lost the files come back
// under their log names holding the discarded ops (the caller discards
// again and they are pooled then); with the renames kept they are pooled.
// Either way nothing acknowledged is lost and nothing is reported torn.
func TestRecycleDiscardCrash(t *testing.T) {
	for _, mode := range []vfs.CrashMode{vfs.CrashKeepAll, vfs.CrashDropAll, vfs.CrashRandom} {
		fsys := vfs.NewFault(uint64(mode) + 10)
		j, _ := openPart(t, fsys, recycleOpts)
		for op := uint64(1); op <= 44; op++ {
			must(t, j.Append(Bytes(op, content(op, recycleEntry, 1))))
		}
		must(t, j.Sync())
		fsys.Inject(vfs.Rule{Ops: vfs.OpSyncDir, Count: 1, Action: vfs.Halt})
		if err := j.DiscardPrefix(33); !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("discard: %v", err)
		}
		img := fsys.CrashWith(mode)
		j2, rep, err := OpenPartition(img, "/p", recycleOpts)
		must(t, err)
		if rep.Torn != nil || len(rep.Faulty) != 0 {
			t.Fatalf("%v: torn %+v faulty %+v", mode, rep.Torn, rep.Faulty)
		}
		logs, pool := dirNames(t, img)
		if len(logs)+len(pool) != 4 || len(pool) != len(j2.pool) {
			t.Fatalf("%v: files %v pool %v (journal pool %d)", mode, logs, pool, len(j2.pool))
		}
		if mode == vfs.CrashKeepAll && (len(pool) != 3 || j2.First() != 34) {
			t.Fatalf("kill: pool %v, first %d", pool, j2.First())
		}
		if mode == vfs.CrashDropAll && (len(pool) != 0 || j2.First() != 1) {
			t.Fatalf("power loss: pool %v, first %d", pool, j2.First())
		}
		checkHeld(t, j2, j2.First(), 44, salt1)
		must(t, j2.DiscardPrefix(33))
		if len(j2.pool) != 3 || j2.First() != 34 {
			t.Fatalf("%v: after discarding again: pool %d, first %d", mode, len(j2.pool), j2.First())
		}
		for op := uint64(45); op <= 60; op++ {
			must(t, j2.Append(Bytes(op, content(op, recycleEntry, 1))))
		}
		must(t, j2.Sync())
		if j2.recycled != 2 || j2.created != 0 {
			t.Fatalf("%v: rotation after recovery: %d recycled, %d created", mode, j2.recycled, j2.created)
		}
		j3, rep, err := OpenPartition(img.CrashWith(vfs.CrashDropAll), "/p", recycleOpts)
		must(t, err)
		if rep.Torn != nil || len(rep.Faulty) != 0 {
			t.Fatalf("%v: second recovery: %+v", mode, rep)
		}
		checkHeld(t, j3, 34, 60, salt1)
	}
}
