package partition

import (
	"encoding/binary"
	"testing"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// testHost is a partition.Host that records what the partition asks of
// its group; proposals wait in proposed until the test commits them.
type testHost struct {
	leading   bool
	proposed  []proposal
	failed    []error
	ckptAfter []uint64
	installs  int
	// The superblock record RecordCheckpoint keeps.
	ckptOp   uint64
	ckptSum  superblock.Uint128
	frontier uint64
}

type proposal struct {
	req  vsr.Request
	done func(Outcome)
}

func (h *testHost) Propose(req vsr.Request, done func(Outcome)) {
	h.proposed = append(h.proposed, proposal{req, done})
}
func (h *testHost) Leading() bool             { return h.leading }
func (h *testHost) CheckpointAfter(op uint64) { h.ckptAfter = append(h.ckptAfter, op) }
func (h *testHost) RecordCheckpoint(op uint64, sum superblock.Uint128, frontier uint64) error {
	h.ckptOp, h.ckptSum, h.frontier = op, sum, max(h.frontier, frontier)
	return nil
}
func (h *testHost) Fail(err error) { h.failed = append(h.failed, err) }
func (h *testHost) Stopped() bool  { return len(h.failed) > 0 }
func (h *testHost) Installed()     { h.installs++ }

// rig is one partition on a fault filesystem, driven the way its group
// drives it: ops applied in order, then the shard's pipeline flush.
type rig struct {
	t    testing.TB
	fs   *vfs.Fault
	cfg  Config
	host *testHost
	pipe *Pipeline
	p    *Partition
	op   uint64
	// journal is every op applied, for replays after a reopen.
	journal []journaled
}

type journaled struct {
	operation uint8
	ts        uint64
	body      []byte
}

func topicConfig(d metadata.Durability) metadata.TopicConfig {
	c := metadata.TopicConfig{TopicSettings: wire.DefaultTopicSettings(), Durability: d, ConsumerOffsetDurability: d}
	c.SegmentSize = 1 << 20
	return c
}

func newRig(t testing.TB, seed uint64, cluster bool) *rig {
	t.Helper()
	r := &rig{t: t, fs: vfs.NewFault(seed), host: &testHost{leading: true}}
	r.pipe = NewPipeline(0, nil)
	r.cfg = Config{Dir: Dir("/data", 1, 2, 3), Stream: 1, Topic: 2, ID: 3, Revision: 7,
		TopicConfig: topicConfig(metadata.DurabilityPersisted), Cluster: cluster, MaxRecordSize: 1 << 20,
		ConsumerOffsetsMax: 1000, PollBufferMax: 1 << 20, Codec: codec.NewStack(nil, 1<<20), Pipeline: r.pipe}
	r.open()
	return r
}

// open opens the partition (again) on the rig's filesystem.
func (r *rig) open() {
	r.t.Helper()
	p, err := Open(r.fs, r.cfg, r.host)
	if err != nil {
		r.t.Fatal(err)
	}
	p.Start(nil)
	r.p = p
}

func header(op uint64, operation uint8, ts uint64) *vsr.Header {
	var h vsr.Header
	binary.LittleEndian.PutUint64(h[128:], op) // prepare op
	binary.LittleEndian.PutUint64(h[144:], ts) // prepare timestamp
	h[176] = operation
	return &h
}

// apply applies the next op and flushes the pipeline, as a shard does
// after the ops one iteration commits.
func (r *rig) apply(operation uint8, body []byte) []byte {
	r.t.Helper()
	r.op++
	ts := 1_000_000 + r.op
	r.journal = append(r.journal, journaled{operation, ts, append([]byte(nil), body...)})
	reply := r.p.Apply(header(r.op, operation, ts), body)
	r.flush()
	return reply
}

func (r *rig) flush() {
	var b vfs.Batch
	r.pipe.Flush(&b, r.fs.Submit)
}

// commit applies every proposal in order and reports its outcome.
func (r *rig) commit() {
	for len(r.host.proposed) > 0 {
		pr := r.host.proposed[0]
		r.host.proposed = r.host.proposed[1:]
		reply := r.apply(pr.req.Operation, pr.req.Body)
		pr.done(Outcome{VStatus: vsr.StatusOK, Reply: reply})
	}
}

func (r *rig) code(reply []byte) uint32 {
	r.t.Helper()
	c, ok := ReplyCode(reply)
	if !ok {
		r.t.Fatalf("reply of %d bytes is no code", len(reply))
	}
	return c
}

// send applies a batch of n messages of size bytes whose payloads start
// with their sequence numbers from first, returning its base offset.
func (r *rig) send(first uint64, n, size int) uint64 {
	r.t.Helper()
	reply := r.apply(OpSend, testBatch(r.t, first, n, size))
	return binary.LittleEndian.Uint64(reply)
}

func testBatch(t testing.TB, first uint64, n int, size int) []byte {
	msgs := make([]wire.Message, n)
	for i := range msgs {
		p := make([]byte, size)
		binary.LittleEndian.PutUint64(p, first+uint64(i))
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: first + uint64(i) + 1}, OriginTimestamp: 1000, Payload: p}
	}
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pollOffsets polls count messages from offset from and returns the
// offset and payload sequence of each message returned.
func (r *rig) pollOffsets(from uint64, count uint32) (offs, seqs []uint64, res *PollResult) {
	r.t.Helper()
	res = new(PollResult)
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollFromOffset(from), Count: count}, res); code != 0 {
		r.t.Fatalf("poll from %d: code %d", from, code)
	}
	var rec []byte
	for _, part := range res.Parts {
		rec = append(rec, part...)
	}
	for len(rec) > 0 {
		v, err := wire.ParseBatch(rec[:binary.LittleEndian.Uint64(rec[32:])])
		if err != nil {
			r.t.Fatal(err)
		}
		it := v.Frames()
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			offs = append(offs, v.BaseOffset()+uint64(f.OffsetDelta()))
			seqs = append(seqs, binary.LittleEndian.Uint64(f.Payload()))
		}
		rec = rec[v.Len():]
	}
	return offs, seqs, res
}
