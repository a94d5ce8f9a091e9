//go:build !linux

package vfs

import (
	"errors"
	"io/fs"
)

// DefaultRingEntries is the submission queue size of a shard's ring.
const DefaultRingEntries = 4096

// Ring exists only on Linux; elsewhere NewRing fails and Open falls back.
type Ring struct{ OS }

// NewRing reports that io_uring is unsupported on this platform.
func NewRing(entries uint32) (*Ring, error) {
	return nil, errors.ErrUnsupported
}

func (r *Ring) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	return r.OS.OpenFile(name, flag, perm)
}

// SetInlineWrites exists for symmetry with Linux.
func (r *Ring) SetInlineWrites(bool) {}
