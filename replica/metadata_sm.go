package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Register prepare body: [kind u8][user_id u32], then for kind 3 the
// 32-byte SHA-256 of the personal access token used. Kind 1 is a password
// login and kind 3 a token login (the connection's shard authenticated the
// user before submitting the request; the commit checks again that the
// user, and for kind 3 its token, still exist: a deletion committed in
// between refuses the session everywhere alike), kind 2 the node's own
// system session.
const (
	registerUser   = 1
	registerSystem = 2
	registerToken  = 3
)

// systemClient is the session id the node uses for its own metadata
// commands (bootstrap, disconnect clean-up, token expiry). Client ids
// minted by SDKs are random 128-bit values; this one is fixed.
// Each node of a cluster has its own (the last byte is 1 + replica id), so
// their sessions do not evict each other.
var systemClient = vsr.Checksum{'i', 'g', 'g', 'o', ':', 's', 'y', 's', 't', 'e', 'm', 0, 0, 0, 0, 1}

func (n *Node) systemClient() vsr.Checksum {
	c := systemClient
	c[15] = byte(1 + n.opts.ReplicaID)
	return c
}

// metaSM is the metadata group's state machine on shard 0: it applies
// committed prepares to the metadata store (publishing each new immutable
// view for every shard to read), renders the reply, and turns the
// resulting effects into tasks for the shards that own the partitions.
type metaSM struct {
	n     *Node
	sh    *shardLoop
	store *metadata.Store
	g     *consensus.Group
	dir   string
	// booting suppresses effects while the journal is replayed; the node
	// reconciles partition storage with the recovered view afterwards.
	booting bool

	sysSession uint64
	sysRequest uint64
	sysQueue   []sysItem
	sysBusy    bool
	sysRetry   bool // a refused system request waits for the next tick
	sysTask    task
	sysReq     metaReq // sysTask's request
	// bootEvicted: the restart's EvictNodeMembers was queued (consumer_group_evict.go).
	bootEvicted bool

	// State transfer (transfer.go).
	served metaServed
	staged metaStaged
}

// Apply implements vsr.StateMachine.
func (m *metaSM) Apply(h *vsr.Header, body []byte) []byte {
	if h.Operation() == vsr.OperationRegister {
		// A checkpoint may follow this op: the state must name it.
		m.store.Advance(h.Op())
		if (len(body) == 5 && body[0] == registerUser) || (len(body) == 37 && body[0] == registerToken) {
			view := m.store.View()
			uid := binary.LittleEndian.Uint32(body[1:])
			u := view.User(uid)
			switch {
			case u == nil:
				return codeReply(uint32(wire.CodeInvalidCredentials))
			case u.Status != metadata.UserActive:
				return codeReply(uint32(wire.CodeUserInactive))
			}
			if body[0] == registerToken {
				owner, pat, ok := view.TokenByHash(metadata.TokenHash(body[5:37]))
				if !ok || owner.ID != uid || pat.Expired(h.Timestamp()) {
					return codeReply(uint32(wire.CodeInvalidPersonalAccessToken))
				}
			}
		}
		return codeReply(0)
	}
	meta, cmd, err := metadata.DecodeOp(body)
	if err != nil {
		// Bodies are built by this node's EncodeOp; one that does not decode
		// is refused the same way on every replica.
		m.n.log.Error("metadata prepare does not decode", zap.Uint64("op", h.Op()), zap.Error(err))
		m.store.Advance(h.Op())
		return codeReply(uint32(wire.CodeInvalidCommand))
	}
	meta.Op = h.Op()
	meta.Timestamp = h.Timestamp()
	res := m.store.Apply(meta, cmd)
	if res.Code != 0 {
		return codeReply(uint32(res.Code))
	}
	if !m.booting && len(res.Effects) > 0 {
		m.n.applyEffects(m.sh, m.store.View(), res.Effects, h.Op())
	}
	out := codeReply(0)
	var payload wire.ReplyPayload
	switch cmd.(type) {
	case metadata.CreateStream:
		d := metadata.StreamDetailsRecord(res.Stream, nil)
		payload = &d
	case metadata.CreateTopic:
		d := metadata.TopicDetailsRecord(res.Topic, nil)
		payload = &d
	case metadata.CreateConsumerGroup:
		d := metadata.GroupDetailsRecord(res.Topic, res.Group)
		payload = &d
	case metadata.CreateUser:
		d := metadata.UserDetailsRecord(res.User)
		payload = &d
	}
	if payload != nil {
		if out, err = payload.AppendTo(out); err != nil {
			panic(fmt.Sprintf("replica: rendering the reply of op %d: %v", h.Op(), err))
		}
	}
	return out
}

