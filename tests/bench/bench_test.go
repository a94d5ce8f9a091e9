// Package bench measures a real single-node iggo-server end to end:
// produce and consume of 1 KB messages in batches of 1,000 from one client
// and from four, for replicated and persisted topics. It reports
// messages/s, MB/s and the p50/p99 latency of one batch. Run with
// `make bench` or
//
//	go test -run '^$' -bench . -benchtime 200x ./tests/bench/
//
// Figures depend on the machine; the server and the clients share it.
package bench

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

const (
	messageSize = 1000
	batchSize   = 1000
)

var (
	serverOnce sync.Once
	server     *harness.Server
	serverDir  string
)

// benchServer is one server shared by every benchmark of the binary.
// IGGO_BENCH_ADDR points the benchmarks at a server already running (root
// iggy/iggy), for profiling it.
func benchServer(b *testing.B) *harness.Server {
	serverOnce.Do(func() {
		if addr := os.Getenv("IGGO_BENCH_ADDR"); addr != "" {
			server = &harness.Server{Addr: addr}
			return
		}
		dir, err := os.MkdirTemp("", "iggo-bench-")
		if err != nil {
			b.Fatal(err)
		}
		serverDir = dir
		server = harness.Start(&onceTB{B: b}, harness.Options{DefaultRoot: true, DataDir: dir + "/data",
			Env: []string{"IGGY_LOGGING_LEVEL=warn"}})
	})
	return server
}

// onceTB keeps the shared server alive past the first benchmark: the
// harness's cleanup is dropped and TestMain kills the server instead.
type onceTB struct{ *testing.B }

func (o *onceTB) Cleanup(func()) {}

func dial(b *testing.B, s *harness.Server) *client.Client {
	cfg := s.ClientConfig("iggy", "iggy")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

var topicSeq atomic.Int32

// newTopic creates a stream with one topic of `partitions` partitions.
func newTopic(b *testing.B, c *client.Client, durability string, partitions uint32) string {
	ctx := context.Background()
	name := fmt.Sprintf("bench-%s-%d-%d", durability, topicSeq.Add(1), time.Now().UnixNano())
	if _, err := c.CreateStream(ctx, name, nil); err != nil {
		b.Fatal(err)
	}
	opts := wire.Options{}.With("durability", wire.StringValue(durability))
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID(name), PartitionsCount: partitions, Name: "t", Options: opts}); err != nil {
		b.Fatal(err)
	}
	return name
}

// batch is one pre-encoded batch of batchSize messages of messageSize
// bytes: the client sends the same bytes every time, so the benchmark
// measures the server, not the client's hashing.
func batch(b *testing.B) wire.BatchView {
	msgs := make([]wire.Message, batchSize)
	for i := range msgs {
		p := make([]byte, messageSize)
		for j := range p {
			p[j] = byte(i + j)
		}
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(i + 1)}, OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: p}
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

type result struct {
	mu   sync.Mutex
	hist *hdrhistogram.Histogram
}

func (r *result) record(d time.Duration) {
	r.mu.Lock()
	_ = r.hist.RecordValue(d.Microseconds())
	r.mu.Unlock()
}

func report(b *testing.B, r *result, elapsed time.Duration, batches int) {
	msgs := float64(batches * batchSize)
	b.ReportMetric(msgs/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(msgs*messageSize/elapsed.Seconds()/1e6, "MB/s")
	b.ReportMetric(float64(r.hist.ValueAtQuantile(50))/1000, "p50_ms/batch")
	b.ReportMetric(float64(r.hist.ValueAtQuantile(99))/1000, "p99_ms/batch")
	b.ReportMetric(0, "ns/op")
}

// spread runs b.N batches over `clients` goroutines, each with its own
// connection; work(i, c, n) runs n batches for client i.
func spread(b *testing.B, clients int, setup func(i int) *client.Client, work func(i int, c *client.Client, n int, r *result)) {
	r := &result{hist: hdrhistogram.New(1, 60_000_000, 3)}
	conns := make([]*client.Client, clients)
	for i := range conns {
		conns[i] = setup(i)
	}
	b.SetBytes(int64(batchSize * messageSize))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		n := b.N / clients
		if i < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(i, c, n, r)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	report(b, r, elapsed, b.N)
}

func produce(b *testing.B, durability string, clients int) {
	s := benchServer(b)
	admin := dial(b, s)
	stream := newTopic(b, admin, durability, uint32(clients))
	v := batch(b)
	spread(b, clients, func(int) *client.Client { return dial(b, s) }, func(i int, c *client.Client, n int, r *result) {
		req := &wire.SendMessages{StreamID: wire.MustNamedID(stream), TopicID: wire.MustNamedID("t"),
			Partitioning: wire.PartitionByID(uint32(i)), Batch: v}
		ctx := context.Background()
		for k := 0; k < n; k++ {
			t0 := time.Now()
			if _, err := c.Do(ctx, req); err != nil {
				b.Error(err)
				return
			}
			r.record(time.Since(t0))
		}
	})
}

func consume(b *testing.B, durability string, clients int) {
	s := benchServer(b)
	admin := dial(b, s)
	stream := newTopic(b, admin, durability, uint32(clients))
	v := batch(b)
	// Fill each partition with what its consumer will read.
	b.StopTimer()
	per := b.N/clients + 1
	ctx := context.Background()
	for p := 0; p < clients; p++ {
		req := &wire.SendMessages{StreamID: wire.MustNamedID(stream), TopicID: wire.MustNamedID("t"),
			Partitioning: wire.PartitionByID(uint32(p)), Batch: v}
		for k := 0; k < per; k++ {
			if _, err := admin.Do(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StartTimer()
	spread(b, clients, func(int) *client.Client { return dial(b, s) }, func(i int, c *client.Client, n int, r *result) {
		var next uint64
		for k := 0; k < n; k++ {
			req := &wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(uint32(i))), StreamID: wire.MustNamedID(stream),
				TopicID: wire.MustNamedID("t"), Partition: wire.SomePartition(uint32(i)), Strategy: wire.PollFromOffset(next), Count: batchSize}
			t0 := time.Now()
			p, err := c.Do(ctx, req)
			if err != nil {
				b.Error(err)
				return
			}
			r.record(time.Since(t0))
			pm, err := wire.DecodePollReply(p)
			if err != nil || pm.MessagesCount != batchSize {
				b.Errorf("poll at %d: %d messages, %v", next, pm.MessagesCount, err)
				return
			}
			next += batchSize
		}
	})
}

func BenchmarkProduce(b *testing.B) {
	for _, d := range []string{"replicated", "persisted"} {
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients=%d", d, clients), func(b *testing.B) { produce(b, d, clients) })
		}
	}
}

func BenchmarkConsume(b *testing.B) {
	for _, d := range []string{"replicated", "persisted"} {
		for _, clients := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/clients=%d", d, clients), func(b *testing.B) { consume(b, d, clients) })
		}
	}
}

// TestMain kills the shared server when the benchmarks are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil && serverDir != "" {
		server.Kill()
	}
	if serverDir != "" {
		_ = os.RemoveAll(serverDir)
	}
	os.Exit(code)
}
