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
// owner (set in the count word); tableFloor flags a producer table (Dedup),
// whose count word is followed by its eviction floor.
const (
	tableOwners = 1 << 31
	tableFloor  = 1 << 30
)

type clientTable struct {
	max int
	m   map[Checksum]*session
	// dedup: a partition group's producer table (Config.Dedup) rather than
	// the metadata group's session table.
	dedup bool
	// floor is the highest session of an entry the producer table evicted:
	// a client without an entry whose session is at or below it may have
	// been evicted (its retry could be a duplicate), so it is refused.
	floor uint64
}

func newClientTable(max int) *clientTable {
	return &clientTable{max: max, m: make(map[Checksum]*session)}
}

func newDedupTable(max int) *clientTable {
	t := newClientTable(max)
	t.dedup = true
	return t
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
	if t.dedup {
		return t.applyDedup(h, body, sm)
	}
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
	if t.dedup && !mutationDedupForgetFloor() {
		t.floor = max(t.floor, victim.session)
	}
}

// dedupVerdict is what the producer table says about a request.
type dedupVerdict uint8

const (
	dedupApply   dedupVerdict = iota // new: execute it
	dedupCached                      // the entry's last request: answer its reply
	dedupOlder                       // below the entry's last request
	dedupRefused                     // evicted, superseded or not this user's
)

// checkDedup classifies a request of a producer table. Rules, for a
// non-zero client with session > 0 and request > 0 (anything else is
// refused, EvictSessionError):
//
//   - an entry of another user: refused (EvictSessionError);
//   - same session: request equal to the entry's → cached reply, lower →
//     RequestAlreadyApplied, higher → applied;
//   - lower session → refused (EvictSessionTooLow); higher → applied, the
//     entry restarts with that session;
//   - no entry: session ≤ floor → refused (EvictNoSession: the client may
//     have been evicted with this very request applied); else applied, a
//     new entry, evicting the least recently used one when full.
func (t *clientTable) checkDedup(client Checksum, sess, req uint64, user uint32) (dedupVerdict, EvictionReason, *session) {
	if sess == 0 || req == 0 {
		return dedupRefused, EvictSessionError, nil
	}
	e := t.m[client]
	switch {
	case e == nil && sess <= t.floor:
		return dedupRefused, EvictNoSession, nil
	case e == nil:
		return dedupApply, EvictNone, nil
	case e.user != user:
		return dedupRefused, EvictSessionError, e
	case sess < e.session:
		return dedupRefused, EvictSessionTooLow, e
	case sess > e.session || req > e.request || (req == e.request && mutationDedupReapply()):
		return dedupApply, EvictNone, e
	case req == e.request:
		return dedupCached, EvictNone, e
	}
	return dedupOlder, EvictNone, e
}

// applyDedup executes a committed op under the producer table's rules
// (checkDedup). A zero client is applied without checks. Every replica
// applies the same ops, so every replica refuses, caches and evicts alike.
func (t *clientTable) applyDedup(h *Header, body []byte, sm StateMachine) ([]byte, Status, EvictionReason, uint64) {
	client, op := h.Client(), h.Op()
	if client.IsZero() {
		return sm.Apply(h, body), StatusOK, EvictNone, op
	}
	v, ev, e := t.checkDedup(client, h.Session(), h.Request(), h.User())
	switch v {
	case dedupRefused:
		return nil, StatusEvicted, ev, 0
	case dedupCached:
		return e.reply, StatusOK, EvictNone, e.replyOp
	case dedupOlder:
		return nil, StatusRequestAlreadyApplied, EvictNone, 0
	}
	reply := sm.Apply(h, body)
	if e == nil {
		if len(t.m) >= t.max {
			t.evictOldest()
		}
		e = &session{client: client}
		t.m[client] = e
	}
	*e = session{client: client, session: h.Session(), user: h.User(), owned: true,
		request: h.Request(), lastOp: op, replyOp: op, reply: reply}
	return reply, StatusOK, EvictNone, op
}

