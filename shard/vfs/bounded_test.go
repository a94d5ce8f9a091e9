package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
)

// countingFS counts the inner descriptors open at once, to check Bounded's
// target from below.
type countingFS struct {
	FS
	mu         sync.Mutex
	open, peak int
}

type countingFile struct {
	File
	c *countingFS
}

func (c *countingFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.open++
	c.peak = max(c.peak, c.open)
	c.mu.Unlock()
	return &countingFile{f, c}, nil
}

func (f *countingFile) Close() error {
	f.c.mu.Lock()
	f.c.open--
	f.c.mu.Unlock()
	return f.File.Close()
}

// Submit unwraps the files for the inner filesystem, which checks whose
// files a batch names.
func (c *countingFS) Submit(b *Batch) error {
	var in Batch
	for _, w := range b.Writes() {
		in.WritevAt(w.File.(*countingFile).File, w.Bufs, w.Off)
	}
	for _, f := range b.Syncs() {
		in.Datasync(f.(*countingFile).File)
	}
	for _, d := range b.Dirs() {
		in.SyncDir(d)
	}
	return c.FS.Submit(&in)
}

func newBoundedFault(t *testing.T, limit int) (*Bounded, *Fault, *countingFS) {
	t.Helper()
	f := NewFault(1)
	must(t, MkdirAllSync(f, "/d", 0o755))
	c := &countingFS{FS: f}
	return NewBounded(c, limit), f, c
}

