package superblock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

var cluster = Uint128{Hi: 0x0102030405060708, Lo: 0x1112131415161718}

func stateA() State {
	return State{Cluster: cluster, Replica: 1, ReplicaCount: 3, Commit: 100,
		CheckpointOp: 64, CheckpointChecksum: Uint128{Hi: 7, Lo: 9}, OffsetFrontier: 5000}
}

func stateB() State {
	s := stateA()
	s.Commit, s.CheckpointOp, s.CheckpointChecksum, s.OffsetFrontier = 180, 128, Uint128{Hi: 1, Lo: 2}, 9000
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newFS(t *testing.T, seed uint64) *vfs.Fault {
	t.Helper()
	f := vfs.NewFault(seed)
	must(t, vfs.MkdirAllSync(f, "/g", 0o755))
	return f
}

func TestFormatOpenWrite(t *testing.T) {
	fsys := newFS(t, 1)
	if _, err := Open(fsys, "/g", cluster, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a fresh directory: %v", err)
	}
	sb, err := Format(fsys, "/g", stateA())
	must(t, err)
	if sb.State() != stateA() || sb.Sequence() != 1 || sb.NeedsRepair() {
		t.Fatalf("after Format: %+v seq %d", sb.State(), sb.Sequence())
	}
	if _, err := Format(fsys, "/g", stateA()); !errors.Is(err, ErrExists) {
		t.Fatalf("second Format: %v", err)
	}
	must(t, sb.Write(stateB()))
	must(t, sb.Write(stateB())) // same state again is allowed
	if sb.Sequence() != 3 {
		t.Fatalf("sequence %d after two writes", sb.Sequence())
	}
	must(t, sb.Close())

	img := fsys.CrashWith(vfs.CrashDropAll)
	sb, err = Open(img, "/g", cluster, 1)
	must(t, err)
	if sb.State() != stateB() || sb.Sequence() != 3 {
		t.Fatalf("after crash: %+v seq %d", sb.State(), sb.Sequence())
	}
	if _, err := Open(img, "/g", Uint128{Lo: 1}, 1); !errors.Is(err, ErrClusterMismatch) {
		t.Fatalf("other cluster: %v", err)
	}
	if _, err := Open(img, "/g", cluster, 2); !errors.Is(err, ErrReplicaMismatch) {
		t.Fatalf("other replica: %v", err)
	}
}

// TestCrashAtEveryByte cuts the power at every byte offset of every slot
// write of a new record (KeepAll: exactly the bytes before the cut reach
// the disk; DropAll: only synced rounds survive; Random for a sample) and
// checks a valid copy of the old or the new record always remains, and the
// new one once its first round was synced.
func TestCrashAtEveryByte(t *testing.T) {
	step := 1
	if testing.Short() {
		step = 61
	}
	seen := map[string]int{}
	for k := 0; k < Copies; k++ { // which slot write of the record tears
		for b := 0; b < SlotSize; b += step {
			// KeepAll keeps exactly the bytes before the tear: the crash
			// at byte b. DropAll does not depend on b, so once per slot
			// write is enough; Random samples.
			modes := []vfs.CrashMode{vfs.CrashKeepAll}
			if b == 0 {
				modes = append(modes, vfs.CrashDropAll)
			}
			if b%61 == 0 {
				modes = append(modes, vfs.CrashRandom)
			}
			for _, mode := range modes {
				seed := uint64(k*SlotSize + b)
				fsys := newFS(t, seed)
				sb, err := Format(fsys, "/g", stateA())
				must(t, err)
				fsys.Inject(vfs.Rule{Ops: vfs.OpWrite, Path: "/g/superblock", After: k, Count: 1, Action: vfs.Halt, TearAt: b})
				if err := sb.Write(stateB()); !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("slot write %d byte %d: Write returned %v", k, b, err)
				}
				img := fsys.CrashWith(mode)
				got, err := Open(img, "/g", cluster, 1)
				if err != nil {
					t.Fatalf("slot write %d byte %d mode %d: %v", k, b, mode, err)
				}
				switch got.State() {
				case stateA():
					seen["old"]++
					if k >= 2 {
						t.Fatalf("slot write %d byte %d: old record back although the first round was synced", k, b)
					}
				case stateB():
					seen["new"]++
				default:
					t.Fatalf("slot write %d byte %d: state %+v is neither", k, b, got.State())
				}
				// The survivor repairs the rest on its next write.
				must(t, got.Write(stateB()))
				if got.NeedsRepair() {
					t.Fatal("a write left stale copies")
				}
				for i, st := range got.Slots() {
					if !st.Valid || st.Sequence != got.Sequence() {
						t.Fatalf("slot %d after repair: %+v", i, st)
					}
				}
			}
		}
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Fatalf("outcomes %v: both old and new records must occur", seen)
	}
}

