package vsr_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

// checkpointingGroup boots a 3-replica group with primary 0 and a
// checkpoint every 16 ops (then applies tune to each replica's config); load
// submits n ops through the primary and delivers everything.
func checkpointingGroup(t *testing.T, tune ...func(*vsr.Config)) (c *vsrtest.Cluster, load func(n int)) {
	t.Helper()
	c = vsrtest.NewCluster(3, func(i int) vsr.Config {
		cfg := clusterConfig(3)(i)
		cfg.JournalSlots = 256
		cfg.CheckpointInterval = 16
		for _, f := range tune {
			f(&cfg)
		}
		return cfg
	})
	bootAll(t, c)
	c.Settle(10)
	p := c.Primary()
	if p != 0 {
		t.Fatalf("primary %d, want 0", p)
	}
	token := uint64(0)
	load = func(n int) {
		for i := 0; i < n; i++ {
			token++
			c.Nodes[p].Submit(vsr.Request{Token: token, Operation: vsrtest.OpPut, WallClock: token,
				Body: vsrtest.EncodePut(uint8(token%5), token)})
			c.Deliver(nil, 1<<20)
		}
		for _, n := range c.Nodes {
			if n.Up {
				n.TakeReplies()
			}
		}
	}
	return c, load
}

// laggingReplica is checkpointingGroup in which r2 crashed after 5 ops and
// rebooted 300 ops later, far enough behind that it must fetch the
// primary's checkpoint.
func laggingReplica(t *testing.T) (c *vsrtest.Cluster, load func(n int)) {
	t.Helper()
	c, load = checkpointingGroup(t)
	load(5)
	c.Nodes[2].Crash()
	load(300)
	if err := c.Nodes[2].Boot(false); err != nil {
		t.Fatal(err)
	}
	return c, load
}

// TestTransferFollowsMovingCheckpoint: a lagging replica fetches the
// primary's checkpoint while the primary keeps committing and checkpoints
// again before the transfer finished (partition groups checkpoint every 64
// ops, so under load this is the rule). The primary answers the chunk
// request of the checkpoint it no longer serves with its current manifest,
// and the transfer starts over on that one at once. Before, the request was
// dropped silently and the replica retried the gone checkpoint with growing
// backoff (up to 16 retry intervals) for four attempts before asking anyone
// for a new manifest, so it stayed behind for many seconds (chaos seeds 1004
// and 1019: a partition empty on one node after healing).
func TestTransferFollowsMovingCheckpoint(t *testing.T) {
	c, load := laggingReplica(t)
	// Hold back r2's chunk requests until the primary took a newer
	// checkpoint than the one whose manifest r2 got.
	var manifestOp uint64
	hold := true
	c.Filter = func(pk vsrtest.Packet, m vsr.Message) bool {
		switch m.Header.Command() {
		case vsr.CmdManifest:
			if pk.To == 2 && manifestOp == 0 {
				manifestOp = c.Nodes[0].R.Info().Checkpoint
			}
		case vsr.CmdRequestChunk:
			return hold && pk.From == 2
		}
		return false
	}
	for i := 0; i < 400 && manifestOp == 0; i++ {
		c.Run(1)
	}
	if manifestOp == 0 {
		t.Fatalf("r2 never got a manifest: %+v", c.Nodes[2].R.Info())
	}
	load(40) // r0 checkpoints past manifestOp
	if ck := c.Nodes[0].R.Info().Checkpoint; ck <= manifestOp {
		t.Fatalf("primary checkpoint %d, want > %d", ck, manifestOp)
	}
	hold = false
	// Two retry intervals (plus jitter) and a few round trips are plenty
	// once the primary points r2 at its current checkpoint.
	c.Run(int(3 * vsr.DefaultConfig().RepairRetryInterval / vsr.TickInterval))
	want := c.Nodes[0].R.Info()
	got := c.Nodes[2].R.Info()
	if got.CommitMin != want.CommitMin || got.Checkpoint <= manifestOp || !c.Nodes[2].SM.Equal(c.Nodes[0].SM) {
		t.Fatalf("r2 did not catch up through the newer checkpoint (first manifest %d): r2 %+v, primary %+v",
			manifestOp, got, want)
	}
}

// TestViewHeadOfRejoinedReplica: a wiped replica that adopts a StartView
// while far behind holds none of the view's headers yet (they lie beyond its
// window), but Info.ViewHead reports the head of the log it adopted. A
// --fresh node takes its rejoin horizon from it (replica.freshTarget): every
// op committed before the wipe is at or below that head, while the commit
// point a StartView names may lag ops an earlier primary committed.
func TestViewHeadOfRejoinedReplica(t *testing.T) {
	c, load := checkpointingGroup(t)
	load(400)
	c.Nodes[1].Crash()
	c.Nodes[1].Disk.Wipe()
	if err := c.Nodes[1].Boot(true); err != nil {
		t.Fatal(err)
	}
	// Hold back everything the rejoined replica would fetch, so it stays
	// as it was right after adopting the view.
	c.Filter = func(pk vsrtest.Packet, m vsr.Message) bool {
		switch m.Header.Command() {
		case vsr.CmdRequestPrepares, vsr.CmdRequestManifest:
			return pk.From == 1
		}
		return false
	}
	for i := 0; i < 500 && c.Nodes[1].R.Info().Status != "normal"; i++ {
		c.Run(1)
	}
	got, head := c.Nodes[1].R.Info(), c.Nodes[0].R.Info().Op
	if got.Status != "normal" || got.Op >= head || got.ViewHead != head {
		t.Fatalf("rejoined replica %+v: want normal, op below the view's head %d and ViewHead %d", got, head, head)
	}
}

