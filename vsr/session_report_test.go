package vsr

import (
	"errors"
	"slices"
	"testing"
)

func TestSessionReportRoundTrip(t *testing.T) {
	s := Sender{Cluster: Checksum{1, 2, 3}, Group: MetadataGroup, Replica: 2, ReplicaCount: 3, Incarnation: 1_700_000_000_000_000}
	r := SessionReport{Sequence: 9, Chunk: 1, Chunks: 3, Clients: []Checksum{{1}, {1, 5}, {7}}}
	m, err := Decode(forwardFrame(EncodeSessionReport(s, r)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Command() != CmdSessionReport || m.Header.Replica() != 2 || m.Header.Incarnation() != s.Incarnation ||
		m.Header.Group() != MetadataGroup {
		t.Fatalf("header: %s from %d boot %d group %x", m.Header.Command(), m.Header.Replica(), m.Header.Incarnation(), m.Header.Group())
	}
	got := DecodedSessionReport(m)
	if got.Sequence != 9 || got.Chunk != 1 || got.Chunks != 3 || !slices.Equal(got.Clients, r.Clients) {
		t.Fatalf("report: %+v", got)
	}
	empty, err := Decode(forwardFrame(EncodeSessionReport(s, SessionReport{Sequence: 1, Chunks: 1})), 1<<20)
	if err != nil || len(DecodedSessionReport(empty).Clients) != 0 {
		t.Fatalf("an empty report: %v", err)
	}
	if n := SessionReportMaxClients(HeaderSize + 16*10 + 15); n != 10 {
		t.Fatalf("SessionReportMaxClients = %d, want 10", n)
	}
}

func TestSessionReportRejectsMalformed(t *testing.T) {
	s := Sender{Cluster: Checksum{1}, Group: MetadataGroup, Replica: 0, ReplicaCount: 3, Incarnation: 1}
	good := EncodeSessionReport(s, SessionReport{Sequence: 1, Chunks: 1, Clients: []Checksum{{1}, {2}}})
	for _, tc := range []struct {
		name string
		edit func(h *Header, body []byte) []byte
	}{
		{"reserved byte", func(h *Header, b []byte) []byte { h[200] = 1; return b }},
		{"count above body", func(h *Header, b []byte) []byte { h.put32(offReportCount, 3); return b }},
		{"ragged body", func(h *Header, b []byte) []byte { return append(b, 0) }},
		{"chunk past chunks", func(h *Header, b []byte) []byte { h.put16(offReportChunk, 1); return b }},
		{"no chunks", func(h *Header, b []byte) []byte { h.put16(offReportChunks, 0); return b }},
		{"sequence 0", func(h *Header, b []byte) []byte { h.put64(offReportSequence, 0); return b }},
		{"not ascending", func(h *Header, b []byte) []byte { b[0], b[16] = 2, 1; return b }},
		{"duplicate", func(h *Header, b []byte) []byte { b[16] = 1; return b }},
	} {
		h := *good.Header
		body := tc.edit(&h, append([]byte{}, good.Body...))
		h.setSize(uint32(HeaderSize + len(body)))
		h.setChecksumBody(BodyChecksum(body))
		h.Seal()
		if _, err := Decode(append(h[:], body...), 1<<20); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a chunk outside its count encoded")
		}
	}()
	EncodeSessionReport(s, SessionReport{Sequence: 1, Chunk: 2, Chunks: 2})
}
