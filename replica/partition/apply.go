package partition

import (
	"encoding/binary"
	"fmt"

	"go.uber.org/zap"

	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Apply implements vsr.StateMachine.
func (p *Partition) Apply(h *vsr.Header, body []byte) []byte {
	p.applied = h.Op()
	switch h.Operation() {
	case OpSend:
		return p.applySend(h, body)
	case OpStoreOffset:
		return p.applyStoreOffset(h, body)
	case OpDeleteOffset:
		return p.applyDeleteOffset(h, body)
	case OpPurge:
		return p.applyPurge(binary.LittleEndian.Uint64(body))
	case OpDropGroupOffsets:
		k := OffsetKey{Kind: wire.ConsumerKindGroup, ID: binary.LittleEndian.Uint32(body)}
		p.deleteOffsetKey(k)
		delete(p.lastPolled, k.ID)
		p.noteGroup(k)
		return codeReply(0)
	case OpDeleteSegments:
		return p.applyDeleteSegments(h, body)
	}
	panic(fmt.Sprintf("replica: partition %s: unknown operation %d at op %d", p.ns, h.Operation(), h.Op()))
}

func (p *Partition) applyStoreOffset(h *vsr.Header, body []byte) []byte {
	if len(body) != offsetOpSize && len(body) != offsetOpSizeUncapped {
		panic(fmt.Sprintf("replica: partition %s op %d: store-offset body of %d bytes", p.ns, h.Op(), len(body)))
	}
	k := OffsetKey{Kind: body[0], ID: binary.LittleEndian.Uint32(body[1:])}
	v := binary.LittleEndian.Uint64(body[5:])
	old, ok := p.offsets[k]
	if ok && body[13]&offsetFlagAuto != 0 && old >= v {
		return codeReply(0)
	}
	if !ok {
		// The cap travels in the op, so every replica (and every
		// replay) refuses the same new keys whatever its own config.
		n := p.kindCount(k.Kind)
		if len(body) == offsetOpSize && n >= int(binary.LittleEndian.Uint32(body[14:])) {
			return codeReply(uint32(CodeOffsetsFull))
		}
		p.kindCounts[k.Kind] = n + 1
	}
	p.offsets[k] = v
	p.noteGroup(k)
	return codeReply(0)
}

func (p *Partition) applyDeleteOffset(h *vsr.Header, body []byte) []byte {
	if len(body) != deleteOffsetOpSize {
		panic(fmt.Sprintf("replica: partition %s op %d: delete-offset body of %d bytes", p.ns, h.Op(), len(body)))
	}
	k := OffsetKey{Kind: body[0], ID: binary.LittleEndian.Uint32(body[1:])}
	if _, ok := p.offsets[k]; !ok {
		return codeReply(uint32(wire.CodeConsumerOffsetNotFound))
	}
	p.deleteOffsetKey(k)
	p.noteGroup(k)
	return codeReply(0)
}

func (p *Partition) applyPurge(gen uint64) []byte {
	if gen <= p.purgeGen {
		return codeReply(0)
	}
	clear(p.offsets)
	p.clearPolled()
	p.kindCounts = nil
	if gen > p.diskGen {
		if p.failOn(p.flushSegments()) {
			return codeReply(0)
		}
		if err := p.seg.Purge(p.next); err != nil {
			p.failOn(fmt.Errorf("replica: partition %s: purge at offset %d: %w", p.ns, p.next, err))
			return codeReply(0)
		}
		if err := writePurgeGen(p.fs, p.dir, gen); err != nil {
			p.failOn(fmt.Errorf("replica: partition %s: recording purge generation %d: %w", p.ns, gen, err))
			return codeReply(0)
		}
		p.diskGen = gen
		p.written = p.seg.NextOffset()
	}
	// Set after the flush above, whose publish must not report the
	// new generation beside the old figures.
	p.purgeGen = gen
	p.publish()
	return codeReply(0)
}

func (p *Partition) applyDeleteSegments(h *vsr.Header, body []byte) []byte {
	if len(body) != 8 {
		panic(fmt.Sprintf("replica: partition %s op %d: delete-segments body of %d bytes", p.ns, h.Op(), len(body)))
	}
	_, err := p.deleteSealedThrough(binary.LittleEndian.Uint64(body))
	if l := p.served.list; len(l) > 0 && l[0].start < p.seg.FirstOffset() {
		// The checkpoint peers fetch by state transfer lists segments
		// that are gone now (on every replica alike): checkpoint after
		// this op instead of waiting for CheckpointInterval more ops,
		// which an idle partition may never see.
		p.host.CheckpointAfter(h.Op())
	}
	if err != nil {
		p.log.Error("delete segments failed", zap.Uint64("op", h.Op()), zap.Error(err))
		return codeReply(uint32(wire.CodeError))
	}
	return codeReply(0)
}

// applySend stamps the committed batch with its offsets and the prepare's
// timestamp and queues it for the segment write (skipping a batch the
// segments already hold, when a restart replays the journal). The reply is
// the base offset.
func (p *Partition) applySend(h *vsr.Header, body []byte) []byte {
	v, err := wire.ParseBatch(body)
	if err != nil {
		panic(fmt.Sprintf("replica: partition %s op %d: journaled batch does not parse: %v", p.ns, h.Op(), err))
	}
	base := p.next
	n := uint64(v.MessageCount())
	rec := segment.Split(body)
	if p.cluster {
		// The replica keeps the prepare body for retransmission and
		// repair, and peers verify it against its checksum: stamp a copy
		// of the header only (the stamps and the batch checksum are all in
		// it) and write the body's frames after it as they are.
		rec.Head = append(p.pipe.get(wire.BatchHeaderSize)[:0], rec.Head...)
		wire.StampHeader(rec.Head, rec.Frames, uint64(p.id), base, h.Timestamp())
	} else {
		v.Stamp(uint64(p.id), base, h.Timestamp())
	}
	p.next = base + n
	reply := binary.LittleEndian.AppendUint64(make([]byte, 0, 8), base)
	switch {
	case base+n <= p.written:
		// Already in the segments: a replay after restart.
		if p.cluster {
			p.pipe.put(rec.Head)
		}
	case base < p.written:
		panic(fmt.Sprintf("replica: partition %s op %d: batch [%d, %d) straddles the segment end %d",
			p.ns, h.Op(), base, base+n, p.written))
	default:
		if base != p.written {
			panic(fmt.Sprintf("replica: partition %s op %d: batch at %d leaves a hole after %d", p.ns, h.Op(), base, p.written))
		}
		p.markCompressed(body)
		p.written = base + n
		p.stats.AppendedMsgs.Add(n)
		p.stats.AppendedBytes.Add(uint64(len(body)))
		p.pipe.stage(p, rec, n)
	}
	return reply
}

// kindCount is how many offset keys of kind the partition holds.
func (p *Partition) kindCount(kind uint8) int {
	if p.kindCounts == nil {
		p.kindCounts = map[uint8]int{}
		for k := range p.offsets {
			p.kindCounts[k.Kind]++
		}
	}
	return p.kindCounts[kind]
}

// deleteOffsetKey removes k's offset, freeing its slot under the cap.
func (p *Partition) deleteOffsetKey(k OffsetKey) {
	if _, ok := p.offsets[k]; !ok {
		return
	}
	delete(p.offsets, k)
	if p.kindCounts != nil {
		p.kindCounts[k.Kind]--
	}
}

// OffsetsFull reports whether storing k would be refused by the cap.
func (p *Partition) OffsetsFull(k OffsetKey) bool {
	if _, ok := p.offsets[k]; ok {
		return false
	}
	return p.kindCount(k.Kind) >= p.cfg.ConsumerOffsetsMax
}

// notePolled records that a group poll returned messages up to last.
func (p *Partition) notePolled(group uint32, last uint64) {
	if p.lastPolled == nil {
		p.lastPolled = map[uint32]uint64{}
	}
	if old, ok := p.lastPolled[group]; !ok || last > old {
		p.lastPolled[group] = last
	}
	p.noteGroup(OffsetKey{Kind: wire.ConsumerKindGroup, ID: group})
}

// noteGroup republishes whether group k has polled, uncommitted messages.
func (p *Partition) noteGroup(k OffsetKey) {
	if k.Kind != wire.ConsumerKindGroup {
		return
	}
	polled, ok := p.lastPolled[k.ID]
	committed, has := p.offsets[k]
	inFlight := ok && (!has || committed < polled)
	s := p.stats
	s.groupMu.Lock()
	if has {
		if s.committed == nil {
			s.committed = map[uint32]uint64{}
		}
		s.committed[k.ID] = committed
	} else {
		delete(s.committed, k.ID)
	}
	if inFlight {
		if s.inFlight == nil {
			s.inFlight = map[uint32]bool{}
		}
		s.inFlight[k.ID] = true
	} else {
		delete(s.inFlight, k.ID)
	}
	s.groupMu.Unlock()
}

// clearPolled forgets every group's polls (purge, state transfer).
func (p *Partition) clearPolled() {
	clear(p.lastPolled)
	p.stats.groupMu.Lock()
	clear(p.stats.inFlight)
	clear(p.stats.committed)
	p.stats.groupMu.Unlock()
}
