package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

func TestVerifyRecord(t *testing.T) {
	good := makeRecord(7, 10, 99, [][]byte{[]byte("hello"), {}, []byte("world!")})
	// Frame 0 starts at 256; its payload at 304.
	cases := []struct {
		name   string
		mutate func(b []byte) []byte
		want   string // substring of the reason; "" means valid
	}{
		{"valid", func(b []byte) []byte { return b }, ""},
		{"short", func(b []byte) []byte { return b[:100] }, "shorter than its header"},
		{"partition", func(b []byte) []byte { b[hPartitionID] = 8; return b }, "partition_id 8"},
		{"zero count", func(b []byte) []byte { put32(b, hMessageCount, 0); return b }, "message_count 0"},
		{"count too big for length", func(b []byte) []byte { put32(b, hMessageCount, 100); return b }, "too small for 100 messages"},
		{"length above limit", func(b []byte) []byte { put64(b, hBatchLength, 1<<40); return b }, "record limit"},
		{"length not slice", func(b []byte) []byte { return append(b, 0) }, "record holds"},
		{"reserved header", func(b []byte) []byte { b[255] = 1; return b }, "reserved header"},
		{"offset overflow", func(b []byte) []byte { put64(b, hBaseOffset, ^uint64(0)); return b }, "overflow"},
		{"frame reserved", func(b []byte) []byte { b[256+fReserved+3] = 1; return b }, "frame 0 reserved"},
		{"payload byte", func(b []byte) []byte { b[306] ^= 1; return b }, "frame 0 checksum"},
		{"frame id", func(b []byte) []byte { b[256+9] ^= 1; return b }, "frame 0 checksum"},
		{"frame body past end", func(b []byte) []byte { put32(b, 256+fPayloadLen, 1000); return b }, "frame 0 body runs past"},
		{"frames short of end", func(b []byte) []byte {
			b = append(b, 0)
			put64(b, hBatchLength, uint64(len(b)))
			return b
		}, "frames end at"},
		{"batch checksum field", func(b []byte) []byte { b[hBatchChecksum] ^= 1; return b }, "batch checksum"},
		{"base timestamp", func(b []byte) []byte { b[hBaseTimestamp] ^= 1; return b }, "batch checksum"},
		{"origin timestamp", func(b []byte) []byte { b[hOriginTimestamp] ^= 1; return b }, "batch checksum"},
		{"frame checksum swapped consistently", func(b []byte) []byte {
			// Change a payload and its frame checksum: only the batch
			// checksum, which covers the frame checksums, catches it.
			b[306] ^= 1
			end := 256 + FrameHeaderSize + 5
			put64(b, 256, xxh3Hash(b[256+8:end]))
			return b
		}, "batch checksum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mutate(bytes.Clone(good))
			why, _ := verifyRecord(b, 7, 1<<20, nil)
			if tc.want == "" && why != "" {
				t.Fatalf("valid record rejected: %s", why)
			}
			if tc.want != "" && !strings.Contains(why, tc.want) {
				t.Fatalf("reason %q, want ~%q", why, tc.want)
			}
		})
	}
}

func put32(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
func put64(b []byte, at int, v uint64) { binary.LittleEndian.PutUint64(b[at:], v) }

func TestIndexEntryRoundTrip(t *testing.T) {
	e := indexEntry{rel: 12, pos: 3400, length: 512, maxTS: 1 << 50}
	b := make([]byte, IndexEntrySize)
	encodeEntry(b, e, 1000)
	got, ok := decodeEntry(b, 1000)
	if !ok || got != e {
		t.Fatalf("decoded %+v %v", got, ok)
	}
	if _, ok := decodeEntry(b, 1001); ok {
		t.Fatal("entry verified under another segment's start")
	}
	for i := 0; i < IndexEntrySize; i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, ok := decodeEntry(c, 1000); ok {
			t.Fatalf("flip of byte %d not detected", i)
		}
	}
}

