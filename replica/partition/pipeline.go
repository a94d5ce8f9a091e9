package partition

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/iggo/iggo/segment"
	"github.com/iggo/iggo/shard/vfs"
)

// Segment syncs during normal operation. Durability does not need them:
// the journal holds every acknowledged op (fdatasync'ed under persisted
// durability) until a checkpoint makes the segments durable. What they
// buy is a short checkpoint: without them a checkpoint fdatasyncs a
// whole interval of dirty segment data inside one loop iteration.
//
// Writeback hints (partition.segment_writeback_bytes) buy that without
// waiting: the kernel writes the pages back as they are appended, so the
// checkpoint's fdatasync finds little left. With hints on there are no
// periodic segment fdatasyncs on the ack path; each cost a ~20 ms stall
// every 16 MiB. With hints off (0) the periodic syncs remain: the topic's
// flush thresholds (messages_required_to_save,
// size_of_messages_required_to_save) set their cadence, never finer than
// these floors (a sync per small batch would double the fdatasyncs on the
// ack path for nothing), and they ride the next group commit.
const (
	segmentSyncBytesMin    = 16 << 20
	segmentSyncMessagesMin = 16 << 10
)

// writeState is a partition's part of the pipeline.
type writeState struct {
	pending      []segment.Record // stamped records awaiting their segment write
	queued       bool
	syncWanted   bool // queued for a segment sync in the next group commit
	hintWanted   bool // queued for a writeback hint in the next submission
	relWanted    bool // queued for page-cache release hints (segment.Log.StageRelease)
	unsyncedMsgs uint64
	unsyncedSize uint64
	unhinted     uint64 // segment bytes written since the last writeback hint
}

// Pipeline is a shard's segment write queue over its partitions: Apply
// stages stamped records on it, Flush writes every queued partition's
// records (one vectored write per segment, all in one submission), and
// StageSyncs/FinishSyncs put the segment syncs and writeback hints that
// came due into a submission the shard runs (its group commit, or one of
// their own). It belongs to one shard loop and needs no lock.
type Pipeline struct {
	// writebackBytes is partition.segment_writeback_bytes: segment bytes
	// between writeback hints, 0 for none.
	writebackBytes uint64
	stamps         Buffers
	queue          []*Partition
	syncs          []*Partition
	hints          []*Partition
	releases       []*Partition
}

// NewPipeline returns a shard's pipeline; stamps (nil: allocate) recycles
// the stamped header copies of a replicated partition's records.
func NewPipeline(writebackBytes uint64, stamps Buffers) *Pipeline {
	return &Pipeline{writebackBytes: writebackBytes, stamps: stamps}
}

func (q *Pipeline) get(n int) []byte {
	if q.stamps == nil {
		return make([]byte, n)
	}
	return q.stamps.Get(n)
}

func (q *Pipeline) put(b []byte) {
	if q.stamps != nil {
		q.stamps.Put(b)
	}
}

// stage queues an applied record of n messages for p's segment write.
func (q *Pipeline) stage(p *Partition, rec segment.Record, n uint64) {
	w := &p.w
	w.pending = append(w.pending, rec)
	w.unsyncedMsgs += n
	w.unsyncedSize += uint64(rec.Len())
	if !w.queued {
		w.queued = true
		q.queue = append(q.queue, p)
	}
}

// Queued reports whether records wait for Flush.
func (q *Pipeline) Queued() bool { return len(q.queue) > 0 }

// SyncsDue reports whether segment syncs, writeback hints or page-cache
// releases wait for StageSyncs.
func (q *Pipeline) SyncsDue() bool {
	return len(q.syncs) > 0 || len(q.hints) > 0 || len(q.releases) > 0
}

// wantRelease queues p for page-cache release hints in the next
// submission: a sync of its segments completed, so more of them may be
// durable and old enough to release (partition.segment_cache_bytes).
func (q *Pipeline) wantRelease(p *Partition) {
	if p.segCfg.CacheBytes <= 0 || p.w.relWanted {
		return
	}
	p.w.relWanted = true
	q.releases = append(q.releases, p)
}

