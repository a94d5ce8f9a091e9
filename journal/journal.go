package journal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/iggo/iggo/shard/vfs"
)

var (
	// ErrFull refuses an append that would exceed the journal's capacity
	// (slots for metadata, bytes for a partition): checkpoint first.
	ErrFull = errors.New("journal: full, checkpoint needed")
	// ErrOp refuses an append whose op does not follow the last one.
	ErrOp = errors.New("journal: op out of sequence")
	// ErrTooLarge refuses an entry larger than MaxEntry.
	ErrTooLarge = errors.New("journal: entry too large")
	// ErrNotFound is returned for an op the journal does not hold.
	ErrNotFound = errors.New("journal: op not in journal")
	// ErrFaulty is returned when reading an op that recovery found
	// damaged; it must be repaired from a peer (Repair) or truncated.
	ErrFaulty = errors.New("journal: op is faulty")
	// ErrCorrupt is returned when an entry read back fails its checksum.
	ErrCorrupt = errors.New("journal: entry corrupt")
	// ErrRepair refuses a repair that cannot be written in place.
	ErrRepair = errors.New("journal: repair does not fit")
	// ErrFailed is wrapped by every call after a write or sync failed: the
	// journal no longer knows what is on disk and must be reopened.
	ErrFailed = errors.New("journal: failed earlier")
)

// Entry is one journal entry: an op and its bytes, given as parts that are
// written back to back without copying (for example a prepare header and
// its body).
type Entry struct {
	Op    uint64
	Parts [][]byte
}

// Bytes makes a single-part Entry.
func Bytes(op uint64, b []byte) Entry { return Entry{Op: op, Parts: [][]byte{b}} }

func (e Entry) size() int {
	n := 0
	for _, p := range e.Parts {
		n += len(p)
	}
	return n
}

// Default limits.
const (
	DefaultSlots            = 1024
	DefaultCheckpointMargin = 64
	DefaultMaxEntry         = 64<<20 + 4096
	DefaultBudget           = 512 << 20
	DefaultFileSize         = 64 << 20
	DefaultCheckpointAt     = 0.5
)

// MetadataOptions configure a metadata journal.
type MetadataOptions struct {
	// Slots is how many ops above the last checkpoint the journal retains
	// (journal_slots); DefaultSlots if 0.
	Slots int
	// CheckpointMargin: CheckpointDue turns true when fewer than this many
	// slots remain; DefaultCheckpointMargin if 0.
	CheckpointMargin int
	// MaxEntry bounds one entry's size; DefaultMaxEntry if 0.
	MaxEntry int
	// BeforeCut, when set, is called by recovery when it found a torn tail,
	// before it cuts or removes anything (see "Torn tails and the caller"
	// in the package doc). An error aborts the open with nothing cut.
	BeforeCut func(*Torn) error
}

// PartitionOptions configure a partition prepare journal.
type PartitionOptions struct {
	// Budget bounds the bytes the journal's files may hold; DefaultBudget
	// if 0. An append that would exceed it is refused with ErrFull.
	Budget int64
	// CheckpointAt is the fraction of Budget at which CheckpointDue turns
	// true; DefaultCheckpointAt if 0.
	CheckpointAt float64
	// FileSize is the size after which a new file is started (the entry
	// that crosses it is written whole); DefaultFileSize if 0.
	FileSize int64
	// MaxEntry bounds one entry's size; DefaultMaxEntry if 0.
	MaxEntry int
	// RecycleFiles is how many files retired by DiscardPrefix are kept
	// (renamed "recycle-%020d.wal") to be renamed and overwritten by later
	// rotations instead of creating fresh files, whose appends cost the
	// kernel block allocation and, for fdatasync, a metadata update (see
	// "Recycled files" in the package doc). 0 means Budget/FileSize (at
	// least 1); a negative value disables recycling.
	RecycleFiles int
	// WritebackBytes, when positive, is how many bytes may be appended to a
	// file without a sync before the journal asks the kernel to start
	// writing them (vfs.File.Writeback, not waited for). A caller that
	// syncs every group commit never reaches it; one that does not (a
	// replicated topic) keeps the dirty data a later sync must write small.
	// No durability meaning.
	WritebackBytes int64
	// StartSyncBytes, when positive, makes a writeback hint also start a
	// background fdatasync of the file (vfs.StartSync) once that many
	// bytes were hinted since the previous one, so the sync a checkpoint
	// issues finds the device's cache mostly flushed. No durability
	// meaning either.
	StartSyncBytes int64
	// BeforeCut: as MetadataOptions.BeforeCut.
	BeforeCut func(*Torn) error
}

