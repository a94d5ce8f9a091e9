package segment

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/iggo/iggo/shard/vfs"
)

const (
	logExt    = ".log"
	indexExt  = ".index"
	purgeExt  = ".purge"
	nameWidth = 20
	filePerm  = 0o644
)

// segmentName returns the file name of the segment starting at start with
// the given extension.
func segmentName(start uint64, ext string) string {
	return fmt.Sprintf("%0*d%s", nameWidth, start, ext)
}

// segment is one .log/.index pair and what is known about it.
type segment struct {
	start  uint64
	next   uint64 // offset after the last whole record
	size   int64  // bytes of whole records in the .log
	sealed bool

	logPath, idxPath string
	logF, idxF       vfs.File

	// entries holds every index entry while the segment is active and
	// until all of them are in the .index file; then summary holds every
	// stride-th one and entries is nil.
	entries     []indexEntry
	summary     []indexEntry
	fileEntries int     // entries written to the .index file
	ix          indexer // next entries; ix.maxTS is the segment's max timestamp

	// lastRec describes the last record as an index entry would, whether or
	// not it has one; syncedLast is lastRec as of the last sync.
	lastRec, syncedLast indexEntry

	syncedSize    int64  // .log bytes known durable
	syncedNext    uint64 // offset after the last durable record
	syncedEntries int    // .index entries known durable

	// hinted is the end of the .log range handed to writeback hints
	// (StageWriteback); it says nothing about durability. syncStarted is
	// hinted as of the last background fdatasync started
	// (Config.StartSyncBytes).
	hinted, syncStarted int64
	// released is the end of the .log range handed to release hints
	// (Config.CacheBytes).
	released int64
}

// entryCount is the number of index entries of the segment.
func (s *segment) entryCount() int {
	if s.entries != nil {
		return len(s.entries)
	}
	return s.fileEntries
}

func (s *segment) maxTimestamp() uint64 { return s.ix.maxTS }

// firstEntry is the index entry of the first record of a non-empty segment.
func (s *segment) firstEntry() indexEntry {
	if s.entries != nil {
		return s.entries[0]
	}
	return s.summary[0]
}

func (s *segment) close() error {
	var errs []error
	if s.logF != nil {
		errs = append(errs, s.logF.Close())
		s.logF = nil
	}
	if s.idxF != nil {
		errs = append(errs, s.idxF.Close())
		s.idxF = nil
	}
	return errors.Join(errs...)
}

// Log is one partition's chain of segments. It is owned by one goroutine.
type Log struct {
	fs  vfs.FS
	dir string
	cfg Config

	// segs is never emptied once it has a segment (purge and retention
	// leave an empty one at the next offset), so a log without segments has
	// never been appended to and starts at offset 0.
	segs []*segment

	err      error // sticky ErrFailed
	closed   bool
	dirDirty bool   // a name was created since the last SyncDir
	dirGen   uint64 // bumped on every create
	planOut  bool   // a SyncPlan is outstanding
	epoch    uint64 // bumped by retention and purge

	staged    *pendingAppend // a StageAppend awaiting FinishAppend
	stagedBuf []indexEntry

	// scratch reused by appends, reads and verification
	hdr     []byte
	idxBuf  []byte
	sumBuf  []byte
	pending []indexEntry
	iov     [][]byte // Append's vectored write
}

// Dir returns the partition directory.
func (l *Log) Dir() string { return l.dir }

// Config returns the log's configuration.
func (l *Log) Config() Config { return l.cfg }

func (l *Log) last() *segment {
	if len(l.segs) == 0 {
		return nil
	}
	return l.segs[len(l.segs)-1]
}

// NextOffset is the offset the next appended record must start at.
func (l *Log) NextOffset() uint64 {
	if s := l.last(); s != nil {
		return s.next
	}
	return 0
}

// FirstOffset is the lowest stored offset, or NextOffset when the log holds
// no message.
func (l *Log) FirstOffset() uint64 {
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[0].start
}

// HighestOffset is the offset of the last stored message; ok is false when
// the log holds none.
func (l *Log) HighestOffset() (offset uint64, ok bool) {
	if l.MessageCount() == 0 {
		return 0, false
	}
	return l.NextOffset() - 1, true
}

