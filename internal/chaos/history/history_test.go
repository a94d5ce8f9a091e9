package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestRecorderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	meta := Meta{RunID: "r1", Seed: 42, Nodes: 3, Tag: 7, Stream: "s", Topic: "t", Partitions: 2,
		Checks: CheckConfig{LivenessOps: 5, LivenessDeadline: 1e9, ReplicaCopies: 3}}
	r, err := NewRecorder(meta, &buf)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Invoke(3, Send, Value{Stream: "s", Topic: "t", Partition: U32(1), Msgs: []MsgID{{Producer: 3, Seq: 9, Attempt: 2}}})
	h.OK(2, Value{Partition: U32(1), Base: U64(40)})
	h = r.Invoke(4, Poll, Value{Partition: U32(0), Consumer: "c:1", Strategy: "next"})
	h.OK(0, Value{Read: []Obs{{Offset: 5, ID: MsgID{Producer: 1, Seq: 2, Attempt: 1}}, {Offset: 6, ID: MsgID{Foreign: true, Raw: wire.Uint128{Lo: 1, Hi: 2}}, Corrupt: true}}})
	r.Note(PhaseLiveness)
	h = r.Invoke(5, StoreOffset, Value{Offset: U64(3)})
	h.Info(-1, errors.New("i/o timeout"), 0)
	h = r.Invoke(NemesisProcess, Fault, Value{Fault: &FaultInfo{Kind: "kill", Action: "start", Nodes: []int{1}}})
	h.Fail(-1, errors.New("no such process"), 0)
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}

	gotMeta, events, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if gotMeta.RunID != "r1" || gotMeta.Seed != 42 || gotMeta.Checks.LivenessOps != 5 || gotMeta.Version != MetaVersion {
		t.Errorf("meta = %+v", gotMeta)
	}
	mem := r.Events()
	if len(events) != len(mem) || len(events) != 9 {
		t.Fatalf("read %d events, recorded %d", len(events), len(mem))
	}
	for i := range events {
		a, _ := json.Marshal(events[i])
		b, _ := json.Marshal(mem[i])
		if !bytes.Equal(a, b) {
			t.Errorf("event %d: read %s, recorded %s", i, a, b)
		}
		if events[i].Index != int64(i+1) || (i > 0 && events[i].Time < events[i-1].Time) {
			t.Errorf("event %d: index %d time %d", i, events[i].Index, events[i].Time)
		}
	}
	read := events[3].Value.Read
	if read[1].ID.Raw != (wire.Uint128{Lo: 1, Hi: 2}) || !read[1].Corrupt || !read[1].ID.Foreign || read[0].ID != (MsgID{Producer: 1, Seq: 2, Attempt: 1}) {
		t.Errorf("observations = %+v", read)
	}

	ops, notes, err := Pair(events)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 4 || len(notes) != 1 || notes[0].Value.Phase != PhaseLiveness {
		t.Fatalf("ops %d notes %d", len(ops), len(notes))
	}
	if ops[0].Node != 2 || *ops[0].Result.Base != 40 || ops[0].Type != OK || ops[0].End() != ops[0].Complete {
		t.Errorf("send op %+v", ops[0])
	}
	if ops[2].Type != Info || ops[2].End() != Never || ops[2].Err != "i/o timeout" || ops[2].Node != -1 {
		t.Errorf("store op %+v", ops[2])
	}
	if ops[3].Process != NemesisProcess || ops[3].Type != Fail || ops[3].Args.Fault.Kind != "kill" {
		t.Errorf("fault op %+v", ops[3])
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r, err := NewRecorder(Meta{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				r.Invoke(p, GetOffset, Value{}).OK(0, Value{})
			}
		}()
	}
	wg.Wait()
	ev := r.Events()
	if len(ev) != 8*200*2 {
		t.Fatalf("%d events", len(ev))
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].Index != ev[i-1].Index+1 || ev[i].Time < ev[i-1].Time {
			t.Fatalf("event %d: index %d time %d after index %d time %d", i, ev[i].Index, ev[i].Time, ev[i-1].Index, ev[i-1].Time)
		}
	}
	if _, _, err := Pair(ev); err != nil {
		t.Fatal(err)
	}
}

func TestDoubleCompletionPanics(t *testing.T) {
	r, _ := NewRecorder(Meta{}, nil)
	h := r.Invoke(1, Send, Value{})
	h.OK(0, Value{})
	defer func() {
		if recover() == nil {
			t.Error("second completion did not panic")
		}
	}()
	h.Fail(0, errors.New("x"), 0)
}

func TestReadTornLastLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewRecorder(Meta{RunID: "x"}, f)
	r.Invoke(1, Send, Value{Msgs: []MsgID{{Seq: 1, Attempt: 1}}})
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"i":2,"t":5,"type":"ok","p":1,"f":"se`) // died mid-line
	f.Close()
	_, events, err := ReadFile(path)
	if err != nil || len(events) != 1 {
		t.Fatalf("events %d, err %v", len(events), err)
	}
	ops, _, err := Pair(events)
	if err != nil || len(ops) != 1 || ops[0].Type != Info || ops[0].Err == "" {
		t.Fatalf("ops %+v, err %v", ops, err)
	}
}

