package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// impl is one filesystem under test. mk returns a filesystem and an empty
// directory to work in; clamp, when not nil, must be installed so that
// every write system call appears to write at most what clamp returns
// (implementations without system calls ignore it).
type impl struct {
	name string
	mk   func(t *testing.T, clamp func(int) int) (FS, string)
}

func implementations() []impl {
	impls := []impl{
		{"portable", func(t *testing.T, clamp func(int) int) (FS, string) {
			return &OS{clamp: clamp}, t.TempDir()
		}},
		{"fault", func(t *testing.T, _ func(int) int) (FS, string) {
			f := NewFault(uint64(len(t.Name())))
			if err := MkdirAllSync(f, "/data", 0o755); err != nil {
				t.Fatal(err)
			}
			return f, "/data"
		}},
	}
	impls = append(impls, ringImpls()...)
	// Each implementation again behind Bounded holding one descriptor, so
	// that every case runs with files closed and reopened underneath.
	for _, im := range impls[:len(impls):len(impls)] {
		impls = append(impls, impl{"bounded_" + im.name, func(t *testing.T, clamp func(int) int) (FS, string) {
			fsys, dir := im.mk(t, clamp)
			return NewBounded(fsys, 1), dir
		}})
	}
	return impls
}

// TestConformance runs the same contract checks against every
// implementation.
func TestConformance(t *testing.T) {
	for _, im := range implementations() {
		t.Run(im.name, func(t *testing.T) {
			for _, c := range conformanceCases {
				t.Run(c.name, func(t *testing.T) {
					fsys, dir := im.mk(t, nil)
					c.run(t, fsys, dir)
				})
			}
			t.Run("partial_writes", func(t *testing.T) {
				// Every system call reports at most 1000 bytes (and never
				// more than it wrote), so large vectored writes need many
				// resubmissions that start mid-buffer.
				shortened := 0
				fsys, dir := im.mk(t, func(n int) int {
					if n > 1000 {
						shortened++
						return 1000
					}
					return n
				})
				checkWritev(t, fsys, dir, 3000, 7)
				checkBigWrite(t, fsys, dir)
				under := fsys
				if b, ok := fsys.(*Bounded); ok {
					under = b.Inner()
				}
				if _, ok := under.(*Fault); !ok && shortened == 0 {
					t.Fatal("no write completion was shortened: the resubmission path did not run")
				}
			})
		})
	}
}

type confCase struct {
	name string
	run  func(t *testing.T, fsys FS, dir string)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, fsys FS, name string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, O_RDWR|O_CREATE, 0o644)
	must(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func readAll(t *testing.T, f File) []byte {
	t.Helper()
	size, err := f.Size()
	must(t, err)
	buf := make([]byte, size)
	if n, err := f.ReadAt(buf, 0); n != len(buf) || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("ReadAt whole file: %d of %d bytes, %v", n, len(buf), err)
	}
	return buf
}

