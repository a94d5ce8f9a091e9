//go:build linux

package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestRingSharedAcrossGoroutines checks the guard: misuse of one ring from
// several goroutines at once is serialised, not corrupting.
func TestRingSharedAcrossGoroutines(t *testing.T) {
	r, err := NewRing(32)
	must(t, err)
	defer r.Close()
	dir := t.TempDir()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			f, err := r.OpenFile(filepath.Join(dir, fmt.Sprint(g)), O_RDWR|O_CREATE, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			p := bytes.Repeat([]byte{byte(g)}, 10000)
			for i := 0; i < 50; i++ {
				if _, err := f.WritevAt([][]byte{p[:3000], p[3000:]}, int64(i*len(p))); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := f.Datasync(); err != nil {
						t.Error(err)
						return
					}
				}
			}
			got := make([]byte, 50*len(p))
			if n, err := f.ReadAt(got, 0); n != len(got) || err != nil {
				t.Errorf("read %d: %v", n, err)
				return
			}
			if !bytes.Equal(got, bytes.Repeat([]byte{byte(g)}, len(got))) {
				t.Errorf("goroutine %d read foreign bytes", g)
			}
		}(g)
	}
	wg.Wait()
}

// TestRingBatchLargerThanQueue submits more operations than the submission
// queue holds in one batch.
func TestRingBatchLargerThanQueue(t *testing.T) {
	r, err := NewRing(8)
	must(t, err)
	defer r.Close()
	dir := t.TempDir()
	var b Batch
	var files []File
	for i := 0; i < 20; i++ {
		f, err := r.OpenFile(filepath.Join(dir, fmt.Sprint(i)), O_RDWR|O_CREATE, 0o644)
		must(t, err)
		defer f.Close()
		files = append(files, f)
		for k := 0; k < 5; k++ {
			b.WriteAt(f, []byte{byte(i), byte(k)}, int64(2*k))
		}
		b.Datasync(f)
	}
	b.SyncDir(dir)
	must(t, r.Submit(&b))
	for i, f := range files {
		got := make([]byte, 10)
		if _, err := f.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 5; k++ {
			if got[2*k] != byte(i) || got[2*k+1] != byte(k) {
				t.Fatalf("file %d: %v", i, got)
			}
		}
	}
}

func TestRingClosed(t *testing.T) {
	r, err := NewRing(8)
	must(t, err)
	f, err := r.OpenFile(filepath.Join(t.TempDir(), "x"), O_RDWR|O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	must(t, r.Close())
	must(t, r.Close())
	if _, err := f.WriteAt([]byte("x"), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("write on a closed ring: %v", err)
	}
}

// TestRingHintsNotWaitedFor: batch hints are submitted without waiting,
// at most maxAsync outstanding (the rest counted as dropped); their
// completions are reaped by later runs, so the ring keeps working however
// many hints went through it, and Close with hints outstanding is clean.
// smallRing returns a ring of 8 entries (maxAsync 2) and a file on it,
// both closed when the test ends.
func smallRing(t *testing.T, name string) (*Ring, File) {
	t.Helper()
	r, err := NewRing(8)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	f, err := r.OpenFile(filepath.Join(t.TempDir(), name), O_RDWR|O_CREATE, 0o644)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	return r, f
}

// checkAsyncBound fails the test if more fired operations are outstanding
// than the ring allows.
func checkAsyncBound(t *testing.T, r *Ring, round int) {
	t.Helper()
	r.mu.Lock()
	async := r.async
	r.mu.Unlock()
	if async < 0 || async > r.maxAsync() {
		t.Fatalf("round %d: %d fired operations outstanding, bound %d", round, async, r.maxAsync())
	}
}

func TestRingHintsNotWaitedFor(t *testing.T) {
	r, f := smallRing(t, "seg")
	page := bytes.Repeat([]byte{7}, 4096)
	for round := 0; round < 50; round++ {
		var b Batch
		for i := 0; i < 5; i++ {
			off := int64(round*5+i) * 4096
			b.WriteAt(f, page, off)
			b.Writeback(f, off, 4096)
		}
		if round%7 == 0 {
			b.Datasync(f)
		}
		must(t, r.Submit(&b))
		checkAsyncBound(t, r, round)
	}
	if r.HintsDropped() == 0 {
		t.Fatal("5 hints per batch against a bound of 2 dropped none")
	}
	// Only hints: no run reaps them, fire itself must.
	for i := 0; i < 20; i++ {
		var b Batch
		b.Writeback(f, 0, 4096)
		must(t, r.Submit(&b))
	}
	must(t, f.Datasync())
	size, err := f.Size()
	must(t, err)
	if size != 250*4096 {
		t.Fatalf("size %d after 250 page writes", size)
	}
	got := make([]byte, 4096)
	if _, err := f.ReadAt(got, 249*4096); err != nil || !bytes.Equal(got, page) {
		t.Fatalf("last page read back wrong: %v", err)
	}
}

// TestRingStartSyncNotWaitedFor: background fdatasyncs (Batch.StartSync,
// StartSync) are fired like hints: bounded by maxAsync, reaped by later
// runs, and the ring keeps working through many of them.
func TestRingStartSyncNotWaitedFor(t *testing.T) {
	r, f := smallRing(t, "wal")
	page := bytes.Repeat([]byte{9}, 4096)
	for round := 0; round < 40; round++ {
		var b Batch
		b.WriteAt(f, page, int64(round)*4096)
		b.StartSync(f)
		b.StartSync(f)
		b.StartSync(f)
		must(t, r.Submit(&b))
		StartSync(f)
		checkAsyncBound(t, r, round)
	}
	if r.HintsDropped() == 0 {
		t.Fatal("4 background syncs per round against a bound of 2 dropped none")
	}
	must(t, f.Datasync())
	got := make([]byte, 4096)
	if _, err := f.ReadAt(got, 39*4096); err != nil || !bytes.Equal(got, page) {
		t.Fatalf("last page read back wrong: %v", err)
	}
}
