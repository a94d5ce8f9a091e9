package bench

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms track 1 µs .. 10 min with 3 significant digits.
const (
	histMinUs = 1
	histMaxUs = int64(10 * time.Minute / time.Microsecond)
	histSig   = 3
)

// Record is one measured batch.
type Record struct {
	// At is when the batch completed, since the run started.
	At time.Duration
	// Messages and UserBytes (payload + user headers) of the batch;
	// TotalBytes adds the per-message framing the wire carries.
	Messages   uint64
	UserBytes  uint64
	TotalBytes uint64
	// Latency of the batch (see the package doc for what it spans).
	Latency time.Duration
	// Expected is the rate limiter's interval for the batch (0: no limit),
	// used for coordinated-omission correction.
	Expected time.Duration
}

// ActorKind says what an actor did.
type ActorKind string

// Actor kinds.
const (
	ActorProducer          ActorKind = "producer"
	ActorConsumer          ActorKind = "consumer"
	ActorProducingConsumer ActorKind = "producing_consumer"
)

// Recorder collects one actor's records. It is used by one goroutine.
type Recorder struct {
	Kind    ActorKind
	ID      int
	Stream  string
	records []Record
	hist    *hdrhistogram.Histogram
	// Measurement window, relative to the run start.
	first, last time.Duration
}

// NewRecorder starts an empty recorder.
func NewRecorder(kind ActorKind, id int, stream string) *Recorder {
	return &Recorder{Kind: kind, ID: id, Stream: stream, hist: hdrhistogram.New(histMinUs, histMaxUs, histSig)}
}

// Begin marks the start of the measured window (after warm-up).
func (r *Recorder) Begin(at time.Duration) { r.first = at }

// Add records a batch.
func (r *Recorder) Add(rec Record) {
	us := clampUs(rec.Latency)
	if rec.Expected > 0 {
		_ = r.hist.RecordCorrectedValue(us, max(rec.Expected.Microseconds(), 1))
	} else {
		_ = r.hist.RecordValue(us)
	}
	r.records = append(r.records, rec)
	r.last = max(r.last, rec.At)
}

func clampUs(d time.Duration) int64 {
	us := d.Microseconds()
	return min(max(us, histMinUs), histMaxUs)
}

// Records returns the recorded batches.
func (r *Recorder) Records() []Record { return r.records }

// Latency summarises a histogram in milliseconds.
type Latency struct {
	P50    float64 `json:"p50_ms"`
	P90    float64 `json:"p90_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms"`
	P999   float64 `json:"p999_ms"`
	P9999  float64 `json:"p9999_ms"`
	Avg    float64 `json:"avg_ms"`
	Min    float64 `json:"min_ms"`
	Max    float64 `json:"max_ms"`
	StdDev float64 `json:"std_dev_ms"`
	// Samples counts the histogram's values (corrected samples included).
	Samples int64 `json:"samples"`
}

func latencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
	return Latency{
		P50: q(50), P90: q(90), P95: q(95), P99: q(99), P999: q(99.9), P9999: q(99.99),
		Avg: h.Mean() / 1000, Min: float64(h.Min()) / 1000, Max: float64(h.Max()) / 1000,
		StdDev: h.StdDev() / 1000, Samples: h.TotalCount(),
	}
}

// Summary is the headline of an actor or a group.
type Summary struct {
	TotalTimeSecs      float64 `json:"total_time_secs"`
	TotalUserDataBytes uint64  `json:"total_user_data_bytes"`
	TotalBytes         uint64  `json:"total_bytes"`
	TotalMessages      uint64  `json:"total_messages"`
	TotalBatches       uint64  `json:"total_message_batches"`
	// Throughput over the measured window (user data, MB = 10^6 bytes).
	ThroughputMBps  float64 `json:"throughput_megabytes_per_second"`
	ThroughputMsgps float64 `json:"throughput_messages_per_second"`
	Latency         Latency `json:"latency"`
}

// Point is one time-series sample.
type Point struct {
	TimeS float64 `json:"time_s"`
	Value float64 `json:"value"`
}

// Series are an actor's or group's time series, one point per sampling
// interval (raw, not smoothed; charts apply the moving average).
type Series struct {
	ThroughputMBps  []Point `json:"throughput_mb_per_second"`
	ThroughputMsgps []Point `json:"throughput_messages_per_second"`
	LatencyMs       []Point `json:"latency_ms"`
}

// ActorMetrics is one actor's result.
type ActorMetrics struct {
	Kind    ActorKind `json:"actor_kind"`
	ID      int       `json:"actor_id"`
	Stream  string    `json:"stream"`
	Summary Summary   `json:"summary"`
	Series  Series    `json:"time_series"`
	hist    *hdrhistogram.Histogram
	begin   time.Duration
}

// GroupMetrics aggregates the actors of one kind.
type GroupMetrics struct {
	Kind   ActorKind `json:"actor_kind"`
	Actors int       `json:"actors"`
	// Summary: total throughput is the sum over actors; latency comes from
	// the merged histograms.
	Summary Summary `json:"summary"`
	// AvgThroughputMBps is the mean per-actor throughput.
	AvgThroughputMBps float64 `json:"average_throughput_megabytes_per_second"`
	Series            Series  `json:"time_series"`
}

