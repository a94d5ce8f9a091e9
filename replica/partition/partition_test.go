package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/wire"
)

// Sends get dense offsets from 0, the pipeline writes them, and a poll
// returns exactly the range asked for, cutting the first and last record.
func TestApplySendAndPoll(t *testing.T) {
	r := newRig(t, 1, false)
	var seq uint64
	for i := 0; i < 5; i++ {
		if base := r.send(seq, 10, 100); base != seq {
			t.Fatalf("batch %d at offset %d, want %d", i, base, seq)
		}
		seq += 10
	}
	if r.p.NextOffset() != 50 || r.p.Current() != 49 || r.p.Stats().Messages.Load() != 50 {
		t.Fatalf("next %d current %d published %d", r.p.NextOffset(), r.p.Current(), r.p.Stats().Messages.Load())
	}
	offs, seqs, res := r.pollOffsets(13, 25)
	if len(offs) != 25 || res.Count != 25 || res.LastOffset != 37 || res.Current != 49 || res.Partition != 3 {
		t.Fatalf("poll [13,+25): %d messages, count %d, last %d, current %d", len(offs), res.Count, res.LastOffset, res.Current)
	}
	for i, o := range offs {
		if o != 13+uint64(i) || seqs[i] != o {
			t.Fatalf("message %d: offset %d seq %d", i, o, seqs[i])
		}
	}
	if r.p.Stats().PolledMsgs.Load() != 25 {
		t.Fatalf("polled messages %d", r.p.Stats().PolledMsgs.Load())
	}
	// Past the end: an empty poll that waits for that offset.
	_, _, res = r.pollOffsets(50, 5)
	if res.Count != 0 || !res.Waitable || res.Need != 50 {
		t.Fatalf("poll past the end: %+v", res)
	}
	// PollLast, PollNext (from the stored offset) and an unknown strategy.
	var pr PollResult
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollingStrategy{Kind: wire.PollLast}, Count: 4}, &pr); code != 0 || pr.Count != 4 || pr.LastOffset != 49 {
		t.Fatalf("last 4: code %d count %d last %d", code, pr.Count, pr.LastOffset)
	}
	k := OffsetKey{Kind: wire.ConsumerKindSingle, ID: 1}
	req, code := r.p.StoreOffsetRequest(k, 19, 0, 1)
	if code != 0 || r.code(r.apply(req.Operation, req.Body)) != 0 {
		t.Fatalf("store: code %d", code)
	}
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollingStrategy{Kind: wire.PollNext}, Count: 3, Key: k}, &pr); code != 0 || pr.Count != 3 || pr.LastOffset != 22 {
		t.Fatalf("next 3 after 19: code %d count %d last %d", code, pr.Count, pr.LastOffset)
	}
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollingStrategy{Kind: 99}, Count: 3}, &pr); code != wire.CodeInvalidCommand {
		t.Fatalf("unknown strategy: code %d", code)
	}
	// A store beyond the current offset is refused before the group.
	if _, code := r.p.StoreOffsetRequest(k, 50, 0, 1); code != wire.CodeInvalidOffset {
		t.Fatalf("store past the end: code %d", code)
	}
}

// A restart replays the journal over segments that already hold the
// batches: nothing is written twice, and the state is the same.
func TestReplayAfterReopen(t *testing.T) {
	r := newRig(t, 2, false)
	for i := uint64(0); i < 4; i++ {
		r.send(i*5, 5, 50)
	}
	size := r.p.Stats().Size.Load()
	r.p.Close()
	r.open()
	if r.p.Current() != 19 || r.p.NextOffset() != 0 {
		t.Fatalf("reopened: current %d next %d (the segments serve before replay)", r.p.Current(), r.p.NextOffset())
	}
	for i, j := range r.journal {
		r.p.Apply(header(uint64(i+1), j.operation, j.ts), j.body)
	}
	r.flush()
	if r.p.NextOffset() != 20 || r.p.Stats().Size.Load() != size {
		t.Fatalf("after replay: next %d, %d bytes (was %d)", r.p.NextOffset(), r.p.Stats().Size.Load(), size)
	}
}