// Journal is an open journal. It is not safe for concurrent use: one shard
// owns it.
type Journal struct {
	fs   vfs.FS
	dir  string
	kind uint8

	slots    int
	margin   int
	budget   int64
	ckptAt   int64
	fileSize int64
	maxEntry int
	// beforeCut is the caller's hook run before recovery cuts a torn tail.
	beforeCut func(*Torn) error
	// recycle bounds pool: retired partition files kept for reuse, by
	// ascending maxOp.
	recycle int
	// writeback is PartitionOptions.WritebackBytes, startSync
	// PartitionOptions.StartSyncBytes.
	writeback, startSync int64
	pool                 []pooled
	// recycled counts rotations that reused a pooled file, created those
	// that created a fresh one (statistics for tests and benchmarks).
	recycled, created uint64

	files []*jfile
	// ents holds ops base .. base+len(ents)-1. With no entries, the next
	// append must be op base, unless open is set (a fresh journal takes
	// any op).
	base     uint64
	ents     []slot
	open     bool
	prevLink Uint128 // link of op base-1, zero when unknown
	// discarded: ops up to here were given up by DiscardPrefix or were
	// never in this journal; the metadata slot count is measured from it.
	discarded uint64

	synced   uint64 // every op <= synced is durable
	gen      uint64 // bumped by truncation, invalidates older sync tickets
	dirGen   uint64 // bumped by each name change in dir
	dirSync  uint64 // dirGen as of the last completed directory sync
	failed   error
	hdrs     []byte
	marks    []byte
	batch    vfs.Batch
	readBuf  []byte
	recovery *Recovery
}

type jfile struct {
	name  string
	path  string
	f     vfs.File
	first uint64 // first op from the header or the name; 0 unknown
	size  int64  // end of the journal's data in the file
	// phys is the file's size on disk: beyond size when a recycled file
	// still holds stale bytes of an earlier incarnation after its data.
	phys   int64
	writes uint64 // bumped by each write
	clean  uint64 // writes as of the last completed sync
	// hinted is the offset below which data was handed to a sync or a
	// writeback hint (WritebackBytes); syncStarted the one below which it
	// was handed to a sync or a background fdatasync (StartSyncBytes).
	hinted, syncStarted int64
}

// stamp is what records written into f carry in their file field: the
// partition file's first op (its name), 0 in the metadata journal.
func (f *jfile) stamp() uint64 {
	if f.name == MetadataFile {
		return 0
	}
	return f.first
}

type slot struct {
	file   *jfile
	off    int64
	length uint32
	entry  Uint128
	link   Uint128
	region *region // non-nil while the op is faulty
}

// region is a run of faulty ops found by recovery, repairable in place
// when it lies in one file.
type region struct {
	file       *jfile // nil: the damage spans files or has no bytes
	start, end int64
	from, to   uint64
	cursor     int64
	next       uint64
	endLink    Uint128 // prev link of the first good record after the run
}

// pooled is a retired partition file waiting in the recycle pool.
type pooled struct {
	path  string
	maxOp uint64 // no record in the file has a higher op
}

// MetadataFile is the metadata journal's file name.
const MetadataFile = "journal.wal"

// OpenMetadata opens (creating if needed) the metadata journal
// dir/journal.wal and recovers it.
func OpenMetadata(fsys vfs.FS, dir string, opts MetadataOptions) (*Journal, *Recovery, error) {
	j := &Journal{fs: fsys, dir: dir, kind: kindMetadata,
		slots: opts.Slots, margin: opts.CheckpointMargin, maxEntry: opts.MaxEntry,
		beforeCut: opts.BeforeCut}
	if j.slots == 0 {
		j.slots = DefaultSlots
	}
	if j.margin == 0 {
		j.margin = DefaultCheckpointMargin
	}
	if j.maxEntry == 0 {
		j.maxEntry = DefaultMaxEntry
	}
	if j.slots <= 0 || j.margin <= 0 || j.margin >= j.slots || j.maxEntry <= 0 {
		return nil, nil, fmt.Errorf("journal: invalid metadata options %+v", opts)
	}
	if err := j.openFiles(); err != nil {
		return nil, nil, err
	}
	return j.finishOpen()
}