func TestDamagedCopies(t *testing.T) {
	for damaged := 1; damaged <= Copies; damaged++ {
		t.Run(fmt.Sprint(damaged), func(t *testing.T) {
			fsys := newFS(t, uint64(damaged))
			sb, err := Format(fsys, "/g", stateA())
			must(t, err)
			must(t, sb.Write(stateB()))
			must(t, sb.Close())
			for i := 0; i < damaged; i++ {
				if !fsys.CorruptSector("/g/superblock", int64(i*SlotSize+100)) {
					t.Fatal("could not corrupt")
				}
			}
			sb, err = Open(fsys, "/g", cluster, 1)
			if damaged == Copies {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("all copies damaged: %v", err)
				}
				return
			}
			must(t, err)
			if sb.State() != stateB() || !sb.NeedsRepair() {
				t.Fatalf("state %+v, needs repair %v", sb.State(), sb.NeedsRepair())
			}
			for i, st := range sb.Slots() {
				if st.Valid != (i >= damaged) {
					t.Fatalf("slot %d valid = %v", i, st.Valid)
				}
			}
			must(t, sb.Write(sb.State()))
			must(t, sb.Close())
			sb, err = Open(fsys.CrashWith(vfs.CrashDropAll), "/g", cluster, 1)
			must(t, err)
			if sb.NeedsRepair() || sb.State() != stateB() {
				t.Fatalf("not repaired: %+v", sb.Slots())
			}
		})
	}
}

func fileBytes(t *testing.T, fsys vfs.FS) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, "/g/superblock")
	must(t, err)
	return b
}

func writeBytes(t *testing.T, fsys vfs.FS, b []byte, off int64) {
	t.Helper()
	f, err := fsys.OpenFile("/g/superblock", vfs.O_RDWR, 0)
	must(t, err)
	_, err = f.WriteAt(b, off)
	must(t, err)
	must(t, f.Close())
}

func TestMisdirectedAndStaleCopies(t *testing.T) {
	fsys := newFS(t, 3)
	sb, err := Format(fsys, "/g", stateA())
	must(t, err)
	old := fileBytes(t, fsys)
	must(t, sb.Write(stateB()))
	must(t, sb.Close())
	// Slot 0's copy written into slot 1: valid checksum, wrong place.
	cur := fileBytes(t, fsys)
	writeBytes(t, fsys, cur[:SlotSize], SlotSize)
	// Slot 2 goes back to the older sequence (a lost write).
	writeBytes(t, fsys, old[2*SlotSize:3*SlotSize], 2*SlotSize)
	sb, err = Open(fsys, "/g", cluster, 1)
	must(t, err)
	sl := sb.Slots()
	if sl[1].Valid || !sl[2].Valid || sl[2].Sequence != 1 || sb.Sequence() != 2 || sb.State() != stateB() {
		t.Fatalf("slots %+v, sequence %d", sl, sb.Sequence())
	}
}

func TestNewerVersionRefused(t *testing.T) {
	fsys := newFS(t, 4)
	sb, err := Format(fsys, "/g", stateA())
	must(t, err)
	must(t, sb.Close())
	slot := fileBytes(t, fsys)[SlotSize : 2*SlotSize]
	binary.LittleEndian.PutUint16(slot[24:], Version+1)
	putU128(slot, sum128(slot[16:]))
	writeBytes(t, fsys, slot, SlotSize)
	if _, err := Open(fsys, "/g", cluster, 1); !errors.Is(err, ErrVersion) {
		t.Fatalf("newer version: %v", err)
	}
}

// Bytes [76, 84) once laid out view and log_view; they are written as zero
// and a copy carrying something there (a file from a build that wrote them)
// still opens, with the rest of the record intact.
func TestReservedViewBytesZeroAndIgnored(t *testing.T) {
	fsys := newFS(t, 11)
	sb, err := Format(fsys, "/g", stateA())
	must(t, err)
	must(t, sb.Write(stateB()))
	must(t, sb.Close())
	raw := fileBytes(t, fsys)
	for i := 0; i < Copies; i++ {
		if got := raw[i*SlotSize+76 : i*SlotSize+84]; !bytes.Equal(got, make([]byte, 8)) {
			t.Fatalf("copy %d: reserved bytes [76, 84) = %x, want zero", i, got)
		}
	}
	for i := 0; i < Copies; i++ {
		slot := raw[i*SlotSize : (i+1)*SlotSize]
		binary.LittleEndian.PutUint32(slot[76:], 9)
		binary.LittleEndian.PutUint32(slot[80:], 8)
		putU128(slot, sum128(slot[16:]))
	}
	writeBytes(t, fsys, raw, 0)
	sb, err = Open(fsys, "/g", cluster, 1)
	must(t, err)
	defer sb.Close()
	if sb.State() != stateB() || sb.Sequence() != 2 {
		t.Fatalf("reopened %+v at sequence %d, want %+v at 2", sb.State(), sb.Sequence(), stateB())
	}
	for i, st := range sb.Slots() {
		if !st.Valid {
			t.Fatalf("slot %d refused for bytes it must ignore: %v", i, st.Err)
		}
	}
	st := stateB()
	st.Commit++
	must(t, sb.Write(st))
}

