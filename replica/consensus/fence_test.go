package consensus

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

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
