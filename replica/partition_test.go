package replica

import (
	"encoding/binary"
	"github.com/zeebo/xxh3"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// faultShard makes the fault-injecting filesystem a shard filesystem.
type faultShard struct{ *vfs.Fault }

func (faultShard) Close() error { return nil }

var testIncarnation uint64

// tb is what the helpers need from testing.T and rapid.T alike.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testShard builds a node with one shard on fsys, not started: the test
// drives the shard loop by hand.
func testShard(t tb, fsys vfs.FS) *shardLoop {
	t.Helper()
	cfg := config.Default()
	cfg.Path = "/data"
	n, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	testIncarnation++
	n.incarnation, n.seed = testIncarnation, 1
	n.store = metadata.NewStore(metadata.NewState())
	sh := newShardLoop(n, 0, faultShard{fsys.(*vfs.Fault)})
	n.shards = []*shardLoop{sh}
	return sh
}

func topicConfig(d metadata.Durability) metadata.TopicConfig {
	c := metadata.TopicConfig{TopicSettings: wire.DefaultTopicSettings(), Durability: d, ConsumerOffsetDurability: d}
	c.SegmentSize = 1 << 20
	return c
}

func testBatch(t tb, first uint64, n int, size int) []byte {
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

// run hands t to the shard and settles it; it reports whether the task was
// answered.
func run(sh *shardLoop, tk *task) bool {
	tk.done = make(chan struct{}, 1)
	sh.dispatch(tk)
	sh.settle()
	select {
	case <-tk.done:
		return true
	default:
		return false
	}
}

func send(t tb, sh *shardLoop, p *partition, body []byte) (uint64, bool) {
	tk := &task{kind: tkSend, ns: p.ns, rev: p.revision, body: body}
	if !run(sh, tk) {
		t.Fatal("send got no answer")
	}
	if tk.status != 0 || tk.vstatus != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(tk.reply), true
}

// readAll polls the whole partition and returns the seq in each message
// payload, indexed by offset.
func readAll(t tb, sh *shardLoop, p *partition) []uint64 {
	var out []uint64
	for {
		tk := &task{kind: tkPoll, ns: p.ns, rev: p.revision, strategy: wire.PollFromOffset(uint64(len(out))), count: 1000}
		if !run(sh, tk) || tk.status != 0 {
			t.Fatalf("poll failed: status %d", tk.status)
		}
		if tk.poll.count == 0 {
			return out
		}
		var rec []byte
		for _, part := range tk.poll.parts {
			rec = append(rec, part...)
		}
		for len(rec) > 0 {
			v, err := wire.ParseBatch(rec[:binary.LittleEndian.Uint64(rec[32:])])
			if err != nil {
				t.Fatal(err)
			}
			it := v.Frames()
			for f, ok := it.Next(); ok; f, ok = it.Next() {
				if off := v.BaseOffset() + uint64(f.OffsetDelta()); off != uint64(len(out)) {
					t.Fatalf("poll returned offset %d where %d was due", off, len(out))
				}
				out = append(out, binary.LittleEndian.Uint64(f.Payload()))
			}
			rec = rec[v.Len():]
		}
	}
}

type ackedBatch struct {
	base  uint64
	first uint64
	n     int
}

// TestPartitionDurabilityModel drives one partition through random sends,
// offset stores and crashes on the fault-injecting filesystem and checks,
// after every recovery, the durability contract against a model: every
// acknowledged message is at its acknowledged offset, offsets are dense,
// the next offset continues right after what is stored, and acknowledged
// consumer offsets survive. Persisted topics survive power loss (unsynced
// writes dropped or torn at random); replicated ones survive kill -9 (the
// kernel keeps every write).
func TestPartitionDurabilityModel(t *testing.T) {
	for _, d := range []metadata.Durability{metadata.DurabilityPersisted, metadata.DurabilityReplicated} {
		t.Run(d.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				mode := vfs.CrashKeepAll
				if d == metadata.DurabilityPersisted {
					mode = vfs.CrashRandom
				}
				fsys := vfs.NewFault(rapid.Uint64().Draw(rt, "seed"))
				// Writeback hints replace the periodic segment syncs (0:
				// periodic syncs, no hints); neither may matter here.
				wb := rapid.SampledFrom([]uint64{0, 64 << 10, 1 << 20}).Draw(rt, "writebackBytes")
				sh := testShard(rt, fsys)
				sh.writebackBytes = wb
				spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(d)}
				p, err := sh.openPartition(spec)
				if err != nil {
					rt.Fatal(err)
				}
				var acked []ackedBatch
				offsets := map[uint32]uint64{}
				var seq uint64
				steps := rapid.IntRange(1, 150).Draw(rt, "steps")
				for i := 0; i < steps; i++ {
					switch op := rapid.IntRange(0, 20).Draw(rt, "op"); {
					case op == 0:
						fsys = fsys.CrashWith(mode)
						sh = testShard(rt, fsys)
						sh.writebackBytes = wb
						if p, err = sh.openPartition(spec); err != nil {
							rt.Fatalf("recovery after step %d: %v", i, err)
						}
						stored := readAll(rt, sh, p)
						for _, a := range acked {
							for k := 0; k < a.n; k++ {
								at := a.base + uint64(k)
								if at >= uint64(len(stored)) || stored[at] != a.first+uint64(k) {
									rt.Fatalf("after crash: acknowledged seq %d at offset %d missing (%d stored)", a.first+uint64(k), at, len(stored))
								}
							}
						}
						if p.next != uint64(len(stored)) {
							rt.Fatalf("after crash: next offset %d, %d messages stored", p.next, len(stored))
						}
						for id, want := range offsets {
							if got, ok := p.offsets[offsetKey{kind: 1, id: id}]; !ok || got != want {
								rt.Fatalf("after crash: consumer %d offset %d (present %v), acknowledged %d", id, got, ok, want)
							}
						}
						// Unacknowledged messages that survived are kept; the
						// model follows the log from here.
						seq = max(seq, maxSeq(stored)+1)
					case op <= 3 && p.next > 0:
						id := uint32(rapid.IntRange(0, 3).Draw(rt, "consumer"))
						v := rapid.Uint64Range(0, p.next-1).Draw(rt, "offset")
						tk := &task{kind: tkStoreOffset, ns: p.ns, rev: p.revision, key: offsetKey{kind: 1, id: id}, offset: v}
						if !run(sh, tk) {
							rt.Fatal("store offset got no answer")
						}
						if tk.status == 0 && tk.vstatus == 0 && replyCode(tk.reply) == 0 {
							offsets[id] = v
						}
					default:
						n := rapid.IntRange(1, 20).Draw(rt, "messages")
						size := rapid.IntRange(8, 1500).Draw(rt, "size")
						base, ok := send(rt, sh, p, testBatch(rt, seq, n, size))
						if ok {
							if len(acked) > 0 && base < expectedNext(acked) {
								rt.Fatalf("offset %d handed out again (acknowledged up to %d)", base, expectedNext(acked))
							}
							acked = append(acked, ackedBatch{base: base, first: seq, n: n})
						}
						seq += uint64(n)
					}
				}
			})
		})
	}
}

