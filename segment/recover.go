package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/iggo/iggo/shard/vfs"
)

// Report lists what Open found and repaired. Nothing in it is data loss
// beyond a torn tail, which only unsynced appends can leave.
type Report struct {
	// Segments is the number of segments after recovery.
	Segments int
	// PurgeFinished is set when an interrupted Purge was completed; the log
	// then starts at PurgeNext.
	PurgeFinished bool
	PurgeNext     uint64
	// RemovedFiles are .index files without a .log, and purge markers.
	RemovedFiles []string
	// TornTail is set when the last segment ended in a partial or damaged
	// record with no valid record after it and was truncated.
	TornTail *TornTail
	// RebuiltIndexes lists indexes rewritten (wholly or from an entry on)
	// because they were missing, short, long, damaged or disagreed with the
	// log.
	RebuiltIndexes []IndexRepair
}

// TornTail describes a truncated tail.
type TornTail struct {
	Segment  uint64 // start offset of the last segment
	Path     string
	Position int64 // the .log was truncated to this size
	Dropped  int64 // bytes removed
	Reason   string
}

// IndexRepair describes one rewritten index.
type IndexRepair struct {
	Segment uint64
	Path    string
	Kept    int // leading entries that were right
	Written int // entries written after them
	Reason  string
}

// Clean reports whether recovery changed nothing.
func (r *Report) Clean() bool {
	return !r.PurgeFinished && len(r.RemovedFiles) == 0 && r.TornTail == nil && len(r.RebuiltIndexes) == 0
}

// recoverChunk is the read-ahead of the verifying log walk.
const recoverChunk = 1 << 20

// parseName splits a partition directory entry into a start offset and an
// extension; ok is false for names that are not ours.
func parseName(name string) (start uint64, ext string, ok bool) {
	if len(name) <= nameWidth || name[nameWidth] != '.' {
		return 0, "", false
	}
	ext = name[nameWidth:]
	if ext != logExt && ext != indexExt && ext != purgeExt {
		return 0, "", false
	}
	digits := name[:nameWidth]
	if strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, "", false
	}
	start, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, "", false
	}
	return start, ext, true
}

// Open recovers the partition directory dir (creating it when missing; the
// caller makes the directory's own name durable) and returns the log with
// its last segment active. See the package doc for what recovery repairs and
// what it reports as a *CorruptionError. Recovered state is made durable
// before Open returns, so DurableNextOffset equals NextOffset.
func Open(fsys vfs.FS, dir string, cfg Config) (*Log, *Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("create %s: %w", dir, err)
	}
	l := &Log{fs: fsys, dir: dir, cfg: cfg, hdr: make([]byte, RecordHeaderSize)}
	rep := &Report{}
	if err := l.recover(rep); err != nil {
		return nil, rep, errors.Join(err, l.Close())
	}
	rep.Segments = len(l.segs)
	return l, rep, nil
}

func (l *Log) recover(rep *Report) error {
	entries, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	var logs, indexes, purges []uint64
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		start, ext, ok := parseName(e.Name())
		if !ok {
			continue
		}
		switch ext {
		case logExt:
			logs = append(logs, start)
		case indexExt:
			indexes = append(indexes, start)
		case purgeExt:
			purges = append(purges, start)
		}
	}
	if len(purges) > 0 {
		if err := l.finishPurge(logs, indexes, purges, rep); err != nil {
			return err
		}
		logs, indexes = []uint64{rep.PurgeNext}, []uint64{rep.PurgeNext}
	}
	slices.Sort(logs)
	for _, start := range indexes {
		if _, found := slices.BinarySearch(logs, start); !found {
			path := filepath.Join(l.dir, segmentName(start, indexExt))
			if err := l.fs.Remove(path); err != nil {
				return fmt.Errorf("remove orphan index %s: %w", path, err)
			}
			rep.RemovedFiles = append(rep.RemovedFiles, path)
			l.dirDirty = true
		}
	}

	for i, start := range logs {
		s, err := l.openSegment(start)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		if err := l.recoverSegment(s, i == len(logs)-1, rep); err != nil {
			return err
		}
		if i > 0 {
			prev := l.segs[i-1]
			if s.start != prev.next {
				what := "hole"
				if s.start < prev.next {
					what = "overlap"
				}
				return &CorruptionError{Segment: s.start, File: s.logPath, Offset: prev.next,
					Reason: fmt.Sprintf("%s: segment %020d ends at offset %d, next segment starts at %d", what, prev.start, prev.next, s.start)}
			}
		}
	}

	// Make what recovery kept durable: the last segment may hold appends
	// that reached only the page cache before a kill, and its name may not
	// be durable yet. Its index entries are written after its log is
	// durable, as at run time. Sealed segments were made durable before
	// their successors were created, and their repairs were synced as made.
	if s := l.last(); s != nil {
		if err := s.logF.Datasync(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", s.logPath, err)
		}
		if err := l.rewriteIndex(s, s.entries, s.fileEntries); err != nil {
			return err
		}
		if err := s.idxF.Datasync(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", s.idxPath, err)
		}
		s.fileEntries = len(s.entries)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", l.dir, err)
	}
	l.dirDirty = false
	for i, s := range l.segs {
		s.syncedSize, s.syncedNext, s.syncedEntries = s.size, s.next, s.fileEntries
		if i < len(l.segs)-1 || s.size >= int64(l.cfg.SegmentSize) {
			s.sealed = true
			l.compact(s)
		}
	}
	return nil
}

