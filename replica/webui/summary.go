package webui

import (
	"math"
	"net/http"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/version"
)

// Summary is the metrics summary the console's charts and cluster page
// read (GET /ui/api/summary): the node's own Prometheus registry reduced
// to the figures they draw. Counters are totals since the node started;
// the browser turns two samples into rates and bucket deltas into
// percentiles, so the route keeps no state.
type Summary struct {
	Version string `json:"version"`
	// TimeMS is when the registry was read (unix milliseconds).
	TimeMS int64 `json:"time_ms"`
	// Ready and Live are iggo_ready and iggo_live.
	Ready bool `json:"ready"`
	Live  bool `json:"live"`
	// MessagesIn and BytesIn sum iggo_messages_appended_total and
	// iggo_bytes_appended_total over topics; MessagesOut and BytesOut
	// iggo_messages_polled_total and iggo_bytes_polled_total.
	MessagesIn  uint64 `json:"messages_in"`
	BytesIn     uint64 `json:"bytes_in"`
	MessagesOut uint64 `json:"messages_out"`
	BytesOut    uint64 `json:"bytes_out"`
	// Connections is iggo_connections by transport.
	Connections  map[string]uint64 `json:"connections"`
	HTTPRequests uint64            `json:"http_requests"`
	// Latency is iggo_request_duration_seconds summed over commands and
	// transports.
	Latency Histogram `json:"latency"`
	// Gossip is iggo_gossip_member_up: each member as this node sees it.
	Gossip []Member `json:"gossip"`
	// Primaries is iggo_vsr_primaries by group kind.
	Primaries map[string]uint64 `json:"primaries"`
	Process   Process           `json:"process"`
	Entities  map[string]uint64 `json:"entities"`
}

// Histogram is a cumulative Prometheus histogram: Counts[i] observations
// at most Bounds[i] seconds (the +Inf bucket is Count).
type Histogram struct {
	Count  uint64    `json:"count"`
	Sum    float64   `json:"sum"`
	Bounds []float64 `json:"bounds"`
	Counts []uint64  `json:"counts"`
}

// Member is one gossip member.
type Member struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Up    bool   `json:"up"`
}

// Process is the process collector's figures.
type Process struct {
	CPUSeconds    float64 `json:"cpu_seconds"`
	ResidentBytes uint64  `json:"resident_bytes"`
	StartTime     float64 `json:"start_time"`
}

// entityGauges are Iggy's count gauges the summary repeats.
var entityGauges = []string{"streams", "topics", "partitions", "segments", "messages", "users", "clients"}

// Summarize reduces gathered metric families to a Summary.
func Summarize(families []*dto.MetricFamily, now time.Time) Summary {
	s := Summary{Version: version.Version, TimeMS: now.UnixMilli(), Connections: map[string]uint64{},
		Primaries: map[string]uint64{}, Entities: map[string]uint64{}, Gossip: []Member{},
		Latency: Histogram{Bounds: []float64{}, Counts: []uint64{}}}
	isEntity := map[string]bool{}
	for _, n := range entityGauges {
		isEntity[n] = true
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			v := value(m)
			switch {
			case name == "iggo_messages_appended_total":
				s.MessagesIn += u64(v)
			case name == "iggo_bytes_appended_total":
				s.BytesIn += u64(v)
			case name == "iggo_messages_polled_total":
				s.MessagesOut += u64(v)
			case name == "iggo_bytes_polled_total":
				s.BytesOut += u64(v)
			case name == "iggo_connections":
				s.Connections[label(m, "transport")] += u64(v)
			case name == "http_requests_total":
				s.HTTPRequests += u64(v)
			case name == "iggo_ready":
				s.Ready = v == 1
			case name == "iggo_live":
				s.Live = v == 1
			case name == "iggo_gossip_member_up":
				s.Gossip = append(s.Gossip, Member{Name: label(m, "member"), State: label(m, "state"), Up: v == 1})
			case name == "iggo_vsr_primaries":
				s.Primaries[label(m, "kind")] += u64(v)
			case name == "process_cpu_seconds_total":
				s.Process.CPUSeconds = v
			case name == "process_resident_memory_bytes":
				s.Process.ResidentBytes = u64(v)
			case name == "process_start_time_seconds":
				s.Process.StartTime = v
			case name == "iggo_request_duration_seconds":
				addHistogram(&s.Latency, m.GetHistogram())
			case isEntity[name]:
				s.Entities[name] = u64(v)
			}
		}
	}
	sort.Slice(s.Gossip, func(i, j int) bool { return s.Gossip[i].Name < s.Gossip[j].Name })
	return s
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func u64(v float64) uint64 {
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	if v >= math.MaxUint64 {
		return math.MaxUint64
	}
	return uint64(v)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// addHistogram adds h into dst bucket by bucket. Every child of one
// histogram vector has the same bounds; a child whose bounds differ from
// the first one's cannot be added bucket by bucket and is left out.
func addHistogram(dst *Histogram, h *dto.Histogram) {
	if h == nil {
		return
	}
	var bounds []float64
	var counts []uint64
	for _, b := range h.GetBucket() {
		if ub := b.GetUpperBound(); !math.IsInf(ub, 1) {
			bounds = append(bounds, ub)
			counts = append(counts, b.GetCumulativeCount())
		}
	}
	if len(dst.Bounds) == 0 && dst.Count == 0 {
		dst.Bounds, dst.Counts = bounds, counts
	} else {
		if len(bounds) != len(dst.Bounds) {
			return
		}
		for i := range bounds {
			if bounds[i] != dst.Bounds[i] {
				return
			}
		}
		for i := range counts {
			dst.Counts[i] += counts[i]
		}
	}
	dst.Count += h.GetSampleCount()
	dst.Sum += h.GetSampleSum()
}

func (c *Console) summary(w http.ResponseWriter, r *http.Request) {
	if c.opt.Gatherer == nil {
		writeError(w, http.StatusNotFound, "not_found", "metrics are off on this node (http.metrics.enabled = false)")
		return
	}
	fams, err := c.opt.Gatherer.Gather()
	if err != nil && len(fams) == 0 {
		c.log.Warn("webui: gathering metrics", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "error", "cannot read the node's metrics")
		return
	}
	writeJSON(w, http.StatusOK, Summarize(fams, time.Now()))
}
