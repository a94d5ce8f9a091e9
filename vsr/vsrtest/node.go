package vsrtest

import (
	"fmt"

	"github.com/iggo/iggo/vsr"
)

type ioKind uint8

const (
	ioAppend ioKind = iota
	ioRead
	ioState
	ioCheckpoint
	ioArtifactRead
	ioArtifactWrite
	ioInstall
	ioRewrite
)

type pendingIO struct {
	due      uint64
	kind     ioKind
	op       uint64
	id       vsr.Checksum
	token    uint64
	data     []byte
	sessions []byte
	hist     []byte
	manifest vsr.Manifest
	art      uint32
	offset   uint64
	length   uint32
}

// Latency returns how many ticks an I/O of the given kind takes; nil means
// every I/O completes within the same Drain.
type Latency func(kind string) uint64

// Node runs one replica of one group against a Disk and a KV: it executes
// every Ready (storage, messages, replies) and feeds completions back, in a
// fixed order, so a run is a pure function of its inputs.
type Node struct {
	ID    int
	Cfg   vsr.Config
	Disk  *Disk
	R     *vsr.Replica
	SM    *KV
	Up    bool
	Now   uint64
	Boots uint64
	// Installs counts checkpoints installed by state transfer.
	Installs int

	Latency Latency
	Rand    *vsr.PRNG
	// HoldIO keeps every completion pending until ReleaseIO; HoldAppends
	// only journal appends.
	HoldIO      bool
	HoldAppends bool
	// Trace receives one line per output when set.
	Trace func(line string)
	// OnApply is installed on every KV this node builds.
	OnApply func(h *vsr.Header, body, reply []byte)
	// OnJournal, when set, sees every journal operation before the disk
	// does (the simulator's contract checks).
	OnJournal func(j vsr.JournalOp)

	ios     []pendingIO
	Out     []vsr.Envelope
	Replies []vsr.Reply
}

// NewNode prepares a node; call Boot to start its replica.
func NewNode(id int, cfg vsr.Config, disk *Disk) *Node {
	return &Node{ID: id, Cfg: cfg, Disk: disk}
}

func (n *Node) tracef(format string, args ...any) {
	if n.Trace != nil {
		n.Trace(fmt.Sprintf("r%d ", n.ID) + fmt.Sprintf(format, args...))
	}
}

// Boot starts the replica from the disk (rejoin: the disk was wiped but the
// group exists).
func (n *Node) Boot(rejoin bool) error {
	n.Boots++
	inc := n.Boots << 32
	if n.Rand != nil {
		inc |= n.Rand.Uint64() >> 32
	}
	b := vsr.Boot{Incarnation: inc}
	n.SM = NewKV()
	n.SM.OnApply = n.OnApply
	if n.Disk.State != nil {
		s, err := vsr.DecodeState(n.Disk.State)
		if err != nil {
			return err
		}
		if s.Checkpoint > 0 {
			ck := n.Disk.Checkpoints[s.Checkpoint]
			if ck == nil {
				return fmt.Errorf("vsrtest: checkpoint %d missing", s.Checkpoint)
			}
			if err := n.SM.Restore(ck.Artifacts[1], s.Checkpoint); err != nil {
				return err
			}
			if err := n.SM.RestoreHistory(ck.Artifacts[2], s.Checkpoint); err != nil {
				return err
			}
			m := ck.Manifest
			b.Checkpoint = &m
			b.Sessions = ck.Artifacts[vsr.SessionsArtifact]
		}
		b.State = n.Disk.State
		b.Journal, b.HeadUncertain = n.Disk.Recover()
	} else {
		b.Rejoin = rejoin
	}
	r, err := vsr.New(n.Cfg, n.SM, b)
	if err != nil {
		return err
	}
	n.R = r
	n.Up = true
	n.ios = nil
	n.tracef("boot incarnation=%d", n.Boots)
	n.Drain()
	return nil
}