// Forty files through three descriptors: every write, batch and read sees
// its own file, and no more than three are ever open underneath.
func TestBoundedManyFilesFewDescriptors(t *testing.T) {
	b, _, c := newBoundedFault(t, 3)
	const n = 40
	files := make([]File, n)
	for i := range files {
		f, err := b.OpenFile(fmt.Sprintf("/d/f%02d", i), O_RDWR|O_CREATE|O_EXCL, 0o644)
		must(t, err)
		files[i] = f
		if _, err := f.WriteAt([]byte(fmt.Sprintf("first %02d;", i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	// One batch naming every file (more than the target): all land.
	var batch Batch
	for i, f := range files {
		batch.WriteAt(f, []byte(fmt.Sprintf("second %02d", i)), 9)
		batch.Datasync(f)
	}
	must(t, b.Submit(&batch))
	for round := 0; round < 3; round++ {
		for i, f := range files {
			got := make([]byte, 18)
			if _, err := f.ReadAt(got, 0); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("first %02d;second %02d", i, i); string(got) != want {
				t.Fatalf("file %d holds %q, want %q", i, got, want)
			}
		}
	}
	st := b.Stats()
	if st.Open > 3 || st.Closes == 0 || st.Reopens == 0 {
		t.Fatalf("stats %+v: want at most 3 open, closes and reopens", st)
	}
	// The batch held all forty at once (Over counts it); outside it the
	// peak is the target.
	if st.Over == 0 || c.peak != n {
		t.Fatalf("a batch of %d files: peak %d, over %d", n, c.peak, st.Over)
	}
	for _, f := range files {
		must(t, f.Close())
	}
	if st := b.Stats(); st.Open != 0 || c.open != 0 {
		t.Fatalf("after closing every file: %+v, %d open underneath", st, c.open)
	}
}

// A file closed underneath with unsynced writes loses nothing: the
// Datasync through its reopened descriptor makes the writes durable.
func TestBoundedSyncAfterReopenIsDurable(t *testing.T) {
	b, f, _ := newBoundedFault(t, 1)
	a, err := b.OpenFile("/d/a", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	must(t, b.SyncDir("/d"))
	if _, err := a.WriteAt([]byte("unsynced then evicted"), 0); err != nil {
		t.Fatal(err)
	}
	other, err := b.OpenFile("/d/b", O_RDWR|O_CREATE, 0o644) // closes a underneath
	must(t, err)
	if st := b.Stats(); st.Closes != 1 {
		t.Fatalf("a was not closed underneath: %+v", st)
	}
	must(t, a.Datasync())
	must(t, other.Close())
	img := f.CrashWith(CrashDropAll)
	got, err := ReadFile(img, "/d/a")
	must(t, err)
	if string(got) != "unsynced then evicted" {
		t.Fatalf("after the crash a holds %q", got)
	}
}

// Renames carry closed-underneath files to their new names, files and
// whole directories alike; a removed or replaced name stays readable
// through the file opened on it.
func TestBoundedNamesFollowTheInode(t *testing.T) {
	b, _, _ := newBoundedFault(t, 1)
	must(t, b.MkdirAll("/d/stage", 0o755))
	write := func(name, s string) File {
		f, err := b.OpenFile(name, O_RDWR|O_CREATE|O_TRUNC, 0o644)
		must(t, err)
		if _, err := f.WriteAt([]byte(s), 0); err != nil {
			t.Fatal(err)
		}
		return f
	}
	read := func(f File) string {
		t.Helper()
		got := readAll(t, f)
		return string(got)
	}
	inDir := write("/d/stage/seg", "segment")
	moved := write("/d/x", "moved")
	victim := write("/d/y", "replaced")
	removed := write("/d/z", "removed")
	gone := write("/d/stage2", "placeholder")
	must(t, gone.Close())
	must(t, b.Remove("/d/stage2"))

	must(t, b.Rename("/d/x", "/d/y")) // victim's name is replaced
	must(t, b.Rename("/d/stage", "/d/stage2"))
	must(t, b.Remove("/d/z"))
	_ = write("/d/filler", "filler") // closes whatever can be closed

	if s := read(moved); s != "moved" {
		t.Fatalf("renamed file reads %q", s)
	}
	if _, err := moved.WriteAt([]byte("MOVED"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(b, "/d/y"); err != nil || string(got) != "MOVED" {
		t.Fatalf("/d/y holds %q, %v: the write went elsewhere", got, err)
	}
	if s := read(victim); s != "replaced" {
		t.Fatalf("file whose name was replaced reads %q", s)
	}
	if s := read(removed); s != "removed" {
		t.Fatalf("removed file reads %q", s)
	}
	if _, err := inDir.WriteAt([]byte("SEG"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(b, "/d/stage2/seg"); err != nil || string(got) != "SEGment" {
		t.Fatalf("/d/stage2/seg holds %q, %v", got, err)
	}
	if _, err := b.Stat("/d/stage/seg"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("old directory still there: %v", err)
	}
	// RemoveAll keeps the tree's open files readable.
	must(t, b.RemoveAll("/d/stage2"))
	_ = write("/d/filler2", "filler")
	if s := read(inDir); s != "SEGment" {
		t.Fatalf("file of a removed tree reads %q", s)
	}
}

// Hints do not reopen a file closed underneath; on a file the caller
// closed they fail like every call.
func TestBoundedHintsDoNotReopen(t *testing.T) {
	b, _, _ := newBoundedFault(t, 1)
	a, err := b.OpenFile("/d/a", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	if _, err := a.WriteAt(bytes.Repeat([]byte{1}, 4096), 0); err != nil {
		t.Fatal(err)
	}
	o, err := b.OpenFile("/d/b", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	opens := b.Stats().Opens
	must(t, a.Writeback(0, 4096))
	must(t, a.Release(0, 4096))
	StartSync(a)
	var batch Batch
	batch.Writeback(a, 0, 4096)
	batch.Release(a, 0, 4096)
	must(t, b.Submit(&batch))
	if st := b.Stats(); st.Opens != opens {
		t.Fatalf("hints reopened a: %+v (opens were %d)", st, opens)
	}
	must(t, o.Close())
	must(t, a.Close())
	if err := a.Release(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Release after Close: %v", err)
	}
}

// A batch's failures keep the batch's own indices, whatever files had to
// be reopened, and a file of another filesystem is refused by name.
func TestBoundedSubmitFailureIndices(t *testing.T) {
	b, f, _ := newBoundedFault(t, 2)
	var files []File
	for i := 0; i < 5; i++ {
		g, err := b.OpenFile(fmt.Sprintf("/d/f%d", i), O_RDWR|O_CREATE, 0o644)
		must(t, err)
		files = append(files, g)
	}
	f.Inject(Rule{Ops: OpWrite, Path: "/d/f3"})
	f.Inject(Rule{Ops: OpSync, Path: "/d/f1"})
	foreign, err := NewFault(2).OpenFile("/x", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	var batch Batch
	for _, g := range files {
		batch.WriteAt(g, []byte("x"), 0)
	}
	batch.WriteAt(foreign, []byte("x"), 0)
	for _, g := range files {
		batch.Datasync(g)
	}
	err = b.Submit(&batch)
	var be *BatchError
	if !errors.As(err, &be) {
		t.Fatalf("Submit: %v", err)
	}
	want := map[[2]int]bool{{int(BatchOpWrite), 3}: true, {int(BatchOpWrite), 5}: true, {int(BatchOpSync), 1}: true}
	if len(be.Failures) != len(want) {
		t.Fatalf("failures %v, want %v", be.Failures, want)
	}
	for _, fl := range be.Failures {
		if !want[[2]int{int(fl.Op), fl.Index}] {
			t.Fatalf("unexpected failure %+v", fl)
		}
	}
	if !errors.Is(err, errForeign) {
		t.Fatalf("the foreign file's failure is not errForeign: %v", err)
	}
}

// Goroutines each using their own files, more files than descriptors: no
// race, no lost write (go test -race).
func TestBoundedConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	b := NewBounded(NewOS(), 4)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []File
			for i := 0; i < 4; i++ {
				f, err := b.OpenFile(filepath.Join(dir, fmt.Sprintf("g%d-%d", g, i)), O_RDWR|O_CREATE, 0o644)
				if err != nil {
					errs <- err
					return
				}
				mine = append(mine, f)
			}
			for round := 0; round < 50; round++ {
				for i, f := range mine {
					p := []byte{byte(g), byte(i), byte(round)}
					if _, err := f.WriteAt(p, int64(round)*3); err != nil {
						errs <- err
						return
					}
					got := make([]byte, 3)
					if _, err := f.ReadAt(got, int64(round)*3); err != nil || !bytes.Equal(got, p) {
						errs <- fmt.Errorf("g%d file %d round %d: %v %v", g, i, round, got, err)
						return
					}
				}
			}
			for _, f := range mine {
				if err := f.Close(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Open != 0 || st.Closes == 0 {
		t.Fatalf("stats %+v", st)
	}
}
