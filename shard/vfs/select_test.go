package vfs

import (
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/sys/unix"
)

func TestDenied(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{unix.ENOSYS, true},
		{fmt.Errorf("setup: %w", unix.EPERM), true},
		{unix.EACCES, true},
		{unix.ENOMEM, true},
		{unix.EINVAL, true},
		{errors.ErrUnsupported, true},
		{unix.EMFILE, false},
		{errors.New("other"), false},
	}
	for _, c := range cases {
		if got := denied(c.err); got != c.want {
			t.Errorf("denied(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestOpenShardsPortableLogsNothingWhenAsked(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	fss, impl, err := OpenShards(zap.New(core), 3, Options{Portable: true})
	must(t, err)
	if impl != ImplPortable || len(fss) != 3 || logs.Len() != 0 {
		t.Fatalf("impl %s, %d filesystems, %d log entries", impl, len(fss), logs.Len())
	}
	if _, _, err := OpenShards(zap.New(core), 0, Options{}); err == nil {
		t.Fatal("OpenShards(0) succeeded")
	}
}

func TestOpenShardsRing(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	fss, impl, err := OpenShards(zap.New(core), 2, Options{Entries: 64})
	must(t, err)
	defer func() {
		for _, f := range fss {
			must(t, f.Close())
		}
	}()
	// On a machine without io_uring this is the fallback path, which must
	// have logged exactly one warning.
	switch impl {
	case ImplIOUring:
		if logs.Len() != 0 {
			t.Fatalf("io_uring chosen but %d warnings logged", logs.Len())
		}
		if _, ok := fss[0].(*Ring); !ok {
			t.Fatalf("io_uring chosen but got %T", fss[0])
		}
	case ImplPortable:
		if logs.Len() != 1 {
			t.Fatalf("fallback logged %d warnings, want 1", logs.Len())
		}
	}
	dir := t.TempDir()
	f, err := fss[1].OpenFile(dir+"/x", O_RDWR|O_CREATE, 0o644)
	must(t, err)
	writeString(t, f, "ok", 0)
	must(t, f.Close())
}
