package segment

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// FuzzRecordHeader feeds arbitrary bytes to the record decoder and
// verifier: they must never panic, and a record they accept must satisfy
// what the rest of the package relies on.
func FuzzRecordHeader(f *testing.F) {
	f.Add(makeRecord(7, 0, 1, [][]byte{[]byte("a")}))
	f.Add(makeRecord(7, 1<<40, 1, [][]byte{{}, []byte("bc"), make([]byte, 300)}))
	f.Add(make([]byte, RecordHeaderSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		why, _ := verifyRecord(b, 7, 1<<20, nil)
		if why != "" {
			return
		}
		h := parseHeader(b)
		if h.partitionID != 7 || h.batchLength != uint64(len(b)) || h.messageCount == 0 ||
			h.nextOffset() <= h.baseOffset || len(b) < RecordHeaderSize+FrameHeaderSize*int(h.messageCount) {
			t.Fatalf("accepted record with header %+v and %d bytes", h, len(b))
		}
		if checkHeader(b, h, 7, 1<<20) != "" {
			t.Fatal("verifyRecord accepted what checkHeader rejects")
		}
	})
}

// FuzzIndexDecode feeds arbitrary bytes to the index decoder.
func FuzzIndexDecode(f *testing.F) {
	good := make([]byte, 3*IndexEntrySize)
	encodeEntry(good, indexEntry{rel: 0, pos: 0, length: 400, maxTS: 5}, 10)
	encodeEntry(good[IndexEntrySize:], indexEntry{rel: 2, pos: 400, length: 400, maxTS: 5}, 10)
	encodeEntry(good[2*IndexEntrySize:], indexEntry{rel: 9, pos: 800, length: 304, maxTS: 9}, 10)
	f.Add(good, uint64(10), int64(1104))
	f.Add(good[:30], uint64(10), int64(10))
	f.Add([]byte{}, uint64(0), int64(0))
	f.Fuzz(func(t *testing.T, raw []byte, start uint64, logSize int64) {
		es, valid, why := decodeIndex(raw, start, logSize)
		if len(es) != len(raw)/IndexEntrySize || valid > len(es) {
			t.Fatalf("%d entries, %d valid, from %d bytes", len(es), valid, len(raw))
		}
		if (valid < len(es) || len(raw)%IndexEntrySize != 0) != (why != "") {
			t.Fatalf("valid %d of %d, reason %q", valid, len(es), why)
		}
		for i := 0; i < valid; i++ {
			e := es[i]
			if e.end() > logSize || (i == 0 && (e.rel != 0 || e.pos != 0)) ||
				(i > 0 && (e.rel <= es[i-1].rel || int64(e.pos) < es[i-1].end() || e.maxTS < es[i-1].maxTS)) {
				t.Fatalf("entry %d %+v accepted after %+v", i, e, es[max(i-1, 0)])
			}
			b := make([]byte, IndexEntrySize)
			encodeEntry(b, e, start)
			if !bytes.Equal(b, raw[i*IndexEntrySize:(i+1)*IndexEntrySize]) {
				t.Fatalf("entry %d does not re-encode to its bytes", i)
			}
		}
	})
}

