package vsr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// session is one client's entry in the session table. The table is part of
// the replicated state: it changes only when ops are applied, identically on
// every replica, and it is saved with every checkpoint.
type session struct {
	client  Checksum
	session uint64 // op of the client's latest Register
	// user is the principal whose Register opened the session (the prepare's
	// user field); owned is false only for entries restored from a table
	// encoded before sessions recorded it, which the next Register claims.
	user    uint32
	owned   bool
	request uint64 // highest request number applied
	lastOp  uint64 // op of the latest applied request: the eviction order
	replyOp uint64
	reply   []byte // reply of the latest applied request
}

// tableOwners flags a session table encoding whose entries carry their
// owner (set in the count word).
const tableOwners = 1 << 31

type clientTable struct {
	max int
	m   map[Checksum]*session
}

func newClientTable(max int) *clientTable {
	return &clientTable{max: max, m: make(map[Checksum]*session)}
}

// apply executes a committed op under session rules: a Register opens (or
// renews) a session whose number is its op; any other request runs at most
// once — a request number at or below the session's last one is not executed
// again. Capacity eviction removes the session with the oldest last applied
// op; since every replica applies the same ops, every replica evicts the same
// session (Iggy evicts replica-locally and unlogged, so replicas can disagree
// about which sessions exist).
// The returned op is where the reply was produced: op itself, or for a retry
// of the last request the op that executed it.
//
// A session belongs to the user whose Register opened it: a Register for a
// client id whose session another user owns is refused (StatusEvicted,
// EvictSessionError) and leaves the session as it was, so nobody can take
// over, or end, another user's session by presenting its client id. The
// id is free again once the session is evicted.
func (t *clientTable) apply(h *Header, body []byte, sm StateMachine) ([]byte, Status, EvictionReason, uint64) {
	client := h.Client()
	op := h.Op()
	if h.Operation() == OperationRegister {
		// The state machine sees every committed op, refused or not.
		reply := sm.Apply(h, body)
		e := t.m[client]
		if e.ownedByOther(h.User()) {
			return nil, StatusEvicted, EvictSessionError, 0
		}
		if e == nil {
			if len(t.m) >= t.max {
				t.evictOldest()
			}
			e = &session{client: client}
			t.m[client] = e
		}
		*e = session{client: client, session: op, user: h.User(), owned: true, lastOp: op, replyOp: op, reply: reply}
		return reply, StatusOK, EvictNone, op
	}
	if client.IsZero() {
		return sm.Apply(h, body), StatusOK, EvictNone, op
	}
	e := t.m[client]
	switch {
	case e == nil:
		return nil, StatusEvicted, EvictNoSession, 0
	case h.Session() < e.session:
		return nil, StatusEvicted, EvictSessionTooLow, 0
	case h.Session() > e.session:
		return nil, StatusEvicted, EvictSessionError, 0
	case h.Request() == e.request:
		return e.reply, StatusOK, EvictNone, e.replyOp
	case h.Request() < e.request:
		return nil, StatusRequestAlreadyApplied, EvictNone, 0
	}
	reply := sm.Apply(h, body)
	e.request, e.lastOp, e.replyOp, e.reply = h.Request(), op, op, reply
	return reply, StatusOK, EvictNone, op
}

// ownedByOther reports whether e is a session of a user other than user.
func (e *session) ownedByOther(user uint32) bool {
	return e != nil && e.owned && e.user != user
}

func (t *clientTable) evictOldest() {
	var victim *session
	for _, e := range t.m {
		// lastOp values are distinct (each op touches one entry), so the
		// minimum does not depend on map order.
		if victim == nil || e.lastOp < victim.lastOp {
			victim = e
		}
	}
	delete(t.m, victim.client)
}

// admit applies the session checks on the primary before a request enters
// the pipeline, answering on its own what it can (cached replies, evictions,
// duplicates) and refusing a second request of a client that already has one
// in flight. It reports whether the request should be prepared.
func (r *Replica) admit(req *Request) bool {
	answer := func(st Status, ev EvictionReason, op uint64, body []byte) {
		r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session, Request: req.Request,
			Operation: req.Operation, Op: op, Commit: r.commitMax, Status: st, Eviction: ev, Body: body})
	}
	if req.Operation == OperationRegister {
		if req.Session != 0 || req.Request != 0 || req.Client.IsZero() || r.sessions.m[req.Client].ownedByOther(req.User) {
			answer(StatusEvicted, EvictSessionError, 0, nil)
			return false
		}
		return !r.inflight(req)
	}
	if req.Client.IsZero() {
		answer(StatusEvicted, EvictNoSession, 0, nil)
		return false
	}
	e := r.sessions.m[req.Client]
	switch {
	case e == nil:
		answer(StatusEvicted, EvictNoSession, 0, nil)
	case req.Session < e.session:
		answer(StatusEvicted, EvictSessionTooLow, 0, nil)
	case req.Session > e.session:
		answer(StatusEvicted, EvictSessionError, 0, nil)
	case req.Request == e.request:
		answer(StatusOK, EvictNone, e.replyOp, e.reply)
	case req.Request < e.request:
		answer(StatusRequestAlreadyApplied, EvictNone, 0, nil)
	default:
		return !r.inflight(req)
	}
	return false
}