// OpenPartition opens (creating if needed) a partition prepare journal in
// dir and recovers it. Ops at or below the last DiscardPrefix that share a
// file with kept ops are still on disk and come back as held; the caller
// calls DiscardPrefix(checkpoint op) again after opening.
func OpenPartition(fsys vfs.FS, dir string, opts PartitionOptions) (*Journal, *Recovery, error) {
	j := &Journal{fs: fsys, dir: dir, kind: kindPartition,
		budget: opts.Budget, fileSize: opts.FileSize, maxEntry: opts.MaxEntry,
		beforeCut: opts.BeforeCut, recycle: opts.RecycleFiles, writeback: opts.WritebackBytes,
		startSync: opts.StartSyncBytes}
	at := opts.CheckpointAt
	if j.budget == 0 {
		j.budget = DefaultBudget
	}
	if j.fileSize == 0 {
		j.fileSize = DefaultFileSize
	}
	if j.maxEntry == 0 {
		j.maxEntry = DefaultMaxEntry
	}
	if at == 0 {
		at = DefaultCheckpointAt
	}
	if at <= 0 || at >= 1 || j.fileSize <= 0 || j.maxEntry <= 0 ||
		j.budget < 2*(int64(j.maxEntry)+RecordHeaderSize+FileHeaderSize) {
		return nil, nil, fmt.Errorf("journal: invalid partition options %+v (budget must hold two maximal entries)", opts)
	}
	j.ckptAt = int64(float64(j.budget) * at)
	if j.recycle == 0 {
		j.recycle = int(max(1, j.budget/j.fileSize))
	}
	j.recycle = max(0, j.recycle)
	if err := j.openFiles(); err != nil {
		return nil, nil, err
	}
	return j.finishOpen()
}

func (j *Journal) finishOpen() (*Journal, *Recovery, error) {
	rec, err := j.recover()
	if err == nil {
		err = j.trimPool()
	}
	if err != nil {
		j.closeFiles()
		return nil, nil, err
	}
	j.recovery = rec
	return j, rec, nil
}

// Recovery returns the report of the recovery done at open.
func (j *Journal) Recovery() *Recovery { return j.recovery }

func (j *Journal) closeFiles() {
	for _, f := range j.files {
		_ = f.f.Close()
	}
	j.files = nil
}

// Close closes the journal's files. It does not sync.
func (j *Journal) Close() error {
	var errs []error
	for _, f := range j.files {
		errs = append(errs, f.f.Close())
	}
	j.files = nil
	j.failed = fmt.Errorf("%w: closed", ErrFailed)
	return errors.Join(errs...)
}

func (j *Journal) fail(err error) error {
	if j.failed == nil {
		j.failed = err
	}
	return err
}

func (j *Journal) check() error {
	if j.failed != nil {
		return fmt.Errorf("%w: %v", ErrFailed, j.failed)
	}
	return nil
}

// First returns the first op held (present or faulty), Last the last; with
// no entries Last() == First()-1 and Next() is the op the next append
// must carry (0 for a fresh journal, which takes any op).
func (j *Journal) First() uint64 { return j.base }
func (j *Journal) Last() uint64  { return j.base + uint64(len(j.ents)) - 1 }
func (j *Journal) Next() uint64 {
	if j.open {
		return 0
	}
	return j.base + uint64(len(j.ents))
}

// Len returns how many ops the journal holds.
func (j *Journal) Len() int { return len(j.ents) }

// Synced returns the op up to which everything is durable.
func (j *Journal) Synced() uint64 { return j.synced }

// Bytes returns the bytes the journal's files hold.
func (j *Journal) Bytes() int64 {
	var n int64
	for _, f := range j.files {
		n += f.size
	}
	return n
}

// CheckpointDue reports whether the journal is close enough to its
// capacity that the node must checkpoint now (metadata: fewer than
// CheckpointMargin slots left; partition: CheckpointAt of the byte budget
// used).
func (j *Journal) CheckpointDue() bool {
	if j.kind == kindMetadata {
		return j.slots-j.retained() < j.margin
	}
	return j.Bytes() >= j.ckptAt
}

// retained is how many metadata slots are in use: ops above the discard
// point up to the last op.
func (j *Journal) retained() int {
	if len(j.ents) == 0 {
		return 0
	}
	return int(j.Last() - j.discarded)
}

// Faulty returns the faulty ops still awaiting repair, in order.
func (j *Journal) Faulty() []uint64 {
	var out []uint64
	for i, s := range j.ents {
		if s.region != nil {
			out = append(out, j.base+uint64(i))
		}
	}
	return out
}

// EntryInfo describes a held op.
type EntryInfo struct {
	Op       uint64
	Size     int
	Checksum Uint128
	Faulty   bool
}

// Info describes op.
func (j *Journal) Info(op uint64) (EntryInfo, bool) {
	s, ok := j.slot(op)
	if !ok {
		return EntryInfo{}, false
	}
	return EntryInfo{Op: op, Size: int(s.length), Checksum: s.entry, Faulty: s.region != nil}, true
}

func (j *Journal) slot(op uint64) (*slot, bool) {
	if len(j.ents) == 0 || op < j.base || op > j.Last() {
		return nil, false
	}
	return &j.ents[op-j.base], true
}

