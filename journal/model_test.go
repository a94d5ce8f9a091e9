package journal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"pgregory.net/rapid"
)

// TestModel drives a journal with random operations against a plain map
// model, reopening it now and then (as after a process kill: every write
// reached the kernel), and checks that it always holds exactly the model.
func TestModel(t *testing.T) {
	for _, partition := range []bool{false, true} {
		name := map[bool]string{false: "metadata", true: "partition"}[partition]
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				fsys := vfs.NewFault(rapid.Uint64().Draw(rt, "seed"))
				open := func(f vfs.FS) *Journal {
					var j *Journal
					var rep *Recovery
					var err error
					if partition {
						j, rep, err = OpenPartition(f, "/j", PartitionOptions{Budget: 32 << 10, FileSize: 2 << 10, MaxEntry: 1 << 10})
					} else {
						j, rep, err = OpenMetadata(f, "/j", MetadataOptions{Slots: 24, CheckpointMargin: 4, MaxEntry: 1 << 10})
					}
					if err != nil {
						rt.Fatalf("open: %v", err)
					}
					// Every open here follows a process kill at most: every
					// write is there, so every file ends cleanly (a recycled
					// file at its end marker).
					if rep.Torn != nil || len(rep.Faulty) != 0 {
						rt.Fatalf("open after a kill: torn %+v faulty %+v", rep.Torn, rep.Faulty)
					}
					return j
				}
				j := open(fsys)
				model := map[uint64][]byte{}
				next, discarded := uint64(1), uint64(0)

				check := func() {
					first := discarded + 1
					if len(model) > 0 && (j.Len() != int(next-first) || j.First() != first) {
						rt.Fatalf("journal holds %d..%d (%d), model %d..%d", j.First(), j.Last(), j.Len(), first, next-1)
					}
					for op, want := range model {
						got, err := j.Read(op)
						if err != nil || !bytes.Equal(got, want) {
							rt.Fatalf("op %d: %v", op, err)
						}
					}
				}
				rt.Repeat(map[string]func(*rapid.T){
					"append": func(rt *rapid.T) {
						n := rapid.IntRange(1, 3).Draw(rt, "n")
						var ents []Entry
						for i := 0; i < n; i++ {
							b := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(rt, "entry")
							ents = append(ents, Bytes(next+uint64(i), b))
						}
						err := j.Append(ents...)
						if errors.Is(err, ErrFull) {
							if !j.CheckpointDue() {
								rt.Fatalf("append refused as full while no checkpoint is due")
							}
							return
						}
						if err != nil {
							rt.Fatalf("append: %v", err)
						}
						for _, e := range ents {
							model[e.Op] = e.Parts[0]
						}
						next += uint64(n)
					},
					"sync": func(rt *rapid.T) {
						if err := j.Sync(); err != nil {
							rt.Fatalf("sync: %v", err)
						}
						if len(model) > 0 && j.Synced() != next-1 {
							rt.Fatalf("synced %d after sync, last %d", j.Synced(), next-1)
						}
					},
					"truncate": func(rt *rapid.T) {
						if len(model) == 0 {
							return
						}
						op := rapid.Uint64Range(discarded+1, next-1).Draw(rt, "from")
						eff, err := j.TruncateFrom(op)
						if err != nil || eff != op {
							rt.Fatalf("truncate from %d: %d, %v", op, eff, err)
						}
						for o := op; o < next; o++ {
							delete(model, o)
						}
						next = op
					},
					"discard": func(rt *rapid.T) {
						if len(model) == 0 {
							return
						}
						through := rapid.Uint64Range(discarded, next-1).Draw(rt, "through")
						if err := j.DiscardPrefix(through); err != nil {
							rt.Fatalf("discard through %d: %v", through, err)
						}
						for o := discarded; o <= through; o++ {
							delete(model, o)
						}
						discarded = through
					},
					"reopen": func(rt *rapid.T) {
						img := fsys.CrashWith(vfs.CrashKeepAll)
						fsys = img
						j = open(img)
						// Partition journals may bring back discarded ops
						// left in their first file; discard them again.
						if len(model) > 0 || j.Len() > 0 {
							if err := j.DiscardPrefix(discarded); err != nil {
								rt.Fatalf("re-discard: %v", err)
							}
						}
						if len(model) == 0 && j.Len() != 0 {
							rt.Fatalf("empty model, journal holds %d ops", j.Len())
						}
					},
					"": func(rt *rapid.T) { check() },
				})
			})
		})
	}
}
