package sim

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/sim/campaign"
)

// TestSim runs a campaign of seeds, or one seed with -seed. The ordinary
// `go test` runs a short campaign over fixed seeds; `make sim` runs long ones.
func TestSim(t *testing.T) {
	if campaign.Replay(t, func(seed uint64, trace io.Writer) (string, error) {
		res := Run(Options{Seed: seed, Trace: trace})
		return summary(res), res.Err
	}) {
		return
	}
	seeds, base := campaign.Plan(300, 40)
	var ops, completed, dedup, retried int
	var slowest time.Duration
	var slowSeed uint64
	var faults = map[string]int{}
	ran, failed, el := campaign.Loop(t, seeds, base, maxCampaignFailures, "go test ./tests/sim -run 'TestSim$' -seed=%d -v -simtrace", func(seed uint64) error {
		seedStart := time.Now()
		res := Run(Options{Seed: seed})
		if d := time.Since(seedStart); d > slowest {
			slowest, slowSeed = d, res.Seed
		}
		ops += res.Requests
		completed += res.Completed
		dedup += res.Dedup
		retried += res.Retried
		for k, v := range res.Faults {
			faults[k] += v
		}
		if res.Err != nil {
			return fmt.Errorf("%w\n%s", res.Err, res.Mix)
		}
		return nil
	})
	t.Logf("%d seeds (%d failed) in %v (%.0f seeds/min, slowest: seed %d, %v), %d client ops (%d acknowledged, %d after retries), %.0f ops/seed, %d producer-table groups; faults %v",
		ran, failed, el.Round(time.Millisecond), float64(ran)/el.Minutes(), slowSeed, slowest.Round(time.Millisecond),
		ops, completed, retried, float64(ops)/float64(ran), dedup, faults)
}

// maxCampaignFailures bounds how many failing seeds one campaign reports.
const maxCampaignFailures = 20

func summary(r Result) string {
	return fmt.Sprintf("seed %d: %s; %d producer-table groups; %d ticks, %d requests, %d acknowledged (%d after retries), commit %d, view %d, %d linearized; faults %v",
		r.Seed, r.Mix, r.Dedup, r.Ticks, r.Requests, r.Completed, r.Retried, r.Commits, r.Views, r.Linearized, r.Faults)
}

// regressionSeeds failed before the fix noted next to each; they run on every
// `go test` so that the fixed behaviour stays fixed (each also has a scripted
// scenario in vsr/testdata when the failure could be reduced to one).
var regressionSeeds = []struct {
	seed uint64
	bug  string
}{
	{2, "journal floor not tracked: the primary answered repair with a wrong range_evicted"},
	{3, "top-down repair could not verify the anchor's own prepare"},
	{5, "boot reset of a journal whose first entry was corrupt discarded to the wrong op"},
	{6, "two replicas lost their journal heads at once (fault atlas: faulty set)"},
	{13, "boot truncated acknowledged ops above empty view headers (regress_boot_keeps_acked)"},
	{15, "far-behind backup could not hold the chain down from its anchor"},
	{19, "repair asked only the primary, whose copy was corrupt"},
	{84, "journal reset by state transfer lost the identity of the durable head"},
	{146, "boot truncated acknowledged ops above a discarded journal prefix"},
	{148, "boot truncated acknowledged ops when view headers lay inside the checkpoint"},
	{180, "recovering_head was forgotten by a second restart (regress_recovering_head_persists)"},
	{233, "a truncation lost at crash left entries that were taken for the new view's (regress_truncate_leftover)"},
	{253, "the probe timer never ran down in normal status; abdicated primary never campaigned"},
	{311, "a transient read error marked a journal entry corrupt for good"},
	{676, "repair served the bottom of a range a top-down requester could not verify"},
	{742, "votes for a view never expired (regress_stale_votes)"},
	{772, "boot extension stopped at a corrupt entry below the checkpoint"},
	{807, "state transfer left the durable head below the installed checkpoint"},
	{823, "a replica stranded in a higher view (regress_stranded_view)"},
	{889, "decoder refused a do_view_change whose checkpoint was above its suffix"},
	{2087, "adopted view headers that did not fit the window were forgotten"},
	{4299, "an op still being appended was evicted from the window (regress_window_eviction)"},
	{5627, "a recovering_head replica in a higher view was stranded"},
	{101708, "a state transfer overtaken by journal repair installed an older checkpoint (commit went back)"},
	{108437, "a restarted state transfer wrote artifact bytes after stale staged ones (harness)"},
	{120227, "a wiped replica adopted a deposed primary's old view and voted an empty log (regress_rejoin_stale_primary)"},
	{120604, "a wiped replica nacked, from a later log_view, an op it had acknowledged before the wipe (fence by op, not view)"},
	{204720, "a view change from normal status rebuilt the suffix from the window only, dropping adopted headers that did not fit it"},
	{1002324, "a backup whose primary had evicted every op up to the commit it announced never started state transfer (range_evicted floor = commit+1)"},
	{1012440, "a journal read queued for repair completed after a view change truncated its op, and the new primary served the stale prepare in the new view"},
	{2063089, "a boot that fenced a replica issued its journal truncate before the fencing state record was durable; a crash kept the truncate and lost the record, and the replica, unfenced with a shorter journal, nacked an op it had acknowledged, so a view change dropped a committed op (regress_fence_before_truncate)"},
	{2021472, "harness: a crash undid two truncates with no completed append between them by restoring only the first one's entries, above a hole (vsrtest Disk recorded the ghosts of the first truncate only)"},
	{2019164, "a truncate that emptied the journal down to the checkpoint forgot the identity of its new durable head once a later checkpoint moved on (prepare_ok panicked; regress_truncate_to_checkpoint_base)"},
	{2078896, "a backup missing only its anchor op (identity known from the start_view) asked nobody but the primary, whose copy was corrupt and, being applied, never repaired (regress_anchor_repair_any_peer)"},
	{2020831, "a view change issued the journal truncate of its divergent suffix with, not after, the state record of its new log_view; a crash kept the truncate and lost the record, and the replica, back in the old log_view with a shorter journal, nacked ops it had acknowledged in it (regress_truncate_before_view)"},
	{4002830, "a state transfer install whose checkpoint lay inside the journal truncated the journal to the checkpoint and re-appended the tail above it, dropping (for a crash to keep dropped) ops the replica had acknowledged in its durable log_view; the install now keeps that tail and only discards the prefix"},
	{4208942, "as 4002830: a state transfer install inside the journal truncated acknowledged ops above the checkpoint (campaign after the fix: passes)"},
	{4269188, "as 4002830, with the acknowledged tail starting several ops above the checkpoint"},
	{503862, "a transfer whose install waited for a local checkpoint in flight had no timer running and nothing brought it back, so it held journal repair off for good (liveness)"},
}

func TestRegressionSeeds(t *testing.T) {
	for _, r := range regressionSeeds {
		if res := Run(Options{Seed: r.seed}); res.Err != nil {
			t.Errorf("seed %d (%s): %v", r.seed, r.bug, res.Err)
		}
	}
}
