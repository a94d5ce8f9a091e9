package cli

import (
	"encoding/binary"
	"fmt"

	"github.com/iggo/iggo/wire"
)

// Message files (`message poll --output-file`, `message send --input-file`)
// hold polled messages back to back, each in Iggy's message record layout,
// so files are interchangeable with Iggy's CLI. All integers little-endian:
//
//	 0   8  checksum          u64, the message's frame checksum as polled
//	 8  16  id                u128
//	24   8  offset            u64
//	32   8  timestamp         u64 µs, server append time
//	40   8  origin_timestamp  u64 µs, producer time
//	48   4  user_headers_len  u32
//	52   4  payload_len       u32
//	56   8  reserved          zero
//	64   …  payload (payload_len bytes), then user headers (user_headers_len)
//
// Replaying sends id, payload, user headers and origin timestamp; the
// target assigns new offsets and timestamps.
const msgRecordHeader = 64

// appendMessageRecord appends one record.
func appendMessageRecord(dst []byte, m wire.PolledMessage) []byte {
	var h [msgRecordHeader]byte
	binary.LittleEndian.PutUint64(h[0:], m.Checksum)
	binary.LittleEndian.PutUint64(h[8:], m.ID.Lo)
	binary.LittleEndian.PutUint64(h[16:], m.ID.Hi)
	binary.LittleEndian.PutUint64(h[24:], m.Offset)
	binary.LittleEndian.PutUint64(h[32:], m.Timestamp)
	binary.LittleEndian.PutUint64(h[40:], m.OriginTimestamp)
	binary.LittleEndian.PutUint32(h[48:], uint32(len(m.UserHeaders)))
	binary.LittleEndian.PutUint32(h[52:], uint32(len(m.Payload)))
	dst = append(dst, h[:]...)
	dst = append(dst, m.Payload...)
	return append(dst, m.UserHeaders...)
}

// decodeMessageRecords parses a whole file. Payloads alias b.
func decodeMessageRecords(b []byte) ([]wire.PolledMessage, error) {
	var out []wire.PolledMessage
	for off := 0; off < len(b); {
		if len(b)-off < msgRecordHeader {
			return nil, fmt.Errorf("record %d at byte %d: %d bytes left, a record header needs %d", len(out), off, len(b)-off, msgRecordHeader)
		}
		h := b[off : off+msgRecordHeader]
		hl := uint64(binary.LittleEndian.Uint32(h[48:]))
		pl := uint64(binary.LittleEndian.Uint32(h[52:]))
		if pl == 0 {
			return nil, fmt.Errorf("record %d at byte %d: empty payload", len(out), off)
		}
		end := uint64(off) + msgRecordHeader + pl + hl
		if end > uint64(len(b)) {
			return nil, fmt.Errorf("record %d at byte %d: payload and headers (%d bytes) run past the end of the file", len(out), off, pl+hl)
		}
		body := b[off+msgRecordHeader : end]
		m := wire.PolledMessage{
			Checksum:        binary.LittleEndian.Uint64(h[0:]),
			ID:              wire.Uint128{Lo: binary.LittleEndian.Uint64(h[8:]), Hi: binary.LittleEndian.Uint64(h[16:])},
			Offset:          binary.LittleEndian.Uint64(h[24:]),
			Timestamp:       binary.LittleEndian.Uint64(h[32:]),
			OriginTimestamp: binary.LittleEndian.Uint64(h[40:]),
			Payload:         body[:pl],
		}
		if hl > 0 {
			m.UserHeaders = body[pl:]
			if err := wire.ValidateUserHeaders(m.UserHeaders); err != nil {
				return nil, fmt.Errorf("record %d at byte %d: %v", len(out), off, err)
			}
		}
		out = append(out, m)
		off = int(end)
	}
	return out, nil
}