// partition.consumer_offsets_max: the cap travels in the op, so a node
// with another cap replaying it gets the same outcome; stored keys move,
// other kinds are counted apart, a delete frees a slot, an auto-commit
// of a new key at the cap is refused before the group.
func TestConsumerOffsetsCap(t *testing.T) {
	r := newRig(t, 3, false)
	r.cfg.ConsumerOffsetsMax = 3
	r.p.cfg.ConsumerOffsetsMax = 3
	r.send(0, 10, 100)
	store := func(kind uint8, id uint32, v uint64) uint32 {
		t.Helper()
		req, code := r.p.StoreOffsetRequest(OffsetKey{kind, id}, v, 0, 1)
		if code != 0 {
			t.Fatalf("store %d/%d refused at admission: %d", kind, id, code)
		}
		return r.code(r.apply(req.Operation, req.Body))
	}
	full := uint32(CodeOffsetsFull)
	for id := uint32(0); id < 3; id++ {
		if code := store(wire.ConsumerKindSingle, id, 1); code != 0 {
			t.Fatalf("consumer %d under the cap: code %d", id, code)
		}
	}
	if code := store(wire.ConsumerKindSingle, 3, 1); code != full {
		t.Fatalf("fourth consumer with a cap of 3: code %d", code)
	}
	if _, ok := r.p.StoredOffset(OffsetKey{wire.ConsumerKindSingle, 3}); ok {
		t.Fatal("a refused store was applied")
	}
	if code := store(wire.ConsumerKindGroup, 9, 2); code != 0 {
		t.Fatalf("a group offset counts against the consumers' cap: code %d", code)
	}
	if code := store(wire.ConsumerKindSingle, 1, 5); code != 0 {
		t.Fatalf("update at the cap: code %d", code)
	}
	if _, _, code := r.p.AutoCommitRequest(OffsetKey{wire.ConsumerKindSingle, 4}, 3, 0, 1); code != CodeOffsetsFull {
		t.Fatalf("auto-commit of a new key at the cap: code %d", code)
	}
	if _, store, code := r.p.AutoCommitRequest(OffsetKey{wire.ConsumerKindSingle, 1}, 5, 0, 1); store || code != 0 {
		t.Fatalf("auto-commit that moves nothing: store %v code %d", store, code)
	}
	req, code := r.p.DeleteOffsetRequest(OffsetKey{wire.ConsumerKindSingle, 0}, 0, 1)
	if code != 0 || r.code(r.apply(req.Operation, req.Body)) != 0 {
		t.Fatalf("delete: code %d", code)
	}
	if _, code := r.p.DeleteOffsetRequest(OffsetKey{wire.ConsumerKindSingle, 0}, 0, 1); code != wire.CodeConsumerOffsetNotFound {
		t.Fatalf("delete of an absent key: code %d", code)
	}
	if code := store(wire.ConsumerKindSingle, 3, 7); code != 0 {
		t.Fatalf("store after a delete freed a slot: code %d", code)
	}
	// Checkpoint, one more refused op above it, and a node with a larger
	// cap restores and replays: the refusal stands.
	if _, err := r.p.Checkpoint(r.op, nil); err != nil {
		t.Fatal(err)
	}
	ckpt := r.op
	if code := store(wire.ConsumerKindSingle, 5, 1); code != full {
		t.Fatalf("store over the cap: code %d", code)
	}
	above := r.journal[ckpt:]
	r.p.Close()
	r.cfg.ConsumerOffsetsMax = 100
	r.open()
	if _, _, err := r.p.Restore(ckpt); err != nil {
		t.Fatal(err)
	}
	for i, j := range above {
		if code := r.code(r.p.Apply(header(ckpt+uint64(i)+1, j.operation, j.ts), j.body)); code != full {
			t.Fatalf("replayed refusal: code %d", code)
		}
	}
	if r.p.OffsetCount() != 4 {
		t.Fatalf("%d offsets after restore and replay, want 4", r.p.OffsetCount())
	}
	if v, ok := r.p.StoredOffset(OffsetKey{wire.ConsumerKindSingle, 1}); !ok || v != 5 {
		t.Fatalf("restored offset %d (%v)", v, ok)
	}
}

