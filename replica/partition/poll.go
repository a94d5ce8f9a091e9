package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/wire"
)

// PollRequest is a poll of messages.
type PollRequest struct {
	Strategy wire.PollingStrategy
	Count    uint32
	// Key is the consumer (PollNext reads its stored offset).
	Key OffsetKey
	// Buf is the caller's buffer, reused (and grown) for the records.
	Buf []byte
}

// PollResult is what a poll hands back to the connection: the reply prefix
// fields and the records, each a slice of the request's buffer or of Hdrs
// (the rewritten header of a record cut to the exact range). The caller
// keeps it across polls (Parts is reused); Parts may point into Hdrs, so
// it must not be copied while they are in use.
type PollResult struct {
	Partition  uint32
	Current    uint64
	Count      uint32
	LastOffset uint64
	Parts      [][]byte
	Hdrs       [2][wire.BatchHeaderSize]byte
	// Waitable: an empty poll that may wait (long polling); it would find
	// messages once the partition's visible end passes Need.
	Waitable bool
	Need     uint64
	// Compressed: some part is a compressed record (codec.Compressed),
	// which the connection must decode; those that overrun the poll's
	// range come whole, with the range to keep in Cuts.
	Compressed bool
	Cuts       [2]PollCut
	NCut       int
	// Consumer offset reads (GetOffset).
	Found  bool
	Stored uint64
}

// PollCut is the part of a whole compressed record a poll returns: Count
// messages from offset From (offsets are dense).
type PollCut struct {
	Part  int
	From  uint64
	Count uint32
}

// CutOf is the cut of part, if it has one.
func (r *PollResult) CutOf(part int) (PollCut, bool) {
	for _, c := range r.Cuts[:r.NCut] {
		if c.Part == part {
			return c, true
		}
	}
	return PollCut{}, false
}

// Reset clears the result for the next request.
func (r *PollResult) Reset() {
	r.Count, r.Parts, r.Found = 0, r.Parts[:0], false
	r.Waitable, r.Need = false, 0
	r.Compressed, r.NCut = false, 0
}

// GetOffset reads consumer k's stored offset into r (Current, Found,
// Stored).
func (p *Partition) GetOffset(k OffsetKey, r *PollResult) {
	r.Current = p.Current()
	r.Stored, r.Found = p.offsets[k]
}

// StoredOffset is consumer k's stored offset.
func (p *Partition) StoredOffset(k OffsetKey) (uint64, bool) {
	v, ok := p.offsets[k]
	return v, ok
}

// Poll serves a poll on the owning shard: it finds the start offset,
// copies the whole records covering it from the segments into req.Buf and
// cuts the first and last record to the exact range. It returns the
// buffer to keep for the next request (emptied) and a non-zero Iggy code
// for a failed poll.
func (p *Partition) Poll(req PollRequest, r *PollResult) ([]byte, wire.Code) {
	r.Partition, r.Current, r.Count = p.id, p.Current(), 0
	r.Parts = r.Parts[:0]
	r.Waitable, r.Need = false, 0
	r.Compressed, r.NCut = false, 0
	if req.Count == 0 {
		return req.Buf, 0
	}
	start, ok, code := p.pollStart(req, r)
	if !ok || code != 0 {
		return req.Buf, code
	}
	buf, total, err := p.readRecords(req, start, r.Current)
	if err != nil {
		return buf[:0], p.readFailed(r, err)
	}
	if err := p.cutRecords(r, buf[:total], start, req.Count); err != nil {
		return buf[:0], p.readFailed(r, err)
	}
	if req.Key.Kind == wire.ConsumerKindGroup && r.Count > 0 {
		p.notePolled(req.Key.ID, r.LastOffset)
	}
	return buf[:0], 0
}

// pollStart is the first offset a poll reads, or false with r telling
// what the poll waits for.
func (p *Partition) pollStart(req PollRequest, r *PollResult) (uint64, bool, wire.Code) {
	if p.visibleNext() == 0 {
		r.Waitable = true
		return 0, false, 0
	}
	if p.purgeWanted > p.purgeGen {
		r.Waitable, r.Need = true, p.visibleNext()
		return 0, false, 0
	}
	first := p.seg.FirstOffset()
	var start uint64
	switch req.Strategy.Kind {
	case wire.PollOffset:
		start = req.Strategy.Value
	case wire.PollTimestamp:
		ri, ok, err := p.seg.LocateTimestamp(req.Strategy.Value)
		if err != nil {
			return 0, false, p.readFailed(r, err)
		}
		if !ok {
			r.Waitable, r.Need = true, p.visibleNext()
			return 0, false, 0
		}
		start = ri.BaseOffset
	case wire.PollFirst:
		start = first
	case wire.PollLast:
		if uint64(req.Count) <= r.Current {
			start = r.Current + 1 - uint64(req.Count)
		}
	case wire.PollNext:
		if v, ok := p.offsets[req.Key]; ok {
			start = v + 1
		}
	default:
		return 0, false, wire.CodeInvalidCommand
	}
	start = max(start, first)
	if start > r.Current {
		r.Waitable, r.Need = true, start
		return 0, false, 0
	}
	return start, true, 0
}

