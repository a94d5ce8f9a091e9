package vsr

import (
	"encoding/binary"
	"fmt"
)

// State is the durable control record of one replica of one group. The node
// stores its encoding (EncodeState) opaquely, for example in the group's
// superblock, and hands the newest copy back at boot.
//
// (View, LogView) is the VSR view state. Commit/CommitID and Headers are the
// "view headers": the log suffix the replica vouches for in LogView —
// the StartView suffix when it entered LogView as a normal replica, or the
// suffix it sent in its DoViewChange when it left LogView. Checkpoint and
// CheckpointID name the state machine checkpoint the node must restore at
// boot.
type State struct {
	Cluster      Checksum
	Group        uint64
	Replica      uint8
	ReplicaCount uint8
	View         uint32
	LogView      uint32
	// Fenced with FenceOp: the replica lost its disk or its journal head at
	// some point and may have forgotten acknowledgements of ops up to the head
	// of the log it adopted afterwards (FenceOp; 0 until it adopts one): it
	// never nacks those ops.
	Fenced  bool
	FenceOp uint64
	// HeadPending: the replica cannot vouch for its log (recovering_head)
	// and must not vote until a StartView re-anchors it.
	HeadPending bool
	// Rejoining: the replica lost its disk and has not yet learned, from
	// enough peers, which view the group is in (see Boot.Rejoin).
	Rejoining bool
	// Commit is a committed op and CommitID its identity (the anchor of the
	// view headers).
	Commit   uint64
	CommitID Checksum
	// Headers are the prepare headers of ops Commit+len(Headers) down to
	// Commit+1, chained to CommitID.
	Headers      []Header
	Checkpoint   uint64
	CheckpointID Checksum
	// CheckpointTimestamp is the timestamp of prepare Checkpoint.
	CheckpointTimestamp uint64
	// Timestamp is the highest prepare timestamp the replica knew of.
	Timestamp uint64
}

const (
	stateMagic   = 0x5356_4749 // "IGVS" little-endian
	stateVersion = 1
	stateFixed   = 128
)

// Layout of an encoded State (little-endian):
//
//	0   u32  magic "IGVS"
//	4   u16  version (1)
//	6   u16  flags (bit 0: fenced, bit 1: head pending, bit 2: rejoining)
//	8   [16] cluster
//	24  u64  group
//	32  u8   replica
//	33  u8   replica_count
//	34  [2]  reserved, zero
//	36  u32  view
//	40  u32  log_view
//	44  [4]  reserved, zero
//	48  u64  commit
//	56  [16] commit identity
//	72  u64  checkpoint
//	80  [16] checkpoint identity
//	96  u64  timestamp
//	104 u32  header count (≤ PipelineMax)
//	108 u64  checkpoint timestamp
//	116 [4]  reserved, zero
//	120 u64  fence_op
//	128 count × 256 bytes: prepare headers, highest op first
//	end [16] XXH3-128 of every byte before it

// EncodeState returns the durable encoding of s.
func EncodeState(s *State) []byte {
	b := make([]byte, stateFixed+len(s.Headers)*HeaderSize+16)
	le := binary.LittleEndian
	le.PutUint32(b[0:], stateMagic)
	le.PutUint16(b[4:], stateVersion)
	var flags uint16
	if s.Fenced {
		flags |= 1
	}
	if s.HeadPending {
		flags |= 2
	}
	if s.Rejoining {
		flags |= 4
	}
	le.PutUint16(b[6:], flags)
	copy(b[8:24], s.Cluster[:])
	le.PutUint64(b[24:], s.Group)
	b[32] = s.Replica
	b[33] = s.ReplicaCount
	le.PutUint32(b[36:], s.View)
	le.PutUint32(b[40:], s.LogView)
	le.PutUint64(b[120:], s.FenceOp)
	le.PutUint64(b[48:], s.Commit)
	copy(b[56:72], s.CommitID[:])
	le.PutUint64(b[72:], s.Checkpoint)
	copy(b[80:96], s.CheckpointID[:])
	le.PutUint64(b[96:], s.Timestamp)
	le.PutUint32(b[104:], uint32(len(s.Headers)))
	le.PutUint64(b[108:], s.CheckpointTimestamp)
	for i := range s.Headers {
		copy(b[stateFixed+i*HeaderSize:], s.Headers[i][:])
	}
	end := len(b) - 16
	c := checksumOf(b[:end])
	copy(b[end:], c[:])
	return b
}