// Append writes entries, whose ops must follow Last() one by one, to the
// kernel with one vectored write per file touched. They are not durable
// until a sync (Sync, or SyncTo plus SyncDone) completes.
func (j *Journal) Append(entries ...Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	next := j.Next()
	if next == 0 {
		if entries[0].Op <= j.discarded {
			return fmt.Errorf("%w: op %d is not above the discard point %d", ErrOp, entries[0].Op, j.discarded)
		}
		next = entries[0].Op
	}
	need := int64(0)
	for i, e := range entries {
		if e.Op != next+uint64(i) {
			return fmt.Errorf("%w: entry %d has op %d, want %d", ErrOp, i, e.Op, next+uint64(i))
		}
		if e.size() > j.maxEntry {
			return fmt.Errorf("%w: op %d is %d bytes, limit %d", ErrTooLarge, e.Op, e.size(), j.maxEntry)
		}
		need += RecordHeaderSize + int64(e.size())
	}
	if j.kind == kindMetadata {
		if int(entries[len(entries)-1].Op-j.discarded) > j.slots {
			return fmt.Errorf("%w: op %d needs slot %d of %d (checkpoint at %d)", ErrFull,
				entries[len(entries)-1].Op, entries[len(entries)-1].Op-j.discarded, j.slots, j.discarded)
		}
	} else if j.Bytes()+need+FileHeaderSize > j.budget {
		return fmt.Errorf("%w: %d bytes held, %d more needed, budget %d", ErrFull, j.Bytes(), need, j.budget)
	}

	if cap(j.hdrs) < len(entries)*RecordHeaderSize {
		j.hdrs = make([]byte, len(entries)*RecordHeaderSize)
	}
	hdrs := j.hdrs[:len(entries)*RecordHeaderSize]
	prev := j.prevLink
	if len(j.ents) > 0 {
		prev = j.ents[len(j.ents)-1].link
	}
	type pending struct {
		jf       *jfile
		off, end int64
		bufs     [][]byte
		op       uint64 // the last record's op and link
		link     Uint128
	}
	var writes []pending
	var added []slot
	var cur *jfile
	if len(j.files) > 0 {
		cur = j.files[len(j.files)-1]
	}
	if j.kind == kindMetadata && cur.first == 0 {
		// A fresh metadata file learns its first op now, so that recovery
		// knows where the ops start even if the first record is lost.
		hdr := make([]byte, FileHeaderSize)
		encodeFileHeader(hdr, fileHeader{kind: kindMetadata, firstOp: entries[0].Op, prev: prev})
		writes = append(writes, pending{jf: cur, off: 0, end: FileHeaderSize, bufs: [][]byte{hdr}})
		cur.first = entries[0].Op
	}
	for i, e := range entries {
		if cur == nil || (j.kind == kindPartition && cur.size >= j.fileSize && cur.size > FileHeaderSize) {
			nf, hdr, err := j.newFile(e.Op, prev)
			if err != nil {
				return j.fail(err)
			}
			cur = nf
			writes = append(writes, pending{jf: nf, off: 0, end: FileHeaderSize, bufs: [][]byte{hdr}})
		}
		if len(writes) == 0 || writes[len(writes)-1].jf != cur || writes[len(writes)-1].end != cur.size {
			writes = append(writes, pending{jf: cur, off: cur.size, end: cur.size})
		}
		h := recordHeader{op: e.Op, offset: cur.size, length: uint32(e.size()), synced: j.synced, file: cur.stamp(),
			entry: Checksum(e.Parts...), prev: prev}
		hb := hdrs[i*RecordHeaderSize : (i+1)*RecordHeaderSize]
		encodeRecordHeader(hb, h)
		w := &writes[len(writes)-1]
		w.bufs = append(w.bufs, hb)
		w.bufs = append(w.bufs, e.Parts...)
		prev = h.link()
		added = append(added, slot{file: cur, off: cur.size, length: h.length, entry: h.entry, link: prev})
		cur.size += h.total()
		w.end = cur.size
		w.op, w.link = e.Op, prev
	}
	if n := 0; j.kind == kindPartition {
		for i := range writes {
			w := &writes[i]
			if w.end >= w.jf.phys || (i+1 < len(writes) && writes[i+1].jf == w.jf) {
				continue
			}
			// Stale bytes of a recycled file follow: end the data with an
			// end marker in the same write (see "Recycled files").
			if len(j.marks) < (n+1)*RecordHeaderSize {
				j.marks = append(j.marks, make([]byte, RecordHeaderSize)...)
			}
			m := j.marks[n*RecordHeaderSize : (n+1)*RecordHeaderSize]
			n++
			encodeRecordHeader(m, recordHeader{op: w.op, offset: w.end, synced: j.synced, prev: w.link, end: true,
				file: w.jf.stamp()})
			w.bufs = append(w.bufs, m)
		}
	}
	for _, w := range writes {
		n, err := w.jf.f.WritevAt(w.bufs, w.off)
		if err != nil {
			return j.fail(fmt.Errorf("journal: appending to %s: %w", w.jf.path, err))
		}
		w.jf.writes++
		w.jf.phys = max(w.jf.phys, w.off+int64(n))
		j.hint(w.jf, w.end)
	}
	if len(j.ents) == 0 {
		j.base = entries[0].Op
		j.open = false
	}
	j.ents = append(j.ents, added...)
	return nil
}