// A purge empties the partition once per generation: offsets go, the
// segments restart at the next offset, purge.gen records it, and a
// replay of the same op after a reopen purges nothing appended since.
// A damaged purge.gen fails the open with ErrDamaged, so a cluster node
// quarantines the partition and refills it from its peers instead of
// failing to boot (real-stack simulator, seed 101535: bit rot in purge.gen
// stopped the node's boot).
func TestDamagedPurgeGenIsDamaged(t *testing.T) {
	r := newRig(t, 14, true)
	r.send(0, 3, 100)
	r.p.Purge(1, 1)
	r.commit()
	r.p.Close()
	path := r.cfg.Dir + "/purge.gen"
	b, err := vfs.ReadFile(r.fs, path)
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 0x10
	if err := vfs.WriteFileAtomic(r.fs, path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(r.fs, r.cfg, r.host)
	if err == nil || !Damaged(err) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("open over a damaged purge.gen: %v", err)
	}
}

func TestPurge(t *testing.T) {
	r := newRig(t, 4, false)
	r.send(0, 10, 100)
	req, _ := r.p.StoreOffsetRequest(OffsetKey{1, 1}, 5, 0, 1)
	r.apply(req.Operation, req.Body)
	r.p.Purge(1, 1)
	// Until the op applies, polls answer as purged.
	var pr PollResult
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollFromOffset(0), Count: 5}, &pr); code != 0 || pr.Count != 0 || !pr.Waitable {
		t.Fatalf("poll with a purge pending: code %d count %d waitable %v", code, pr.Count, pr.Waitable)
	}
	r.commit()
	if r.p.PurgeGen() != 1 || r.p.OffsetCount() != 0 || r.p.Stats().Messages.Load() != 0 || r.p.Stats().PurgeGen.Load() != 1 {
		t.Fatalf("after purge: gen %d, %d offsets, %d messages", r.p.PurgeGen(), r.p.OffsetCount(), r.p.Stats().Messages.Load())
	}
	b, err := vfs.ReadFile(r.fs, r.cfg.Dir+"/purge.gen")
	if gen, ok := decodePurgeGen(b); err != nil || !ok || gen != 1 {
		t.Fatalf("purge.gen % x (%v)", b, err)
	}
	if base := r.send(10, 5, 100); base != 10 {
		t.Fatalf("send after purge at %d, want 10 (offsets continue)", base)
	}
	r.p.Close()
	r.open()
	for i, j := range r.journal {
		r.p.Apply(header(uint64(i+1), j.operation, j.ts), j.body)
	}
	r.flush()
	offs, _, _ := r.pollOffsets(0, 100)
	if len(offs) != 5 || offs[0] != 10 {
		t.Fatalf("after replay the partition serves %v, want offsets 10..14", offs)
	}
}

// Single node: a retention pass deletes the leading sealed segments the
// size rule selects, never the active one; DeleteOldest deletes by count.
func TestRetentionSingleNode(t *testing.T) {
	r := newRig(t, 5, false)
	var seq uint64
	for len(r.p.seg.Segments()) < 4 {
		r.send(seq, 20, 1000)
		seq += 20
	}
	segs := r.p.seg.Segments()
	tp := retentionTopic(r, uint64(segs[3].Size+segs[2].Size))
	if keep, _, over := r.p.RetentionKeep(tp, 1); keep != segs[1].NextOffset || over != 2 {
		t.Fatalf("RetentionKeep: keep %d over %d, want %d and 2", keep, over, segs[1].NextOffset)
	}
	r.p.Clean(tp, 1)
	if len(r.host.proposed) != 0 || r.p.seg.FirstOffset() != segs[2].StartOffset {
		t.Fatalf("single node: %d proposals, first offset %d (want %d)", len(r.host.proposed), r.p.seg.FirstOffset(), segs[2].StartOffset)
	}
	if err := r.p.DeleteOldest(5); err != nil || len(r.p.seg.Segments()) != 1 || r.p.Stats().Segments.Load() != 1 {
		t.Fatalf("DeleteOldest: %v, %d segments", err, len(r.p.seg.Segments()))
	}
}

