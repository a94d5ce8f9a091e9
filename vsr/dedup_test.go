package vsr

import (
	"bytes"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

type dedupKey struct {
	client           byte
	session, request uint64
}

// TestProducerTableModel drives a producer table with random requests —
// new ones, retries, older ones, lower and higher sessions, other users,
// zero clients — against a model of its rules, and checks the property the
// table exists for: no (client, session, request) with a non-zero client is
// executed twice, and a retry answered from the table gets the reply of the
// op that executed it. Every step survives an encode/decode round trip.
func TestProducerTableModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 4).Draw(t, "max")
		table := newDedupTable(max)
		type entry struct {
			session, request, lastOp, replyOp uint64
			user                              uint32
		}
		model := map[byte]*entry{}
		floor := uint64(0)
		executed := map[dedupKey]uint64{} // → op that executed it
		sm := &countingSM{}
		steps := rapid.IntRange(1, 120).Draw(t, "steps")
		for op := uint64(1); op <= uint64(steps); op++ {
			c := rapid.ByteRange(0, 6).Draw(t, "client")
			sess := rapid.Uint64Range(0, 4).Draw(t, "session")
			req := rapid.Uint64Range(0, 5).Draw(t, "request")
			user := uint32(1)
			if rapid.IntRange(0, 9).Draw(t, "other user") == 0 {
				user = 2
			}
			var h Header
			if c != 0 {
				h.putSum(offPrepClient, Checksum{c})
			}
			h.put64(offPrepOp, op)
			h.put64(offPrepSession, sess)
			h.put64(offPrepRequest, req)
			h.put32(offPrepUser, user)
			h[offPrepOperation] = 160
			before := sm.applied
			reply, st, ev, at := table.apply(&h, nil, sm)
			ran := sm.applied == before+1
			if c == 0 {
				if !ran || st != StatusOK {
					t.Fatalf("zero client: %v ran=%v", st, ran)
				}
				continue
			}
			m := model[c]
			k := dedupKey{c, sess, req}
			want := "apply"
			wantEv := EvictNone
			switch {
			case sess == 0 || req == 0:
				want, wantEv = "refuse", EvictSessionError
			case m == nil && sess <= floor:
				want, wantEv = "refuse", EvictNoSession
			case m == nil:
			case m.user != user:
				want, wantEv = "refuse", EvictSessionError
			case sess < m.session:
				want, wantEv = "refuse", EvictSessionTooLow
			case sess > m.session || req > m.request:
			case req == m.request:
				want = "cached"
			default:
				want = "older"
			}
			switch want {
			case "refuse":
				if ran || st != StatusEvicted || ev != wantEv {
					t.Fatalf("op %d %v: want refusal %v, got %v %v ran=%v", op, k, wantEv, st, ev, ran)
				}
			case "older":
				if ran || st != StatusRequestAlreadyApplied {
					t.Fatalf("op %d %v: want already applied, got %v ran=%v", op, k, st, ran)
				}
			case "cached":
				if ran || st != StatusOK || at != m.replyOp || string(reply) != fmt.Sprintf("r%d", m.replyOp) || executed[k] != at {
					t.Fatalf("op %d %v: want the reply of op %d, got %v at %d %q ran=%v", op, k, m.replyOp, st, at, reply, ran)
				}
			case "apply":
				if !ran || st != StatusOK || at != op {
					t.Fatalf("op %d %v: want applied, got %v ran=%v", op, k, st, ran)
				}
				if prev, dup := executed[k]; dup {
					t.Fatalf("op %d: %v executed again (first at op %d)", op, k, prev)
				}
				executed[k] = op
				if m == nil && len(model) >= max {
					var victim byte
					for id, e := range model {
						if victim == 0 || e.lastOp < model[victim].lastOp {
							victim = id
						}
					}
					floor = maxU(floor, model[victim].session)
					delete(model, victim)
				}
				model[c] = &entry{session: sess, request: req, lastOp: op, replyOp: op, user: user}
			}
			if len(table.m) != len(model) || table.floor != floor {
				t.Fatalf("table holds %d entries floor %d, model %d floor %d", len(table.m), table.floor, len(model), floor)
			}
			for id, m := range model {
				e := table.m[Checksum{id}]
				if e == nil || e.session != m.session || e.request != m.request || e.lastOp != m.lastOp || e.user != m.user {
					t.Fatalf("client %d: table %+v, model %+v", id, e, m)
				}
			}
			enc := table.encode()
			back, err := decodeTable(enc, max, true)
			if err != nil || !bytes.Equal(back.encode(), enc) || back.floor != floor {
				t.Fatalf("round trip: %v", err)
			}
		}
	})
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// An evicted client retrying the request it was evicted with is refused,
// not executed again: the floor remembers the evicted session.
func TestProducerTableEvictedRetryRefused(t *testing.T) {
	table := newDedupTable(1)
	sm := &countingSM{}
	send := func(op uint64, client byte, sess, req uint64) (Status, EvictionReason) {
		var h Header
		h.putSum(offPrepClient, Checksum{client})
		h.put64(offPrepOp, op)
		h.put64(offPrepSession, sess)
		h.put64(offPrepRequest, req)
		h[offPrepOperation] = 160
		_, st, ev, _ := table.apply(&h, nil, sm)
		return st, ev
	}
	send(1, 1, 10, 1) // client 1, session 10
	send(2, 2, 5, 1)  // client 2 evicts client 1: floor 10
	if st, ev := send(3, 1, 10, 1); st != StatusEvicted || ev != EvictNoSession || sm.applied != 2 {
		t.Fatalf("evicted retry: %v %v, applied %d", st, ev, sm.applied)
	}
	// A fresh session above the floor is served.
	if st, _ := send(4, 1, 11, 1); st != StatusOK || sm.applied != 3 {
		t.Fatalf("new session: %v, applied %d", st, sm.applied)
	}
	// Tables of the two kinds do not decode as each other.
	if _, err := decodeTable(table.encode(), 1, false); err == nil {
		t.Fatal("a producer table decoded as a session table")
	}
	if _, err := decodeTable(newClientTable(2).encode(), 2, true); err == nil {
		t.Fatal("a session table decoded as a producer table")
	}
	if back, err := decodeTable(nil, 1, true); err != nil || len(back.m) != 0 || back.floor != 0 {
		t.Fatalf("empty producer table: %v", err)
	}
}

type fixedSM struct{ reply []byte }

func (f *fixedSM) Apply(*Header, []byte) []byte { return f.reply }

// BenchmarkProducerTableApply is the per-op cost of the producer table at
// apply time: a full table of 4096 producers each sending its next request
// (identity), against the same ops without an identity (Iggy's SDKs).
func BenchmarkProducerTableApply(b *testing.B) {
	for _, identity := range []bool{false, true} {
		name := "anonymous"
		if identity {
			name = "identity"
		}
		b.Run(name, func(b *testing.B) {
			table := newDedupTable(4096)
			sm := &fixedSM{reply: make([]byte, 8)}
			var h Header
			h[offPrepOperation] = 160
			h.put64(offPrepSession, 1)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if identity {
					h.putSum(offPrepClient, Checksum{byte(i), byte(i >> 8 & 0x0f), 1})
					h.put64(offPrepRequest, uint64(i/4096+1))
				}
				h.put64(offPrepOp, uint64(i+1))
				if _, st, _, _ := table.apply(&h, nil, sm); st != StatusOK {
					b.Fatal(st)
				}
			}
		})
	}
}