type staged struct {
	p  *Partition
	st segment.Staged
}

// Flush writes every queued partition's pending records: one vectored
// write per segment, all in b (reset before and after) and submitted by
// submit, until nothing is queued. A partition whose append fails fails
// its group (Host.Fail) and drops its pending records.
func (q *Pipeline) Flush(b *vfs.Batch, submit func(*vfs.Batch) error) {
	for len(q.queue) > 0 {
		queue := q.queue
		q.queue = nil
		b.Reset()
		var st []staged
		for _, p := range queue {
			p.w.queued = false
			if len(p.w.pending) == 0 || p.host.Stopped() {
				p.w.pending = nil
				continue
			}
			s, err := p.stageAppend(b)
			if err != nil {
				p.host.Fail(fmt.Errorf("staging segment append: %w", err))
				p.w.pending = nil
				continue
			}
			st = append(st, staged{p, s})
		}
		var err error
		if !b.Empty() {
			err = submit(b)
		}
		b.Reset()
		for _, s := range st {
			q.finish(s, err)
		}
	}
}

func (q *Pipeline) finish(s staged, err error) {
	p := s.p
	if ferr := p.finishAppend(s.st, err); ferr != nil {
		p.host.Fail(fmt.Errorf("segment append: %w", ferr))
		p.w.pending = nil
		return
	}
	w := &p.w
	if len(w.pending) > 0 {
		if !w.queued {
			w.queued = true
			q.queue = append(q.queue, p)
		}
	} else {
		w.pending = nil
	}
	p.publish()
	if !w.syncWanted && q.syncDue(p) {
		w.syncWanted = true
		q.syncs = append(q.syncs, p)
	}
	if !w.hintWanted && q.writebackBytes > 0 && w.unhinted >= q.writebackBytes {
		w.hintWanted = true
		q.hints = append(q.hints, p)
	}
}

// syncDue reports whether p's segments should be synced in the next group
// commit.
func (q *Pipeline) syncDue(p *Partition) bool {
	if q.writebackBytes > 0 {
		return false
	}
	return p.w.unsyncedSize >= max(p.flushBytes, segmentSyncBytesMin) ||
		p.w.unsyncedMsgs >= max(uint64(p.flushMessages), segmentSyncMessagesMin)
}

// Syncs are the segment syncs StageSyncs put into a submission.
type Syncs struct {
	plans []plannedSync
}

type plannedSync struct {
	p    *Partition
	plan segment.SyncPlan
}

// StageSyncs puts the due segment syncs and writeback hints into b, the
// submission about to run, so they share it instead of adding a round
// trip to an ack. The syncs are not needed for durability (the journal has
// every acknowledged op); they bound how much a restart re-hashes and
// replays. A hint rides the group commit's submission: the kernel starts
// writing those pages while the journal fdatasync runs, so neither the ack
// path nor the checkpoint's segment fdatasync later waits for a backlog
// of dirty pages. After the submission the caller calls FinishSyncs.
func (q *Pipeline) StageSyncs(b *vfs.Batch) Syncs {
	var out Syncs
	for _, p := range q.syncs {
		p.w.syncWanted = false
		if p.host.Stopped() {
			continue
		}
		plan, err := p.seg.PlanSync()
		if err != nil {
			p.host.Fail(fmt.Errorf("segment sync plan: %w", err))
			continue
		}
		plan.AddTo(b)
		out.plans = append(out.plans, plannedSync{p: p, plan: plan})
	}
	clear(q.syncs)
	q.syncs = q.syncs[:0]
	for _, p := range q.hints {
		p.w.hintWanted = false
		if p.host.Stopped() {
			continue
		}
		p.seg.StageWriteback(b)
		p.w.unhinted = 0
	}
	clear(q.hints)
	q.hints = q.hints[:0]
	for _, p := range q.releases {
		p.w.relWanted = false
		if !p.host.Stopped() {
			p.seg.StageRelease(b)
		}
	}
	clear(q.releases)
	q.releases = q.releases[:0]
	return out
}