func (m *metaSM) SyncAppend(*vsr.Header) bool { return true }

func (m *metaSM) AppliedOp() uint64 { return m.store.View().LastApplied() }

// Metadata checkpoint: metadata/snapshot.bin (journal.WriteSnapshot: the
// data below plus a trailer with the op and its checksum). The data is
//
//	u32  length S of the metadata snapshot
//	S    metadata.EncodeSnapshot of the state after op
//	…    the vsr session table (to the end)
//
// The previous snapshot is first moved to metadata/prev/snapshot.bin: the
// durable view state still names it until the next state write, and a
// restart in between must find it.
const prevSnapshotDir = "prev"

func (m *metaSM) Checkpoint(op uint64, sessions []byte) (vsr.Manifest, error) {
	st := m.store.View()
	if st.LastApplied() != op {
		panic(fmt.Sprintf("replica: metadata checkpoint of op %d with op %d applied", op, st.LastApplied()))
	}
	snap := metadata.EncodeSnapshot(st)
	data := make([]byte, 0, 4+len(snap)+len(sessions))
	data = binary.LittleEndian.AppendUint32(data, uint32(len(snap)))
	data = append(data, snap...)
	data = append(data, sessions...)
	fsys := m.sh.fs
	cur := filepath.Join(m.dir, journal.SnapshotFile)
	prevDir := filepath.Join(m.dir, prevSnapshotDir)
	if _, err := fsys.Stat(cur); err == nil {
		if err := vfs.MkdirAllSync(fsys, prevDir, 0o755); err != nil {
			return vsr.Manifest{}, err
		}
		if err := fsys.Rename(cur, filepath.Join(prevDir, journal.SnapshotFile)); err != nil {
			return vsr.Manifest{}, err
		}
		if err := fsys.SyncDir(prevDir); err != nil {
			return vsr.Manifest{}, err
		}
	}
	sum, err := journal.WriteSnapshot(fsys, m.dir, op, data)
	if err != nil {
		return vsr.Manifest{}, err
	}
	if err := m.g.WriteCheckpoint(op, superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}, 0); err != nil {
		return vsr.Manifest{}, err
	}
	return metaManifest(op, snap, sessions), nil
}

func metaManifest(op uint64, snap, sessions []byte) vsr.Manifest {
	return vsr.Manifest{Op: op, Artifacts: []vsr.Artifact{
		{ID: vsr.SessionsArtifact, Size: uint64(len(sessions)), Checksum: vsr.BodyChecksum(sessions)},
		{ID: 1, Size: uint64(len(snap)), Checksum: vsr.BodyChecksum(snap)},
	}}
}

func (m *metaSM) CheckpointDurable(uint64) {}

// restore loads the checkpoint at op from snapshot.bin (or the previous
// one kept under prev/).
func (m *metaSM) restore(op uint64) (*vsr.Manifest, []byte, error) {
	var tried []string
	for _, dir := range []string{m.dir, filepath.Join(m.dir, prevSnapshotDir)} {
		s, err := journal.ReadSnapshot(m.sh.fs, dir)
		if err != nil {
			if errors.Is(err, journal.ErrNoSnapshot) || errors.Is(err, fs.ErrNotExist) {
				tried = append(tried, dir+": none")
				continue
			}
			return nil, nil, err
		}
		if s.Op != op {
			tried = append(tried, fmt.Sprintf("%s: op %d", dir, s.Op))
			continue
		}
		if len(s.Data) < 4 {
			return nil, nil, fmt.Errorf("replica: metadata snapshot of %d bytes", len(s.Data))
		}
		n := binary.LittleEndian.Uint32(s.Data)
		if uint64(n)+4 > uint64(len(s.Data)) {
			return nil, nil, fmt.Errorf("replica: metadata snapshot length %d exceeds %d bytes", n, len(s.Data))
		}
		snap, sessions := s.Data[4:4+n], s.Data[4+n:]
		st, err := metadata.DecodeSnapshot(snap)
		if err != nil {
			return nil, nil, err
		}
		if st.LastApplied() != op {
			return nil, nil, fmt.Errorf("replica: metadata snapshot for op %d holds op %d", op, st.LastApplied())
		}
		m.store.Replace(st)
		mf := metaManifest(op, snap, sessions)
		return &mf, sessions, nil
	}
	return nil, nil, fmt.Errorf("replica: no metadata snapshot for checkpoint %d (%v)", op, tried)
}