// TestPartitionWritebackHints: appended segment data gets writeback hints
// at the configured cadence, covering what was appended, while durability
// stays with the journal: a power loss right after still recovers every
// acknowledged message.
func TestPartitionWritebackHints(t *testing.T) {
	fsys := vfs.NewFault(11)
	sh := testShard(t, fsys)
	if sh.writebackBytes != config.Default().Partition.SegmentWritebackBytes.Bytes() || sh.writebackBytes == 0 {
		t.Fatalf("shard writeback cadence %d, config default %s", sh.writebackBytes, config.Default().Partition.SegmentWritebackBytes)
	}
	sh.writebackBytes = 64 << 10
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityPersisted)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	const batches, msgs, size = 40, 10, 1000 // ~400 KB
	var seq uint64
	for i := 0; i < batches; i++ {
		if _, ok := send(t, sh, p, testBatch(t, seq, msgs, size)); !ok {
			t.Fatalf("send %d refused", i)
		}
		seq += msgs
	}
	logPath := p.dir + "/00000000000000000000.log"
	st := fsys.Writebacks(logPath)
	written := p.seg.Size()
	if st.Calls < int(written/(64<<10))-1 || st.End > written || st.End < written-(64<<10)-4096 {
		t.Fatalf("hints %+v for %d bytes written at a 64 KiB cadence", st, written)
	}
	if st.Bytes != st.End {
		t.Fatalf("hints covered %d bytes up to %d: a range was hinted twice or skipped", st.Bytes, st.End)
	}
	fsys = fsys.CrashWith(vfs.CrashDropAll)
	sh = testShard(t, fsys)
	if p, err = sh.openPartition(spec); err != nil {
		t.Fatal(err)
	}
	stored := readAll(t, sh, p)
	if uint64(len(stored)) != seq {
		t.Fatalf("after power loss %d messages, %d acknowledged", len(stored), seq)
	}
	for i, v := range stored {
		if v != uint64(i) {
			t.Fatalf("offset %d holds seq %d", i, v)
		}
	}
}

