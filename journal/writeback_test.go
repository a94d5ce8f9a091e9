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
	const entry = 1000 // + 96-byte record header
	file := fmt.Sprintf("/p/%020d.wal", 1)
	run := func(writeback int64, syncEach bool, appends int) vfs.WritebackStats {
		fsys := vfs.NewFault(3)
		j, _ := openPart(t, fsys, PartitionOptions{Budget: 1 << 20, FileSize: 1 << 20, MaxEntry: 2 << 10,
			WritebackBytes: writeback})
		for op := uint64(1); op <= uint64(appends); op++ {
			must(t, j.Append(Entry{Op: op, Parts: [][]byte{content(op, entry, 1)}}))
			if syncEach {
				must(t, j.Sync())
			}
		}
		return fsys.Writebacks(file)
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
