package metadata

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

type rec struct{ id uint32 }

// TestTableModel checks the copy-on-write id table against a map across
// chunk boundaries: lookups, lowest free id, counts, ordered iteration,
// bookkeeping, and that versions taken earlier never change.
func TestTableModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var tb table[rec]
		model := map[uint32]bool{}
		type version struct {
			tb    table[rec]
			model map[uint32]bool
		}
		var versions []version
		gen := uint64(1)
		ids := rapid.Uint32Range(0, 3*chunkSize+10)
		rt.Repeat(map[string]func(*rapid.T){
			"insert lowest free": func(rt *rapid.T) {
				id := tb.lowestFree()
				tb.set(gen, id, &rec{id})
				model[id] = true
			},
			"insert": func(rt *rapid.T) {
				id := ids.Draw(rt, "id")
				tb.set(gen, id, &rec{id})
				model[id] = true
			},
			"delete": func(rt *rapid.T) {
				id := ids.Draw(rt, "id")
				if len(model) > 0 && rapid.Bool().Draw(rt, "existing") {
					keys := slices.Sorted(maps.Keys(model))
					id = keys[rapid.IntRange(0, len(keys)-1).Draw(rt, "i")]
				}
				tb.set(gen, id, nil)
				delete(model, id)
			},
			"publish": func(rt *rapid.T) {
				versions = append(versions, version{tb, maps.Clone(model)})
				gen++
			},
			"": func(rt *rapid.T) {
				checkTable(rt, &tb, func(r *rec) uint32 { return r.id })
				check := func(tb *table[rec], model map[uint32]bool) {
					var got []uint32
					for r := range tb.all {
						got = append(got, r.id)
					}
					if want := slices.Sorted(maps.Keys(model)); !slices.Equal(got, want) {
						rt.Fatalf("ids %v, model %v", got, want)
					}
					free := uint32(0)
					for model[free] {
						free++
					}
					if tb.lowestFree() != free || tb.live != uint32(len(model)) {
						rt.Fatalf("lowestFree %d (model %d), live %d (model %d)", tb.lowestFree(), free, tb.live, len(model))
					}
					for id := uint32(0); id < 3*chunkSize+12; id++ {
						if (tb.get(id) != nil) != model[id] {
							rt.Fatalf("get(%d) disagrees", id)
						}
					}
				}
				check(&tb, model)
				for i := range versions {
					check(&versions[i].tb, versions[i].model)
				}
			},
		})
	})
}
