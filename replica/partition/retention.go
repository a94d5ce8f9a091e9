package partition

import (
	"math"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Retention. A pass (Clean, every data_maintenance.messages.interval)
// picks the leading sealed segments that the topic's message_expiry
// (against this node's clock) or the partition's share of max_topic_size
// (max_topic_size / partition count) deletes; the active segment never
// goes. A single node deletes them at once. In cluster mode the replicas
// must hold identical segments, so only the group's primary in normal
// status evaluates retention, and it proposes a delete-segments op (172)
// naming the end offset of the last segment to delete: every replica
// applies it in log order with deleteSealedThrough, which deletes the same
// segments on every replica (their boundaries are a function of the log),
// and a replay or a duplicate proposal deletes nothing more.

// RetentionKeep returns the first offset the topic's retention keeps in
// this partition at now (0: nothing to delete) and how many leading
// segments the expiry and the size rule each select.
func (p *Partition) RetentionKeep(t *metadata.Topic, now uint64) (keep uint64, expired, oversize int) {
	if e := t.Config.MessageExpiry; e != 0 && e != math.MaxUint64 && now > e {
		expired = p.seg.ExpiredPrefix(now - e)
	}
	if m := t.Config.MaxTopicSize; m != 0 && m != math.MaxUint64 {
		oversize = p.seg.OversizePrefix(m / uint64(max(1, len(t.Partitions))))
	}
	if k := max(expired, oversize); k > 0 {
		keep = p.seg.Segments()[k-1].NextOffset
	}
	return keep, expired, oversize
}

// KeepFrom is the first offset kept when the oldest n sealed segments are
// deleted (the body of a DELETE_SEGMENTS op in cluster mode).
func (p *Partition) KeepFrom(n int) uint64 {
	segs := p.seg.Segments()
	sealed := 0
	for _, si := range segs {
		if si.Sealed {
			sealed++
		}
	}
	n = min(max(n, 0), sealed)
	if n == 0 {
		return p.seg.FirstOffset()
	}
	return segs[n-1].NextOffset
}

// DeleteOldest deletes the oldest n sealed segments at once (a single
// node's DELETE_SEGMENTS).
func (p *Partition) DeleteOldest(n int) error {
	if err := p.flushSegments(); err != nil {
		p.failOn(err)
		return err
	}
	_, err := p.seg.DeleteOldestSegments(n)
	if err != nil {
		p.log.Error("delete segments failed", zap.Error(err))
	}
	p.publish()
	return err
}

// deleteSealedThrough deletes the leading sealed segments that end at or
// below keep (NextOffset ≤ keep) and returns how many it deleted. It stops
// at the first segment that ends above keep or is not sealed, so it is
// idempotent and never touches the active segment.
func (p *Partition) deleteSealedThrough(keep uint64) (int, error) {
	if err := p.flushSegments(); err != nil {
		p.failOn(err)
		return 0, err
	}
	n := p.seg.SealedPrefixThrough(keep)
	if n == 0 {
		return 0, nil
	}
	segs := p.seg.Segments()
	k, err := p.seg.DeleteOldestSegments(n)
	for _, si := range segs[:k] {
		// The transfer caches of the other segments stay valid.
		delete(p.sealedSums, si.StartOffset)
		if p.segHash != nil && p.segHash.start == si.StartOffset {
			p.segHash = nil
		}
	}
	p.avgRecord = 0
	p.publish()
	return k, err
}

// Clean runs a retention pass over this partition (t: its topic, nil when
// gone).
func (p *Partition) Clean(t *metadata.Topic, now uint64) {
	if t == nil {
		return
	}
	if p.cluster {
		p.proposeRetention(t, now)
		return
	}
	if p.failOn(p.flushSegments()) {
		return
	}
	keep, expired, oversize := p.RetentionKeep(t, now)
	if keep == 0 {
		return
	}
	n, err := p.deleteSealedThrough(keep)
	if err != nil {
		p.log.Error("retention failed", zap.Error(err))
	}
	if n > 0 {
		p.log.Info("retention deleted segments", zap.Int("segments", n), zap.Uint64("first_offset", p.seg.FirstOffset()),
			zap.Int("expired", expired), zap.Int("over_size", oversize))
	}
}

// proposeRetention is Clean in cluster mode: the primary proposes the
// deletion (see Retention above); backups leave it to the primary.
func (p *Partition) proposeRetention(t *metadata.Topic, now uint64) {
	if !p.host.Leading() {
		return
	}
	if p.failOn(p.flushSegments()) {
		return
	}
	keep, expired, oversize := p.RetentionKeep(t, now)
	if keep == 0 || keep <= p.retaining {
		// Nothing to delete, or that deletion is already proposed.
		return
	}
	p.retaining = keep
	p.log.Info("retention proposes deleting segments", zap.Uint64("keep_from", keep),
		zap.Int("expired", expired), zap.Int("over_size", oversize))
	p.host.Propose(vsr.Request{Operation: OpDeleteSegments, WallClock: now, Body: EncodeDeleteSegments(keep)}, func(o Outcome) {
		if p.retaining == keep {
			p.retaining = 0
		}
		if o.Status != 0 || o.VStatus != vsr.StatusOK {
			// The next pass proposes it again (if this node still leads).
			p.log.Info("retention op not committed", zap.Uint64("keep_from", keep),
				zap.Stringer("status", wire.Code(o.Status)), zap.Stringer("vsr_status", o.VStatus))
		} else if code, ok := ReplyCode(o.Reply); ok && code != 0 {
			p.log.Error("retention op failed", zap.Uint64("keep_from", keep), zap.Stringer("code", wire.Code(code)))
		}
	})
}