func TestSegmentNames(t *testing.T) {
	cases := []struct {
		name  string
		start uint64
		ext   string
		ok    bool
	}{
		{"00000000000000000000.log", 0, logExt, true},
		{"00000000000000001024.index", 1024, indexExt, true},
		{"18446744073709551615.purge", 1<<64 - 1, purgeExt, true},
		{"99999999999999999999.log", 0, "", false},
		{"0000000000000000000.log", 0, "", false},
		{"0000000000000000000a.log", 0, "", false},
		{"00000000000000000000.txt", 0, "", false},
		{"00000000000000000000log", 0, "", false},
		{"00000000000000000000.log.staging", 0, "", false},
	}
	for _, tc := range cases {
		start, ext, ok := parseName(tc.name)
		if ok != tc.ok || (ok && (start != tc.start || ext != tc.ext)) {
			t.Errorf("parseName(%q) = %d %q %v", tc.name, start, ext, ok)
		}
		if tc.ok && segmentName(tc.start, tc.ext) != tc.name {
			t.Errorf("segmentName(%d) = %q", tc.start, segmentName(tc.start, tc.ext))
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig(1)
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []func(c *Config){
		func(c *Config) { c.SegmentSize = 0 },
		func(c *Config) { c.SegmentSize = MinSegmentSize - SegmentSizeMultiple },
		func(c *Config) { c.SegmentSize = MinSegmentSize + 1 },
		func(c *Config) { c.SegmentSize = MaxSegmentSize + SegmentSizeMultiple },
		func(c *Config) { c.MaxRecordSize = 100 },
		func(c *Config) { c.MaxRecordSize = MaxRecordSizeLimit + 1 },
		func(c *Config) { c.IndexSummaryStride = 0 },
		func(c *Config) { c.IndexSummaryStride = MaxIndexSummaryStride + 1 },
	}
	for i, mut := range cases {
		c := ok
		mut(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d: %v", i, err)
		}
		if _, _, err := Open(vfs.NewOS(), t.TempDir(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d: Open accepted the config: %v", i, err)
		}
	}
	small := ok
	small.SegmentSize = 1000
	small.AllowSmallSegments = true
	if err := small.Validate(); err != nil {
		t.Fatalf("test option refused: %v", err)
	}
}

func TestAppendSealsAndNames(t *testing.T) {
	const size = 100
	recLen := RecordHeaderSize + FrameHeaderSize + size
	dir := t.TempDir()
	// 2.5 records per segment: the third record crosses and is written whole.
	l, _ := mustOpen(t, vfs.NewOS(), dir, testConfig(uint64(recLen*5/2)))
	defer l.Close()
	var recs [][]byte
	for i := uint64(0); i < 7; i++ {
		recs = append(recs, simpleRecord(7, i, 1000+i, 1, size))
	}
	// One call crossing two segment boundaries.
	if err := l.Append(recs); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	want := []SegmentInfo{
		{StartOffset: 0, NextOffset: 3, Size: int64(3 * recLen), Sealed: true, MaxTimestamp: 1002, IndexEntries: 3},
		{StartOffset: 3, NextOffset: 6, Size: int64(3 * recLen), Sealed: true, MaxTimestamp: 1005, IndexEntries: 3},
		{StartOffset: 6, NextOffset: 7, Size: int64(recLen), MaxTimestamp: 1006, IndexEntries: 1},
	}
	if len(segs) != len(want) {
		t.Fatalf("segments %+v", segs)
	}
	for i := range want {
		want[i].LogPath = segPath(dir, want[i].StartOffset, logExt)
		want[i].IndexPath = segPath(dir, want[i].StartOffset, indexExt)
		if segs[i] != want[i] {
			t.Fatalf("segment %d: %+v, want %+v", i, segs[i], want[i])
		}
	}
	names := strings.Join(dirNames(t, dir), " ")
	if names != "00000000000000000000.index 00000000000000000000.log 00000000000000000003.index 00000000000000000003.log 00000000000000000006.index 00000000000000000006.log" {
		t.Fatalf("files: %s", names)
	}
	if got := readFile(t, segPath(dir, 3, logExt)); !bytes.Equal(got, bytes.Join(recs[3:6], nil)) {
		t.Fatal("segment 3 bytes differ from the records")
	}
	// Sealed segments were synced before their successors were created.
	if l.DurableNextOffset() != 6 {
		t.Fatalf("durable next %d", l.DurableNextOffset())
	}
}

func TestAppendRejectsWithoutWriting(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, vfs.NewOS(), dir, testConfig(1<<20))
	defer l.Close()
	appendN(t, l, 2, 10, 1)
	good := simpleRecord(7, 2, 5, 1, 10)
	big := testConfig(1 << 20).MaxRecordSize
	cases := map[string][]byte{
		"gap":        simpleRecord(7, 4, 5, 1, 10),
		"repeat":     simpleRecord(7, 1, 5, 1, 10),
		"partition":  simpleRecord(8, 3, 5, 1, 10),
		"short":      good[:100],
		"truncated":  simpleRecord(7, 3, 5, 1, 10)[:300],
		"too large":  simpleRecord(7, 3, 5, 1, int(big)),
		"no message": makeRecord(7, 3, 5, nil),
	}
	for name, bad := range cases {
		size := l.Size()
		if err := l.Append([][]byte{good, bad}); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%s: %v", name, err)
		}
		if l.Size() != size || l.NextOffset() != 2 || fileSize(t, segPath(dir, 0, logExt)) != size {
			t.Fatalf("%s: something was written", name)
		}
	}
	// A record given in two pieces must split at the header: a header
	// piece of another size is refused before anything is staged.
	var b vfs.Batch
	split := Record{Head: good[:RecordHeaderSize-1], Frames: good[RecordHeaderSize-1:]}
	if _, err := l.StageAppend(&b, []Record{split}); !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), "header piece of 255 bytes") {
		t.Fatalf("record split inside its header: %v", err)
	}
	if !b.Empty() {
		t.Fatal("a refused record was staged")
	}
	if err := l.Append([][]byte{good}); err != nil {
		t.Fatal(err)
	}
}

