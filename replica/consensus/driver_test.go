package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// logSM is a state machine that keeps every applied body in order; its
// checkpoint is that list in one file.
type logSM struct {
	fs       vfs.FS
	dir      string
	g        *Group
	applied  uint64
	bodies   [][]byte
	restored uint64
}

func (s *logSM) Apply(h *vsr.Header, body []byte) []byte {
	s.applied = h.Op()
	s.bodies = append(s.bodies, bytes.Clone(body))
	return fmt.Appendf(nil, "applied %d", h.Op())
}

func (s *logSM) encode() []byte {
	var b []byte
	for _, x := range s.bodies {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(x)))
		b = append(b, x...)
	}
	return b
}

func (s *logSM) ckptPath(op uint64) string { return filepath.Join(s.dir, fmt.Sprintf("ckpt-%d", op)) }

func (s *logSM) Checkpoint(op uint64, _ []byte) (vsr.Manifest, error) {
	b := s.encode()
	if err := vfs.WriteFileAtomic(s.fs, s.ckptPath(op), b, 0o644); err != nil {
		return vsr.Manifest{}, err
	}
	sum := xxh3.Hash128(b)
	if err := s.g.WriteCheckpoint(op, superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}, 0); err != nil {
		return vsr.Manifest{}, err
	}
	return vsr.Manifest{Op: op}, nil
}

func (s *logSM) restore(op uint64) (*vsr.Manifest, []byte, error) {
	b, err := vfs.ReadFile(s.fs, s.ckptPath(op))
	if err != nil {
		return nil, nil, err
	}
	s.bodies = nil
	for len(b) >= 4 {
		n := binary.LittleEndian.Uint32(b)
		s.bodies = append(s.bodies, bytes.Clone(b[4:4+n]))
		b = b[4+n:]
	}
	s.applied, s.restored = op, op
	return &vsr.Manifest{Op: op}, nil, nil
}

func (s *logSM) CheckpointDurable(uint64)    {}
func (s *logSM) SyncAppend(*vsr.Header) bool { return false }
func (s *logSM) AppliedOp() uint64           { return s.applied }
func (s *logSM) Install(vsr.Manifest) error  { return errors.New("no state transfer") }
func (s *logSM) WriteArtifact(uint64, uint32, uint64, []byte) error {
	return errors.New("no state transfer")
}
func (s *logSM) ReadArtifact(uint64, uint32, uint64, uint32) ([]byte, error) {
	return nil, errors.New("no state transfer")
}

// testHost runs groups in the test's goroutine: the driver, a record of
// the answers, and the group commits with the answers seen before each.
type testHost struct {
	*Driver
	delivered []*testWaiter
	commits   []int // answers delivered before each group commit
	roles     []RoleChange
}

func (h *testHost) Send(*Group, vsr.Envelope)         {}
func (h *testHost) SendPeer(uint8, vsr.Message) error { return errors.New("no peers") }
func (h *testHost) Deliver(w Waiter)                  { h.delivered = append(h.delivered, w.(*testWaiter)) }
func (h *testHost) Role(_ *Group, rc RoleChange)      { h.roles = append(h.roles, rc) }
func (h *testHost) StageCommit(*vfs.Batch) func(error) {
	h.commits = append(h.commits, len(h.delivered))
	return nil
}
func (h *testHost) AfterPass() {}
func (h *testHost) Idle()      {}

type testWaiter struct {
	code  uint32
	reply vsr.Reply
}

func (w *testWaiter) SetReply(rp vsr.Reply) { w.reply = rp }
func (w *testWaiter) SetCode(code uint32)   { w.code = code }

func newTestHost(fsys vfs.FS) *testHost {
	h := &testHost{}
	h.Driver = NewDriver(fsys, nil, h)
	return h
}

const testGroup = 7

// testOperation is an operation vsr passes to the state machine.
const testOperation = uint8(200)

func openTestGroup(t *testing.T, fsys vfs.FS, h *testHost, incarnation uint64) (*Group, *logSM) {
	t.Helper()
	return openTestGroupWith(t, fsys, h, incarnation, nil)
}

