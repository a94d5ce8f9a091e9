package journal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
)

// crashModel is what the test knows the journal should hold.
type crashModel struct {
	content   map[uint64][]byte // ops the journal holds (or may, after a failed append)
	history   map[uint64][]byte // last content appended for every op ever
	discarded uint64
	next      uint64
}

type crashRun struct {
	t         *testing.T
	seed      uint64
	rng       *rand.Rand
	partition bool
	// fixed: every entry has the same size, so the records of every
	// incarnation of a recycled file sit at the same offsets (stale
	// records exactly where the next ones are expected).
	fixed bool
	m     crashModel
}

func (r *crashRun) open(fsys vfs.FS) (*Journal, *Recovery, error) {
	if r.partition {
		return OpenPartition(fsys, "/j", PartitionOptions{Budget: 48 << 10, FileSize: 3 << 10, MaxEntry: 2 << 10})
	}
	return OpenMetadata(fsys, "/j", MetadataOptions{Slots: 40, CheckpointMargin: 8, MaxEntry: 2 << 10})
}

func (r *crashRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d (partition %v): %s", r.seed, r.partition, fmt.Sprintf(format, args...))
}

// workload runs random operations until steps run out or an operation
// fails (a halt injected by the caller); it returns the durable frontier
// the journal promised.
func (r *crashRun) workload(j *Journal, steps int) uint64 {
	for s := 0; s < steps; s++ {
		switch x := r.rng.IntN(100); {
		case x < 60:
			if j.CheckpointDue() {
				through := j.Last() - uint64(r.rng.IntN(3))
				if err := j.DiscardPrefix(through); err != nil {
					r.dropThrough(through)
					return j.Synced()
				}
				r.dropThrough(through)
				continue
			}
			n := 1 + r.rng.IntN(4)
			var ents []Entry
			for i := 0; i < n; i++ {
				op := r.m.next + uint64(i)
				size := r.rng.IntN(700)
				if r.fixed {
					size = 300
				}
				b := content(op, size, r.rng.Uint64())
				ents = append(ents, split(r.rng, op, b))
				r.m.content[op] = b
				r.m.history[op] = b
			}
			err := j.Append(ents...)
			if errors.Is(err, ErrFull) {
				for _, e := range ents {
					delete(r.m.content, e.Op)
				}
				continue
			}
			r.m.next += uint64(n)
			if err != nil {
				return j.Synced()
			}
		case x < 85:
			if r.rng.IntN(2) == 0 {
				if err := j.Sync(); err != nil {
					return j.Synced()
				}
			} else {
				var b vfs.Batch
				t := j.SyncTo(&b)
				if err := j.fs.Submit(&b); err != nil {
					return j.Synced()
				}
				j.SyncDone(t)
			}
		case x < 93:
			if j.Len() == 0 {
				continue
			}
			op := j.First() + uint64(r.rng.IntN(j.Len()))
			eff, err := j.TruncateFrom(op)
			if err != nil {
				return j.Synced()
			}
			for o := eff; o < r.m.next; o++ {
				delete(r.m.content, o)
			}
			r.m.next = eff
		default:
			if j.Len() == 0 {
				continue
			}
			through := j.First() - 1 + uint64(r.rng.IntN(j.Len()+1))
			err := j.DiscardPrefix(through)
			r.dropThrough(through)
			if err != nil {
				return j.Synced()
			}
		}
	}
	return j.Synced()
}

func (r *crashRun) dropThrough(through uint64) {
	for op := range r.m.content {
		if op <= through {
			delete(r.m.content, op)
		}
	}
	r.m.discarded = max(r.m.discarded, through)
	if r.m.next <= through {
		r.m.next = through + 1
	}
}