func expectedNext(acked []ackedBatch) uint64 {
	a := acked[len(acked)-1]
	return a.base + uint64(a.n)
}

func maxSeq(v []uint64) uint64 {
	var m uint64
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func TestPartitionCheckpointRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		next    uint64
		gen     uint64
		offsets map[offsetKey]uint64
		table   []byte
	}{
		{"empty", 0, 0, nil, nil},
		{"offsets", 1234, 2, map[offsetKey]uint64{{1, 5}: 9, {2, 0}: 100, {1, math.MaxUint32}: 1}, nil},
		{"producers", 7, 0, map[offsetKey]uint64{{1, 5}: 9}, []byte("producer table bytes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &partition{next: tc.next, purgeGen: tc.gen, offsets: tc.offsets}
			b := p.encodeCheckpoint(77, tc.table)
			c, err := decodePartitionCheckpoint(b)
			if err != nil {
				t.Fatal(err)
			}
			if c.op != 77 || c.next != tc.next || c.purgeGen != tc.gen || len(c.offsets) != len(tc.offsets) ||
				string(c.table) != string(tc.table) {
				t.Fatalf("decoded %+v", c)
			}
			for k, v := range tc.offsets {
				if c.offsets[k] != v {
					t.Fatalf("offset %v: %d, want %d", k, c.offsets[k], v)
				}
			}
			b[len(b)/2] ^= 1
			if _, err := decodePartitionCheckpoint(b); err == nil {
				t.Fatal("a damaged checkpoint decoded")
			}
		})
	}
}

// A version 1 checkpoint (before producer tables) still decodes, with no
// table.
func TestPartitionCheckpointVersion1(t *testing.T) {
	b := legacyCheckpointV1(9, 5, 1, 2, 3)
	c, err := decodePartitionCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.op != 9 || c.next != 5 || c.offsets[offsetKey{1, 2}] != 3 || c.table != nil {
		t.Fatalf("decoded %+v", c)
	}
}

// legacyCheckpointV1 builds a version 1 file with one consumer offset.
func legacyCheckpointV1(op, next uint64, kind uint8, id uint32, off uint64) []byte {
	b := make([]byte, 44)
	copy(b, partitionCkptMagic)
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint64(b[16:], op)
	binary.LittleEndian.PutUint64(b[24:], next)
	binary.LittleEndian.PutUint32(b[40:], 1)
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint64(b, off)
	sum := xxh3.Hash128(b)
	b = binary.LittleEndian.AppendUint64(b, sum.Lo)
	return binary.LittleEndian.AppendUint64(b, sum.Hi)
}

