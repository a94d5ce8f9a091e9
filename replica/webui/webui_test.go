package webui

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/iggo/iggo/wire"
)

func TestRoute(t *testing.T) {
	for _, c := range []struct {
		rest, page, stream, topic string
		ok                        bool
	}{
		{"/", "cluster", "", "", true},
		{"/cluster", "cluster", "", "", true},
		{"/login", "login", "", "", true},
		{"/streams", "streams", "", "", true},
		{"/streams/", "streams", "", "", true},
		{"/streams/7", "stream", "7", "", true},
		{"/streams/orders/topics/events", "topic", "orders", "events", true},
		{"/streams/orders/topics/events/", "topic", "orders", "events", true},
		{"/messages", "messages", "", "", true},
		{"/groups", "groups", "", "", true},
		{"/users", "users", "", "", true},
		{"/charts", "charts", "", "", true},
		{"/nope", "", "", "", false},
		{"/streams/a/b", "", "", "", false},
		{"/streams/a/topics", "", "", "", false},
		{"/streams//topics/x", "", "", "", false},
		{"/streams/a/topics/b/c", "", "", "", false},
	} {
		page, s, tp, ok := route(c.rest)
		if page != c.page || s != c.stream || tp != c.topic || ok != c.ok {
			t.Errorf("route(%q) = %q %q %q %v, want %q %q %q %v", c.rest, page, s, tp, ok, c.page, c.stream, c.topic, c.ok)
		}
	}
}