// TestDiscardCoversCorruptEntryBelowCheckpoint: a replica restarts with a
// corrupt journal entry its checkpoint covers. Nothing repairs such an entry,
// and the metadata journal compacts by copying every op it keeps, refusing a
// corrupt one: a discard that kept it stopped the metadata group for good
// (chaos seed 1033). The first discard after the restart covers it.
func TestDiscardCoversCorruptEntryBelowCheckpoint(t *testing.T) {
	c, load := checkpointingGroup(t)
	load(300)
	c.Run(50)
	r2 := c.Nodes[2]
	inf := r2.R.Info()
	// Above the journal's floor (checkpoint − JournalSlots/2) and above
	// what the next checkpoint's discard would reach, below the checkpoint.
	bad := inf.Checkpoint - 20
	if inf.Checkpoint < 288 || inf.JournalFloor == 0 || bad <= inf.JournalFloor+32 {
		t.Fatalf("unexpected position %+v", inf)
	}
	r2.Crash()
	if !r2.Disk.Corrupt(bad) {
		t.Fatalf("op %d not on r2's disk", bad)
	}
	var discards []uint64
	r2.OnJournal = func(j vsr.JournalOp) {
		if j.Kind == vsr.JournalDiscard {
			discards = append(discards, j.Op)
		}
	}
	if err := r2.Boot(false); err != nil {
		t.Fatal(err)
	}
	c.Run(50)
	load(40)
	c.Run(50)
	if len(discards) == 0 {
		t.Fatal("r2 discarded nothing after the restart")
	}
	for _, d := range discards {
		if d < bad {
			t.Fatalf("r2 discarded through %d, keeping its corrupt entry %d (discards %v)", d, bad, discards)
		}
	}
	if got, want := r2.R.Info(), c.Nodes[0].R.Info(); got.CommitMin != want.CommitMin || !r2.SM.Equal(c.Nodes[0].SM) {
		t.Fatalf("r2 %+v did not keep up with the primary %+v", got, want)
	}
}

// TestTransferRetryBackoffResetsOnProgress: a state transfer's retry timer
// backs off while nobody answers (here: r2's first manifest requests are
// lost), but progress — a manifest arriving — resets it, so a chunk request
// lost right after is retried within one retry interval (plus jitter), not
// after the 8-16 intervals the earlier silence had built up.
func TestTransferRetryBackoffResetsOnProgress(t *testing.T) {
	c, _ := laggingReplica(t)
	const lostManifestRequests = 3
	tick, manifestReqs, chunkReqs := 0, 0, 0
	lostAt, retriedAt := -1, -1
	c.Filter = func(pk vsrtest.Packet, m vsr.Message) bool {
		if pk.From != 2 {
			return false
		}
		switch m.Header.Command() {
		case vsr.CmdRequestManifest:
			manifestReqs++
			return manifestReqs <= lostManifestRequests
		case vsr.CmdRequestChunk:
			chunkReqs++
			switch chunkReqs {
			case 1:
				lostAt = tick
				return true
			case 2:
				retriedAt = tick
			}
		}
		return false
	}
	for ; tick < 5000 && chunkReqs < 2; tick++ {
		c.Run(1)
	}
	if manifestReqs <= lostManifestRequests || chunkReqs < 2 {
		t.Fatalf("after %d ticks: %d manifest requests, %d chunk requests; r2 %+v", tick, manifestReqs, chunkReqs,
			c.Nodes[2].R.Info())
	}
	base := int(vsr.DefaultConfig().RepairRetryInterval / vsr.TickInterval)
	if gap := retriedAt - lostAt; gap > 2*base+1 {
		t.Fatalf("lost chunk request retried after %d ticks; want at most %d (one retry interval %d plus jitter): the backoff was not reset by the manifest",
			gap, 2*base+1, base)
	}
	// And the transfer completes.
	c.Filter = nil
	c.Run(int(3 * vsr.DefaultConfig().RepairRetryInterval / vsr.TickInterval))
	if got, want := c.Nodes[2].R.Info(), c.Nodes[0].R.Info(); got.CommitMin != want.CommitMin || !c.Nodes[2].SM.Equal(c.Nodes[0].SM) {
		t.Fatalf("r2 did not catch up: %+v, primary %+v", got, want)
	}
}

