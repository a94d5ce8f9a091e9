package metadata

import (
	"errors"
	"fmt"
	"io"
	"path"

	"github.com/iggo/iggo/shard/vfs"
)

// SnapshotFileName is the metadata checkpoint inside the metadata
// directory (metadata/snapshot.bin).
const SnapshotFileName = "snapshot.bin"

// WriteSnapshotFile stores s as dir/snapshot.bin durably: it writes
// snapshot.bin.tmp, syncs it, renames it over snapshot.bin and syncs dir.
// A crash at any point leaves the previous snapshot or the new one, never
// a mix; a leftover .tmp is overwritten by the next call.
func WriteSnapshotFile(fsys vfs.FS, dir string, s *State) error {
	final := path.Join(dir, SnapshotFileName)
	tmp := final + ".tmp"
	f, err := fsys.OpenFile(tmp, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("metadata: creating %s: %w", tmp, err)
	}
	b := EncodeSnapshot(s)
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return fmt.Errorf("metadata: writing %s: %w", tmp, err)
	}
	if err := f.Datasync(); err != nil {
		f.Close()
		return fmt.Errorf("metadata: syncing %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("metadata: closing %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, final); err != nil {
		return fmt.Errorf("metadata: renaming %s: %w", tmp, err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("metadata: syncing %s: %w", dir, err)
	}
	return nil
}

// ReadSnapshotFile loads dir/snapshot.bin. A missing file is an error
// wrapping fs.ErrNotExist (a fresh node); a damaged one wraps ErrSnapshot.
func ReadSnapshotFile(fsys vfs.FS, dir string) (*State, error) {
	name := path.Join(dir, SnapshotFileName)
	f, err := fsys.OpenFile(name, vfs.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("metadata: opening %s: %w", name, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("metadata: sizing %s: %w", name, err)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, fmt.Errorf("metadata: reading %s: %w", name, err)
	}
	s, err := DecodeSnapshot(b)
	if err != nil {
		return nil, fmt.Errorf("metadata: %s: %w", name, err)
	}
	return s, nil
}
