package webui_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/wire"
)

// BenchmarkPageLoad measures how long console pages take from the start of
// the navigation to the first paint of their data (the page's own
// performance.now() at body data-rendered, two animation frames after the
// data is in the DOM), against a real node holding a topic of 1,000
// partitions and a partition of 1,000,000 messages. The figure is
// ms/render (mean) with p50 and max; cpu-ms is the renderer main thread's
// CPU time for the load (independent of what else the machine runs);
// ns/op also counts chromedp's round trips. Each iteration is a fresh navigation: nothing is cached but the
// revalidated scripts.
//
//	go test -run '^$' -bench PageLoad -benchtime 20x ./tests/webui/
func BenchmarkPageLoad(b *testing.B) {
	s := startUI(b)
	c := tcpClient(b, s.Addr, "iggy", "iggy")
	ctx := ctxT(b)
	st, err := c.CreateStream(ctx, "bench", nil)
	must(b, err, "create stream")
	sid := wire.NumericID(st.ID)
	wide, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, Name: "wide", PartitionsCount: 1000})
	must(b, err, "create topic of 1000 partitions")
	_, err = c.CreateConsumerGroup(ctx, sid, wire.NumericID(wide.ID), "readers")
	must(b, err, "create group")
	deep, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, Name: "deep", PartitionsCount: 1})
	must(b, err, "create topic deep")
	const total, batch = 1_000_000, 1000
	start := time.Now()
	msgs := make([]wire.Message, batch)
	for sent := 0; sent < total; sent += batch {
		for i := range msgs {
			msgs[i] = wire.Message{Payload: []byte(fmt.Sprintf(`{"seq":%d,"kind":"reading","value":%d}`, sent+i, (sent+i)%977))}
		}
		_, err := c.SendMessages(ctx, sid, wire.NumericID(deep.ID), wire.PartitionByID(0), msgs)
		must(b, err, "send")
	}
	b.Logf("setup: 1000 partitions, 1,000,000 messages sent in %v", time.Since(start).Round(time.Millisecond))

	br := newBrowser(b)
	br.login(s.HTTPURL(), "iggy", "iggy")
	base := s.HTTPURL()
	pages := []struct{ name, path, check string }{
		{"topic-1000-partitions", fmt.Sprintf("/ui/streams/%d/topics/%d", st.ID, wide.ID),
			`document.querySelectorAll('#partitions tbody tr[data-partition]').length === 100`},
		{"stream", fmt.Sprintf("/ui/streams/%d", st.ID), `document.querySelectorAll('#topics tbody tr[data-topic]').length === 2`},
		{"groups-1000-partitions", "/ui/groups?stream=bench&topic=wide&group=0",
			`document.querySelectorAll('#lag tbody tr[data-partition]').length === 100`},
		{"messages-1M-last", "/ui/messages?stream=bench&topic=deep&partition=0&kind=last&count=20",
			`document.querySelectorAll('#m-table tbody tr[data-offset="999999"]').length === 1`},
		{"messages-1M-offset-500000", "/ui/messages?stream=bench&topic=deep&partition=0&kind=offset&value=500000&count=20",
			`document.querySelectorAll('#m-table tbody tr[data-offset="500000"]').length === 1`},
		{"messages-1M-first-100", "/ui/messages?stream=bench&topic=deep&partition=0&kind=first&count=100",
			`document.querySelectorAll('#m-table tbody tr[data-offset]').length === 100`},
	}
	// The renderer's main-thread CPU time per load (thread ticks): what the
	// page costs, whatever else the machine runs.
	if err := chromedp.Do(br.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{TimeDomain: performance.EnableTimeDomainThreadTicks})
		return err
	})); err != nil {
		b.Fatalf("Performance.enable: %v", err)
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			var ms []float64
			var ttfb, dcl, api, cpu float64
			for b.Loop() {
				before := br.taskSeconds(b)
				ms = append(ms, br.renderTime(b, base+p.path, p.check))
				after := br.taskSeconds(b)
				if after < before {
					// A new renderer for the page: its counter started at 0.
					before = 0
				}
				cpu += (after - before) * 1000
				t := eval[struct {
					TTFB float64 `json:"ttfb"`
					DCL  float64 `json:"dcl"`
					API  float64 `json:"api"`
				}](br, `(() => {
					const nav = performance.getEntriesByType('navigation')[0];
					const f = performance.getEntriesByType('resource').filter(e => e.initiatorType === 'fetch');
					return {ttfb: nav ? nav.responseStart : 0, dcl: nav ? nav.domContentLoadedEventEnd : 0,
						api: f.reduce((m, e) => Math.max(m, e.responseEnd), 0)};
				})()`)
				ttfb += t.TTFB
				dcl += t.DCL
				api += t.API
			}
			sort.Float64s(ms)
			sum := 0.0
			for _, v := range ms {
				sum += v
			}
			b.ReportMetric(sum/float64(len(ms)), "ms/render")
			b.ReportMetric(ms[len(ms)/2], "p50-ms")
			b.ReportMetric(ms[len(ms)-1], "max-ms")
			// Where the time goes: the page's first byte, the document
			// parsed and its scripts run (DOMContentLoaded), and the last API
			// answer received.
			b.ReportMetric(ttfb/float64(len(ms)), "ttfb-ms")
			b.ReportMetric(cpu/float64(len(ms)), "cpu-ms")
			b.ReportMetric(dcl/float64(len(ms)), "dcl-ms")
			b.ReportMetric(api/float64(len(ms)), "api-done-ms")
		})
	}
}

// renderTime navigates to url and returns the page's navigation-to-render
// time; check must then hold (the page shows the expected data).
func (br *browser) renderTime(b *testing.B, url, check string) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.Fatalf("navigate %s: %v", url, err)
	}
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.rendered || ''`))
		if err == nil && v != "" {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+check+")"))
			if err != nil || !ok {
				b.Fatalf("%s rendered without the expected data (%s): %v\n%s", url, check, err, br.pageText())
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("data-rendered %q: %v", v, err)
			}
			return f
		}
		if ctx.Err() != nil {
			b.Fatalf("%s did not render: %v\n%s", url, ctx.Err(), br.pageText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// taskSeconds is the renderer main thread's TaskDuration so far (CPU time
// with thread ticks).
func (br *browser) taskSeconds(b *testing.B) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(br.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Action[float64](func(ctx context.Context, t *chromedp.Target) (float64, error) {
		r, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return 0, err
		}
		for _, m := range r.Metrics {
			if m.Name == "TaskDuration" {
				return m.Value, nil
			}
		}
		return 0, fmt.Errorf("no TaskDuration metric")
	}))
	if err != nil {
		b.Fatalf("Performance.getMetrics: %v", err)
	}
	return v
}
