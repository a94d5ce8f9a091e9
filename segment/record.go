package segment

import (
	"encoding/binary"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Record layout (see the package doc). Only what storage needs; the wire
// package owns the full batch codec.
const (
	// RecordHeaderSize is the size of a record's batch header.
	RecordHeaderSize = 256
	// FrameHeaderSize is the size of a message frame header.
	FrameHeaderSize = 48

	hPartitionID     = 0
	hBaseOffset      = 8
	hBaseTimestamp   = 16
	hOriginTimestamp = 24
	hBatchLength     = 32
	hBatchChecksum   = 40
	hMessageCount    = 48
	hReserved        = 52

	fChecksum      = 0
	fUserHeaderLen = 32
	fPayloadLen    = 36
	fReserved      = 40

	// checksummedHeaderBytes is the prefix of the batch checksum input taken
	// from the header fields.
	checksummedHeaderBytes = 44
)

// recordHeader is the decoded part of a batch header that storage uses.
type recordHeader struct {
	partitionID   uint64
	baseOffset    uint64
	baseTimestamp uint64
	batchLength   uint64
	batchChecksum uint64
	messageCount  uint32
}

// nextOffset is the offset after the record's last message.
func (h recordHeader) nextOffset() uint64 { return h.baseOffset + uint64(h.messageCount) }

// parseHeader decodes the fields storage reads. b must hold at least
// RecordHeaderSize bytes.
func parseHeader(b []byte) recordHeader {
	_ = b[RecordHeaderSize-1]
	return recordHeader{
		partitionID:   binary.LittleEndian.Uint64(b[hPartitionID:]),
		baseOffset:    binary.LittleEndian.Uint64(b[hBaseOffset:]),
		baseTimestamp: binary.LittleEndian.Uint64(b[hBaseTimestamp:]),
		batchLength:   binary.LittleEndian.Uint64(b[hBatchLength:]),
		batchChecksum: binary.LittleEndian.Uint64(b[hBatchChecksum:]),
		messageCount:  binary.LittleEndian.Uint32(b[hMessageCount:]),
	}
}

// checkHeader reports why a header cannot start a stored record, or "" when
// it can. It looks only at the 256 header bytes in b, so it is what a walk
// that does not read bodies can verify.
func checkHeader(b []byte, h recordHeader, partitionID, maxRecord uint64) string {
	switch {
	case h.partitionID != partitionID:
		return fmt.Sprintf("partition_id %d, want %d", h.partitionID, partitionID)
	case h.messageCount == 0:
		return "message_count 0"
	case h.batchLength < RecordHeaderSize+FrameHeaderSize*uint64(h.messageCount):
		return fmt.Sprintf("batch_length %d too small for %d messages", h.batchLength, h.messageCount)
	case h.batchLength > maxRecord:
		return fmt.Sprintf("batch_length %d above the %d-byte record limit", h.batchLength, maxRecord)
	case h.baseOffset+uint64(h.messageCount) < h.baseOffset:
		return fmt.Sprintf("offsets overflow: base_offset %d + message_count %d", h.baseOffset, h.messageCount)
	}
	for _, c := range b[hReserved:RecordHeaderSize] {
		if c != 0 {
			return "reserved header bytes not zero"
		}
	}
	return ""
}

// verifyBody checks that rec (one whole record whose header passed
// checkHeader and whose length is batch_length) has frames that tile it
// exactly, zero frame reserved bytes, and correct frame and batch checksums.
// scratch is reused for the batch checksum input; the possibly grown slice is
// returned.
func verifyBody(rec []byte, h recordHeader, scratch []byte) (string, []byte) {
	need := checksummedHeaderBytes + 8*int(h.messageCount)
	if cap(scratch) < need {
		scratch = make([]byte, need, need+need/4)
	}
	scratch = scratch[:need]
	copy(scratch, rec[:checksummedHeaderBytes-4])
	binary.LittleEndian.PutUint32(scratch[checksummedHeaderBytes-4:], h.messageCount)

	pos := uint64(RecordHeaderSize)
	end := h.batchLength
	for i := uint32(0); i < h.messageCount; i++ {
		if end-pos < FrameHeaderSize {
			return fmt.Sprintf("frame %d header runs past the record end", i), scratch
		}
		f := rec[pos : pos+FrameHeaderSize]
		if binary.LittleEndian.Uint64(f[fReserved:]) != 0 {
			return fmt.Sprintf("frame %d reserved bytes not zero", i), scratch
		}
		body := uint64(binary.LittleEndian.Uint32(f[fPayloadLen:])) +
			uint64(binary.LittleEndian.Uint32(f[fUserHeaderLen:]))
		if body > end-pos-FrameHeaderSize {
			return fmt.Sprintf("frame %d body runs past the record end", i), scratch
		}
		fend := pos + FrameHeaderSize + body
		sum := binary.LittleEndian.Uint64(f[fChecksum:])
		if got := xxh3.Hash(rec[pos+8 : fend]); got != sum {
			return fmt.Sprintf("frame %d checksum %#x, computed %#x", i, sum, got), scratch
		}
		copy(scratch[checksummedHeaderBytes+8*int(i):], f[fChecksum:fChecksum+8])
		pos = fend
	}
	if pos != end {
		return fmt.Sprintf("frames end at %d, batch_length %d", pos, end), scratch
	}
	if got := xxh3.Hash(scratch); got != h.batchChecksum {
		return fmt.Sprintf("batch checksum %#x, computed %#x", h.batchChecksum, got), scratch
	}
	return "", scratch
}

// verifyRecord runs checkHeader and verifyBody over one whole record.
func verifyRecord(rec []byte, partitionID, maxRecord uint64, scratch []byte) (string, []byte) {
	if len(rec) < RecordHeaderSize {
		return fmt.Sprintf("record of %d bytes shorter than its header", len(rec)), scratch
	}
	h := parseHeader(rec)
	if why := checkHeader(rec, h, partitionID, maxRecord); why != "" {
		return why, scratch
	}
	if h.batchLength != uint64(len(rec)) {
		return fmt.Sprintf("batch_length %d, record holds %d bytes", h.batchLength, len(rec)), scratch
	}
	return verifyBody(rec, h, scratch)
}