// inflight refuses a request whose client already has one prepared but not
// yet applied, or queued: one request per client at a time keeps at-most-once
// simple (the retry gets the cached reply once the first one applies).
func (r *Replica) inflight(req *Request) bool {
	busy := false
	for op := r.commitMin + 1; op <= r.op && !busy; op++ {
		if s := r.slotAt(op); s != nil && s.h.Client() == req.Client {
			busy = true
		}
	}
	for i := range r.queue {
		if r.queue[i].Client == req.Client {
			busy = true
		}
	}
	if busy {
		r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session, Request: req.Request,
			Operation: req.Operation, Status: StatusTransientNotAccepted})
	}
	return busy
}

// Session table encoding (little-endian), entries sorted by client id:
//
//	u32 count | 1<<31
//	count × { [16] client, u64 session, u32 user, u8 owned (0/1),
//	          u64 request, u64 last_op, u64 reply_op, u32 reply_len,
//	          reply_len bytes }
//
// The first table format had no flag bit in the count and no user or owned
// fields; it is still decoded, its entries unowned (claimed by their next
// Register).
func (t *clientTable) encode() []byte {
	keys := make([]Checksum, 0, len(t.m))
	size := 4
	for k, e := range t.m {
		keys = append(keys, k)
		size += 16 + 5 + 4*8 + 4 + len(e.reply)
	}
	slices.SortFunc(keys, func(a, b Checksum) int { return bytes.Compare(a[:], b[:]) })
	b := make([]byte, 0, size)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys))|tableOwners)
	for _, k := range keys {
		e := t.m[k]
		b = append(b, k[:]...)
		b = binary.LittleEndian.AppendUint64(b, e.session)
		b = binary.LittleEndian.AppendUint32(b, e.user)
		owned := byte(0)
		if e.owned {
			owned = 1
		}
		b = append(b, owned)
		b = binary.LittleEndian.AppendUint64(b, e.request)
		b = binary.LittleEndian.AppendUint64(b, e.lastOp)
		b = binary.LittleEndian.AppendUint64(b, e.replyOp)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.reply)))
		b = append(b, e.reply...)
	}
	return b
}

func decodeClientTable(b []byte, max int) (*clientTable, error) {
	t := newClientTable(max)
	if len(b) == 0 {
		return t, nil
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: session table of %d bytes", ErrMalformed, len(b))
	}
	count := binary.LittleEndian.Uint32(b)
	owners := count&tableOwners != 0
	count &^= tableOwners
	if int64(count) > int64(max) {
		return nil, fmt.Errorf("%w: %d sessions above clients_table_max %d", ErrMalformed, count, max)
	}
	b = b[4:]
	var prev Checksum
	for i := uint32(0); i < count; i++ {
		need := 52
		if owners {
			need += 5
		}
		if len(b) < need {
			return nil, fmt.Errorf("%w: session entry %d truncated", ErrMalformed, i)
		}
		e := &session{}
		copy(e.client[:], b[:16])
		e.session = binary.LittleEndian.Uint64(b[16:])
		b = b[24:]
		if owners {
			e.user = binary.LittleEndian.Uint32(b)
			switch b[4] {
			case 0:
			case 1:
				e.owned = true
			default:
				return nil, fmt.Errorf("%w: session entry %d owned flag %d", ErrMalformed, i, b[4])
			}
			if !e.owned && e.user != 0 {
				return nil, fmt.Errorf("%w: session entry %d has user %d but no owner", ErrMalformed, i, e.user)
			}
			b = b[5:]
		}
		e.request = binary.LittleEndian.Uint64(b)
		e.lastOp = binary.LittleEndian.Uint64(b[8:])
		e.replyOp = binary.LittleEndian.Uint64(b[16:])
		n := binary.LittleEndian.Uint32(b[24:])
		b = b[28:]
		if uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("%w: session entry %d reply truncated", ErrMalformed, i)
		}
		e.reply = append([]byte(nil), b[:n]...)
		b = b[n:]
		if (i > 0 && bytes.Compare(prev[:], e.client[:]) >= 0) || e.client.IsZero() || e.session == 0 {
			return nil, fmt.Errorf("%w: session entry %d out of order or empty", ErrMalformed, i)
		}
		prev = e.client
		t.m[e.client] = e
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after session table", ErrMalformed, len(b))
	}
	return t, nil
}