// hint starts the kernel's writeback of f's unsynced data up to end once
// WritebackBytes of it accumulated (from the page holding the first such
// byte). A hint cannot fail an append: its error would resurface at the
// next sync.
func (j *Journal) hint(f *jfile, end int64) {
	if j.writeback <= 0 || end-f.hinted < j.writeback {
		return
	}
	from := f.hinted &^ 4095
	_ = f.f.Writeback(from, end-from)
	f.hinted = end
	if j.startSync > 0 && end-f.syncStarted >= j.startSync {
		vfs.StartSync(f.f)
		f.syncStarted = end
	}
}

// newFile starts a partition file whose first record is op (or, for the
// metadata journal, its single file); it returns the header to write.
func (j *Journal) newFile(op uint64, prev Uint128) (*jfile, []byte, error) {
	if j.kind == kindMetadata {
		panic("journal: the metadata journal has no file to append to")
	}
	name := partitionFileName(op)
	path := filepath.Join(j.dir, name)
	jf := &jfile{name: name, path: path, first: op, size: FileHeaderSize}
	if i := j.poolPick(op); i >= 0 {
		// Recycle: rename a retired file to the new name and overwrite it
		// from offset 0. The directory sync of the next SyncTo makes the
		// rename durable before any op in the file is.
		p := j.pool[i]
		if _, err := j.fs.Stat(path); err == nil {
			return nil, nil, fmt.Errorf("journal: recycling %s: %s exists", p.path, path)
		}
		if err := j.fs.Rename(p.path, path); err != nil {
			return nil, nil, fmt.Errorf("journal: recycling %s as %s: %w", p.path, path, err)
		}
		j.pool = slices.Delete(j.pool, i, i+1)
		j.dirGen++
		f, err := j.fs.OpenFile(path, vfs.O_RDWR, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: opening recycled %s: %w", path, err)
		}
		phys, err := f.Size()
		if err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("journal: opening recycled %s: %w", path, err)
		}
		jf.f, jf.phys = f, phys
		j.recycled++
	} else {
		f, err := j.fs.OpenFile(path, vfs.O_RDWR|vfs.O_CREATE|vfs.O_EXCL, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("journal: creating %s: %w", path, err)
		}
		jf.f = f
		j.created++
		j.dirGen++
	}
	hdr := make([]byte, FileHeaderSize)
	encodeFileHeader(hdr, fileHeader{kind: kindPartition, firstOp: op, prev: prev})
	j.files = append(j.files, jf)
	return jf, hdr, nil
}

// poolPick returns the index of a pooled file that may become the file
// starting at op (every op it holds is below op, so none of its stale
// records can pass for this incarnation's), or -1.
func (j *Journal) poolPick(op uint64) int {
	for i, p := range j.pool {
		if p.maxOp < op {
			return i
		}
	}
	return -1
}

// retire takes a partition file out of the journal: into the recycle pool
// when there is room, otherwise removed. maxOp bounds the ops it holds.
// The caller syncs the directory.
func (j *Journal) retire(f *jfile, maxOp uint64) error {
	_ = f.f.Close()
	j.dirGen++
	name := recycleFileName(maxOp)
	path := filepath.Join(j.dir, name)
	if len(j.pool) < j.recycle && !slices.ContainsFunc(j.pool, func(p pooled) bool { return p.path == path }) {
		if err := j.fs.Rename(f.path, path); err != nil {
			return fmt.Errorf("journal: retiring %s: %w", f.path, err)
		}
		i, _ := slices.BinarySearchFunc(j.pool, maxOp, func(p pooled, op uint64) int { return cmp.Compare(p.maxOp, op) })
		j.pool = slices.Insert(j.pool, i, pooled{path: path, maxOp: maxOp})
		return nil
	}
	if err := j.fs.Remove(f.path); err != nil {
		return fmt.Errorf("journal: discarding %s: %w", f.path, err)
	}
	return nil
}

