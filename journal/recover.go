package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/zeebo/xxh3"
)

// Recovery reports what opening a journal found.
type Recovery struct {
	// First and Last are the ops held after recovery (Last < First when
	// none), faulty ones included.
	First, Last uint64
	// Torn describes the tail that was cut off, nil if the journal ended
	// cleanly. A torn tail is normal after a crash: it held only writes no
	// sync had covered.
	Torn *Torn
	// Faulty lists damage in the middle: ops that were durable and are now
	// unreadable. They stay in the journal as faulty (Read returns
	// ErrFaulty) until repaired from a peer (Repair) or truncated.
	Faulty []Faulty
	// HeadersRewritten names files whose damaged file header was rebuilt
	// (from the file name and the records; nothing is lost).
	HeadersRewritten []string
}

// Torn is a cut-off tail.
type Torn struct {
	File    string   // file where the damage began
	Offset  int64    // where that file was cut
	Bytes   int64    // bytes discarded over all files
	Removed []string // later files removed whole
	// Dropped counts intact records found after the damage and discarded
	// with it: none of them promised that the damaged data was synced.
	Dropped int
}

// Faulty is one run of damaged ops. From > To when the damaged bytes held
// no op (junk between two consecutive records). From == 0 means the start
// is unknown (the metadata file header and the first records were lost).
type Faulty struct {
	From, To    uint64
	File        string
	Offset, End int64
	// Repairable: the run lies in one file and can be rewritten in place
	// by Repair.
	Repairable bool
}

const readWindow = 1 << 20

// reader reads a file through a window so that scanning many small
// records costs few reads.
type reader struct {
	f    vfs.File
	size int64
	buf  []byte
	off  int64
	n    int
}

func (r *reader) at(off int64, n int) ([]byte, error) {
	if off >= r.off && off+int64(n) <= r.off+int64(r.n) {
		return r.buf[off-r.off : off-r.off+int64(n)], nil
	}
	if n > len(r.buf) {
		panic(fmt.Sprintf("journal: read of %d bytes exceeds the %d-byte window", n, len(r.buf)))
	}
	m := int(min(int64(len(r.buf)), r.size-off))
	if m < n {
		return nil, io.ErrUnexpectedEOF
	}
	got, err := r.f.ReadAt(r.buf[:m], off)
	if got < m {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		r.n = 0
		return nil, err
	}
	r.off, r.n = off, m
	return r.buf[:n], nil
}

func (r *reader) hash(off, n int64) (Uint128, error) {
	h := xxh3.New128()
	for n > 0 {
		c := min(n, int64(len(r.buf)))
		b, err := r.at(off, int(c))
		if err != nil {
			return Uint128{}, err
		}
		_, _ = h.Write(b)
		off += c
		n -= c
	}
	s := h.Sum128()
	return Uint128{Hi: s.Hi, Lo: s.Lo}, nil
}

// tryRecord returns the record starting at off if it is intact.
func (r *reader) tryRecord(off int64, maxEntry int) (recordHeader, bool, error) {
	return r.recordAt(off, maxEntry, false)
}

// misplaced returns the record starting at off if a misdirected write put
// it there: intact, but written for another offset (which tryRecord
// rejects).
func (r *reader) misplaced(off int64, maxEntry int) (recordHeader, bool, error) {
	return r.recordAt(off, maxEntry, true)
}

// recordAt reads the record starting at off and reports whether it is
// intact: written for off, or (elsewhere) for the other offset its header
// names.
func (r *reader) recordAt(off int64, maxEntry int, elsewhere bool) (recordHeader, bool, error) {
	if off+RecordHeaderSize > r.size {
		return recordHeader{}, false, nil
	}
	b, err := r.at(off, RecordHeaderSize)
	if err != nil {
		return recordHeader{}, false, err
	}
	meant := off
	if elsewhere {
		if meant = int64(binary.LittleEndian.Uint64(b[32:])); meant == off {
			return recordHeader{}, false, nil
		}
	}
	h, err := decodeRecordHeader(b, meant, maxEntry)
	if err != nil || off+h.total() > r.size {
		return h, false, nil
	}
	if h.end {
		return h, true, nil
	}
	sum, err := r.hash(off+RecordHeaderSize, int64(h.length))
	if err != nil {
		return h, false, err
	}
	return h, sum == h.entry, nil
}