func TestSyncPlan(t *testing.T) {
	dir := t.TempDir()
	l, _ := mustOpen(t, vfs.NewOS(), dir, testConfig(1<<20))
	defer l.Close()
	p, err := l.PlanSync()
	if err != nil || !p.Empty() {
		t.Fatalf("fresh log plan %+v %v", p, err)
	}
	l.CompleteSync(p, nil)
	appendN(t, l, 3, 10, 1)
	if l.DurableNextOffset() != 0 {
		t.Fatalf("durable %d before any sync", l.DurableNextOffset())
	}
	p, _ = l.PlanSync()
	// The log and the new name; no index entry yet: entries follow durable
	// records by one plan.
	if len(p.Files) != 1 || p.Files[0].Name() != segPath(dir, 0, logExt) || p.Dir != dir {
		t.Fatalf("plan %+v", p)
	}
	if got := fileSize(t, segPath(dir, 0, indexExt)); got != 0 {
		t.Fatalf("index holds %d bytes before its records are durable", got)
	}
	// Appends after the plan are not covered by it.
	appendN(t, l, 2, 10, 1)
	if _, err := l.DeleteOldestSegments(1); !errors.Is(err, ErrSyncPending) {
		t.Fatalf("retention during a plan: %v", err)
	}
	if err := l.Purge(100); !errors.Is(err, ErrSyncPending) {
		t.Fatalf("purge during a plan: %v", err)
	}
	var b vfs.Batch
	p.AddTo(&b)
	if err := vfs.NewOS().Submit(&b); err != nil {
		t.Fatal(err)
	}
	if err := l.CompleteSync(p, nil); err != nil {
		t.Fatal(err)
	}
	if l.DurableNextOffset() != 3 {
		t.Fatalf("durable %d after the plan, want 3", l.DurableNextOffset())
	}
	buf := make([]byte, 1<<16)
	res, err := l.Read(buf, ReadRequest{From: 0, MaxMessages: 100, DurableOnly: true})
	if err != nil || res.Records != 3 || res.NextOffset != 3 {
		t.Fatalf("durable read %+v %v", res, err)
	}
	res, err = l.Read(buf, ReadRequest{From: 3, MaxMessages: 100, DurableOnly: true})
	if err != nil || res.Records != 0 {
		t.Fatalf("durable read past the durable end %+v %v", res, err)
	}
	p, _ = l.PlanSync()
	// The log for the two later records, the index for the three entries
	// the first plan made durable.
	if len(p.Files) != 2 || p.Dir != "" || fileSize(t, segPath(dir, 0, indexExt)) != 3*IndexEntrySize {
		t.Fatalf("second plan %+v", p)
	}
	if err := l.CompleteSync(p, errors.New("disk on fire")); !errors.Is(err, ErrFailed) {
		t.Fatalf("failed sync: %v", err)
	}
	if err := l.Append([][]byte{simpleRecord(7, 5, 1, 1, 1)}); !errors.Is(err, ErrFailed) {
		t.Fatalf("append after a failed sync: %v", err)
	}
	if _, err := l.Read(buf, ReadRequest{From: 0, MaxMessages: 1}); !errors.Is(err, ErrFailed) {
		t.Fatalf("read after a failed sync: %v", err)
	}
}

