package vsr

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/zeebo/xxh3"
)

// Checksum is a 128-bit XXH3 digest, stored little-endian (low 64 bits first).
// Every checksum in the replica plane and in the durable state record is one of
// these, so the strength is a full 128 bits everywhere (Iggy widens 64-bit
// digests into 128-bit fields).
type Checksum [16]byte

// IsZero reports whether c is all zero bytes.
func (c Checksum) IsZero() bool { return c == Checksum{} }

// String renders the first 8 bytes as hex; enough to tell prepares apart in
// traces and panics without flooding them.
func (c Checksum) String() string { return hex.EncodeToString(c[:4]) }

func checksumOf(b []byte) Checksum {
	return fromUint128(xxh3.Hash128(b))
}

func fromUint128(u xxh3.Uint128) Checksum {
	var c Checksum
	binary.LittleEndian.PutUint64(c[0:8], u.Lo)
	binary.LittleEndian.PutUint64(c[8:16], u.Hi)
	return c
}

// BodyChecksum is the checksum_body of a frame: XXH3-128 of the body, or zero
// for an empty body (so a header-only frame has an all-zero field that a
// decoder can check exactly).
func BodyChecksum(body []byte) Checksum {
	if len(body) == 0 {
		return Checksum{}
	}
	return checksumOf(body)
}

// ChecksumStream computes a Checksum over data written in pieces; state
// transfer uses it to verify an artifact chunk by chunk.
type ChecksumStream struct{ h *xxh3.Hasher128 }

// NewChecksumStream returns an empty stream.
func NewChecksumStream() *ChecksumStream { return &ChecksumStream{h: xxh3.New128()} }

// Write adds p to the stream.
func (s *ChecksumStream) Write(p []byte) { _, _ = s.h.Write(p) }

// Sum returns the checksum of everything written so far.
func (s *ChecksumStream) Sum() Checksum { return fromUint128(s.h.Sum128()) }
