package partition

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/iggo/iggo/shard/vfs"
)

func TestCheckpointRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		next    uint64
		gen     uint64
		offsets map[OffsetKey]uint64
		table   []byte
	}{
		{"empty", 0, 0, nil, nil},
		{"offsets", 1234, 2, map[OffsetKey]uint64{{1, 5}: 9, {2, 0}: 100, {1, math.MaxUint32}: 1}, nil},
		{"producers", 7, 0, map[OffsetKey]uint64{{1, 5}: 9}, []byte("producer table bytes")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeCheckpoint(checkpointState{op: 77, next: tc.next, purgeGen: tc.gen, offsets: tc.offsets, table: tc.table})
			c, err := decodeCheckpoint(b)
			if err != nil {
				t.Fatal(err)
			}
			if c.op != 77 || c.next != tc.next || c.purgeGen != tc.gen || len(c.offsets) != len(tc.offsets) ||
				string(c.table) != string(tc.table) {
				t.Fatalf("decoded %+v", c)
			}
			for k, v := range tc.offsets {
				if c.offsets[k] != v {
					t.Fatalf("offset %v: %d, want %d", k, c.offsets[k], v)
				}
			}
			b[len(b)/2] ^= 1
			if _, err := decodeCheckpoint(b); err == nil {
				t.Fatal("a damaged checkpoint decoded")
			}
		})
	}
}

// The checkpoint layout, byte by byte as doc.go gives it.
func TestCheckpointLayout(t *testing.T) {
	b := encodeCheckpoint(checkpointState{op: 9, next: 5, purgeGen: 2,
		offsets: map[OffsetKey]uint64{{2, 1}: 8, {1, 7}: 3}, table: []byte{0xaa, 0xbb}})
	if string(b[:8]) != "IGGOPCKP" || binary.LittleEndian.Uint32(b[8:]) != 2 || binary.LittleEndian.Uint32(b[12:]) != 0 ||
		binary.LittleEndian.Uint64(b[16:]) != 9 || binary.LittleEndian.Uint64(b[24:]) != 5 ||
		binary.LittleEndian.Uint64(b[32:]) != 2 || binary.LittleEndian.Uint32(b[40:]) != 2 {
		t.Fatalf("header % x", b[:44])
	}
	// Entries by ascending (kind, id): {1,7} before {2,1}.
	if b[44] != 1 || binary.LittleEndian.Uint32(b[45:]) != 7 || binary.LittleEndian.Uint64(b[49:]) != 3 ||
		b[57] != 2 || binary.LittleEndian.Uint32(b[58:]) != 1 || binary.LittleEndian.Uint64(b[62:]) != 8 {
		t.Fatalf("entries % x", b[44:70])
	}
	if binary.LittleEndian.Uint32(b[70:]) != 2 || b[74] != 0xaa || b[75] != 0xbb || len(b) != 76+16 {
		t.Fatalf("table and length: % x (%d bytes)", b[70:], len(b))
	}
	sum := xxh3.Hash128(b[:76])
	if binary.LittleEndian.Uint64(b[76:]) != sum.Lo || binary.LittleEndian.Uint64(b[84:]) != sum.Hi {
		t.Fatal("trailing checksum is not XXH3-128 of the bytes before it, low half first")
	}
}

// A version 1 checkpoint (before producer tables) still decodes, with no
// table.
func TestCheckpointVersion1(t *testing.T) {
	b := legacyCheckpointV1(9, 5, 1, 2, 3)
	c, err := decodeCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.op != 9 || c.next != 5 || c.offsets[OffsetKey{1, 2}] != 3 || c.table != nil {
		t.Fatalf("decoded %+v", c)
	}
}

// legacyCheckpointV1 builds a version 1 file with one consumer offset.
func legacyCheckpointV1(op, next uint64, kind uint8, id uint32, off uint64) []byte {
	b := make([]byte, 44)
	copy(b, ckptMagic)
	binary.LittleEndian.PutUint32(b[8:], 1)
	binary.LittleEndian.PutUint64(b[16:], op)
	binary.LittleEndian.PutUint64(b[24:], next)
	binary.LittleEndian.PutUint32(b[40:], 1)
	b = append(b, kind)
	b = binary.LittleEndian.AppendUint32(b, id)
	b = binary.LittleEndian.AppendUint64(b, off)
	sum := xxh3.Hash128(b)
	b = binary.LittleEndian.AppendUint64(b, sum.Lo)
	return binary.LittleEndian.AppendUint64(b, sum.Hi)
}