// TestStageWriteback: hints cover whole pages of the active segment once
// each, skip what a sync made durable, reach the end of a sealed segment,
// and leave durability to the sync plan.
func TestStageWriteback(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewFault(3)
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, _ := mustOpen(t, fsys, dir, testConfig(64<<10))
	defer l.Close()
	var b vfs.Batch
	if n := l.StageWriteback(&b); n != 0 || !b.Empty() {
		t.Fatalf("empty log hinted %d", n)
	}
	appendN(t, l, 10, 1000, 1) // < 3 pages of records
	size := l.Size()
	n := l.StageWriteback(&b)
	if want := size - size%WritebackAlign; n != want || len(b.Hints()) != 1 || b.Hints()[0].Off != 0 {
		t.Fatalf("first hint %d bytes %+v, want [0, %d)", n, b.Hints(), want)
	}
	if again := l.StageWriteback(&b); again != 0 {
		t.Fatalf("hinted %d bytes twice", again)
	}
	if err := fsys.Submit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if l.DurableNextOffset() != 0 {
		t.Fatalf("a hint made offsets up to %d durable", l.DurableNextOffset())
	}
	log0 := segPath(dir, 0, logExt)
	if st := fsys.Writebacks(log0); st.Calls != 1 || st.End != n {
		t.Fatalf("fault fs saw %+v", st)
	}
	// A sync covers everything: the next hint starts where it ended.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	synced := l.Size()
	appendN(t, l, 10, 1000, 100)
	n = l.StageWriteback(&b)
	end := l.Size() - l.Size()%WritebackAlign
	if len(b.Hints()) != 1 || b.Hints()[0].Off != synced || n != end-synced {
		t.Fatalf("hint after a sync %+v (%d bytes), want [%d, %d)", b.Hints(), n, synced, end)
	}
	b.Reset()
	// Fill the segment past its size: sealed, the whole tail is hinted.
	for len(l.Segments()) == 1 && !l.Segments()[0].Sealed {
		appendN(t, l, 1, 1000, 200)
	}
	n = l.StageWriteback(&b)
	if h := b.Hints(); len(h) != 1 || h[0].Off+h[0].Len != l.Size() || n != h[0].Len {
		t.Fatalf("sealed tail hint %+v, size %d", h, l.Size())
	}
	if err := fsys.Submit(&b); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	// The crash model keeps no hinted, unsynced record.
	durable := l.DurableNextOffset()
	img := fsys.CrashWith(vfs.CrashDropAll)
	l2, _ := mustOpen(t, img, dir, testConfig(64<<10))
	defer l2.Close()
	if l2.NextOffset() != durable {
		t.Fatalf("after power loss the log ends at %d, durable was %d", l2.NextOffset(), durable)
	}
}

