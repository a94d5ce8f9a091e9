package vsr

import (
	"bytes"
	"testing"
)

func FuzzDecodeClientTable(f *testing.F) {
	t := newClientTable(16)
	for i := 1; i <= 3; i++ {
		t.m[Checksum{byte(i)}] = &session{client: Checksum{byte(i)}, session: uint64(i), request: uint64(i * 2),
			lastOp: uint64(i * 3), replyOp: uint64(i * 3), reply: bytes.Repeat([]byte{byte(i)}, i)}
	}
	f.Add(t.encode())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ct, err := decodeClientTable(b, 16)
		if err != nil || len(b) == 0 {
			return
		}
		if !bytes.Equal(ct.encode(), b) {
			t.Fatal("session table does not re-encode to itself")
		}
	})
}