// MessageCount is the number of stored messages (offsets are dense).
func (l *Log) MessageCount() uint64 { return l.NextOffset() - l.FirstOffset() }

// Size is the total size of the .log files in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// DurableNextOffset is the offset after the last record known durable:
// every record below it survives a crash.
func (l *Log) DurableNextOffset() uint64 {
	if s := l.last(); s != nil {
		return s.syncedNext
	}
	return 0
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	StartOffset  uint64
	NextOffset   uint64 // offset after its last message
	Size         int64  // .log bytes
	Sealed       bool
	MaxTimestamp uint64 // largest base_timestamp, 0 when empty
	IndexEntries int
	LogPath      string
	IndexPath    string
}

// Segments lists the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	out := make([]SegmentInfo, len(l.segs))
	for i, s := range l.segs {
		out[i] = SegmentInfo{
			StartOffset:  s.start,
			NextOffset:   s.next,
			Size:         s.size,
			Sealed:       s.sealed,
			MaxTimestamp: s.maxTimestamp(),
			IndexEntries: s.entryCount(),
			LogPath:      s.logPath,
			IndexPath:    s.idxPath,
		}
	}
	return out
}

func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// fail makes the log refuse further work and returns the wrapped cause.
func (l *Log) fail(cause error) error {
	if l.err == nil {
		l.err = fmt.Errorf("%w: %w", ErrFailed, cause)
	}
	return l.err
}

// Close writes the index entries of records known durable (without
// syncing them) and releases the files.
func (l *Log) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, s := range l.segs {
		if l.err == nil {
			errs = append(errs, l.writeEntries(s))
		}
		errs = append(errs, s.close())
	}
	return errors.Join(errs...)
}

// Append writes whole records back to back at NextOffset. Each record is
// one stamped batch (see the package doc): partition_id equal to the
// configured one, base_offset continuing the log, batch_length equal to the
// slice length, at most MaxRecordSize bytes. Checksums are the caller's
// (Append does not re-hash: the records were verified at admission and
// stamped by the state machine). The records of one segment go out as one
// vectored write; their index entries are kept in memory and reach the
// .index file once the records are durable (see PlanSync). When a record brings
// the segment to SegmentSize the segment is sealed after it, and the next
// record opens a new segment; the sealed segment is made durable first.
//
// A record that fails validation rejects the whole call with
// ErrInvalidRecord before anything is written. An I/O error fails the log
// (ErrFailed). The slices are not retained.
func (l *Log) Append(records [][]byte) error {
	return l.appendRecords(Whole(records...))
}

func (l *Log) appendRecords(records []Record) error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.staged != nil {
		return ErrStaged
	}
	if err := l.validate(records); err != nil {
		return err
	}
	for len(records) > 0 {
		s, err := l.activeForAppend()
		if err != nil {
			return l.fail(err)
		}
		n := l.fitting(s, records)
		a := l.prepare(s, records[:n], l.pending[:0])
		l.pending = a.entries
		l.iov = iovecs(l.iov[:0], records[:n])
		_, err = s.logF.WritevAt(l.iov, s.size)
		clear(l.iov)
		if err != nil {
			return l.fail(fmt.Errorf("append to %s at %d: %w", s.logPath, s.size, err))
		}
		l.apply(a)
		records = records[n:]
	}
	return nil
}

// Record is one stored batch given in two pieces written back to back:
// Head, its RecordHeaderSize-byte header, and Frames, the rest. A
// replicated partition stamps a copy of the header and hands the prepare's
// frames as they are (wire.StampHeader), so no batch is copied to be
// stamped.
type Record struct {
	Head, Frames []byte
}

// Len is the record's length in bytes.
func (r Record) Len() int { return len(r.Head) + len(r.Frames) }

// Split is the Record of a contiguous record (one shorter than its header
// is all Head, which validation refuses).
func Split(rec []byte) Record {
	if len(rec) < RecordHeaderSize {
		return Record{Head: rec}
	}
	return Record{Head: rec[:RecordHeaderSize:RecordHeaderSize], Frames: rec[RecordHeaderSize:]}
}

// Whole is the Records of contiguous records.
func Whole(recs ...[]byte) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = Split(r)
	}
	return out
}

