package check

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/iggo/iggo/internal/chaos/history"
)

// benchHistory is a valid history of sends batches spread over parts
// partitions by 4 producers with some concurrency, polls during the run,
// consumer offset traffic, metadata churn, and final reads from 3 nodes.
func benchHistory(sends, parts int) (history.Meta, []history.Event) {
	rng := rand.New(rand.NewPCG(1, 2))
	b := &builder{}
	logs := make([][]history.MsgID, parts)
	stored := int64(-1)
	for i := 0; i < sends; i++ {
		p := uint32(rng.IntN(parts))
		n := 1 + rng.IntN(5)
		ids := make([]history.MsgID, n)
		for k := range ids {
			ids[k] = id(uint32(i%4), uint64(i*8+k), 1)
		}
		proc := i % 4
		b.invoke(proc, history.Send, sendArgs(p, ids...))
		if i%50 == 7 {
			b.info(proc, history.Send) // unknown; half of them land
			if i%100 == 7 {
				logs[p] = append(logs[p], ids...)
			}
			continue
		}
		base := uint64(len(logs[p]))
		logs[p] = append(logs[p], ids...)
		b.ok(proc, history.Send, 0, ackVal(p, base))
		if i%10 == 0 {
			from := uint64(rng.IntN(len(logs[p])))
			end := min(len(logs[p]), int(from)+20)
			b.poll(10, 0, p, from, obs(from, logs[p][from:end]...))
		}
		if i%20 == 0 && p == 0 {
			stored = max(stored, int64(len(logs[0])-1))
			b.store(11, 0, "c:1", 0, uint64(stored), history.OK)
			b.getOffset(11, 0, "c:1", 0, stored)
		}
		if i%30 == 0 {
			name := fmt.Sprintf("s%d", rng.IntN(4))
			b.md(12, history.GetStream, name, "missing", -1)
		}
	}
	for n := 0; n < 3; n++ {
		for p := 0; p < parts; p++ {
			b.finalRead(100+n*parts+p, n, uint32(p), obs(0, logs[p]...))
		}
	}
	m := meta(3, parts)
	m.Checks.StrictReads = true
	return m, b.events
}

func BenchmarkCheck(b *testing.B) {
	for _, sends := range []int{1_000, 10_000} {
		m, events := benchHistory(sends, 3)
		if r := Check(m, events, Options{}); !r.Valid {
			b.Fatalf("benchmark history is not valid: %v", r.Violations)
		}
		b.Run(fmt.Sprintf("sends=%d/events=%d", sends, len(events)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Check(m, events, Options{})
			}
			b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