// openTestGroupWith is openTestGroup with tune adjusting the configuration.
func openTestGroupWith(t *testing.T, fsys vfs.FS, h *testHost, incarnation uint64, tune func(*vsr.Config)) (*Group, *logSM) {
	t.Helper()
	cfg := vsr.DefaultConfig()
	cfg.Group = testGroup
	cfg.JournalSlots = 256
	cfg.CheckpointInterval = 8
	cfg.Durability = vsr.Persisted
	if tune != nil {
		tune(&cfg)
	}
	sm := &logSM{fs: fsys, dir: "/g"}
	g, err := Open(Spec{ID: testGroup, Name: "test", Dir: "/g", FS: fsys, Config: cfg, SM: sm, Host: h,
		Log: zap.NewNop(), PartOpts: journal.PartitionOptions{Budget: 1 << 20, FileSize: 256 << 10, MaxEntry: 4 << 10},
		Restore: sm.restore, Incarnation: incarnation})
	if err != nil {
		t.Fatal(err)
	}
	sm.g = g
	h.Drive()
	g.EndBoot()
	return g, sm
}

// TestDriverPersistsBeforeAnswering drives a persisted group over the
// fault filesystem: every request is answered only after the group commit
// that fdatasyncs its prepare, a batch of requests shares group commits,
// and after a power loss the reopened group restores its checkpoint and
// replays the journal to hold every answered op.
func TestDriverPersistsBeforeAnswering(t *testing.T) {
	fsys := vfs.NewFault(3)
	h := newTestHost(fsys)
	g, _ := openTestGroup(t, fsys, h, 1)
	if len(h.roles) == 0 || !h.roles[0].Info.IsPrimary {
		t.Fatalf("role reports after boot: %+v", h.roles)
	}
	const batches, per = 5, 6
	var sent [][]byte
	for b := 0; b < batches; b++ {
		h.commits = h.commits[:0]
		before := len(h.delivered)
		for i := 0; i < per; i++ {
			body := fmt.Appendf(nil, "req %d.%d", b, i)
			sent = append(sent, body)
			g.Submit(&testWaiter{}, vsr.Request{Operation: testOperation, WallClock: uint64(1 + b*per + i), Body: body})
		}
		h.Drive()
		if got := len(h.delivered) - before; got != per {
			t.Fatalf("batch %d: %d answers, want %d", b, got, per)
		}
		if len(h.commits) == 0 || h.commits[0] != before {
			t.Fatalf("batch %d: answers delivered before the first group commit (commits %v, answered before %d)", b, h.commits, before)
		}
		if len(h.commits) >= per {
			t.Fatalf("batch %d: %d group commits for %d requests", b, len(h.commits), per)
		}
	}
	var last uint64
	for i, w := range h.delivered {
		if w.code != 0 || w.reply.Status != vsr.StatusOK || w.reply.Op <= last {
			t.Fatalf("answer %d: code %d status %d op %d (previous %d)", i, w.code, w.reply.Status, w.reply.Op, last)
		}
		if want := fmt.Sprintf("applied %d", w.reply.Op); string(w.reply.Body) != want {
			t.Fatalf("answer %d: %q, want %q", i, w.reply.Body, want)
		}
		last = w.reply.Op
	}
	if g.Superblock().CheckpointOp == 0 {
		t.Fatal("no checkpoint reached the superblock")
	}
	g.CloseFiles()

	crashed := fsys.CrashWith(vfs.CrashDropAll)
	h2 := newTestHost(crashed)
	g2, sm2 := openTestGroup(t, crashed, h2, 2)
	defer g2.CloseFiles()
	if sm2.restored == 0 || g2.DurableCheckpoint() != sm2.restored {
		t.Fatalf("restored checkpoint %d, durable checkpoint %d", sm2.restored, g2.DurableCheckpoint())
	}
	if g2.BootOps() == 0 {
		t.Fatal("nothing replayed above the checkpoint")
	}
	if sm2.applied < last {
		t.Fatalf("after the power loss the group applied up to %d, answered up to %d", sm2.applied, last)
	}
	for i, b := range sent {
		if i >= len(sm2.bodies) || !bytes.Equal(sm2.bodies[i], b) {
			t.Fatalf("recovered body %d differs from the one sent (%q)", i, b)
		}
	}
}