func FuzzCheckpoint(f *testing.F) {
	f.Add(encodeCheckpoint(checkpointState{op: 9, next: 5, offsets: map[OffsetKey]uint64{{1, 2}: 3}, table: []byte{1, 2}}))
	f.Add(legacyCheckpointV1(9, 5, 1, 2, 3))
	f.Add([]byte(ckptMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCheckpoint(b)
		if err != nil {
			return
		}
		got := encodeCheckpoint(c)
		if binary.LittleEndian.Uint32(b[8:]) == ckptVersion && string(got) != string(b) {
			t.Fatalf("decoded checkpoint re-encodes differently")
		}
		again, err := decodeCheckpoint(got)
		if err != nil || again.op != c.op || again.next != c.next || string(again.table) != string(c.table) || len(again.offsets) != len(c.offsets) {
			t.Fatalf("re-encoded checkpoint decodes differently: %v", err)
		}
	})
}

func FuzzPurgeGen(f *testing.F) {
	f.Add(encodePurgeGen(3))
	f.Add(append(binary.LittleEndian.AppendUint64(nil, 3), make([]byte, 8)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		gen, ok := decodePurgeGen(b)
		if ok && binary.LittleEndian.Uint64(b) != gen {
			t.Fatal("generation mismatch")
		}
		if ok && string(encodePurgeGen(gen)) != string(b) {
			t.Fatal("a decoded purge generation re-encodes differently")
		}
	})
}

func TestPurgeGenLayout(t *testing.T) {
	b := encodePurgeGen(0x0102030405060708)
	if len(b) != 16 || binary.LittleEndian.Uint64(b) != 0x0102030405060708 || binary.LittleEndian.Uint64(b[8:]) != xxh3.Hash(b[:8]) {
		t.Fatalf("purge.gen % x", b)
	}
	if _, ok := decodePurgeGen(append(b[:15:15], b[15]^1)); ok {
		t.Fatal("a damaged purge generation decoded")
	}
}

func TestSegListRoundTrip(t *testing.T) {
	list := []segEntry{{start: 0, size: 100}, {start: 40, size: 7}}
	list[1].sum[3] = 9
	b := encodeSegList(list)
	if string(b[:8]) != "IGGOPSEG" || binary.LittleEndian.Uint32(b[8:]) != 1 || binary.LittleEndian.Uint32(b[12:]) != 2 || len(b) != 16+2*32+16 {
		t.Fatalf("segment list % x", b[:16])
	}
	got, err := decodeSegList(b)
	if err != nil || len(got) != 2 || got[1] != list[1] || got[0] != list[0] {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	b[20] ^= 1
	if _, err := decodeSegList(b); err == nil {
		t.Fatal("a damaged segment list decoded")
	}
}

// A checkpoint whose segment sync plan fails (here the index entries it
// writes first) stops the group: the segment log has failed for good, and a
// group running on would fail every later checkpoint and poll (real-stack
// simulator, seed 202257). A failure of the checkpoint file alone does not.
func TestCheckpointSegmentFailureStopsTheGroup(t *testing.T) {
	r := newRig(t, 15, true)
	fill(r, 1)
	if _, err := r.p.Checkpoint(r.op, nil); err != nil {
		t.Fatal(err)
	}
	r.send(1000, 20, 1000)
	id := r.fs.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: r.cfg.Dir + "/checkpoint-", Count: 1, Action: vfs.Fail})
	if _, err := r.p.Checkpoint(r.op, nil); err == nil {
		t.Fatal("a checkpoint whose file write failed succeeded")
	}
	if len(r.host.failed) != 0 {
		t.Fatalf("a failed checkpoint file stopped the group: %v", r.host.failed)
	}
	r.fs.RemoveRule(id)
	r.send(2000, 20, 1000)
	r.fs.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: r.cfg.Dir + "/00000000000000000000.index", Count: 1, Action: vfs.Fail})
	if _, err := r.p.Checkpoint(r.op, nil); err == nil {
		t.Fatal("a checkpoint whose index write failed succeeded")
	}
	if len(r.host.failed) == 0 {
		t.Fatal("the group runs on after its segment log failed in a checkpoint")
	}
}
