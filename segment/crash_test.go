package segment

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"pgregory.net/rapid"
)

// crashTester drives a log on the fault filesystem through rounds of
// operations, each ended by a crash (optionally a power cut in the middle of
// an operation), and checks after every recovery that nothing durable was
// lost and nothing read back differs from what was appended.
type crashTester struct {
	t    *rapid.T
	f    *vfs.Fault
	dir  string
	cfg  Config
	l    *Log
	ts   uint64
	recs map[uint64][]byte // every record ever handed to Append, by base offset
	plan *SyncPlan         // a group commit in flight

	// Observed after the last operation that returned success.
	durable uint64 // DurableNextOffset
	first   uint64 // FirstOffset
}

// open recovers the log and checks it against what came before the crash.
func (ct *crashTester) open(t *rapid.T) bool {
	l, rep, err := Open(ct.f, ct.dir, ct.cfg)
	if errors.Is(err, vfs.ErrInjected) {
		return false
	}
	if err != nil {
		t.Fatalf("recovery after a crash: %v (report %+v)", err, rep)
	}
	ct.l = l
	if l.NextOffset() < ct.durable {
		t.Fatalf("lost durable data: next offset %d, durable was %d (report %+v)", l.NextOffset(), ct.durable, rep)
	}
	if l.FirstOffset() < ct.first {
		t.Fatalf("deleted data came back: first offset %d, was %d", l.FirstOffset(), ct.first)
	}
	if l.DurableNextOffset() != l.NextOffset() {
		t.Fatalf("after recovery durable %d, next %d", l.DurableNextOffset(), l.NextOffset())
	}
	ct.checkContents(t)
	// Records beyond what survived are forgotten; their offsets are free.
	for off := range ct.recs {
		if off >= l.NextOffset() {
			delete(ct.recs, off)
		}
	}
	ct.observe()
	return true
}

func (ct *crashTester) observe() {
	ct.durable, ct.first = ct.l.DurableNextOffset(), ct.l.FirstOffset()
}

// checkContents reads the whole log and compares every record with the one
// appended at its offset.
func (ct *crashTester) checkContents(t *rapid.T) {
	l := ct.l
	buf := make([]byte, 1<<20)
	res, err := l.Read(buf, ReadRequest{From: l.FirstOffset(), MaxMessages: 1 << 31})
	if err != nil {
		t.Fatalf("read after recovery: %v", err)
	}
	if res.Messages != l.MessageCount() || (res.Records > 0 && (res.FirstOffset != l.FirstOffset() || res.NextOffset != l.NextOffset())) {
		t.Fatalf("read %+v, log [%d, %d)", res, l.FirstOffset(), l.NextOffset())
	}
	for p := 0; p < res.N; {
		h := parseHeader(buf[p:])
		rec := buf[p : p+int(h.batchLength)]
		if want, ok := ct.recs[h.baseOffset]; !ok || !bytes.Equal(rec, want) {
			t.Fatalf("record at offset %d differs from the one appended (known %v)", h.baseOffset, ok)
		}
		p += len(rec)
	}
}

// records draws records continuing the log and remembers them.
func (ct *crashTester) records(t *rapid.T) [][]byte {
	var recs [][]byte
	next := ct.l.NextOffset()
	for i := rapid.IntRange(1, 4).Draw(t, "records"); i > 0; i-- {
		ct.ts += uint64(rapid.IntRange(0, 3).Draw(t, "tsDelta"))
		r := simpleRecord(ct.cfg.PartitionID, next, ct.ts, rapid.IntRange(1, 3).Draw(t, "count"), rapid.IntRange(0, 700).Draw(t, "size"))
		ct.recs[next] = r
		next = parseHeader(r).nextOffset()
		recs = append(recs, r)
	}
	return recs
}