func TestRetentionKeepsNextOffset(t *testing.T) {
	const size = 100
	recLen := uint64(RecordHeaderSize + FrameHeaderSize + size)
	dir := t.TempDir()
	cfg := testConfig(2 * recLen)
	l, _ := mustOpen(t, vfs.NewOS(), dir, cfg)
	appendN(t, l, 6, size, 1000) // three full segments, the last one sealed
	if n, err := l.DeleteExpiredSegments(1004); err != nil || n != 2 {
		t.Fatalf("expired %d %v", n, err)
	}
	if n, err := l.DeleteOldestSegments(5); err != nil || n != 1 {
		t.Fatalf("deleted %d %v", n, err)
	}
	if l.FirstOffset() != 6 || l.NextOffset() != 6 || l.MessageCount() != 0 || l.Size() != 0 {
		t.Fatalf("after deleting everything: [%d, %d) size %d", l.FirstOffset(), l.NextOffset(), l.Size())
	}
	if n, err := l.DeleteOldestSegments(5); err != nil || n != 0 {
		t.Fatalf("deleted the active segment: %d %v", n, err)
	}
	l.Close()
	l, rep := mustOpen(t, vfs.NewOS(), dir, cfg)
	if !rep.Clean() || l.NextOffset() != 6 {
		t.Fatalf("reopen: next %d, report %+v", l.NextOffset(), rep)
	}
	if err := l.Purge(5); !errors.Is(err, ErrOffsetReuse) {
		t.Fatalf("purge backwards: %v", err)
	}
	if err := l.Purge(1000); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, rep = mustOpen(t, vfs.NewOS(), dir, cfg)
	defer l.Close()
	if !rep.Clean() || l.NextOffset() != 1000 || l.DurableNextOffset() != 1000 {
		t.Fatalf("reopen after purge: next %d, report %+v", l.NextOffset(), rep)
	}
	if names := strings.Join(dirNames(t, dir), " "); names != "00000000000000001000.index 00000000000000001000.log" {
		t.Fatalf("files after purge: %s", names)
	}
}

