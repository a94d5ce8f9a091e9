package vsr_test

import (
	"encoding/binary"
	"testing"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

func soloConfig() vsr.Config {
	cfg := vsr.DefaultConfig()
	cfg.Group = 42
	cfg.Cluster = vsr.Checksum{1}
	cfg.Durability = vsr.Persisted
	return cfg
}

// TestSoloOnePass walks the single-replica path by hand: one request gives
// exactly one journal append (synced under Persisted), and its completion
// gives exactly one reply, with nothing else in between.
func TestSoloOnePass(t *testing.T) {
	cfg := soloConfig()
	kv := vsrtest.NewKV()
	r, err := vsr.New(cfg, kv, vsr.Boot{Incarnation: 1})
	if err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if rd.State == nil {
		t.Fatal("fresh replica did not ask to persist its initial state")
	}
	r.StateDone(nil)
	if rd := r.Ready(); !rd.Empty() {
		t.Fatalf("unexpected output after state write: %+v", rd)
	}
	body := vsrtest.EncodePut(7, 99)
	r.Submit(vsr.Request{Token: 5, Operation: vsrtest.OpPut, WallClock: 1000, Body: body})
	rd = r.Ready()
	if len(rd.Journal) != 1 || len(rd.Replies) != 0 || len(rd.Messages) != 0 || rd.State != nil {
		t.Fatalf("want exactly one append, got %+v", rd)
	}
	j := rd.Journal[0]
	if j.Kind != vsr.JournalAppend || j.Op != 1 || !j.Sync || &j.Body[0] != &body[0] {
		t.Fatalf("bad append %+v (body copied: %v)", j, &j.Body[0] != &body[0])
	}
	if j.Header.Timestamp() != 1000 || j.Header.Op() != 1 || !j.Header.Parent().IsZero() {
		t.Fatalf("bad prepare header: ts=%d op=%d", j.Header.Timestamp(), j.Header.Op())
	}
	r.AppendDone(1, j.Header.Identity(), nil)
	rd = r.Ready()
	if len(rd.Replies) != 1 || len(rd.Journal) != 0 {
		t.Fatalf("want exactly one reply, got %+v", rd)
	}
	rp := rd.Replies[0]
	if rp.Token != 5 || rp.Op != 1 || rp.Status != vsr.StatusOK || binary.LittleEndian.Uint64(rp.Body) != 0 {
		t.Fatalf("bad reply %+v", rp)
	}
	if kv.Value(7) != 99 {
		t.Fatalf("state machine did not apply: %v", kv)
	}
}

// TestSoloTimestampsMonotonic checks that prepare timestamps strictly
// increase even when the wall clock stalls or goes backwards.
func TestSoloTimestampsMonotonic(t *testing.T) {
	n := vsrtest.NewNode(0, soloConfig(), vsrtest.NewDisk())
	if err := n.Boot(false); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for i, wall := range []uint64{500, 500, 400, 900, 901, 10} {
		n.Submit(vsr.Request{Token: uint64(i), Operation: vsrtest.OpGet, WallClock: wall, Body: vsrtest.EncodeGet(1)})
		reps := n.TakeReplies()
		if len(reps) != 1 || reps[0].Status != vsr.StatusOK {
			t.Fatalf("request %d: replies %+v", i, reps)
		}
		if reps[0].Timestamp <= last {
			t.Fatalf("timestamp %d after %d", reps[0].Timestamp, last)
		}
		last = reps[0].Timestamp
	}
}

// TestSoloRestart: everything acknowledged survives a restart, the restarted
// replica moves to a new view, and new ops continue the same hash chain.
func TestSoloRestart(t *testing.T) {
	disk := vsrtest.NewDisk()
	n := vsrtest.NewNode(0, soloConfig(), disk)
	if err := n.Boot(false); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 700; i++ { // crosses a checkpoint (interval 512)
		n.Submit(vsr.Request{Token: uint64(i), Operation: vsrtest.OpPut, WallClock: uint64(i),
			Body: vsrtest.EncodePut(uint8(i%5), uint64(i))})
	}
	if got := len(n.TakeReplies()); got != 700 {
		t.Fatalf("%d replies", got)
	}
	before := n.R.Info()
	want := n.SM.Snapshot()
	n.Crash()
	if err := n.Boot(false); err != nil {
		t.Fatal(err)
	}
	after := n.R.Info()
	if after.CommitMin != 700 || after.View != before.View+1 || after.Checkpoint != 512 {
		t.Fatalf("after restart: %+v (before %+v)", after, before)
	}
	if string(n.SM.Snapshot()) != string(want) {
		t.Fatal("state differs after replay")
	}
	n.Submit(vsr.Request{Token: 1000, Operation: vsrtest.OpGet, WallClock: 1, Body: vsrtest.EncodeGet(1)})
	reps := n.TakeReplies()
	if len(reps) != 1 || reps[0].Op != 701 {
		t.Fatalf("replies after restart %+v", reps)
	}
	if got := binary.LittleEndian.Uint64(reps[0].Body); got != 696 {
		t.Fatalf("read %d, want 696", got)
	}
}