// step runs one random operation; false when an injected fault stopped it.
func (ct *crashTester) step(t *rapid.T) bool {
	l := ct.l
	var err error
	switch op := rapid.IntRange(0, 13).Draw(t, "op"); {
	case op < 5:
		err = l.Append(ct.records(t))
	case op < 7 && ct.plan == nil:
		// A shard loop iteration: the staged append and the group commit
		// covering it in one submission.
		var b vfs.Batch
		var st Staged
		if st, err = l.StageAppend(&b, Whole(ct.records(t)...)); err != nil {
			break
		}
		var p SyncPlan
		if p, err = l.PlanSync(); err != nil {
			break
		}
		p.AddTo(&b)
		serr := ct.f.Submit(&b)
		if err = l.FinishAppend(serr); err == nil {
			err = l.CompleteSync(p, serr)
		} else {
			l.CompleteSync(p, serr)
		}
		if err == nil && st.Records == 0 {
			t.Fatal("nothing staged")
		}
	case op < 10:
		// The shard's group commit, with appends possibly made while its
		// syncs are in flight.
		if ct.plan == nil {
			var p SyncPlan
			if p, err = l.PlanSync(); err == nil {
				ct.plan = &p
			}
		} else {
			var b vfs.Batch
			ct.plan.AddTo(&b)
			err = l.CompleteSync(*ct.plan, ct.f.Submit(&b))
			ct.plan = nil
		}
	case op == 10:
		if ct.plan == nil {
			err = l.Sync()
		}
	case op == 11:
		_, err = l.DeleteOldestSegments(rapid.IntRange(0, 2).Draw(t, "n"))
	case op == 12:
		_, err = l.DeleteSegmentsToFit(uint64(rapid.IntRange(0, 8000).Draw(t, "maxBytes")))
	case op == 13:
		err = l.Purge(l.NextOffset() + uint64(rapid.IntRange(0, 3).Draw(t, "skip")))
	}
	if errors.Is(err, ErrSyncPending) && ct.plan != nil {
		err = nil
	}
	if err != nil {
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("operation failed without an injected fault: %v", err)
		}
		return false
	}
	if l.DurableNextOffset() < ct.durable {
		t.Fatalf("durable next went back from %d to %d", ct.durable, l.DurableNextOffset())
	}
	ct.observe()
	return true
}

// cut arms a power cut at a random operation of the filesystem.
func (ct *crashTester) cut(t *rapid.T, label string) {
	if rapid.IntRange(0, 2).Draw(t, label) == 0 {
		return
	}
	ct.f.Inject(vfs.Rule{
		Ops:    vfs.OpWrite | vfs.OpSync | vfs.OpSyncDir | vfs.OpTruncate | vfs.OpRemove | vfs.OpOpen,
		After:  rapid.IntRange(0, 60).Draw(t, label+"After"),
		Count:  1,
		Action: vfs.Halt,
		TearAt: -1,
	})
}

func (ct *crashTester) crash(t *rapid.T) {
	if ct.l != nil {
		ct.l.Close()
		ct.l = nil
	}
	ct.plan = nil
	mode := rapid.SampledFrom([]vfs.CrashMode{vfs.CrashRandom, vfs.CrashRandom, vfs.CrashKeepAll, vfs.CrashDropAll}).Draw(t, "crash")
	ct.f = ct.f.CrashWith(mode)
}

func TestCrashKeepsDurableData(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig(uint64(rapid.IntRange(600, 5000).Draw(t, "segmentSize")))
		cfg.IndexInterval = uint32(rapid.SampledFrom([]int{0, 1500}).Draw(t, "indexInterval"))
		cfg.IndexSummaryStride = rapid.SampledFrom([]int{1, 3}).Draw(t, "stride")
		ct := &crashTester{
			t:    t,
			f:    vfs.NewFault(rapid.Uint64().Draw(t, "seed")),
			dir:  "/data/partitions/0",
			cfg:  cfg,
			recs: map[uint64][]byte{},
			ts:   1000,
		}
		if err := vfs.MkdirAllSync(ct.f, ct.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for round := rapid.IntRange(1, 5).Draw(t, "rounds"); round > 0; round-- {
			ct.cut(t, "cutOpen")
			if ct.open(t) {
				for ops := rapid.IntRange(0, 25).Draw(t, "ops"); ops > 0; ops-- {
					if !ct.step(t) {
						break
					}
				}
			}
			ct.crash(t)
		}
		ct.f.ClearRules()
		if !ct.open(t) {
			t.Fatal("final open failed")
		}
		ct.l.Close()
	})
}

