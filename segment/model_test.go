package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"pgregory.net/rapid"
)

// The model: the records in order, grouped into segments by the sealing
// rule, plus the durable frontier.

type mRec struct {
	base  uint64
	count uint32
	ts    uint64
	bytes []byte
}

func (r mRec) next() uint64 { return r.base + uint64(r.count) }

type mSeg struct {
	start  uint64
	size   int64
	sealed bool
	recs   []mRec
}

func (s *mSeg) next() uint64 {
	if len(s.recs) == 0 {
		return s.start
	}
	return s.recs[len(s.recs)-1].next()
}

type model struct {
	segSize     int64
	segs        []*mSeg
	durableNext uint64
}

func (m *model) nextOffset() uint64 {
	if len(m.segs) == 0 {
		return 0
	}
	return m.segs[len(m.segs)-1].next()
}

func (m *model) firstOffset() uint64 {
	if len(m.segs) == 0 {
		return 0
	}
	return m.segs[0].start
}

func (m *model) records() []mRec {
	var out []mRec
	for _, s := range m.segs {
		out = append(out, s.recs...)
	}
	return out
}

func (m *model) append(r mRec) {
	if len(m.segs) == 0 || m.segs[len(m.segs)-1].sealed {
		if len(m.segs) > 0 {
			m.durableNext = m.nextOffset() // the sealed segment is synced first
		}
		m.segs = append(m.segs, &mSeg{start: m.nextOffset()})
	}
	s := m.segs[len(m.segs)-1]
	s.recs = append(s.recs, r)
	s.size += int64(len(r.bytes))
	if s.size >= m.segSize {
		s.sealed = true
	}
}

func (m *model) sealedCount() int {
	if n := len(m.segs); n > 0 && !m.segs[n-1].sealed {
		return n - 1
	}
	return len(m.segs)
}

func (m *model) deletePrefix(k int) {
	if k == 0 {
		return
	}
	if k == len(m.segs) {
		next := m.nextOffset()
		m.segs = append(m.segs, &mSeg{start: next})
		m.durableNext = next
	}
	m.segs = m.segs[k:]
}

type logMachine struct {
	t           *rapid.T
	fsys        vfs.FS
	dir         string
	cfg         Config
	l           *Log
	m           *model
	ts          uint64
	planned     *SyncPlan
	plannedNext uint64
}

func (lm *logMachine) reopen(t *rapid.T) {
	if err := lm.l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l, rep, err := Open(lm.fsys, lm.dir, lm.cfg)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if !rep.Clean() {
		t.Fatalf("reopen after a clean close repaired something: %+v", rep)
	}
	lm.l = l
	lm.m.durableNext = lm.m.nextOffset()
	lm.planned = nil
}

func (lm *logMachine) Append(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "records")
	var recs [][]byte
	var mrecs []mRec
	next := lm.m.nextOffset()
	for i := 0; i < n; i++ {
		count := rapid.IntRange(1, 4).Draw(t, "count")
		size := rapid.IntRange(0, 160).Draw(t, "size")
		// Mostly rising timestamps, sometimes equal or going back.
		switch rapid.IntRange(0, 9).Draw(t, "tsStep") {
		case 0:
			lm.ts -= min(lm.ts, 5)
		case 1, 2, 3:
		default:
			lm.ts += uint64(rapid.IntRange(1, 10).Draw(t, "tsDelta"))
		}
		r := simpleRecord(lm.cfg.PartitionID, next, lm.ts, count, size)
		recs = append(recs, r)
		mrecs = append(mrecs, mRec{base: next, count: uint32(count), ts: lm.ts, bytes: r})
		next += uint64(count)
	}
	if err := lm.l.Append(recs); err != nil {
		t.Fatalf("append: %v", err)
	}
	for _, r := range mrecs {
		lm.m.append(r)
	}
}

