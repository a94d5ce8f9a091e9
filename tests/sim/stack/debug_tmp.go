package stack

import (
	"encoding/binary"
	"os"

	"github.com/iggo/iggo/vsr"
)

// TEMPORARY debug (not committed).
func (w *world) dbgFrame(pk packet, note string) {
	if os.Getenv("SIMDBG") == "" || w.o.Trace == nil {
		return
	}
	h := pk.frame[:vsr.HeaderSize]
	grp := binary.LittleEndian.Uint64(h[64:])
	cmd := vsr.Command(h[58])
	if os.Getenv("SIMDBG") == "fwd" {
		if cmd != vsr.CmdForward && cmd != vsr.CmdForwardReply {
			return
		}
		w.tracef("  %s p%d->p%d %s token=%d inc=%d up=%v", note, pk.from, pk.to, cmd, binary.LittleEndian.Uint64(h[80:]), binary.LittleEndian.Uint64(h[72:]), w.procs[pk.to].boots)
		return
	}
	if cmd == vsr.CmdForward || cmd == vsr.CmdForwardReply || cmd == vsr.CmdCommit {
		return
	}
	if grp != uint64(partitionNS(dbgGroup())) {
		return
	}
	view := binary.LittleEndian.Uint32(h[52:])
	a := binary.LittleEndian.Uint64(h[88:])
	b := binary.LittleEndian.Uint64(h[96:])
	c := binary.LittleEndian.Uint64(h[104:])
	op := binary.LittleEndian.Uint64(h[128:])
	w.tracef("  %s p%d->p%d %s v%d a=%d b=%d c=%d op=%d len=%d", note, pk.from, pk.to, cmd, view, a, b, c, op, len(pk.frame))
}

func dbgGroup() int {
	if os.Getenv("SIMDBG_G") == "1" {
		return 1
	}
	return 0
}