// FinishSyncs completes the syncs of a submission that ended with err.
func (q *Pipeline) FinishSyncs(s Syncs, err error) {
	for _, pl := range s.plans {
		if cerr := pl.p.seg.CompleteSync(pl.plan, err); cerr != nil {
			pl.p.host.Fail(fmt.Errorf("segment sync: %w", cerr))
			continue
		}
		pl.p.w.unsyncedMsgs, pl.p.w.unsyncedSize = 0, 0
		q.wantRelease(pl.p)
	}
}

// stageAppend queues p's pending records (as many as the active segment
// takes) in b.
func (p *Partition) stageAppend(b *vfs.Batch) (segment.Staged, error) {
	return p.seg.StageAppend(b, p.w.pending)
}

// finishAppend completes a staged append whose submission ended with err:
// the records written leave pending, feed the transfer checksum and the
// original sizes, and go back to the stamp pool.
func (p *Partition) finishAppend(st segment.Staged, err error) error {
	if ferr := p.seg.FinishAppend(err); ferr != nil {
		return ferr
	}
	recs := p.w.pending[:st.Records]
	for _, r := range recs {
		p.w.unhinted += uint64(r.Len())
	}
	p.followAppend(st, recs)
	p.noteWritten(st.Segment, recs)
	p.releaseWritten(st.Records)
	p.w.pending = p.w.pending[st.Records:]
	return nil
}

// releaseWritten hands the stamped headers of the first n pending records,
// whose segment write has finished, back to the stamp pool (a replicated
// partition's headers are its own stamped copies and its frames alias the
// prepare bodies; a single node's records alias the prepare bodies whole
// and are only dropped).
func (p *Partition) releaseWritten(n int) {
	if p.cluster {
		for _, r := range p.w.pending[:n] {
			p.pipe.put(r.Head)
		}
	}
	clear(p.w.pending[:n])
}

// flushSegments writes this partition's pending records now, through the
// same stage and finish steps as Flush but in a submission of its own
// (checkpoints, purges, retention, close). On a failure the pending
// records are dropped and the error returned: the caller fails the group
// (or, in a checkpoint, returns it, which fails the group), and a restart
// replays the ops from the journal.
func (p *Partition) flushSegments() error {
	for len(p.w.pending) > 0 {
		var b vfs.Batch
		st, err := p.stageAppend(&b)
		if err == nil {
			err = p.finishAppend(st, p.fs.Submit(&b))
		}
		if err != nil {
			p.w.pending = nil
			return fmt.Errorf("replica: partition %s: segment append: %w", p.ns, err)
		}
	}
	p.w.pending = nil
	p.publish()
	return nil
}

// failOn fails the group on a storage error of Apply or retention, which
// cannot return one: the group stops and a restart recovers it from disk.
func (p *Partition) failOn(err error) bool {
	if err == nil {
		return false
	}
	p.log.Error("partition storage failed; its consensus group stops", zap.Error(err))
	p.host.Fail(err)
	return true
}

// WritebackBytes is the pipeline's writeback hint cadence (0: none).
func (q *Pipeline) WritebackBytes() uint64 { return q.writebackBytes }

// StageCommit is StageSyncs for a submission whose outcome comes later:
// it returns the function that completes the syncs with that outcome.
func (q *Pipeline) StageCommit(b *vfs.Batch) func(err error) {
	s := q.StageSyncs(b)
	return func(err error) { q.FinishSyncs(s, err) }
}

// SyncIdle runs the segment syncs and writeback hints that are due on their
// own, for a pass with no group commit to ride (replicated topics journal
// without fdatasync): one submission through submit, then their completion.
func (q *Pipeline) SyncIdle(b *vfs.Batch, submit func(*vfs.Batch) error) {
	if !q.SyncsDue() {
		return
	}
	b.Reset()
	plans := q.StageSyncs(b)
	var err error
	if !b.Empty() {
		err = submit(b)
	}
	b.Reset()
	q.FinishSyncs(plans, err)
}