// Crash stops the replica; the disk keeps what the crash model says.
func (n *Node) Crash() {
	if !n.Up {
		return
	}
	n.Disk.Crash(n.Rand)
	n.R = nil
	n.SM = nil
	n.ios = nil
	n.Up = false
	n.tracef("crash")
}

// CrashUndoingTruncate crashes the replica so that a truncate it issued last
// does not survive (see Disk.CrashUndoingTruncate).
func (n *Node) CrashUndoingTruncate() {
	if !n.Up {
		return
	}
	n.Disk.CrashUndoingTruncate()
	n.R, n.SM, n.ios, n.Up = nil, nil, nil, false
	n.tracef("crash (truncate undone)")
}

// Tick advances the node's clock and the replica's.
func (n *Node) Tick() {
	n.Now++
	if !n.Up {
		return
	}
	n.R.Tick()
	n.Drain()
}

// Deliver hands a message to the replica.
func (n *Node) Deliver(m vsr.Message) {
	if !n.Up {
		return
	}
	n.R.Step(m)
	n.Drain()
}

// Submit hands a client request to the replica.
func (n *Node) Submit(req vsr.Request) {
	if !n.Up {
		return
	}
	n.R.Submit(req)
	n.Drain()
}

// ReleaseIO completes every pending I/O now.
func (n *Node) ReleaseIO() {
	hold, holdAppends := n.HoldIO, n.HoldAppends
	n.HoldIO, n.HoldAppends = false, false
	for i := range n.ios {
		n.ios[i].due = 0
	}
	n.Drain()
	n.HoldIO, n.HoldAppends = hold, holdAppends
}

// Drain runs Ready until the replica is quiet, completing due I/O.
func (n *Node) Drain() {
	for n.Up {
		if err := n.R.Err(); err != nil {
			panic(fmt.Sprintf("vsrtest: replica %d stopped: %v", n.ID, err))
		}
		if n.R.HasReady() {
			n.handle(n.R.Ready())
			continue
		}
		if !n.completeDue() {
			return
		}
	}
}

func (n *Node) latency(kind string) uint64 {
	if n.Latency == nil {
		return 0
	}
	return n.Latency(kind)
}

func (n *Node) schedule(io pendingIO, kind string, fifo bool) {
	io.due = n.Now + n.latency(kind)
	if fifo {
		for i := len(n.ios) - 1; i >= 0; i-- {
			if n.ios[i].kind == io.kind {
				io.due = max(io.due, n.ios[i].due)
				break
			}
		}
	}
	n.ios = append(n.ios, io)
}

