package vsr_test

import (
	"testing"

	"github.com/iggo/iggo/vsr"
)

type nopSM struct{}

func (nopSM) Apply(*vsr.Header, []byte) []byte { return nil }

// BenchmarkSoloPath measures the single-replica path request → prepare →
// journal append → completion → commit → apply → reply, with a no-op state
// machine and a node that completes every append at once, batching `batch`
// requests per Ready as a shard loop iteration would.
func BenchmarkSoloPath(b *testing.B) {
	for _, c := range []struct {
		name  string
		body  int
		batch int
	}{
		{"1KiB/batch1", 1 << 10, 1},
		{"1KiB/batch64", 1 << 10, 64},
		{"1MiB/batch8", 1 << 20, 8},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := vsr.DefaultConfig()
			cfg.Group = 1
			cfg.Durability = vsr.Persisted
			r, err := vsr.New(cfg, nopSM{}, vsr.Boot{Incarnation: 1})
			if err != nil {
				b.Fatal(err)
			}
			r.Ready()
			r.StateDone(nil)
			body := make([]byte, c.body)
			b.SetBytes(int64(c.body))
			b.ReportAllocs()
			b.ResetTimer()
			replies := 0
			for i := 0; i < b.N; i += c.batch {
				for j := 0; j < c.batch; j++ {
					r.Submit(vsr.Request{Token: uint64(i + j), Operation: 10, WallClock: uint64(i + j), Body: body})
				}
				for r.HasReady() {
					rd := r.Ready()
					replies += len(rd.Replies)
					if rd.State != nil {
						r.StateDone(nil)
					}
					for _, j := range rd.Journal {
						if j.Kind == vsr.JournalAppend {
							r.AppendDone(j.Op, j.Header.Identity(), nil)
						}
					}
					if rd.Checkpoint != nil {
						r.CheckpointDone(rd.Checkpoint.Op, vsr.Manifest{}, nil)
					}
				}
			}
			b.StopTimer()
			if replies < b.N {
				b.Fatalf("%d replies for %d requests", replies, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
