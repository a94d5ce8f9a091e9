package journal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Sizes and magics of the on-disk structures (see the package doc).
const (
	FileHeaderSize   = 64
	RecordHeaderSize = 96
	Version          = 1

	fileMagic   = "IGGOJRNL"
	recordMagic = "IGJR"

	// flagEnd marks an end marker: a record header with no entry that
	// ends the data of a partition file whose later bytes are stale (a
	// recycled file; see "Recycled files" in the package doc).
	flagEnd = 1
)

// Kinds of journal file, stored in the file header.
const (
	kindMetadata  = 1
	kindPartition = 2
)

// Uint128 is a 128-bit checksum or link, laid out as in xxh3.
type Uint128 struct{ Hi, Lo uint64 }

func (u Uint128) isZero() bool { return u == Uint128{} }

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

// Checksum is the entry checksum journal records carry: XXH3-128 of the
// entry's bytes, parts concatenated.
func Checksum(parts ...[]byte) Uint128 {
	if len(parts) == 1 {
		return sum128(parts[0])
	}
	h := xxh3.New128()
	for _, p := range parts {
		_, _ = h.Write(p)
	}
	s := h.Sum128()
	return Uint128{Hi: s.Hi, Lo: s.Lo}
}

// link chains records: it depends only on the op, the entry's content and
// the previous link, so rewriting a record elsewhere (compaction) or
// repairing it with the same entry keeps the chain.
func link(op uint64, entry, prev Uint128) Uint128 {
	var b [40]byte
	binary.LittleEndian.PutUint64(b[0:], op)
	putU128(b[8:], entry)
	putU128(b[24:], prev)
	return sum128(b[:])
}

// recordHeader is a decoded record header.
type recordHeader struct {
	op     uint64
	offset int64
	length uint32
	synced uint64
	entry  Uint128
	prev   Uint128
	// end: an end marker (flagEnd), not a record; op is the op of the
	// record it follows, prev that record's link, length 0.
	end bool
	// file: the first op of the partition file the record was written
	// into (its incarnation); 0 in the metadata journal.
	file uint64
}

func (h recordHeader) link() Uint128 { return link(h.op, h.entry, h.prev) }

func (h recordHeader) total() int64 { return RecordHeaderSize + int64(h.length) }

func encodeRecordHeader(b []byte, h recordHeader) {
	clear(b[:RecordHeaderSize])
	copy(b[16:20], recordMagic)
	b[20] = Version
	if h.end {
		b[21] = flagEnd
	}
	binary.LittleEndian.PutUint64(b[24:], h.op)
	binary.LittleEndian.PutUint64(b[32:], uint64(h.offset))
	binary.LittleEndian.PutUint32(b[40:], h.length)
	binary.LittleEndian.PutUint64(b[48:], h.synced)
	putU128(b[56:], h.entry)
	putU128(b[72:], h.prev)
	binary.LittleEndian.PutUint64(b[88:], h.file)
	putU128(b[0:], sum128(b[16:RecordHeaderSize]))
}

var errBadHeader = errors.New("journal: invalid record header")

// decodeRecordHeader validates b as the header of a record at offset off
// whose entry may be at most maxEntry bytes. It checks only the header;
// the entry checksum is the caller's.
func decodeRecordHeader(b []byte, off int64, maxEntry int) (recordHeader, error) {
	var h recordHeader
	if len(b) < RecordHeaderSize {
		return h, fmt.Errorf("%w: %d bytes", errBadHeader, len(b))
	}
	b = b[:RecordHeaderSize]
	if string(b[16:20]) != recordMagic {
		return h, fmt.Errorf("%w: magic", errBadHeader)
	}
	if getU128(b) != sum128(b[16:]) {
		return h, fmt.Errorf("%w: checksum", errBadHeader)
	}
	if b[20] != Version || b[21]&^flagEnd != 0 || binary.LittleEndian.Uint16(b[22:]) != 0 ||
		binary.LittleEndian.Uint32(b[44:]) != 0 {
		return h, fmt.Errorf("%w: version %d or reserved bytes", errBadHeader, b[20])
	}
	h.op = binary.LittleEndian.Uint64(b[24:])
	h.offset = int64(binary.LittleEndian.Uint64(b[32:]))
	h.length = binary.LittleEndian.Uint32(b[40:])
	h.synced = binary.LittleEndian.Uint64(b[48:])
	h.entry = getU128(b[56:])
	h.prev = getU128(b[72:])
	h.end = b[21] == flagEnd
	h.file = binary.LittleEndian.Uint64(b[88:])
	if h.end && (h.length != 0 || !h.entry.isZero()) {
		return h, fmt.Errorf("%w: end marker with an entry", errBadHeader)
	}
	if h.offset != off {
		return h, fmt.Errorf("%w: written for offset %d, found at %d", errBadHeader, h.offset, off)
	}
	if int64(h.length) > int64(maxEntry) {
		return h, fmt.Errorf("%w: entry of %d bytes exceeds %d", errBadHeader, h.length, maxEntry)
	}
	return h, nil
}

// fileHeader is the first FileHeaderSize bytes of every journal file.
type fileHeader struct {
	kind    uint8
	firstOp uint64  // op of the file's first record; 0 when not yet known
	prev    Uint128 // link of op firstOp-1; zero when unknown
}

func encodeFileHeader(b []byte, h fileHeader) {
	clear(b[:FileHeaderSize])
	copy(b[16:24], fileMagic)
	binary.LittleEndian.PutUint16(b[24:], Version)
	b[26] = h.kind
	binary.LittleEndian.PutUint64(b[32:], h.firstOp)
	putU128(b[40:], h.prev)
	putU128(b[0:], sum128(b[16:FileHeaderSize]))
}

var errBadFileHeader = errors.New("journal: invalid file header")

func decodeFileHeader(b []byte) (fileHeader, error) {
	var h fileHeader
	if len(b) < FileHeaderSize {
		return h, fmt.Errorf("%w: %d bytes", errBadFileHeader, len(b))
	}
	b = b[:FileHeaderSize]
	if getU128(b) != sum128(b[16:]) || string(b[16:24]) != fileMagic {
		return h, fmt.Errorf("%w: checksum or magic", errBadFileHeader)
	}
	if v := binary.LittleEndian.Uint16(b[24:]); v != Version {
		return h, fmt.Errorf("%w: version %d", errBadFileHeader, v)
	}
	for _, x := range b[27:32] {
		if x != 0 {
			return h, fmt.Errorf("%w: reserved bytes", errBadFileHeader)
		}
	}
	if binary.LittleEndian.Uint64(b[56:]) != 0 {
		return h, fmt.Errorf("%w: reserved bytes", errBadFileHeader)
	}
	h.kind = b[26]
	if h.kind != kindMetadata && h.kind != kindPartition {
		return h, fmt.Errorf("%w: kind %d", errBadFileHeader, h.kind)
	}
	h.firstOp = binary.LittleEndian.Uint64(b[32:])
	h.prev = getU128(b[40:])
	return h, nil
}
