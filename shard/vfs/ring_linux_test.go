//go:build linux

package vfs

import "testing"

func ringImpls() []impl {
	mk := func(inline bool) func(t *testing.T, clamp func(int) int) (FS, string) {
		return func(t *testing.T, clamp func(int) int) (FS, string) {
			r, err := NewRing(256)
			if err != nil {
				t.Fatalf("io_uring is required on this machine for the io_uring conformance run: %v", err)
			}
			r.clamp = clamp
			r.SetInlineWrites(inline)
			t.Cleanup(func() { r.Close() })
			return r, t.TempDir()
		}
	}
	return []impl{{"io_uring", mk(false)}, {"io_uring-inline", mk(true)}}
}