// iovecs appends the pieces of records to dst, in order.
func iovecs(dst [][]byte, records []Record) [][]byte {
	for _, r := range records {
		dst = append(dst, r.Head)
		if len(r.Frames) > 0 {
			dst = append(dst, r.Frames)
		}
	}
	return dst
}

// validate checks records as Append documents.
func (l *Log) validate(records []Record) error {
	next := l.NextOffset()
	for i, r := range records {
		if r.Len() < RecordHeaderSize {
			return fmt.Errorf("%w: record %d of %d bytes is shorter than its header", ErrInvalidRecord, i, r.Len())
		}
		if len(r.Head) != RecordHeaderSize {
			return fmt.Errorf("%w: record %d: header piece of %d bytes, want %d", ErrInvalidRecord, i, len(r.Head), RecordHeaderSize)
		}
		h := parseHeader(r.Head)
		if why := checkHeader(r.Head, h, l.cfg.PartitionID, l.cfg.MaxRecordSize); why != "" {
			return fmt.Errorf("%w: record %d: %s", ErrInvalidRecord, i, why)
		}
		if h.batchLength != uint64(r.Len()) {
			return fmt.Errorf("%w: record %d: batch_length %d, slice holds %d bytes", ErrInvalidRecord, i, h.batchLength, r.Len())
		}
		if h.baseOffset != next {
			return fmt.Errorf("%w: record %d: base_offset %d, log continues at %d", ErrInvalidRecord, i, h.baseOffset, next)
		}
		next = h.nextOffset()
	}
	return nil
}

// fitting is how many of records go to the active segment s: up to and
// including the one that brings it to SegmentSize.
func (l *Log) fitting(s *segment, records []Record) int {
	n, size := 0, s.size
	for n < len(records) && size < int64(l.cfg.SegmentSize) {
		size += int64(records[n].Len())
		n++
	}
	return n
}

// pendingAppend is the state of segment s once recs are written.
type pendingAppend struct {
	s       *segment
	ix      indexer
	entries []indexEntry // new entries
	last    indexEntry
	size    int64
	next    uint64
}

// prepare computes what appending recs to s changes, appending the new
// index entries to entries.
func (l *Log) prepare(s *segment, recs []Record, entries []indexEntry) pendingAppend {
	a := pendingAppend{s: s, ix: s.ix, entries: entries, size: s.size}
	for _, r := range recs {
		h := parseHeader(r.Head)
		if e, ok := a.ix.add(s.start, h, a.size); ok {
			a.entries = append(a.entries, e)
		}
		a.last = indexEntry{rel: uint32(h.baseOffset - s.start), pos: uint32(a.size), length: uint32(h.batchLength), maxTS: a.ix.maxTS}
		a.size += int64(r.Len())
		a.next = h.nextOffset()
	}
	return a
}

// apply records a written append.
func (l *Log) apply(a pendingAppend) {
	s := a.s
	s.ix = a.ix
	s.entries = append(s.entries, a.entries...)
	s.lastRec = a.last
	s.size, s.next = a.size, a.next
	if s.size >= int64(l.cfg.SegmentSize) {
		s.sealed = true
	}
}

// Staged is an append whose write waits in a vfs.Batch.
type Staged struct {
	// Records is how many of the records passed to StageAppend were staged:
	// those up to the end of the active segment. The caller appends the
	// rest after FinishAppend (the next segment can only be created once
	// this one is durable).
	Records int
	// Segment is the start offset of the segment the records go to and Pos
	// the .log position the first of them is written at, so a caller can
	// follow a segment's bytes (a running checksum) without reading them
	// back.
	Segment uint64
	Pos     int64
}

// StageAppend is Append for a group commit: it validates records like
// Append, puts the write of those that fit the active segment into b, and
// changes nothing until FinishAppend reports how the batch went. Reads do
// not see staged records. A PlanSync made while the append is staged covers
// it, so one vfs.FS.Submit can carry the writes and the syncs; its
// CompleteSync must come after FinishAppend. One append may be staged at a
// time; Append, retention and purge return ErrStaged meanwhile. b keeps the
// record slices until it is reset.
//
// Opening a new segment (when the last one is sealed) happens inside
// StageAppend, synchronously, as in Append.
func (l *Log) StageAppend(b *vfs.Batch, records []Record) (Staged, error) {
	if err := l.usable(); err != nil {
		return Staged{}, err
	}
	if l.staged != nil {
		return Staged{}, ErrStaged
	}
	if err := l.validate(records); err != nil {
		return Staged{}, err
	}
	if len(records) == 0 {
		return Staged{}, nil
	}
	s, err := l.activeForAppend()
	if err != nil {
		return Staged{}, l.fail(err)
	}
	n := l.fitting(s, records)
	a := l.prepare(s, records[:n], l.stagedBuf[:0])
	l.stagedBuf = a.entries
	b.WritevAt(s.logF, iovecs(nil, records[:n]), s.size)
	l.staged = &a
	return Staged{Records: n, Segment: s.start, Pos: s.size}, nil
}