// fsWrite creates name in fsys holding b.
func fsWrite(t testing.TB, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	f, err := fsys.OpenFile(name, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 {
		if _, err := f.WriteAt(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
}

// FuzzRecover opens a partition directory made of arbitrary file contents:
// a segment at 0 (.log and .index) and optionally a second segment at
// second (.log only). Open must never panic; when it succeeds the log must
// read back whole and reopen clean.
func FuzzRecover(f *testing.F) {
	seedFS := vfs.NewFault(1)
	cfg := fuzzConfig()
	l, _, err := Open(seedFS, "/seed", cfg)
	if err != nil {
		f.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		r := simpleRecord(7, l.NextOffset(), uint64(100+i), 1+i%2, i)
		if err := l.Append([][]byte{r}); err != nil {
			f.Fatal(err)
		}
	}
	segs := l.Segments()
	l.Close()
	if len(segs) < 2 {
		f.Fatalf("seed log has %d segments", len(segs))
	}
	log0, _ := vfs.ReadFile(seedFS, segs[0].LogPath)
	idx0, _ := vfs.ReadFile(seedFS, segs[0].IndexPath)
	log1, _ := vfs.ReadFile(seedFS, segs[1].LogPath)
	second := segs[1].StartOffset
	f.Add(log0, idx0, log1, second, true)
	f.Add(log0, idx0, log1, second, false)
	f.Add(log0, []byte{}, []byte{}, uint64(0), true)
	f.Add(log0[:len(log0)-7], idx0, []byte{}, uint64(0), false)
	f.Add(log0, idx0[:30], log1[:len(log1)/2], second, true)
	f.Add(append(bytes.Clone(log0), make([]byte, 600)...), idx0, []byte{}, uint64(0), false)
	f.Add([]byte{}, idx0, log1, second, true)

	f.Fuzz(func(t *testing.T, log0, idx0, log1 []byte, second uint64, verifyAll bool) {
		cfg := cfg
		cfg.VerifyAllOnOpen = verifyAll
		const dir = "/p"
		mfs := vfs.NewFault(1)
		mfs.MkdirAll(dir, 0o755)
		fsWrite(t, mfs, segPath(dir, 0, logExt), log0)
		fsWrite(t, mfs, segPath(dir, 0, indexExt), idx0)
		if len(log1) > 0 && second > 0 {
			fsWrite(t, mfs, segPath(dir, second, logExt), log1)
		}
		l, rep, err := Open(mfs, dir, cfg)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("open failed without a corruption report: %v", err)
			}
			return
		}
		defer l.Close()
		if rep.Segments != len(l.Segments()) {
			t.Fatalf("report says %d segments, log has %d", rep.Segments, len(l.Segments()))
		}
		// Without VerifyAllOnOpen, damage the index vouches for is found by
		// reads, not by Open.
		if !checkWholeLog(t, l, !verifyAll) {
			return
		}
		l.Close()
		l2, rep2, err := Open(mfs, dir, cfg)
		if err != nil {
			t.Fatalf("reopen after a successful recovery: %v", err)
		}
		defer l2.Close()
		if !rep2.Clean() {
			t.Fatalf("reopen repaired again: %+v", rep2)
		}
		if l2.NextOffset() != l.NextOffset() || l2.FirstOffset() != l.FirstOffset() {
			t.Fatalf("reopen moved the offsets")
		}
	})
}

func fuzzConfig() Config {
	cfg := testConfig(700)
	cfg.MaxRecordSize = 4096
	cfg.VerifyAllOnOpen = true
	cfg.IndexSummaryStride = 2
	return cfg
}

// checkWholeLog reads every record and looks up every offset; with
// mayBeCorrupt a corruption report ends the check (false).
func checkWholeLog(t *testing.T, l *Log, mayBeCorrupt bool) bool {
	t.Helper()
	// Open refuses segments above SegmentSize + MaxRecordSize, so the
	// fuzzed logs fit.
	buf := make([]byte, 64<<10)
	res, err := l.Read(buf, ReadRequest{From: l.FirstOffset(), MaxMessages: 1 << 31})
	if mayBeCorrupt && errors.Is(err, ErrCorrupt) {
		return false
	}
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if res.N != int(l.Size()) || res.Messages != l.MessageCount() {
		t.Fatalf("read %+v of a log with %d bytes and %d messages", res, l.Size(), l.MessageCount())
	}
	for off := l.FirstOffset(); off < l.NextOffset(); off++ {
		ri, err := l.Locate(off)
		if mayBeCorrupt && errors.Is(err, ErrCorrupt) {
			return false
		}
		if err != nil || off < ri.BaseOffset || off >= ri.NextOffset() {
			t.Fatalf("locate %d: %+v %v", off, ri, err)
		}
	}
	for _, s := range l.Segments() {
		if s.Size == 0 {
			continue
		}
		_, ok, err := l.LocateTimestamp(s.MaxTimestamp)
		if mayBeCorrupt && errors.Is(err, ErrCorrupt) {
			return false
		}
		if !ok || err != nil {
			t.Fatalf("timestamp %d of segment %d not found: %v", s.MaxTimestamp, s.StartOffset, err)
		}
	}
	return true
}
