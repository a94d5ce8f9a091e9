package consensus

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// TestCorruptJournalEntryReadsAsUnverified: a journal entry whose bytes
// rotted on disk is reported to the replica as a frame that does not
// verify (so it marks the entry faulty and fetches it from a peer), not as
// an I/O error, which the replica would retry forever; an intact entry
// reads back whole.
func TestCorruptJournalEntryReadsAsUnverified(t *testing.T) {
	fsys := vfs.NewFault(5)
	h := newTestHost(fsys)
	g, _ := openTestGroup(t, fsys, h, 1)
	defer g.CloseFiles()
	for i := 0; i < 3; i++ {
		g.Submit(&testWaiter{}, vsr.Request{Operation: testOperation, WallClock: uint64(1 + i), Body: fmt.Appendf(nil, "entry %d of the test", i)})
	}
	h.Drive()
	if len(h.delivered) != 3 {
		t.Fatalf("%d answers, want 3", len(h.delivered))
	}
	const damaged = 2
	entry, err := g.j.Read(damaged)
	if err != nil {
		t.Fatal(err)
	}
	wal := "/g/journal/00000000000000000001.wal"
	f, err := fsys.OpenFile(wal, vfs.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(data, entry)
	if at < 0 {
		t.Fatalf("op %d's entry not found in %s", damaged, wal)
	}
	if _, err := f.WriteAt([]byte{^entry[len(entry)-1]}, int64(at+len(entry)-1)); err != nil {
		t.Fatal(err)
	}

	var res readyResults
	g.runReads([]vsr.Read{{Op: damaged}, {Op: damaged + 1}}, &res)
	if len(res.reads) != 2 {
		t.Fatalf("%d read results, want 2", len(res.reads))
	}
	if rd := res.reads[0]; rd.err != nil || rd.frame != nil {
		t.Fatalf("damaged op %d read as frame of %d bytes, error %v: want no frame and no error", damaged, len(rd.frame), rd.err)
	}
	if rd := res.reads[1]; rd.err != nil || len(rd.frame) == 0 {
		t.Fatalf("intact op %d read as frame of %d bytes, error %v", damaged+1, len(rd.frame), rd.err)
	}
}