// FinishAppend completes the staged append with the outcome of the batch
// that carried it: err is the batch's error for that write (nil when it
// succeeded). A failed write fails the log.
func (l *Log) FinishAppend(err error) error {
	a := l.staged
	if a == nil {
		panic("segment: FinishAppend without a staged append")
	}
	l.staged = nil
	if err != nil {
		return l.fail(fmt.Errorf("append to %s at %d: %w", a.s.logPath, a.s.size, err))
	}
	if e := l.usable(); e != nil {
		return e
	}
	l.apply(*a)
	return nil
}

// writeEntries writes to s's .index the entries not yet there whose
// records are durable. The .index file thus never names a record that a
// crash could lose, which is what lets recovery call damage below its last
// entry corruption rather than a torn tail. So that this frontier is exact
// whatever the index interval, the last durable record gets an entry (a sync
// entry) when the interval rule gave it none. Once a sealed
// segment's entries are all in the file, only the summary stays in memory.
func (l *Log) writeEntries(s *segment) error {
	if s.entries == nil {
		return nil
	}
	k := s.fileEntries
	for k < len(s.entries) && s.entries[k].end() <= s.syncedSize {
		k++
	}
	if s.syncedSize > 0 && (k == 0 || s.entries[k-1].pos < s.syncedLast.pos) {
		s.entries = slices.Insert(s.entries, k, s.syncedLast)
		k++
	}
	if k > s.fileEntries {
		need := (k - s.fileEntries) * IndexEntrySize
		if cap(l.idxBuf) < need {
			l.idxBuf = make([]byte, need, need*2)
		}
		buf := l.idxBuf[:need]
		for i, e := range s.entries[s.fileEntries:k] {
			encodeEntry(buf[i*IndexEntrySize:], e, s.start)
		}
		if _, err := s.idxF.WriteAt(buf, int64(s.fileEntries)*IndexEntrySize); err != nil {
			return fmt.Errorf("write %s at entry %d: %w", s.idxPath, s.fileEntries, err)
		}
		s.fileEntries = k
	}
	if s.sealed && s.fileEntries == len(s.entries) {
		l.compact(s)
	}
	return nil
}

// compact trades a sealed segment's in-memory index, all of it in the
// .index file, for the summary.
func (l *Log) compact(s *segment) {
	stride := l.cfg.IndexSummaryStride
	s.summary = make([]indexEntry, 0, (len(s.entries)+stride-1)/stride)
	for i := 0; i < len(s.entries); i += stride {
		s.summary = append(s.summary, s.entries[i])
	}
	s.entries = nil
}

// activeForAppend returns the unsealed last segment, opening a new one at
// NextOffset when there is none.
func (l *Log) activeForAppend() (*segment, error) {
	if s := l.last(); s != nil && !s.sealed {
		return s, nil
	}
	return l.openSuccessor()
}

// openSuccessor creates an empty segment at NextOffset. The segment before
// it and every name in the directory are made durable first, so that a
// crash can tear only the last segment.
func (l *Log) openSuccessor() (*segment, error) {
	start := l.NextOffset()
	if s := l.last(); s != nil {
		if err := l.syncSegment(s); err != nil {
			return nil, err
		}
	}
	if err := l.syncDirIfDirty(); err != nil {
		return nil, err
	}
	s, err := l.createSegment(start)
	if err != nil {
		return nil, err
	}
	l.segs = append(l.segs, s)
	return s, nil
}

