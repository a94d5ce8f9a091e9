package vsr

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

type countingSM struct{ applied int }

func (c *countingSM) Apply(h *Header, body []byte) []byte {
	c.applied++
	return []byte(fmt.Sprintf("r%d", h.Op()))
}

// modelSession is the reference the session table is checked against.
type modelSession struct {
	session, request, lastOp, replyOp uint64
	user                              uint32
}

// TestClientTableModel drives the session table with random registers and
// requests (including retries, stale sessions and unknown clients) and
// checks every outcome against a simple model: at-most-once execution,
// cached replies for the last request, evictions with the right reason, and
// capacity eviction of the session with the oldest last applied op. After
// every step the table survives an encode/decode round trip unchanged.
func TestClientTableModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(2, 5).Draw(t, "max")
		table := newClientTable(max)
		model := map[byte]*modelSession{}
		sm := &countingSM{}
		op := uint64(0)
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			op++
			c := rapid.ByteRange(1, 7).Draw(t, "client")
			var h Header
			h.putSum(offPrepClient, Checksum{c})
			h.put64(offPrepOp, op)
			before := sm.applied
			if rapid.IntRange(0, 3).Draw(t, "kind") == 0 {
				h[offPrepOperation] = OperationRegister
				user := uint32(rapid.IntRange(1, 2).Draw(t, "user"))
				h.put32(offPrepUser, user)
				_, st, ev, at := table.apply(&h, nil, sm)
				if m := model[c]; m != nil && m.user != user {
					// Another user's session: refused, left as it was.
					if st != StatusEvicted || ev != EvictSessionError || sm.applied != before+1 {
						t.Fatalf("register over user %d's session by user %d: %v %v", m.user, user, st, ev)
					}
					continue
				}
				if st != StatusOK || ev != EvictNone || at != op || sm.applied != before+1 {
					t.Fatalf("register: %v %v %d", st, ev, at)
				}
				if _, ok := model[c]; !ok && len(model) >= max {
					var victim byte
					for k, m := range model {
						if victim == 0 || m.lastOp < model[victim].lastOp {
							victim = k
						}
					}
					delete(model, victim)
				}
				model[c] = &modelSession{session: op, lastOp: op, replyOp: op, user: user}
			} else {
				h[offPrepOperation] = 10
				m := model[c]
				session := uint64(rapid.Uint64Range(0, op).Draw(t, "session"))
				if m != nil && rapid.Bool().Draw(t, "right session") {
					session = m.session
				}
				req := uint64(rapid.Uint64Range(1, 6).Draw(t, "request"))
				h.put64(offPrepSession, session)
				h.put64(offPrepRequest, req)
				reply, st, ev, at := table.apply(&h, nil, sm)
				executed := sm.applied == before+1
				switch {
				case m == nil:
					if st != StatusEvicted || ev != EvictNoSession || executed {
						t.Fatalf("unknown client: %v %v executed=%v", st, ev, executed)
					}
				case session < m.session:
					if st != StatusEvicted || ev != EvictSessionTooLow || executed {
						t.Fatalf("old session: %v %v", st, ev)
					}
				case session > m.session:
					if st != StatusEvicted || ev != EvictSessionError || executed {
						t.Fatalf("future session: %v %v", st, ev)
					}
				case req == m.request:
					if st != StatusOK || executed || at != m.replyOp || string(reply) != fmt.Sprintf("r%d", m.replyOp) {
						t.Fatalf("retry: %v executed=%v at=%d want cached reply of %d", st, executed, at, m.replyOp)
					}
				case req < m.request:
					if st != StatusRequestAlreadyApplied || executed {
						t.Fatalf("old request: %v executed=%v", st, executed)
					}
				default:
					if st != StatusOK || !executed || at != op {
						t.Fatalf("new request: %v executed=%v", st, executed)
					}
					m.request, m.lastOp, m.replyOp = req, op, op
				}
			}
			if len(table.m) != len(model) {
				t.Fatalf("table holds %d sessions, model %d", len(table.m), len(model))
			}
			for k, m := range model {
				e := table.m[Checksum{k}]
				if e == nil || e.session != m.session || e.request != m.request || e.lastOp != m.lastOp || e.user != m.user || !e.owned {
					t.Fatalf("client %d: table %+v, model %+v", k, e, m)
				}
			}
			enc := table.encode()
			back, err := decodeClientTable(enc, max)
			if err != nil || !bytes.Equal(back.encode(), enc) {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

// A table encoded before sessions recorded their owner decodes with every
// entry unowned: the next Register, by anyone, claims it.
func TestClientTableLegacyEncoding(t *testing.T) {
	var b []byte
	b = append(b, 1, 0, 0, 0) // count 1, no owner flag
	id := Checksum{7}
	b = append(b, id[:]...)
	for _, v := range []uint64{5, 2, 6, 6} { // session, request, last_op, reply_op
		b = append(b, byte(v), 0, 0, 0, 0, 0, 0, 0)
	}
	b = append(b, 1, 0, 0, 0, 'r')
	table, err := decodeClientTable(b, 4)
	if err != nil {
		t.Fatal(err)
	}
	e := table.m[Checksum{7}]
	if e == nil || e.owned || e.session != 5 || e.request != 2 || string(e.reply) != "r" {
		t.Fatalf("legacy entry %+v", e)
	}
	var h Header
	h.putSum(offPrepClient, Checksum{7})
	h.put64(offPrepOp, 9)
	h[offPrepOperation] = OperationRegister
	h.put32(offPrepUser, 3)
	if _, st, _, _ := table.apply(&h, nil, &countingSM{}); st != StatusOK {
		t.Fatalf("register over an unowned entry: %v", st)
	}
	if e := table.m[Checksum{7}]; !e.owned || e.user != 3 || e.session != 9 {
		t.Fatalf("claimed entry %+v", e)
	}
	// Re-encoded in the current format, with the owner.
	again, err := decodeClientTable(table.encode(), 4)
	if err != nil || !again.m[Checksum{7}].owned || again.m[Checksum{7}].user != 3 {
		t.Fatalf("round trip: %v", err)
	}
}