// Auto-commit, group polls and the published in-flight state of a
// consumer group (cooperative rebalancing reads it).
func TestGroupInFlight(t *testing.T) {
	r := newRig(t, 6, false)
	r.send(0, 10, 10)
	k := OffsetKey{Kind: wire.ConsumerKindGroup, ID: 4}
	var pr PollResult
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollingStrategy{Kind: wire.PollNext}, Count: 3, Key: k}, &pr); code != 0 || pr.Count != 3 {
		t.Fatalf("group poll: code %d count %d", code, pr.Count)
	}
	if in, _, has := r.p.Stats().GroupState(4); !in || has {
		t.Fatalf("after a poll: in flight %v, committed %v", in, has)
	}
	req, store, code := r.p.AutoCommitRequest(k, pr.LastOffset, 0, 1)
	if !store || code != 0 {
		t.Fatalf("auto-commit: store %v code %d", store, code)
	}
	r.apply(req.Operation, req.Body)
	if in, c, has := r.p.Stats().GroupState(4); in || !has || c != 2 {
		t.Fatalf("after the commit: in flight %v, committed %d (%v)", in, c, has)
	}
	r.p.DropGroupOffsets(4, 1)
	r.commit()
	if _, _, has := r.p.Stats().GroupState(4); has || r.p.OffsetCount() != 0 {
		t.Fatal("drop group left the offset")
	}
}

// A failed segment write fails the group through the host and drops the
// pending records, without panicking the shard.
func TestPipelineWriteFailure(t *testing.T) {
	r := newRig(t, 7, false)
	r.send(0, 5, 10)
	rule := r.fs.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: r.cfg.Dir + "/0", Action: vfs.Fail})
	r.op++
	r.p.Apply(header(r.op, OpSend, 1), testBatch(t, 5, 5, 10))
	r.flush()
	if r.fs.Fired(rule) == 0 || len(r.host.failed) != 1 || len(r.p.w.pending) != 0 {
		t.Fatalf("fired %d, failures %v, %d pending", r.fs.Fired(rule), r.host.failed, len(r.p.w.pending))
	}
}

// Writeback hints ride the submission StageSyncs fills, at the cadence
// the pipeline was made with, covering what was appended.
func TestPipelineWritebackHints(t *testing.T) {
	r := newRig(t, 8, false)
	r.pipe.writebackBytes = 64 << 10
	var seq uint64
	for i := 0; i < 40; i++ {
		r.send(seq, 10, 1000)
		seq += 10
		if r.pipe.SyncsDue() {
			var b vfs.Batch
			finish := r.pipe.StageCommit(&b)
			finish(r.fs.Submit(&b))
		}
	}
	st := r.fs.Writebacks(r.cfg.Dir + "/00000000000000000000.log")
	written := r.p.seg.Size()
	if st.Calls < int(written/(64<<10))-1 || st.End > written || st.End < written-(64<<10)-4096 || st.Bytes != st.End {
		t.Fatalf("hints %+v for %d bytes written at a 64 KiB cadence", st, written)
	}
}