// finishPurge completes a Purge interrupted by a crash: every segment goes
// and an empty one starts at the marker's offset.
func (l *Log) finishPurge(logs, indexes, purges []uint64, rep *Report) error {
	next := slices.Max(purges)
	for _, start := range logs {
		if err := l.removeIfPresent(filepath.Join(l.dir, segmentName(start, logExt))); err != nil {
			return err
		}
	}
	for _, start := range indexes {
		if err := l.removeIfPresent(filepath.Join(l.dir, segmentName(start, indexExt))); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", l.dir, err)
	}
	s, err := l.createSegment(next)
	if err != nil {
		return err
	}
	if err := s.close(); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", l.dir, err)
	}
	for _, p := range purges {
		path := filepath.Join(l.dir, segmentName(p, purgeExt))
		if err := l.removeIfPresent(path); err != nil {
			return err
		}
		rep.RemovedFiles = append(rep.RemovedFiles, path)
	}
	l.dirDirty = true
	rep.PurgeFinished, rep.PurgeNext = true, next
	return nil
}

func (l *Log) removeIfPresent(path string) error {
	if err := l.fs.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// openSegment opens an existing segment's .log and its .index (created
// empty when missing; recovery then rebuilds it).
func (l *Log) openSegment(start uint64) (*segment, error) {
	s := &segment{
		start:   start,
		next:    start,
		logPath: filepath.Join(l.dir, segmentName(start, logExt)),
		idxPath: filepath.Join(l.dir, segmentName(start, indexExt)),
		ix:      indexer{interval: int64(l.cfg.IndexInterval)},
	}
	var err error
	if s.logF, err = l.fs.OpenFile(s.logPath, vfs.O_RDWR, filePerm); err != nil {
		return nil, fmt.Errorf("open %s: %w", s.logPath, err)
	}
	if s.idxF, err = l.fs.OpenFile(s.idxPath, vfs.O_RDWR|vfs.O_CREATE, filePerm); err != nil {
		return nil, errors.Join(fmt.Errorf("open %s: %w", s.idxPath, err), s.close())
	}
	return s, nil
}

// recoverSegment establishes s's extent and index.
//
// A segment's index is trusted up to its last valid entry when the record
// there agrees with it (with VerifyAllOnOpen every record is re-hashed
// instead). A sealed segment's records after that entry get a header walk;
// any damage is corruption, because sealed segments were durable before
// their successors existed. Its index is repaired and synced here.
//
// The last segment's records after that entry are re-hashed. Its .index
// names only records that were durable when the entry was written, so damage
// below the end of the last valid entry's record is corruption; damage above
// it is a torn tail of unsynced appends (a crash may keep any sectors of
// them) and is truncated, unless the damaged record is whole with good
// checksums (a record of another partition or offset is misplaced, not
// torn). Its index is left
// in s.entries with s.fileEntries entries of the file known right; recover
// writes the rest once the log is durable. Entries merely missing from the
// end of its index are routine (they trail the log by a sync) and not
// reported.
func (l *Log) recoverSegment(s *segment, last bool, rep *Report) error {
	logSize, err := s.logF.Size()
	if err != nil {
		return fmt.Errorf("size of %s: %w", s.logPath, err)
	}
	idxSize, err := s.idxF.Size()
	if err != nil {
		return fmt.Errorf("size of %s: %w", s.idxPath, err)
	}
	if logSize > int64(l.cfg.SegmentSize)+int64(l.cfg.MaxRecordSize) {
		return &CorruptionError{Segment: s.start, File: s.logPath, Position: logSize, Offset: s.start,
			Reason: fmt.Sprintf("log of %d bytes exceeds segment size %d plus one record", logSize, l.cfg.SegmentSize)}
	}
	maxEntries := logSize / (RecordHeaderSize + FrameHeaderSize)
	raw := make([]byte, min(idxSize, (maxEntries+1)*IndexEntrySize))
	if err := readFull(s.idxF, raw, 0); err != nil {
		return fmt.Errorf("read %s: %w", s.idxPath, err)
	}
	disk, valid, why := decodeIndex(raw, s.start, logSize)
	if int64(len(raw)) < idxSize && why == "" {
		why = fmt.Sprintf("index of %d bytes holds more entries than the log has records", idxSize)
	}

	ix := indexer{interval: int64(l.cfg.IndexInterval)}
	w := walkResult{next: s.start}
	resumed := false
	if !l.cfg.VerifyAllOnOpen && valid > 0 {
		// Trust the checksummed entries if the record under the last one
		// agrees with it, and walk only what follows.
		e := disk[valid-1]
		h, ok, err := l.headerAt(s.logF, int64(e.pos), logSize)
		if err != nil {
			return err
		}
		if ok && h.baseOffset == s.start+uint64(e.rel) && h.batchLength == uint64(e.length) &&
			checkHeader(l.hdr, h, l.cfg.PartitionID, l.cfg.MaxRecordSize) == "" {
			ix.resumeAt(e)
			ix.maxTS = max(ix.maxTS, h.baseTimestamp)
			w = walkResult{end: e.end(), next: h.nextOffset(), entries: disk[:valid:valid], last: e}
			resumed = true
		} else if why == "" {
			why = fmt.Sprintf("entry %d does not match the record at position %d", valid-1, e.pos)
		}
	}
	// The last segment's records past its index may not have been durable:
	// re-hash them (all of it if the index could not be trusted), adopting
	// the valid entries of the index that name them.
	verify := last || l.cfg.VerifyAllOnOpen
	var adopt []indexEntry
	if verify && !resumed {
		adopt, w.entries = disk[:valid], make([]indexEntry, 0, valid)
	}
	if w, err = l.walk(s, w, &ix, verify, logSize, adopt); err != nil {
		return err
	}
	if w.bad != "" {
		if !last {
			return l.corruptLog(s, w.end, w.next, "%s", w.bad)
		}
		if valid > 0 && w.end < disk[valid-1].end() {
			return l.corruptLog(s, w.end, w.next, "%s, below the durable end %d named by the index", w.bad, disk[valid-1].end())
		}
		if whole, err := l.wholeRecordAt(s, w.end, logSize); err != nil {
			return err
		} else if whole {
			return l.corruptLog(s, w.end, w.next, "%s in a whole record with good checksums", w.bad)
		}
		if err := s.logF.Truncate(w.end); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", s.logPath, w.end, err)
		}
		rep.TornTail = &TornTail{Segment: s.start, Path: s.logPath, Position: w.end, Dropped: logSize - w.end, Reason: w.bad}
	}

	// Only valid entries count as right: an entry whose fields agree with
	// the log but whose stored checksum does not must be rewritten, or reads
	// that load it later report the index corrupt.
	want := w.entries
	same := 0
	for same < len(want) && same < valid && want[same] == disk[same] {
		same++
	}
	lagging := last && same == len(disk) && int64(len(disk))*IndexEntrySize <= idxSize && idxSize < int64(len(disk)+1)*IndexEntrySize
	if same < len(want) || int64(len(want))*IndexEntrySize != idxSize {
		if !lagging {
			if why == "" {
				switch {
				case same < len(want) && same < len(disk):
					why = fmt.Sprintf("entry %d disagrees with the log", same)
				case len(disk) < len(want):
					why = fmt.Sprintf("index holds %d entries, log needs %d", len(disk), len(want))
				default:
					why = fmt.Sprintf("index holds %d bytes, log needs %d entries", idxSize, len(want))
				}
			}
			rep.RebuiltIndexes = append(rep.RebuiltIndexes, IndexRepair{Segment: s.start, Path: s.idxPath, Kept: same, Written: len(want) - same, Reason: why})
		}
		if !last {
			if err := l.rewriteIndex(s, want, same); err != nil {
				return err
			}
			if err := s.idxF.Datasync(); err != nil {
				return fmt.Errorf("fdatasync %s: %w", s.idxPath, err)
			}
			same = len(want)
		}
	}
	s.entries, s.fileEntries = want, same
	s.size, s.next, s.ix = w.end, w.next, ix
	s.lastRec, s.syncedLast = w.last, w.last
	return nil
}

