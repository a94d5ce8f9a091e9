package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/wire"
)

// The HTTP API beside the binary protocol, in one run:
//
//	go test -run '^$' -bench 'Transports|Scrape' -benchtime 300x ./tests/bench/
//
// BenchmarkTransports sends and polls batches of 1,000 × 1 KB over TCP and
// over HTTP (Iggy's JSON form, base64 payloads) from one client each;
// BenchmarkScrape measures TCP sends while a scraper reads /metrics every
// 5 s (and every 100 ms, to make the cost visible), and reports what one
// scrape costs.

var (
	httpOnce  sync.Once
	httpToken string
)

// httpClient is a logged-in HTTP client of the shared server.
func httpClient(b *testing.B) *httpclient.Client {
	s := benchServer(b)
	if s.HTTPAddr == "" {
		b.Skip("the bench server serves no HTTP (IGGO_BENCH_ADDR)")
	}
	c := httpclient.New(s.HTTPURL())
	c.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	httpOnce.Do(func() {
		if _, err := c.Login(context.Background(), "iggy", "iggy"); err != nil {
			b.Fatal(err)
		}
		httpToken = c.Token
	})
	c.Token = httpToken
	return c
}

// jsonBatch is the send body of one batch in Iggy's JSON form.
func jsonBatch(b *testing.B, partition uint32) []byte {
	msgs := make([]httpclient.Message, batchSize)
	for i := range msgs {
		p := make([]byte, messageSize)
		for j := range p {
			p[j] = byte(i + j)
		}
		msgs[i] = httpclient.Message{ID: strconv.Itoa(i + 1), Payload: p}
	}
	body, err := json.Marshal(struct {
		Partitioning httpclient.Partitioning `json:"partitioning"`
		Messages     []httpclient.Message    `json:"messages"`
	}{httpclient.PartitionID(partition), msgs})
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func httpSend(b *testing.B, c *httpclient.Client, stream string, body []byte) error {
	r, err := c.Do(context.Background(), http.MethodPost, "/streams/"+stream+"/topics/t/messages", body)
	if err != nil {
		return err
	}
	if r.Status != http.StatusCreated {
		return fmt.Errorf("send: %d %s", r.Status, r.Body)
	}
	return nil
}

func BenchmarkTransports(b *testing.B) {
	b.Run("send/tcp", func(b *testing.B) { produce(b, "replicated", 1) })
	b.Run("send/http", func(b *testing.B) {
		s := benchServer(b)
		stream := newTopic(b, dial(b, s), "replicated", 1)
		c := httpClient(b)
		body := jsonBatch(b, 0)
		spread(b, 1, func(int) *client.Client { return nil }, func(_ int, _ *client.Client, n int, r *result) {
			for k := 0; k < n; k++ {
				t0 := time.Now()
				if err := httpSend(b, c, stream, body); err != nil {
					b.Error(err)
					return
				}
				r.record(time.Since(t0))
			}
		})
	})
	b.Run("poll/tcp", func(b *testing.B) { consume(b, "replicated", 1) })
	b.Run("poll/http", func(b *testing.B) {
		s := benchServer(b)
		admin := dial(b, s)
		stream := newTopic(b, admin, "replicated", 1)
		v := batch(b)
		b.StopTimer()
		req := &wire.SendMessages{StreamID: wire.MustNamedID(stream), TopicID: wire.MustNamedID("t"), Partitioning: wire.PartitionByID(0), Batch: v}
		for k := 0; k < b.N+1; k++ {
			if _, err := admin.Do(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		c := httpClient(b)
		want := []byte(`"count":` + strconv.Itoa(batchSize) + `,`)
		spread(b, 1, func(int) *client.Client { return nil }, func(_ int, _ *client.Client, n int, r *result) {
			var next uint64
			for k := 0; k < n; k++ {
				path := "/streams/" + stream + "/topics/t/messages?consumer_id=1&partition_id=0&kind=offset&value=" +
					strconv.FormatUint(next, 10) + "&count=" + strconv.Itoa(batchSize)
				t0 := time.Now()
				resp, err := c.Do(context.Background(), http.MethodGet, path, nil)
				if err != nil || resp.Status != 200 || !bytes.Contains(resp.Body, want) {
					b.Errorf("poll at %d: %v %d", next, err, resp.Status)
					return
				}
				r.record(time.Since(t0))
				next += batchSize
			}
		})
	})
}

// scraper reads /metrics with the bench's token every interval until
// stop; it returns the scrapes and their total time.
func scraper(b *testing.B, c *httpclient.Client, every time.Duration, stop <-chan struct{}) (func() (int, time.Duration), *sync.WaitGroup) {
	var mu sync.Mutex
	var n int
	var total time.Duration
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			t0 := time.Now()
			req, _ := http.NewRequest(http.MethodGet, c.Base+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+c.Token)
			resp, err := c.HTTP.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			n++
			total += time.Since(t0)
			mu.Unlock()
		}
	}()
	return func() (int, time.Duration) { mu.Lock(); defer mu.Unlock(); return n, total }, &wg
}

func BenchmarkScrape(b *testing.B) {
	b.Run("send/tcp/scrape=off", func(b *testing.B) { produce(b, "replicated", 1) })
	for _, every := range []time.Duration{5 * time.Second, 100 * time.Millisecond} {
		b.Run("send/tcp/scrape="+every.String(), func(b *testing.B) {
			c := httpClient(b)
			stop := make(chan struct{})
			stats, wg := scraper(b, c, every, stop)
			produce(b, "replicated", 1)
			close(stop)
			wg.Wait()
			n, total := stats()
			b.ReportMetric(float64(n), "scrapes")
			if n > 0 {
				per := total / time.Duration(n)
				b.ReportMetric(float64(per.Microseconds())/1000, "ms/scrape")
				// Share of one core a scrape every `every` takes.
				b.ReportMetric(100*per.Seconds()/every.Seconds(), "scrape_core_%")
			}
		})
	}
}