// admitDedup is admit for a producer table: cached replies, refusals and
// older requests are answered at once; a client with a request in flight
// waits (TransientNotAccepted), so its retry finds the first one applied.
func (r *Replica) admitDedup(req *Request) bool {
	if req.Client.IsZero() {
		return true
	}
	answer := func(st Status, ev EvictionReason, op uint64, body []byte) {
		r.reply(Reply{Token: req.Token, Client: req.Client, Session: req.Session, Request: req.Request,
			Operation: req.Operation, Op: op, Commit: r.commitMax, Status: st, Eviction: ev, Body: body})
	}
	v, ev, e := r.sessions.checkDedup(req.Client, req.Session, req.Request, req.User)
	switch v {
	case dedupRefused:
		answer(StatusEvicted, ev, 0, nil)
	case dedupCached:
		answer(StatusOK, EvictNone, e.replyOp, e.reply)
	case dedupOlder:
		answer(StatusRequestAlreadyApplied, EvictNone, 0, nil)
	default:
		return !r.inflight(req)
	}
	return false
}

// admit applies the session checks on the primary before a request enters
// the pipeline, answering on its own what it can (cached replies, evictions,
// duplicates) and refusing a second request of a client that already has one
// in flight. It reports whether the request should be prepared.
func (r *Replica) admit(req *Request) bool {
	if r.sessions.dedup {
		return r.admitDedup(req)
	}
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
//	u32 count | 1<<31 [| 1<<30 for a producer table]
//	[u64 floor]            producer table only: the eviction floor
//	count × { [16] client, u64 session, u32 user, u8 owned (0/1),
//	          u64 request, u64 last_op, u64 reply_op, u32 reply_len,
//	          reply_len bytes }
//
// The first table format had no flag bit in the count and no user or owned
// fields; it is still decoded, its entries unowned (claimed by their next
// Register). A producer table (Config.Dedup) always sets both flags; its
// entries are always owned; an empty encoding is an empty table with floor
// 0 (what a partition checkpoint written before producer tables holds).
func (t *clientTable) encode() []byte {
	if t.dedup && mutationDedupDropTable() && (len(t.m) > 0 || t.floor > 0) {
		return newDedupTable(t.max).encode()
	}
	keys := make([]Checksum, 0, len(t.m))
	size := 4
	for k, e := range t.m {
		keys = append(keys, k)
		size += 16 + 5 + 4*8 + 4 + len(e.reply)
	}
	slices.SortFunc(keys, func(a, b Checksum) int { return bytes.Compare(a[:], b[:]) })
	b := make([]byte, 0, size+8)
	if t.dedup {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(keys))|tableOwners|tableFloor)
		b = binary.LittleEndian.AppendUint64(b, t.floor)
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(keys))|tableOwners)
	}
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
	return decodeTable(b, max, false)
}

// decodeTable decodes a session table (dedup false) or a producer table.
func decodeTable(b []byte, max int, dedup bool) (*clientTable, error) {
	t := newClientTable(max)
	t.dedup = dedup
	if len(b) == 0 {
		return t, nil
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: session table of %d bytes", ErrMalformed, len(b))
	}
	count := binary.LittleEndian.Uint32(b)
	owners := count&tableOwners != 0
	floored := count&tableFloor != 0
	count &^= tableOwners | tableFloor
	if floored != dedup || (dedup && !owners) {
		return nil, fmt.Errorf("%w: table flags %#x do not fit this group", ErrMalformed, binary.LittleEndian.Uint32(b)&^count)
	}
	if int64(count) > int64(max) {
		return nil, fmt.Errorf("%w: %d sessions above clients_table_max %d", ErrMalformed, count, max)
	}
	b = b[4:]
	if dedup {
		if len(b) < 8 {
			return nil, fmt.Errorf("%w: producer table floor truncated", ErrMalformed)
		}
		t.floor = binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
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
		if dedup && (!e.owned || e.request == 0) {
			return nil, fmt.Errorf("%w: producer entry %d unowned or without a request", ErrMalformed, i)
		}
		prev = e.client
		t.m[e.client] = e
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after session table", ErrMalformed, len(b))
	}
	return t, nil
}
