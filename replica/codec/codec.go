// Package codec transforms message batches between the form clients send
// and receive (package wire) and the form stored at rest: a Stack is
// applied once when a send is admitted, before the batch becomes a prepare,
// so the journal, the replicas and the segments all hold the same stored
// bytes, and it is undone when a poll reply is built. A node has one Stack:
// compression chosen per batch (the topic's compression_codec: gzip, zstd
// or lz4; Iggy's compression_algorithm = gzip is gzip) and, with
// encryption at rest on, sealing under the node's key. Encode compresses,
// then seals; Decode opens, then decompresses.
//
// # Stored forms
//
// Every stored record keeps the wire layout: the 256-byte batch header and
// one 48-byte frame header per message, each frame's checksum recomputed
// over the stored bytes (XXH3-64 of the frame from byte 8, as in wire), and
// the batch header keeps every field but batch_length and batch_checksum,
// which describe the stored record. So everything that checks stored
// records (segment reads with partition.validate_checksum, boot scans,
// journal repair, state transfer) checks the stored bytes, and nothing on
// disk needs the key to be verified. Decode rebuilds the record a client
// expects: lengths, frame checksums, batch_length and batch_checksum
// recomputed over the bytes the producer sent, which is what Iggy's SDKs
// verify. A record is in one of three forms:
//
//   - As sent (no encryption, no compression, or a batch compression did
//     not make smaller).
//   - Sections (encryption, not compressed): Sections(s) replaces every
//     payload, and every non-empty user-headers block, by s.Seal of it; an
//     empty user-headers block stays empty. Each frame's payload_len and
//     user_headers_len give the sealed lengths.
//   - Compressed (below).
//
// # Compressed form
//
// All the messages' bytes sit in one block, the user-headers section of
// frame 0: frame 0 has payload_len 0 and user_headers_len the block's
// length; frames 1..n-1 keep their headers (id, offset_delta,
// timestamp_delta) with both lengths 0. The block, little-endian:
//
//	off  size  field
//	  0     1  marker 0x00 (no client user-headers block starts with kind 0,
//	           and a sealed payload is never empty: this is how a stored
//	           record is told compressed, Compressed)
//	  1     1  algorithm: 1 gzip (RFC 1952), 2 zstd (RFC 8878 frame), 3 lz4
//	           (LZ4 block format, no frame)
//	  2     1  flags: bit 0 = the data is sealed (encryption at rest); other
//	           bits zero
//	  3     1  reserved, zero
//	  4     4  body_size u32: bytes of the uncompressed body
//	  8     8  XXH3-64 of the uncompressed body (checked after
//	           decompressing: LZ4 has no checksum of its own)
//	 16     …  the body compressed with the algorithm, and then, with flag
//	           bit 0, sealed as one section (nonce ‖ ciphertext ‖ tag)
//
// The body is, per message in order, [payload_len u32][user_headers_len
// u32][payload][user headers]. A compressed record is never cut by a poll
// on the shard (its bytes all sit in frame 0): the partition hands it over
// whole with the range to keep, and the connection cuts the decoded
// record. Decode refuses a body larger than the node's largest record, a
// size or checksum that does not match, and frames 1..n-1 that hold bytes.
// Every message still costs its 48-byte frame header uncompressed, which
// bounds what compression can save on small messages.
//
// Encode stores a batch uncompressed when the compressed form would not be
// smaller, so incompressible data costs nothing but the attempt. A
// partition may hold records of every form (a topic's codec is updatable);
// each decodes by what it is.
//
// # AES-256-GCM (AESGCM)
//
// A sealed section is Iggy 0.9's layout, byte for byte:
//
//	0..12       nonce, 12 random bytes (a fresh one per section)
//	12..n-16    ciphertext, as long as the plaintext
//	n-16..n     GCM tag
//
// so a section grows by Overhead (28) bytes, and a batch of m messages, h
// of them with user headers, by 28 × (m + h) in the Sections form (28 in
// all in the compressed form). No additional data is authenticated (as
// Iggy). With random 96-bit nonces one key must not seal more than 2^32
// sections (NIST SP 800-38D), as for Iggy.
package codec

