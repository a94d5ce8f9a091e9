package vsr

import "bytes"

// Consumer session reports. Every node of a cluster tells the metadata
// primary, every consumer_group.heartbeat_interval, which consumer-group
// clients it serves; the primary expires the members it is not told about
// for consumer_group.session_timeout (package replica, consumer_group_sessions.go). Like
// Forward, a SessionReport reuses the frame format, its checksums and the
// replica plane's authenticated links; the replica never sends or
// consumes it.
//
// SessionReport (16), group = MetadataGroup, replica = the reporting node,
// incarnation = its boot (µs since the Unix epoch, the Boot its members'
// joins were stamped with):
//
//	80  u64  sequence   the report's number in this boot (from 1); every
//	                    chunk of one report has the same
//	88  u32  count      client ids in the body
//	92  u16  chunk      this frame's index in the report (from 0)
//	94  u16  chunks     the report's frame count (at least 1)
//	96  [160] reserved, zero
//
// Body: count × 16-byte client ids (the id an SDK registers its session
// with, low half first), in ascending byte order, distinct within the chunk.
const (
	offReportSequence = 80
	offReportCount    = 88
	offReportChunk    = 92
	offReportChunks   = 94
	offReportEnd      = 96
	reportClientSize  = 16
)

// SessionReport is one frame of a node's consumer session report.
type SessionReport struct {
	Sequence      uint64
	Chunk, Chunks uint16
	// Clients are in ascending byte order and distinct.
	Clients []Checksum
}

// EncodeSessionReport builds one SessionReport frame from s (whose
// Incarnation is the reporting node's boot). Clients must be in ascending byte
// order and distinct; the caller bounds their count by the frame size.
func EncodeSessionReport(s Sender, r SessionReport) Message {
	if r.Chunks == 0 || r.Chunk >= r.Chunks {
		panic("vsr: session report chunk outside its chunk count")
	}
	h := s.header(CmdSessionReport)
	h.put64(offReportSequence, r.Sequence)
	h.put32(offReportCount, uint32(len(r.Clients)))
	h.put16(offReportChunk, r.Chunk)
	h.put16(offReportChunks, r.Chunks)
	body := make([]byte, 0, len(r.Clients)*reportClientSize)
	for _, c := range r.Clients {
		body = append(body, c[:]...)
	}
	return sealed(h, body)
}

// DecodedSessionReport returns the report a SessionReport frame (already
// validated by Decode) carries; the reporting node is Header.Replica and
// its boot Header.Incarnation.
func DecodedSessionReport(m Message) SessionReport {
	h := m.Header
	r := SessionReport{Sequence: h.u64(offReportSequence), Chunk: h.u16(offReportChunk), Chunks: h.u16(offReportChunks)}
	r.Clients = make([]Checksum, len(m.Body)/reportClientSize)
	for i := range r.Clients {
		copy(r.Clients[i][:], m.Body[i*reportClientSize:])
	}
	return r
}

// SessionReportMaxClients is how many client ids fit one frame of at most
// maxFrame bytes.
func SessionReportMaxClients(maxFrame uint32) int {
	if maxFrame <= HeaderSize {
		return 0
	}
	return int(maxFrame-HeaderSize) / reportClientSize
}

func validateSessionReport(h *Header, body []byte) error {
	if !allZero(h[offReportEnd:]) {
		return malformed("session_report: reserved bytes")
	}
	if n := h.u32(offReportCount); uint64(n)*reportClientSize != uint64(len(body)) {
		return malformed("session_report: count %d but body %d", n, len(body))
	}
	if h.u16(offReportChunks) == 0 || h.u16(offReportChunk) >= h.u16(offReportChunks) {
		return malformed("session_report: chunk %d of %d", h.u16(offReportChunk), h.u16(offReportChunks))
	}
	if h.u64(offReportSequence) == 0 {
		return malformed("session_report: sequence 0")
	}
	for i := reportClientSize; i < len(body); i += reportClientSize {
		if bytes.Compare(body[i-reportClientSize:i], body[i:i+reportClientSize]) >= 0 {
			return malformed("session_report: client ids not ascending at %d", i/reportClientSize)
		}
	}
	return nil
}