// TestCorruptionNeverServedSilently flips bits in a durable sector of a
// segment file; whatever recovery and reads then do, they either report
// corruption or return exactly what was appended.
func TestCorruptionNeverServedSilently(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := testConfig(uint64(rapid.IntRange(800, 3000).Draw(t, "segmentSize")))
		cfg.VerifyAllOnOpen = rapid.Bool().Draw(t, "verifySealed")
		cfg.IndexInterval = uint32(rapid.SampledFrom([]int{0, 1500}).Draw(t, "indexInterval"))
		f := vfs.NewFault(rapid.Uint64().Draw(t, "seed"))
		const dir = "/p"
		if err := vfs.MkdirAllSync(f, dir, 0o755); err != nil {
			t.Fatal(err)
		}
		l, _, err := Open(f, dir, cfg)
		if err != nil {
			t.Fatal(err)
		}
		recs := map[uint64][]byte{}
		for i := rapid.IntRange(1, 30).Draw(t, "records"); i > 0; i-- {
			r := simpleRecord(cfg.PartitionID, l.NextOffset(), uint64(i), rapid.IntRange(1, 3).Draw(t, "count"), rapid.IntRange(0, 500).Draw(t, "size"))
			recs[l.NextOffset()] = r
			if err := l.Append([][]byte{r}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		segs := l.Segments()
		next := l.NextOffset()
		l.Close()
		s := segs[rapid.IntRange(0, len(segs)-1).Draw(t, "segment")]
		path := s.LogPath
		if rapid.IntRange(0, 3).Draw(t, "index") == 0 {
			path = s.IndexPath
		}
		f.CorruptRandom(path)
		f = f.CrashWith(vfs.CrashKeepAll)

		l, _, err = Open(f, dir, cfg)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open: %v", err)
			}
			return
		}
		defer l.Close()
		if l.NextOffset() != next {
			// Everything was synced: a shorter log would be silent loss.
			t.Fatalf("recovered next offset %d, was %d", l.NextOffset(), next)
		}
		buf := make([]byte, 1<<20)
		res, err := l.Read(buf, ReadRequest{From: 0, MaxMessages: 1 << 31})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read: %v", err)
			}
			return
		}
		if res.NextOffset != next {
			t.Fatalf("read stopped at %d of %d", res.NextOffset, next)
		}
		for p := 0; p < res.N; {
			h := parseHeader(buf[p:])
			if !bytes.Equal(buf[p:p+int(h.batchLength)], recs[h.baseOffset]) {
				t.Fatalf("record %d served with different bytes", h.baseOffset)
			}
			p += int(h.batchLength)
		}
		for off := uint64(0); off < next; off++ {
			ri, err := l.Locate(off)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("locate %d: %v", off, err)
				}
				continue
			}
			if off < ri.BaseOffset || off >= ri.NextOffset() || !bytes.Equal(recs[ri.BaseOffset][:RecordHeaderSize], headerOf(t, l, ri)) {
				t.Fatalf("locate %d: wrong record %+v", off, ri)
			}
		}
	})
}

func headerOf(t *rapid.T, l *Log, ri RecordInfo) []byte {
	b := make([]byte, RecordHeaderSize)
	s := l.segs[l.segmentFor(ri.BaseOffset)]
	if err := readFull(s.logF, b, ri.Position); err != nil {
		t.Fatal(err)
	}
	return b
}
