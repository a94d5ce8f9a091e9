package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

// sim generates histories of a correct single-log server: every operation
// takes effect at one instant between its invocation and its completion,
// or (unknown outcomes) at any later instant or never. Clients record what
// they see through a builder, exactly as the workload records real runs.
type sim struct {
	t     *rapid.T
	b     *builder
	parts int
	logs  [][]history.MsgID
	// offsets are the stored consumer offsets (-1: none).
	offsets map[offKey]int64
	md      map[string]*mdState
	nextID  uint32
	procs   []*simProc
	zombies []*simOp
	// acked: acknowledged messages and where.
	acked  map[history.MsgID]loc
	failed []history.MsgID
	// reads: get-offset results per key, for the regress mutation.
	reads map[offKey]int64
}

type simRole int

const (
	producer simRole = iota
	consumer
	metadata
)

type simProc struct {
	pid     int
	role    simRole
	index   int
	seq     uint64
	attempt uint32
	pending *simOp
}

type simOp struct {
	kind    history.Kind
	args    history.Value
	applied bool
	failed  bool // business rejection decided at apply
	code    int
	result  history.Value
}

func newSim(t *rapid.T) *sim {
	s := &sim{t: t, b: &builder{}, parts: rapid.IntRange(1, 3).Draw(t, "parts"),
		offsets: map[offKey]int64{}, md: map[string]*mdState{}, acked: map[history.MsgID]loc{}, reads: map[offKey]int64{}}
	s.logs = make([][]history.MsgID, s.parts)
	np := rapid.IntRange(1, 3).Draw(t, "producers")
	nc := rapid.IntRange(0, 2).Draw(t, "consumers")
	nm := rapid.IntRange(0, 2).Draw(t, "metadata")
	for i := 0; i < np; i++ {
		s.procs = append(s.procs, &simProc{role: producer, index: i, attempt: 1})
	}
	for i := 0; i < nc; i++ {
		s.procs = append(s.procs, &simProc{role: consumer, index: i})
	}
	for i := 0; i < nm; i++ {
		s.procs = append(s.procs, &simProc{role: metadata, index: i})
	}
	for i, p := range s.procs {
		p.pid = i
	}
	return s
}

func (s *sim) run(steps int) {
	for i := 0; i < steps; i++ {
		if len(s.zombies) > 0 && rapid.IntRange(0, 9).Draw(s.t, "zombie") == 0 {
			j := rapid.IntRange(0, len(s.zombies)-1).Draw(s.t, "which zombie")
			z := s.zombies[j]
			s.zombies = append(s.zombies[:j], s.zombies[j+1:]...)
			if rapid.Bool().Draw(s.t, "zombie lands") {
				s.apply(z)
			}
			continue
		}
		p := s.procs[rapid.IntRange(0, len(s.procs)-1).Draw(s.t, "proc")]
		s.step(p)
	}
	// Wind down: finish what is open, land or drop the zombies.
	for _, p := range s.procs {
		for p.pending != nil {
			s.step(p)
		}
	}
	for _, z := range s.zombies {
		if rapid.Bool().Draw(s.t, "late zombie lands") {
			s.apply(z)
		}
	}
	s.zombies = nil
}

func (s *sim) step(p *simProc) {
	op := p.pending
	switch {
	case op == nil:
		s.invoke(p)
	case !op.applied:
		switch rapid.IntRange(0, 9).Draw(s.t, "fate") {
		case 0: // refused before it could apply
			if op.kind == history.Send || op.kind == history.StoreOffset || op.kind == history.CreateStream {
				s.b.fail(p.pid, op.kind, int(wire.CodeTransientNotAccepted))
				s.done(p, history.Fail)
				return
			}
			s.apply(op)
		case 1, 2: // connection lost before it applied; it may land later
			s.b.info(p.pid, op.kind)
			s.zombies = append(s.zombies, op)
			s.done(p, history.Info)
		default:
			s.apply(op)
		}
	default:
		if rapid.IntRange(0, 5).Draw(s.t, "reply lost") == 0 {
			s.b.info(p.pid, op.kind)
			s.done(p, history.Info)
			return
		}
		if op.failed {
			s.b.fail(p.pid, op.kind, op.code)
			s.done(p, history.Fail)
			return
		}
		s.b.ok(p.pid, op.kind, 0, op.result)
		if op.kind == history.Send {
			for k, m := range op.args.Msgs {
				s.acked[m] = loc{*op.result.Partition, *op.result.Base + uint64(k)}
			}
		}
		if op.kind == history.GetOffset {
			v := int64(-1)
			if op.result.Offset != nil {
				v = int64(*op.result.Offset)
			}
			s.reads[offKey{op.args.Consumer, *op.args.Partition}] = v
		}
		s.done(p, history.OK)
	}
}