// probe finds the first intact record (or end marker) starting at or after
// from, by looking for the record magic (which sits 16 bytes into a
// header).
func (r *reader) probe(from int64, maxEntry int) (int64, recordHeader, bool, error) {
	return r.probeWith(from, maxEntry, r.tryRecord)
}

// probeWith is probe with try deciding what a candidate is.
func (r *reader) probeWith(from int64, maxEntry int, try func(int64, int) (recordHeader, bool, error)) (int64, recordHeader, bool, error) {
	pos := from + 16
	for pos+4 <= r.size {
		n := int(min(int64(len(r.buf)), r.size-pos))
		chunk, err := r.at(pos, n)
		if err != nil {
			return 0, recordHeader{}, false, err
		}
		// tryRecord moves the reader's window; search a copy.
		window := bytes.Clone(chunk)
		for i := 0; ; {
			k := bytes.Index(window[i:], []byte(recordMagic))
			if k < 0 {
				break
			}
			cand := pos + int64(i+k) - 16
			h, ok, err := try(cand, maxEntry)
			if err != nil {
				return 0, recordHeader{}, false, err
			}
			if ok {
				return cand, h, true, nil
			}
			i += k + 1
		}
		if pos+int64(n) >= r.size {
			break
		}
		pos += int64(n) - 3
	}
	return 0, recordHeader{}, false, nil
}

type itemKind int

const (
	itemStart itemKind = iota // a file begins
	itemRecord
	itemDamage
	// itemMarker: the end marker that ends a partition file's data; its
	// synced field is a sync promise like a record's (see "Sync markers").
	itemMarker
)

type item struct {
	kind     itemKind
	fi       int
	h        recordHeader
	off, end int64
}

type fileScan struct {
	hdr   fileHeader
	hdrOK bool
	// staleHdr: a partition file whose header is intact but belongs to an
	// earlier incarnation (first op below the name's): a recycled file
	// renamed for a rotation whose new header never reached the disk.
	staleHdr bool
	// end is where the file's data ends: its size, or an end marker.
	end int64
}

