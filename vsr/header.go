package vsr

import (
	"encoding/binary"
	"fmt"
)

// HeaderSize is the fixed size of every replica-plane header.
const HeaderSize = 256

// ProtocolVersion is written at offset 56 of every header and must match
// exactly; a node refuses frames of another version instead of guessing
// (Iggy's `release` field is always 0 and never checked).
const ProtocolVersion = 1

// Command identifies a replica-plane message.
type Command uint8

// Replica-plane commands. The numbering is iggo's own: only iggo nodes speak
// this plane.
const (
	CmdReserved         Command = 0
	CmdPrepare          Command = 1
	CmdPrepareOk        Command = 2
	CmdCommit           Command = 3
	CmdStartViewChange  Command = 4
	CmdDoViewChange     Command = 5
	CmdStartView        Command = 6
	CmdRequestStartView Command = 7
	CmdRequestPrepares  Command = 8
	CmdRangeEvicted     Command = 9
	CmdRequestManifest  Command = 10
	CmdManifest         Command = 11
	CmdRequestChunk     Command = 12
	CmdChunk            Command = 13
	CmdForward          Command = 14
	CmdForwardReply     Command = 15
	CmdSessionReport    Command = 16
	cmdCount                    = 17
)

var commandNames = [cmdCount]string{
	"reserved", "prepare", "prepare_ok", "commit", "start_view_change",
	"do_view_change", "start_view", "request_start_view", "request_prepares",
	"range_evicted", "request_manifest", "manifest", "request_chunk", "chunk",
	"forward", "forward_reply", "session_report",
}

func (c Command) String() string {
	if int(c) < cmdCount {
		return commandNames[c]
	}
	return fmt.Sprintf("command(%d)", uint8(c))
}

// Header is one 256-byte replica-plane header, little-endian throughout. The
// layout is documented byte by byte in the package doc (section "Replica-plane
// frames"); the accessors below are the only code that knows offsets.
type Header [HeaderSize]byte

// Common prefix offsets.
const (
	offChecksum     = 0
	offChecksumBody = 16
	offCluster      = 32
	offSize         = 48
	offView         = 52
	offProtocol     = 56
	offCommand      = 58
	offReplica      = 59
	offReplicaCount = 60
	offReserved0    = 61 // 3 bytes
	offGroup        = 64
	offIncarnation  = 72
	offCommandArea  = 80
)

// Prepare offsets (command-specific area).
const (
	offPrepIdentity  = 80
	offPrepParent    = 96
	offPrepClient    = 112
	offPrepOp        = 128
	offPrepCommit    = 136
	offPrepTimestamp = 144
	offPrepRequest   = 152
	offPrepSession   = 160
	offPrepView      = 168
	offPrepUser      = 172
	offPrepOperation = 176
	offPrepContext   = 184
	offPrepEnd       = 200
)

// Offsets shared by several control commands. Each command uses a subset; the
// per-command validator checks that unused bytes are zero.
const (
	offCtlChecksum  = 80  // PrepareOk: prepare identity; Commit/DVC/SV: commit identity
	offCtlA         = 96  // PrepareOk op; Commit/DVC/SV commit
	offCtlB         = 104 // Commit/DVC/SV op (head)
	offCtlC         = 112 // Commit heartbeat; DVC log_view (u32) + flags (u32); SV nonce
	offCtlD         = 120 // Commit/DVC/SV checkpoint
	offDVCNack      = 128
	offDVCPresent   = 144
	offDVCTimestamp = 160
	offDVCNackFloor = 168
	offSVTimestamp  = 128
)

// Offsets of the repair and transfer commands.
const (
	offNonce    = 80
	offRangeLo  = 88 // RequestPrepares from; RangeEvicted floor; Manifest/Chunk checkpoint op
	offRangeHi  = 96 // RequestPrepares to; Chunk offset
	offCountU32 = 104
	offChunkLen = 108
)

func (h *Header) u16(off int) uint16      { return binary.LittleEndian.Uint16(h[off:]) }
func (h *Header) u32(off int) uint32      { return binary.LittleEndian.Uint32(h[off:]) }
func (h *Header) u64(off int) uint64      { return binary.LittleEndian.Uint64(h[off:]) }
func (h *Header) put16(off int, v uint16) { binary.LittleEndian.PutUint16(h[off:], v) }
func (h *Header) put32(off int, v uint32) { binary.LittleEndian.PutUint32(h[off:], v) }
func (h *Header) put64(off int, v uint64) { binary.LittleEndian.PutUint64(h[off:], v) }
func (h *Header) sum(off int) Checksum {
	var c Checksum
	copy(c[:], h[off:off+16])
	return c
}
func (h *Header) putSum(off int, c Checksum) { copy(h[off:off+16], c[:]) }

// Common fields.

