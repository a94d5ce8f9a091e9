package webui_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/replica/webui"
	"github.com/iggo/iggo/wire"
)

// consoleOnly serves the console's pages and scripts without a node
// (every API call is refused): enough to run its pure functions in the
// browser.
func consoleOnly(t *testing.T) string {
	t.Helper()
	refuse := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"id":77,"code":"access_token_missing","reason":"Access token missing","field":null}`))
	}
	c, err := webui.New(webui.Options{
		Authenticate: func(http.Handler) http.Handler { return http.HandlerFunc(refuse) },
		Run: func(w http.ResponseWriter, r *http.Request, _ wire.Request, _ func([]byte) error) bool {
			refuse(w, r)
			return false
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Wrap(http.HandlerFunc(refuse)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestChartMath runs the console's metric arithmetic in the browser:
// histogram percentiles as Prometheus's histogram_quantile interpolates
// them, bucket deltas between samples, rates, and the formatting helpers.
func TestChartMath(t *testing.T) {
	base := consoleOnly(t)
	b := newBrowser(t)
	b.run(chromedp.Navigate(base + "/ui/login"))
	b.waitJS(`window.IggoCharts !== undefined && window.Iggo !== undefined`)

	// bounds 1, 2, 4 s; 10 observations ≤ 1, 20 in (1, 2], 10 in (2, 4].
	for _, c := range []struct {
		q      float64
		counts []uint64
		total  uint64
		want   float64
	}{
		{0.25, []uint64{10, 30, 40}, 40, 1},     // rank 10: the top of the first bucket
		{0.5, []uint64{10, 30, 40}, 40, 1.5},    // rank 20: halfway through (1, 2]
		{0.75, []uint64{10, 30, 40}, 40, 2},     // rank 30
		{1, []uint64{10, 30, 40}, 40, 4},        // rank 40: the top of (2, 4]
		{0.1, []uint64{10, 30, 40}, 40, 0.4},    // rank 4 in [0, 1]
		{0.99, []uint64{10, 30, 40}, 50, 4},     // rank 49.5 in +Inf: the highest finite bound
		{0.5, []uint64{0, 0, 10}, 10, 3},        // empty buckets below
		{0.5, []uint64{0, 0, 0}, 0, math.NaN()}, // no observation
	} {
		counts, _ := json.Marshal(c.counts)
		got := eval[*float64](b, fmt.Sprintf(`(() => { const v = IggoCharts.quantile(%v, [1, 2, 4], %s, %d); return isNaN(v) ? null : v; })()`, c.q, counts, c.total))
		if math.IsNaN(c.want) {
			if got != nil {
				t.Errorf("quantile(%v, %v, %d) = %v, want NaN", c.q, c.counts, c.total, *got)
			}
			continue
		}
		if got == nil || math.Abs(*got-c.want) > 1e-9 {
			t.Errorf("quantile(%v, %v, %d) = %v, want %v", c.q, c.counts, c.total, got, c.want)
		}
	}

	type hist struct {
		Bounds []float64 `json:"bounds"`
		Counts []int     `json:"counts"`
		Count  int       `json:"count"`
	}
	d := eval[*hist](b, `IggoCharts.delta({bounds: [1, 2], counts: [3, 5], count: 6, sum: 1}, {bounds: [1, 2], counts: [4, 9], count: 12, sum: 3})`)
	if d == nil || d.Count != 6 || d.Counts[0] != 1 || d.Counts[1] != 4 {
		t.Fatalf("delta %+v, want counts [1 4] of 6", d)
	}
	if d := eval[*hist](b, `IggoCharts.delta({bounds: [1], counts: [3], count: 6, sum: 1}, {bounds: [1], counts: [1], count: 2, sum: 0})`); d != nil {
		t.Fatalf("delta across a restart %+v, want null", d)
	}
	if v := eval[float64](b, `IggoCharts.perSecond(100, 350, 500)`); v != 500 {
		t.Fatalf("perSecond %v, want 500", v)
	}
	if v := eval[*float64](b, `IggoCharts.perSecond(100, 50, 1000)`); v != nil {
		t.Fatalf("perSecond across a restart %v, want null", *v)
	}
	for expr, want := range map[string]string{
		`String(Iggo.sizeBytes("4 KiB"))`:                       "4096",
		`String(Iggo.sizeBytes("3 MB"))`:                        "3000000",
		`Iggo.bytes("1536 B")`:                                  "1.50 KiB",
		`Iggo.duration(90061 * 1e6)`:                            "1d 1h 1m 1s",
		`Iggo.duration(18446744073709551615)`:                   "never",
		`Iggo.maxSize(18446744073709551615)`:                    "unlimited",
		`Iggo.hex(new Uint8Array([0, 15, 255]))`:                "00 0f ff",
		`Iggo.text(Iggo.b64(Iggo.b64encode(Iggo.utf8("ünï"))))`: "ünï",
		// u128 ids keep every digit (a JavaScript number would not).
		`Iggo.parseBig('{"header":{"id":340282366920938463463374607431768211455,"offset":7}}').header.id`: "340282366920938463463374607431768211455",
		`String(IggoCharts.niceMax(37))`: "50",
		`IggoCharts.seconds(0.00042)`:    "420 µs",
	} {
		if got := eval[string](b, expr); got != want {
			t.Errorf("%s = %q, want %q", expr, got, want)
		}
	}
}
