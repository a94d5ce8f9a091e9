package bench

import (
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestRecorderPercentiles(t *testing.T) {
	r := NewRecorder(ActorProducer, 1, "s")
	r.Begin(0)
	// Latencies 1..100 ms, one batch every 10 ms, 1000 bytes and 10 messages each.
	for i := 1; i <= 100; i++ {
		r.Add(Record{At: time.Duration(i) * 10 * time.Millisecond, Messages: 10, UserBytes: 1000, TotalBytes: 1500, Latency: time.Duration(i) * time.Millisecond})
	}
	m := r.Metrics(100 * time.Millisecond)
	s := m.Summary
	if s.TotalMessages != 1000 || s.TotalBatches != 100 || s.TotalUserDataBytes != 100_000 || s.TotalBytes != 150_000 {
		t.Fatalf("totals %+v", s)
	}
	if !approx(s.TotalTimeSecs, 1.0, 1e-9) || !approx(s.ThroughputMBps, 0.1, 1e-9) || !approx(s.ThroughputMsgps, 1000, 1e-9) {
		t.Fatalf("throughput %+v", s)
	}
	l := s.Latency
	for _, c := range []struct{ got, want float64 }{{l.P50, 50}, {l.P90, 90}, {l.P95, 95}, {l.P99, 99}, {l.Max, 100}, {l.Min, 1}, {l.Avg, 50.5}} {
		if !approx(c.got, c.want, 0.01) {
			t.Errorf("latency %+v", l)
			break
		}
	}
	if l.Samples != 100 {
		t.Errorf("samples %d", l.Samples)
	}
	// 10 buckets of 100 ms, each with 10 batches: 0.01 MB in 0.1 s.
	if len(m.Series.ThroughputMBps) != 11 && len(m.Series.ThroughputMBps) != 10 {
		t.Fatalf("series %d points", len(m.Series.ThroughputMBps))
	}
	if !approx(m.Series.ThroughputMBps[3].Value, 0.1, 1e-9) || !approx(m.Series.ThroughputMsgps[3].Value, 1000, 1e-9) {
		t.Errorf("bucket 3 = %v / %v", m.Series.ThroughputMBps[3], m.Series.ThroughputMsgps[3])
	}
	if len(m.Series.LatencyMs) == 0 || m.Series.LatencyMs[1].Value < 10 || m.Series.LatencyMs[1].Value > 21 {
		t.Errorf("latency series %v", m.Series.LatencyMs[:2])
	}
}

func TestCoordinatedOmissionCorrection(t *testing.T) {
	plain := NewRecorder(ActorProducer, 1, "s")
	corrected := NewRecorder(ActorProducer, 2, "s")
	for i := 0; i < 99; i++ {
		rec := Record{At: time.Duration(i) * time.Millisecond, Latency: 500 * time.Microsecond}
		plain.Add(rec)
		rec.Expected = time.Millisecond
		corrected.Add(rec)
	}
	stall := Record{At: 200 * time.Millisecond, Latency: 100 * time.Millisecond}
	plain.Add(stall)
	stall.Expected = time.Millisecond
	corrected.Add(stall)
	p := plain.Metrics(10 * time.Millisecond).Summary.Latency
	c := corrected.Metrics(10 * time.Millisecond).Summary.Latency
	// The stall hid ~99 batches that would have waited 99, 98, ... ms.
	if p.Samples != 100 || c.Samples != 199 {
		t.Fatalf("samples plain %d corrected %d", p.Samples, c.Samples)
	}
	if p.P90 > 1 || c.P90 < 50 || c.P50 <= p.P50 {
		t.Fatalf("correction did not raise percentiles: plain %+v corrected %+v", p, c)
	}
	if p.Max != c.Max {
		t.Fatalf("max differs: %v %v", p.Max, c.Max)
	}
}

func TestMovingAverageAndGroup(t *testing.T) {
	ps := []Point{{1, 10}, {2, 20}, {3, 30}, {4, 40}}
	got := MovingAverage(ps, 2)
	want := []float64{10, 15, 25, 35}
	for i := range want {
		if got[i].Value != want[i] || got[i].TimeS != ps[i].TimeS {
			t.Fatalf("moving average %v", got)
		}
	}
	if len(MovingAverage(nil, 3)) != 0 || MovingAverage(ps, 1)[3].Value != 40 {
		t.Fatal("degenerate moving averages")
	}
	a, b := NewRecorder(ActorConsumer, 1, "s"), NewRecorder(ActorConsumer, 2, "s")
	for i := 1; i <= 10; i++ {
		a.Add(Record{At: time.Duration(i) * 100 * time.Millisecond, Messages: 1, UserBytes: 1_000_000, Latency: time.Millisecond})
		b.Add(Record{At: time.Duration(i) * 100 * time.Millisecond, Messages: 1, UserBytes: 2_000_000, Latency: 3 * time.Millisecond})
	}
	am, bm := a.Metrics(100*time.Millisecond), b.Metrics(100*time.Millisecond)
	g := Group(ActorConsumer, []ActorMetrics{am, bm}, [][]Record{a.Records(), b.Records()}, 100*time.Millisecond)
	if g.Actors != 2 || g.Summary.TotalMessages != 20 || !approx(g.Summary.ThroughputMBps, 30, 1e-9) || !approx(g.AvgThroughputMBps, 15, 1e-9) {
		t.Fatalf("group %+v avg %v", g.Summary, g.AvgThroughputMBps)
	}
	if !approx(g.Summary.Latency.P50, 1, 0.01) || !approx(g.Summary.Latency.Max, 3, 0.01) || g.Summary.Latency.Samples != 20 {
		t.Fatalf("merged latency %+v", g.Summary.Latency)
	}
	if len(g.Series.ThroughputMBps) == 0 || !approx(g.Series.ThroughputMBps[2].Value, 30, 1e-9) {
		t.Fatalf("group series %v", g.Series.ThroughputMBps)
	}
}

func syntheticReport(t *testing.T) *Report {
	t.Helper()
	p := Defaults(PinnedProducerAndConsumer)
	p.Producers, p.Consumers, p.Streams = 2, 2, 2
	p.Command = "iggo bench ppc -p 2 -c 2"
	var recs []*Recorder
	for i, kind := range []ActorKind{ActorProducer, ActorProducer, ActorConsumer, ActorConsumer} {
		r := NewRecorder(kind, i%2+1, StreamName(i%2+1))
		for j := 1; j <= 300; j++ {
			lat := time.Duration(200+(j*37+i*11)%800) * time.Microsecond
			r.Add(Record{At: time.Duration(j) * 10 * time.Millisecond, Messages: 100, UserBytes: 100_000 * uint64(1+i%2), TotalBytes: 105_000, Latency: lat})
		}
		recs = append(recs, r)
	}
	return BuildReport(&p, recs, Hardware{Hostname: "h", CPUName: "cpu", CPUCores: 2}, &ServerStats{ServerVersion: "x"}, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
}

func TestReportJSON(t *testing.T) {
	r := syntheticReport(t)
	if len(r.Groups) != 2 || r.Groups[0].Kind != ActorProducer || r.Groups[1].Kind != ActorConsumer || r.Aggregate == nil || len(r.Actors) != 4 {
		t.Fatalf("report structure: %d groups, %d actors", len(r.Groups), len(r.Actors))
	}
	if r.Aggregate.Summary.TotalMessages != 4*300*100 {
		t.Fatalf("aggregate messages %d", r.Aggregate.Summary.TotalMessages)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := r.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	params := j["params"].(map[string]any)
	if params["bench_command"] != "iggo bench ppc -p 2 -c 2" || params["benchmark_kind"] != "pinned-producer-and-consumer" || params["producers"] != float64(2) {
		t.Fatalf("params %v", params)
	}
	hw := j["hardware"].(map[string]any)
	if hw["cpu_name"] != "cpu" || hw["cpu_cores"] != float64(2) {
		t.Fatalf("hardware %v", hw)
	}
	if j["server_stats"].(map[string]any)["server_version"] != "x" {
		t.Fatal("server stats missing")
	}
	g := j["group_metrics"].([]any)[0].(map[string]any)
	lat := g["summary"].(map[string]any)["latency"].(map[string]any)
	for _, k := range []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "p9999_ms", "max_ms"} {
		if v, ok := lat[k].(float64); !ok || v <= 0 {
			t.Fatalf("latency field %s = %v", k, lat[k])
		}
	}
	ts := g["time_series"].(map[string]any)
	if len(ts["throughput_mb_per_second"].([]any)) < 10 || len(ts["latency_ms"].([]any)) < 10 {
		t.Fatal("time series missing")
	}
	if len(j["individual_metrics"].([]any)) != 4 || j["uuid"] == "" {
		t.Fatal("individual metrics or uuid missing")
	}
	if got := r.DirName(); got != "ppc_2p_2c_1000b_1000mpb_20260102T030405Z" {
		t.Fatalf("DirName %q", got)
	}
	r.Params.Durability = "persisted"
	if got := r.DirName(); got != "ppc_2p_2c_1000b_1000mpb_persisted_20260102T030405Z" {
		t.Fatalf("DirName with durability %q", got)
	}
	sb0 := strings.Builder{}
	r.PrintSummary(&sb0)
	mustContain(t, sb0.String(), "1 topic per stream (durability persisted), ")
	r.Params.Durability = ""
	var sb strings.Builder
	r.PrintSummary(&sb)
	mustContain(t, sb.String(), "Benchmark: pinned-producer-and-consumer, 2 producers, 2 consumers, 2 streams",
		"Producer #1 (bench-stream-1)", "Consumers total:", "Aggregate:", "p99.99")
}

func TestChartsArePNGs(t *testing.T) {
	r := syntheticReport(t)
	dir := t.TempDir()
	files, err := r.writeOutputs(dir, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files %v", files)
	}
	for _, f := range files[1:] {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b := img.Bounds()
		if b.Dx() < 600 || b.Dy() < 300 {
			t.Fatalf("%s is %v", f, b)
		}
		st, _ := os.Stat(f)
		if st.Size() < 10_000 {
			t.Fatalf("%s is only %d bytes", f, st.Size())
		}
		// Not a blank canvas: count distinct colours along the middle row.
		colours := map[[4]uint32]bool{}
		for x := b.Min.X; x < b.Max.X; x++ {
			for _, y := range []int{b.Dy() / 3, b.Dy() / 2, 2 * b.Dy() / 3} {
				r, g, bb, a := img.At(x, y).RGBA()
				colours[[4]uint32{r, g, bb, a}] = true
			}
		}
		if len(colours) < 4 {
			t.Fatalf("%s looks blank (%d colours)", f, len(colours))
		}
	}
	// A report with no records still writes charts without failing.
	empty := BuildReport(&Params{Kind: PinnedProducer, SamplingTime: time.Millisecond, MessageSize: Range{1, 1}, MessagesPerBatch: Range{1, 1}},
		[]*Recorder{NewRecorder(ActorProducer, 1, "s")}, Hardware{}, nil, time.Now())
	if _, err := empty.writeOutputs(t.TempDir(), 3, true); err != nil {
		t.Fatalf("empty report: %v", err)
	}
}

func TestProgressLine(t *testing.T) {
	a, b, c := &actorProgress{kind: ActorProducer}, &actorProgress{kind: ActorProducer}, &actorProgress{kind: ActorConsumer}
	a.add(100, 1_000_000)
	b.add(100, 1_000_000)
	c.add(50, 500_000)
	c.target.Store(200)
	prev := map[ActorKind][2]uint64{}
	line := progressLine([]*actorProgress{a, b, c}, prev, 2*time.Second, time.Second)
	mustContain(t, line, "[   2.0s]", "producers 2.00 MB/s 200 msg/s, 200 msgs", "consumers 0.50 MB/s 50 msg/s, 50 msgs (25%)")
	a.add(100, 1_000_000)
	line = progressLine([]*actorProgress{a, b, c}, prev, 3*time.Second, time.Second)
	mustContain(t, line, "producers 1.00 MB/s 100 msg/s, 300 msgs", "consumers 0.00 MB/s")
}

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("%q lacks %q", s, p)
		}
	}
}