func (s *sim) done(p *simProc, outcome history.Type) {
	op := p.pending
	p.pending = nil
	if op.kind == history.Send {
		if outcome == history.OK {
			p.seq++
			p.attempt = 1
		} else {
			if outcome == history.Fail {
				s.failed = append(s.failed, op.args.Msgs...)
			}
			p.attempt++
		}
	}
	if outcome == history.Info {
		p.pid += 1000 // a crashed process never comes back
	}
}

func (s *sim) invoke(p *simProc) {
	op := &simOp{}
	part := uint32(rapid.IntRange(0, s.parts-1).Draw(s.t, "part"))
	switch p.role {
	case producer:
		n := rapid.IntRange(1, 3).Draw(s.t, "batch")
		op.kind = history.Send
		var ids []history.MsgID
		for k := 0; k < n; k++ {
			// A batch is one logical message per position; retries re-send
			// the same positions under the next attempt.
			ids = append(ids, history.MsgID{Producer: uint32(p.index), Seq: p.seq*4 + uint64(k), Attempt: p.attempt})
		}
		op.args = sendArgs(part, ids...)
	case consumer:
		c := fmt.Sprintf("c:%d", p.index)
		switch rapid.IntRange(0, 3).Draw(s.t, "consumer op") {
		case 0:
			op.kind = history.Poll
			from := uint64(rapid.IntRange(0, len(s.logs[part])).Draw(s.t, "from"))
			op.args = history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Consumer: c, Strategy: "offset", From: history.U64(from), Count: 3}
		case 1:
			op.kind = history.Poll
			op.args = history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Consumer: c, Strategy: "next", Count: 3,
				AutoCommit: rapid.Bool().Draw(s.t, "auto")}
		case 2:
			op.kind = history.StoreOffset
			op.args = offArgs(c, part)
			op.args.Offset = history.U64(uint64(rapid.IntRange(0, len(s.logs[part])+1).Draw(s.t, "store")))
		default:
			op.kind = history.GetOffset
			op.args = offArgs(c, part)
		}
	case metadata:
		name := fmt.Sprintf("s%d", rapid.IntRange(0, 2).Draw(s.t, "name"))
		kinds := []history.Kind{history.CreateStream, history.DeleteStream, history.GetStream, history.CreateTopic, history.DeleteTopic, history.GetTopic}
		op.kind = kinds[rapid.IntRange(0, len(kinds)-1).Draw(s.t, "md op")]
		op.args = history.Value{Name: name}
		if strings.HasSuffix(string(op.kind), "topic") {
			op.args.Stream = "md"
		}
	}
	p.pending = op
	s.b.invoke(p.pid, op.kind, op.args)
}

