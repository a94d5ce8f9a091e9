// Package superblock stores a consensus group's durable control record:
// who the replica is (cluster, replica id, replica count), the commit, the
// last checkpoint (op and checksum) and the offset frontier, the next offset
// the group's partition may mint, so a restarted replica never hands out an
// offset it already acknowledged. The view and log_view are not here: they
// live in the group's view-state file, which the replica's consensus driver
// writes with the rest of the vsr state record.
//
// # Redundancy
//
// The record is kept in Copies (4) copies in one file named "superblock",
// each in its own SlotSize (4 KiB) slot, so a torn or rotten sector damages
// at most one copy. Every write carries a sequence one higher than the last.
// A write goes in two rounds, each ended by an fdatasync:
//
//  1. the slots that do not hold the newest record (stale or damaged), or
//     slots 0 and 1 when all four are current;
//  2. the remaining slots.
//
// While round 1 is in flight the slots of round 2 still hold the old record;
// once round 1 is synced its slots hold the new one. So a crash at any byte
// of a write leaves at least one valid copy of the old or the new record,
// and the newest valid copy wins at boot. Copies that were stale or damaged
// at boot are rewritten first by the next write (repair). Open fdatasyncs
// the file before returning, so a record read from the page cache after a
// process crash is durable before the caller acts on it.
//
// Compared with Iggy 0.9 (two files, one copy each, any damaged copy
// refuses boot, 64-bit checksums) this survives a damaged sector and
// repairs it, and checksums with XXH3-128.
//
// Formatting writes all four copies to "superblock.tmp", syncs it and
// renames it into place (then syncs the directory), so a missing
// "superblock" file means the group was never formatted, while a file with
// no valid copy is corruption and refuses to open.
//
// # Format of one copy (slot i at file offset i*4096, little-endian)
//
//	off  size  field
//	  0    16  checksum: XXH3-128 of bytes [16, 4096) of the slot, low 64 bits first
//	 16     8  magic "IGGOSUPB"
//	 24     2  version = 1 (a newer version refuses to open: no silent downgrade)
//	 26     1  copy index = i (a copy found in another slot is a misdirected write)
//	 27     1  reserved, 0
//	 28     4  record size = 128 (bytes of the slot that carry fields)
//	 32     8  sequence, >= 1, +1 per write
//	 40    16  parent: record checksum of the previous sequence (0 for sequence 1)
//	 56    16  cluster id (u128, low 64 bits first)
//	 72     1  replica id
//	 73     1  replica count (>= 1, > replica id)
//	 74     2  reserved, 0
//	 76     8  reserved: written as 0, ignored on read (early builds laid
//	           out view and log_view here but never wrote them; the view
//	           lives in the view-state file)
//	 84     4  reserved, 0
//	 88     8  commit
//	 96     8  checkpoint op
//	104    16  checkpoint checksum (u128, low 64 bits first)
//	120     8  offset frontier
//	128  3968  reserved for growth, zero in version 1 (covered by the checksum)
//
// The record checksum (the parent of the next sequence) is XXH3-128 of
// bytes [32, 128): the same in every copy of a sequence.
package superblock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/zeebo/xxh3"
)

const (
	// Copies is how many copies of the record the file holds.
	Copies = 4
	// SlotSize is the size of one copy's slot (a 4 KiB sector).
	SlotSize = 4096
	// FileName is the superblock file inside a group's directory.
	FileName = "superblock"
	// Version is the format version this package writes and reads.
	Version = 1

	recordSize = 128
	magic      = "IGGOSUPB"
)

var (
	// ErrNotFound means the directory holds no superblock: a fresh group.
	ErrNotFound = errors.New("superblock: not formatted")
	// ErrCorrupt means no copy is valid: refuse to boot, repair from peers
	// or by operator action.
	ErrCorrupt = errors.New("superblock: no valid copy")
	// ErrClusterMismatch means the superblock belongs to another cluster.
	ErrClusterMismatch = errors.New("superblock: cluster id mismatch")
	// ErrReplicaMismatch means the superblock belongs to another replica.
	ErrReplicaMismatch = errors.New("superblock: replica id mismatch")
	// ErrVersion means a copy was written by a newer format version.
	ErrVersion = errors.New("superblock: unsupported format version")
	// ErrConflict means two valid copies of the same sequence differ.
	ErrConflict = errors.New("superblock: copies of one sequence disagree")
	// ErrExists means Format found a superblock already there.
	ErrExists = errors.New("superblock: already formatted")
)