// checkWritev writes nbufs random buffers (some empty) at an offset and
// checks the file holds exactly them.
func checkWritev(t *testing.T, fsys FS, dir string, nbufs int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	f := create(t, fsys, filepath.Join(dir, "writev"))
	var bufs [][]byte
	var want []byte
	for i := 0; i < nbufs; i++ {
		b := make([]byte, rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	const off = 100
	keep := make([][]byte, len(bufs))
	copy(keep, bufs)
	n, err := f.WritevAt(bufs, off)
	must(t, err)
	if n != len(want) {
		t.Fatalf("WritevAt returned %d, want %d", n, len(want))
	}
	for i := range bufs {
		if !bytes.Equal(bufs[i], keep[i]) {
			t.Fatalf("WritevAt modified the caller's buffer slice at %d", i)
		}
	}
	got := readAll(t, f)
	if len(got) != off+len(want) || !bytes.Equal(got[off:], want) || !bytes.Equal(got[:off], make([]byte, off)) {
		t.Fatalf("file holds %d bytes, want %d zero bytes then the %d written", len(got), off, len(want))
	}
}

func checkBigWrite(t *testing.T, fsys FS, dir string) {
	t.Helper()
	f := create(t, fsys, filepath.Join(dir, "big"))
	p := make([]byte, 3<<20+17)
	for i := range p {
		p[i] = byte(i * 7)
	}
	n, err := f.WriteAt(p, 5)
	must(t, err)
	if n != len(p) {
		t.Fatalf("WriteAt returned %d, want %d", n, len(p))
	}
	got := make([]byte, len(p))
	if n, err := f.ReadAt(got, 5); n != len(p) || (err != nil && !errors.Is(err, io.EOF)) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	if !bytes.Equal(got, p) {
		t.Fatal("big write read back differently")
	}
}

var conformanceCases = []confCase{
	{"write_read", func(t *testing.T, fsys FS, dir string) {
		f := create(t, fsys, filepath.Join(dir, "a"))
		if n, err := f.WriteAt([]byte("hello world"), 0); err != nil || n != 11 {
			t.Fatalf("WriteAt: %d, %v", n, err)
		}
		if _, err := f.WriteAt([]byte("WORLD"), 6); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 11)
		if n, err := f.ReadAt(buf, 0); n != 11 || (err != nil && !errors.Is(err, io.EOF)) {
			t.Fatalf("ReadAt: %d, %v", n, err)
		}
		if string(buf) != "hello WORLD" {
			t.Fatalf("read %q", buf)
		}
		// Reading past the end gives what exists and io.EOF.
		buf = make([]byte, 8)
		n, err := f.ReadAt(buf, 6)
		if n != 5 || !errors.Is(err, io.EOF) || string(buf[:n]) != "WORLD" {
			t.Fatalf("ReadAt past end: %d %q %v", n, buf[:n], err)
		}
		if n, err := f.ReadAt(buf, 100); n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt beyond end: %d %v", n, err)
		}
		// Writing past the end leaves a hole of zeros.
		if _, err := f.WriteAt([]byte("x"), 20); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, f)
		if !bytes.Equal(got, append([]byte("hello WORLD\x00\x00\x00\x00\x00\x00\x00\x00\x00"), 'x')) {
			t.Fatalf("after hole write: %q", got)
		}
		if f.Name() != filepath.Join(dir, "a") {
			t.Fatalf("Name = %q", f.Name())
		}
	}},
	{"writev_over_1024", func(t *testing.T, fsys FS, dir string) {
		checkWritev(t, fsys, dir, 2500, 3)
	}},
	{"writev_empty", func(t *testing.T, fsys FS, dir string) {
		f := create(t, fsys, filepath.Join(dir, "e"))
		n, err := f.WritevAt([][]byte{nil, {}, nil}, 0)
		if n != 0 || err != nil {
			t.Fatalf("empty WritevAt: %d, %v", n, err)
		}
		if size, _ := f.Size(); size != 0 {
			t.Fatalf("size %d after empty write", size)
		}
	}},
	{"big_write", func(t *testing.T, fsys FS, dir string) {
		checkBigWrite(t, fsys, dir)
	}},
	{"truncate_size", func(t *testing.T, fsys FS, dir string) {
		f := create(t, fsys, filepath.Join(dir, "t"))
		if _, err := f.WriteAt(bytes.Repeat([]byte{7}, 100), 0); err != nil {
			t.Fatal(err)
		}
		must(t, f.Truncate(40))
		if s, err := f.Size(); err != nil || s != 40 {
			t.Fatalf("size after shrink: %d, %v", s, err)
		}
		must(t, f.Truncate(60))
		got := readAll(t, f)
		want := append(bytes.Repeat([]byte{7}, 40), make([]byte, 20)...)
		if !bytes.Equal(got, want) {
			t.Fatalf("after extend: %v", got)
		}
		st, err := fsys.Stat(filepath.Join(dir, "t"))
		must(t, err)
		if st.Size() != 60 || st.IsDir() || st.Name() != "t" {
			t.Fatalf("Stat: size %d dir %v name %q", st.Size(), st.IsDir(), st.Name())
		}
	}},
	{"open_flags", func(t *testing.T, fsys FS, dir string) {
		name := filepath.Join(dir, "o")
		if _, err := fsys.OpenFile(name, O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("open missing: %v", err)
		}
		f := create(t, fsys, name)
		if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.OpenFile(name, O_RDWR|O_CREATE|O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("O_EXCL on existing: %v", err)
		}
		g, err := fsys.OpenFile(name, O_RDWR|O_TRUNC, 0)
		must(t, err)
		defer g.Close()
		if s, _ := g.Size(); s != 0 {
			t.Fatalf("size after O_TRUNC: %d", s)
		}
		// Both handles see the same file.
		if s, _ := f.Size(); s != 0 {
			t.Fatalf("other handle sees size %d", s)
		}
		r, err := fsys.OpenFile(name, O_RDONLY, 0)
		must(t, err)
		defer r.Close()
		if _, err := r.WriteAt([]byte("x"), 0); err == nil {
			t.Fatal("write through a read-only handle succeeded")
		}
		if _, err := fsys.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat missing: %v", err)
		}
	}},
	{"rename_remove", func(t *testing.T, fsys FS, dir string) {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		fa := create(t, fsys, a)
		if _, err := fa.WriteAt([]byte("A"), 0); err != nil {
			t.Fatal(err)
		}
		fb := create(t, fsys, b)
		if _, err := fb.WriteAt([]byte("BB"), 0); err != nil {
			t.Fatal(err)
		}
		must(t, fsys.Rename(a, b))
		if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("old name after rename: %v", err)
		}
		got, err := ReadFile(fsys, b)
		must(t, err)
		if string(got) != "A" {
			t.Fatalf("renamed file holds %q", got)
		}
		if err := fsys.Rename(a, b); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("rename missing: %v", err)
		}
		must(t, fsys.Remove(b))
		if err := fsys.Remove(b); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("remove missing: %v", err)
		}
		sub := filepath.Join(dir, "sub", "deeper")
		must(t, fsys.MkdirAll(sub, 0o755))
		create(t, fsys, filepath.Join(sub, "f")).Close()
		if err := fsys.Remove(filepath.Join(dir, "sub")); err == nil {
			t.Fatal("removing a non-empty directory succeeded")
		}
		must(t, fsys.RemoveAll(filepath.Join(dir, "sub")))
		if _, err := fsys.Stat(sub); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("after RemoveAll: %v", err)
		}
		must(t, fsys.RemoveAll(filepath.Join(dir, "never")))
	}},
	{"readdir", func(t *testing.T, fsys FS, dir string) {
		for _, n := range []string{"c", "a", "b"} {
			create(t, fsys, filepath.Join(dir, n)).Close()
		}
		must(t, fsys.MkdirAll(filepath.Join(dir, "d", "e"), 0o755))
		ents, err := fsys.ReadDir(dir)
		must(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			if (e.Name() == "d") != e.IsDir() {
				t.Fatalf("%s IsDir = %v", e.Name(), e.IsDir())
			}
		}
		if len(names) != 4 || names[0] != "a" || names[1] != "b" || names[2] != "c" || names[3] != "d" {
			t.Fatalf("ReadDir names %v", names)
		}
		if _, err := fsys.ReadDir(filepath.Join(dir, "nope")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("ReadDir missing: %v", err)
		}
		st, err := fsys.Stat(filepath.Join(dir, "d"))
		must(t, err)
		if !st.IsDir() {
			t.Fatal("Stat of a directory says it is not one")
		}
	}},
	{"sync", func(t *testing.T, fsys FS, dir string) {
		f := create(t, fsys, filepath.Join(dir, "s"))
		if _, err := f.WriteAt([]byte("durable"), 0); err != nil {
			t.Fatal(err)
		}
		must(t, f.Datasync())
		must(t, f.Sync())
		must(t, fsys.SyncDir(dir))
		if err := fsys.SyncDir(filepath.Join(dir, "missing")); err == nil {
			t.Fatal("SyncDir of a missing directory succeeded")
		}
	}},
	{"writeback", func(t *testing.T, fsys FS, dir string) {
		// A hint succeeds on written, unwritten and empty ranges, changes
		// no contents, and refuses a negative range and a closed file.
		f := create(t, fsys, filepath.Join(dir, "w"))
		data := bytes.Repeat([]byte("hint"), 64<<10)
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		must(t, f.Writeback(0, int64(len(data))))
		must(t, f.Writeback(4096, 8192))
		must(t, f.Writeback(int64(len(data)), 1<<20))
		must(t, f.Writeback(0, 0))
		if err := f.Writeback(-1, 10); err == nil {
			t.Fatal("Writeback at a negative offset succeeded")
		}
		// In a batch: the hint covers the write the same batch carries
		// and runs after it; a hint never fails the batch.
		var b Batch
		tail := []byte("tail")
		b.WriteAt(f, tail, int64(len(data)))
		b.Writeback(f, int64(len(data)), int64(len(tail)))
		b.Writeback(f, 0, 0) // empty: not queued
		b.Datasync(f)
		if len(b.Hints()) != 1 || b.Empty() {
			t.Fatalf("batch holds %d hints", len(b.Hints()))
		}
		must(t, fsys.Submit(&b))
		got := readAll(t, f)
		if !bytes.Equal(got[:len(data)], data) || string(got[len(data):]) != "tail" {
			t.Fatal("contents changed around a writeback hint")
		}
		b.Reset()
		if !b.Empty() || len(b.Hints()) != 0 {
			t.Fatal("Reset kept hints")
		}
		// Only a hint in the batch: still submitted, still no error.
		b.Writeback(f, 0, int64(len(got)))
		b.StartSync(f)
		must(t, fsys.Submit(&b))
		// A background sync changes nothing either, batched or not, and
		// is harmless on a closed file.
		StartSync(f)
		if got2 := readAll(t, f); !bytes.Equal(got2, got) {
			t.Fatal("contents changed around a background sync")
		}
		must(t, f.Close())
		StartSync(f)
		if err := f.Writeback(0, 1); err == nil {
			t.Fatal("Writeback on a closed file succeeded")
		}
	}},
	{"close", func(t *testing.T, fsys FS, dir string) {
		f, err := fsys.OpenFile(filepath.Join(dir, "c"), O_RDWR|O_CREATE, 0o644)
		must(t, err)
		must(t, f.Close())
		if _, err := f.WriteAt([]byte("x"), 0); err == nil {
			t.Fatal("write after Close succeeded")
		}
		if err := f.Close(); err == nil {
			t.Fatal("second Close succeeded")
		}
	}},
	{"batch", func(t *testing.T, fsys FS, dir string) {
		var b Batch
		var files []File
		for i := 0; i < 8; i++ {
			files = append(files, create(t, fsys, filepath.Join(dir, string(rune('a'+i)))))
		}
		// 4 KB writes to 8 files, several per file, one sync per file.
		for round := 0; round < 3; round++ {
			for i, f := range files {
				p := bytes.Repeat([]byte{byte(i*16 + round)}, 4096)
				b.WriteAt(f, p, int64(round*4096))
				b.Datasync(f)
			}
		}
		b.WritevAt(files[0], [][]byte{[]byte("x"), []byte("yz")}, 3*4096)
		b.SyncDir(dir)
		b.SyncDir(dir + "/")
		if len(b.Syncs()) != 8 || len(b.Dirs()) != 1 || len(b.Writes()) != 25 {
			t.Fatalf("batch holds %d writes, %d syncs, %d dirs", len(b.Writes()), len(b.Syncs()), len(b.Dirs()))
		}
		must(t, fsys.Submit(&b))
		for i, f := range files {
			got := readAll(t, f)
			for round := 0; round < 3; round++ {
				if !bytes.Equal(got[round*4096:(round+1)*4096], bytes.Repeat([]byte{byte(i*16 + round)}, 4096)) {
					t.Fatalf("file %d round %d wrong", i, round)
				}
			}
		}
		if got := readAll(t, files[0]); string(got[3*4096:]) != "xyz" {
			t.Fatalf("vectored batch write: %q", got[3*4096:])
		}
		b.Reset()
		if !b.Empty() {
			t.Fatal("Reset left the batch non-empty")
		}
		// A batch with a failing directory sync reports it.
		b.SyncDir(filepath.Join(dir, "missing"))
		err := fsys.Submit(&b)
		var be *BatchError
		if !errors.As(err, &be) || !be.Failed(BatchOpSyncDir, 0) {
			t.Fatalf("failing batch: %v", err)
		}
	}},
	{"helpers", func(t *testing.T, fsys FS, dir string) {
		deep := filepath.Join(dir, "x", "y", "z")
		must(t, MkdirAllSync(fsys, deep, 0o755))
		must(t, MkdirAllSync(fsys, deep, 0o755))
		name := filepath.Join(deep, "file")
		must(t, WriteFileAtomic(fsys, name, []byte("one"), 0o644))
		must(t, WriteFileAtomic(fsys, name, []byte("second"), 0o644))
		got, err := ReadFile(fsys, name)
		must(t, err)
		if string(got) != "second" {
			t.Fatalf("ReadFile = %q", got)
		}
		if _, err := fsys.Stat(name + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("temp file left behind: %v", err)
		}
	}},
}