func FuzzPartitionCheckpoint(f *testing.F) {
	f.Add((&partition{next: 5, offsets: map[offsetKey]uint64{{1, 2}: 3}}).encodeCheckpoint(9, []byte{1, 2}))
	f.Add(legacyCheckpointV1(9, 5, 1, 2, 3))
	f.Add([]byte(partitionCkptMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodePartitionCheckpoint(b)
		if err != nil {
			return
		}
		p := &partition{next: c.next, purgeGen: c.purgeGen, offsets: c.offsets}
		got := p.encodeCheckpoint(c.op, c.table)
		if binary.LittleEndian.Uint32(b[8:]) == partitionCkptVersion && string(got) != string(b) {
			t.Fatalf("decoded checkpoint re-encodes differently")
		}
		again, err := decodePartitionCheckpoint(got)
		if err != nil || again.op != c.op || again.next != c.next || string(again.table) != string(c.table) || len(again.offsets) != len(c.offsets) {
			t.Fatalf("re-encoded checkpoint decodes differently: %v", err)
		}
	})
}

func FuzzPurgeGen(f *testing.F) {
	b := binary.LittleEndian.AppendUint64(nil, 3)
	f.Add(append(b, make([]byte, 8)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		gen, ok := decodePurgeGen(b)
		if ok && binary.LittleEndian.Uint64(b) != gen {
			t.Fatal("generation mismatch")
		}
	})
}

// TestSegmentChecksumFollowsAppends: in cluster mode the shard hashes the
// active segment as it appends (followAppend), across a segment roll, so
// a checkpoint's segment list reads nothing back; the sums it produces are
// those of the files.
// clusterPartition opens partition id of a single-replica group on a fault
// filesystem, switches the shard to cluster mode for the storage side (the
// group itself stays its own primary) and sends 20-message batches until
// the partition has segments segments (1 MiB each).
func clusterPartition(t *testing.T, seed uint64, d metadata.Durability, id uint32, segments int) (*vfs.Fault, *shardLoop, *partition) {
	t.Helper()
	fsys := vfs.NewFault(seed)
	sh := testShard(t, fsys)
	p, err := sh.openPartition(partitionSpec{stream: 1, topic: 2, id: id, revision: 7, config: topicConfig(d)})
	if err != nil {
		t.Fatal(err)
	}
	sh.n.replicaCount = 3
	var seq uint64
	for len(p.seg.Segments()) < segments {
		if _, ok := send(t, sh, p, testBatch(t, seq, 20, 1000)); !ok {
			t.Fatal("send refused")
		}
		seq += 20
	}
	return fsys, sh, p
}

