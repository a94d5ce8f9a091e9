package replica

import (
	"encoding/binary"
	"testing"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// sendAs sends body with a producer identity and returns the task's answer.
func sendAs(t *testing.T, sh *shardLoop, p *part, producer byte, sess, req uint64, body []byte) *task {
	t.Helper()
	tk := &task{req: &sendReq{partRef: partRef{ns: p.ns, rev: p.revision}, body: body,
		producer: vsr.Checksum{producer}, session: sess, request: req}}
	if !run(sh, tk) {
		t.Fatal("send got no answer")
	}
	return tk
}

func baseOf(t *testing.T, tk *task) uint64 {
	t.Helper()
	if tk.status != 0 || tk.vstatus != vsr.StatusOK || len(tk.reply) != 8 {
		t.Fatalf("send refused: status %d vsr %v", tk.status, tk.vstatus)
	}
	return binary.LittleEndian.Uint64(tk.reply)
}

// TestPartitionExactlyOnceSend: a send retried with the same producer
// identity is applied once and answered with the first confirmation — at
// once, after a power loss (the table is rebuilt from the journal) and
// after a checkpoint (the table is restored from the checkpoint file); a
// send without an identity is applied every time (Iggy's at-least-once).
func TestPartitionExactlyOnceSend(t *testing.T) {
	fsys := vfs.NewFault(1)
	sh := testShard(t, fsys)
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityPersisted)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	b0 := testBatch(t, 0, 3, 10)
	if got := baseOf(t, sendAs(t, sh, p, 9, 1, 1, b0)); got != 0 {
		t.Fatalf("first send at %d", got)
	}
	if got := baseOf(t, sendAs(t, sh, p, 9, 1, 1, b0)); got != 0 {
		t.Fatalf("retry answered %d, want the original 0", got)
	}
	if got := baseOf(t, sendAs(t, sh, p, 9, 1, 2, testBatch(t, 3, 2, 10))); got != 3 {
		t.Fatalf("next request at %d, want 3", got)
	}
	if tk := sendAs(t, sh, p, 9, 1, 1, b0); tk.vstatus != vsr.StatusRequestAlreadyApplied {
		t.Fatalf("an older request: %v", tk.vstatus)
	}
	// No identity: applied twice.
	if got, _ := send(t, sh, p, testBatch(t, 5, 1, 10)); got != 5 {
		t.Fatalf("anonymous send at %d", got)
	}
	if got, _ := send(t, sh, p, testBatch(t, 5, 1, 10)); got != 6 {
		t.Fatalf("anonymous resend at %d", got)
	}
	if n := len(readAll(t, sh, p)); n != 7 {
		t.Fatalf("%d messages stored, want 7", n)
	}

	fsys = fsys.CrashWith(vfs.CrashDropAll)
	sh = testShard(t, fsys)
	if p, err = sh.openPartition(spec); err != nil {
		t.Fatal(err)
	}
	if got := baseOf(t, sendAs(t, sh, p, 9, 1, 2, testBatch(t, 3, 2, 10))); got != 3 {
		t.Fatalf("retry after power loss answered %d, want 3", got)
	}
	// Past a checkpoint: the journal below it is gone, the checkpoint file
	// carries the table.
	next := uint64(7)
	for i := 0; i < 2*partitionCheckpointInterval; i++ {
		got := baseOf(t, sendAs(t, sh, p, 9, 1, uint64(3+i), testBatch(t, next, 1, 10)))
		if got != next {
			t.Fatalf("send %d at %d, want %d", i, got, next)
		}
		next++
	}
	last := uint64(2 + 2*partitionCheckpointInterval)
	if p.g.Replica().Info().Checkpoint == 0 {
		t.Fatal("no checkpoint was taken")
	}
	fsys = fsys.CrashWith(vfs.CrashDropAll)
	sh = testShard(t, fsys)
	if p, err = sh.openPartition(spec); err != nil {
		t.Fatal(err)
	}
	if got := baseOf(t, sendAs(t, sh, p, 9, 1, last, testBatch(t, next-1, 1, 10))); got != next-1 {
		t.Fatalf("retry after checkpoint and power loss answered %d, want %d", got, next-1)
	}
	if n := uint64(len(readAll(t, sh, p))); n != next {
		t.Fatalf("%d messages stored, want %d", n, next)
	}
}

// With dedup_clients_max producers, one more evicts the least recently
// used; the evicted producer's retry is refused, not applied again.
func TestPartitionProducerEviction(t *testing.T) {
	fsys := vfs.NewFault(2)
	sh := testShard(t, fsys)
	sh.n.cfg.Partition.DedupClientsMax = 2
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityReplicated)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	for i, prod := range []byte{1, 2, 3} {
		baseOf(t, sendAs(t, sh, p, prod, 5, 1, testBatch(t, uint64(i), 1, 10)))
	}
	tk := sendAs(t, sh, p, 1, 5, 1, testBatch(t, 0, 1, 10))
	if tk.vstatus != vsr.StatusEvicted || tk.evict != vsr.EvictNoSession {
		t.Fatalf("evicted producer's retry: %v %v", tk.vstatus, tk.evict)
	}
	if got := baseOf(t, sendAs(t, sh, p, 3, 5, 1, testBatch(t, 2, 1, 10))); got != 2 {
		t.Fatalf("a kept producer's retry answered %d", got)
	}
	if n := len(readAll(t, sh, p)); n != 3 {
		t.Fatalf("%d messages stored, want 3", n)
	}
}
