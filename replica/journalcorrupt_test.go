package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
)

// recordOffsets finds the journal records in a journal file image: the
// byte offset of each record header by op (the record magic sits 16 bytes
// into a header, the op 8 bytes after it).
func recordOffsets(b []byte) map[uint64]int64 {
	out := map[uint64]int64{}
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("IGJR"))
		if k < 0 {
			return out
		}
		pos := i + k
		if pos >= 16 && pos+16 <= len(b) && b[pos+5]&1 == 0 {
			out[binary.LittleEndian.Uint64(b[pos+8:])] = int64(pos - 16)
		}
		i = pos + 1
	}
}

// TestSoloJournalCorruptionRefused: a single node's partition journal whose
// last sends were covered by one group sync (nothing appended after it)
// has a record in the middle damaged on the medium, with intact records
// after it. Recovery must not read that as a torn tail and drop the
// acknowledged records after the damage: the node refuses to open the
// partition, naming the journal file, the byte offset and the ways out,
// and leaves every byte of the journal where it was.
func TestSoloJournalCorruptionRefused(t *testing.T) {
	fsys := vfs.NewFault(21)
	sh := testShard(t, fsys)
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityPersisted)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Ten sends in one loop iteration: one group commit, one fdatasync.
	const sends = 10
	var tasks []*task
	for i := 0; i < sends; i++ {
		tk := &task{req: &sendReq{partRef: partRef{ns: p.ns, rev: p.revision}, body: testBatch(t, uint64(i*10), 10, 100)}, done: make(chan struct{}, 1)}
		tasks = append(tasks, tk)
		sh.dispatch(tk)
	}
	sh.settle()
	for i, tk := range tasks {
		select {
		case <-tk.done:
		default:
			t.Fatalf("send %d not answered", i)
		}
		if tk.status != 0 || tk.vstatus != 0 {
			t.Fatalf("send %d refused: %d/%d", i, tk.status, tk.vstatus)
		}
	}
	jdir := filepath.Join(p.dir, "journal")
	ents, err := fsys.ReadDir(jdir)
	if err != nil || len(ents) != 1 {
		t.Fatalf("journal files %v (%v), want one", ents, err)
	}
	jfile := filepath.Join(jdir, ents[0].Name())
	// kill -9: the kernel keeps every write.
	fsys = fsys.CrashWith(vfs.CrashKeepAll)
	before, ok := fsys.Durable(jfile)
	if !ok {
		t.Fatal("journal file not durable")
	}
	offs := recordOffsets(before)
	last := uint64(0)
	for op := range offs {
		last = max(last, op)
	}
	if last < sends {
		t.Fatalf("journal holds ops up to %d (%v), want at least %d", last, offs, sends)
	}
	victim := last - 5 // intact records follow it
	if !fsys.CorruptSector(jfile, offs[victim]+300) {
		t.Fatalf("op %d at %d not durable", victim, offs[victim])
	}
	damaged, _ := fsys.Durable(jfile)

	sh = testShard(t, fsys)
	_, err = sh.openPartition(spec)
	if !errors.Is(err, consensus.ErrJournalCorrupt) {
		t.Fatalf("open after corruption of op %d: %v, want a refusal", victim, err)
	}
	for _, want := range []string{jfile, "byte offset", "restore the data directory", "--fresh"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("refusal %q does not name %q", err, want)
		}
	}
	after, _ := fsys.Durable(jfile)
	if !bytes.Equal(after[:len(damaged)], damaged) {
		t.Fatalf("the refused open changed the journal (%d bytes, had %d)", len(after), len(damaged))
	}
	if got := recordOffsets(after); len(got) < int(last)-1 {
		t.Fatalf("records left after the refusal: %d of %d", len(got), last)
	}
}
