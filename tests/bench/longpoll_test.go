package bench

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// BenchmarkLongPollLatency measures commit-to-delivery latency of single
// messages: the producer sends one message at a time at random intervals
// (15..35 ms, so messages arrive out of phase with any poll cadence), and
// two consumers read every message of the partition at once:
//
//   - wait: long polling (each poll may wait 5 s on the server);
//   - poll10ms: Iggy-style short polling, an immediate poll every 10 ms
//     (polls again at once after a poll that returned messages).
//
// Two latencies per consumer: from the producer's send returning (the
// message is committed: a send is acknowledged after its commit) to the
// consumer holding the message ("ack", a long-polled message can reach its
// consumer before the producer has read its acknowledgement: those count
// as 0), and from the send call starting ("send", which adds the commit
// itself, the same for both). Each op is one message; run with -benchtime
// 300x.
func BenchmarkLongPollLatency(b *testing.B) {
	s := benchServer(b)
	admin := dial(b, s)
	stream := newTopic(b, admin, "replicated", 1)
	sid, tid := wire.MustNamedID(stream), wire.MustNamedID("t")
	prod := dial(b, s)

	sent := make([]int64, b.N)  // unix ns of each send call's start
	acked := make([]int64, b.N) // and of its acknowledgement
	var mu sync.Mutex
	ackedAt := func(i uint64) (int64, int64, bool) {
		mu.Lock()
		defer mu.Unlock()
		return sent[i], acked[i], acked[i] != 0
	}
	type consumer struct {
		name       string
		hist, send *hdrhistogram.Histogram
		poll       func(ctx context.Context, c *client.Client, from uint64) (wire.PolledMessages, error)
	}
	req := func(from uint64) wire.PollMessages {
		return wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: sid, TopicID: tid,
			Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(from), Count: 1000}
	}
	consumers := []*consumer{
		{name: "wait", poll: func(ctx context.Context, c *client.Client, from uint64) (wire.PolledMessages, error) {
			r := req(from)
			r.WaitMillis = 5000
			return c.PollMessages(ctx, r)
		}},
		{name: "poll10ms", poll: func(ctx context.Context, c *client.Client, from uint64) (wire.PolledMessages, error) {
			return c.PollMessages(ctx, req(from))
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	b.ResetTimer()
	for _, cs := range consumers {
		cs.hist = hdrhistogram.New(1, 60_000_000, 3)
		cs.send = hdrhistogram.New(1, 60_000_000, 3)
		c := dial(b, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next uint64
			for next < uint64(b.N) {
				pm, err := cs.poll(ctx, c, next)
				now := time.Now().UnixNano()
				if err != nil {
					b.Error(cs.name, err)
					return
				}
				for _, m := range pm.Messages() {
					st, at, ok := ackedAt(m.Offset)
					for !ok { // delivered before the producer read its ack
						time.Sleep(50 * time.Microsecond)
						st, at, ok = ackedAt(m.Offset)
					}
					_ = cs.hist.RecordValue(max(0, now-at) / 1e3)
					_ = cs.send.RecordValue(max(0, now-st) / 1e3)
					next = m.Offset + 1
				}
				if pm.MessagesCount == 0 && cs.name == "poll10ms" {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		time.Sleep(time.Duration(15+rand.IntN(21)) * time.Millisecond)
		var pl [8]byte
		binary.LittleEndian.PutUint64(pl[:], uint64(i))
		mu.Lock()
		sent[i] = time.Now().UnixNano()
		mu.Unlock()
		if _, err := prod.SendMessages(ctx, sid, tid, wire.PartitionByID(0), []wire.Message{{ID: wire.Uint128{Lo: uint64(i + 1)}, Payload: pl[:]}}); err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		acked[i] = time.Now().UnixNano()
		mu.Unlock()
	}
	wg.Wait()
	b.StopTimer()
	for _, cs := range consumers {
		b.ReportMetric(float64(cs.hist.ValueAtQuantile(50))/1000, cs.name+"_ack_p50_ms")
		b.ReportMetric(float64(cs.hist.ValueAtQuantile(99))/1000, cs.name+"_ack_p99_ms")
		b.ReportMetric(float64(cs.send.ValueAtQuantile(50))/1000, cs.name+"_send_p50_ms")
		b.ReportMetric(float64(cs.send.ValueAtQuantile(99))/1000, cs.name+"_send_p99_ms")
	}
	b.ReportMetric(0, "ns/op")
}