// StageAppend runs a shard loop iteration: the append staged in a batch,
// sometimes with the group commit in the same submission.
func (lm *logMachine) StageAppend(t *rapid.T) {
	lm.finishPlan(t)
	var recs [][]byte
	next := lm.m.nextOffset()
	for i := rapid.IntRange(1, 4).Draw(t, "records"); i > 0; i-- {
		lm.ts += uint64(rapid.IntRange(0, 3).Draw(t, "tsDelta"))
		r := simpleRecord(lm.cfg.PartitionID, next, lm.ts, rapid.IntRange(1, 3).Draw(t, "count"), rapid.IntRange(0, 160).Draw(t, "size"))
		recs = append(recs, r)
		next = parseHeader(r).nextOffset()
	}
	// Half the time each header comes from a buffer of its own, as a
	// replicated partition stamps a copy of the header in front of the
	// prepare's frames; the model holds the contiguous record.
	staged := Whole(recs...)
	if rapid.Bool().Draw(t, "splitHeads") {
		for i := range staged {
			staged[i].Head = append([]byte(nil), staged[i].Head...)
		}
	}
	var b vfs.Batch
	st, err := lm.l.StageAppend(&b, staged)
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	if err := lm.l.Append(recs[st.Records:]); !errors.Is(err, ErrStaged) {
		t.Fatalf("append while staged: %v", err)
	}
	withSync := rapid.Bool().Draw(t, "withSync")
	var p SyncPlan
	if withSync {
		if p, err = lm.l.PlanSync(); err != nil {
			t.Fatal(err)
		}
		p.AddTo(&b)
	}
	// Nothing of the staged records shows before FinishAppend (a new
	// segment may have been opened for them, empty).
	if lm.l.NextOffset() != lm.m.nextOffset() {
		t.Fatalf("staged records visible: next %d, model %d", lm.l.NextOffset(), lm.m.nextOffset())
	}
	if res, err := lm.l.Read(make([]byte, 1<<16), ReadRequest{From: lm.m.nextOffset(), MaxMessages: 100}); err != nil || res.Records != 0 {
		t.Fatalf("read of staged records: %+v %v", res, err)
	}
	if err := lm.fsys.Submit(&b); err != nil {
		t.Fatal(err)
	}
	if err := lm.l.FinishAppend(nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[:st.Records] {
		h := parseHeader(r)
		lm.m.append(mRec{base: h.baseOffset, count: h.messageCount, ts: h.baseTimestamp, bytes: r})
	}
	if withSync {
		if err := lm.l.CompleteSync(p, nil); err != nil {
			t.Fatal(err)
		}
		lm.m.durableNext = lm.m.nextOffset()
	}
	if err := lm.l.Append(recs[st.Records:]); err != nil {
		t.Fatalf("append of the rest: %v", err)
	}
	for _, r := range recs[st.Records:] {
		h := parseHeader(r)
		lm.m.append(mRec{base: h.baseOffset, count: h.messageCount, ts: h.baseTimestamp, bytes: r})
	}
}

func (lm *logMachine) AppendInvalid(t *rapid.T) {
	next := lm.m.nextOffset()
	good := simpleRecord(lm.cfg.PartitionID, next, lm.ts, 1, 10)
	var bad []byte
	switch rapid.IntRange(0, 3).Draw(t, "how") {
	case 0:
		bad = simpleRecord(lm.cfg.PartitionID, next+2, lm.ts, 1, 10)
	case 1:
		bad = simpleRecord(lm.cfg.PartitionID+1, next+1, lm.ts, 1, 10)
	case 2:
		bad = simpleRecord(lm.cfg.PartitionID, next+1, lm.ts, 1, 10)
		bad = bad[:len(bad)-1]
	case 3:
		bad = simpleRecord(lm.cfg.PartitionID, next+1, lm.ts, 1, 10)
		bad[200] = 1
	}
	if err := lm.l.Append([][]byte{good, bad}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("append of an invalid record: %v, want ErrInvalidRecord", err)
	}
}

func (lm *logMachine) Sync(t *rapid.T) {
	lm.finishPlan(t)
	if err := lm.l.Sync(); err != nil {
		t.Fatalf("sync: %v", err)
	}
	lm.m.durableNext = lm.m.nextOffset()
}

func (lm *logMachine) PlanSync(t *rapid.T) {
	lm.finishPlan(t)
	p, err := lm.l.PlanSync()
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	lm.planned, lm.plannedNext = &p, lm.m.nextOffset()
	if _, err := lm.l.DeleteOldestSegments(1); !errors.Is(err, ErrSyncPending) {
		t.Fatalf("retention with a plan outstanding: %v, want ErrSyncPending", err)
	}
}

// CompleteSync completes the outstanding sync plan, planning one first
// when none is outstanding.
func (lm *logMachine) CompleteSync(t *rapid.T) {
	if lm.planned == nil {
		p, err := lm.l.PlanSync()
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		lm.planned, lm.plannedNext = &p, lm.m.nextOffset()
	}
	lm.finishPlan(t)
}

// finishPlan completes an outstanding sync plan (as the shard loop does
// once the group commit's fdatasyncs return) before an action that the log
// refuses, or that the model cannot describe, while one is outstanding.
func (lm *logMachine) finishPlan(t *rapid.T) {
	if lm.planned == nil {
		return
	}
	p := *lm.planned
	for _, f := range p.Files {
		if err := f.Datasync(); err != nil {
			t.Fatalf("datasync: %v", err)
		}
	}
	if p.Dir != "" {
		if err := lm.fsys.SyncDir(p.Dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := lm.l.CompleteSync(p, nil); err != nil {
		t.Fatalf("complete: %v", err)
	}
	lm.m.durableNext = max(lm.m.durableNext, lm.plannedNext)
	lm.planned = nil
}

// Writeback hints what is appended and not yet durable. A hint covers only
// bytes already in the .log and never one twice, and it changes nothing the
// model describes: durable reads and Check see the same log, and a sync
// plan outstanding meanwhile completes as if no hint had happened.
func (lm *logMachine) Writeback(t *rapid.T) {
	var b vfs.Batch
	n := lm.l.StageWriteback(&b)
	hints := b.Hints()
	if n == 0 {
		if len(hints) != 0 {
			t.Fatalf("StageWriteback returned 0 and queued %d hints", len(hints))
		}
		return
	}
	if len(hints) != 1 || hints[0].Len != n {
		t.Fatalf("StageWriteback returned %d, queued %+v", n, hints)
	}
	h := hints[0]
	size, err := h.File.Size()
	if err != nil {
		t.Fatal(err)
	}
	if h.Off < 0 || h.Off+h.Len > size {
		t.Fatalf("hint [%d, %d) outside the %d-byte file", h.Off, h.Off+h.Len, size)
	}
	if again := lm.l.StageWriteback(&b); again != 0 {
		t.Fatalf("a second StageWriteback hinted %d bytes again", again)
	}
	if err := lm.fsys.Submit(&b); err != nil {
		t.Fatalf("submit hints: %v", err)
	}
}

func (lm *logMachine) Reopen(t *rapid.T) {
	lm.reopen(t)
}

func (lm *logMachine) Read(t *rapid.T) {
	m := lm.m
	from := rapid.Uint64Range(m.firstOffset()-min(m.firstOffset(), 2), m.nextOffset()+2).Draw(t, "from")
	maxMsgs := uint32(rapid.IntRange(0, 12).Draw(t, "maxMessages"))
	bufSize := rapid.SampledFrom([]int{0, 100, 400, 700, 1500, 1 << 16}).Draw(t, "buf")
	durable := rapid.Bool().Draw(t, "durable")
	buf := make([]byte, bufSize)
	got, err := lm.l.Read(buf, ReadRequest{From: from, MaxMessages: maxMsgs, DurableOnly: durable})

	// Expected: the records from the one holding max(from, first), while
	// they fit, stopping after the one reaching the budget.
	limit := m.nextOffset()
	if durable {
		limit = m.durableNext
	}
	start := max(from, m.firstOffset())
	var want ReadResult
	var wantBytes []byte
	var wantNeed int
	if maxMsgs > 0 && start < limit {
		lastWanted := min(start+uint64(maxMsgs)-1, limit-1)
		for _, r := range m.records() {
			if r.next() <= start {
				continue
			}
			if r.base > lastWanted {
				break
			}
			if len(wantBytes)+len(r.bytes) > bufSize {
				if want.Records == 0 {
					wantNeed = len(r.bytes)
				}
				break
			}
			if want.Records == 0 {
				want.FirstOffset = r.base
			}
			want.Records++
			want.Messages += r.next() - max(r.base, start)
			want.NextOffset = r.next()
			wantBytes = append(wantBytes, r.bytes...)
		}
		want.N = len(wantBytes)
	}
	if wantNeed > 0 {
		var bts *BufferTooSmallError
		if !errors.As(err, &bts) || bts.Need != wantNeed {
			t.Fatalf("read from %d: %v, want buffer too small (need %d)", from, err, wantNeed)
		}
		return
	}
	if err != nil {
		t.Fatalf("read from %d max %d buf %d: %v", from, maxMsgs, bufSize, err)
	}
	if got != want {
		t.Fatalf("read from %d max %d buf %d durable %v: got %+v, want %+v", from, maxMsgs, bufSize, durable, got, want)
	}
	if !bytes.Equal(buf[:got.N], wantBytes) {
		t.Fatalf("read from %d: bytes differ", from)
	}
}

func (lm *logMachine) Locate(t *rapid.T) {
	m := lm.m
	off := rapid.Uint64Range(m.firstOffset()-min(m.firstOffset(), 1), m.nextOffset()).Draw(t, "offset")
	got, err := lm.l.Locate(off)
	if off < m.firstOffset() || off >= m.nextOffset() {
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("locate %d outside [%d, %d): %v", off, m.firstOffset(), m.nextOffset(), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("locate %d: %v", off, err)
	}
	checkInfo(t, m, got, func(r mRec) bool { return off < r.next() })
}

// checkInfo compares got with the first model record satisfying pick.
func checkInfo(t *rapid.T, m *model, got RecordInfo, pick func(mRec) bool) {
	for _, s := range m.segs {
		var pos int64
		for _, r := range s.recs {
			if pick(r) {
				want := RecordInfo{Segment: s.start, Position: pos, Length: int64(len(r.bytes)), BaseOffset: r.base,
					MessageCount: r.count, BaseTimestamp: r.ts}
				if got != want {
					t.Fatalf("got %+v, want %+v", got, want)
				}
				return
			}
			pos += int64(len(r.bytes))
		}
	}
	t.Fatalf("got %+v, model has no such record", got)
}

func (lm *logMachine) LocateTimestamp(t *rapid.T) {
	ts := rapid.Uint64Range(0, lm.ts+3).Draw(t, "t")
	if recs := lm.m.records(); len(recs) > 0 && rapid.Bool().Draw(t, "existing") {
		// Equal timestamps at index entries are where off-by-ones hide.
		ts = recs[rapid.IntRange(0, len(recs)-1).Draw(t, "rec")].ts
	}
	got, ok, err := lm.l.LocateTimestamp(ts)
	if err != nil {
		t.Fatalf("locate timestamp %d: %v", ts, err)
	}
	exists := false
	for _, r := range lm.m.records() {
		if r.ts >= ts {
			exists = true
			break
		}
	}
	if ok != exists {
		t.Fatalf("locate timestamp %d: found %v, model %v", ts, ok, exists)
	}
	if ok {
		checkInfo(t, lm.m, got, func(r mRec) bool { return r.ts >= ts })
	}
}

func (lm *logMachine) DeleteOldest(t *rapid.T) {
	lm.finishPlan(t)
	n := rapid.IntRange(0, 3).Draw(t, "n")
	got, err := lm.l.DeleteOldestSegments(n)
	if err != nil {
		t.Fatalf("delete oldest %d: %v", n, err)
	}
	k := min(n, lm.m.sealedCount())
	if got != k {
		t.Fatalf("deleted %d segments, want %d", got, k)
	}
	lm.m.deletePrefix(k)
}

func (lm *logMachine) DeleteExpired(t *rapid.T) {
	lm.finishPlan(t)
	cutoff := rapid.Uint64Range(0, lm.ts+2).Draw(t, "cutoff")
	planned := lm.l.ExpiredPrefix(cutoff)
	got, err := lm.l.DeleteExpiredSegments(cutoff)
	if err != nil {
		t.Fatalf("delete expired: %v", err)
	}
	k := 0
	for k < lm.m.sealedCount() {
		var maxTS uint64
		for _, r := range lm.m.segs[k].recs {
			maxTS = max(maxTS, r.ts)
		}
		if maxTS >= cutoff {
			break
		}
		k++
	}
	if got != k || planned != k {
		t.Fatalf("expired %d segments (ExpiredPrefix said %d), want %d", got, planned, k)
	}
	lm.m.deletePrefix(k)
}

func (lm *logMachine) DeleteToFit(t *rapid.T) {
	lm.finishPlan(t)
	var total int64
	for _, s := range lm.m.segs {
		total += s.size
	}
	limit := rapid.Int64Range(0, total+10).Draw(t, "maxBytes")
	planned := lm.l.OversizePrefix(uint64(limit))
	got, err := lm.l.DeleteSegmentsToFit(uint64(limit))
	if err != nil {
		t.Fatalf("delete to fit: %v", err)
	}
	k := 0
	for k < lm.m.sealedCount() && total > limit {
		total -= lm.m.segs[k].size
		k++
	}
	if got != k || planned != k {
		t.Fatalf("deleted %d segments to fit (OversizePrefix said %d), want %d", got, planned, k)
	}
	lm.m.deletePrefix(k)
}

func (lm *logMachine) Purge(t *rapid.T) {
	lm.finishPlan(t)
	next := lm.m.nextOffset() + rapid.Uint64Range(0, 5).Draw(t, "skip")
	if next > 0 && rapid.IntRange(0, 4).Draw(t, "backwards") == 0 && lm.m.nextOffset() > 0 {
		if err := lm.l.Purge(lm.m.nextOffset() - 1); !errors.Is(err, ErrOffsetReuse) {
			t.Fatalf("purge backwards: %v, want ErrOffsetReuse", err)
		}
		return
	}
	if err := lm.l.Purge(next); err != nil {
		t.Fatalf("purge to %d: %v", next, err)
	}
	lm.m.segs = []*mSeg{{start: next}}
	lm.m.durableNext = next
}

func (lm *logMachine) Check(t *rapid.T) {
	l, m := lm.l, lm.m
	if l.NextOffset() != m.nextOffset() || l.FirstOffset() != m.firstOffset() {
		t.Fatalf("offsets [%d, %d), model [%d, %d)", l.FirstOffset(), l.NextOffset(), m.firstOffset(), m.nextOffset())
	}
	if l.MessageCount() != m.nextOffset()-m.firstOffset() {
		t.Fatalf("message count %d", l.MessageCount())
	}
	if h, ok := l.HighestOffset(); ok != (l.MessageCount() > 0) || (ok && h != m.nextOffset()-1) {
		t.Fatalf("highest offset %d %v", h, ok)
	}
	if l.DurableNextOffset() != m.durableNext {
		t.Fatalf("durable next %d, model %d", l.DurableNextOffset(), m.durableNext)
	}
	segs := l.Segments()
	if len(segs) != len(m.segs) {
		t.Fatalf("%d segments, model %d", len(segs), len(m.segs))
	}
	var total int64
	for i, s := range segs {
		ms := m.segs[i]
		if s.StartOffset != ms.start || s.NextOffset != ms.next() || s.Size != ms.size || s.Sealed != ms.sealed {
			t.Fatalf("segment %d: %+v, model start %d next %d size %d sealed %v", i, s, ms.start, ms.next(), ms.size, ms.sealed)
		}
		if s.LogPath != segPath(lm.dir, ms.start, logExt) {
			t.Fatalf("segment %d path %s", i, s.LogPath)
		}
		total += s.Size
	}
	if l.Size() != total {
		t.Fatalf("size %d, segments sum %d", l.Size(), total)
	}
}

func newLogMachine(t *rapid.T, root string) *logMachine {
	cfg := testConfig(uint64(rapid.IntRange(300, 2500).Draw(t, "segmentSize")))
	cfg.IndexInterval = uint32(rapid.SampledFrom([]int{0, 0, 300, 900}).Draw(t, "indexInterval"))
	cfg.IndexSummaryStride = rapid.SampledFrom([]int{1, 2, 3, 64}).Draw(t, "stride")
	cfg.VerifyAllOnOpen = rapid.Bool().Draw(t, "verifySealed")
	dir, err := os.MkdirTemp(root, "log")
	if err != nil {
		t.Fatal(err)
	}
	lm := &logMachine{t: t, fsys: vfs.NewOS(), dir: dir, cfg: cfg, m: &model{segSize: int64(cfg.SegmentSize)}, ts: 1000}
	l, rep, err := Open(lm.fsys, dir, cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if !rep.Clean() {
		t.Fatalf("fresh open repaired: %+v", rep)
	}
	lm.l = l
	return lm
}

func TestLogModel(t *testing.T) {
	root := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		lm := newLogMachine(t, root)
		defer func() {
			lm.l.Close()
			os.RemoveAll(lm.dir)
		}()
		t.Repeat(rapid.StateMachineActions(lm))
		// Whatever happened, a reopen sees the same log.
		lm.reopen(t)
		lm.Check(t)
	})
}

func (lm *logMachine) String() string { return fmt.Sprintf("log %s", lm.dir) }