func (n *Node) handle(rd vsr.Ready) {
	if rd.State != nil {
		n.Disk.pendingState = append([]byte(nil), rd.State...)
		s, _ := vsr.DecodeState(rd.State)
		n.tracef("state view=%d log_view=%d commit=%d headers=%d checkpoint=%d fenced=%v",
			s.View, s.LogView, s.Commit, len(s.Headers), s.Checkpoint, s.Fenced)
		n.schedule(pendingIO{kind: ioState}, "state", true)
	}
	for _, j := range rd.Journal {
		if n.OnJournal != nil {
			n.OnJournal(j)
		}
		switch j.Kind {
		case vsr.JournalAppend:
			frame := make([]byte, vsr.HeaderSize+len(j.Body))
			copy(frame, j.Header[:])
			copy(frame[vsr.HeaderSize:], j.Body)
			n.Disk.append(j.Op, frame)
			n.tracef("journal append op=%d id=%s sync=%v", j.Op, j.Header.Identity(), j.Sync)
			n.schedule(pendingIO{kind: ioAppend, op: j.Op, id: j.Header.Identity()}, "append", true)
		case vsr.JournalTruncate:
			n.Disk.truncate(j.Op)
			n.tracef("journal truncate keep<=%d", j.Op)
		case vsr.JournalDiscard:
			n.Disk.discard(j.Op)
			n.tracef("journal discard <=%d", j.Op)
		case vsr.JournalRewrite:
			frame := make([]byte, vsr.HeaderSize+len(j.Body))
			copy(frame, j.Header[:])
			copy(frame[vsr.HeaderSize:], j.Body)
			n.Disk.rewrite(j.Op, frame)
			n.tracef("journal rewrite op=%d id=%s", j.Op, j.Header.Identity())
			n.schedule(pendingIO{kind: ioRewrite, op: j.Op, id: j.Header.Identity()}, "append", false)
		}
	}
	for _, rd := range rd.Reads {
		n.tracef("journal read op=%d", rd.Op)
		n.schedule(pendingIO{kind: ioRead, op: rd.Op}, "read", false)
	}
	for _, e := range rd.Messages {
		n.Out = append(n.Out, e)
	}
	for _, rp := range rd.Replies {
		if rp.Eviction != vsr.EvictNone {
			n.tracef("reply token=%d status=%s reason=%d", rp.Token, rp.Status, rp.Eviction)
		} else {
			n.tracef("reply token=%d op=%d status=%s body=%x", rp.Token, rp.Op, rp.Status, rp.Body)
		}
		n.Replies = append(n.Replies, rp)
	}
	if c := rd.Checkpoint; c != nil {
		n.tracef("checkpoint op=%d", c.Op)
		n.schedule(pendingIO{kind: ioCheckpoint, op: c.Op, data: n.SM.Snapshot(), hist: n.SM.History(),
			sessions: append([]byte(nil), c.Sessions...)}, "checkpoint", false)
	}
	for _, a := range rd.ArtifactReads {
		n.schedule(pendingIO{kind: ioArtifactRead, token: a.Token, op: a.Checkpoint, art: a.Artifact,
			offset: a.Offset, length: a.Length}, "read", false)
	}
	for _, a := range rd.ArtifactWrites {
		st := n.Disk.staging
		buf := st[a.Artifact]
		if a.Offset == 0 {
			buf = buf[:0] // a restarted transfer starts the artifact over
		}
		if uint64(len(buf)) != a.Offset {
			panic(fmt.Sprintf("vsrtest: artifact write at %d, staged %d", a.Offset, len(buf)))
		}
		st[a.Artifact] = append(buf, a.Data...)
		n.schedule(pendingIO{kind: ioArtifactWrite, token: a.Token}, "append", false)
	}
	if in := rd.Install; in != nil {
		n.tracef("install checkpoint=%d", in.Manifest.Op)
		n.schedule(pendingIO{kind: ioInstall, op: in.Manifest.Op, manifest: in.Manifest}, "checkpoint", false)
	}
}

// completeDue completes the first due I/O; it reports whether it did.
func (n *Node) completeDue() bool {
	if n.HoldIO {
		return false
	}
	for i, io := range n.ios {
		if io.due > n.Now || (n.HoldAppends && io.kind == ioAppend) {
			continue
		}
		n.ios = append(n.ios[:i], n.ios[i+1:]...)
		n.complete(io)
		return true
	}
	return false
}