// check verifies a recovered journal against the model: nothing reported
// faulty (no corruption was injected), every op up to durable present and
// intact, and every op present holding what was last appended for it.
func (r *crashRun) check(j *Journal, rep *Recovery, durable uint64) {
	r.t.Helper()
	if len(rep.Faulty) != 0 {
		r.fatalf("crash without corruption reported faulty ops %+v", rep.Faulty)
	}
	for op, want := range r.m.content {
		if op > durable {
			continue
		}
		got, err := j.Read(op)
		if err != nil {
			r.fatalf("durable op %d (durable %d): %v; recovery %+v", op, durable, err, rep)
		}
		if !bytes.Equal(got, want) {
			r.fatalf("durable op %d holds other bytes", op)
		}
	}
	for op := j.First(); j.Len() > 0 && op <= j.Last(); op++ {
		got, err := j.Read(op)
		if err != nil {
			r.fatalf("present op %d unreadable: %v", op, err)
		}
		want, ok := r.m.content[op]
		if !ok {
			if op > r.m.discarded {
				r.fatalf("op %d present but was never appended or was truncated", op)
			}
			want = r.m.history[op]
		}
		if !bytes.Equal(got, want) {
			r.fatalf("op %d holds bytes that were not its last append", op)
		}
	}
}

// TestCrashConsistency runs thousands of seeded workloads, crashes each at
// a random point (between operations, or halted inside one), recovers, and
// checks that what was synced survived intact and nothing else appeared.
// It then keeps using the recovered journal and crashes it again.
func TestCrashConsistency(t *testing.T) {
	seeds := 2000
	if testing.Short() {
		seeds = 300
	}
	torn, halts := 0, 0
	var recycled uint64 // rotations into recycled files
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		r := &crashRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 77)), partition: seed%2 == 1, fixed: seed%4 == 3,
			m: crashModel{content: map[uint64][]byte{}, history: map[uint64][]byte{}, next: 1}}
		fsys := vfs.NewFault(seed)
		j, _, err := r.open(fsys)
		if err != nil {
			r.fatalf("open: %v", err)
		}
		if r.rng.IntN(3) == 0 {
			// Power cut inside some later operation.
			fsys.Inject(vfs.Rule{After: 20 + r.rng.IntN(200), Count: 1, Action: vfs.Halt, TearAt: -1})
			halts++
		}
		durable := r.workload(j, 10+r.rng.IntN(60))
		recycled += j.recycled
		img := fsys.Crash()
		j2, rep, err := r.open(img)
		if err != nil {
			r.fatalf("recovery: %v", err)
		}
		if rep.Torn != nil {
			torn++
		}
		r.check(j2, rep, durable)

		// The recovered journal keeps working.
		r.m.content = map[uint64][]byte{}
		for op := j2.First(); j2.Len() > 0 && op <= j2.Last(); op++ {
			b, _ := j2.Read(op)
			r.m.content[op] = b
			r.m.history[op] = b
		}
		r.m.next = j2.Next()
		if r.m.next == 0 {
			r.m.next = r.m.discarded + 1
		}
		durable = r.workload(j2, 5+r.rng.IntN(20))
		recycled += j2.recycled
		must(t, j2.Sync())
		durable = j2.Synced()
		j3, rep, err := r.open(img.Crash())
		if err != nil {
			r.fatalf("second recovery: %v", err)
		}
		r.check(j3, rep, durable)
	}
	if torn == 0 || halts == 0 {
		t.Fatalf("no torn tail in %d runs (%d halted): the test does not exercise recovery", seeds, halts)
	}
	t.Logf("%d torn tails, %d halts, %d rotations into recycled files", torn, halts, recycled)
	if recycled < uint64(seeds)/10 {
		t.Fatalf("%d rotations into recycled files in %d runs: the test does not exercise recycling", recycled, seeds)
	}
}

