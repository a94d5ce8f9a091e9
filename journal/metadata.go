package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/iggo/iggo/shard/vfs"
)

// rewriteBatch bounds how many entry bytes compaction holds in memory.
const rewriteBatch = 8 << 20

// rewriteMetadata compacts journal.wal to the ops above through: it writes
// them (same entries, same chain links, new offsets) after a header saying
// the file starts at through+1 into journal.wal.tmp, syncs it, renames it
// over journal.wal and syncs the directory. A crash at any point leaves
// either the old or the new file, and both hold every op above through.
func (j *Journal) rewriteMetadata(through uint64) error {
	for i, s := range j.ents {
		if op := j.base + uint64(i); op > through && s.region != nil {
			return fmt.Errorf("%w: op %d must be repaired or truncated before compaction", ErrFaulty, op)
		}
	}
	from := max(through+1, j.base)
	prev := Uint128{}
	switch {
	case len(j.ents) > 0 && through >= j.base && through <= j.Last():
		prev = j.ents[through-j.base].link
		if j.ents[through-j.base].region != nil {
			// through itself is faulty: its link is unknown, but the intact
			// record after it names it (a replica discards through a
			// corrupt entry its checkpoint covers; chaos seed 1033).
			p, err := j.prevLinkOf(through + 1)
			if err != nil {
				return err
			}
			prev = p
		}
	case through+1 == j.base:
		prev = j.prevLink
	}
	last := j.Last()
	if len(j.ents) == 0 || through >= last {
		last = through
	}
	path := filepath.Join(j.dir, MetadataFile)
	tmp := path + ".tmp"
	f, err := j.fs.OpenFile(tmp, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("journal: compacting: %w", err)
	}
	abandon := func(err error) error {
		_ = f.Close()
		if rerr := j.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("journal: compacting %s: %w", path, err)
	}
	hdr := make([]byte, FileHeaderSize)
	encodeFileHeader(hdr, fileHeader{kind: kindMetadata, firstOp: through + 1, prev: prev})
	bufs := [][]byte{hdr}
	pendingBytes := 0
	writeOff, off := int64(0), int64(FileHeaderSize)
	newSlots := make([]slot, 0, int(max(0, int64(last)-int64(from)+1)))
	flush := func() error {
		if len(bufs) == 0 {
			return nil
		}
		if _, err := f.WritevAt(bufs, writeOff); err != nil {
			return err
		}
		writeOff, bufs, pendingBytes = off, bufs[:0], 0
		return nil
	}
	for op := from; len(j.ents) > 0 && op <= j.Last(); op++ {
		entry, err := j.Read(op)
		if err != nil {
			return abandon(err)
		}
		s := j.ents[op-j.base]
		h := recordHeader{op: op, offset: off, length: s.length, synced: last, entry: s.entry, prev: prev}
		rh := make([]byte, RecordHeaderSize)
		encodeRecordHeader(rh, h)
		bufs = append(bufs, rh, entry)
		prev = h.link()
		if prev != s.link {
			panic(fmt.Sprintf("journal: compaction changed the link of op %d", op))
		}
		newSlots = append(newSlots, slot{off: off, length: s.length, entry: s.entry, link: prev})
		off += h.total()
		pendingBytes += int(h.total())
		if pendingBytes >= rewriteBatch {
			if err := flush(); err != nil {
				return abandon(err)
			}
		}
	}
	if err := flush(); err != nil {
		return abandon(err)
	}
	if err := f.Sync(); err != nil {
		return abandon(err)
	}
	if err := j.fs.Rename(tmp, path); err != nil {
		return abandon(err)
	}
	// From here the new file is in place; failures leave the journal's
	// state unknown.
	if err := j.fs.SyncDir(j.dir); err != nil {
		_ = f.Close()
		return j.fail(fmt.Errorf("journal: compacting %s: %w", path, err))
	}
	old := j.files[0]
	_ = old.f.Close()
	jf := &jfile{name: MetadataFile, path: path, f: f, first: through + 1, size: off}
	j.files[0] = jf
	for i := range newSlots {
		newSlots[i].file = jf
	}
	j.ents = newSlots
	j.base = through + 1
	j.prevLink = getU128(hdr[40:])
	j.discarded = max(j.discarded, through)
	j.open = false
	j.gen++
	j.synced = j.Last()
	return nil
}

// prevLinkOf returns the chain link that op's record names as its
// predecessor's, read from op's record header and checked against op's own
// link.
func (j *Journal) prevLinkOf(op uint64) (Uint128, error) {
	s, ok := j.slot(op)
	if !ok || s.region != nil {
		return Uint128{}, fmt.Errorf("%w: the link below op %d is unknown: op %d is faulty or absent", ErrFaulty, op, op)
	}
	buf := make([]byte, RecordHeaderSize)
	if n, err := s.file.f.ReadAt(buf, s.off); n != len(buf) {
		return Uint128{}, fmt.Errorf("journal: reading the record of op %d from %s: %w", op, s.file.path, err)
	}
	h, err := decodeRecordHeader(buf, s.off, j.maxEntry)
	if err != nil || h.op != op || h.entry != s.entry || h.link() != s.link {
		return Uint128{}, fmt.Errorf("%w: op %d header in %s at %d: %v", ErrCorrupt, op, s.file.path, s.off, err)
	}
	return h.prev, nil
}