// createSegment creates the empty files of a segment starting at start.
// The .log is created first: recovery removes an .index without a .log.
func (l *Log) createSegment(start uint64) (*segment, error) {
	s := &segment{
		start:      start,
		next:       start,
		syncedNext: start,
		logPath:    filepath.Join(l.dir, segmentName(start, logExt)),
		idxPath:    filepath.Join(l.dir, segmentName(start, indexExt)),
		ix:         indexer{interval: int64(l.cfg.IndexInterval)},
	}
	var err error
	l.dirDirty = true
	l.dirGen++
	if s.logF, err = l.fs.OpenFile(s.logPath, vfs.O_RDWR|vfs.O_CREATE|vfs.O_EXCL, filePerm); err != nil {
		return nil, fmt.Errorf("create %s: %w", s.logPath, err)
	}
	if s.idxF, err = l.fs.OpenFile(s.idxPath, vfs.O_RDWR|vfs.O_CREATE|vfs.O_EXCL, filePerm); err != nil {
		return nil, errors.Join(fmt.Errorf("create %s: %w", s.idxPath, err), s.close())
	}
	return s, nil
}

// syncSegment makes everything written to s durable, its index included:
// the .log first, then the entries it certifies, then the .index.
func (l *Log) syncSegment(s *segment) error {
	if s.syncedSize < s.size {
		if err := s.logF.Datasync(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", s.logPath, err)
		}
		s.syncedSize, s.syncedNext, s.syncedLast = s.size, s.next, s.lastRec
	}
	if err := l.writeEntries(s); err != nil {
		return err
	}
	if s.syncedEntries < s.fileEntries {
		if err := s.idxF.Datasync(); err != nil {
			return fmt.Errorf("fdatasync %s: %w", s.idxPath, err)
		}
		s.syncedEntries = s.fileEntries
	}
	return nil
}

func (l *Log) syncDirIfDirty() error {
	if !l.dirDirty {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", l.dir, err)
	}
	l.dirDirty = false
	return nil
}

// SyncPlan lists what must be made durable to make every append made before
// PlanSync durable. The shard's group commit issues each Datasync (and the
// SyncDir) once, in any order or in parallel, then calls CompleteSync.
type SyncPlan struct {
	// Files each need File.Datasync.
	Files []vfs.File
	// Dir, when not empty, needs FS.SyncDir: a segment file was created.
	Dir string

	marks  []syncMark
	dirGen uint64
	epoch  uint64
}

type syncMark struct {
	s       *segment
	size    int64
	next    uint64
	last    indexEntry
	entries int
}

// Empty reports whether the plan has nothing to do.
func (p *SyncPlan) Empty() bool { return len(p.Files) == 0 && p.Dir == "" }

// PlanSync returns what is not yet durable, a staged append included. It
// first writes the index
// entries of records made durable by the previous completed plan, so the
// .index trails the .log by one group commit. Retention and purge refuse to
// run until the plan is completed. Appends may continue meanwhile; they are
// not covered by this plan.
func (l *Log) PlanSync() (SyncPlan, error) {
	if err := l.usable(); err != nil {
		return SyncPlan{}, err
	}
	p := SyncPlan{dirGen: l.dirGen, epoch: l.epoch}
	for _, s := range l.segs {
		if err := l.writeEntries(s); err != nil {
			return SyncPlan{}, l.fail(err)
		}
		m := syncMark{s: s, size: s.size, next: s.next, last: s.lastRec, entries: s.fileEntries}
		if a := l.staged; a != nil && a.s == s {
			m.size, m.next, m.last = a.size, a.next, a.last
		}
		if s.syncedSize < m.size {
			p.Files = append(p.Files, s.logF)
		}
		if s.syncedEntries < s.fileEntries {
			p.Files = append(p.Files, s.idxF)
		}
		if s.syncedSize < m.size || s.syncedEntries < s.fileEntries {
			p.marks = append(p.marks, m)
		}
	}
	if l.dirDirty {
		p.Dir = l.dir
	}
	l.planOut = true
	return p, nil
}

// WritebackAlign is the granularity of StageWriteback on the active
// segment: the page size, so a hint never covers the partly filled last
// page, which the next append dirties again (and which a device needing
// stable pages would make that append wait for).
const WritebackAlign = 4096