// TestCorruptionIsReportedNotLost corrupts a random sector of synced data
// and checks that every op covered by a sync promise on disk is either
// intact or reported faulty, never silently dropped, and that faulty ops
// repair from the original bytes.
func TestCorruptionIsReportedNotLost(t *testing.T) {
	seeds := 1000
	if testing.Short() {
		seeds = 150
	}
	faulty, repaired := 0, 0
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		r := &crashRun{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 78)), partition: seed%2 == 0, fixed: seed%4 == 2,
			m: crashModel{content: map[uint64][]byte{}, history: map[uint64][]byte{}, next: 1}}
		fsys := vfs.NewFault(seed)
		j, _, err := r.open(fsys)
		must(t, err)
		r.workload(j, 10+r.rng.IntN(40))
		must(t, j.Sync())
		// Three more records after the sync carry its promise to disk,
		// spread over more bytes than one sector, so that damage to one
		// sector cannot destroy every copy of the promise (a single record
		// carrying it could be hit together with the data it vouches for).
		promised := j.Synced()
		var more []Entry
		for i := 0; i < 3; i++ {
			op := r.m.next + uint64(i)
			b := content(op, 420, seed)
			more = append(more, Bytes(op, b))
		}
		if err := j.Append(more...); errors.Is(err, ErrFull) {
			continue
		} else {
			must(t, err)
		}
		for _, e := range more {
			r.m.content[e.Op], r.m.history[e.Op] = e.Parts[0], e.Parts[0]
		}
		r.m.next += 3
		must(t, j.Sync())
		img := fsys.CrashWith(vfs.CrashDropAll)
		ents, err := img.ReadDir("/j")
		must(t, err)
		var files []string
		for _, e := range ents {
			if e.Name() != "superblock" {
				files = append(files, "/j/"+e.Name())
			}
		}
		victim := files[r.rng.IntN(len(files))]
		if img.CorruptRandom(victim) < 0 {
			continue
		}
		j2, rep, err := r.open(img)
		if err != nil {
			r.fatalf("recovery after corruption: %v", err)
		}
		bad := map[uint64]bool{}
		var unknownBelow uint64 // From == 0: every op up to To is lost, start unknown
		for _, f := range rep.Faulty {
			if f.From == 0 {
				unknownBelow = max(unknownBelow, f.To)
				continue
			}
			for o := f.From; o <= f.To; o++ {
				bad[o] = true
			}
		}
		for o, want := range r.m.content {
			if o > promised {
				continue
			}
			if o <= unknownBelow {
				if _, err := j2.Read(o); !errors.Is(err, ErrNotFound) {
					r.fatalf("op %d below an unknown-start run reads as %v", o, err)
				}
				continue
			}
			if bad[o] {
				if _, err := j2.Read(o); !errors.Is(err, ErrFaulty) {
					r.fatalf("faulty op %d reads as %v", o, err)
				}
				continue
			}
			got, err := j2.Read(o)
			if err != nil || !bytes.Equal(got, want) {
				r.fatalf("promised op %d (promised %d, next %d) neither intact nor reported faulty: %v (recovery %+v torn %+v victim %s)", o, promised, r.m.next, err, rep, rep.Torn, victim)
			}
		}
		if len(rep.Faulty) == 0 {
			continue
		}
		faulty++
		// Repair every repairable run from the original bytes.
		ok := true
		for _, f := range rep.Faulty {
			if !f.Repairable {
				ok = false
				continue
			}
			for o := f.From; o <= f.To; o++ {
				if err := j2.Repair(o, r.m.history[o]); err != nil {
					r.fatalf("repair of op %d: %v", o, err)
				}
				readOK(t, j2, o, r.m.history[o])
			}
		}
		if !ok {
			continue
		}
		must(t, j2.Sync())
		j3, rep3, err := r.open(img.CrashWith(vfs.CrashDropAll))
		must(t, err)
		if len(rep3.Faulty) != 0 || len(j3.Faulty()) != 0 {
			r.fatalf("repaired journal still faulty: %+v", rep3.Faulty)
		}
		for o := j3.First(); o <= j3.Last(); o++ {
			if _, err := j3.Read(o); err != nil {
				r.fatalf("op %d after repair: %v", o, err)
			}
		}
		repaired++
	}
	if faulty == 0 || repaired == 0 {
		t.Fatalf("corruption reported as faulty in %d runs, repaired in %d: the test does not exercise repair", faulty, repaired)
	}
}
