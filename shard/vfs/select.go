package vfs

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Impl names the implementation Open chose.
type Impl string

const (
	ImplIOUring  Impl = "io_uring"
	ImplPortable Impl = "portable"
)

// ShardFS is a shard's filesystem with its lifetime: Close releases the
// ring (a no-op for the portable implementation).
type ShardFS interface {
	FS
	Close() error
}

// Options configure Open.
type Options struct {
	// Entries is the ring's submission queue size; DefaultRingEntries if 0.
	Entries uint32
	// Portable skips io_uring (configuration or tests).
	Portable bool
	// InlineWrites makes an io_uring filesystem write buffered data with
	// pwritev in the calling thread and keep the ring for reads and syncs
	// (Ring.SetInlineWrites explains when that is faster).
	InlineWrites bool
}

// Choice says which implementation Open chose and, for the portable one,
// why io_uring was not used (nil when the caller asked for portable).
type Choice struct {
	Impl   Impl
	Reason error
}

// Close makes the portable filesystem a ShardFS.
func (*OS) Close() error { return nil }

// Open returns the filesystem one shard should use: an io_uring Ring when
// the kernel allows it, otherwise the portable implementation. io_uring is
// "denied" when setting up or entering a ring fails with ENOSYS (old kernel
// or not Linux), EPERM or EACCES (seccomp, io_uring_disabled sysctl), ENOMEM
// (memlock limit on older kernels), EINVAL or EOPNOTSUPP (missing
// features); then Open returns the portable FS and the reason for the
// caller to log once. Any other failure is an error.
func Open(opts Options) (ShardFS, Choice, error) {
	if opts.Portable {
		return NewOS(), Choice{Impl: ImplPortable}, nil
	}
	r, err := NewRing(opts.Entries)
	if err == nil {
		r.SetInlineWrites(opts.InlineWrites)
		return r, Choice{Impl: ImplIOUring}, nil
	}
	if denied(err) {
		return NewOS(), Choice{Impl: ImplPortable, Reason: err}, nil
	}
	return nil, Choice{}, err
}

func denied(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EPERM, unix.EACCES, unix.ENOMEM, unix.EINVAL, unix.EOPNOTSUPP, errors.ErrUnsupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// OpenShards opens one filesystem per shard. If io_uring is denied for any
// shard, every shard uses the portable implementation (mixed fleets make
// performance hard to reason about) and exactly one warning is logged.
func OpenShards(log *zap.Logger, n int, opts Options) ([]ShardFS, Impl, error) {
	if n <= 0 {
		return nil, "", fmt.Errorf("vfs: OpenShards needs at least one shard, got %d", n)
	}
	out := make([]ShardFS, 0, n)
	portable := func(reason error) ([]ShardFS, Impl, error) {
		for _, f := range out {
			_ = f.Close()
		}
		out = out[:0]
		for i := 0; i < n; i++ {
			out = append(out, NewOS())
		}
		if reason != nil {
			log.Warn("io_uring is not available; using portable file I/O (slower, same durability)",
				zap.Error(reason), zap.Int("shards", n))
		}
		return out, ImplPortable, nil
	}
	if opts.Portable {
		return portable(nil)
	}
	for i := 0; i < n; i++ {
		f, c, err := Open(opts)
		if err != nil {
			for _, g := range out {
				_ = g.Close()
			}
			return nil, "", fmt.Errorf("vfs: opening shard %d filesystem: %w", i, err)
		}
		if c.Impl != ImplIOUring {
			return portable(c.Reason)
		}
		out = append(out, f)
	}
	return out, ImplIOUring, nil
}
