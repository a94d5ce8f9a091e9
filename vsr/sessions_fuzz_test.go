package vsr

import (
	"bytes"
	"testing"
)

func FuzzDecodeClientTable(f *testing.F) {
	t := newClientTable(16)
	for i := 1; i <= 3; i++ {
		t.m[Checksum{byte(i)}] = &session{client: Checksum{byte(i)}, session: uint64(i), request: uint64(i * 2),
			user: uint32(i), owned: i != 2, lastOp: uint64(i * 3), replyOp: uint64(i * 3), reply: bytes.Repeat([]byte{byte(i)}, i)}
	}
	t.m[Checksum{2}].user = 0
	f.Add(t.encode())
	f.Add([]byte{})
	// The first format: no owner flag in the count, no user fields.
	f.Add(append([]byte{1, 0, 0, 0, 9}, make([]byte, 15+32+4)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		ct, err := decodeClientTable(b, 16)
		if err != nil || len(b) == 0 {
			return
		}
		enc := ct.encode()
		if len(b) >= 4 && b[3]&0x80 != 0 && !bytes.Equal(enc, b) {
			t.Fatal("session table does not re-encode to itself")
		}
		// A first-format table re-encodes in the current format, which
		// decodes to the same table.
		back, err := decodeClientTable(enc, 16)
		if err != nil || !bytes.Equal(back.encode(), enc) {
			t.Fatalf("re-encoded table does not round trip: %v", err)
		}
	})
}

func FuzzDecodeProducerTable(f *testing.F) {
	t := newDedupTable(16)
	t.floor = 7
	for i := 1; i <= 3; i++ {
		t.m[Checksum{byte(i)}] = &session{client: Checksum{byte(i)}, session: uint64(i + 5), request: uint64(i * 2),
			user: uint32(i), owned: true, lastOp: uint64(i * 3), replyOp: uint64(i * 3), reply: bytes.Repeat([]byte{byte(i)}, 8)}
	}
	f.Add(t.encode())
	f.Add(newDedupTable(16).encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		pt, err := decodeTable(b, 16, true)
		if err != nil || len(b) == 0 {
			return
		}
		if enc := pt.encode(); !bytes.Equal(enc, b) {
			t.Fatal("producer table does not re-encode to itself")
		}
	})
}
