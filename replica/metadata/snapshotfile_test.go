package metadata

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

func TestSnapshotFile(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewOS()
	if _, err := ReadSnapshotFile(fsys, dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing snapshot: %v", err)
	}
	s1 := richState(t, 1, 100)
	s2 := richState(t, 2, 200)
	for _, s := range []*State{s1, s2} {
		if err := WriteSnapshotFile(fsys, dir, s); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSnapshotFile(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(EncodeSnapshot(got), EncodeSnapshot(s)) {
			t.Fatal("file round trip changed the state")
		}
	}
	if _, err := os.Stat(filepath.Join(dir, SnapshotFileName+".tmp")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("temporary file left behind")
	}
	// A damaged file is refused, not half-loaded.
	p := filepath.Join(dir, SnapshotFileName)
	b, _ := os.ReadFile(p)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSnapshotFile(fsys, dir); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("damaged snapshot: %v", err)
	}
}