func TestSegmentChecksumFollowsAppends(t *testing.T) {
	fsys, _, p := clusterPartition(t, 5, metadata.DurabilityPersisted, 3, 3) // two rolls
	segs := p.seg.Segments()
	last := segs[len(segs)-1]
	if p.segHash == nil || p.segHash.start != last.StartOffset || p.segHash.hashed != last.Size {
		t.Fatalf("running checksum %+v, active segment %+v", p.segHash, last)
	}
	// Checkpoints (every 64 ops) ran segmentList too, but ops after the
	// last one reached the running checksum only by following appends.
	for _, si := range segs[:len(segs)-1] {
		if c, ok := p.sealedSums[si.StartOffset]; !ok || c.size != si.Size {
			t.Fatalf("sealed segment %d (%d bytes) not kept: %+v", si.StartOffset, si.Size, p.sealedSums)
		}
	}
	list, err := p.segmentList()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(segs) {
		t.Fatalf("%d list entries for %d segments", len(list), len(segs))
	}
	for i, si := range segs {
		b, err := vfs.ReadFile(fsys, si.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		s := vsr.NewChecksumStream()
		s.Write(b)
		if list[i].sum != s.Sum() || list[i].size != uint64(len(b)) {
			t.Fatalf("segment %d: list says %d bytes sum %x, file has %d bytes sum %x", si.StartOffset, list[i].size, list[i].sum, len(b), s.Sum())
		}
	}
}

// TestPartitionStagingCarriesOver: state transfer stages artifacts by id
// across checkpoints (vsr continues a staged prefix when the serving peer
// moves on to a newer checkpoint). A write continues at the end of what is
// staged, cutting anything beyond it; a write past the end is refused; the
// install reads exactly the manifest's size.
func TestPartitionStagingCarriesOver(t *testing.T) {
	fsys := vfs.NewFault(5)
	sh := testShard(t, fsys)
	p, err := sh.openPartition(partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityReplicated)})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.WriteArtifact(64, artSegFirst, 0, []byte("abcdef")))
	must(p.WriteArtifact(128, artSegFirst, 6, []byte("gh"))) // the newer checkpoint continues it
	must(p.WriteArtifact(128, artSegFirst+1, 0, []byte("0123456789")))
	must(p.WriteArtifact(192, artSegFirst+1, 4, []byte("xy"))) // staged beyond 4 is cut
	if err := p.WriteArtifact(192, artSegFirst, 20, []byte("z")); err == nil {
		t.Fatal("a write past the staged end was accepted")
	}
	man := vsr.Manifest{Op: 192, Artifacts: []vsr.Artifact{{ID: artSegFirst, Size: 8}, {ID: artSegFirst + 1, Size: 6}}}
	for id, want := range map[uint32]string{artSegFirst: "abcdefgh", artSegFirst + 1: "0123xy"} {
		got, err := p.readStaged(man, id)
		if err != nil || string(got) != want {
			t.Fatalf("artifact %d staged %q (%v), want %q", id, got, err, want)
		}
	}
	man.Artifacts[1].Size = 7
	if _, err := p.readStaged(man, artSegFirst+1); err == nil {
		t.Fatal("an artifact shorter than its manifest size was read")
	}
}