// decodeIndex decodes raw and returns the entries, how many leading ones
// are valid (checksum and order), and why the first invalid one is not.
func decodeIndex(raw []byte, segStart uint64, logSize int64) (es []indexEntry, valid int, why string) {
	n := len(raw) / IndexEntrySize
	es = make([]indexEntry, 0, n)
	for i := 0; i < n; i++ {
		e, ok := decodeEntry(raw[i*IndexEntrySize:], segStart)
		es = append(es, e)
		if why != "" {
			continue
		}
		if !ok {
			why = fmt.Sprintf("entry %d checksum mismatch", i)
			continue
		}
		var prev indexEntry
		if i > 0 {
			prev = es[i-1]
		}
		if bad := checkEntrySequence(prev, i > 0, e, logSize); bad != "" {
			why = fmt.Sprintf("entry %d: %s", i, bad)
			continue
		}
		valid = i + 1
	}
	if why == "" && len(raw)%IndexEntrySize != 0 {
		why = fmt.Sprintf("partial entry of %d bytes at the end", len(raw)%IndexEntrySize)
	}
	return es, valid, why
}

// headerAt reads the record header at pos; ok is false when the file is too
// short to hold one.
func (l *Log) headerAt(f vfs.File, pos, size int64) (recordHeader, bool, error) {
	if pos+RecordHeaderSize > size {
		return recordHeader{}, false, nil
	}
	if err := readFull(f, l.hdr, pos); err != nil {
		return recordHeader{}, false, fmt.Errorf("read %s at %d: %w", f.Name(), pos, err)
	}
	return parseHeader(l.hdr), true, nil
}