// trimPool, at open, removes pooled files beyond the recycle limit (all of
// them when recycling is off).
func (j *Journal) trimPool() error {
	if len(j.pool) <= j.recycle {
		return nil
	}
	for _, p := range j.pool[j.recycle:] {
		if err := j.fs.Remove(p.path); err != nil {
			return fmt.Errorf("journal: removing pooled %s: %w", p.path, err)
		}
	}
	j.pool = j.pool[:j.recycle]
	if err := j.fs.SyncDir(j.dir); err != nil {
		return fmt.Errorf("journal: syncing %s: %w", j.dir, err)
	}
	return nil
}

func partitionFileName(op uint64) string { return fmt.Sprintf("%020d.wal", op) }

// recycleFileName names a pooled file by the highest op it may hold.
func recycleFileName(maxOp uint64) string { return fmt.Sprintf("recycle-%020d.wal", maxOp) }

// SyncTicket is what SyncTo promises; hand it to SyncDone once the batch
// it was added to has been submitted without error.
type SyncTicket struct {
	op     uint64
	gen    uint64
	dirGen uint64
	files  []*jfile
	writes []uint64
}

// SyncTo adds to b the fdatasyncs (and the directory sync, after files were
// created or removed) that make every append so far durable, and returns
// the ticket for SyncDone. It adds nothing when all is durable already.
// Between SyncTo and the batch's submission the journal must not be
// truncated or compacted (that may close files the batch holds); appends
// are fine (the ticket covers only what came before it).
func (j *Journal) SyncTo(b *vfs.Batch) SyncTicket {
	t := SyncTicket{op: j.Last(), gen: j.gen, dirGen: j.dirGen}
	if len(j.ents) == 0 {
		t.op = j.synced
	}
	for _, f := range j.files {
		if f.writes != f.clean {
			f.hinted = max(f.hinted, f.size)
			f.syncStarted = max(f.syncStarted, f.size)
			b.Datasync(f.f)
			t.files = append(t.files, f)
			t.writes = append(t.writes, f.writes)
		}
	}
	if j.dirGen != j.dirSync {
		b.SyncDir(j.dir)
	}
	return t
}

// SyncDone records that the syncs of t completed. Calling it for a batch
// that failed would be a lie about durability; the caller treats a failed
// batch as fatal for the journal instead (see vfs: a failed fdatasync
// leaves the data's fate unknown).
func (j *Journal) SyncDone(t SyncTicket) {
	for i, f := range t.files {
		if f.clean < t.writes[i] {
			f.clean = t.writes[i]
		}
	}
	if t.dirGen > j.dirSync {
		j.dirSync = t.dirGen
	}
	if t.gen == j.gen && t.op > j.synced {
		j.synced = t.op
		j.markSynced()
	}
}

// markSynced writes a sync marker after a partition journal's last record
// when a sync just covered every record (nothing was appended since): an
// end marker whose synced field is that record's op. Without it the
// records of the last synced group carry no promise that they were synced
// (each record's synced field names only what was durable before it was
// written), so recovery would have to read damage among them as a torn
// tail and cut the intact records after it. The marker is not synced
// itself and costs no sync: the next append overwrites it (as any end
// marker), and a crash that loses it leaves the journal as it was before
// (see "Sync markers" in the package doc). A failed write is ignored: the
// marker is evidence for recovery, never needed for durability.
func (j *Journal) markSynced() {
	if j.kind != kindPartition || j.failed != nil || len(j.ents) == 0 || len(j.files) == 0 || j.synced != j.Last() {
		return
	}
	last := j.ents[len(j.ents)-1]
	cur := j.files[len(j.files)-1]
	if last.file != cur || last.region != nil || last.off+RecordHeaderSize+int64(last.length) != cur.size {
		return
	}
	if cur.size >= j.fileSize {
		// The next append starts a new file and would never overwrite
		// the marker, whose torn remains (after a power loss) would read
		// as damage between two files.
		return
	}
	if len(j.marks) < RecordHeaderSize {
		j.marks = append(j.marks, make([]byte, RecordHeaderSize-len(j.marks))...)
	}
	m := j.marks[:RecordHeaderSize]
	encodeRecordHeader(m, recordHeader{op: j.Last(), offset: cur.size, synced: j.synced, prev: last.link, end: true,
		file: cur.stamp()})
	if _, err := cur.f.WriteAt(m, cur.size); err == nil {
		cur.phys = max(cur.phys, cur.size+RecordHeaderSize)
	}
}

