package consensus

import (
	"bytes"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

func TestViewStateKeepsTheNewestIntactRecord(t *testing.T) {
	fsys := vfs.NewFault(1)
	if err := fsys.MkdirAll("/g", 0o755); err != nil {
		t.Fatal(err)
	}
	v, payload, err := openViewState(fsys, "/g")
	if err != nil || payload != nil {
		t.Fatalf("fresh view state: %v, %v", payload, err)
	}
	for i := 1; i <= 5; i++ {
		if err := v.write(bytes.Repeat([]byte{byte(i)}, 100*i)); err != nil {
			t.Fatal(err)
		}
	}
	// A crash keeps what was synced: the fifth record.
	fsys = fsys.CrashWith(vfs.CrashRandom)
	v, payload, err = openViewState(fsys, "/g")
	if err != nil || !bytes.Equal(payload, bytes.Repeat([]byte{5}, 500)) {
		t.Fatalf("after crash: %d bytes, %v", len(payload), err)
	}
	// Rot in the newest slot falls back to the previous record.
	if !fsys.CorruptSector("/g/"+viewStateFile, int64(v.seq%2)*viewStateSlot) {
		t.Fatal("no sector corrupted")
	}
	_, payload, err = openViewState(fsys, "/g")
	if err != nil || !bytes.Equal(payload, bytes.Repeat([]byte{4}, 400)) {
		t.Fatalf("after corrupting the newest slot: %d bytes, %v", len(payload), err)
	}
	if err := v.write(make([]byte, viewStateSlot)); err == nil {
		t.Fatal("an oversized record was written")
	}
}

func FuzzViewStateSlot(f *testing.F) {
	fsys := vfs.NewFault(1)
	_ = fsys.MkdirAll("/g", 0o755)
	v, _, _ := openViewState(fsys, "/g")
	_ = v.write([]byte("state"))
	b, _ := vfs.ReadFile(fsys, "/g/"+viewStateFile)
	f.Add(b[viewStateSlot:], 1)
	f.Add([]byte(viewStateMagic), 0)
	f.Fuzz(func(t *testing.T, b []byte, slot int) {
		seq, payload, ok := decodeViewSlot(b, slot&1)
		if ok && (seq == 0 || int(seq%2) != slot&1 || len(payload) > len(b)) {
			t.Fatalf("accepted seq %d for slot %d", seq, slot&1)
		}
	})
}