// walkResult is where a log walk stopped and the segment's index up to
// there.
type walkResult struct {
	end     int64  // position after the last good record
	next    uint64 // offset after the last good record
	entries []indexEntry
	last    indexEntry // the last good record, as an index entry
	bad     string     // why the record at end is not good; "" at the log end
}

// walk checks records from w.end (expected to start at offset w.next) to
// logSize and extends w.entries with index entries for them. With verify
// every record is read whole and re-hashed; otherwise only headers are read.
//
// adopt holds index entries read from the file: while they name the walked
// records exactly they are kept as they are, and the interval rule resumes
// after the last one kept, so entries the file holds beyond the interval rule
// (sync entries) survive recovery.
func (l *Log) walk(s *segment, w walkResult, ix *indexer, verify bool, logSize int64, adopt []indexEntry) (walkResult, error) {
	var sc *scanner
	if verify {
		sc = &scanner{f: s.logF, size: logSize}
	}
	adopted, since := 0, len(w.entries) // entries derived since the last adoption start at since
	pos, expect := w.end, w.next
	for pos < logSize {
		if logSize-pos < RecordHeaderSize {
			w.bad = fmt.Sprintf("partial record header of %d bytes", logSize-pos)
			return w, nil
		}
		var hb []byte
		if verify {
			var err error
			if hb, err = sc.bytes(pos, RecordHeaderSize); err != nil {
				return w, err
			}
		} else {
			if err := readFull(s.logF, l.hdr, pos); err != nil {
				return w, fmt.Errorf("read %s at %d: %w", s.logPath, pos, err)
			}
			hb = l.hdr
		}
		h := parseHeader(hb)
		if why := checkHeader(hb, h, l.cfg.PartitionID, l.cfg.MaxRecordSize); why != "" {
			w.bad = why
			return w, nil
		}
		if h.baseOffset != expect {
			w.bad = fmt.Sprintf("base_offset %d", h.baseOffset)
			return w, nil
		}
		if int64(h.batchLength) > logSize-pos {
			w.bad = fmt.Sprintf("record of %d bytes runs past the log end %d", h.batchLength, logSize)
			return w, nil
		}
		if verify {
			rec, err := sc.bytes(pos, int(h.batchLength))
			if err != nil {
				return w, err
			}
			var why string
			if why, l.sumBuf = verifyBody(rec, h, l.sumBuf); why != "" {
				w.bad = why
				return w, nil
			}
		}
		cur := indexEntry{rel: uint32(h.baseOffset - s.start), pos: uint32(pos), length: uint32(h.batchLength),
			maxTS: max(ix.maxTS, h.baseTimestamp)}
		if adopted < len(adopt) && int64(adopt[adopted].pos) < pos {
			adopt = adopt[:adopted] // an entry inside a record: stop adopting
		}
		adoptedHere := false
		if adopted < len(adopt) && int64(adopt[adopted].pos) == pos {
			if adopt[adopted] == cur {
				// The file's entries up to here stand as they are.
				w.entries = append(w.entries[:since], cur)
				since = len(w.entries)
				adopted++
				ix.resumeAt(cur)
				adoptedHere = true
			} else {
				adopt = adopt[:adopted]
			}
		}
		if !adoptedHere {
			if e, ok := ix.add(s.start, h, pos); ok {
				w.entries = append(w.entries, e)
			}
		}
		w.last = cur
		pos += int64(h.batchLength)
		expect = h.nextOffset()
		w.end, w.next = pos, expect
	}
	return w, nil
}