// TestPartitionRetentionOp: in cluster mode a retention pass of the
// primary deletes nothing itself; it proposes a delete-segments op whose
// keep_from is the end of the last segment to go, and applying that op
// deletes exactly those segments. The op is idempotent (applied again it
// deletes nothing more), a keep_from inside a segment keeps that segment,
// and the active segment never goes, even when every message expired.
func TestPartitionRetentionOp(t *testing.T) {
	_, sh, p := clusterPartition(t, 9, metadata.DurabilityReplicated, 0, 5) // four sealed
	segs := p.seg.Segments()
	starts := func() []uint64 {
		var out []uint64
		for _, si := range p.seg.Segments() {
			out = append(out, si.StartOffset)
		}
		return out
	}
	// A share that the newest sealed segment and the active one fit in.
	share := uint64(segs[3].Size + segs[4].Size)
	tp := &metadata.Topic{Config: topicConfig(metadata.DurabilityReplicated), Partitions: make([]metadata.Partition, 2)}
	tp.Config.MaxTopicSize = 2 * share
	tp.Config.MessageExpiry = math.MaxUint64
	now := nowMicros()
	if keep, expired, over := p.retentionKeep(tp, now); keep != segs[2].NextOffset || expired != 0 || over != 3 {
		t.Fatalf("retentionKeep: keep %d expired %d over %d; want keep %d, over 3", keep, expired, over, segs[2].NextOffset)
	}
	applied := p.applied
	p.clean(tp, now)
	if p.retaining != segs[2].NextOffset {
		t.Fatalf("retaining %d, want the proposed keep_from %d", p.retaining, segs[2].NextOffset)
	}
	sh.settle()
	if p.applied != applied+1 {
		t.Fatalf("applied op %d, want the retention op %d", p.applied, applied+1)
	}
	if p.retaining != 0 {
		t.Fatalf("retaining %d after the op completed", p.retaining)
	}
	if got := starts(); len(got) != 2 || got[0] != segs[3].StartOffset {
		t.Fatalf("segments %v after retention, want [%d %d]", got, segs[3].StartOffset, segs[4].StartOffset)
	}
	if p.seg.FirstOffset() != segs[3].StartOffset || p.stats.segments.Load() != 2 {
		t.Fatalf("first offset %d, published %d segments", p.seg.FirstOffset(), p.stats.segments.Load())
	}
	// The checkpoint state transfer serves listed the deleted segments: the
	// op asked for a checkpoint at once, which lists only what is left.
	if p.served.op != p.applied || len(p.served.list) != 2 || p.served.list[0].start != segs[3].StartOffset {
		t.Fatalf("served checkpoint %d with %d segments from %d; want op %d, 2 segments from %d",
			p.served.op, len(p.served.list), p.served.list[0].start, p.applied, segs[3].StartOffset)
	}
	// Nothing more to delete: no op.
	p.clean(tp, now)
	sh.settle()
	if p.applied != applied+1 {
		t.Fatalf("a pass with nothing to delete proposed op %d", p.applied)
	}

	submit := func(keep uint64) uint32 {
		t.Helper()
		var code uint32 = math.MaxUint32
		p.g.Submit(&task{kind: tkClean, onDone: func(d *task) {
			if d.status == 0 && d.vstatus == vsr.StatusOK && len(d.reply) == 4 {
				code = binary.LittleEndian.Uint32(d.reply)
			}
		}}, vsr.Request{Operation: opDeleteSegments, WallClock: nowMicros(), Body: u64Bytes(keep)})
		sh.settle()
		if code == math.MaxUint32 {
			t.Fatal("delete-segments op not answered")
		}
		return code
	}
	// The same op again (a replay, or a duplicate proposal): nothing more.
	if code := submit(segs[2].NextOffset); code != 0 || len(starts()) != 2 {
		t.Fatalf("repeated op: code %d, segments %v", code, starts())
	}
	// keep_from inside the sealed segment: it stays.
	if code := submit(segs[3].NextOffset - 1); code != 0 || len(starts()) != 2 {
		t.Fatalf("keep_from inside a segment: code %d, segments %v", code, starts())
	}
	// Everything expired: the sealed segment goes, the active one stays.
	tp.Config.MaxTopicSize = math.MaxUint64
	tp.Config.MessageExpiry = 1
	p.clean(tp, now+10_000_000)
	sh.settle()
	if got := starts(); len(got) != 1 || got[0] != segs[4].StartOffset {
		t.Fatalf("segments %v after expiry, want only the active %d", got, segs[4].StartOffset)
	}
	// keep_from beyond the log: the active segment never goes.
	if code := submit(math.MaxUint64); code != 0 || len(starts()) != 1 {
		t.Fatalf("keep_from past the end: code %d, segments %v", code, starts())
	}
	seq := p.next
	if next, ok := send(t, sh, p, testBatch(t, seq, 1, 10)); !ok || next != seq {
		t.Fatalf("send after retention: offset %d ok %v, want %d", next, ok, seq)
	}
}