// TestGroupStopsOnFailedGroupCommit: a failed journal fdatasync stops the
// group; its waiters, journaled but not durable, are answered CodeInDoubt
// (they may commit after the restart), later requests CodeUnavailable,
// and nothing is answered as written.
func TestGroupStopsOnFailedGroupCommit(t *testing.T) {
	fsys := vfs.NewFault(5)
	h := newTestHost(fsys)
	g, sm := openTestGroup(t, fsys, h, 1)
	defer g.CloseFiles()
	fsys.Inject(vfs.Rule{Ops: vfs.OpSync, Path: "/g/journal", Action: vfs.Fail})
	for i := 0; i < 3; i++ {
		g.Submit(&testWaiter{}, vsr.Request{Operation: testOperation, WallClock: uint64(i + 1), Body: []byte("x")})
	}
	h.Drive()
	if g.Failed() == nil || g.Usable() {
		t.Fatal("the group runs on after a failed fdatasync")
	}
	if sm.applied != 0 {
		t.Fatalf("applied op %d whose prepare was never durable", sm.applied)
	}
	late := &testWaiter{}
	g.Submit(late, vsr.Request{Operation: testOperation, WallClock: 9, Body: []byte("y")})
	if len(h.delivered) != 4 {
		t.Fatalf("%d answers, want 4", len(h.delivered))
	}
	for i, w := range h.delivered {
		want := CodeInDoubt
		if w == late {
			want = CodeUnavailable
		}
		if w.code != want {
			t.Fatalf("answer %d: code %d status %d, want %d", i, w.code, w.reply.Status, want)
		}
	}
}

// TestFailedJournalWriteLeavesPreparedInDoubt: a journal write fails while
// one request is prepared (its op assigned, its append under way) and two
// wait in the request queue behind it. The prepared one is answered
// CodeInDoubt (TransientNotCommitted: a restart replays whatever of it
// reached the disk, and in a cluster the backups may commit it); the
// queued ones, which no replica ever saw, and a request after the
// failure are answered CodeUnavailable.
func TestFailedJournalWriteLeavesPreparedInDoubt(t *testing.T) {
	fsys := vfs.NewFault(6)
	h := newTestHost(fsys)
	g, sm := openTestGroupWith(t, fsys, h, 1, func(c *vsr.Config) { c.PrepareQueueDepth = 1 })
	defer g.CloseFiles()
	fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: "/g/journal", Action: vfs.Fail})
	ws := []*testWaiter{{}, {}, {}}
	for i, w := range ws {
		g.Submit(w, vsr.Request{Operation: testOperation, WallClock: uint64(i + 1), Body: []byte("x")})
	}
	if !g.Replica().Queued(2) || !g.Replica().Queued(3) || g.Replica().Queued(1) {
		t.Fatal("want the first request prepared, the other two queued")
	}
	h.Drive()
	if g.Failed() == nil || g.Usable() {
		t.Fatal("the group runs on after a failed journal write")
	}
	if sm.applied != 0 {
		t.Fatalf("applied op %d whose prepare was never written", sm.applied)
	}
	late := &testWaiter{}
	g.Submit(late, vsr.Request{Operation: testOperation, WallClock: 9, Body: []byte("y")})
	if len(h.delivered) != 4 || h.delivered[3] != late {
		t.Fatalf("%d answers, want 4 (the late one last)", len(h.delivered))
	}
	for i, w := range append(ws, late) {
		want := CodeUnavailable
		if i == 0 {
			want = CodeInDoubt
		}
		if w.code != want {
			t.Fatalf("request %d: code %d status %d, want %d", i, w.code, w.reply.Status, want)
		}
	}
	if CodeInDoubt != uint32(wire.CodeTransientNotCommitted) || CodeUnavailable != uint32(wire.CodeTransientNotAccepted) {
		t.Fatalf("codes %d/%d are not Iggy's TransientNotCommitted/TransientNotAccepted", CodeInDoubt, CodeUnavailable)
	}
}

// TestWriteCheckpointKeepsTheFrontier: the superblock's checkpoint record
// survives a reopen, and the offset frontier never goes down.
func TestWriteCheckpointKeepsTheFrontier(t *testing.T) {
	fsys := vfs.NewFault(9)
	h := newTestHost(fsys)
	g, _ := openTestGroup(t, fsys, h, 1)
	if err := g.WriteCheckpoint(16, superblock.Uint128{Hi: 1, Lo: 2}, 500); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteCheckpoint(24, superblock.Uint128{Hi: 3, Lo: 4}, 0); err != nil {
		t.Fatal(err)
	}
	g.CloseFiles()
	crashed := fsys.CrashWith(vfs.CrashDropAll)
	g2, _ := openTestGroup(t, crashed, newTestHost(crashed), 2)
	defer g2.CloseFiles()
	st := g2.Superblock()
	if st.CheckpointOp != 24 || st.Commit < 24 || st.OffsetFrontier != 500 || st.CheckpointChecksum != (superblock.Uint128{Hi: 3, Lo: 4}) {
		t.Fatalf("superblock after reopen: %+v", st)
	}
}