// Uint128 is a 128-bit value (cluster id, checksum), as in xxh3.
type Uint128 struct{ Hi, Lo uint64 }

// State is the record's content.
type State struct {
	Cluster            Uint128
	Replica            uint8
	ReplicaCount       uint8
	Commit             uint64
	CheckpointOp       uint64
	CheckpointChecksum Uint128
	OffsetFrontier     uint64
}

func (s State) validate() error {
	if s.ReplicaCount == 0 || s.Replica >= s.ReplicaCount {
		return fmt.Errorf("superblock: replica %d of %d is out of range", s.Replica, s.ReplicaCount)
	}
	return nil
}

// record is one decoded copy.
type record struct {
	State
	Sequence uint64
	Parent   Uint128
}

func putU128(b []byte, v Uint128) {
	binary.LittleEndian.PutUint64(b, v.Lo)
	binary.LittleEndian.PutUint64(b[8:], v.Hi)
}

func getU128(b []byte) Uint128 {
	return Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

func sum128(b []byte) Uint128 {
	h := xxh3.Hash128(b)
	return Uint128{Hi: h.Hi, Lo: h.Lo}
}

// encode writes copy i of r into slot (SlotSize bytes).
func encode(slot []byte, r record, i int) {
	clear(slot)
	copy(slot[16:24], magic)
	binary.LittleEndian.PutUint16(slot[24:], Version)
	slot[26] = byte(i)
	binary.LittleEndian.PutUint32(slot[28:], recordSize)
	binary.LittleEndian.PutUint64(slot[32:], r.Sequence)
	putU128(slot[40:], r.Parent)
	putU128(slot[56:], r.Cluster)
	slot[72] = r.Replica
	slot[73] = r.ReplicaCount
	binary.LittleEndian.PutUint64(slot[88:], r.Commit)
	binary.LittleEndian.PutUint64(slot[96:], r.CheckpointOp)
	putU128(slot[104:], r.CheckpointChecksum)
	binary.LittleEndian.PutUint64(slot[120:], r.OffsetFrontier)
	putU128(slot[0:], sum128(slot[16:SlotSize]))
}

// recordChecksum identifies a sequence's content independently of the copy.
func recordChecksum(slot []byte) Uint128 { return sum128(slot[32:recordSize]) }

// errInvalid is why a slot does not hold a valid copy; it never reaches
// callers except through Slots.
var errInvalid = errors.New("superblock: invalid copy")

// decode validates slot as copy i. It returns ErrVersion (wrapped) for a
// checksummed copy of a newer version and errInvalid for anything else
// that is not a valid copy.
func decode(slot []byte, i int) (record, error) {
	var r record
	if len(slot) != SlotSize {
		return r, fmt.Errorf("%w: slot is %d bytes", errInvalid, len(slot))
	}
	if getU128(slot) != sum128(slot[16:]) {
		return r, fmt.Errorf("%w: checksum", errInvalid)
	}
	if string(slot[16:24]) != magic {
		return r, fmt.Errorf("%w: magic", errInvalid)
	}
	if v := binary.LittleEndian.Uint16(slot[24:]); v != Version {
		return r, fmt.Errorf("%w: copy %d has version %d, this build reads %d", ErrVersion, i, v, Version)
	}
	if int(slot[26]) != i {
		return r, fmt.Errorf("%w: copy index %d in slot %d (misdirected write)", errInvalid, slot[26], i)
	}
	if slot[27] != 0 || binary.LittleEndian.Uint16(slot[74:]) != 0 || binary.LittleEndian.Uint32(slot[84:]) != 0 {
		return r, fmt.Errorf("%w: reserved field set", errInvalid)
	}
	if n := binary.LittleEndian.Uint32(slot[28:]); n != recordSize {
		return r, fmt.Errorf("%w: record size %d", errInvalid, n)
	}
	r.Sequence = binary.LittleEndian.Uint64(slot[32:])
	r.Parent = getU128(slot[40:])
	r.Cluster = getU128(slot[56:])
	r.Replica = slot[72]
	r.ReplicaCount = slot[73]
	// [76, 84) is reserved and ignored: see the format table.
	r.Commit = binary.LittleEndian.Uint64(slot[88:])
	r.CheckpointOp = binary.LittleEndian.Uint64(slot[96:])
	r.CheckpointChecksum = getU128(slot[104:])
	r.OffsetFrontier = binary.LittleEndian.Uint64(slot[120:])
	if r.Sequence == 0 {
		return r, fmt.Errorf("%w: sequence 0", errInvalid)
	}
	if err := r.State.validate(); err != nil {
		return r, fmt.Errorf("%w: %v", errInvalid, err)
	}
	return r, nil
}

// SlotStatus describes one slot as last read or written.
type SlotStatus struct {
	Valid    bool
	Sequence uint64
	Err      error // why the slot is not valid
}

// Superblock is an open superblock file. It is not safe for concurrent use;
// the group's shard owns it.
type Superblock struct {
	fs     vfs.FS
	path   string
	f      vfs.File
	cur    record
	sum    Uint128 // record checksum of cur
	slots  [Copies]SlotStatus
	failed error
	buf    []byte
	batch  vfs.Batch
}

// Format creates the superblock of a fresh group in dir with st as
// sequence 1 and returns it open. It refuses if one exists. dir must exist
// and its own entry must be durable (vfs.MkdirAllSync).
func Format(fsys vfs.FS, dir string, st State) (*Superblock, error) {
	if err := st.validate(); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, FileName)
	if _, err := fsys.Stat(path); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	r := record{State: st, Sequence: 1}
	buf := make([]byte, Copies*SlotSize)
	for i := 0; i < Copies; i++ {
		encode(buf[i*SlotSize:(i+1)*SlotSize], r, i)
	}
	if err := vfs.WriteFileAtomic(fsys, path, buf, 0o644); err != nil {
		return nil, fmt.Errorf("superblock: formatting %s: %w", path, err)
	}
	return Open(fsys, dir, st.Cluster, st.Replica)
}