// scan splits one file into intact records and damaged spans. In a
// partition file it also applies the stale-record rule (see "Recycled
// files" in the package doc): a record whose op is below the file's first
// op, or not above an op already found in the file, is left over from an
// earlier incarnation of a recycled file. It is never an item: its bytes
// count as damage, so it is neither an entry nor, when recovery looks past
// a damaged span, evidence of later data (a candidate or a sync promise).
// An end marker right after a record, chaining to it, ends the file's data
// cleanly; anywhere else it is damage too.
func (j *Journal) scan(fi int, jf *jfile, buf []byte) (fileScan, []item, error) {
	var fsc fileScan
	r := &reader{f: jf.f, size: jf.size, buf: buf}
	items := []item{{kind: itemStart, fi: fi}}
	part := j.kind == kindPartition
	if jf.size >= FileHeaderSize {
		b, err := r.at(0, FileHeaderSize)
		if err != nil {
			return fsc, nil, err
		}
		fsc.hdr, err = decodeFileHeader(b)
		fsc.hdrOK = err == nil && fsc.hdr.kind == j.kind &&
			(j.kind != kindPartition || fsc.hdr.firstOp == jf.first)
		fsc.staleHdr = err == nil && part && fsc.hdr.kind == kindPartition && fsc.hdr.firstOp < jf.first
	}
	var (
		seen bool   // a record of this file was found
		hi   uint64 // the highest op found in this file
	)
	usable := func(h recordHeader) bool {
		return !h.end && (!part || (h.op >= jf.first && (!seen || h.op > hi) && (h.file == 0 || h.file == jf.first)))
	}
	// ends reports whether the end marker h at pos ends this file's data:
	// it belongs to this incarnation, follows the records found (right
	// after the last one and chaining to it, or, after damage, naming a
	// later op) and no record of this incarnation follows it. A marker
	// with records of this incarnation after it is an older one whose
	// overwriting record was lost: damage, not an end. So is a marker
	// followed by a misplaced record (or marker) of this incarnation
	// naming a later op: the append that should have overwritten it was
	// misdirected there, and was synced (possibly acknowledged) before
	// the marker after it was lost (stack simulator seed 600237).
	ends := func(h recordHeader, pos int64, prev recordHeader, havePrev bool) (bool, error) {
		if !h.end || !part || h.file != jf.first {
			return false, nil
		}
		if havePrev {
			if h.op != prev.op || h.prev != prev.link() {
				return false, nil
			}
		} else if h.op < jf.first || (seen && h.op <= hi) {
			return false, nil
		}
		for from := pos + 1; ; {
			c, ch, found, err := r.probe(from, j.maxEntry)
			if err != nil {
				return false, err
			}
			if !found {
				break
			}
			if usable(ch) && ch.op > h.op {
				return false, nil
			}
			// A later marker of this incarnation naming a later op: this
			// one was overwritten by the append of that op, which a
			// misdirected write put elsewhere (the intended range kept
			// this marker); the later marker promises the op was synced.
			if ch.end && ch.file == jf.first && ch.op > h.op {
				return false, nil
			}
			from = c + 1
		}
		for from := pos + 1; ; {
			c, ch, found, err := r.probeWith(from, j.maxEntry, r.misplaced)
			if err != nil || !found {
				return err == nil, err
			}
			if ch.file == jf.first && ch.op > h.op {
				return false, nil
			}
			from = c + 1
		}
	}
	var prev recordHeader // the record that ends at pos, if havePrev
	havePrev := false
	pos := int64(FileHeaderSize)
	fsc.end = jf.size
	for pos < jf.size {
		h, ok, err := r.tryRecord(pos, j.maxEntry)
		if err != nil {
			return fsc, nil, err
		}
		if ok && h.end {
			end, err := ends(h, pos, prev, havePrev)
			if err != nil {
				return fsc, nil, err
			}
			if end {
				items = append(items, item{kind: itemMarker, fi: fi, h: h, off: pos, end: pos + RecordHeaderSize})
				fsc.end = pos
				break
			}
		}
		if ok && usable(h) {
			items = append(items, item{kind: itemRecord, fi: fi, h: h, off: pos, end: pos + h.total()})
			seen, hi = true, max(hi, h.op)
			prev, havePrev = h, true
			pos += h.total()
			continue
		}
		next := jf.size
		for from := pos + 1; ; {
			c, ch, found, err := r.probe(from, j.maxEntry)
			if err != nil {
				return fsc, nil, err
			}
			if !found {
				break
			}
			if usable(ch) {
				next = c
				break
			}
			if ch.end {
				end, err := ends(ch, c, recordHeader{}, false)
				if err != nil {
					return fsc, nil, err
				}
				if end {
					// A sync marker after damage: the next pass of the
					// loop takes it as the end.
					next = c
					break
				}
			}
			from = c + 1
		}
		items = append(items, item{kind: itemDamage, fi: fi, off: pos, end: next})
		havePrev = false
		pos = next
	}
	return fsc, items, nil
}