// TestWriteCheckpointBehindTheSuperblock: the superblock is written before
// the view state names a checkpoint, so a replica restarted from an older
// checkpoint may next checkpoint below the op the superblock names (real-
// stack simulator, seed 1226: every restart panicked). The write keeps the
// newer checkpoint and raises the commit and frontier; a later checkpoint
// replaces it.
func TestWriteCheckpointBehindTheSuperblock(t *testing.T) {
	fsys := vfs.NewFault(10)
	g, _ := openTestGroup(t, fsys, newTestHost(fsys), 1)
	if err := g.WriteCheckpoint(33, superblock.Uint128{Hi: 3, Lo: 3}, 500); err != nil {
		t.Fatal(err)
	}
	g.CloseFiles()
	g2, _ := openTestGroup(t, fsys, newTestHost(fsys), 2)
	defer g2.CloseFiles()
	if err := g2.WriteCheckpoint(32, superblock.Uint128{Hi: 2, Lo: 2}, 600); err != nil {
		t.Fatal(err)
	}
	if st := g2.Superblock(); st.CheckpointOp != 33 || st.CheckpointChecksum != (superblock.Uint128{Hi: 3, Lo: 3}) ||
		st.Commit < 33 || st.OffsetFrontier != 600 {
		t.Fatalf("superblock after an older checkpoint: %+v", st)
	}
	if err := g2.WriteCheckpoint(64, superblock.Uint128{Hi: 6, Lo: 4}, 0); err != nil {
		t.Fatal(err)
	}
	if st := g2.Superblock(); st.CheckpointOp != 64 || st.CheckpointChecksum != (superblock.Uint128{Hi: 6, Lo: 4}) || st.OffsetFrontier != 600 {
		t.Fatalf("superblock after a newer checkpoint: %+v", st)
	}
	if g2.Failed() != nil {
		t.Fatalf("group failed: %v", g2.Failed())
	}
}

// TestFailedSuperblockWriteStopsTheGroup: after a failed write the
// superblock refuses every later one, so the group stops (a restart
// recovers it) instead of failing every checkpoint from then on (real-stack
// simulator, seed 1226).
func TestFailedSuperblockWriteStopsTheGroup(t *testing.T) {
	fsys := vfs.NewFault(12)
	g, _ := openTestGroup(t, fsys, newTestHost(fsys), 1)
	defer g.CloseFiles()
	fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: "/g/superblock", Count: 1, Action: vfs.Fail})
	if err := g.WriteCheckpoint(8, superblock.Uint128{Lo: 1}, 0); err == nil {
		t.Fatal("a failed superblock write succeeded")
	}
	if g.Failed() == nil || g.Usable() {
		t.Fatal("the group runs on after a failed superblock write")
	}
}

// TestGroupStopsOnFailedStateWrite: a failed view-state write stops the
// group before the Ready's journal operations run (they may hold prepares
// of the view the record names, which a restart would then find above its
// durable log view); waiters are answered CodeUnavailable.
func TestGroupStopsOnFailedStateWrite(t *testing.T) {
	fsys := vfs.NewFault(17)
	h := newTestHost(fsys)
	g, _ := openTestGroup(t, fsys, h, 1)
	defer g.CloseFiles()
	fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: "/g/viewstate", Action: vfs.Fail})
	// A checkpoint (every 8 ops) makes the replica write a state record
	// naming it.
	for i := 0; i < 20 && g.Usable(); i++ {
		g.Submit(&testWaiter{}, vsr.Request{Operation: testOperation, WallClock: uint64(i + 1), Body: []byte("x")})
		h.Drive()
	}
	if g.Failed() == nil || g.Usable() {
		t.Fatal("the group runs on after a failed state record write")
	}
	late := &testWaiter{}
	g.Submit(late, vsr.Request{Operation: testOperation, WallClock: 99, Body: []byte("y")})
	if late.code != CodeUnavailable {
		t.Fatalf("a request after the failure: code %d, want %d", late.code, CodeUnavailable)
	}
}