func TestReadBudgetAndLookups(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(3000)
	cfg.IndexInterval = 700
	cfg.IndexSummaryStride = 2
	l, _ := mustOpen(t, vfs.NewOS(), dir, cfg)
	defer l.Close()
	var recs [][]byte
	for i := uint64(0); i < 40; i++ {
		r := simpleRecord(7, l.NextOffset(), 100+i*10, 3, 50)
		if err := l.Append([][]byte{r}); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	buf := make([]byte, 1<<16)
	// Offset 31 is the second message of the record at 30.
	res, err := l.Read(buf, ReadRequest{From: 31, MaxMessages: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := ReadResult{N: len(recs[10]) * 2, Records: 2, Messages: 5, FirstOffset: 30, NextOffset: 36}
	if res != want || !bytes.Equal(buf[:res.N], bytes.Join(recs[10:12], nil)) {
		t.Fatalf("read %+v, want %+v", res, want)
	}
	// A buffer too small for the first record says how much it needs.
	_, err = l.Read(buf[:100], ReadRequest{From: 31, MaxMessages: 4})
	var bts *BufferTooSmallError
	if !errors.As(err, &bts) || bts.Need != len(recs[10]) {
		t.Fatalf("small buffer: %v", err)
	}
	// A buffer for one and a half records returns one.
	res, err = l.Read(buf[:len(recs[0])*3/2], ReadRequest{From: 0, MaxMessages: 100})
	if err != nil || res.Records != 1 {
		t.Fatalf("read %+v %v", res, err)
	}
	for ts := uint64(95); ts < 500; ts += 5 {
		ri, ok, err := l.LocateTimestamp(ts)
		wantIdx := (max(ts, 100) - 100 + 9) / 10
		if err != nil || ok != (wantIdx < 40) || (ok && ri.BaseOffset != wantIdx*3) {
			t.Fatalf("timestamp %d: %+v %v %v, want record %d", ts, ri, ok, err, wantIdx)
		}
	}
	for off := uint64(0); off < 120; off++ {
		ri, err := l.Locate(off)
		if err != nil || ri.BaseOffset != off/3*3 || ri.MessageCount != 3 || ri.BaseTimestamp != 100+off/3*10 {
			t.Fatalf("locate %d: %+v %v", off, ri, err)
		}
	}
	if _, err := l.Locate(120); !errors.Is(err, ErrNotFound) {
		t.Fatalf("locate past the end: %v", err)
	}
}

// failFS fails chosen operations of the OS filesystem.
type failFS struct {
	*vfs.OS
	failWrite, failSync, failCreate bool
}

var errBoom = fmt.Errorf("boom: %w", vfs.ErrInjected)

func (f *failFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	if f.failCreate && flag&vfs.O_CREATE != 0 {
		return nil, errBoom
	}
	file, err := f.OS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &failFile{File: file, fs: f}, nil
}

type failFile struct {
	vfs.File
	fs *failFS
}

func (f *failFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	if f.fs.failWrite {
		// Half of the first buffer reaches the file, like a torn write.
		n, _ := f.File.WriteAt(bufs[0][:len(bufs[0])/2], off)
		return n, errBoom
	}
	return f.File.WritevAt(bufs, off)
}

func (f *failFile) Datasync() error {
	if f.fs.failSync {
		return errBoom
	}
	return f.File.Datasync()
}

func TestIOFailureFailsLogAndRecoveryRepairs(t *testing.T) {
	t.Run("write", func(t *testing.T) {
		dir := t.TempDir()
		ffs := &failFS{OS: vfs.NewOS()}
		cfg := testConfig(1 << 20)
		l, _ := mustOpen(t, ffs, dir, cfg)
		recs := appendN(t, l, 3, 50, 1)
		ffs.failWrite = true
		err := l.Append([][]byte{simpleRecord(7, 3, 1, 1, 50)})
		if !errors.Is(err, ErrFailed) || !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("append: %v", err)
		}
		if l.NextOffset() != 3 {
			t.Fatalf("next %d after a failed append", l.NextOffset())
		}
		if err := l.Sync(); !errors.Is(err, ErrFailed) {
			t.Fatalf("sync after failure: %v", err)
		}
		l.Close()
		ffs.failWrite = false
		l, rep := mustOpen(t, ffs, dir, cfg)
		defer l.Close()
		if rep.TornTail == nil || rep.TornTail.Position != int64(3*len(recs[0])) {
			t.Fatalf("report %+v", rep)
		}
		readAll(t, l, recs)
	})
	t.Run("successor create", func(t *testing.T) {
		dir := t.TempDir()
		ffs := &failFS{OS: vfs.NewOS()}
		l, _ := mustOpen(t, ffs, dir, testConfig(100))
		appendN(t, l, 1, 50, 1)
		ffs.failCreate = true
		if err := l.Append([][]byte{simpleRecord(7, 1, 1, 1, 50)}); !errors.Is(err, ErrFailed) {
			t.Fatalf("append: %v", err)
		}
		l.Close()
	})
	t.Run("seal sync", func(t *testing.T) {
		dir := t.TempDir()
		ffs := &failFS{OS: vfs.NewOS()}
		l, _ := mustOpen(t, ffs, dir, testConfig(100))
		appendN(t, l, 1, 50, 1)
		ffs.failSync = true
		if err := l.Append([][]byte{simpleRecord(7, 1, 1, 1, 50)}); !errors.Is(err, ErrFailed) {
			t.Fatalf("append: %v", err)
		}
		if len(dirNames(t, dir)) != 2 {
			t.Fatalf("successor created although its predecessor is not durable: %v", dirNames(t, dir))
		}
		l.Close()
	})
}

func TestClosedLog(t *testing.T) {
	l, _ := mustOpen(t, vfs.NewOS(), t.TempDir(), testConfig(1000))
	l.Close()
	if err := l.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if _, err := l.Read(nil, ReadRequest{MaxMessages: 1}); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStageWritebackStartsSyncs: with StartSyncBytes, a writeback hint also
// queues a background fdatasync of the active segment once that many bytes
// were hinted since the previous one or since a sync; the sync plan and
// durability are untouched.
func TestStageWritebackStartsSyncs(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewFault(3)
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(1 << 20)
	cfg.StartSyncBytes = 16 << 10
	l, _ := mustOpen(t, fsys, dir, cfg)
	defer l.Close()
	syncs := func(b *vfs.Batch) (n int) {
		for _, h := range b.Hints() {
			if h.Sync {
				n++
			}
		}
		return n
	}
	var b vfs.Batch
	total := 0
	for i := 0; i < 10; i++ { // ~9 KiB a round: hints every round, a sync every second
		appendN(t, l, 8, 1000, uint64(1+8*i))
		l.StageWriteback(&b)
		total += syncs(&b)
		if err := fsys.Submit(&b); err != nil {
			t.Fatal(err)
		}
		b.Reset()
	}
	if total != 5 {
		t.Fatalf("%d background syncs over ~90 KiB hinted with StartSyncBytes 16 KiB, want 5", total)
	}
	if st := fsys.Writebacks(segPath(dir, 0, logExt)); st.SyncStarts != total {
		t.Fatalf("fault fs saw %d background syncs, the batches held %d", st.SyncStarts, total)
	}
	if l.DurableNextOffset() != 0 {
		t.Fatalf("a background sync made offsets up to %d durable", l.DurableNextOffset())
	}
	// After a sync the count starts again from the synced size.
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 8, 1000, 200)
	l.StageWriteback(&b)
	if n := syncs(&b); n != 0 {
		t.Fatalf("%d background syncs for ~9 KiB after a sync", n)
	}
}

// TestStageReleaseDropsOnlyOldDurablePages: with CacheBytes, StageRelease
// releases the page cache of durable .log bytes older than the newest
// CacheBytes of the log, across segments, each byte once, in whole pages,
// and never bytes that are not durable yet.
func TestStageReleaseDropsOnlyOldDurablePages(t *testing.T) {
	dir := t.TempDir()
	fsys := vfs.NewFault(4)
	if err := vfs.MkdirAllSync(fsys, dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const keep = 40 << 10
	cfg := testConfig(64 << 10)
	cfg.CacheBytes = keep
	l, _ := mustOpen(t, fsys, dir, cfg)
	defer l.Close()
	var b vfs.Batch
	stage := func() {
		t.Helper()
		l.StageRelease(&b)
		if err := fsys.Submit(&b); err != nil {
			t.Fatal(err)
		}
		b.Reset()
	}
	var recs [][]byte
	for round := 0; round < 30; round++ { // ~9 KiB a round, ~4 segments in all
		recs = append(recs, appendN(t, l, 8, 1000, uint64(1+8*round))...)
		if round%3 == 2 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		stage()
		segs := l.Segments()
		var total int64
		for _, s := range segs {
			total += s.Size
		}
		var before int64 // log bytes before each segment
		for i, s := range segs {
			st := fsys.Writebacks(s.LogPath)
			durable := s.Size // sealed segments are durable
			if i == len(segs)-1 {
				durable = l.segs[i].syncedSize
			}
			// Releasable: durable, outside the newest keep bytes, whole pages.
			want := min(durable, total-keep-before)
			want = max(want-want%WritebackAlign, 0)
			if st.ReleasedEnd != want || st.ReleasedBytes != want {
				t.Fatalf("round %d segment %d (%d bytes, %d durable): released %d bytes up to %d, want up to %d once",
					round, i, s.Size, durable, st.ReleasedBytes, st.ReleasedEnd, want)
			}
			before += s.Size
		}
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("only %d segments: the test does not cross segments", len(l.Segments()))
	}
	if first := l.Segments()[0]; fsys.Writebacks(first.LogPath).ReleasedEnd != first.Size-first.Size%WritebackAlign {
		t.Fatalf("first segment released up to %d of %d", fsys.Writebacks(first.LogPath).ReleasedEnd, first.Size)
	}
	readAll(t, l, recs)
	// Without CacheBytes nothing is released.
	dir2 := t.TempDir()
	cfg.CacheBytes = 0
	l2, _ := mustOpen(t, fsys, dir2, cfg)
	defer l2.Close()
	appendN(t, l2, 100, 1000, 1)
	if err := l2.Sync(); err != nil {
		t.Fatal(err)
	}
	l2.StageRelease(&b)
	for _, h := range b.Hints() {
		if h.Release {
			t.Fatalf("release hint %+v with CacheBytes 0", h)
		}
	}
}
