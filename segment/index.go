package segment

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/zeebo/xxh3"
)

// IndexEntrySize is the size of one .index entry (see the package doc).
const IndexEntrySize = 24

const (
	iRelOffset = 0
	iPosition  = 4
	iMaxTS     = 8
	iLength    = 16
	iChecksum  = 20
)

// indexEntry is one decoded .index entry.
type indexEntry struct {
	rel    uint32 // base_offset − segment start
	pos    uint32 // byte position in the .log
	length uint32 // batch_length
	maxTS  uint64 // running max of base_timestamp up to this record
}

func (e indexEntry) end() int64 { return int64(e.pos) + int64(e.length) }

// encodeEntry writes e into b[:IndexEntrySize].
func encodeEntry(b []byte, e indexEntry, segStart uint64) {
	_ = b[IndexEntrySize-1]
	binary.LittleEndian.PutUint32(b[iRelOffset:], e.rel)
	binary.LittleEndian.PutUint32(b[iPosition:], e.pos)
	binary.LittleEndian.PutUint64(b[iMaxTS:], e.maxTS)
	binary.LittleEndian.PutUint32(b[iLength:], e.length)
	binary.LittleEndian.PutUint32(b[iChecksum:], uint32(xxh3.HashSeed(b[:iChecksum], segStart)))
}

// decodeEntry reads b[:IndexEntrySize]; ok is false when the checksum fails.
func decodeEntry(b []byte, segStart uint64) (e indexEntry, ok bool) {
	_ = b[IndexEntrySize-1]
	e = indexEntry{
		rel:    binary.LittleEndian.Uint32(b[iRelOffset:]),
		pos:    binary.LittleEndian.Uint32(b[iPosition:]),
		maxTS:  binary.LittleEndian.Uint64(b[iMaxTS:]),
		length: binary.LittleEndian.Uint32(b[iLength:]),
	}
	return e, binary.LittleEndian.Uint32(b[iChecksum:]) == uint32(xxh3.HashSeed(b[:iChecksum], segStart))
}

// checkEntrySequence reports why entry e cannot follow prev (hasPrev false
// for the first entry) in a segment whose log holds logSize bytes, or "".
// Beyond field order it checks only what an entry says about itself; that
// its record really sits there is checked when the record is read.
func checkEntrySequence(prev indexEntry, hasPrev bool, e indexEntry, logSize int64) string {
	if !hasPrev {
		if e.rel != 0 || e.pos != 0 {
			return fmt.Sprintf("first entry at offset +%d, position %d; want +0, 0", e.rel, e.pos)
		}
	} else {
		switch {
		case e.rel <= prev.rel:
			return fmt.Sprintf("relative offset %d not above %d", e.rel, prev.rel)
		case int64(e.pos) < prev.end():
			return fmt.Sprintf("position %d inside the previous record [%d, %d)", e.pos, prev.pos, prev.end())
		case e.maxTS < prev.maxTS:
			return fmt.Sprintf("max timestamp %d below %d", e.maxTS, prev.maxTS)
		}
	}
	if e.length < RecordHeaderSize+FrameHeaderSize {
		return fmt.Sprintf("record length %d below the smallest record", e.length)
	}
	if e.end() > logSize {
		return fmt.Sprintf("record [%d, %d) past the log end %d", e.pos, e.end(), logSize)
	}
	return ""
}

// indexer decides which records get an entry: a pure function of record
// lengths (see the package doc), shared by Append and recovery.
type indexer struct {
	interval   int64
	lastPos    int64 // position of the last indexed record
	hasEntries bool
	maxTS      uint64
}

// add accounts for a record at pos and returns its entry and whether it is
// to be written.
func (x *indexer) add(segStart uint64, h recordHeader, pos int64) (indexEntry, bool) {
	x.maxTS = max(x.maxTS, h.baseTimestamp)
	if x.hasEntries && pos-x.lastPos < x.interval {
		return indexEntry{}, false
	}
	x.hasEntries = true
	x.lastPos = pos
	return indexEntry{
		rel:    uint32(h.baseOffset - segStart),
		pos:    uint32(pos),
		length: uint32(h.batchLength),
		maxTS:  x.maxTS,
	}, true
}

// resumeAt primes x to continue after the record of entry e, for which add
// was already called.
func (x *indexer) resumeAt(e indexEntry) {
	x.hasEntries = true
	x.lastPos = int64(e.pos)
	x.maxTS = e.maxTS
}

// searchEntries returns the number of leading entries for which below
// holds; below must hold for a prefix of es.
func searchEntries(es []indexEntry, below func(indexEntry) bool) int {
	return sort.Search(len(es), func(i int) bool { return !below(es[i]) })
}
