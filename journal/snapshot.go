package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
)

// SnapshotFile is the metadata checkpoint's file name.
const SnapshotFile = "snapshot.bin"

// SnapshotTrailerSize is the size of the trailer after the snapshot bytes.
const SnapshotTrailerSize = 64

const snapshotMagic = "IGGOSNAP"

var (
	// ErrNoSnapshot means the directory holds no snapshot.
	ErrNoSnapshot = errors.New("journal: no snapshot")
	// ErrSnapshotCorrupt means the snapshot fails its trailer or checksum.
	ErrSnapshotCorrupt = errors.New("journal: snapshot corrupt")
)

func encodeSnapshotTrailer(b []byte, op uint64, length int, sum Uint128) {
	clear(b[:SnapshotTrailerSize])
	copy(b[0:8], snapshotMagic)
	binary.LittleEndian.PutUint16(b[8:], Version)
	binary.LittleEndian.PutUint64(b[16:], op)
	binary.LittleEndian.PutUint64(b[24:], uint64(length))
	putU128(b[32:], sum)
	putU128(b[48:], sum128(b[:48]))
}

// decodeSnapshotTrailer validates the trailer of a snapshot file of
// fileSize bytes and returns its op, data length and data checksum.
func decodeSnapshotTrailer(b []byte, fileSize int64) (op uint64, length int64, sum Uint128, err error) {
	if len(b) != SnapshotTrailerSize {
		return 0, 0, sum, fmt.Errorf("%w: trailer of %d bytes", ErrSnapshotCorrupt, len(b))
	}
	if string(b[0:8]) != snapshotMagic || getU128(b[48:]) != sum128(b[:48]) {
		return 0, 0, sum, fmt.Errorf("%w: trailer magic or checksum", ErrSnapshotCorrupt)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != Version {
		return 0, 0, sum, fmt.Errorf("%w: version %d", ErrSnapshotCorrupt, v)
	}
	for _, x := range b[10:16] {
		if x != 0 {
			return 0, 0, sum, fmt.Errorf("%w: reserved bytes", ErrSnapshotCorrupt)
		}
	}
	op = binary.LittleEndian.Uint64(b[16:])
	length = int64(binary.LittleEndian.Uint64(b[24:]))
	if length < 0 || length+SnapshotTrailerSize != fileSize {
		return 0, 0, sum, fmt.Errorf("%w: trailer says %d bytes, file has %d", ErrSnapshotCorrupt, length, fileSize-SnapshotTrailerSize)
	}
	return op, length, getU128(b[32:]), nil
}

// WriteSnapshot atomically replaces dir/snapshot.bin with data (the state
// machine at op, encoded by the caller) followed by the trailer: temp file,
// fsync, rename, directory fsync. It returns the data's checksum, which the
// caller records in the superblock as the checkpoint checksum.
func WriteSnapshot(fsys vfs.FS, dir string, op uint64, data []byte) (Uint128, error) {
	sum := Checksum(data)
	path := filepath.Join(dir, SnapshotFile)
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
	if err != nil {
		return sum, fmt.Errorf("journal: writing snapshot: %w", err)
	}
	trailer := make([]byte, SnapshotTrailerSize)
	encodeSnapshotTrailer(trailer, op, len(data), sum)
	if _, err := f.WritevAt([][]byte{data, trailer}, 0); err != nil {
		_ = f.Close()
		return sum, fmt.Errorf("journal: writing snapshot %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return sum, fmt.Errorf("journal: syncing snapshot %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return sum, err
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return sum, fmt.Errorf("journal: installing snapshot: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return sum, fmt.Errorf("journal: installing snapshot: %w", err)
	}
	return sum, nil
}

// Snapshot is a snapshot read back.
type Snapshot struct {
	Op       uint64
	Checksum Uint128
	Data     []byte
}

// ReadSnapshot reads and verifies dir/snapshot.bin. It returns ErrNoSnapshot
// when there is none and ErrSnapshotCorrupt when it fails verification.
func ReadSnapshot(fsys vfs.FS, dir string) (Snapshot, error) {
	path := filepath.Join(dir, SnapshotFile)
	b, err := vfs.ReadFile(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		return Snapshot{}, fmt.Errorf("%w: %s", ErrNoSnapshot, path)
	}
	if err != nil {
		return Snapshot{}, err
	}
	if len(b) < SnapshotTrailerSize {
		return Snapshot{}, fmt.Errorf("%w: %s is %d bytes", ErrSnapshotCorrupt, path, len(b))
	}
	op, length, sum, err := decodeSnapshotTrailer(b[len(b)-SnapshotTrailerSize:], int64(len(b)))
	if err != nil {
		return Snapshot{}, fmt.Errorf("%s: %w", path, err)
	}
	data := b[:length]
	if Checksum(data) != sum {
		return Snapshot{}, fmt.Errorf("%w: %s: data checksum", ErrSnapshotCorrupt, path)
	}
	return Snapshot{Op: op, Checksum: sum, Data: data}, nil
}

// Checkpoint runs the metadata checkpoint sequence for the state machine
// at op, whose encoding is snapshot: (1) write snapshot.bin atomically,
// (2) record op and the snapshot checksum in the superblock, (3) discard
// the journal's ops up to op. A crash between steps is safe: after (1) the
// journal still holds every op above the superblock's checkpoint; after (2)
// it holds every op above op. To keep op itself in the journal (for
// example to anchor a view change's suffix), pass op-1 to DiscardPrefix
// instead by calling the steps directly.
func Checkpoint(j *Journal, sb *superblock.Superblock, dir string, op uint64, snapshot []byte) error {
	if j.kind != kindMetadata {
		panic("journal: Checkpoint of a partition journal (partitions checkpoint through their segments)")
	}
	sum, err := WriteSnapshot(j.fs, dir, op, snapshot)
	if err != nil {
		return err
	}
	st := sb.State()
	st.CheckpointOp = op
	st.CheckpointChecksum = superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}
	if err := sb.Write(st); err != nil {
		return fmt.Errorf("journal: recording checkpoint %d: %w", op, err)
	}
	return j.DiscardPrefix(op)
}
