package stack

import (
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/sim/campaign"
)

// maxCampaignFailures: failing seeds after which a campaign stops
// (-maxfail overrides).
const maxCampaignFailures = 10

// TestStack runs a campaign of seeds over the real node stack, or one seed
// with -seed. The ordinary `go test` runs a short campaign over fixed
// seeds; `make sim-stack` runs long ones.
func TestStack(t *testing.T) {
	if campaign.Replay(t, func(seed uint64, trace io.Writer) (string, error) {
		res := Run(Options{Seed: seed, Trace: trace})
		return summary(res), res.Err
	}) {
		return
	}
	seeds, base := campaign.Plan(60, 12)
	var sends, acked, retried, msgs, offsets, installs int
	faults := map[string]int{}
	ran, failed, el := campaign.Loop(t, seeds, base, maxCampaignFailures, "go test ./tests/sim/stack -run 'TestStack$' -seed=%d -v -simtrace", func(seed uint64) error {
		res := Run(Options{Seed: seed})
		sends += res.Sends
		acked += res.Acked
		retried += res.Retried
		msgs += res.Messages
		offsets += res.Offsets
		installs += res.Installs
		for k, v := range res.Faults {
			faults[k] += v
		}
		return res.Err
	})
	t.Logf("%d seeds (%d failed) in %v (%.0f seeds/min): %d sends (%d acknowledged, %d after retries), %d messages checked, %d offset stores, %d state transfers; faults %s",
		ran, failed, el.Round(time.Millisecond), float64(ran)/el.Minutes(), sends, acked, retried, msgs, offsets, installs, faultList(faults))
	if acked == 0 || msgs == 0 {
		t.Fatal("the campaign acknowledged nothing: the simulator exercised nothing")
	}
	for _, k := range []string{"crash", "partition", "write-tear", "drop"} {
		if faults[k] == 0 && ran >= 12 {
			t.Errorf("no %s fault in %d seeds: the fault schedule is broken", k, ran)
		}
	}
}

// TestStackDeterministic: a seed is a pure function of itself — the same
// seed twice gives the same trace.
func TestStackDeterministic(t *testing.T) {
	for _, seed := range []uint64{3, 17} {
		a, ra := traceOf(seed)
		b, rb := traceOf(seed)
		if a != b {
			t.Fatalf("seed %d: two runs differ (%x vs %x): %s / %s", seed, a, b, summary(ra), summary(rb))
		}
		if ra.Acked == 0 {
			t.Fatalf("seed %d acknowledged nothing", seed)
		}
	}
}

func traceOf(seed uint64) (uint64, Result) {
	h := fnv.New64a()
	res := Run(Options{Seed: seed, Trace: h})
	fmt.Fprintf(h, "%v %d %d %d", res.Err, res.Ticks, res.Acked, res.Messages)
	return h.Sum64(), res
}

func summary(r Result) string {
	return fmt.Sprintf("seed %d: %d ticks, %d sends (%d acknowledged, %d retried), %d messages, %d offset stores, %d commits, view %d, %d state transfers, faults %s",
		r.Seed, r.Ticks, r.Sends, r.Acked, r.Retried, r.Messages, r.Offsets, r.Commits, r.Views, r.Installs, faultList(r.Faults))
}

func faultList(f map[string]int) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, f[k])
	}
	return strings.Join(parts, " ")
}

// regressionSeeds are seeds that once failed, each with what it caught;
// they run on every `go test`.
var regressionSeeds = []struct {
	seed   uint64
	caught string
}{
	{3, "a bit-rotted partition incarnation file was taken for an earlier partition's directory and wiped, and the replica voted empty (replica/partition incarnation checksum)"},
	{89, "a restarted replica's manifest listed its checkpoint file's trailer checksum, not the file's: no peer could fetch that checkpoint and a replica behind it stayed behind (replica/partition Restore)"},
	{594, "a primary's reply to a request forwarded by a node's previous boot answered the new boot's request that drew the same token: a send acknowledged at another producer's offset (vsr ForwardReply echoes the origin's incarnation)"},
	{1226, "a torn superblock write left a checkpoint the view state never named: the group ran on failing every checkpoint, and every restart panicked writing an older checkpoint (replica/consensus WriteCheckpoint)"},
	{84, "a primary's reply to a request forwarded by a node's previous boot answered the new boot's request that drew the same token: a send acknowledged at offset 4, stored at 9 (vsr ForwardReply echoes the origin's incarnation)"},
	{584, "the same forward token reuse across a restart: a send acknowledged at offset 10, stored at 12"},
	{2515, "a checkpoint that failed, retried one op later, reached the superblock but no view state: every restart panicked writing the older checkpoint (replica/consensus WriteCheckpoint)"},
	{3357, "the final check ran while a new primary still prepared again the suffix the old primary had acknowledged: quiescence waits until nothing is prepared above the commit"},
	{7032, "the simulated network duplicated a Forward, which the replica plane never does: the primary ran an offset store twice, the second time after a later store (acknowledged 16, stored 15)"},
	{4122, "a torn view-state write failed while the group ran on and journaled that Ready's prepares: the restarted replica held an op prepared in view 1 under a log view of 0 and served it stamped view 0 (a failed state record write stops the group)"},
	{101535, "bit rot in purge.gen failed the node's boot instead of marking the partition damaged, to be quarantined and refilled from its peers (replica/partition readPurgeGen)"},
	{202967, "bit rot in the newest view-state slot brought back the previous record (one copy per record): the replica returned to a view it had left and diverged (replica/consensus view state written to both slots)"},
	{202257, "a failed index write in a checkpoint's segment sync plan failed the segment log but left the group running, failing every later checkpoint and poll (replica/partition writeCheckpointFiles)"},
	{402071, "a state transfer's install removed the replica's own checkpoint file before the view state named the installed one: a failed superblock write (or a crash) in between left the named checkpoint gone and a healthy node's partition damaged (replica/partition replaceStorage)"},
	{4002090, "a misdirected journal append left the sync marker it should have overwritten in place: recovery took that marker as a clean end and silently forgot the acknowledged ops after it, so the faulty replica and the partitioned one dropped a committed op in a view change (journal scan: a later marker naming a later op makes the earlier one no end)"},
	{600389, "a poll's short read of segment bytes (a misdirected write on the faulty node) failed every poll but left the group running on the damaged log (replica/partition readFailed)"},
	{600237, "a misdirected journal append was synced and acknowledged, then a power loss dropped the marker written after it: the old marker it should have overwritten read as a clean end, the replica came back unfenced without the op, and with the partitioned one reassigned a committed op in view 1 (journal scan: a misplaced record of the incarnation naming a later op makes the marker no end)"},
	{5003030, "a bit-rotted journal entry on a backup was read back as an I/O error, retried forever: the backup held every op but applied none past the damaged one (replica/consensus runReads reports a corrupt entry as one that does not verify, so it is fetched from a peer)"},
	{5014700, "the same stall on a backup of group 1, seen by the checker as clients whose requests never completed"},
}

// TestStackRegressionSeeds replays every regression seed.
func TestStackRegressionSeeds(t *testing.T) {
	for _, rs := range regressionSeeds {
		res := Run(Options{Seed: rs.seed})
		if res.Err != nil {
			t.Errorf("seed %d (%s): %v\nreplay: go test ./tests/sim/stack -run 'TestStack$' -seed=%d -v -simtrace", rs.seed, rs.caught, res.Err, rs.seed)
		}
	}
}