// StageWriteback puts into b a writeback hint (vfs.Batch.Writeback) for the
// .log bytes appended since the last hint that no sync has made durable
// yet, up to the last whole page of the active segment, and returns how
// many bytes it hinted. Hints have no durability meaning: the sync plan is
// untouched, and PlanSync/CompleteSync still decide what is durable. They
// make the fdatasync a checkpoint (or a segment roll) eventually issues
// short, because the kernel has been writing the pages back meanwhile.
//
// Only the last segment can have such bytes: a segment is synced whole
// before its successor is created.
func (l *Log) StageWriteback(b *vfs.Batch) int64 {
	if l.usable() != nil {
		return 0
	}
	s := l.last()
	if s == nil || s.logF == nil {
		return 0
	}
	from := max(s.hinted, s.syncedSize)
	to := s.size
	if !s.sealed {
		to -= to % WritebackAlign
	}
	if to <= from {
		return 0
	}
	b.Writeback(s.logF, from, to-from)
	s.hinted = to
	if n := l.cfg.StartSyncBytes; n > 0 && to-max(s.syncStarted, s.syncedSize) >= n {
		b.StartSync(s.logF)
		s.syncStarted = to
	}
	return to - from
}

// StageRelease puts into b release hints (vfs.Batch.Release) for the
// durable .log bytes older than the newest Config.CacheBytes of the log,
// each range once, in whole pages; the caller stages it after a sync
// completed. Those pages are clean, so the kernel drops them at once and
// the next appends reuse the memory instead of growing the page cache (on
// a virtual machine new page-cache pages cost several times what reused
// ones do); a poll of older records reads them back.
func (l *Log) StageRelease(b *vfs.Batch) {
	keep := l.cfg.CacheBytes
	if keep <= 0 || l.usable() != nil {
		return
	}
	for i := len(l.segs) - 1; i >= 0; i-- {
		s := l.segs[i]
		end := min(s.syncedSize, s.size-keep)
		end -= end % WritebackAlign
		keep = max(keep-s.size, 0)
		from := min(s.released, s.syncedSize)
		if end > from && s.logF != nil {
			b.Release(s.logF, from, end-from)
			s.released = end
		} else if whole := s.size - s.size%WritebackAlign; s.sealed && s.released > 0 && s.released >= whole {
			// A wholly released sealed segment: the call that released it
			// went on to every older one.
			return
		}
	}
}

// AddTo puts the plan's syncs into a group-commit batch.
func (p *SyncPlan) AddTo(b *vfs.Batch) {
	for _, f := range p.Files {
		b.Datasync(f)
	}
	if p.Dir != "" {
		b.SyncDir(p.Dir)
	}
}

// CompleteSync records the outcome of executing p. A non-nil err (any
// Datasync or SyncDir of the plan failed) fails the log: after a failed
// fdatasync the kernel may have dropped the dirty pages, so nothing written
// since the last good sync can be trusted.
func (l *Log) CompleteSync(p SyncPlan, err error) error {
	l.planOut = false
	if err != nil {
		return l.fail(fmt.Errorf("sync: %w", err))
	}
	if e := l.usable(); e != nil {
		return e
	}
	if p.epoch != l.epoch {
		panic(fmt.Sprintf("segment: CompleteSync of a plan from epoch %d in epoch %d (retention or purge ran while it was outstanding)", p.epoch, l.epoch))
	}
	for _, m := range p.marks {
		if m.size > m.s.size {
			panic(fmt.Sprintf("segment: CompleteSync of a plan covering %s up to %d before FinishAppend of the staged append (written %d)", m.s.logPath, m.size, m.s.size))
		}
		if m.size > m.s.syncedSize {
			m.s.syncedSize, m.s.syncedNext, m.s.syncedLast = m.size, m.next, m.last
		}
		m.s.syncedEntries = max(m.s.syncedEntries, m.entries)
	}
	if p.Dir != "" && p.dirGen == l.dirGen {
		l.dirDirty = false
	}
	return nil
}

// Sync makes every append so far durable, index entries included, with
// the syncs issued one after another: the convenience form for callers
// without a group commit.
func (l *Log) Sync() error {
	if err := l.usable(); err != nil {
		return err
	}
	for _, s := range l.segs {
		if err := l.syncSegment(s); err != nil {
			return l.fail(err)
		}
	}
	if err := l.syncDirIfDirty(); err != nil {
		return l.fail(err)
	}
	return nil
}