// chunkFields parses a chunk or chunk request header.
func chunkFields(t *testing.T, m vsr.Message) (ckpt uint64, art uint32, off uint64) {
	t.Helper()
	var n uint32
	if _, err := fmt.Sscanf(vsr.DescribeControl(m.Header), "checkpoint=%d artifact=%d offset=%d len=%d", &ckpt, &art, &off, &n); err != nil {
		t.Fatalf("chunk header %q: %v", vsr.DescribeControl(m.Header), err)
	}
	return ckpt, art, off
}

// TestTransferCarriesStagedPrefixOver: the primary checkpoints again while
// a lagging replica is half way through an artifact that only grows between
// checkpoints (the test state machine's history, as a partition's active
// segment). The transfer moves to the new checkpoint keeping what it staged:
// the next request for that artifact continues at the staged offset, and the
// whole artifact still verifies against the newer manifest. Before, every
// newer checkpoint restarted the transfer from nothing, and under load (a
// partition group checkpoints every 64 ops) a big partition never finished.
func TestTransferCarriesStagedPrefixOver(t *testing.T) {
	c, load := checkpointingGroup(t, func(cfg *vsr.Config) { cfg.TransferChunkBytes = 4096 })
	load(5)
	c.Nodes[2].Crash()
	load(600) // history: 24 bytes an op, several 4 KiB chunks
	if err := c.Nodes[2].Boot(false); err != nil {
		t.Fatal(err)
	}
	// Let r2 stage the first chunk of the history (artifact 2), then hold
	// its chunk requests while the primary checkpoints again.
	var firstCkpt, staged uint64
	hold := false
	var resumedAt []uint64
	c.Filter = func(pk vsrtest.Packet, m vsr.Message) bool {
		switch m.Header.Command() {
		case vsr.CmdChunk:
			if ckpt, art, off := chunkFields(t, m); pk.To == 2 && art == 2 && firstCkpt == 0 {
				firstCkpt, staged = ckpt, off+uint64(len(m.Body))
				hold = true
			}
		case vsr.CmdRequestChunk:
			if pk.From != 2 {
				break
			}
			if hold {
				return true
			}
			if ckpt, art, off := chunkFields(t, m); art == 2 && ckpt > firstCkpt && firstCkpt != 0 {
				resumedAt = append(resumedAt, off)
			}
		}
		return false
	}
	for i := 0; i < 2000 && firstCkpt == 0; i++ {
		c.Run(1)
	}
	if firstCkpt == 0 {
		t.Fatalf("r2 never fetched the history artifact: %+v", c.Nodes[2].R.Info())
	}
	load(40)
	if ck := c.Nodes[0].R.Info().Checkpoint; ck <= firstCkpt {
		t.Fatalf("primary checkpoint %d, want > %d", ck, firstCkpt)
	}
	hold = false
	c.Run(int(6 * vsr.DefaultConfig().RepairRetryInterval / vsr.TickInterval))
	if len(resumedAt) == 0 || resumedAt[0] != staged {
		t.Fatalf("history requests for the newer checkpoint started at %v, want the staged %d first", resumedAt, staged)
	}
	want, got := c.Nodes[0].R.Info(), c.Nodes[2].R.Info()
	if got.CommitMin != want.CommitMin || got.Checkpoint <= firstCkpt || !c.Nodes[2].SM.Equal(c.Nodes[0].SM) ||
		!bytes.Equal(c.Nodes[2].SM.History(), c.Nodes[0].SM.History()) {
		t.Fatalf("r2 did not catch up through the newer checkpoint (first %d): r2 %+v, primary %+v", firstCkpt, got, want)
	}
}

// TestCheckpointAfter: CheckpointAfter(op) makes the replica checkpoint at
// op, ahead of CheckpointInterval (a partition whose retention deleted
// segments the latest checkpoint lists asks for it), and the interval
// counts on from there.
func TestCheckpointAfter(t *testing.T) {
	c, load := checkpointingGroup(t)
	// step submits n ops, lets them settle and checks every replica's
	// checkpoint.
	step := func(n int, what string, want ...uint64) {
		t.Helper()
		load(n)
		c.Run(50)
		var got []uint64
		for _, n := range c.Nodes {
			got = append(got, n.R.Info().Checkpoint)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("checkpoints %v %s, want %v", got, what, want)
		}
	}
	step(20, "after 20 ops", 16, 16, 16)
	for _, n := range c.Nodes {
		n.R.CheckpointAfter(22)
	}
	step(1, "at op 21", 16, 16, 16)
	step(1, "at op 22", 22, 22, 22)
	// Asked for an op already applied: at once.
	step(3, "at op 25", 22, 22, 22)
	c.Nodes[0].R.CheckpointAfter(24)
	c.Run(50)
	if got := c.Nodes[0].R.Info().Checkpoint; got != 25 {
		t.Fatalf("checkpoint %d after CheckpointAfter(24) at op 25, want 25", got)
	}
	step(15, "at op 40", 25, 38, 38)
	step(1, "at op 41", 41, 38, 38)
}
