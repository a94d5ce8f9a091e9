package replica

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

// partitionRole returns node i's role for partition p of stream 0 / topic 0.
func (tc *testCluster) partitionRole(i int, p uint32) (GroupRole, bool) {
	for _, r := range tc.nodes[i].GroupRoles() {
		if !r.Metadata && r.Stream == 0 && r.Topic == 0 && r.Partition == p {
			return r, true
		}
	}
	return GroupRole{}, false
}

// TestClusterTornJournalFences tears the tail of a partition backup's journal
// while the node is down (the ops it acknowledged last, as after a power
// loss) and then stops the partition's primary. The damaged node must come
// back fenced (recovering_head): it may have acknowledged the ops it lost, so
// it must not join the surviving backup in a view change that could drop
// them. It stays so while the primary is down, recovers its head from its
// peers once the primary is back, and no acknowledged message is lost.
func TestClusterTornJournalFences(t *testing.T) {
	tc := newTestCluster(t, 3)
	var mu sync.Mutex
	fencedLogs := map[int]int{}
	tc.onLog = func(node int, e zapcore.Entry) {
		if strings.Contains(e.Message, "replica fenced, recovering its head from peers") {
			mu.Lock()
			fencedLogs[node]++
			mu.Unlock()
		}
	}
	fencedCount := func(node int) int {
		mu.Lock()
		defer mu.Unlock()
		return fencedLogs[node]
	}
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c0 := tc.dial(0)
	tc.setupTopic(ctx, c0, 1)
	primary, _, ok := tc.nodes[0].PartitionPrimary(0, 0, 0)
	if !ok {
		t.Fatal("partition 0 not hosted")
	}
	victim, other := (primary+1)%3, (primary+2)%3
	c := tc.dial(other)
	const per = 4
	sendAll(ctx, t, c, 0, 0, 12, per)
	eventually(t, 30*time.Second, "victim caught up", func() error {
		return checkPartition(ctx, tc.dial(victim), 0, 12*per)
	})
	tc.stop(victim)

	// Tear the victim's journal: cut its last file in the middle of a record
	// a quarter from the end, as a power loss can leave it.
	files, err := filepath.Glob(filepath.Join(partitionDir(tc.dirs[victim], 0, 0, 0), "journal", "[0-9]*.wal"))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	last := files[len(files)-1]
	b, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 4096 {
		t.Fatalf("%s holds only %d bytes", last, len(b))
	}
	if err := os.WriteFile(last, b[:len(b)*3/4+7], 0o644); err != nil {
		t.Fatal(err)
	}

	tc.stop(primary)
	if err := tc.start(victim, false); err != nil {
		t.Fatalf("the victim refused to boot over a torn journal: %v", err)
	}
	// Partition groups boot after the metadata group caught up.
	eventually(t, 30*time.Second, "the victim fences itself over its torn journal tail", func() error {
		if fencedCount(victim) == 0 {
			return fmt.Errorf("no fence logged")
		}
		if _, ok := tc.partitionRole(victim, 0); !ok {
			return fmt.Errorf("partition not booted")
		}
		return nil
	})
	// While the primary is down the victim cannot be re-anchored: it must
	// stay recovering_head, and in particular must not form a view with the
	// other backup. Three heartbeat timeouts give a view change time to
	// happen if it could.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		if r, ok := tc.partitionRole(victim, 0); ok && r.Status != "recovering_head" {
			t.Fatalf("victim left recovering_head without its head: %+v", r)
		}
		if r, ok := tc.partitionRole(other, 0); ok && r.Status == "normal" && r.IsPrimary {
			t.Fatalf("the other backup became primary with the fenced victim's vote: %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}

	if err := tc.start(primary, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "victim back to normal", func() error {
		if r, ok := tc.partitionRole(victim, 0); !ok || r.Status != "normal" {
			return fmt.Errorf("victim partition role %+v", r)
		}
		return nil
	})
	for _, i := range []int{victim, other, primary} {
		ci := tc.dial(i)
		eventually(t, 60*time.Second, fmt.Sprintf("node %d keeps every acknowledged message", i), func() error {
			return checkPartition(ctx, ci, 0, 12*per)
		})
	}
	sendAll(ctx, t, tc.dial(victim), 0, 12, 14, per)
	for _, i := range []int{victim, other, primary} {
		ci := tc.dial(i)
		eventually(t, 60*time.Second, fmt.Sprintf("node %d after the recovery", i), func() error {
			return checkPartition(ctx, ci, 0, 14*per)
		})
	}
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })

	// The fence is durable: a restart of the recovered victim with a clean
	// journal does not log it again.
	tc.stop(victim)
	n := fencedCount(victim)
	if err := tc.start(victim, false); err != nil {
		t.Fatal(err)
	}
	ci := tc.dial(victim)
	eventually(t, 60*time.Second, "victim after a clean restart", func() error {
		return checkPartition(ctx, ci, 0, 14*per)
	})
	if fencedCount(victim) != n {
		t.Fatal("a clean restart logged a fence")
	}
}
