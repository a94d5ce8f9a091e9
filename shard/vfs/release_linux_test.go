//go:build linux

package vfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// residentPages counts the pages of name's first n bytes that are in the
// page cache (mincore over a read-only mapping).
func residentPages(t *testing.T, name string, n int) int {
	t.Helper()
	f, err := os.Open(name)
	must(t, err)
	defer f.Close()
	m, err := unix.Mmap(int(f.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
	must(t, err)
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (n+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(n), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore: %v", e)
	}
	count := 0
	for _, v := range vec {
		count += int(v & 1)
	}
	return count
}

// TestReleaseDropsCachedPages: a Release hint over a durable range drops
// its pages from the page cache, through the file's own method and as a
// batch hint, on the portable filesystem and on the ring (where the hint
// is fired without waiting, so the test waits a bounded time for it), and
// the data reads back unchanged.
func TestReleaseDropsCachedPages(t *testing.T) {
	// Large enough that the kernel's large folios (up to 2 MiB) leave most
	// of a released range droppable.
	const size = 16 << 20
	data := bytes.Repeat([]byte("release!"), size/8)
	ring, err := NewRing(32)
	if err != nil {
		t.Fatalf("io_uring unavailable: %v", err)
	}
	defer ring.Close()
	for _, fsys := range []struct {
		name string
		fs   FS
	}{{"os", NewOS()}, {"ring", ring}} {
		for _, viaBatch := range []bool{false, true} {
			name := filepath.Join(t.TempDir(), "seg")
			f, err := fsys.fs.OpenFile(name, O_RDWR|O_CREATE, 0o644)
			must(t, err)
			_, err = f.WriteAt(data, 0)
			must(t, err)
			must(t, f.Datasync())
			before := residentPages(t, name, size)
			if before == 0 {
				t.Fatalf("%s: nothing cached after a write", fsys.name)
			}
			// Release all but the last 4 MiB: at most those pages and one
			// folio across the boundary may stay.
			const keep = 4 << 20
			limit := (keep + 2<<20) / os.Getpagesize()
			if viaBatch {
				var b Batch
				b.Release(f, 0, size-keep)
				must(t, fsys.fs.Submit(&b))
			} else {
				must(t, f.Release(0, size-keep))
			}
			deadline := time.Now().Add(5 * time.Second)
			after := residentPages(t, name, size)
			for after > limit && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
				after = residentPages(t, name, size)
			}
			if after > limit {
				t.Fatalf("%s (batch %v): %d of %d pages still cached after the release", fsys.name, viaBatch, after, before)
			}
			got := make([]byte, size)
			_, err = f.ReadAt(got, 0)
			must(t, err)
			if !bytes.Equal(got, data) {
				t.Fatalf("%s: data changed by a release", fsys.name)
			}
			if err := f.Release(-1, 10); err == nil {
				t.Fatalf("%s: negative offset accepted", fsys.name)
			}
			must(t, f.Close())
		}
	}
}