func TestOpCodec(t *testing.T) {
	b := EncodeStoreOffset(OffsetKey{2, 0x01020304}, 0x1122334455667788, true, 9)
	if len(b) != 18 || b[0] != 2 || binary.LittleEndian.Uint32(b[1:]) != 0x01020304 ||
		binary.LittleEndian.Uint64(b[5:]) != 0x1122334455667788 || b[13] != 1 || binary.LittleEndian.Uint32(b[14:]) != 9 {
		t.Fatalf("store offset % x", b)
	}
	if d := EncodeDeleteOffset(OffsetKey{1, 7}); len(d) != 5 || d[0] != 1 || binary.LittleEndian.Uint32(d[1:]) != 7 {
		t.Fatalf("delete offset % x", d)
	}
	if len(EncodePurge(3)) != 8 || len(EncodeDeleteSegments(3)) != 8 || len(EncodeDropGroup(3)) != 4 {
		t.Fatal("body sizes")
	}
	if OpSend != 160 || OpStoreOffset != 161 || OpDeleteOffset != 162 || OpPurge != 170 || OpDropGroupOffsets != 171 || OpDeleteSegments != 172 {
		t.Fatal("operation numbers moved")
	}
	// An uncapped (14-byte) store journaled before the cap applies without one.
	r := newRig(t, 9, false)
	r.send(0, 1, 8)
	if code := r.code(r.apply(OpStoreOffset, EncodeStoreOffset(OffsetKey{1, 1}, 0, false, 0)[:14])); code != 0 {
		t.Fatalf("uncapped store: code %d", code)
	}
	if r.p.SyncAppend(header(1, OpSend, 0)) != true {
		t.Fatal("a persisted topic's send must sync its append")
	}
}

// Without writeback hints, a partition that accumulated the sync floor
// (16,384 messages here) is due a segment sync in the next submission;
// completing it resets the count.
func TestPipelinePeriodicSync(t *testing.T) {
	r := newRig(t, 10, false)
	var seq uint64
	for seq < segmentSyncMessagesMin-1000 {
		r.send(seq, 1000, 8)
		seq += 1000
	}
	if r.pipe.SyncsDue() {
		t.Fatalf("sync due after %d messages, below the floor", seq)
	}
	r.send(seq, 1000, 8)
	if !r.pipe.SyncsDue() {
		t.Fatalf("no sync due after %d messages", seq+1000)
	}
	var b vfs.Batch
	s := r.pipe.StageSyncs(&b)
	if len(s.plans) != 1 || b.Empty() {
		t.Fatalf("%d sync plans staged, batch empty %v", len(s.plans), b.Empty())
	}
	r.pipe.FinishSyncs(s, r.fs.Submit(&b))
	if r.p.w.unsyncedMsgs != 0 || r.pipe.SyncsDue() || len(r.host.failed) != 0 {
		t.Fatalf("after the sync: %d unsynced, due %v, failures %v", r.p.w.unsyncedMsgs, r.pipe.SyncsDue(), r.host.failed)
	}
}