func (s *sim) apply(op *simOp) {
	op.applied = true
	a := op.args
	switch op.kind {
	case history.Send:
		p := *a.Partition
		base := uint64(len(s.logs[p]))
		s.logs[p] = append(s.logs[p], a.Msgs...)
		op.result = ackVal(p, base)
	case history.Poll:
		p := *a.Partition
		k := offKey{a.Consumer, p}
		from := uint64(0)
		if a.Strategy == "offset" {
			from = *a.From
		} else if v, ok := s.offsets[k]; ok {
			from = uint64(v + 1)
		}
		var read []history.Obs
		for o := from; o < uint64(len(s.logs[p])) && len(read) < int(a.Count); o++ {
			read = append(read, history.Obs{Offset: o, ID: s.logs[p][o]})
		}
		if a.AutoCommit && len(read) > 0 {
			s.offsets[k] = int64(read[len(read)-1].Offset)
		}
		op.result = history.Value{Partition: history.U32(p), Read: read}
	case history.StoreOffset:
		p := *a.Partition
		if *a.Offset >= uint64(len(s.logs[p])) {
			op.failed, op.code = true, int(wire.CodeInvalidOffset)
			return
		}
		s.offsets[offKey{a.Consumer, p}] = int64(*a.Offset)
	case history.GetOffset:
		op.result = history.Value{}
		if v, ok := s.offsets[offKey{a.Consumer, *a.Partition}]; ok {
			op.result.Offset = history.U64(uint64(v))
		}
	default:
		key := string(op.kind[strings.IndexByte(string(op.kind), '_')+1:]) + " " + a.Name
		st := s.md[key]
		if st == nil {
			st = &mdState{}
			s.md[key] = st
		}
		exists, missing := wire.CodeStreamNameAlreadyExists, wire.CodeStreamIdNotFound
		if a.Stream != "" {
			exists, missing = wire.CodeTopicNameAlreadyExists, wire.CodeTopicIdNotFound
		}
		switch op.kind {
		case history.CreateStream, history.CreateTopic:
			if st.exists {
				op.failed, op.code = true, int(exists)
				return
			}
			s.nextID++
			*st = mdState{exists: true, id: s.nextID}
			op.result = history.Value{ID: history.U32(s.nextID)}
		case history.DeleteStream, history.DeleteTopic:
			if !st.exists {
				op.failed, op.code = true, int(missing)
				return
			}
			*st = mdState{}
		default:
			if !st.exists {
				op.failed, op.code = true, int(missing)
				return
			}
			op.result = history.Value{ID: history.U32(st.id)}
		}
	}
}

// finish appends final reads of every partition from nodes 0 and 1; logs
// holds each node's view.
func (s *sim) finish(logs [2][][]history.MsgID) {
	for n := 0; n < 2; n++ {
		for p := 0; p < s.parts; p++ {
			s.b.finalRead(5000+n*10+p, n, uint32(p), obs(0, logs[n][p]...))
		}
	}
}

func (s *sim) meta() history.Meta {
	m := meta(2, s.parts)
	m.Checks.StrictReads = true
	// The simulated producers resend a batch as a new attempt (Iggy's
	// at-least-once); exactly-once histories are covered by the retry
	// tests in check_test.go.
	m.Checks.AtLeastOnce = true
	return m
}

func cloneLogs(l [][]history.MsgID) [][]history.MsgID {
	out := make([][]history.MsgID, len(l))
	for i := range l {
		out[i] = append([]history.MsgID(nil), l[i]...)
	}
	return out
}

func report(r *Result) string {
	var sb strings.Builder
	r.Report(&sb)
	return sb.String()
}

func TestSimulatedValidHistories(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newSim(t)
		s.run(rapid.IntRange(5, 80).Draw(t, "steps"))
		s.finish([2][][]history.MsgID{cloneLogs(s.logs), cloneLogs(s.logs)})
		if r := Check(s.meta(), s.b.events, Options{}); !r.Valid {
			t.Fatalf("valid history flagged:\n%s", report(r))
		}
	})
}

