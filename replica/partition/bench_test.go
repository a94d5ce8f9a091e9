package partition

import (
	"testing"

	"github.com/iggo/iggo/wire"
)

// BenchmarkApplySend measures Apply of a committed 1,000-message batch of
// 1 KB messages and its segment staging, without the write itself
// (Flush is not called; the pending records are dropped), for a single
// node (stamped in place) and a replicated partition (a stamped copy of
// the header, the frames referenced): B/op shows what each allocates per
// batch.
func BenchmarkApplySend(b *testing.B) {
	for _, tc := range []struct {
		name    string
		cluster bool
	}{{"single", false}, {"replicated", true}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRig(b, 1, tc.cluster)
			body := testBatch(b, 0, 1000, 1000)
			if _, err := wire.VerifyBatch(body); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.op++
				r.p.Apply(header(r.op, OpSend, 1_000_000+r.op), body)
				r.p.releaseWritten(len(r.p.w.pending))
				r.p.w.pending = r.p.w.pending[:0]
				r.p.w.queued = false
				r.pipe.queue = r.pipe.queue[:0]
				r.p.written = r.p.next
			}
		})
	}
}
