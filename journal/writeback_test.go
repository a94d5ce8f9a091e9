package journal

import (
	"fmt"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// TestWritebackHints: appends that are not synced get a writeback hint each
// time WritebackBytes of them accumulate, covering exactly the unsynced
// bytes; a journal synced after every append never hints; 0 turns hints off.
func TestWritebackHints(t *testing.T) {
	const entry = 1000 // + 96-byte record header (runHinted's entries)
	file := fmt.Sprintf("/p/%020d.wal", 1)
	run := func(writeback int64, syncEach bool, appends int) vfs.WritebackStats {
		return runHinted(t, file, PartitionOptions{WritebackBytes: writeback}, syncEach, appends)
	}
	// 40 appends of 1,096 bytes after a 64-byte file header: 43,904 bytes,
	// so a hint at every 8 KiB of unsynced data gives 5 hints.
	st := run(8<<10, false, 40)
	if st.Calls != 5 {
		t.Fatalf("unsynced appends: %d hints, want 5 (%+v)", st.Calls, st)
	}
	// The hints start at the page of the first unhinted byte and end at the
	// data written so far: together they cover [0, last hinted end).
	if st.End < 40<<10 || st.End > 64+40*(entry+RecordHeaderSize) || st.Bytes < st.End {
		t.Fatalf("hinted bytes %+v do not cover the unsynced data", st)
	}
	if st := run(8<<10, true, 40); st.Calls != 0 {
		t.Fatalf("a journal synced after every append hinted %d times", st.Calls)
	}
	if st := run(0, false, 40); st.Calls != 0 {
		t.Fatalf("hints off, yet %d hints", st.Calls)
	}
}

// runHinted appends appends entries of 1,000 bytes to a fresh partition
// journal opened with opts (budget and sizes filled in), syncing after each
// if syncEach, and returns the hints file received.
func runHinted(t *testing.T, file string, opts PartitionOptions, syncEach bool, appends int) vfs.WritebackStats {
	t.Helper()
	fsys := vfs.NewFault(3)
	opts.Budget, opts.FileSize, opts.MaxEntry = 1<<20, 1<<20, 2<<10
	j, _ := openPart(t, fsys, opts)
	for op := uint64(1); op <= uint64(appends); op++ {
		must(t, j.Append(Entry{Op: op, Parts: [][]byte{content(op, 1000, 1)}}))
		if syncEach {
			must(t, j.Sync())
		}
	}
	return fsys.Writebacks(file)
}

// TestBackgroundSyncs: with StartSyncBytes, a writeback hint also starts a
// background fdatasync once that many bytes were hinted since the last one
// (or since a sync); never without hints, never for a journal synced after
// every append.
func TestBackgroundSyncs(t *testing.T) {
	file := fmt.Sprintf("/p/%020d.wal", 1)
	// 40 appends of 1,096 bytes: hints at every 8 KiB (5), a background
	// sync at the first hint past each 16 KiB since the previous one (2).
	st := runHinted(t, file, PartitionOptions{WritebackBytes: 8 << 10, StartSyncBytes: 16 << 10}, false, 40)
	if st.Calls != 5 || st.SyncStarts != 2 {
		t.Fatalf("unsynced appends: %d hints and %d background syncs, want 5 and 2", st.Calls, st.SyncStarts)
	}
	if st := runHinted(t, file, PartitionOptions{WritebackBytes: 8 << 10, StartSyncBytes: 16 << 10}, true, 40); st.SyncStarts != 0 {
		t.Fatalf("a journal synced after every append started %d background syncs", st.SyncStarts)
	}
	if st := runHinted(t, file, PartitionOptions{WritebackBytes: 8 << 10}, false, 40); st.SyncStarts != 0 {
		t.Fatalf("background syncs off, yet %d started", st.SyncStarts)
	}
}