// DecodeState parses and checks an encoded State. It never panics.
func DecodeState(b []byte) (*State, error) {
	if len(b) < stateFixed+16 {
		return nil, fmt.Errorf("%w: state record of %d bytes", ErrMalformed, len(b))
	}
	end := len(b) - 16
	var want Checksum
	copy(want[:], b[end:])
	if checksumOf(b[:end]) != want {
		return nil, fmt.Errorf("%w: state record checksum mismatch", ErrMalformed)
	}
	le := binary.LittleEndian
	if le.Uint32(b[0:]) != stateMagic || le.Uint16(b[4:]) != stateVersion {
		return nil, fmt.Errorf("%w: state record magic/version", ErrMalformed)
	}
	flags := le.Uint16(b[6:])
	if flags > 7 || !allZero(b[34:36]) || !allZero(b[116:120]) {
		return nil, fmt.Errorf("%w: state record reserved bits", ErrMalformed)
	}
	s := &State{
		Group:        le.Uint64(b[24:]),
		Replica:      b[32],
		ReplicaCount: b[33],
		View:         le.Uint32(b[36:]),
		LogView:      le.Uint32(b[40:]),
		Fenced:       flags&1 != 0,
		HeadPending:  flags&2 != 0,
		Rejoining:    flags&4 != 0,
		FenceOp:      le.Uint64(b[120:]),
		Commit:       le.Uint64(b[48:]),
		Checkpoint:   le.Uint64(b[72:]),
		Timestamp:    le.Uint64(b[96:]),

		CheckpointTimestamp: le.Uint64(b[108:]),
	}
	copy(s.Cluster[:], b[8:24])
	copy(s.CommitID[:], b[56:72])
	copy(s.CheckpointID[:], b[80:96])
	count := le.Uint32(b[104:])
	if count > PipelineMax || uint64(len(b)) != uint64(stateFixed)+uint64(count)*HeaderSize+16 {
		return nil, fmt.Errorf("%w: state record with %d headers in %d bytes", ErrMalformed, count, len(b))
	}
	if s.ReplicaCount == 0 || s.Replica >= s.ReplicaCount {
		return nil, fmt.Errorf("%w: state record replica %d of %d", ErrMalformed, s.Replica, s.ReplicaCount)
	}
	if s.LogView > s.View || (!s.Fenced && s.FenceOp != 0) || !allZero(b[44:48]) ||
		(s.HeadPending && !s.Fenced) || (s.Rejoining && !s.HeadPending) {
		return nil, fmt.Errorf("%w: state record views %d/%d fence %d", ErrMalformed, s.View, s.LogView, s.FenceOp)
	}
	if s.Commit == 0 && !s.CommitID.IsZero() || s.Checkpoint == 0 && !s.CheckpointID.IsZero() {
		return nil, fmt.Errorf("%w: state record identity of op 0", ErrMalformed)
	}
	s.Headers = make([]Header, count)
	below := s.CommitID
	for i := int(count) - 1; i >= 0; i-- {
		h := &s.Headers[i]
		copy(h[:], b[stateFixed+i*HeaderSize:])
		if err := validatePrepare(h, -1); err != nil {
			return nil, fmt.Errorf("state record header %d: %w", i, err)
		}
		if h.Op() != s.Commit+uint64(count)-uint64(i) || h.Parent() != below || h.PrepareView() > s.LogView {
			return nil, fmt.Errorf("%w: state record header %d out of chain", ErrMalformed, i)
		}
		below = h.Identity()
	}
	return s, nil
}

// head returns the highest op the view headers reach.
func (s *State) head() uint64 { return s.Commit + uint64(len(s.Headers)) }
