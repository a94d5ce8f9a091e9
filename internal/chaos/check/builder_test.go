package check

import (
	"strings"
	"testing"

	"github.com/iggo/iggo/internal/chaos/history"
)

// builder writes events with explicit, strictly increasing times (one ns
// per event unless advanced).
type builder struct {
	events []history.Event
	t      int64
}

func (b *builder) add(e history.Event) int64 {
	b.t++
	e.Index = int64(len(b.events) + 1)
	e.Time = b.t
	b.events = append(b.events, e)
	return e.Index
}

func (b *builder) invoke(p int, k history.Kind, v history.Value) int64 {
	return b.add(history.Event{Type: history.Invoke, Process: p, Kind: k, Value: &v})
}

func (b *builder) ok(p int, k history.Kind, node int, v history.Value) int64 {
	return b.add(history.Event{Type: history.OK, Process: p, Kind: k, Node: history.Int(node), Value: &v})
}

func (b *builder) fail(p int, k history.Kind, code int) int64 {
	return b.add(history.Event{Type: history.Fail, Process: p, Kind: k, Err: "refused", Code: code})
}

func (b *builder) info(p int, k history.Kind) int64 {
	return b.add(history.Event{Type: history.Info, Process: p, Kind: k, Err: "timeout"})
}

func (b *builder) note(phase string) {
	b.add(history.Event{Type: history.Note, Process: history.NemesisProcess, Value: &history.Value{Phase: phase}})
}

const (
	tStream = "s"
	tTopic  = "t"
)

func id(p uint32, seq uint64, a uint32) history.MsgID {
	return history.MsgID{Producer: p, Seq: seq, Attempt: a}
}

func sendArgs(part uint32, ids ...history.MsgID) history.Value {
	return history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Msgs: ids}
}

func ackVal(part uint32, base uint64) history.Value {
	return history.Value{Partition: history.U32(part), Base: history.U64(base)}
}

// sendOK records a complete acknowledged send.
func (b *builder) sendOK(p int, part uint32, base uint64, ids ...history.MsgID) {
	b.invoke(p, history.Send, sendArgs(part, ids...))
	b.ok(p, history.Send, 0, ackVal(part, base))
}

func obs(from uint64, ids ...history.MsgID) []history.Obs {
	out := make([]history.Obs, len(ids))
	for i, m := range ids {
		out[i] = history.Obs{Offset: from + uint64(i), ID: m}
	}
	return out
}

func (b *builder) finalRead(p int, node int, part uint32, read []history.Obs) {
	b.invoke(p, history.FinalRead, history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Node: history.Int(node)})
	cur := uint64(0)
	if len(read) > 0 {
		cur = read[len(read)-1].Offset
	}
	b.ok(p, history.FinalRead, node, history.Value{Read: read, Current: history.U64(cur)})
}

func (b *builder) poll(p int, node int, part uint32, from uint64, read []history.Obs) {
	b.invoke(p, history.Poll, history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Consumer: "c:1", Strategy: "offset", From: history.U64(from), Count: 10})
	b.ok(p, history.Poll, node, history.Value{Partition: history.U32(part), Read: read})
}

func meta(nodes, parts int) history.Meta {
	return history.Meta{Type: "meta", Version: history.MetaVersion, Nodes: nodes, Stream: tStream, Topic: tTopic, Partitions: parts,
		Checks: history.CheckConfig{ReplicaCopies: nodes}}
}

func run(t *testing.T, m history.Meta, b *builder) *Result {
	t.Helper()
	r := Check(m, b.events, Options{})
	return r
}

// expect asserts exactly the given checks failed (each at least once).
func expect(t *testing.T, r *Result, checks ...string) {
	t.Helper()
	var sb strings.Builder
	r.Report(&sb)
	want := map[string]bool{}
	for _, c := range checks {
		want[c] = true
		if r.Counts[c] == 0 {
			t.Errorf("check %q not flagged\n%s", c, sb.String())
		}
	}
	for c, n := range r.Counts {
		if n > 0 && !want[c] {
			t.Errorf("check %q flagged unexpectedly\n%s", c, sb.String())
		}
	}
	if r.Valid != (len(checks) == 0) {
		t.Errorf("Valid = %v with %d expected violations", r.Valid, len(checks))
	}
}