func TestWriteInvariantsPanic(t *testing.T) {
	fsys := newFS(t, 5)
	sb, err := Format(fsys, "/g", stateB())
	must(t, err)
	for name, mutate := range map[string]func(*State){
		"commit":   func(s *State) { s.Commit-- },
		"ckpt":     func(s *State) { s.CheckpointOp-- },
		"frontier": func(s *State) { s.OffsetFrontier-- },
		"cluster":  func(s *State) { s.Cluster.Lo++ },
		"count":    func(s *State) { s.ReplicaCount++ },
	} {
		st := stateB()
		mutate(&st)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Write did not panic", name)
				}
			}()
			_ = sb.Write(st)
		}()
	}
	if sb.Sequence() != 1 {
		t.Fatal("a refused write changed the sequence")
	}
}

func TestFailedWritePoisons(t *testing.T) {
	fsys := newFS(t, 6)
	sb, err := Format(fsys, "/g", stateA())
	must(t, err)
	fsys.Inject(vfs.Rule{Ops: vfs.OpSync, Count: 1})
	if err := sb.Write(stateB()); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Write with failing sync: %v", err)
	}
	if err := sb.Write(stateB()); err == nil {
		t.Fatal("Write after a failed write succeeded")
	}
}

// TestEncodingLayout pins the documented byte offsets.
func TestEncodingLayout(t *testing.T) {
	slot := make([]byte, SlotSize)
	r := record{State: stateB(), Sequence: 0x42, Parent: Uint128{Hi: 0xAA, Lo: 0xBB}}
	encode(slot, r, 3)
	le64 := binary.LittleEndian.Uint64
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"version", uint64(binary.LittleEndian.Uint16(slot[24:])), Version},
		{"copy", uint64(slot[26]), 3},
		{"size", uint64(binary.LittleEndian.Uint32(slot[28:])), recordSize},
		{"sequence", le64(slot[32:]), 0x42},
		{"parent.lo", le64(slot[40:]), 0xBB},
		{"parent.hi", le64(slot[48:]), 0xAA},
		{"cluster.lo", le64(slot[56:]), cluster.Lo},
		{"cluster.hi", le64(slot[64:]), cluster.Hi},
		{"replica", uint64(slot[72]), 1},
		{"replica_count", uint64(slot[73]), 3},
		{"reserved 74", uint64(binary.LittleEndian.Uint16(slot[74:])), 0},
		{"reserved 76", le64(slot[76:]), 0},
		{"reserved 84", uint64(binary.LittleEndian.Uint32(slot[84:])), 0},
		{"commit", le64(slot[88:]), 180},
		{"checkpoint_op", le64(slot[96:]), 128},
		{"checkpoint_checksum.lo", le64(slot[104:]), 2},
		{"checkpoint_checksum.hi", le64(slot[112:]), 1},
		{"offset_frontier", le64(slot[120:]), 9000},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
	if string(slot[16:24]) != "IGGOSUPB" || !bytes.Equal(slot[recordSize:], make([]byte, SlotSize-recordSize)) {
		t.Error("magic or reserved area wrong")
	}
	got, err := decode(slot, 3)
	must(t, err)
	if got != r {
		t.Fatalf("decode(encode(r)) = %+v", got)
	}
	if _, err := decode(slot, 2); err == nil {
		t.Fatal("copy 3 decoded as copy 2")
	}
}

// FuzzDecode: decode never panics, and whatever it accepts re-encodes to
// the same bytes, except the ignored reserved bytes [76, 84), which
// re-encode as zero (and so change the checksum).
func FuzzDecode(f *testing.F) {
	slot := make([]byte, SlotSize)
	encode(slot, record{State: stateA(), Sequence: 9}, 1)
	f.Add(slot, uint8(1))
	f.Add(make([]byte, SlotSize), uint8(0))
	f.Add(slot[:100], uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, i uint8) {
		idx := int(i % Copies)
		r, err := decode(b, idx)
		if err != nil {
			return
		}
		again := make([]byte, SlotSize)
		encode(again, r, idx)
		want := bytes.Clone(b)
		clear(want[76:84])
		putU128(want, sum128(want[16:]))
		if !bytes.Equal(again, want) {
			t.Fatal("accepted bytes that do not re-encode identically")
		}
	})
}