// The incarnation file tells an earlier partition's directory (wiped) from
// damage (refused as ErrDamaged, nothing removed): a rotted revision must
// not wipe a replica's storage and let it vote as if it held nothing.
func TestIncarnationFile(t *testing.T) {
	r := newRig(t, 11, true)
	r.send(0, 3, 16)
	r.p.Close()
	path := r.cfg.Dir + "/" + IncarnationFile
	good, err := vfs.ReadFile(r.fs, path)
	if err != nil {
		t.Fatal(err)
	}
	if rev, legacy, ok := decodeIncarnation(good); !ok || legacy || rev != r.cfg.Revision {
		t.Fatalf("incarnation %q decodes to %d legacy=%v ok=%v", good, rev, legacy, ok)
	}
	segments := func() int {
		ents, err := r.fs.ReadDir(r.cfg.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	files := segments()

	// One flipped digit of the revision: damage, not an earlier partition.
	bad := append([]byte(nil), good...)
	bad[0] ^= 0x01
	if err := vfs.WriteFileAtomic(r.fs, path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(r.fs, r.cfg, r.host); !Damaged(err) {
		t.Fatalf("open with a damaged incarnation file: %v, want ErrDamaged", err)
	}
	if got := segments(); got != files {
		t.Fatalf("the damaged directory went from %d to %d entries", files, got)
	}

	// A file written before the checksum is read and rewritten with it.
	if err := vfs.WriteFileAtomic(r.fs, path, []byte("7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.open()
	r.p.Close()
	if b, _ := vfs.ReadFile(r.fs, path); !bytes.Equal(b, good) {
		t.Fatalf("legacy incarnation rewritten as %q, want %q", b, good)
	}

	// Another revision's directory is wiped.
	if err := vfs.WriteFileAtomic(r.fs, path, encodeIncarnation(6), 0o644); err != nil {
		t.Fatal(err)
	}
	r.open()
	if n := r.p.NextOffset(); n != 0 {
		t.Fatalf("an earlier partition's directory kept %d messages", n)
	}
}

// A poll that reads back fewer bytes than the segment log holds (a lost or
// misdirected write) stops the group as damage, so a restart refills the
// partition, instead of failing every poll (real-stack simulator, seed
// 600389).
func TestShortSegmentReadStopsTheGroup(t *testing.T) {
	r := newRig(t, 18, true)
	r.send(0, 10, 100)
	segs := r.p.seg.Segments()
	f, err := r.fs.OpenFile(segs[0].LogPath, vfs.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(segs[0].Size / 2); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	var pr PollResult
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollFromOffset(0), Count: 10}, &pr); code == 0 {
		t.Fatal("a poll over a truncated segment succeeded")
	}
	if len(r.host.failed) == 0 || !errors.Is(r.host.failed[0], ErrDamaged) {
		t.Fatalf("the group runs on after a short segment read: %v", r.host.failed)
	}
}

// TestPollAllocatesNothing: a poll of stored messages into a buffer large
// enough for them allocates nothing on the warm path.
func TestPollAllocatesNothing(t *testing.T) {
	r := newRig(t, 1, false)
	for seq := uint64(0); seq < 50; seq += 10 {
		r.send(seq, 10, 100)
	}
	req := PollRequest{Strategy: wire.PollingStrategy{Kind: wire.PollOffset, Value: 5}, Count: 20, Buf: make([]byte, 256<<10)}
	var pr PollResult
	poll := func() {
		buf, code := r.p.Poll(req, &pr)
		if code != 0 || pr.Count != 20 {
			t.Fatalf("poll: code %d count %d", code, pr.Count)
		}
		req.Buf = buf
	}
	poll()
	if n := testing.AllocsPerRun(100, poll); n != 0 {
		t.Fatalf("a poll allocates %.1f times", n)
	}
}

// A replicated partition stamps a copy of the batch header only: the
// prepare body (which the replica retransmits and peers verify against its
// checksum) is left exactly as journaled, and the segment holds the
// stamped header followed by the body's frames, a record that verifies.
func TestClusterApplyLeavesPrepareBody(t *testing.T) {
	r := newRig(t, 21, true)
	r.send(0, 4, 50) // offsets 0..3: the next batch is stamped at 4
	body := testBatch(t, 4, 6, 200)
	orig := bytes.Clone(body)
	reply := r.apply(OpSend, body)
	if base := binary.LittleEndian.Uint64(reply); base != 4 {
		t.Fatalf("base offset %d, want 4", base)
	}
	if !bytes.Equal(body, orig) {
		t.Fatal("Apply wrote into the prepare body of a replicated partition")
	}
	res := new(PollResult)
	if _, code := r.p.Poll(PollRequest{Strategy: wire.PollFromOffset(4), Count: 6}, res); code != 0 || res.Count != 6 {
		t.Fatalf("poll: code %d count %d", code, res.Count)
	}
	var rec []byte
	for _, part := range res.Parts {
		rec = append(rec, part...)
	}
	v, err := wire.VerifyBatch(rec)
	if err != nil {
		t.Fatalf("stored record does not verify: %v", err)
	}
	if h := v.Header(); h.BaseOffset != 4 || h.PartitionID != 3 || h.BaseTimestamp != 1_000_000+r.op {
		t.Fatalf("stored header %+v", h)
	}
	if !bytes.Equal(rec[wire.BatchHeaderSize:], orig[wire.BatchHeaderSize:]) {
		t.Fatal("stored frames differ from the prepare body's")
	}
}