import (
	"errors"
	"fmt"

	"github.com/iggo/iggo/wire"
)

// Codec rewrites batches at rest.
type Codec interface {
	// Encode appends the stored form of a verified producer batch to dst.
	Encode(dst []byte, batch wire.BatchView) ([]byte, error)
	// Decode appends the client form of one stored record to dst. The
	// record is given as its 256-byte header and its frames: a whole
	// record split at 256, or a poll slice (a header rewritten for a run of
	// the record's frames, and that run).
	Decode(dst []byte, header, frames []byte) ([]byte, error)
}

// Sealer transforms one section: a payload or a user-headers block.
type Sealer interface {
	// Seal appends the stored form of plain to dst.
	Seal(dst, plain []byte) ([]byte, error)
	// Open appends the section sealed holds to dst; a section that does
	// not open fails with an error wrapping ErrOpen.
	Open(dst, sealed []byte) ([]byte, error)
}

// ErrOpen: a stored section does not open (damaged, or sealed under
// another key). Clients see Iggy's CannotDecryptData (72).
var ErrOpen = errors.New("codec: stored section does not open")

// Sections returns the Codec applying s to every payload and to every
// non-empty user-headers block.
func Sections(s Sealer) Codec { return sections{s} }

type sections struct{ s Sealer }

func (c sections) Encode(dst []byte, batch wire.BatchView) ([]byte, error) {
	rec := batch.Bytes()
	start := len(dst)
	dst = append(dst, rec[:wire.BatchHeaderSize]...)
	it := batch.Frames()
	var n uint32
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		var err error
		if dst, err = c.frame(dst, f, c.s.Seal); err != nil {
			return dst[:start], err
		}
		n++
	}
	if err := wire.FinishBatch(dst[start:], n); err != nil {
		return dst[:start], fmt.Errorf("codec: encoded batch: %w", err)
	}
	return dst, nil
}

func (c sections) Decode(dst []byte, header, frames []byte) ([]byte, error) {
	if len(header) != wire.BatchHeaderSize {
		return dst, fmt.Errorf("codec: record header of %d bytes", len(header))
	}
	start := len(dst)
	dst = append(dst, header...)
	var n uint32
	for off := 0; off < len(frames); n++ {
		f, err := frameAt(frames, off)
		if err != nil {
			return dst[:start], err
		}
		off += len(f)
		if dst, err = c.frame(dst, f, c.s.Open); err != nil {
			return dst[:start], err
		}
	}
	if err := wire.FinishBatch(dst[start:], n); err != nil {
		return dst[:start], fmt.Errorf("codec: decoded record: %w", err)
	}
	return dst, nil
}

// frame appends f with its sections transformed by op.
func (c sections) frame(dst []byte, f wire.Frame, op func(dst, in []byte) ([]byte, error)) ([]byte, error) {
	at := len(dst)
	dst = append(dst, f[:wire.FrameHeaderSize]...)
	var err error
	if dst, err = op(dst, f.Payload()); err != nil {
		return dst[:at], err
	}
	payloadLen := len(dst) - at - wire.FrameHeaderSize
	if h := f.UserHeaders(); len(h) > 0 {
		if dst, err = op(dst, h); err != nil {
			return dst[:at], err
		}
	}
	wire.FinishFrame(dst[at:], payloadLen)
	return dst, nil
}

// frameAt bounds-checks the frame at off: stored bytes are not trusted to
// be well formed.
func frameAt(frames []byte, off int) (wire.Frame, error) {
	if len(frames)-off < wire.FrameHeaderSize {
		return nil, fmt.Errorf("codec: frame at %d: %d bytes left, header needs %d", off, len(frames)-off, wire.FrameHeaderSize)
	}
	f := wire.Frame(frames[off:])
	size := uint64(wire.FrameHeaderSize) + uint64(f.PayloadLen()) + uint64(f.UserHeadersLen())
	if size > uint64(len(frames)-off) {
		return nil, fmt.Errorf("codec: frame at %d of %d bytes overruns the record", off, size)
	}
	return f[:size:size], nil
}