// wholeRecordAt reports whether a whole record with good checksums starts
// at pos, whatever its partition or offsets. A crash cannot produce one
// where none was written: the positions of a segment are written once.
func (l *Log) wholeRecordAt(s *segment, pos int64, logSize int64) (bool, error) {
	h, ok, err := l.headerAt(s.logF, pos, logSize)
	if err != nil || !ok {
		return false, err
	}
	if int64(h.batchLength) > logSize-pos || checkHeader(l.hdr, h, h.partitionID, l.cfg.MaxRecordSize) != "" {
		return false, nil
	}
	rec := make([]byte, h.batchLength)
	if err := readFull(s.logF, rec, pos); err != nil {
		return false, fmt.Errorf("read %s at %d: %w", s.logPath, pos, err)
	}
	var why string
	why, l.sumBuf = verifyBody(rec, h, l.sumBuf)
	return why == "", nil
}

// rewriteIndex makes s's .index hold want, rewriting from entry from on.
func (l *Log) rewriteIndex(s *segment, want []indexEntry, from int) error {
	if size, err := s.idxF.Size(); err != nil {
		return fmt.Errorf("size of %s: %w", s.idxPath, err)
	} else if size == int64(len(want))*IndexEntrySize && from == len(want) {
		return nil
	}
	if err := s.idxF.Truncate(int64(from) * IndexEntrySize); err != nil {
		return fmt.Errorf("truncate %s: %w", s.idxPath, err)
	}
	if from == len(want) {
		return nil
	}
	buf := make([]byte, (len(want)-from)*IndexEntrySize)
	for i, e := range want[from:] {
		encodeEntry(buf[i*IndexEntrySize:], e, s.start)
	}
	if _, err := s.idxF.WriteAt(buf, int64(from)*IndexEntrySize); err != nil {
		return fmt.Errorf("write %s: %w", s.idxPath, err)
	}
	return nil
}

// scanner serves byte ranges of a file through a read-ahead window.
type scanner struct {
	f    vfs.File
	size int64
	buf  []byte
	off  int64 // file position of buf[0]
}

// bytes returns the file's bytes [pos, pos+n), valid until the next call;
// the range must lie inside the file.
func (sc *scanner) bytes(pos int64, n int) ([]byte, error) {
	if pos >= sc.off && pos+int64(n) <= sc.off+int64(len(sc.buf)) {
		return sc.buf[pos-sc.off : pos-sc.off+int64(n)], nil
	}
	want := int(min(int64(max(n, recoverChunk)), sc.size-pos))
	if cap(sc.buf) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	if err := readFull(sc.f, sc.buf, pos); err != nil {
		sc.buf = sc.buf[:0]
		return nil, fmt.Errorf("read %s at %d: %w", sc.f.Name(), pos, err)
	}
	sc.off = pos
	return sc.buf[:n], nil
}
