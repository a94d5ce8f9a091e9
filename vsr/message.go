package vsr

import (
	"errors"
	"fmt"
)

// Message is one replica-plane frame: a 256-byte header and a body. Decode
// returns a Message whose Header and Body alias the frame bytes (no copy); the
// replica keeps Prepare bodies by reference, so a caller must not reuse a frame
// buffer after handing it to Step.
type Message struct {
	Header *Header
	Body   []byte
}

// ErrMalformed is wrapped by every Decode error.
var ErrMalformed = errors.New("vsr: malformed frame")

// Limits that bound what a decoder accepts regardless of configuration.
const (
	// PipelineMax is the ceiling of prepare_queue_depth: a DoViewChange or
	// StartView carries at most this many suffix headers.
	PipelineMax = 127
	// RepairChunkCeiling is repair_chunk_max's ceiling.
	RepairChunkCeiling = 1024
	// ArtifactsMax is the most artifacts one checkpoint manifest lists.
	ArtifactsMax = 65536
	// ReplicasMax is the largest replica count a group may have.
	ReplicasMax  = 255
	artifactSize = 32
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// FrameSize reads the size field of a header prefix; transports call it after
// reading the first 256 bytes to learn how many body bytes follow. It returns
// an error when the size is below 256 or above maxSize.
func FrameSize(prefix []byte, maxSize uint32) (uint32, error) {
	if len(prefix) < HeaderSize {
		return 0, malformed("short header: %d bytes", len(prefix))
	}
	size := uint32(prefix[offSize]) | uint32(prefix[offSize+1])<<8 |
		uint32(prefix[offSize+2])<<16 | uint32(prefix[offSize+3])<<24
	if size < HeaderSize || size > maxSize {
		return 0, malformed("size %d outside [%d, %d]", size, HeaderSize, maxSize)
	}
	return size, nil
}

// Decode checks a complete frame strictly and returns it as a Message. It never
// panics on any input. maxSize bounds the whole frame (header + body). Checks
// that depend on the receiving replica (cluster id, group, replica count) are
// left to Replica.Step, which drops mismatching frames.
func Decode(frame []byte, maxSize uint32) (Message, error) {
	size, err := FrameSize(frame, maxSize)
	if err != nil {
		return Message{}, err
	}
	if int(size) != len(frame) {
		return Message{}, malformed("size field %d but frame has %d bytes", size, len(frame))
	}
	h := (*Header)(frame[:HeaderSize])
	body := frame[HeaderSize:size]
	if !h.SealValid() {
		return Message{}, malformed("header checksum mismatch")
	}
	if h.ChecksumBody() != BodyChecksum(body) {
		return Message{}, malformed("body checksum mismatch")
	}
	if h.Protocol() != ProtocolVersion {
		return Message{}, malformed("protocol %d, want %d", h.Protocol(), ProtocolVersion)
	}
	if n := h.ReplicaCount(); n == 0 || h.Replica() >= n {
		return Message{}, malformed("replica %d of %d", h.Replica(), n)
	}
	if !allZero(h[offReserved0 : offReserved0+3]) {
		return Message{}, malformed("reserved common bytes not zero")
	}
	m := Message{Header: h, Body: body}
	if err := validateCommand(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

func validateCommand(m Message) error {
	h := m.Header
	switch h.Command() {
	case CmdPrepare:
		return validatePrepare(h, len(m.Body))
	case CmdPrepareOk:
		if len(m.Body) != 0 || !allZero(h[112:]) {
			return malformed("prepare_ok: body or reserved bytes")
		}
		if h.ctlA() == 0 && !h.ctlChecksum().IsZero() {
			return malformed("prepare_ok: op 0 with identity")
		}
	case CmdCommit:
		if len(m.Body) != 0 || !allZero(h[128:]) {
			return malformed("commit: body or reserved bytes")
		}
		if h.ctlA() > h.ctlB() {
			return malformed("commit: commit %d above op %d", h.ctlA(), h.ctlB())
		}
		if h.ctlA() == 0 && !h.ctlChecksum().IsZero() {
			return malformed("commit: op 0 with identity")
		}
	case CmdStartViewChange:
		if len(m.Body) != 0 || !allZero(h[offCommandArea+4:]) || h.u32(offCommandArea)&^svcFlagEntered != 0 {
			return malformed("start_view_change: body or reserved bytes")
		}
	case CmdDoViewChange:
		if !allZero(h[176:]) || h.dvcFlags() != 0 {
			return malformed("do_view_change: reserved bytes")
		}
		if h.dvcLogView() >= h.View() {
			return malformed("do_view_change: log_view %d ≥ view %d", h.dvcLogView(), h.View())
		}
		n, err := validateSuffix(h, m.Body, h.dvcLogView())
		if err != nil {
			return err
		}
		if !h.bits(offDVCNack).fitsIn(n) || !h.bits(offDVCPresent).fitsIn(n) {
			return malformed("do_view_change: bitset beyond %d headers", n)
		}
	case CmdStartView:
		if !allZero(h[136:]) {
			return malformed("start_view: reserved bytes")
		}
		if h.ctlB() < h.ctlA() {
			return malformed("start_view: op %d below commit %d", h.ctlB(), h.ctlA())
		}
		if _, err := validateSuffix(h, m.Body, h.View()); err != nil {
			return err
		}
	case CmdRequestStartView:
		if len(m.Body) != 0 || !allZero(h[92:]) || h.u32(offRangeLo)&^(rsvRejoin|rsvReport) != 0 {
			return malformed("request_start_view: body or reserved bytes")
		}
	case CmdRequestPrepares:
		if len(m.Body) != 0 || !allZero(h[104:]) {
			return malformed("request_prepares: body or reserved bytes")
		}
		if h.rangeLo() == 0 || h.rangeLo() > h.rangeHi() {
			return malformed("request_prepares: range [%d, %d]", h.rangeLo(), h.rangeHi())
		}
	case CmdRangeEvicted:
		if len(m.Body) != 0 || !allZero(h[96:]) || h.rangeLo() == 0 {
			return malformed("range_evicted: body, reserved bytes or zero floor")
		}
	case CmdRequestManifest:
		if len(m.Body) != 0 || !allZero(h[88:]) {
			return malformed("request_manifest: body or reserved bytes")
		}
	case CmdManifest:
		return validateManifest(h, m.Body)
	case CmdRequestChunk:
		if len(m.Body) != 0 || !allZero(h[112:]) || h.chunkLen() == 0 {
			return malformed("request_chunk: body, reserved bytes or zero length")
		}
	case CmdChunk:
		if !allZero(h[112:]) || int(h.chunkLen()) != len(m.Body) || len(m.Body) == 0 {
			return malformed("chunk: reserved bytes or length %d vs body %d", h.chunkLen(), len(m.Body))
		}
	case CmdForward:
		if !allZero(h[offFwdOperation+1:]) || h[offFwdOperation] == OperationReserved {
			return malformed("forward: reserved bytes or operation")
		}
	case CmdForwardReply:
		if !allZero(h[offFwdReplyEnd:]) {
			return malformed("forward_reply: reserved bytes")
		}
	case CmdSessionReport:
		return validateSessionReport(h, m.Body)
	default:
		return malformed("unknown command %d", uint8(h.Command()))
	}
	return nil
}

// validatePrepare checks a prepare header. bodyLen is the body length the
// header must describe; a header carried inside a DoViewChange/StartView
// body has no body of its own, so its size field is only bounded.
func validatePrepare(h *Header, bodyLen int) error {
	if h.Command() != CmdPrepare {
		return malformed("not a prepare header: %s", h.Command())
	}
	if bodyLen >= 0 && int(h.Size()) != HeaderSize+bodyLen {
		return malformed("prepare: size %d but body %d", h.Size(), bodyLen)
	}
	if h.Size() < HeaderSize {
		return malformed("prepare: size %d", h.Size())
	}
	if h.Protocol() != ProtocolVersion {
		return malformed("prepare: protocol %d", h.Protocol())
	}
	if prepareIdentity(h) != h.Identity() {
		return malformed("prepare: identity mismatch")
	}
	if h.Op() == 0 || h.Commit() >= h.Op() {
		return malformed("prepare: op %d commit %d", h.Op(), h.Commit())
	}
	if h.PrepareView() > h.View() {
		return malformed("prepare: prepared in view %d, sent in view %d", h.PrepareView(), h.View())
	}
	if h.Operation() == 0 || h.Timestamp() == 0 {
		return malformed("prepare: reserved operation or zero timestamp")
	}
	if !allZero(h[offPrepOperation+1:offPrepContext]) || !allZero(h[offPrepEnd:]) {
		return malformed("prepare: reserved bytes not zero")
	}
	if !allZero(h[offReserved0 : offReserved0+3]) {
		return malformed("prepare: reserved common bytes not zero")
	}
	return nil
}

// validateSuffix checks the body of a DoViewChange or StartView: the headers of
// ops (commit, op] in descending order, each a valid prepare chained to the
// next lower one and the lowest chained to the commit identity. It returns the
// number of headers.
func validateSuffix(h *Header, body []byte, maxPrepareView uint32) (int, error) {
	commit, op := h.ctlA(), h.ctlB()
	if commit == 0 && !h.ctlChecksum().IsZero() {
		return 0, malformed("%s: op 0 with identity", h.Command())
	}
	want := uint64(0)
	if op > commit {
		want = op - commit
	}
	if want > PipelineMax {
		return 0, malformed("%s: %d suffix headers", h.Command(), want)
	}
	if uint64(len(body)) != want*HeaderSize {
		return 0, malformed("%s: body %d bytes, want %d headers", h.Command(), len(body), want)
	}
	n := int(want)
	for i := 0; i < n; i++ {
		ph := (*Header)(body[i*HeaderSize : (i+1)*HeaderSize])
		if err := validatePrepare(ph, -1); err != nil {
			return 0, err
		}
		if ph.Op() != op-uint64(i) {
			return 0, malformed("%s: header %d has op %d, want %d", h.Command(), i, ph.Op(), op-uint64(i))
		}
		if ph.PrepareView() > maxPrepareView {
			return 0, malformed("%s: header op %d prepared in view %d > %d", h.Command(), ph.Op(), ph.PrepareView(), maxPrepareView)
		}
		var below Checksum
		if i+1 < n {
			below = (*Header)(body[(i+1)*HeaderSize:]).Identity()
		} else {
			below = h.ctlChecksum()
		}
		if ph.Parent() != below {
			return 0, malformed("%s: chain break below op %d", h.Command(), ph.Op())
		}
	}
	return n, nil
}

func validateManifest(h *Header, body []byte) error {
	if !allZero(h[124:]) {
		return malformed("manifest: reserved bytes")
	}
	if len(body)%artifactSize != 0 || len(body)/artifactSize != int(h.u32(112)) || h.u32(112) > ArtifactsMax {
		return malformed("manifest: body %d bytes, count %d", len(body), h.u32(112))
	}
	if h.rangeLo() == 0 && (len(body) != 0 || !h.sum(96).IsZero()) {
		return malformed("manifest: unavailable manifest with content")
	}
	var prev uint32
	for i := 0; i < len(body)/artifactSize; i++ {
		a := body[i*artifactSize:]
		id := uint32(a[0]) | uint32(a[1])<<8 | uint32(a[2])<<16 | uint32(a[3])<<24
		if !allZero(a[4:8]) {
			return malformed("manifest: artifact %d reserved bytes", i)
		}
		if i > 0 && id <= prev {
			return malformed("manifest: artifact ids not ascending")
		}
		prev = id
	}
	return nil
}

// suffixHeader returns header i of a validated DoViewChange/StartView body.
func suffixHeader(body []byte, i int) *Header {
	return (*Header)(body[i*HeaderSize : (i+1)*HeaderSize])
}