// submitClient hands a client's metadata request to the replica.
func (m *metaSM) submitClient(t *task, r *metaReq) {
	r.req.WallClock = nowMicros()
	m.g.Submit(t, r.req)
}

// sysItem is a queued system command and, optionally, the task to answer
// once it applied.
type sysItem struct {
	cmd    metadata.Command
	waiter *task
}

// enqueueSystem queues a system command; they run one at a time on the
// node's own session. waiter, when set, is answered after it applied.
func (m *metaSM) enqueueSystem(c metadata.Command, waiter *task) {
	m.sysQueue = append(m.sysQueue, sysItem{cmd: c, waiter: waiter})
	m.pumpSystem()
}

// finishSystem pops the head command and answers its waiter.
func (m *metaSM) finishSystem(code uint32) {
	it := m.sysQueue[0]
	m.sysQueue[0] = sysItem{}
	m.sysQueue = m.sysQueue[1:]
	if it.waiter != nil {
		it.waiter.status = code
		m.sh.complete(it.waiter)
	}
}

func (m *metaSM) pumpSystem() {
	if m.sysBusy || m.sysRetry || (len(m.sysQueue) == 0 && m.sysSession != 0) {
		return
	}
	t, r := &m.sysTask, &m.sysReq
	*t = task{req: r, then: m.systemDone}
	if m.sysSession == 0 {
		body := []byte{registerSystem, 0, 0, 0, 0}
		r.req = vsr.Request{Client: m.n.systemClient(), Operation: vsr.OperationRegister, Body: body, WallClock: nowMicros()}
	} else {
		c := m.sysQueue[0].cmd
		body, err := metadata.EncodeOp(metadata.Meta{System: true}, c)
		if err != nil {
			panic(fmt.Sprintf("replica: encoding system command %T: %v", c, err))
		}
		m.sysRequest++
		r.req = vsr.Request{Client: m.n.systemClient(), Session: m.sysSession, Request: m.sysRequest,
			Operation: uint8(metadata.OperationOf(c)), Body: body, WallClock: nowMicros()}
	}
	m.sysBusy = true
	m.g.Submit(t, r.req)
}

func (m *metaSM) systemDone(t *task) {
	m.sysBusy = false
	op := m.sysReq.req.Operation
	switch {
	case t.status != 0:
		m.n.log.Error("system command refused", zap.Stringer("status", wire.Code(t.status)))
		if len(m.sysQueue) > 0 && op != vsr.OperationRegister {
			m.finishSystem(t.status)
		}
	case t.vstatus == vsr.StatusEvicted:
		m.sysSession = 0 // evicted from a full session table: register again
	case t.vstatus == vsr.StatusTransientNotAccepted || t.vstatus == vsr.StatusTransientNotCommitted:
		if op != vsr.OperationRegister {
			m.sysRequest-- // not applied: the retry reuses the number
		}
		m.sysRetry = true
		return
	case op == vsr.OperationRegister:
		m.sysSession, m.sysRequest = t.op, 0
	default:
		code := replyCode(t.reply)
		if code != 0 {
			m.n.log.Warn("system command rejected", zap.String("command", fmt.Sprintf("%T", m.sysQueue[0].cmd)),
				zap.Stringer("code", wire.Code(code)))
		}
		m.finishSystem(code)
	}
	m.pumpSystem()
}

// tick retries a system request the replica refused.
func (m *metaSM) tick() {
	m.evictOwnMembers()
	if m.sysRetry {
		m.sysRetry = false
		m.pumpSystem()
	}
}

// systemIdle reports whether no system command is queued or running.
func (m *metaSM) systemIdle() bool { return !m.sysBusy && len(m.sysQueue) == 0 }

func replyCode(b []byte) uint32 {
	if len(b) < 4 {
		return uint32(wire.CodeError)
	}
	return binary.LittleEndian.Uint32(b)
}