// Open reads the superblock in dir, checks that it belongs to cluster and
// replica, and returns it with the newest valid record as State. It returns
// ErrNotFound for a fresh directory and ErrCorrupt, ErrVersion, ErrConflict,
// ErrClusterMismatch or ErrReplicaMismatch (wrapped) when it must not be
// used.
func Open(fsys vfs.FS, dir string, cluster Uint128, replica uint8) (*Superblock, error) {
	path := filepath.Join(dir, FileName)
	f, err := fsys.OpenFile(path, vfs.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, path)
	}
	if err != nil {
		return nil, err
	}
	s := &Superblock{fs: fsys, path: path, f: f, buf: make([]byte, Copies*SlotSize)}
	if err := s.load(cluster, replica); err != nil {
		_ = f.Close()
		return nil, err
	}
	return s, nil
}

func (s *Superblock) load(cluster Uint128, replica uint8) error {
	n, err := s.f.ReadAt(s.buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("superblock: reading %s: %w", s.path, err)
	}
	clear(s.buf[n:])
	best := -1
	var recs [Copies]record
	for i := 0; i < Copies; i++ {
		slot := s.buf[i*SlotSize : (i+1)*SlotSize]
		r, err := decode(slot, i)
		if errors.Is(err, ErrVersion) {
			return fmt.Errorf("%s: %w", s.path, err)
		}
		if err != nil {
			s.slots[i] = SlotStatus{Err: err}
			continue
		}
		recs[i] = r
		s.slots[i] = SlotStatus{Valid: true, Sequence: r.Sequence}
		if best < 0 || r.Sequence > recs[best].Sequence {
			best = i
		}
	}
	if best < 0 {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, s.slots[0].Err)
	}
	bestSlot := s.buf[best*SlotSize : (best+1)*SlotSize]
	for i := 0; i < Copies; i++ {
		if s.slots[i].Valid && recs[i].Sequence == recs[best].Sequence &&
			!bytes.Equal(s.buf[i*SlotSize+32:i*SlotSize+recordSize], bestSlot[32:recordSize]) {
			return fmt.Errorf("%w: %s: slots %d and %d, sequence %d", ErrConflict, s.path, best, i, recs[best].Sequence)
		}
	}
	r := recs[best]
	for i := 0; i < Copies; i++ {
		// A copy of the previous sequence must be the newest one's parent;
		// anything else means two histories were written (a bug or a
		// foreign file).
		if s.slots[i].Valid && recs[i].Sequence+1 == r.Sequence &&
			recordChecksum(s.buf[i*SlotSize:(i+1)*SlotSize]) != r.Parent {
			return fmt.Errorf("%w: %s: sequence %d in slot %d is not the parent of sequence %d",
				ErrConflict, s.path, recs[i].Sequence, i, r.Sequence)
		}
	}
	if r.Cluster != cluster {
		return fmt.Errorf("%w: %s holds cluster %016x%016x, expected %016x%016x",
			ErrClusterMismatch, s.path, r.Cluster.Hi, r.Cluster.Lo, cluster.Hi, cluster.Lo)
	}
	if r.Replica != replica {
		return fmt.Errorf("%w: %s holds replica %d, expected %d", ErrReplicaMismatch, s.path, r.Replica, replica)
	}
	// What was read may be unsynced leftovers of a crashed process; make it
	// durable before anyone acts on it.
	if err := s.f.Datasync(); err != nil {
		return fmt.Errorf("superblock: syncing %s: %w", s.path, err)
	}
	s.cur = r
	s.sum = recordChecksum(bestSlot)
	return nil
}