func (h *Header) Checksum() Checksum         { return h.sum(offChecksum) }
func (h *Header) ChecksumBody() Checksum     { return h.sum(offChecksumBody) }
func (h *Header) Cluster() Checksum          { return h.sum(offCluster) }
func (h *Header) Size() uint32               { return h.u32(offSize) }
func (h *Header) View() uint32               { return h.u32(offView) }
func (h *Header) Protocol() uint16           { return h.u16(offProtocol) }
func (h *Header) Command() Command           { return Command(h[offCommand]) }
func (h *Header) Replica() uint8             { return h[offReplica] }
func (h *Header) ReplicaCount() uint8        { return h[offReplicaCount] }
func (h *Header) Group() uint64              { return h.u64(offGroup) }
func (h *Header) Incarnation() uint64        { return h.u64(offIncarnation) }
func (h *Header) setView(v uint32)           { h.put32(offView, v) }
func (h *Header) setReplica(r uint8)         { h[offReplica] = r }
func (h *Header) setIncarnation(v uint64)    { h.put64(offIncarnation, v) }
func (h *Header) setSize(v uint32)           { h.put32(offSize, v) }
func (h *Header) setChecksumBody(c Checksum) { h.putSum(offChecksumBody, c) }

// Prepare fields.

func (h *Header) Identity() Checksum  { return h.sum(offPrepIdentity) }
func (h *Header) Parent() Checksum    { return h.sum(offPrepParent) }
func (h *Header) Client() Checksum    { return h.sum(offPrepClient) }
func (h *Header) Op() uint64          { return h.u64(offPrepOp) }
func (h *Header) Commit() uint64      { return h.u64(offPrepCommit) }
func (h *Header) Timestamp() uint64   { return h.u64(offPrepTimestamp) }
func (h *Header) Request() uint64     { return h.u64(offPrepRequest) }
func (h *Header) Session() uint64     { return h.u64(offPrepSession) }
func (h *Header) PrepareView() uint32 { return h.u32(offPrepView) }
func (h *Header) User() uint32        { return h.u32(offPrepUser) }
func (h *Header) Operation() uint8    { return h[offPrepOperation] }
func (h *Header) Context() [16]byte {
	var c [16]byte
	copy(c[:], h[offPrepContext:offPrepContext+16])
	return c
}

// Control fields (see the offsets above for which command uses which).

func (h *Header) ctlChecksum() Checksum { return h.sum(offCtlChecksum) }
func (h *Header) ctlA() uint64          { return h.u64(offCtlA) }
func (h *Header) ctlB() uint64          { return h.u64(offCtlB) }
func (h *Header) ctlC() uint64          { return h.u64(offCtlC) }
func (h *Header) ctlD() uint64          { return h.u64(offCtlD) }
func (h *Header) dvcLogView() uint32    { return h.u32(offCtlC) }
func (h *Header) dvcFlags() uint32      { return h.u32(offCtlC + 4) }
func (h *Header) bits(off int) bitset128 {
	return bitset128{lo: h.u64(off), hi: h.u64(off + 8)}
}
func (h *Header) putBits(off int, b bitset128) {
	h.put64(off, b.lo)
	h.put64(off+8, b.hi)
}
func (h *Header) nonce() uint64    { return h.u64(offNonce) }
func (h *Header) rangeLo() uint64  { return h.u64(offRangeLo) }
func (h *Header) rangeHi() uint64  { return h.u64(offRangeHi) }
func (h *Header) count32() uint32  { return h.u32(offCountU32) }
func (h *Header) chunkLen() uint32 { return h.u32(offChunkLen) }

// seal computes the frame checksum: XXH3-128 over bytes [16, 256). Because
// checksum_body lies inside that range, the seal also pins the body.
func (h *Header) seal() Checksum { return checksumOf(h[offChecksumBody:]) }

// Seal stores the frame checksum. Call it after every other field is final.
func (h *Header) Seal() { h.putSum(offChecksum, h.seal()) }

// SealValid reports whether the stored frame checksum matches the header.
func (h *Header) SealValid() bool { return h.sum(offChecksum) == h.seal() }

// prepareIdentity computes a prepare's identity: XXH3-128 over the header with
// the per-send envelope fields zeroed (checksum, view, replica, incarnation and
// the identity field itself). The identity therefore covers the body (through
// checksum_body), the op, the parent, the client fields and the view in which
// the op was prepared, but not who forwarded it or in which view it travels,
// so retransmission and repair by any replica keep one identity.
func prepareIdentity(h *Header) Checksum {
	var c Header = *h
	clear(c[offChecksum : offChecksum+16])
	clear(c[offView : offView+4])
	c[offReplica] = 0
	clear(c[offIncarnation : offIncarnation+8])
	clear(c[offPrepIdentity : offPrepIdentity+16])
	return checksumOf(c[:])
}

// isBlankPrepare reports whether h is all zero except possibly size: used for
// "no header" slots.
func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// bitset128 is a 128-bit set indexed 0..127, stored as two little-endian u64s.
type bitset128 struct{ lo, hi uint64 }

func (b *bitset128) set(i int) {
	if i < 64 {
		b.lo |= 1 << uint(i)
	} else {
		b.hi |= 1 << uint(i-64)
	}
}

func (b bitset128) has(i int) bool {
	if i < 64 {
		return b.lo&(1<<uint(i)) != 0
	}
	return b.hi&(1<<uint(i-64)) != 0
}

// fitsIn reports whether no bit at index ≥ n is set.
func (b bitset128) fitsIn(n int) bool {
	for i := n; i < 128; i++ {
		if b.has(i) {
			return false
		}
	}
	return true
}