// buckets folds records into sampling intervals.
type bucket struct {
	bytes, msgs uint64
	latSum      time.Duration
	latN        int
}

func bucketize(recs []Record, sampling time.Duration, from time.Duration) []bucket {
	var out []bucket
	for _, r := range recs {
		i := int((r.At - from) / sampling)
		if i < 0 {
			i = 0
		}
		for len(out) <= i {
			out = append(out, bucket{})
		}
		out[i].bytes += r.UserBytes
		out[i].msgs += r.Messages
		out[i].latSum += r.Latency
		out[i].latN++
	}
	return out
}

func seriesOf(bs []bucket, sampling time.Duration, from time.Duration) Series {
	var s Series
	secs := sampling.Seconds()
	for i, b := range bs {
		t := (from + time.Duration(i+1)*sampling).Seconds()
		s.ThroughputMBps = append(s.ThroughputMBps, Point{t, float64(b.bytes) / 1e6 / secs})
		s.ThroughputMsgps = append(s.ThroughputMsgps, Point{t, float64(b.msgs) / secs})
		if b.latN > 0 {
			s.LatencyMs = append(s.LatencyMs, Point{t, b.latSum.Seconds() * 1000 / float64(b.latN)})
		}
	}
	return s
}

// Metrics computes the actor's result.
func (r *Recorder) Metrics(sampling time.Duration) ActorMetrics {
	m := ActorMetrics{Kind: r.Kind, ID: r.ID, Stream: r.Stream, hist: r.hist, begin: r.first}
	for _, rec := range r.records {
		m.Summary.TotalUserDataBytes += rec.UserBytes
		m.Summary.TotalBytes += rec.TotalBytes
		m.Summary.TotalMessages += rec.Messages
		m.Summary.TotalBatches++
	}
	var window time.Duration
	if len(r.records) > 0 {
		window = max(r.last-r.first, time.Microsecond)
	}
	m.Summary.TotalTimeSecs = window.Seconds()
	if window > 0 {
		m.Summary.ThroughputMBps = float64(m.Summary.TotalUserDataBytes) / 1e6 / window.Seconds()
		m.Summary.ThroughputMsgps = float64(m.Summary.TotalMessages) / window.Seconds()
	}
	m.Summary.Latency = latencyOf(r.hist)
	m.Series = seriesOf(bucketize(r.records, sampling, r.first), sampling, r.first)
	return m
}

// Group aggregates actors of one kind.
func Group(kind ActorKind, actors []ActorMetrics, recs [][]Record, sampling time.Duration) GroupMetrics {
	g := GroupMetrics{Kind: kind, Actors: len(actors)}
	merged := hdrhistogram.New(histMinUs, histMaxUs, histSig)
	var all []Record
	from := time.Duration(math.MaxInt64)
	for i, a := range actors {
		g.Summary.TotalUserDataBytes += a.Summary.TotalUserDataBytes
		g.Summary.TotalBytes += a.Summary.TotalBytes
		g.Summary.TotalMessages += a.Summary.TotalMessages
		g.Summary.TotalBatches += a.Summary.TotalBatches
		g.Summary.ThroughputMBps += a.Summary.ThroughputMBps
		g.Summary.ThroughputMsgps += a.Summary.ThroughputMsgps
		g.Summary.TotalTimeSecs = max(g.Summary.TotalTimeSecs, a.Summary.TotalTimeSecs)
		if a.hist != nil {
			merged.Merge(a.hist)
		}
		all = append(all, recs[i]...)
		from = min(from, a.begin)
	}
	if len(actors) > 0 {
		g.AvgThroughputMBps = g.Summary.ThroughputMBps / float64(len(actors))
	}
	g.Summary.Latency = latencyOf(merged)
	if len(all) > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i].At < all[j].At })
		g.Series = seriesOf(bucketize(all, sampling, from), sampling, from)
	}
	return g
}

// MovingAverage smooths points over window samples (a trailing mean).
func MovingAverage(ps []Point, window int) []Point {
	if window <= 1 || len(ps) == 0 {
		return ps
	}
	out := make([]Point, len(ps))
	var sum float64
	for i, p := range ps {
		sum += p.Value
		if i >= window {
			sum -= ps[i-window].Value
		}
		n := min(i+1, window)
		out[i] = Point{p.TimeS, sum / float64(n)}
	}
	return out
}

func (s Summary) line(what string) string {
	l := s.Latency
	return fmt.Sprintf("%s: %.2f MB/s, %.0f msg/s, %d messages in %d batches, %.2f s; latency p50 %.3f, p90 %.3f, p95 %.3f, p99 %.3f, p99.9 %.3f, p99.99 %.3f, max %.3f, avg %.3f ms",
		what, s.ThroughputMBps, s.ThroughputMsgps, s.TotalMessages, s.TotalBatches, s.TotalTimeSecs,
		l.P50, l.P90, l.P95, l.P99, l.P999, l.P9999, l.Max, l.Avg)
}
