package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
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

// TestFenceBeforeTornCut runs the open sequence of a cluster group over a
// journal with a torn tail: the fenced view state is durable before the cut,
// so a power loss right after the cut boots from a record that says fenced
// and head pending (vsr: recovering_head) over the now clean, shorter
// journal. When the fence cannot be written, nothing is cut.
func TestFenceBeforeTornCut(t *testing.T) {
	fsys := vfs.NewFault(11)
	if err := vfs.MkdirAllSync(fsys, "/g", 0o755); err != nil {
		t.Fatal(err)
	}
	vs, _, err := openViewState(fsys, "/g")
	if err != nil {
		t.Fatal(err)
	}
	st := &vsr.State{Group: 9, Replica: 1, ReplicaCount: 3, View: 4, LogView: 4}
	if err := vs.write(vsr.EncodeState(st)); err != nil {
		t.Fatal(err)
	}
	jdir := "/g/journal"
	opts := journal.PartitionOptions{Budget: 1 << 20, FileSize: 1 << 20, MaxEntry: 4 << 10}
	j, _, err := journal.OpenPartition(fsys, jdir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for op := uint64(1); op <= 6; op++ {
		if err := j.Append(journal.Bytes(op, bytes.Repeat([]byte{byte(op)}, 500))); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Rot inside op 5's entry, and the sync marker after op 6 lost (as
	// after a power loss before the kernel wrote it back): no later record
	// or marker promises op 5 was synced, so recovery calls it a torn tail
	// although it was synced.
	wal := jdir + "/00000000000000000001.wal"
	f, err := fsys.OpenFile(wal, vfs.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(journal.FileHeaderSize + 4*(journal.RecordHeaderSize+500) + journal.RecordHeaderSize + 100)
	if _, err := f.WriteAt([]byte{0xde, 0xad}, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(journal.FileHeaderSize + 6*(journal.RecordHeaderSize+500))); err != nil {
		t.Fatal(err)
	}
	if err := f.Datasync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	hook := func(*journal.Torn) error {
		_, _, err := fenceViewState(vs, st)
		return err
	}
	// The fence write fails: the open fails and the tail stays.
	rule := fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: "/g/viewstate", Action: vfs.Fail})
	failing := opts
	failing.BeforeCut = hook
	if _, _, err := journal.OpenPartition(fsys, jdir, failing); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("open with a failing fence write: %v", err)
	}
	fsys.RemoveRule(rule)

	ok := opts
	ok.BeforeCut = hook
	j, rep, err := journal.OpenPartition(fsys, jdir, ok)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Torn == nil || j.Last() != 4 {
		t.Fatalf("recovery: torn %+v, last %d", rep.Torn, j.Last())
	}
	_ = j.Close()
	_ = vs.close()

	// Power loss right after the cut.
	crashed := fsys.CrashWith(vfs.CrashDropAll)
	_, payload, err := openViewState(crashed, "/g")
	if err != nil || payload == nil {
		t.Fatalf("view state after the crash: %v", err)
	}
	got, err := vsr.DecodeState(payload)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Fenced || !got.HeadPending || got.View != 4 || got.LogView != 4 {
		t.Fatalf("view state after the crash: %+v", got)
	}
	j, rep, err = journal.OpenPartition(crashed, jdir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	if rep.Torn != nil || j.Last() != 4 {
		t.Fatalf("journal after the crash: torn %+v, last %d (the cut must be durable too)", rep.Torn, j.Last())
	}
}