// openFiles opens the journal's files (creating the metadata file).
func (j *Journal) openFiles() error {
	if err := vfs.MkdirAllSync(j.fs, j.dir, 0o755); err != nil {
		return fmt.Errorf("journal: creating %s: %w", j.dir, err)
	}
	var names []string
	if j.kind == kindMetadata {
		path := filepath.Join(j.dir, MetadataFile)
		if err := j.fs.Remove(path + ".tmp"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if _, err := j.fs.Stat(path); errors.Is(err, fs.ErrNotExist) {
			hdr := make([]byte, FileHeaderSize)
			encodeFileHeader(hdr, fileHeader{kind: kindMetadata})
			if err := vfs.WriteFileAtomic(j.fs, path, hdr, 0o644); err != nil {
				return fmt.Errorf("journal: creating %s: %w", path, err)
			}
		} else if err != nil {
			return err
		}
		names = []string{MetadataFile}
	} else {
		ents, err := j.fs.ReadDir(j.dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if _, ok := parsePartitionFileName(e.Name()); ok && !e.IsDir() {
				names = append(names, e.Name())
			}
			if op, ok := parseRecycleFileName(e.Name()); ok && !e.IsDir() {
				j.pool = append(j.pool, pooled{path: filepath.Join(j.dir, e.Name()), maxOp: op})
			}
		}
		sort.Strings(names)
	}
	for _, name := range names {
		path := filepath.Join(j.dir, name)
		f, err := j.fs.OpenFile(path, vfs.O_RDWR, 0)
		if err != nil {
			j.closeFiles()
			return fmt.Errorf("journal: opening %s: %w", path, err)
		}
		size, err := f.Size()
		if err != nil {
			_ = f.Close()
			j.closeFiles()
			return err
		}
		jf := &jfile{name: name, path: path, f: f, size: size, hinted: size, syncStarted: size} // what a crash left is not hinted again
		if op, ok := parsePartitionFileName(name); ok {
			jf.first = op
		}
		j.files = append(j.files, jf)
	}
	return nil
}

// parseRecycleFileName recognises a pooled file. Recovery never reads one
// as log: it goes back to the pool (or is removed beyond the limit).
func parseRecycleFileName(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, "recycle-")
	if !ok {
		return 0, false
	}
	digits, ok = strings.CutSuffix(digits, ".wal")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	op, err := strconv.ParseUint(digits, 10, 64)
	return op, err == nil
}

func parsePartitionFileName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, ".wal")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	op, err := strconv.ParseUint(digits, 10, 64)
	return op, err == nil
}

