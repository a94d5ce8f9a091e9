package vsrtest

import (
	"testing"

	"github.com/iggo/iggo/vsr"
)

// Two truncates with no completed append between them: a crash undoes both,
// the later one only, or neither, and the journal it leaves is contiguous
// (sim seed 2021472: only the first truncate's entries came back, above a
// hole where the second one's had been).
func TestDiskCrashUndoesSeveralTruncatesWithoutHole(t *testing.T) {
	seen := map[int]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		d := NewDisk()
		for op := uint64(1); op <= 10; op++ {
			d.append(op, []byte{byte(op)})
		}
		d.completeAppend(10)
		d.truncate(8)
		d.append(9, []byte{0xf9}) // not durable
		d.truncate(6)
		d.truncate(4)
		d.Crash(vsr.NewPRNG(seed))
		for i, e := range d.Journal {
			if e.Op != uint64(i+1) {
				t.Fatalf("seed %d: journal %v has a hole at index %d", seed, ops(d), i)
			}
			if e.Frame[0] != byte(e.Op) {
				t.Fatalf("seed %d: op %d came back with the frame of a lost append", seed, e.Op)
			}
		}
		seen[len(d.Journal)] = true
	}
	for _, n := range []int{4, 6, 8, 10} {
		if !seen[n] {
			t.Errorf("no crash left exactly %d entries (outcomes %v)", n, seen)
		}
	}
}

func ops(d *Disk) []uint64 {
	var out []uint64
	for _, e := range d.Journal {
		out = append(out, e.Op)
	}
	return out
}