// TestPartitionConsumerOffsetsCap: partition.consumer_offsets_max refuses
// the store of a new key (manual or by a poll's auto-commit) on a partition
// holding that many keys of its kind with TopicFull, lets stored keys move
// and other kinds in, frees a slot on delete, and holds across a restart:
// from the checkpoint, and for journaled ops replayed by a node configured
// with another cap (the cap is in the op, so the outcome does not change).
func TestPartitionConsumerOffsetsCap(t *testing.T) {
	fsys := vfs.NewFault(11)
	open := func(cap int) (*shardLoop, *partition) {
		t.Helper()
		sh := testShard(t, fsys)
		sh.n.cfg.Partition.ConsumerOffsetsMax = cap
		p, err := sh.openPartition(partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityPersisted)})
		if err != nil {
			t.Fatal(err)
		}
		return sh, p
	}
	sh, p := open(3)
	if _, ok := send(t, sh, p, testBatch(t, 0, 10, 100)); !ok {
		t.Fatal("send refused")
	}
	store := func(kind uint8, id uint32, v uint64) uint32 {
		t.Helper()
		tk := &task{kind: tkStoreOffset, ns: p.ns, rev: p.revision, key: offsetKey{kind: kind, id: id}, offset: v}
		if !run(sh, tk) || tk.status != 0 || tk.vstatus != 0 {
			t.Fatalf("store %d/%d: no answer or status %d/%d", kind, id, tk.status, tk.vstatus)
		}
		return replyCode(tk.reply)
	}
	full := uint32(wire.CodeTopicFull)
	for id := uint32(0); id < 3; id++ {
		if code := store(wire.ConsumerKindSingle, id, 1); code != 0 {
			t.Fatalf("store of consumer %d under the cap: code %d", id, code)
		}
	}
	if code := store(wire.ConsumerKindSingle, 3, 1); code != full {
		t.Fatalf("fourth consumer with a cap of 3: code %d, want %d", code, full)
	}
	if _, ok := p.offsets[offsetKey{wire.ConsumerKindSingle, 3}]; ok {
		t.Fatal("a refused store was applied")
	}
	if code := store(wire.ConsumerKindGroup, 9, 2); code != 0 {
		t.Fatalf("a group offset counts against the consumers' cap: code %d", code)
	}
	if code := store(wire.ConsumerKindSingle, 1, 5); code != 0 || p.offsets[offsetKey{wire.ConsumerKindSingle, 1}] != 5 {
		t.Fatalf("update of a stored key at the cap: code %d, offset %d", code, p.offsets[offsetKey{wire.ConsumerKindSingle, 1}])
	}
	poll := &task{kind: tkPoll, ns: p.ns, rev: p.revision, key: offsetKey{wire.ConsumerKindSingle, 4}, strategy: wire.PollFromOffset(0), count: 5, auto: true}
	if !run(sh, poll) || poll.status != full {
		t.Fatalf("auto-commit poll of a new consumer at the cap: status %d, want %d", poll.status, full)
	}
	del := &task{kind: tkDeleteOffset, ns: p.ns, rev: p.revision, key: offsetKey{wire.ConsumerKindSingle, 0}}
	if !run(sh, del) || del.status != 0 || replyCode(del.reply) != 0 {
		t.Fatalf("delete: status %d, code %d", del.status, replyCode(del.reply))
	}
	if code := store(wire.ConsumerKindSingle, 3, 7); code != 0 {
		t.Fatalf("store after a delete freed a slot: code %d", code)
	}
	// Enough updates for a checkpoint, then one more refusal in the journal
	// above it.
	for i := 0; i < 2*partitionCheckpointInterval; i++ {
		if code := store(wire.ConsumerKindSingle, 2, uint64(i%10)); code != 0 {
			t.Fatalf("update %d: code %d", i, code)
		}
	}
	if code := store(wire.ConsumerKindSingle, 5, 1); code != full {
		t.Fatalf("store over the cap before the restart: code %d", code)
	}
	want := map[offsetKey]uint64{}
	for k, v := range p.offsets {
		want[k] = v
	}
	applied := p.applied

	fsys = fsys.CrashWith(vfs.CrashKeepAll)
	sh, p = open(100)
	if p.applied != applied {
		t.Fatalf("recovered to op %d, applied %d before", p.applied, applied)
	}
	if len(p.offsets) != len(want) {
		t.Fatalf("recovered %v, want %v", p.offsets, want)
	}
	for k, v := range want {
		if p.offsets[k] != v {
			t.Fatalf("recovered %v, want %v", p.offsets, want)
		}
	}
	sh.n.cfg.Partition.ConsumerOffsetsMax = 3
	if code := store(wire.ConsumerKindSingle, 6, 1); code != full {
		t.Fatalf("store over the cap after the restart: code %d", code)
	}
	if code := store(wire.ConsumerKindSingle, 3, 8); code != 0 {
		t.Fatalf("update after the restart: code %d", code)
	}
}
