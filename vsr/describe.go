package vsr

import "fmt"

// DescribeControl renders the command-specific fields of a header for traces
// and logs (one line, stable format; golden tests depend on it).
func DescribeControl(h *Header) string {
	switch h.Command() {
	case CmdPrepare:
		return fmt.Sprintf("op=%d commit=%d id=%s parent=%s", h.Op(), h.Commit(), h.Identity(), h.Parent())
	case CmdPrepareOk:
		return fmt.Sprintf("op=%d id=%s", h.ctlA(), h.ctlChecksum())
	case CmdCommit:
		return fmt.Sprintf("commit=%d op=%d beat=%d", h.ctlA(), h.ctlB(), h.ctlC())
	case CmdStartViewChange:
		if h.u32(offCommandArea)&svcFlagEntered != 0 {
			return "entered"
		}
		return ""
	case CmdDoViewChange:
		floor := ""
		if f := h.u64(offDVCNackFloor); f == ^uint64(0) {
			floor = " nacks=none"
		} else if f != 0 {
			floor = fmt.Sprintf(" nacks>%d", f)
		}
		return fmt.Sprintf("log_view=%d commit=%d op=%d nack=%s present=%s%s", h.dvcLogView(), h.ctlA(), h.ctlB(),
			bitString(h.bits(offDVCNack), int(h.ctlB()-min(h.ctlA(), h.ctlB()))),
			bitString(h.bits(offDVCPresent), int(h.ctlB()-min(h.ctlA(), h.ctlB()))), floor)
	case CmdStartView:
		return fmt.Sprintf("commit=%d op=%d nonce=%d", h.ctlA(), h.ctlB(), h.ctlC())
	case CmdRequestStartView:
		return fmt.Sprintf("nonce=%d", h.nonce())
	case CmdRequestPrepares:
		return fmt.Sprintf("ops=%d..%d", h.rangeLo(), h.rangeHi())
	case CmdRangeEvicted:
		return fmt.Sprintf("floor=%d", h.rangeLo())
	case CmdRequestManifest:
		return ""
	case CmdManifest:
		return fmt.Sprintf("checkpoint=%d artifacts=%d", h.rangeLo(), h.u32(112))
	case CmdRequestChunk, CmdChunk:
		return fmt.Sprintf("checkpoint=%d artifact=%d offset=%d len=%d", h.rangeLo(), h.count32(), h.rangeHi(), h.chunkLen())
	}
	return ""
}

// bitString renders the first n bits, highest op first (bit 0 is the head).
func bitString(b bitset128, n int) string {
	s := make([]byte, n)
	for i := 0; i < n; i++ {
		s[i] = '0'
		if b.has(i) {
			s[i] = '1'
		}
	}
	return string(s)
}

// ControlFields are the command-specific fields of a control header, decoded
// for tools, tests and the simulator's checks. Fields a command does not
// carry are zero.
type ControlFields struct {
	// Op: PrepareOk the acknowledged op; Commit/DoViewChange/StartView the
	// head op.
	Op uint64
	// Commit and CommitID: Commit/DoViewChange/StartView commit point.
	Commit   uint64
	CommitID Checksum
	// ID: PrepareOk the identity of Op.
	ID Checksum
	// LogView: DoViewChange.
	LogView uint32
	// NackFloor: DoViewChange: the sender nacks no op at or below it.
	NackFloor uint64
	nack      bitset128
	// Entered: StartViewChange from a replica already in that view.
	Entered bool
	// Nonce: StartView, RequestStartView and the repair/transfer commands.
	Nonce uint64
}

// Nacked reports, for a DoViewChange, whether the sender nacks the op of
// body header i (0 is the head op). Ops above the head and above NackFloor
// are nacked implicitly; ops at or below NackFloor never are.
func (c ControlFields) Nacked(i int) bool { return i >= 0 && i < 128 && c.nack.has(i) }

// Control decodes the command-specific fields of h.
func (h *Header) Control() ControlFields {
	switch h.Command() {
	case CmdPrepareOk:
		return ControlFields{Op: h.ctlA(), ID: h.ctlChecksum()}
	case CmdCommit:
		return ControlFields{Op: h.ctlB(), Commit: h.ctlA(), CommitID: h.ctlChecksum()}
	case CmdDoViewChange:
		return ControlFields{Op: h.ctlB(), Commit: h.ctlA(), CommitID: h.ctlChecksum(), LogView: h.dvcLogView(),
			NackFloor: h.u64(offDVCNackFloor), nack: h.bits(offDVCNack)}
	case CmdStartView:
		return ControlFields{Op: h.ctlB(), Commit: h.ctlA(), CommitID: h.ctlChecksum(), Nonce: h.ctlC()}
	case CmdStartViewChange:
		return ControlFields{Entered: h.u32(offCommandArea)&svcFlagEntered != 0}
	case CmdRequestStartView, CmdRequestPrepares, CmdRangeEvicted, CmdRequestManifest, CmdManifest,
		CmdRequestChunk, CmdChunk:
		return ControlFields{Nonce: h.nonce()}
	}
	return ControlFields{}
}
