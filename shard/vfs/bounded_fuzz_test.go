package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"testing"
)

// FuzzBoundedMatchesInner runs one sequence of operations, decoded from
// the input, against a fault filesystem through Bounded holding one to
// three descriptors and against an identical fault filesystem directly:
// every call must succeed or fail alike and every read return the same
// bytes, whatever was closed and reopened underneath, renamed or removed
// while open.
func FuzzBoundedMatchesInner(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 1, 2, 0, 3, 7, 7, 0, 1, 3, 0, 0, 9})
	f.Add([]byte{1, 0, 0, 0, 2, 0, 4, 1, 1, 0, 5, 2, 1, 3, 0, 0, 0, 8, 2, 1, 3, 1})
	f.Add([]byte{2, 11, 0, 0, 6, 0, 2, 0, 5, 0, 1, 1, 0, 2, 0, 7, 4, 5, 3, 0, 10, 3})
	f.Fuzz(fuzzBounded)
}

func fuzzBounded(t *testing.T, in []byte) {
	{
		if len(in) == 0 {
			return
		}
		limit := 1 + int(in[0]%3)
		in = in[1:]
		mk := func() *Fault {
			x := NewFault(9)
			if err := MkdirAllSync(x, "/d/s", 0o755); err != nil {
				t.Fatal(err)
			}
			return x
		}
		ref := newFuzzWorld(mk())
		got := newFuzzWorld(NewBounded(mk(), limit))
		for step := 0; len(in) >= 4 && step < 200; step++ {
			op := fuzzOp{kind: in[0] % 13, a: in[1], b: in[2], c: in[3]}
			in = in[4:]
			want, have := ref.apply(op), got.apply(op)
			if want != have {
				t.Fatalf("step %d, %+v (limit %d): directly %q, through Bounded %q", step, op, limit, want, have)
			}
		}
	}
}

var fuzzNames = []string{"/d/a", "/d/b", "/d/s/c", "/d/s/e", "/d/t/c", "/d/s", "/d/t"}

type fuzzOp struct{ kind, a, b, c byte }

// fuzzWorld is a filesystem with a few handle slots.
type fuzzWorld struct {
	fs    FS
	files [4]File
}

func newFuzzWorld(fsys FS) *fuzzWorld { return &fuzzWorld{fs: fsys} }

// outcome renders a result so that the two worlds compare as strings:
// errors by kind, not by text (names and wrapping differ).
func outcome(v string, err error) string {
	switch {
	case err == nil:
		return "ok " + v
	case errors.Is(err, fs.ErrNotExist):
		return "not-exist"
	case errors.Is(err, fs.ErrExist):
		return "exist"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, io.EOF):
		return "eof " + v
	default:
		return "error"
	}
}

func (w *fuzzWorld) apply(op fuzzOp) string {
	name := fuzzNames[int(op.a)%len(fuzzNames)]
	slot := int(op.b) % len(w.files)
	f := w.files[slot]
	needFile := func() bool { return f != nil }
	switch op.kind {
	case 0: // open into a slot (closing what it held)
		flags := []int{O_RDWR | O_CREATE, O_RDWR, O_RDONLY, O_RDWR | O_CREATE | O_EXCL, O_RDWR | O_CREATE | O_TRUNC}[int(op.c)%5]
		if f != nil {
			_ = f.Close()
			w.files[slot] = nil
		}
		g, err := w.fs.OpenFile(name, flags, 0o644)
		if err == nil {
			w.files[slot] = g
		}
		return outcome("", err)
	case 1:
		if !needFile() {
			return "no file"
		}
		err := f.Close()
		w.files[slot] = nil
		return outcome("", err)
	case 2:
		if !needFile() {
			return "no file"
		}
		_, err := f.WriteAt(bytes.Repeat([]byte{op.c}, 1+int(op.c%7)), int64(op.c%16))
		return outcome("", err)
	case 3:
		if !needFile() {
			return "no file"
		}
		p := make([]byte, 1+int(op.c%24))
		n, err := f.ReadAt(p, int64(op.a%8))
		return outcome(fmt.Sprintf("%x", p[:n]), err)
	case 4:
		if !needFile() {
			return "no file"
		}
		return outcome("", f.Datasync())
	case 5:
		if !needFile() {
			return "no file"
		}
		return outcome("", f.Truncate(int64(op.c%20)))
	case 6:
		if !needFile() {
			return "no file"
		}
		n, err := f.Size()
		return outcome(fmt.Sprint(n), err)
	case 7:
		to := fuzzNames[int(op.c)%len(fuzzNames)]
		return outcome("", w.fs.Rename(name, to))
	case 8:
		return outcome("", w.fs.Remove(name))
	case 9:
		return outcome("", w.fs.RemoveAll(name))
	case 10: // a batch over every open slot
		var b Batch
		for i, g := range w.files {
			if g != nil {
				b.WriteAt(g, []byte{op.c, byte(i)}, int64(op.a%12))
				b.Datasync(g)
				b.Writeback(g, 0, 4096)
			}
		}
		err := w.fs.Submit(&b)
		var be *BatchError
		if errors.As(err, &be) {
			s := ""
			for _, fl := range be.Failures {
				s += fmt.Sprintf("%s%d:%s ", fl.Op, fl.Index, outcome("", fl.Err))
			}
			return "batch " + s
		}
		return outcome("", err)
	case 11:
		return outcome("", w.fs.MkdirAll(name, 0o755))
	default:
		st, err := w.fs.Stat(name)
		if err != nil {
			return outcome("", err)
		}
		return outcome(fmt.Sprint(st.IsDir(), st.Size()), nil)
	}
}
