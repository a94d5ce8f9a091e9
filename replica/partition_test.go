package replica

import (
	"encoding/binary"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/shard/vfs"
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

func send(t tb, sh *shardLoop, p *part, body []byte) (uint64, bool) {
	tk := &task{req: &sendReq{partRef: partRef{ns: p.ns, rev: p.revision}, body: body}}
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
func readAll(t tb, sh *shardLoop, p *part) []uint64 {
	var out []uint64
	for {
		tk := &task{req: &pollReq{partRef: partRef{ns: p.ns, rev: p.revision}, strategy: wire.PollFromOffset(uint64(len(out))), count: 1000}}
		if !run(sh, tk) || tk.status != 0 {
			t.Fatalf("poll failed: status %d", tk.status)
		}
		if tk.poll.Count == 0 {
			return out
		}
		var rec []byte
		for _, part := range tk.poll.Parts {
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
				sh.pipe = partition.NewPipeline(wb, &sh.stamps)
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
						sh.pipe = partition.NewPipeline(wb, &sh.stamps)
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
						if p.NextOffset() != uint64(len(stored)) {
							rt.Fatalf("after crash: next offset %d, %d messages stored", p.NextOffset(), len(stored))
						}
						for id, want := range offsets {
							if got, ok := p.StoredOffset(offsetKey{Kind: 1, ID: id}); !ok || got != want {
								rt.Fatalf("after crash: consumer %d offset %d (present %v), acknowledged %d", id, got, ok, want)
							}
						}
						// Unacknowledged messages that survived are kept; the
						// model follows the log from here.
						seq = max(seq, maxSeq(stored)+1)
					case op <= 3 && p.NextOffset() > 0:
						id := uint32(rapid.IntRange(0, 3).Draw(rt, "consumer"))
						v := rapid.Uint64Range(0, p.NextOffset()-1).Draw(rt, "offset")
						tk := &task{req: &storeOffsetReq{partRef: partRef{ns: p.ns, rev: p.revision}, key: offsetKey{Kind: 1, ID: id}, offset: v}}
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
	if wb := sh.pipe.WritebackBytes(); wb != config.Default().Partition.SegmentWritebackBytes.Bytes() || wb == 0 {
		t.Fatalf("shard writeback cadence %d, config default %s", wb, config.Default().Partition.SegmentWritebackBytes)
	}
	sh.pipe = partition.NewPipeline(64<<10, &sh.stamps)
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
	written := int64(p.stats.Size.Load())
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

// TestPartitionReleasesDurableSegmentPages: partition.segment_cache_bytes
// releases the page cache of durable segment data older than the newest
// that many bytes, after the checkpoints' segment syncs, each range once;
// the newest bytes and what no sync covered yet stay.
func TestPartitionReleasesDurableSegmentPages(t *testing.T) {
	fsys := vfs.NewFault(12)
	sh := testShard(t, fsys)
	const keep = 1 << 20
	sh.n.cfg.Partition.SegmentCacheBytes = keep
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityReplicated)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	const batches, msgs, size = 300, 10, 1000 // ~3 MB in 1 MiB segments, checkpoints every 64 ops
	var seq uint64
	for i := 0; i < batches; i++ {
		if _, ok := send(t, sh, p, testBatch(t, seq, msgs, size)); !ok {
			t.Fatalf("send %d refused", i)
		}
		seq += msgs
	}
	entries, err := fsys.ReadDir(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	var sizes []int64
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			fi, err := fsys.Stat(p.dir + "/" + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			logs, sizes = append(logs, p.dir+"/"+e.Name()), append(sizes, fi.Size())
		}
	}
	if len(logs) < 3 {
		t.Fatalf("%d segments", len(logs))
	}
	var total, released int64
	for _, n := range sizes {
		total += n
	}
	for i, path := range logs {
		st := fsys.Writebacks(path)
		if st.ReleasedBytes != st.ReleasedEnd {
			t.Fatalf("segment %d: released %d bytes up to %d: a range twice or a gap", i, st.ReleasedBytes, st.ReleasedEnd)
		}
		released += st.ReleasedEnd
	}
	if end := fsys.Writebacks(logs[0]).ReleasedEnd; end != sizes[0]-sizes[0]%4096 {
		t.Fatalf("oldest segment (%d bytes, durable) released up to %d", sizes[0], end)
	}
	if released > total-keep {
		t.Fatalf("released %d of %d bytes: the newest %d must stay cached", released, total, keep)
	}
	if got := readAll(t, sh, p); uint64(len(got)) != seq {
		t.Fatalf("read %d messages back, sent %d", len(got), seq)
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