// TestSimulatedBugsAreCaught checks each mutation on its own property run,
// so every one gets the run's full number of cases (fewer under -short)
// and must apply in at least three of them.
func TestSimulatedBugsAreCaught(t *testing.T) {
	for _, bug := range []string{"drop", "reuse", "dup", "failed", "regress", "metadata", "lag"} {
		t.Run(bug, func(t *testing.T) {
			applied := 0
			rapid.Check(t, func(t *rapid.T) {
				s := newSim(t)
				s.run(rapid.IntRange(10, 80).Draw(t, "steps"))
				nodes := [2][][]history.MsgID{cloneLogs(s.logs), cloneLogs(s.logs)}
				var ackedIDs []history.MsgID
				for _, m := range sortedIDs(s.acked) {
					ackedIDs = append(ackedIDs, m)
				}
				want := ""
				switch bug {
				case "drop": // a node loses an acknowledged message
					if len(ackedIDs) == 0 {
						return
					}
					m := rapid.SampledFrom(ackedIDs).Draw(t, "victim")
					l := s.acked[m]
					n := rapid.IntRange(0, 1).Draw(t, "node")
					nodes[n][l.part] = append(nodes[n][l.part][:l.off:l.off], nodes[n][l.part][l.off+1:]...)
					want = Lost
				case "reuse": // an acknowledged offset is handed to another message
					if len(ackedIDs) == 0 {
						return
					}
					m := rapid.SampledFrom(ackedIDs).Draw(t, "victim")
					l := s.acked[m]
					intruder := history.MsgID{Producer: 99, Seq: 1, Attempt: 1}
					s.b.sendOK(99, l.part, l.off, intruder)
					for n := range nodes {
						nodes[n][l.part][l.off] = intruder
					}
					want = OffsetReuse
				case "dup": // an acknowledged message is appended twice
					if len(ackedIDs) == 0 {
						return
					}
					m := rapid.SampledFrom(ackedIDs).Draw(t, "victim")
					l := s.acked[m]
					for n := range nodes {
						nodes[n][l.part] = append(nodes[n][l.part], m)
					}
					want = Duplicate
				case "failed": // a refused send lands anyway
					if len(s.failed) == 0 {
						return
					}
					m := rapid.SampledFrom(s.failed).Draw(t, "victim")
					p := rapid.IntRange(0, s.parts-1).Draw(t, "part")
					for n := range nodes {
						nodes[n][p] = append(nodes[n][p], m)
					}
					want = FailedPresent
				case "regress": // a stored offset is forgotten
					var keys []offKey
					for k, v := range s.reads {
						if v >= 0 {
							keys = append(keys, k)
						}
					}
					slices.SortFunc(keys, func(a, b offKey) int { return strings.Compare(a.String(), b.String()) })
					if len(keys) == 0 {
						// No reader saw a stored offset: store and read one first
						// (the store is at offset 0 of a fresh consumer, valid on
						// any partition the server accepts it for).
						k := offKey{"c:77", 0}
						s.b.store(7776, 0, k.consumer, k.part, 0, history.OK)
						s.b.getOffset(7776, 0, k.consumer, k.part, 0)
						keys = append(keys, k)
					}
					k := keys[rapid.IntRange(0, len(keys)-1).Draw(t, "key")]
					s.b.getOffset(7777, 0, k.consumer, k.part, -1)
					want = OffsetRegress
				case "metadata": // a read sees an id no create returned
					s.b.md(7777, history.GetStream, "never-created", "ok", 1_000_000)
					want = MetadataLinear
				case "lag": // a node never catches up with the last message
					var parts []int
					for p := range nodes[1] {
						if len(nodes[1][p]) > 0 {
							parts = append(parts, p)
						}
					}
					if len(parts) == 0 {
						return
					}
					p := rapid.SampledFrom(parts).Draw(t, "part")
					nodes[1][p] = nodes[1][p][:len(nodes[1][p])-1]
					want = Diverged
				}
				s.finish(nodes)
				r := Check(s.meta(), s.b.events, Options{})
				if r.Counts[want] == 0 {
					t.Fatalf("%s bug not caught as %s:\n%s", bug, want, report(r))
				}
				applied++
			})
			if applied < 3 {
				t.Errorf("mutation %q applied only %d times: the generator rarely makes it applicable", bug, applied)
			}
		})
	}
}

// FuzzCheck: any readable history is checked without panicking, and the
// verdict agrees with the counts.
func FuzzCheck(f *testing.F) {
	b := &builder{}
	log := base(b)
	b.finalRead(100, 0, 0, obs(0, log...))
	b.md(7, history.CreateStream, "a", "ok", 1)
	b.store(8, 0, "c:1", 0, 1, history.OK)
	b.getOffset(8, 0, "c:1", 0, 1)
	var buf strings.Builder
	rec, _ := history.NewRecorder(meta(1, 1), &buf)
	rec.Flush()
	for _, e := range b.events {
		line, _ := json.Marshal(e)
		buf.Write(append(line, '\n'))
	}
	f.Add([]byte(buf.String()))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, events, err := history.Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		r := Check(m, events, Options{LinearizabilityTimeout: time.Second})
		total := 0
		for _, n := range r.Counts {
			total += n
		}
		if r.Valid != (total == 0) {
			t.Fatalf("Valid %v with counts %v", r.Valid, r.Counts)
		}
		var sb strings.Builder
		r.Report(&sb)
	})
}
