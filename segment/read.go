package segment

import (
	"fmt"
	"io"
	"sort"
)

// RecordInfo locates one stored record.
type RecordInfo struct {
	// Segment is the start offset of the segment holding the record.
	Segment       uint64
	Position      int64 // byte position in the segment's .log
	Length        int64 // batch_length
	BaseOffset    uint64
	MessageCount  uint32
	BaseTimestamp uint64
}

// NextOffset is the offset after the record's last message.
func (r RecordInfo) NextOffset() uint64 { return r.BaseOffset + uint64(r.MessageCount) }

// segmentFor returns the index of the segment whose offsets include offset;
// offset must lie in [FirstOffset, NextOffset).
func (l *Log) segmentFor(offset uint64) int {
	return sort.Search(len(l.segs), func(i int) bool { return l.segs[i].start > offset }) - 1
}

func (l *Log) corruptLog(s *segment, pos int64, expect uint64, format string, args ...any) error {
	return &CorruptionError{Segment: s.start, File: s.logPath, Position: pos, Offset: expect, Reason: fmt.Sprintf(format, args...)}
}

// readFull reads len(p) bytes at off, treating a short read as an error.
func readFull(f interface {
	ReadAt([]byte, int64) (int, error)
}, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// readHeader reads the header of the record at pos of s, which must start
// at offset expect and lie wholly below s.size.
func (l *Log) readHeader(s *segment, pos int64, expect uint64) (recordHeader, error) {
	if pos+RecordHeaderSize > s.size {
		return recordHeader{}, l.corruptLog(s, pos, expect, "record header runs past the written end %d", s.size)
	}
	if err := readFull(s.logF, l.hdr, pos); err != nil {
		return recordHeader{}, fmt.Errorf("read %s at %d: %w", s.logPath, pos, err)
	}
	h := parseHeader(l.hdr)
	if why := checkHeader(l.hdr, h, l.cfg.PartitionID, l.cfg.MaxRecordSize); why != "" {
		return h, l.corruptLog(s, pos, expect, "%s", why)
	}
	if h.baseOffset != expect {
		return h, l.corruptLog(s, pos, expect, "base_offset %d", h.baseOffset)
	}
	if pos+int64(h.batchLength) > s.size {
		return h, l.corruptLog(s, pos, expect, "record of %d bytes runs past the written end %d", h.batchLength, s.size)
	}
	return h, nil
}

// bracket returns the last index entry of s for which below holds and the
// first for which it does not; below must hold for a prefix of the entries.
func (l *Log) bracket(s *segment, below func(indexEntry) bool) (prev indexEntry, hasPrev bool, next indexEntry, hasNext bool, err error) {
	if s.entries != nil {
		j := searchEntries(s.entries, below)
		if j > 0 {
			prev, hasPrev = s.entries[j-1], true
		}
		if j < len(s.entries) {
			next, hasNext = s.entries[j], true
		}
		return prev, hasPrev, next, hasNext, nil
	}
	k := searchEntries(s.summary, below)
	if k == 0 {
		if len(s.summary) > 0 {
			return prev, false, s.summary[0], true, nil
		}
		return prev, false, next, false, nil
	}
	stride := l.cfg.IndexSummaryStride
	first := (k - 1) * stride
	block := s.summary[k-1 : k]
	if n := min(stride, s.fileEntries-first); n > 1 {
		if block, err = l.readEntries(s, first, n); err != nil {
			return prev, false, next, false, err
		}
	}
	j := searchEntries(block, below)
	prev, hasPrev = block[j-1], true
	switch {
	case j < len(block):
		next, hasNext = block[j], true
	case k < len(s.summary):
		next, hasNext = s.summary[k], true
	}
	return prev, hasPrev, next, hasNext, nil
}

// readEntries decodes n entries of s's .index starting at entry first into
// a scratch slice valid until the next call.
func (l *Log) readEntries(s *segment, first, n int) ([]indexEntry, error) {
	need := n * IndexEntrySize
	if cap(l.idxBuf) < need {
		l.idxBuf = make([]byte, need)
	}
	raw := l.idxBuf[:need]
	if err := readFull(s.idxF, raw, int64(first)*IndexEntrySize); err != nil {
		return nil, fmt.Errorf("read %s at entry %d: %w", s.idxPath, first, err)
	}
	out := l.pending[:0]
	for i := 0; i < n; i++ {
		e, ok := decodeEntry(raw[i*IndexEntrySize:], s.start)
		if !ok {
			return nil, &CorruptionError{Segment: s.start, File: s.idxPath, Position: int64(first+i) * IndexEntrySize,
				Reason: "index entry checksum mismatch"}
		}
		out = append(out, e)
	}
	l.pending = out
	return out, nil
}

// locate finds the record of the non-empty segment s holding target, which
// must lie in [s.start, s.next). A dense index answers without reading the
// log; otherwise record headers are walked from the nearest entry.
func (l *Log) locate(s *segment, target uint64) (RecordInfo, error) {
	rel := target - s.start
	prev, ok, next, hasNext, err := l.bracket(s, func(e indexEntry) bool { return uint64(e.rel) <= rel })
	if err != nil {
		return RecordInfo{}, err
	}
	if !ok {
		panic(fmt.Sprintf("segment: segment %d of %d bytes has no index entry at or below offset %d", s.start, s.size, target))
	}
	pos, expect := int64(prev.pos), s.start+uint64(prev.rel)
	if (hasNext && int64(next.pos) == prev.end()) || (!hasNext && prev.end() == s.size) {
		// The entry's record is followed by the next entry's (or ends the
		// segment), so it spans every offset up to that record's.
		end := s.next
		if hasNext {
			end = s.start + uint64(next.rel)
		}
		return RecordInfo{Segment: s.start, Position: pos, Length: int64(prev.length), BaseOffset: expect,
			MessageCount: uint32(end - expect)}, nil
	}
	for {
		h, err := l.readHeader(s, pos, expect)
		if err != nil {
			return RecordInfo{}, err
		}
		if target < h.nextOffset() {
			return RecordInfo{Segment: s.start, Position: pos, Length: int64(h.batchLength), BaseOffset: h.baseOffset,
				MessageCount: h.messageCount, BaseTimestamp: h.baseTimestamp}, nil
		}
		pos += int64(h.batchLength)
		expect = h.nextOffset()
	}
}

// Locate finds the record holding offset. ErrNotFound when offset is not in
// [FirstOffset, NextOffset).
func (l *Log) Locate(offset uint64) (RecordInfo, error) {
	if err := l.usable(); err != nil {
		return RecordInfo{}, err
	}
	if offset < l.FirstOffset() || offset >= l.NextOffset() {
		return RecordInfo{}, fmt.Errorf("%w: offset %d outside [%d, %d)", ErrNotFound, offset, l.FirstOffset(), l.NextOffset())
	}
	s := l.segs[l.segmentFor(offset)]
	ri, err := l.locate(s, offset)
	if err != nil {
		return ri, err
	}
	// A dense-index answer carries no header fields but the offsets;
	// reading the header both fills them and checks the log agrees.
	h, err := l.readHeader(s, ri.Position, ri.BaseOffset)
	if err != nil {
		return RecordInfo{}, err
	}
	if h.nextOffset() != ri.NextOffset() || int64(h.batchLength) != ri.Length {
		return RecordInfo{}, l.corruptLog(s, ri.Position, ri.BaseOffset,
			"record spans [%d, %d) in %d bytes; index says [%d, %d) in %d", h.baseOffset, h.nextOffset(), h.batchLength,
			ri.BaseOffset, ri.NextOffset(), ri.Length)
	}
	ri.MessageCount, ri.BaseTimestamp = h.messageCount, h.baseTimestamp
	return ri, nil
}

// LocateTimestamp finds the first record, in offset order, whose
// base_timestamp (the server timestamp of all its messages) is ≥ t; ok is
// false when there is none.
func (l *Log) LocateTimestamp(t uint64) (ri RecordInfo, ok bool, err error) {
	if err := l.usable(); err != nil {
		return RecordInfo{}, false, err
	}
	for _, s := range l.segs {
		if s.size == 0 || s.maxTimestamp() < t {
			continue
		}
		prev, hasPrev, _, _, err := l.bracket(s, func(e indexEntry) bool { return e.maxTS < t })
		if err != nil {
			return RecordInfo{}, false, err
		}
		pos, expect := int64(0), s.start
		if hasPrev {
			pos, expect = int64(prev.pos), s.start+uint64(prev.rel)
		}
		for {
			h, err := l.readHeader(s, pos, expect)
			if err != nil {
				return RecordInfo{}, false, err
			}
			if h.baseTimestamp >= t {
				return RecordInfo{Segment: s.start, Position: pos, Length: int64(h.batchLength), BaseOffset: h.baseOffset,
					MessageCount: h.messageCount, BaseTimestamp: h.baseTimestamp}, true, nil
			}
			pos += int64(h.batchLength)
			expect = h.nextOffset()
		}
	}
	return RecordInfo{}, false, nil
}

// ReadRequest selects what Read returns.
type ReadRequest struct {
	// From is the first offset wanted. Below FirstOffset (removed by
	// retention) the read starts at FirstOffset.
	From uint64
	// MaxMessages caps the messages at or after From; the read stops after
	// the record that reaches it. 0 reads nothing.
	MaxMessages uint32
	// DurableOnly limits the read to records below DurableNextOffset.
	DurableOnly bool
}

// ReadResult describes what Read placed at the front of the buffer.
type ReadResult struct {
	// N is the number of bytes of whole records at the front of the buffer.
	N int
	// Records is the number of whole records in buf[:N].
	Records int
	// Messages counts the messages of those records at or after From.
	Messages uint64
	// FirstOffset is the base_offset of the first record (≤ From when From
	// is stored). NextOffset is the offset after the last record. Both are
	// 0 when Records is 0.
	FirstOffset uint64
	NextOffset  uint64
}

// Read copies whole stored records, starting with the one holding From,
// into buf: never a partial record and never bytes beyond the written (or
// durable) end. It stops when the next record does not fit in buf, after the
// record that reaches MaxMessages, or at the end of the log. The first record
// may begin before From and the last may run past the budget: the caller
// trims to exact offsets. A first record larger than buf yields a
// *BufferTooSmallError with the size needed. With Config.ValidateChecksum
// every returned record is re-hashed; damage is a *CorruptionError.
func (l *Log) Read(buf []byte, q ReadRequest) (ReadResult, error) {
	var res ReadResult
	if err := l.usable(); err != nil {
		return res, err
	}
	limit := l.NextOffset()
	if q.DurableOnly {
		limit = l.DurableNextOffset()
	}
	from := max(q.From, l.FirstOffset())
	if q.MaxMessages == 0 || from >= limit {
		return res, nil
	}
	lastWanted := from + uint64(q.MaxMessages) - 1
	if lastWanted < from || lastWanted >= limit {
		lastWanted = limit - 1
	}
	for i, cur := l.segmentFor(from), from; i < len(l.segs) && cur <= lastWanted; i++ {
		s := l.segs[i]
		readable := s.size
		if q.DurableOnly {
			readable = s.syncedSize
		}
		if s.size == 0 || cur >= s.next {
			continue
		}
		ri := RecordInfo{Segment: s.start, BaseOffset: s.start, Length: int64(s.firstEntry().length)}
		if cur != s.start {
			var err error
			if ri, err = l.locate(s, cur); err != nil {
				return res, err
			}
		}
		if ri.Position >= readable {
			break
		}
		// Bound the read by the first indexed record past the budget, so a
		// small poll does not pull a whole buffer of log.
		end := readable
		if lastWanted < s.next-1 {
			rel := lastWanted - s.start
			_, _, nx, ok, err := l.bracket(s, func(e indexEntry) bool { return uint64(e.rel) <= rel })
			if err != nil {
				return res, err
			}
			if ok && int64(nx.pos) < end {
				end = int64(nx.pos)
			}
		}
		// end lies on a record boundary past the first record, so only the
		// buffer can be too short for it.
		n := min(end-ri.Position, int64(len(buf)-res.N))
		cut := n < end-ri.Position
		if n < ri.Length {
			if res.N == 0 {
				return res, &BufferTooSmallError{Need: int(ri.Length)}
			}
			break
		}
		chunk := buf[res.N : res.N+int(n)]
		if err := readFull(s.logF, chunk, ri.Position); err != nil {
			return res, fmt.Errorf("read %s at %d: %w", s.logPath, ri.Position, err)
		}
		p, expect, done := 0, ri.BaseOffset, false
		for p+RecordHeaderSize <= len(chunk) {
			rec := chunk[p:]
			h := parseHeader(rec)
			if why := checkHeader(rec, h, l.cfg.PartitionID, l.cfg.MaxRecordSize); why != "" {
				return res, l.corruptLog(s, ri.Position+int64(p), expect, "%s", why)
			}
			if h.baseOffset != expect {
				return res, l.corruptLog(s, ri.Position+int64(p), expect, "base_offset %d", h.baseOffset)
			}
			if uint64(len(rec)) < h.batchLength {
				// The chunk ends at a record boundary unless the buffer cut
				// it, and no record runs past the written end.
				at := ri.Position + int64(p)
				if !cut || at+int64(h.batchLength) > readable {
					return res, l.corruptLog(s, at, expect, "record of %d bytes runs past %d", h.batchLength, ri.Position+n)
				}
				if res.Records == 0 {
					return res, &BufferTooSmallError{Need: int(h.batchLength)}
				}
				break
			}
			rec = rec[:h.batchLength]
			if l.cfg.ValidateChecksum {
				var why string
				if why, l.sumBuf = verifyBody(rec, h, l.sumBuf); why != "" {
					return res, l.corruptLog(s, ri.Position+int64(p), expect, "%s", why)
				}
			}
			if res.Records == 0 {
				res.FirstOffset = h.baseOffset
			}
			res.Records++
			res.Messages += h.nextOffset() - max(h.baseOffset, from)
			res.NextOffset = h.nextOffset()
			p += len(rec)
			expect = h.nextOffset()
			if expect > lastWanted {
				done = true
				break
			}
		}
		res.N += p
		if done || ri.Position+int64(p) < s.size {
			break
		}
		cur = s.next
	}
	return res, nil
}
