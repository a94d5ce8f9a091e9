package vfs

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"testing"
)

func newFaultDir(t *testing.T, seed uint64) *Fault {
	t.Helper()
	f := NewFault(seed)
	must(t, MkdirAllSync(f, "/d", 0o755))
	return f
}

func fileBytes(t *testing.T, f FS, name string) ([]byte, bool) {
	t.Helper()
	b, err := ReadFile(f, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	must(t, err)
	return b, true
}

func writeString(t *testing.T, f File, s string, off int64) {
	t.Helper()
	if _, err := f.WriteAt([]byte(s), off); err != nil {
		t.Fatal(err)
	}
}

func TestFaultCrashModes(t *testing.T) {
	fsys := newFaultDir(t, 1)
	f, err := fsys.OpenFile("/d/a", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	writeString(t, f, "synced", 0)
	must(t, f.Datasync())
	must(t, fsys.SyncDir("/d"))
	writeString(t, f, "+unsynced", 6)

	keep := fsys.CrashWith(CrashKeepAll)
	if got, _ := fileBytes(t, keep, "/d/a"); string(got) != "synced+unsynced" {
		t.Fatalf("KeepAll: %q", got)
	}
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("write to a crashed image: %v", err)
	}
	// The image is itself usable and crashable; what it holds counts as
	// durable.
	drop := keep.CrashWith(CrashDropAll)
	if got, _ := fileBytes(t, drop, "/d/a"); string(got) != "synced+unsynced" {
		t.Fatalf("image contents not durable: %q", got)
	}

	g, err := drop.OpenFile("/d/a", O_RDWR, 0)
	must(t, err)
	writeString(t, g, "ZZ", 0)
	writeString(t, g, "tail", 15)
	if d, ok := drop.Durable("/d/a"); !ok || string(d) != "synced+unsynced" {
		t.Fatalf("Durable: %q %v", d, ok)
	}
	after := drop.CrashWith(CrashDropAll)
	if got, _ := fileBytes(t, after, "/d/a"); string(got) != "synced+unsynced" {
		t.Fatalf("DropAll kept unsynced data: %q", got)
	}
}

func TestFaultDirectoryDurability(t *testing.T) {
	fsys := newFaultDir(t, 2)
	// Created and data-synced, but the name was never synced.
	f, err := fsys.OpenFile("/d/new", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	writeString(t, f, "data", 0)
	must(t, f.Datasync())
	if _, ok := fileBytes(t, fsys.CrashWith(CrashKeepAll), "/d/new"); !ok {
		t.Fatal("KeepAll lost a created name")
	}

	fsys = newFaultDir(t, 2)
	f, _ = fsys.OpenFile("/d/new", O_RDWR|O_CREATE, 0o644)
	writeString(t, f, "data", 0)
	must(t, f.Datasync())
	if _, ok := fileBytes(t, fsys.CrashWith(CrashDropAll), "/d/new"); ok {
		t.Fatal("an unsynced directory entry survived DropAll")
	}

	// A directory made without syncing its parent takes its synced
	// children with it.
	fsys = NewFault(3)
	must(t, fsys.MkdirAll("/p/q", 0o755))
	must(t, fsys.SyncDir("/p/q"))
	must(t, fsys.SyncDir("/p"))
	f, _ = fsys.OpenFile("/p/q/x", O_RDWR|O_CREATE, 0o644)
	writeString(t, f, "x", 0)
	must(t, f.Datasync())
	must(t, fsys.SyncDir("/p/q"))
	img := fsys.CrashWith(CrashDropAll)
	if _, err := img.Stat("/p"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("/p survived although / was never synced: %v", err)
	}
	if _, err := img.Stat("/p/q/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("orphan survived: %v", err)
	}
}

func TestFaultRenameAtomic(t *testing.T) {
	sawOld, sawNew := false, false
	for seed := uint64(0); seed < 200; seed++ {
		fsys := newFaultDir(t, seed)
		must(t, WriteFileAtomic(fsys, "/d/target", []byte("old"), 0o644))
		tmp, err := fsys.OpenFile("/d/target.tmp", O_RDWR|O_CREATE|O_TRUNC, 0o644)
		must(t, err)
		writeString(t, tmp, "new", 0)
		must(t, tmp.Sync())
		must(t, fsys.Rename("/d/target.tmp", "/d/target"))
		img := fsys.Crash()
		got, ok := fileBytes(t, img, "/d/target")
		if !ok {
			t.Fatalf("seed %d: the rename target vanished", seed)
		}
		switch string(got) {
		case "old":
			sawOld = true
		case "new":
			sawNew = true
		default:
			t.Fatalf("seed %d: target holds %q", seed, got)
		}
		// After SyncDir the rename is durable whatever happens.
		fsys = newFaultDir(t, seed)
		must(t, WriteFileAtomic(fsys, "/d/target", []byte("old"), 0o644))
		must(t, WriteFileAtomic(fsys, "/d/target", []byte("new"), 0o644))
		if got, _ := fileBytes(t, fsys.Crash(), "/d/target"); string(got) != "new" {
			t.Fatalf("seed %d: synced rename lost: %q", seed, got)
		}
	}
	if !sawOld || !sawNew {
		t.Fatalf("random crashes never produced both outcomes (old %v, new %v)", sawOld, sawNew)
	}
}

// TestFaultCrashAppendProperty checks, over many seeds, that a random crash
// of an append-only file keeps every synced byte, invents no bytes, and
// exercises all outcomes (nothing kept, everything kept, torn).
func TestFaultCrashAppendProperty(t *testing.T) {
	outcomes := map[string]int{}
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		fsys := newFaultDir(t, seed)
		f, err := fsys.OpenFile("/d/log", O_RDWR|O_CREATE, 0o644)
		must(t, err)
		must(t, fsys.SyncDir("/d"))
		var all []byte
		synced := 0
		for i, n := 0, 1+rng.IntN(8); i < n; i++ {
			p := make([]byte, 1+rng.IntN(1500))
			for j := range p {
				p[j] = byte(1 + rng.IntN(255)) // never zero, so zeros are holes
			}
			writeString(t, f, string(p), int64(len(all)))
			all = append(all, p...)
			if rng.IntN(3) == 0 {
				must(t, f.Datasync())
				synced = len(all)
			}
		}
		got, ok := fileBytes(t, fsys.Crash(), "/d/log")
		if !ok {
			t.Fatalf("seed %d: synced file vanished", seed)
		}
		if len(got) < synced || len(got) > len(all) {
			t.Fatalf("seed %d: %d bytes after crash, synced %d, written %d", seed, len(got), synced, len(all))
		}
		if !bytes.Equal(got[:synced], all[:synced]) {
			t.Fatalf("seed %d: synced prefix damaged", seed)
		}
		holes := false
		for i := synced; i < len(got); i++ {
			if got[i] != all[i] {
				if got[i] != 0 {
					t.Fatalf("seed %d: byte %d is %d, neither written (%d) nor a hole", seed, i, got[i], all[i])
				}
				holes = true
			}
		}
		switch {
		case len(all) == synced:
			outcomes["all synced"]++
		case len(got) == synced:
			outcomes["dropped"]++
		case len(got) == len(all) && !holes:
			outcomes["kept"]++
		default:
			outcomes["torn"]++
		}
	}
	for _, o := range []string{"dropped", "kept", "torn"} {
		if outcomes[o] == 0 {
			t.Fatalf("outcome %q never happened: %v", o, outcomes)
		}
	}
}

func TestFaultDeterministic(t *testing.T) {
	run := func(seed uint64) []byte {
		fsys := newFaultDir(t, seed)
		f, _ := fsys.OpenFile("/d/x", O_RDWR|O_CREATE, 0o644)
		must(t, fsys.SyncDir("/d"))
		for i := 0; i < 20; i++ {
			writeString(t, f, string(bytes.Repeat([]byte{byte('a' + i)}, 700)), int64(i*700))
		}
		got, _ := fileBytes(t, fsys.Crash(), "/d/x")
		return got
	}
	differs := false
	for seed := uint64(0); seed < 20; seed++ {
		a, b := run(seed), run(seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d gave two different crash images", seed)
		}
		if !bytes.Equal(a, run(seed+1000)) {
			differs = true
		}
	}
	if !differs {
		t.Fatal("different seeds always gave the same image")
	}
}

func TestFaultInjectRules(t *testing.T) {
	fsys := newFaultDir(t, 4)
	f, err := fsys.OpenFile("/d/a", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	id := fsys.Inject(Rule{Ops: OpSync, After: 2, Count: 1})
	must(t, f.Datasync())
	must(t, f.Datasync())
	if err := f.Datasync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("third sync: %v", err)
	}
	must(t, f.Datasync())
	if fsys.Fired(id) != 1 {
		t.Fatalf("rule fired %d times", fsys.Fired(id))
	}
	fsys.RemoveRule(id)

	// Path filter: only /d/b fails.
	fsys.Inject(Rule{Ops: OpWrite, Path: "/d/b"})
	b, err := fsys.OpenFile("/d/b", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	if _, err := b.WriteAt([]byte("x"), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("write to /d/b: %v", err)
	}
	if size, _ := b.Size(); size != 0 {
		t.Fatal("a failed write had an effect")
	}
	writeString(t, f, "fine", 0)
	fsys.ClearRules()

	// Probability: deterministic per seed, and roughly as asked.
	count := func(seed uint64) int {
		g := newFaultDir(t, seed)
		g.Inject(Rule{Ops: OpStat, Prob: 0.25})
		n := 0
		for i := 0; i < 1000; i++ {
			if _, err := g.Stat("/d"); err != nil {
				n++
			}
		}
		return n
	}
	if a, b := count(5), count(5); a != b || a < 150 || a > 350 {
		t.Fatalf("probabilistic failures: %d and %d of 1000 at p=0.25", a, b)
	}

	// Tear: the first 5 bytes land, the call fails, a crash that keeps
	// unsynced data keeps exactly those.
	fsys.Inject(Rule{Ops: OpWrite, Action: Tear, TearAt: 5, Count: 1})
	must(t, f.Truncate(0))
	must(t, f.Datasync())
	if _, err := f.WriteAt([]byte("0123456789"), 0); !errors.Is(err, ErrInjected) {
		t.Fatalf("torn write: %v", err)
	}
	if got := readAll(t, f); string(got) != "01234" {
		t.Fatalf("after torn write: %q", got)
	}
	if got, _ := fileBytes(t, fsys.CrashWith(CrashKeepAll), "/d/a"); string(got) != "01234" {
		t.Fatalf("torn write after crash: %q", got)
	}
}

func TestFaultCorruptSector(t *testing.T) {
	fsys := newFaultDir(t, 6)
	f, _ := fsys.OpenFile("/d/c", O_RDWR|O_CREATE, 0o644)
	must(t, fsys.SyncDir("/d"))
	orig := bytes.Repeat([]byte{0xAA}, 4*DefaultSector)
	writeString(t, f, string(orig), 0)
	if fsys.CorruptSector("/d/c", 10) {
		t.Fatal("corrupted data that was never synced")
	}
	must(t, f.Datasync())
	if !fsys.CorruptSector("/d/c", int64(2*DefaultSector+7)) {
		t.Fatal("CorruptSector refused a synced offset")
	}
	got := readAll(t, f)
	for i := range got {
		inSector := i >= 2*DefaultSector && i < 3*DefaultSector
		if got[i] != orig[i] && !inSector {
			t.Fatalf("byte %d outside the corrupted sector changed", i)
		}
	}
	if bytes.Equal(got, orig) {
		t.Fatal("corruption changed nothing")
	}
	img := fsys.CrashWith(CrashDropAll)
	if after, _ := fileBytes(t, img, "/d/c"); !bytes.Equal(after, got) {
		t.Fatal("corruption is not on the durable medium")
	}
	if off := img.CorruptRandom("/d/c"); off < 0 || off%DefaultSector != 0 {
		t.Fatalf("CorruptRandom offset %d", off)
	}
}

func TestFaultRemoveAllAndDirRename(t *testing.T) {
	fsys := newFaultDir(t, 7)
	must(t, MkdirAllSync(fsys, "/d/x/y", 0o755))
	must(t, WriteFileAtomic(fsys, "/d/x/y/f", []byte("f"), 0o644))
	must(t, fsys.Rename("/d/x", "/d/z"))
	must(t, fsys.SyncDir("/d"))
	img := fsys.CrashWith(CrashDropAll)
	if got, ok := fileBytes(t, img, "/d/z/y/f"); !ok || string(got) != "f" {
		t.Fatalf("renamed directory contents: %q %v", got, ok)
	}
	must(t, img.RemoveAll("/d/z"))
	must(t, img.SyncDir("/d"))
	img2 := img.CrashWith(CrashDropAll)
	if _, err := img2.Stat("/d/z/y/f"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RemoveAll + SyncDir not durable: %v", err)
	}
	if len(img.mlog) != 0 {
		t.Fatalf("directory log not compacted: %d entries", len(img.mlog))
	}
}

// TestFaultWriteback: the fault filesystem records hints and gives them no
// durability: a strict power loss drops hinted, unsynced data.
func TestFaultWriteback(t *testing.T) {
	fsys := newFaultDir(t, 7)
	f, err := fsys.OpenFile("/d/seg", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	writeString(t, f, "synced", 0)
	must(t, f.Datasync())
	must(t, fsys.SyncDir("/d"))
	writeString(t, f, "+hinted", 6)
	must(t, f.Writeback(6, 7))
	var b Batch
	b.WriteAt(f, []byte("+more"), 13)
	b.Writeback(f, 13, 5)
	must(t, fsys.Submit(&b))
	if st := fsys.Writebacks("/d/seg"); st.Calls != 2 || st.Bytes != 12 || st.End != 18 {
		t.Fatalf("recorded hints: %+v", st)
	}
	if st := fsys.Writebacks("/d/other"); st != (WritebackStats{}) {
		t.Fatalf("hints recorded for a file never hinted: %+v", st)
	}
	if d, _ := fsys.Durable("/d/seg"); string(d) != "synced" {
		t.Fatalf("a hint made data durable: %q", d)
	}
	after := fsys.CrashWith(CrashDropAll)
	if got, _ := fileBytes(t, after, "/d/seg"); string(got) != "synced" {
		t.Fatalf("power loss kept hinted, unsynced data: %q", got)
	}
	if err := f.Writeback(0, 1); !errors.Is(err, ErrInjected) {
		t.Fatalf("hint on a crashed image: %v", err)
	}
}

// A misdirected write reports success, leaves the intended range as it was
// and lands whole elsewhere in the file, never before offset 0.
func TestFaultMisdirect(t *testing.T) {
	f := newFaultDir(t, 7)
	sec := f.Sector()
	h, err := f.OpenFile("/d/f", O_CREATE|O_RDWR, 0o644)
	must(t, err)
	old := bytes.Repeat([]byte{'o'}, 4*sec)
	_, err = h.WriteAt(old, 0)
	must(t, err)
	must(t, h.Datasync())

	id := f.Inject(Rule{Ops: OpWrite, Count: 1, Action: Misdirect, MisdirectBy: int64(2 * sec)})
	fresh := bytes.Repeat([]byte{'n'}, sec)
	n, err := h.WriteAt(fresh, int64(sec))
	if err != nil || n != sec {
		t.Fatalf("misdirected write: n=%d err=%v, want %d, nil", n, err, sec)
	}
	if f.Fired(id) != 1 {
		t.Fatalf("rule fired %d times, want 1", f.Fired(id))
	}
	got, _ := fileBytes(t, f, "/d/f")
	if !bytes.Equal(got[sec:2*sec], old[:sec]) {
		t.Fatal("the intended range changed")
	}
	if !bytes.Equal(got[3*sec:4*sec], fresh) {
		t.Fatal("the write did not land MisdirectBy bytes away")
	}

	// Random distance: always a whole number of sectors away, never at the
	// intended offset, never before 0.
	for i := 0; i < 50; i++ {
		f.Inject(Rule{Ops: OpWrite, Count: 1, Action: Misdirect})
		before, _ := fileBytes(t, f, "/d/f")
		mark := []byte{byte(0x80 + i)}
		_, err := h.WriteAt(bytes.Repeat(mark, sec), 0)
		must(t, err)
		after, _ := fileBytes(t, f, "/d/f")
		if !bytes.Equal(after[:sec], before[:sec]) {
			t.Fatalf("round %d: offset 0 was written", i)
		}
		at := bytes.Index(after, bytes.Repeat(mark, sec))
		if at <= 0 || at%sec != 0 {
			t.Fatalf("round %d: landed at %d, want a positive multiple of %d", i, at, sec)
		}
		f.ClearRules()
	}
}