// State returns the newest record.
func (s *Superblock) State() State { return s.cur.State }

// Sequence returns the newest record's sequence.
func (s *Superblock) Sequence() uint64 { return s.cur.Sequence }

// Slots reports each slot's status as last read or written.
func (s *Superblock) Slots() [Copies]SlotStatus { return s.slots }

// NeedsRepair reports whether some slot does not hold the newest record;
// Write(State()) repairs it.
func (s *Superblock) NeedsRepair() bool {
	for _, st := range s.slots {
		if !st.Valid || st.Sequence != s.cur.Sequence {
			return true
		}
	}
	return false
}

// Write durably replaces the record with st (sequence + 1) and repairs
// every stale or damaged copy. st must keep the identity (cluster, replica,
// replica count) and must not move commit, checkpoint op or offset
// frontier backwards: those are broken invariants and panic. An I/O
// error leaves the on-disk record as the old or the new one; the
// Superblock then refuses further writes (the caller restarts and
// recovers, as after any failed fdatasync).
func (s *Superblock) Write(st State) error {
	if s.failed != nil {
		return fmt.Errorf("superblock: %s: an earlier write failed: %w", s.path, s.failed)
	}
	if err := st.validate(); err != nil {
		panic(err.Error())
	}
	old := s.cur.State
	switch {
	case st.Cluster != old.Cluster || st.Replica != old.Replica || st.ReplicaCount != old.ReplicaCount:
		panic(fmt.Sprintf("superblock: write changes identity from %+v to %+v", old, st))
	case st.Commit < old.Commit:
		panic(fmt.Sprintf("superblock: commit goes back from %d to %d", old.Commit, st.Commit))
	case st.CheckpointOp < old.CheckpointOp:
		panic(fmt.Sprintf("superblock: checkpoint op goes back from %d to %d", old.CheckpointOp, st.CheckpointOp))
	case st.OffsetFrontier < old.OffsetFrontier:
		panic(fmt.Sprintf("superblock: offset frontier goes back from %d to %d", old.OffsetFrontier, st.OffsetFrontier))
	}
	r := record{State: st, Sequence: s.cur.Sequence + 1, Parent: s.sum}
	var first, second []int
	for i, sl := range s.slots {
		if !sl.Valid || sl.Sequence != s.cur.Sequence {
			first = append(first, i)
		} else {
			second = append(second, i)
		}
	}
	if len(first) == 0 {
		first, second = second[:2], second[2:]
	}
	for i := 0; i < Copies; i++ {
		encode(s.buf[i*SlotSize:(i+1)*SlotSize], r, i)
	}
	for _, round := range [][]int{first, second} {
		s.batch.Reset()
		for _, i := range round {
			s.batch.WriteAt(s.f, s.buf[i*SlotSize:(i+1)*SlotSize], int64(i*SlotSize))
		}
		s.batch.Datasync(s.f)
		err := s.fs.Submit(&s.batch)
		s.batch.Reset()
		if err != nil {
			for _, i := range round {
				s.slots[i] = SlotStatus{Err: fmt.Errorf("%w: write failed", errInvalid)}
			}
			s.failed = err
			return fmt.Errorf("superblock: writing %s: %w", s.path, err)
		}
		for _, i := range round {
			s.slots[i] = SlotStatus{Valid: true, Sequence: r.Sequence}
		}
	}
	s.cur = r
	s.sum = recordChecksum(s.buf[:SlotSize])
	return nil
}

// Close closes the file.
func (s *Superblock) Close() error { return s.f.Close() }