func (n *Node) complete(io pendingIO) {
	switch io.kind {
	case ioState:
		n.Disk.State = n.Disk.pendingState
		n.Disk.pendingState = nil
		n.R.StateDone(nil)
	case ioAppend:
		if e := n.Disk.entry(io.op); e != nil && (*vsr.Header)(e.Frame[:vsr.HeaderSize]).Identity() == io.id {
			n.Disk.completeAppend(io.op)
		}
		n.R.AppendDone(io.op, io.id, nil)
	case ioRewrite:
		n.Disk.completeRewrite(io.op)
		n.R.AppendDone(io.op, io.id, nil)
	case ioRead:
		frame, err := n.Disk.Read(io.op)
		n.R.ReadDone(io.op, frame, err)
	case ioCheckpoint:
		ck := &Checkpoint{Artifacts: map[uint32][]byte{1: io.data, 2: io.hist}}
		m := vsr.Manifest{Op: io.op}
		if n.Cfg.Sessions || n.Cfg.Dedup {
			ck.Artifacts[vsr.SessionsArtifact] = io.sessions
			m.Artifacts = append(m.Artifacts, artifact(vsr.SessionsArtifact, io.sessions))
		}
		m.Artifacts = append(m.Artifacts, artifact(1, io.data), artifact(2, io.hist))
		ck.Manifest = m
		n.Disk.Checkpoints[io.op] = ck
		n.R.CheckpointDone(io.op, m, nil)
		n.gcCheckpoints()
	case ioArtifactRead:
		ck := n.Disk.Checkpoints[io.op]
		if ck == nil {
			n.R.ArtifactReadDone(io.token, nil, fmt.Errorf("vsrtest: no checkpoint %d", io.op))
			return
		}
		a := ck.Artifacts[io.art]
		if io.offset+uint64(io.length) > uint64(len(a)) {
			n.R.ArtifactReadDone(io.token, nil, fmt.Errorf("vsrtest: artifact read out of range"))
			return
		}
		n.R.ArtifactReadDone(io.token, a[io.offset:io.offset+uint64(io.length)], nil)
	case ioArtifactWrite:
		n.R.ArtifactWriteDone(io.token, nil)
	case ioInstall:
		st := n.Disk.staging
		ck := &Checkpoint{Manifest: io.manifest, Artifacts: map[uint32][]byte{}}
		for _, a := range io.manifest.Artifacts {
			data := st[a.ID]
			if uint64(len(data)) < a.Size {
				n.R.InstallDone(io.op, fmt.Errorf("vsrtest: staged artifact %d has %d bytes, want %d", a.ID, len(data), a.Size))
				return
			}
			data = append([]byte(nil), data[:a.Size]...)
			if artifact(a.ID, data).Checksum != a.Checksum {
				n.R.InstallDone(io.op, fmt.Errorf("vsrtest: staged artifact %d corrupt", a.ID))
				return
			}
			ck.Artifacts[a.ID] = data
		}
		if err := n.SM.Restore(ck.Artifacts[1], io.op); err != nil {
			n.R.InstallDone(io.op, err)
			return
		}
		if err := n.SM.RestoreHistory(ck.Artifacts[2], io.op); err != nil {
			n.R.InstallDone(io.op, err)
			return
		}
		n.Disk.Checkpoints[io.op] = ck
		clear(n.Disk.staging)
		n.Installs++
		n.R.InstallDone(io.op, nil)
		n.gcCheckpoints()
	}
}

func artifact(id uint32, data []byte) vsr.Artifact {
	s := vsr.NewChecksumStream()
	s.Write(data)
	return vsr.Artifact{ID: id, Size: uint64(len(data)), Checksum: s.Sum()}
}

// gcCheckpoints keeps the checkpoint the durable state names and anything
// newer.
func (n *Node) gcCheckpoints() {
	keep := uint64(0)
	if n.Disk.State != nil {
		if s, err := vsr.DecodeState(n.Disk.State); err == nil {
			keep = s.Checkpoint
		}
	}
	if n.Disk.pendingState != nil {
		if s, err := vsr.DecodeState(n.Disk.pendingState); err == nil {
			keep = min(keep, s.Checkpoint)
		}
	}
	for op := range n.Disk.Checkpoints {
		if op < keep {
			delete(n.Disk.Checkpoints, op)
		}
	}
}

// TakeOut returns and clears the node's outbound messages.
func (n *Node) TakeOut() []vsr.Envelope {
	out := n.Out
	n.Out = nil
	return out
}

// TakeReplies returns and clears the node's replies.
func (n *Node) TakeReplies() []vsr.Reply {
	out := n.Replies
	n.Replies = nil
	return out
}

// PendingIO reports how many I/Os are in flight.
func (n *Node) PendingIO() int { return len(n.ios) }