// Sync makes every append so far durable (fdatasync of the files written,
// fsync of the directory after name changes), in one submission.
func (j *Journal) Sync() error {
	if err := j.check(); err != nil {
		return err
	}
	j.batch.Reset()
	t := j.SyncTo(&j.batch)
	if j.batch.Empty() {
		j.SyncDone(t)
		return nil
	}
	err := j.fs.Submit(&j.batch)
	j.batch.Reset()
	if err != nil {
		return j.fail(fmt.Errorf("journal: sync: %w", err))
	}
	j.SyncDone(t)
	return nil
}

// Read returns op's entry, checked against its checksum. The slice is the
// caller's.
func (j *Journal) Read(op uint64) ([]byte, error) {
	s, ok := j.slot(op)
	if !ok {
		return nil, fmt.Errorf("%w: %d (holds %d..%d)", ErrNotFound, op, j.First(), j.Last())
	}
	if s.region != nil {
		return nil, fmt.Errorf("%w: %d", ErrFaulty, op)
	}
	buf := make([]byte, RecordHeaderSize+int(s.length))
	if n, err := s.file.f.ReadAt(buf, s.off); n != len(buf) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("journal: reading op %d from %s: %w", op, s.file.path, err)
	}
	h, err := decodeRecordHeader(buf, s.off, j.maxEntry)
	if err != nil || h.end || h.op != op || h.length != s.length || h.entry != s.entry {
		return nil, fmt.Errorf("%w: op %d header in %s at %d: %v", ErrCorrupt, op, s.file.path, s.off, err)
	}
	entry := buf[RecordHeaderSize:]
	if Checksum(entry) != s.entry {
		return nil, fmt.Errorf("%w: op %d in %s at %d", ErrCorrupt, op, s.file.path, s.off)
	}
	return entry, nil
}

// Iterate calls fn for every op from `from` to Last() in order, stopping at
// the first error (faulty and corrupt ops are errors: the caller decides).
func (j *Journal) Iterate(from uint64, fn func(op uint64, entry []byte) error) error {
	if from < j.First() {
		from = j.First()
	}
	for op := from; len(j.ents) > 0 && op <= j.Last(); op++ {
		e, err := j.Read(op)
		if err != nil {
			return err
		}
		if err := fn(op, e); err != nil {
			return err
		}
	}
	return nil
}

// TruncateFrom removes op and every later op (view-change divergence),
// durably before it returns: later files are removed and the directory
// synced, the file holding the cut is shortened and synced. It returns the
// first op actually removed: when the ops right below op are faulty they go
// too, because a cut must fall on a known record boundary and nothing but
// a repair could ever fill their place. The caller keeps treating those ops
// as faulty (possibly prepared), not as never seen.
func (j *Journal) TruncateFrom(op uint64) (uint64, error) {
	if err := j.check(); err != nil {
		return op, err
	}
	if len(j.ents) == 0 || op > j.Last() {
		return op, nil
	}
	if op < j.base {
		op = j.base
	}
	for op > j.base && j.ents[op-1-j.base].region != nil {
		op--
	}
	j.gen++
	if j.synced >= op {
		j.synced = op - 1
	}
	var cutFile *jfile
	var cutOff int64
	if op > j.base {
		g := j.ents[op-1-j.base]
		cutFile, cutOff = g.file, g.off+RecordHeaderSize+int64(g.length)
	} else if j.kind == kindMetadata {
		cutFile, cutOff = j.files[0], FileHeaderSize
	}
	var keep, drop []*jfile
	for _, f := range j.files {
		if cutFile == nil || (f != cutFile && f.first > cutFile.first) {
			drop = append(drop, f)
		} else {
			keep = append(keep, f)
		}
	}
	for i := len(drop) - 1; i >= 0; i-- {
		f := drop[i]
		_ = f.f.Close()
		if err := j.fs.Remove(f.path); err != nil {
			return op, j.fail(fmt.Errorf("journal: truncating: %w", err))
		}
		j.dirGen++
	}
	j.files = keep
	if len(drop) > 0 {
		// The later files must be durably gone before the cut: a crash
		// that kept the cut but not their removal would leave records
		// whose sync promises cover the ops the cut removed, and recovery
		// would report those ops as corruption.
		if err := j.fs.SyncDir(j.dir); err != nil {
			return op, j.fail(fmt.Errorf("journal: truncating: %w", err))
		}
		j.dirSync = j.dirGen
	}
	if cutFile != nil && cutOff < cutFile.size {
		if err := cutFile.f.Truncate(cutOff); err != nil {
			return op, j.fail(fmt.Errorf("journal: truncating %s: %w", cutFile.path, err))
		}
		cutFile.size, cutFile.phys = cutOff, cutOff
		cutFile.writes++
	}
	j.ents = j.ents[:op-j.base]
	return op, j.Sync()
}