// recover scans every file, classifies damage, cuts torn tails, rebuilds
// damaged file headers, syncs what remains and builds the index.
func (j *Journal) recover() (*Recovery, error) {
	rep := &Recovery{}
	var scans []fileScan
	var flat []item
	var largest int64
	for _, jf := range j.files {
		largest = max(largest, jf.size)
	}
	buf := make([]byte, min(readWindow, max(largest, RecordHeaderSize)))
	for fi, jf := range j.files {
		fsc, items, err := j.scan(fi, jf, buf)
		if err != nil {
			return nil, fmt.Errorf("journal: scanning %s: %w", jf.path, err)
		}
		scans = append(scans, fsc)
		flat = append(flat, items...)
	}
	for fi, jf := range j.files {
		// Bytes after an end marker are stale leftovers of a recycled
		// file: not the journal's, but the next append overwrites them.
		jf.phys = jf.size
		jf.size = scans[fi].end
	}

	var (
		have     bool // an expectation for the next op exists
		last     uint64
		lastLink Uint128
		ents     []slot
		base     uint64
		prevLink Uint128
		// prevUnknown: the link before base was lost with a damaged header.
		prevUnknown bool
	)
	if len(j.files) > 0 {
		s0 := scans[0]
		switch {
		case j.kind == kindPartition:
			have, last, base = true, j.files[0].first-1, j.files[0].first
			if s0.hdrOK {
				lastLink = s0.hdr.prev
			} else {
				// The link before the first op is lost with the header: a
				// faulty run at the very start cannot be chained again.
				prevUnknown = true
			}
		case s0.hdrOK && s0.hdr.firstOp != 0:
			have, last, base, lastLink = true, s0.hdr.firstOp-1, s0.hdr.firstOp, s0.hdr.prev
		}
		prevLink = lastLink
	}
	acceptable := func(it item) bool {
		return it.kind == itemRecord &&
			(!have || (it.h.op == last+1 && (lastLink.isZero() || it.h.prev == lastLink)))
	}
	// A run of missing ops cannot be longer than the bytes could hold; a
	// record claiming otherwise is not a plausible continuation.
	var totalBytes int64
	for _, jf := range j.files {
		totalBytes += jf.size
	}
	maxGap := uint64(totalBytes/RecordHeaderSize) + 1
	removed := map[int]bool{}
	var cut *item // torn: where files[cut.fi] is cut (cut.off)
	for k := 0; k < len(flat); k++ {
		it := flat[k]
		if it.kind == itemMarker && have && it.h.op == last {
			continue // the clean end of a file's data
		}
		if it.kind == itemStart {
			if it.fi == 0 || j.kind != kindPartition || !have || j.files[it.fi].first == last+1 {
				continue
			}
		} else if acceptable(it) {
			if !have {
				have, base, prevLink = true, it.h.op, it.h.prev
			}
			ents = append(ents, slot{file: j.files[it.fi], off: it.off, length: it.h.length, entry: it.h.entry, link: it.h.link()})
			last, lastLink = it.h.op, it.h.link()
			continue
		}

		// Damage at k (a damaged span, a record that does not follow, or a
		// file that does not start where the previous one ended). Look
		// ahead for the next record that could continue the log and for
		// the highest sync promise made after the damage.
		start := it.off
		if it.kind == itemStart {
			start = FileHeaderSize
		}
		cand, marker := -1, -1
		var maxSynced uint64
		for x := k; x < len(flat); x++ {
			c := flat[x]
			if c.kind == itemMarker {
				maxSynced = max(maxSynced, c.h.synced)
				if cand < 0 && marker < 0 && have && c.h.op > last && c.h.op-last <= maxGap {
					marker = x
				}
				continue
			}
			if c.kind != itemRecord {
				continue
			}
			maxSynced = max(maxSynced, c.h.synced)
			if cand < 0 && (!have || (c.h.op > last+1 && c.h.op-last <= maxGap) ||
				(x != k && c.h.op == last+1 && (lastLink.isZero() || c.h.prev == lastLink))) {
				cand = x
			}
		}
		if cand >= 0 && (!have || maxSynced > last) {
			// Corruption in the middle: a later record promises that
			// data at or beyond the damage had been synced.
			c := flat[cand]
			f := Faulty{From: last + 1, To: c.h.op - 1, File: j.files[it.fi].path, Offset: start, End: c.off}
			if !have {
				f.From = 0
			}
			var rg *region
			if it.kind != itemStart && it.fi == c.fi && c.off > start && f.From != 0 && f.From <= f.To &&
				!(prevUnknown && f.From == base) {
				f.Repairable = true
				rg = &region{file: j.files[it.fi], start: start, end: c.off, from: f.From, to: f.To,
					cursor: start, next: f.From, endLink: c.h.prev}
			} else if f.From != 0 && f.From <= f.To {
				rg = &region{from: f.From, to: f.To, next: f.From}
			}
			if f.From != 0 {
				for op := f.From; op <= f.To; op++ {
					ents = append(ents, slot{region: rg})
				}
			} else {
				base, prevLink = c.h.op, c.h.prev
			}
			rep.Faulty = append(rep.Faulty, f)
			have, last, lastLink = true, c.h.op-1, c.h.prev
			k = cand - 1
			continue
		}

		if cand < 0 && marker >= 0 && flat[marker].h.synced >= flat[marker].h.op {
			// Corruption of the last records: the sync marker after
			// them promises they had been synced (ops last+1 up to the
			// marker's op, the last of which it chains to).
			c := flat[marker]
			f := Faulty{From: last + 1, To: c.h.op, File: j.files[it.fi].path, Offset: start, End: c.off}
			rg := &region{from: f.From, to: f.To, next: f.From}
			if it.kind != itemStart && it.fi == c.fi && c.off > start && !(prevUnknown && f.From == base) {
				f.Repairable = true
				rg = &region{file: j.files[it.fi], start: start, end: c.off, from: f.From, to: f.To,
					cursor: start, next: f.From, endLink: c.h.prev}
			}
			for op := f.From; op <= f.To; op++ {
				ents = append(ents, slot{region: rg})
			}
			// The next append chains to the last faulty op, whose link
			// the marker names.
			ents[len(ents)-1].link = c.h.prev
			rep.Faulty = append(rep.Faulty, f)
			have, last, lastLink = true, c.h.op, c.h.prev
			k = marker
			continue
		}

		// Torn tail: nothing after the damage promises it was synced, so
		// it and everything after it held unsynced writes only.
		cut = &item{fi: it.fi, off: start}
		t := &Torn{File: j.files[it.fi].path, Offset: start}
		for x := k; x < len(flat); x++ {
			if flat[x].kind == itemRecord {
				t.Dropped++
			}
		}
		t.Bytes = j.files[it.fi].size - start
		for fi := it.fi + 1; fi < len(j.files); fi++ {
			removed[fi] = true
			t.Removed = append(t.Removed, j.files[fi].path)
			t.Bytes += j.files[fi].size
		}
		// A partition file left without records would be misnamed for the
		// next append, which starts a new file anyway.
		if j.kind == kindPartition && start <= FileHeaderSize {
			removed[it.fi] = true
			t.Removed = append([]string{j.files[it.fi].path}, t.Removed...)
			cut = nil
			if scans[it.fi].staleHdr {
				// A recycled file renamed for a rotation whose new header
				// never reached the disk: no sync has completed since the
				// first write to it (that would have made the header
				// durable), so neither it nor anything after it held an
				// acknowledged op. Not a torn tail: it is removed quietly.
				break
			}
		}
		rep.Torn = t
		break
	}

	// The caller may need to make something durable before the tail is
	// forgotten (a cluster replica's fence): nothing is cut yet.
	if rep.Torn != nil && j.beforeCut != nil {
		if err := j.beforeCut(rep.Torn); err != nil {
			return nil, fmt.Errorf("journal: before cutting the torn tail of %s: %w", rep.Torn.File, err)
		}
	}
	// Apply: cut the torn file, remove dropped files, rebuild headers.
	if cut != nil {
		jf := j.files[cut.fi]
		if err := jf.f.Truncate(cut.off); err != nil {
			return nil, fmt.Errorf("journal: cutting torn tail of %s: %w", jf.path, err)
		}
		jf.size, jf.phys = cut.off, cut.off
	}
	var kept []*jfile
	for fi, jf := range j.files {
		if removed[fi] {
			_ = jf.f.Close()
			if err := j.fs.Remove(jf.path); err != nil {
				return nil, fmt.Errorf("journal: removing torn %s: %w", jf.path, err)
			}
			continue
		}
		if !scans[fi].hdrOK {
			h := fileHeader{kind: j.kind, firstOp: jf.first}
			if j.kind == kindMetadata {
				if have {
					h.firstOp, h.prev = base, prevLink
				}
			}
			jf.first = h.firstOp
			b := make([]byte, FileHeaderSize)
			encodeFileHeader(b, h)
			if _, err := jf.f.WriteAt(b, 0); err != nil {
				return nil, fmt.Errorf("journal: rewriting header of %s: %w", jf.path, err)
			}
			jf.size = max(jf.size, FileHeaderSize)
			jf.phys = max(jf.phys, jf.size)
			rep.HeadersRewritten = append(rep.HeadersRewritten, jf.path)
		} else if j.kind == kindMetadata {
			jf.first = scans[fi].hdr.firstOp
		}
		// What recovery read may be unsynced leftovers of a crashed
		// process; make it durable before the caller acts on it.
		if err := jf.f.Datasync(); err != nil {
			return nil, fmt.Errorf("journal: syncing %s: %w", jf.path, err)
		}
		kept = append(kept, jf)
	}
	if len(removed) > 0 {
		if err := j.fs.SyncDir(j.dir); err != nil {
			return nil, fmt.Errorf("journal: syncing %s: %w", j.dir, err)
		}
	}
	j.files = kept
	// A torn cut can leave trailing faulty ops only if a run was followed
	// by the damage; runs always end at an intact record, so the tail is
	// intact.
	j.ents = ents
	j.open = !have
	if have {
		j.base, j.prevLink = base, prevLink
		j.discarded = base - 1
	}
	if len(ents) > 0 {
		j.synced = j.Last()
	} else if have {
		j.synced = base - 1
	}
	rep.First, rep.Last = j.base, j.base+uint64(len(j.ents))-1
	if len(j.ents) == 0 && !have {
		rep.First, rep.Last = 1, 0
	}
	return rep, nil
}
