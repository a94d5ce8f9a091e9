package partition

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/wire"
)

// Original sizes (doc.go). With compression at rest a partition's segments hold
// fewer bytes than its producers sent; stats report both (the stored size
// is what retention and max_topic_size count). The original size of a
// record is its client form's (codec.OriginalSize: the record as a poll
// returns it, before any compression; an uncompressed record counts as
// stored).
//
// Each partition keeps the original bytes per segment in memory. A
// partition that never stored a record whose stored form differs from its
// client form (compressed, or sealed by encryption at rest) has original =
// stored and reads nothing: the empty file {dir}/compressed marks one that
// may have, written (fdatasync'ed with its directory) when the first such
// batch is applied, before its segment write. A marked
// partition reads its segments once when it opens (and any segment it did
// not write itself, such as one installed by state transfer) to total
// their records' original sizes; appends then add to the segment they went
// to, and deleted segments drop out.
const compressedMarkerFile = "compressed"

type origSizes struct {
	marked bool
	segs   []segOrig // ascending start offsets, the segments of the log
	total  uint64
}

type segOrig struct {
	start uint64
	bytes uint64
}

// openOrigSizes runs right after the segments open, before journal replay.
func (p *Partition) openOrigSizes() error {
	_, err := p.fs.Stat(filepath.Join(p.dir, compressedMarkerFile))
	switch {
	case err == nil:
		p.orig.marked = true
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("replica: partition %s: %w", p.ns, err)
	}
	p.orig.segs = p.orig.segs[:0]
	return p.reconcileOrig()
}

// markCompressed records, before the first record of the partition
// whose stored form differs from what was sent reaches its segments, that
// original sizes must be read.
func (p *Partition) markCompressed(body []byte) {
	if p.orig.marked || len(body) < wire.BatchHeaderSize ||
		!codec.Compressed(body[wire.BatchHeaderSize:]) && !p.cfg.Codec.Sealed() {
		return
	}
	if err := writeFileSync(p.fs, filepath.Join(p.dir, compressedMarkerFile), nil); err != nil {
		panic(fmt.Sprintf("replica: partition %s: writing the compression marker: %v", p.ns, err))
	}
	p.orig.marked = true
}

// noteWritten adds the original sizes of records just appended to the
// segment starting at seg.
func (p *Partition) noteWritten(seg uint64, recs []segment.Record) {
	o := &p.orig
	i := sort.Search(len(o.segs), func(i int) bool { return o.segs[i].start >= seg })
	if i == len(o.segs) || o.segs[i].start != seg {
		o.segs = append(o.segs, segOrig{})
		copy(o.segs[i+1:], o.segs[i:])
		o.segs[i] = segOrig{start: seg}
	}
	for _, r := range recs {
		n, err := p.originalSize(r)
		if err != nil {
			n = uint64(r.Len())
		}
		o.segs[i].bytes += n
		o.total += n
	}
}

// reconcileOrig makes the per-segment figures follow the log: segments
// gone (retention, purge, deletion) drop out, segments not seen yet are
// totalled (their stored size when the partition is not marked).
func (p *Partition) reconcileOrig() error {
	o := &p.orig
	infos := p.seg.Segments()
	same := len(infos) == len(o.segs)
	for i := 0; same && i < len(infos); i++ {
		same = infos[i].StartOffset == o.segs[i].start
	}
	if same {
		return nil
	}
	known := make(map[uint64]uint64, len(o.segs))
	for _, s := range o.segs {
		known[s.start] = s.bytes
	}
	o.segs, o.total = o.segs[:0], 0
	for _, si := range infos {
		b, ok := known[si.StartOffset]
		if !ok {
			var err error
			if b, err = p.segmentOriginal(si); err != nil {
				return err
			}
		}
		o.segs = append(o.segs, segOrig{start: si.StartOffset, bytes: b})
		o.total += b
	}
	return nil
}

// segmentOriginal totals the original sizes of a segment's records.
func (p *Partition) segmentOriginal(si segment.SegmentInfo) (uint64, error) {
	if !p.orig.marked || si.NextOffset == si.StartOffset {
		return uint64(si.Size), nil
	}
	buf := make([]byte, 1<<20)
	var total uint64
	for next := si.StartOffset; next < si.NextOffset; {
		res, err := p.seg.Read(buf, segment.ReadRequest{From: next, MaxMessages: uint32(min(si.NextOffset-next, 1<<31))})
		var small *segment.BufferTooSmallError
		if errors.As(err, &small) {
			buf = make([]byte, small.Need)
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("replica: partition %s: reading segment %d for its original size: %w", p.ns, si.StartOffset, err)
		}
		if res.N == 0 {
			break
		}
		for rest := buf[:res.N]; len(rest) >= wire.BatchHeaderSize; {
			h, err := wire.DecodeBatchHeader(rest)
			if err != nil || h.BatchLength > uint64(len(rest)) {
				return 0, fmt.Errorf("replica: partition %s: segment %d: record header: %v", p.ns, si.StartOffset, err)
			}
			if h.BaseOffset < si.NextOffset {
				n, err := p.originalSize(segment.Split(rest[:h.BatchLength]))
				if err != nil {
					n = h.BatchLength
				}
				total += n
			}
			rest = rest[h.BatchLength:]
		}
		next = res.NextOffset
	}
	return total, nil
}

// originalSize is a record's client-form size (its stored size without a
// codec).
func (p *Partition) originalSize(rec segment.Record) (uint64, error) {
	if p.cfg.Codec == nil {
		return uint64(rec.Len()), nil
	}
	return p.cfg.Codec.OriginalSize(rec.Head, rec.Frames)
}