// Repair writes op's entry, fetched from a peer, over the damage recovery
// found. Faulty ops of one run are repaired in order, each written where the
// previous one ended; the run must end exactly where the next good record
// begins, and the last repaired record must chain to it. When the entries do
// not fit (the damage spans files, the peer's entries differ from what was
// written), Repair returns ErrRepair and the caller truncates from the first
// faulty op and appends again.
func (j *Journal) Repair(op uint64, parts ...[]byte) error {
	if err := j.check(); err != nil {
		return err
	}
	s, ok := j.slot(op)
	if !ok || s.region == nil {
		return fmt.Errorf("%w: op %d is not faulty", ErrRepair, op)
	}
	rg := s.region
	if rg.file == nil {
		return fmt.Errorf("%w: damage of ops %d..%d spans files", ErrRepair, rg.from, rg.to)
	}
	if op != rg.next {
		return fmt.Errorf("%w: op %d repaired before op %d", ErrRepair, op, rg.next)
	}
	e := Entry{Op: op, Parts: parts}
	if e.size() > j.maxEntry {
		return fmt.Errorf("%w: op %d is %d bytes", ErrTooLarge, op, e.size())
	}
	prev := j.prevLink
	if op > j.base {
		prev = j.ents[op-1-j.base].link
	}
	h := recordHeader{op: op, offset: rg.cursor, length: uint32(e.size()), synced: j.synced, file: rg.file.stamp(),
		entry: Checksum(parts...), prev: prev}
	end := rg.cursor + h.total()
	last := op == rg.to
	if end > rg.end || (last && end != rg.end) {
		return fmt.Errorf("%w: op %d needs %d bytes at %d, the damaged span ends at %d", ErrRepair, op, h.total(), rg.cursor, rg.end)
	}
	if last && !rg.endLink.isZero() && h.link() != rg.endLink {
		return fmt.Errorf("%w: repaired op %d does not chain to op %d", ErrRepair, op, op+1)
	}
	hdr := make([]byte, RecordHeaderSize)
	encodeRecordHeader(hdr, h)
	bufs := append([][]byte{hdr}, parts...)
	if _, err := rg.file.f.WritevAt(bufs, rg.cursor); err != nil {
		return j.fail(fmt.Errorf("journal: repairing op %d: %w", op, err))
	}
	rg.file.writes++
	*s = slot{file: rg.file, off: rg.cursor, length: h.length, entry: h.entry, link: h.link()}
	rg.cursor = end
	rg.next++
	return nil
}

// DiscardPrefix gives up every op up to and including through, after a
// checkpoint covering them is durable (recorded in the superblock).
// Partition journals retire the files that hold only such ops (into the
// recycle pool, or deleted when it is full; see "Recycled files" in the
// package doc), then sync the directory; the metadata journal rewrites
// journal.wal with the ops it keeps (temp file, fsync, rename, directory
// fsync). Ops above through must not be faulty in
// the metadata journal (repair or truncate them first).
func (j *Journal) DiscardPrefix(through uint64) error {
	if err := j.check(); err != nil {
		return err
	}
	if through <= j.discarded && (len(j.ents) == 0 || through < j.base) {
		return nil
	}
	if j.kind == kindMetadata {
		return j.rewriteMetadata(through)
	}
	var keep []*jfile
	for i, f := range j.files {
		nextFirst := uint64(0)
		if i+1 < len(j.files) {
			nextFirst = j.files[i+1].first
		}
		whole := (i+1 < len(j.files) && nextFirst <= through+1) || (len(j.ents) == 0 || through >= j.Last())
		if whole {
			// Every op in the file is below the next file's first op, or
			// (the last file) at most the last op or through; stale
			// records of earlier incarnations are lower still.
			maxOp := max(through, j.Last())
			if i+1 < len(j.files) {
				maxOp = nextFirst - 1
			}
			if err := j.retire(f, maxOp); err != nil {
				return j.fail(err)
			}
			continue
		}
		keep = append(keep, f)
	}
	j.files = keep
	j.dropThrough(through)
	return j.Sync()
}

// dropThrough removes ops <= through from the index.
func (j *Journal) dropThrough(through uint64) {
	if through > j.discarded {
		j.discarded = through
	}
	if len(j.ents) == 0 {
		if j.base <= through {
			j.base = through + 1
			j.prevLink = Uint128{}
		}
		return
	}
	if through < j.base {
		return
	}
	if through >= j.Last() {
		j.ents = j.ents[:0]
		j.base = through + 1
		j.prevLink = Uint128{}
		return
	}
	n := through - j.base + 1
	j.prevLink = j.ents[n-1].link
	j.ents = slices.Clone(j.ents[n:])
	j.base = through + 1
}