func TestReadRejects(t *testing.T) {
	cases := map[string]string{
		"empty":          "",
		"not a header":   `{"i":1,"t":1,"type":"invoke","p":1,"f":"send"}` + "\n",
		"future version": `{"type":"meta","version":99}` + "\n",
		"bad middle":     `{"type":"meta","version":1}` + "\n" + "garbage\n" + `{"i":1,"t":1,"type":"note","p":-1}` + "\n",
		"bad obs":        `{"type":"meta","version":1}` + "\n" + `{"i":1,"t":1,"type":"ok","p":1,"v":{"read":[[1,"nope"]]}}` + "\n" + `{"i":2,"t":1,"type":"note","p":-1}` + "\n",
	}
	for name, in := range cases {
		if _, _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPairRejectsMalformed(t *testing.T) {
	cases := map[string][]Event{
		"double invoke": {{Index: 1, Type: Invoke, Process: 1, Kind: Send}, {Index: 2, Type: Invoke, Process: 1, Kind: Poll}},
		"orphan":        {{Index: 1, Type: OK, Process: 1, Kind: Send}},
		"wrong kind":    {{Index: 1, Type: Invoke, Process: 1, Kind: Send}, {Index: 2, Type: OK, Process: 1, Kind: Poll}},
		"unknown type":  {{Index: 1, Type: "maybe", Process: 1}},
	}
	for name, ev := range cases {
		if _, _, err := Pair(ev); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMsgIDWireAndText(t *testing.T) {
	ids := []MsgID{{Producer: 0, Seq: 0, Attempt: 1}, {Producer: 65535, Seq: 1<<64 - 1, Attempt: 65535}, {Producer: 7, Seq: 12345, Attempt: 3}}
	for _, m := range ids {
		u := m.Wire(0xdeadbeef)
		if got := FromWire(u, 0xdeadbeef); got != m {
			t.Errorf("wire round trip %v -> %v", m, got)
		}
		if got := FromWire(u, 1); !got.Foreign || got.Raw != u {
			t.Errorf("other tag decoded as %v", got)
		}
		back, err := ParseMsgID(m.String())
		if err != nil || back != m {
			t.Errorf("text round trip %v -> %v, %v", m, back, err)
		}
	}
	f := FromWire(wire.Uint128{Lo: 0xabc, Hi: 0x1234}, 9)
	back, err := ParseMsgID(f.String())
	if err != nil || back != f {
		t.Errorf("foreign round trip %v -> %v, %v", f, back, err)
	}
	for _, bad := range []string{"", "1.2", "1.2.3.4", "a.b.c", "70000.1.1", "x123", "1.2.70000"} {
		if _, err := ParseMsgID(bad); err == nil {
			t.Errorf("ParseMsgID(%q) accepted", bad)
		}
	}
}

func TestPayload(t *testing.T) {
	m := MsgID{Producer: 2, Seq: 77, Attempt: 1}
	p := Payload(5, m, 200)
	if len(p) != 200 || !PayloadMatches(5, m, p) {
		t.Fatalf("payload %q does not match itself", p)
	}
	short := Payload(5, m, 1)
	if !PayloadMatches(5, m, short) || len(short) < 10 {
		t.Errorf("short payload %q", short)
	}
	if PayloadMatches(6, m, p) || PayloadMatches(5, MsgID{Producer: 2, Seq: 77, Attempt: 2}, p) {
		t.Error("payload matches another tag or attempt")
	}
	flipped := bytes.Clone(p)
	flipped[150] ^= 1
	if PayloadMatches(5, m, flipped) {
		t.Error("flipped payload matches")
	}
	if PayloadMatches(5, m, p[:150]) != true {
		t.Error("a shorter payload of the same message must match (size is the sender's choice)")
	}
	if !bytes.Equal(Payload(5, m, 200), p) {
		t.Error("payload not deterministic")
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"meta","version":1,"run_id":"a"}` + "\n" + `{"i":1,"t":1,"type":"invoke","p":1,"f":"send","v":{"msgs":["1.2.3"]}}` + "\n"))
	f.Add([]byte(`{"type":"meta","version":1}` + "\n" + `{"i":1,"t":1,"type":"ok","p":1,"v":{"read":[[1,"x0000000000000001000000000000000f!"]]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		meta, events, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		// What was read must survive a rewrite.
		var buf bytes.Buffer
		w, err := NewRecorder(meta, &buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Flush()
		for _, e := range events {
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("re-encode %+v: %v", e, err)
			}
			buf.Write(append(line, '\n'))
		}
		_, again, err := Read(&buf)
		if err != nil || len(again) != len(events) {
			t.Fatalf("re-read: %d events of %d, %v", len(again), len(events), err)
		}
		_, _, _ = Pair(events) // must not panic
	})
}

func FuzzParseMsgID(f *testing.F) {
	for _, s := range []string{"1.2.3", "x0000000000000001000000000000000f", "65535.18446744073709551615.65535", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMsgID(s)
		if err != nil {
			return
		}
		again, err := ParseMsgID(m.String())
		if err != nil || again != m {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, m, m.String(), again, err)
		}
	})
}