// readRecords reads whole records from start until count messages are
// covered, the log ends (past current) or the reply would outgrow the
// frame limit; the buffer grows as needed. It returns the buffer and how
// many of its bytes hold records.
func (p *Partition) readRecords(req PollRequest, start, current uint64) ([]byte, int, error) {
	limit := p.cfg.PollBufferMax
	want := uint64(float64(req.Count)*p.avgMessageBytes()) + 2*uint64(wire.BatchHeaderSize) + 64<<10
	size := int(min(uint64(limit), max(want, 64<<10)))
	if cap(req.Buf) < size {
		req.Buf = make([]byte, size)
	}
	buf := req.Buf[:min(cap(req.Buf), limit)]
	total, next, got := 0, start, uint64(0)
	for got < uint64(req.Count) && next <= current {
		if len(buf)-total < 4096 && len(buf) < limit {
			buf = growBuffer(buf, total, min(limit, 2*len(buf)))
		}
		res, err := p.seg.Read(buf[total:], segment.ReadRequest{From: next, MaxMessages: uint32(uint64(req.Count) - got)})
		if err != nil {
			// (The target of errors.As escapes: declared here, it costs
			// an allocation only on this path, never on a clean read.)
			var small *segment.BufferTooSmallError
			if !errors.As(err, &small) {
				return buf, 0, err
			}
			if total+small.Need > limit {
				break
			}
			buf = growBuffer(buf, total, min(limit, max(2*len(buf), total+small.Need)))
			continue
		}
		if res.N == 0 {
			break
		}
		total += res.N
		got += res.Messages
		next = res.NextOffset
	}
	return buf, total, nil
}

// cutRecords hands the records in rest covering count messages from
// start to r, cutting the first and the last to the exact range.
func (p *Partition) cutRecords(r *PollResult, rest []byte, start uint64, count uint32) error {
	from := start
	remaining := count
	hdr := 0
	for len(rest) >= wire.BatchHeaderSize && remaining > 0 {
		length := binary.LittleEndian.Uint64(rest[32:])
		rec := rest[:length]
		rest = rest[length:]
		base := binary.LittleEndian.Uint64(rec[8:])
		mc := binary.LittleEndian.Uint32(rec[48:])
		if base+uint64(mc) <= from {
			continue
		}
		compressed := codec.Compressed(rec[wire.BatchHeaderSize:])
		r.Compressed = r.Compressed || compressed
		if base >= from && mc <= remaining {
			r.Parts = append(r.Parts, rec)
			r.Count += mc
			remaining -= mc
			from = base + uint64(mc)
			continue
		}
		if compressed {
			// Its messages all sit in its first frame: it goes whole, and
			// the connection cuts it after decoding.
			if r.NCut == len(r.Cuts) {
				panic(fmt.Sprintf("replica: partition %s: poll cut more than two records", p.ns))
			}
			at := max(from, base)
			take := uint32(min(base+uint64(mc), at+uint64(remaining)) - at)
			r.Cuts[r.NCut] = PollCut{Part: len(r.Parts), From: at, Count: take}
			r.NCut++
			r.Parts = append(r.Parts, rec)
			r.Count += take
			remaining -= take
			from = at + uint64(take)
			continue
		}
		v, err := wire.ParseBatch(rec)
		if err != nil {
			return err
		}
		s, ok := v.SliceByOffset(from, remaining)
		if !ok {
			continue
		}
		if hdr == len(r.Hdrs) {
			// Only the first and the last record can be partial.
			panic(fmt.Sprintf("replica: partition %s: poll cut more than two records", p.ns))
		}
		r.Hdrs[hdr] = s.Header
		r.Parts = append(r.Parts, r.Hdrs[hdr][:], s.Frames)
		hdr++
		r.Count += s.Count
		remaining -= s.Count
		from = max(from, base) + uint64(s.Count)
	}
	r.LastOffset = from - 1
	if r.Count > 0 {
		n := 0
		for _, b := range r.Parts {
			n += len(b)
		}
		p.stats.PolledMsgs.Add(uint64(r.Count))
		p.stats.PolledBytes.Add(uint64(n))
	}
	return nil
}

// growBuffer returns a buffer of size n holding buf[:keep].
func growBuffer(buf []byte, keep, n int) []byte {
	if n <= len(buf) {
		return buf
	}
	nb := make([]byte, n)
	copy(nb, buf[:keep])
	return nb
}

// Damaged segment data (a misdirected or lost write, bit rot) stops the
// partition's group: it must not serve, or replicate from, storage it
// cannot read back, and a restart sets the storage aside and refills it
// from the peers (a single node refuses to boot, naming the file).
func (p *Partition) readFailed(r *PollResult, err error) wire.Code {
	p.log.Error("poll read failed", zap.Error(err))
	r.Parts, r.Count = r.Parts[:0], 0
	// A short read of bytes the segment log holds (a lost or misdirected
	// write: real-stack simulator, seed 600389) is damage too.
	if errors.Is(err, segment.ErrCorrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
		p.failOn(fmt.Errorf("%w: %w", ErrDamaged, err))
	}
	return wire.CodeError
}

func (p *Partition) avgMessageBytes() float64 {
	if p.avgRecord > 0 {
		return p.avgRecord
	}
	n := p.seg.MessageCount()
	if n == 0 {
		return 1024
	}
	p.avgRecord = float64(p.seg.Size())/float64(n) + 1
	return p.avgRecord
}
