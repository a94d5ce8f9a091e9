package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

// jsonEventsBatch is a batch of batchSize compressible JSON events (~330 bytes
// each, a realistic shape: ids, a customer, items, a free-text note), the
// same bytes for every send.
func jsonEventsBatch(b *testing.B) wire.BatchView {
	msgs := make([]wire.Message, batchSize)
	for i := range msgs {
		p := fmt.Sprintf(`{"event":"order.shipped","order_id":%d,"ts":"2026-12-01T10:%02d:%02d.%03dZ","customer":{"id":"c-%05d","tier":"%s","country":"DE"},`+
			`"items":[{"sku":"SKU-%05d","qty":%d,"price":"%d.99"},{"sku":"SKU-%05d","qty":1,"price":"4.50"}],"warehouse":"eu-central-1","carrier":"dhl","note":"leave at the door %d"}`,
			7000000+i, i/60%60, i%60, i%1000, i*37%20000, []string{"gold", "silver", "basic"}[i%3], i*7%1000, i%5+1, 10+i%90, i*13%1000, i%17)
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(i + 1)}, OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: []byte(p)}
	}
	raw, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		b.Fatal(err)
	}
	v, err := wire.VerifyBatch(raw)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkCompression produces then consumes b.N batches of 1,000 JSON
// messages on one partition per codec (none, gzip, zstd, lz4: the topic's
// compression_codec), one client each way, and reports produce and
// consume msgs/s, the segment bytes per message the topic reports
// (size_bytes / messages) and the bytes per message sent. Run with
// -benchtime 100x.
func BenchmarkCompression(b *testing.B) {
	for _, codec := range []string{"none", "gzip", "zstd", "lz4"} {
		b.Run(codec, func(b *testing.B) {
			s := benchServer(b)
			c := dial(b, s)
			ctx := context.Background()
			name := fmt.Sprintf("bench-compression-%s-%d", codec, time.Now().UnixNano())
			if _, err := c.CreateStream(ctx, name, nil); err != nil {
				b.Fatal(err)
			}
			opts := wire.Options{}.With("compression_codec", wire.StringValue(codec))
			if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID(name), PartitionsCount: 1, Name: "t", Options: opts}); err != nil {
				b.Fatal(err)
			}
			v := jsonEventsBatch(b)
			req := &wire.SendMessages{StreamID: wire.MustNamedID(name), TopicID: wire.MustNamedID("t"), Partitioning: wire.PartitionByID(0), Batch: v}
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				if _, err := c.Do(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			produce := time.Since(start)
			start = time.Now()
			var got uint64
			for got < uint64(b.N*batchSize) {
				pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)),
					StreamID: wire.MustNamedID(name), TopicID: wire.MustNamedID("t"), Partition: wire.SomePartition(0),
					Strategy: wire.PollFromOffset(got), Count: batchSize})
				if err != nil {
					b.Fatal(err)
				}
				if pm.MessagesCount == 0 {
					b.Fatalf("poll from %d returned nothing", got)
				}
				got += uint64(pm.MessagesCount)
			}
			consume := time.Since(start)
			b.StopTimer()
			tp, err := c.GetTopic(ctx, wire.MustNamedID(name), wire.MustNamedID("t"))
			if err != nil {
				b.Fatal(err)
			}
			msgs := float64(b.N * batchSize)
			b.ReportMetric(msgs/produce.Seconds(), "produce_msgs/s")
			b.ReportMetric(msgs/consume.Seconds(), "consume_msgs/s")
			b.ReportMetric(float64(tp.SizeBytes)/float64(tp.MessagesCount), "disk_B/msg")
			b.ReportMetric(float64(v.Len())/batchSize, "sent_B/msg")
			b.ReportMetric(0, "ns/op")
			if err := c.DeleteStream(ctx, wire.MustNamedID(name)); err != nil {
				b.Fatal(err)
			}
		})
	}
}