func TestSummarize(t *testing.T) {
	reg := prometheus.NewRegistry()
	appended := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggo_messages_appended_total"}, []string{"stream", "topic"})
	appendedB := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggo_bytes_appended_total"}, []string{"stream", "topic"})
	polled := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggo_messages_polled_total"}, []string{"stream", "topic"})
	conns := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "iggo_connections"}, []string{"transport"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "iggo_request_duration_seconds", Buckets: []float64{0.001, 0.01, 0.1}},
		[]string{"command", "transport"})
	up := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "iggo_gossip_member_up"}, []string{"member", "state"})
	ready := prometheus.NewGauge(prometheus.GaugeOpts{Name: "iggo_ready"})
	streams := prometheus.NewGauge(prometheus.GaugeOpts{Name: "streams"})
	reg.MustRegister(appended, appendedB, polled, conns, lat, up, ready, streams)
	appended.WithLabelValues("1", "1").Add(10)
	appended.WithLabelValues("1", "2").Add(5)
	appendedB.WithLabelValues("1", "1").Add(1000)
	polled.WithLabelValues("1", "1").Add(7)
	conns.WithLabelValues("tcp").Set(3)
	conns.WithLabelValues("http").Set(1)
	// send: 0.0005, 0.005 (2 observations); poll: 0.05, 1 (+Inf).
	lat.WithLabelValues("message.send", "tcp").Observe(0.0005)
	lat.WithLabelValues("message.send", "tcp").Observe(0.005)
	lat.WithLabelValues("message.poll", "http").Observe(0.05)
	lat.WithLabelValues("message.poll", "http").Observe(1)
	up.WithLabelValues("node-2", "dead").Set(0)
	up.WithLabelValues("node-1", "alive").Set(1)
	ready.Set(1)
	streams.Set(4)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_123)
	s := Summarize(fams, now)
	if s.TimeMS != 1_700_000_000_123 || s.MessagesIn != 15 || s.BytesIn != 1000 || s.MessagesOut != 7 || s.BytesOut != 0 {
		t.Fatalf("counters: %+v", s)
	}
	if s.Connections["tcp"] != 3 || s.Connections["http"] != 1 || !s.Ready || s.Live {
		t.Fatalf("gauges: %+v", s)
	}
	if s.Entities["streams"] != 4 {
		t.Fatalf("entities %v", s.Entities)
	}
	if len(s.Gossip) != 2 || s.Gossip[0] != (Member{"node-1", "alive", true}) || s.Gossip[1] != (Member{"node-2", "dead", false}) {
		t.Fatalf("gossip %+v", s.Gossip)
	}
	h := s.Latency
	wantCounts := []uint64{1, 2, 3}
	if h.Count != 4 || math.Abs(h.Sum-1.0555) > 1e-9 || len(h.Bounds) != 3 || h.Bounds[2] != 0.1 {
		t.Fatalf("latency %+v", h)
	}
	for i, c := range wantCounts {
		if h.Counts[i] != c {
			t.Fatalf("latency counts %v, want %v", h.Counts, wantCounts)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"messages_in":15`, `"ready":true`, `"live":false`, `"bounds":[0.001,0.01,0.1]`, `"counts":[1,2,3]`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("summary JSON lacks %s: %s", k, b)
		}
	}
	// Nothing gathered: empty but well-formed.
	if e := Summarize(nil, now); e.Latency.Bounds == nil || e.Connections == nil || e.Gossip == nil {
		t.Fatalf("empty summary has nil collections: %+v", e)
	}
}

// fakeAPI stands for the HTTP API: a token "ok" authenticates, and Run
// answers GET_CONSUMER_OFFSET from offsets (absent: no record), failing
// with code on partition failOn.
type fakeAPI struct {
	offsets map[uint32][2]uint64
	failOn  uint32
	fail    wire.Code
	reqs    []*wire.GetConsumerOffset
}

func (f *fakeAPI) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ok" {
			writeError(w, http.StatusUnauthorized, "unauthenticated", "Unauthenticated")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (f *fakeAPI) run(w http.ResponseWriter, _ *http.Request, req wire.Request, fn func([]byte) error) bool {
	g, ok := req.(*wire.GetConsumerOffset)
	if !ok {
		writeError(w, 500, "error", "unexpected request")
		return false
	}
	f.reqs = append(f.reqs, g)
	if f.fail != 0 && g.Partition.ID == f.failOn {
		writeError(w, http.StatusForbidden, "unauthorized", "Unauthorized")
		return false
	}
	var payload []byte
	if o, ok := f.offsets[g.Partition.ID]; ok {
		info := wire.ConsumerOffsetInfo{PartitionID: g.Partition.ID, CurrentOffset: o[0], StoredOffset: o[1]}
		payload, _ = info.AppendTo(nil)
	}
	if err := fn(payload); err != nil {
		writeError(w, 500, "error", "cannot decode the server's reply")
		return false
	}
	return true
}

func newTestConsole(t testing.TB, f *fakeAPI, g prometheus.Gatherer) http.Handler {
	t.Helper()
	c, err := New(Options{Authenticate: f.authenticate, Run: f.run, Gatherer: g, MetricsEndpoint: "/metrics"})
	if err != nil {
		t.Fatal(err)
	}
	return c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(299)
		_, _ = io.WriteString(w, "api "+r.URL.Path)
	}))
}

func get(t *testing.T, h http.Handler, method, path, token string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestPagesAndAssets(t *testing.T) {
	h := newTestConsole(t, &fakeAPI{}, prometheus.NewRegistry())
	if w := get(t, h, "GET", "/streams", ""); w.Code != 299 || w.Body.String() != "api /streams" {
		t.Fatalf("an API path went to the console: %d %q", w.Code, w.Body.String())
	}
	if w := get(t, h, "GET", "/uix", ""); w.Code != 299 {
		t.Fatalf("/uix: %d, want the API's", w.Code)
	}
	if w := get(t, h, "GET", "/ui", ""); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/ui/" {
		t.Fatalf("/ui: %d %q", w.Code, w.Header().Get("Location"))
	}
	for _, p := range []string{"/ui/", "/ui/login", "/ui/streams", "/ui/streams/1", "/ui/streams/1/topics/2", "/ui/messages", "/ui/groups", "/ui/users", "/ui/charts"} {
		w := get(t, h, "GET", p, "")
		body := w.Body.String()
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %s", p, w.Code, w.Header().Get("Content-Type"))
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "script-src 'self'") || w.Header().Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: headers %v", p, w.Header())
		}
		for _, a := range []string{"console.js", "app.css"} {
			if !strings.Contains(body, "/ui/static/"+a+"?v=") {
				t.Fatalf("%s does not load %s", p, a)
			}
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " style=") || strings.Contains(body, " onclick=") {
			t.Fatalf("%s has inline code (the CSP forbids it)", p)
		}
	}
	// Path identifiers are escaped by the templates.
	w := get(t, h, "GET", "/ui/streams/%3Cb%3Ex%22", "")
	if w.Code != 200 || strings.Contains(w.Body.String(), "<b>x") || !strings.Contains(w.Body.String(), "&lt;b&gt;x") {
		t.Fatalf("identifier not escaped: %s", w.Body.String())
	}
	if w := get(t, h, "GET", "/ui/nope", ""); w.Code != 404 || !strings.Contains(w.Body.String(), `"code":"not_found"`) {
		t.Fatalf("/ui/nope: %d %s", w.Code, w.Body.String())
	}
	if w := get(t, h, "POST", "/ui/streams", ""); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST a page: %d", w.Code)
	}
	w = get(t, h, "GET", "/ui/static/app.js", "")
	etag := w.Header().Get("ETag")
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/javascript; charset=utf-8" || etag == "" || !strings.Contains(w.Body.String(), "window.Iggo") {
		t.Fatalf("app.js: %d %v", w.Code, w.Header())
	}
	r := httptest.NewRequest("GET", "/ui/static/app.js", nil)
	r.Header.Set("If-None-Match", etag)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("revalidation: %d, %d bytes, %q", rec.Code, rec.Body.Len(), w.Header().Get("Cache-Control"))
	}
	// The URL a page uses (with this build's digest) is cached for good.
	page := get(t, h, "GET", "/ui/", "").Body.String()
	i := strings.Index(page, "/ui/static/console.js?v=")
	versioned := page[i : i+len("/ui/static/console.js?v=")+12]
	w = get(t, h, "GET", versioned, "")
	if w.Code != 200 || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
		t.Fatalf("%s: %d %q", versioned, w.Code, w.Header().Get("Cache-Control"))
	}
	// The bundle is the three scripts in order.
	js := w.Body.String()
	a, b, c := strings.Index(js, "window.Iggo = {"), strings.Index(js, "window.IggoCharts = {"), strings.Index(js, "const pages = {};")
	if a < 0 || b < a || c < b {
		t.Fatalf("console.js does not join app.js, charts.js and pages.js in order (%d %d %d)", a, b, c)
	}
	if w := get(t, h, "GET", "/ui/static/missing.js", ""); w.Code != 404 {
		t.Fatalf("missing asset: %d", w.Code)
	}
	if w := get(t, h, "GET", "/ui/api/other", "ok"); w.Code != 404 {
		t.Fatalf("unknown console route: %d", w.Code)
	}
}

func TestSummaryRoute(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "iggo_bytes_appended_total"}, []string{"stream", "topic"})
	reg.MustRegister(c)
	c.WithLabelValues("1", "1").Add(42)
	h := newTestConsole(t, &fakeAPI{}, reg)
	if w := get(t, h, "GET", "/ui/api/summary", ""); w.Code != 401 {
		t.Fatalf("summary without a token: %d", w.Code)
	}
	w := get(t, h, "GET", "/ui/api/summary", "ok")
	var s Summary
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &s) != nil || s.BytesIn != 42 || w.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("summary: %d %s", w.Code, w.Body.String())
	}
	if w := get(t, h, "POST", "/ui/api/summary", "ok"); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST summary: %d", w.Code)
	}
	off := newTestConsole(t, &fakeAPI{}, nil)
	if w := get(t, off, "GET", "/ui/api/summary", "ok"); w.Code != 404 || !strings.Contains(w.Body.String(), "http.metrics.enabled") {
		t.Fatalf("summary with metrics off: %d %s", w.Code, w.Body.String())
	}
}

func TestGroupOffsetsRoute(t *testing.T) {
	f := &fakeAPI{offsets: map[uint32][2]uint64{0: {9, 3}, 2: {5, 5}}}
	h := newTestConsole(t, f, nil)
	if w := get(t, h, "GET", "/ui/api/group-offsets?stream=1&topic=2&group=3", ""); w.Code != 401 {
		t.Fatalf("without a token: %d", w.Code)
	}
	for _, q := range []string{"topic=2&group=3", "stream=1&group=3", "stream=1&topic=2", "stream=1&topic=2&group=3&count=0",
		"stream=1&topic=2&group=3&count=101", "stream=1&topic=2&group=3&from=x", "stream=1&topic=2&group=3&from=4294967295&count=2"} {
		if w := get(t, h, "GET", "/ui/api/group-offsets?"+q, "ok"); w.Code != 400 || !strings.Contains(w.Body.String(), "invalid_query") {
			t.Fatalf("%s: %d %s", q, w.Code, w.Body.String())
		}
	}
	if len(f.reqs) != 0 {
		t.Fatalf("bad queries ran %d commands", len(f.reqs))
	}
	w := get(t, h, "GET", "/ui/api/group-offsets?stream=orders&topic=2&group=3&from=0&count=3", "ok")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body.String())
	}
	want := `{"partitions":[{"partition_id":0,"current_offset":9,"stored_offset":3},{"partition_id":1,"current_offset":null,"stored_offset":null},{"partition_id":2,"current_offset":5,"stored_offset":5}]}`
	if got := strings.TrimSpace(w.Body.String()); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if len(f.reqs) != 3 {
		t.Fatalf("%d commands, want 3", len(f.reqs))
	}
	stream, _ := wire.NamedID("orders")
	for i, r := range f.reqs {
		if r.Consumer.Kind != wire.ConsumerKindGroup || r.Consumer.ID != wire.NumericID(3) || r.StreamID != stream ||
			r.TopicID != wire.NumericID(2) || !r.Partition.Set || r.Partition.ID != uint32(i) {
			t.Fatalf("request %d: %+v", i, r)
		}
	}
	// A refusal on the way stops there and is the whole answer.
	f.reqs, f.fail, f.failOn = nil, wire.CodeUnauthorized, 1
	w = get(t, h, "GET", "/ui/api/group-offsets?stream=1&topic=2&group=3&count=5", "ok")
	if w.Code != 403 || strings.Contains(w.Body.String(), "partitions") || len(f.reqs) != 2 {
		t.Fatalf("refusal: %d %s after %d commands", w.Code, w.Body.String(), len(f.reqs))
	}
}

func TestNewNeedsTheAPI(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("New without the API's hooks: %v", err)
	}
}

// FuzzConsoleRequest sends arbitrary paths and query strings to the
// console: every answer is a page, an asset, a redirect or the error JSON,
// never a panic, and nothing outside /ui reaches the console.
func FuzzConsoleRequest(f *testing.F) {
	for _, s := range []string{"/ui/", "/ui/streams/1/topics/2", "/ui/api/group-offsets?stream=1&topic=2&group=3&from=4&count=5",
		"/ui/api/summary", "/ui/static/app.js?v=1", "/ui//x", "/uix", "/ui/streams/%00", "/ui/api/group-offsets?stream=&count=-1"} {
		f.Add(s)
	}
	h := newTestConsole(f, &fakeAPI{offsets: map[uint32][2]uint64{1: {2, 1}}}, prometheus.NewRegistry())
	f.Fuzz(func(t *testing.T, target string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		r, err := http.NewRequest("GET", "http://x"+target, nil)
		if err != nil {
			return
		}
		r.Header.Set("Authorization", "Bearer ok")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		inside := r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/")
		switch {
		case !inside:
			if w.Code != 299 {
				t.Fatalf("%q (path %q) reached the console: %d", target, r.URL.Path, w.Code)
			}
		case w.Code == 200 || w.Code == 301 || w.Code == 304:
		case w.Code == 400 || w.Code == 404:
			var e struct {
				ID   int    `json:"id"`
				Code string `json:"code"`
			}
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.ID != w.Code || e.Code == "" {
				t.Fatalf("%q: %d with body %q", target, w.Code, w.Body.String())
			}
		default:
			t.Fatalf("%q: status %d", target, w.Code)
		}
	})
}
