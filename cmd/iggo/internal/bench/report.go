package bench

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iggo/iggo/wire"
)

// Report is the JSON document a run writes (report.json).
type Report struct {
	UUID      string       `json:"uuid"`
	Timestamp time.Time    `json:"timestamp"`
	Params    ReportParams `json:"params"`
	Hardware  Hardware     `json:"hardware"`
	// ServerStats is the server's GET_STATS after the actors finished
	// (nil if it could not be read).
	ServerStats *ServerStats   `json:"server_stats"`
	Groups      []GroupMetrics `json:"group_metrics"`
	Actors      []ActorMetrics `json:"individual_metrics"`
	// Aggregate sums every group (present when there are several).
	Aggregate *GroupMetrics `json:"aggregate,omitempty"`
}

// ReportParams are the parameters as recorded.
type ReportParams struct {
	Kind                     Kind    `json:"benchmark_kind"`
	Command                  string  `json:"bench_command"`
	Identifier               string  `json:"identifier,omitempty"`
	Remark                   string  `json:"remark,omitempty"`
	Transport                string  `json:"transport"`
	ServerAddress            string  `json:"server_address"`
	MessageSize              string  `json:"message_size"`
	MessagesPerBatch         string  `json:"messages_per_batch"`
	MessageBatches           uint64  `json:"message_batches,omitempty"`
	TotalData                uint64  `json:"total_data,omitempty"`
	Producers                int     `json:"producers"`
	Consumers                int     `json:"consumers"`
	Streams                  int     `json:"streams"`
	Partitions               int     `json:"partitions"`
	ConsumerGroups           int     `json:"consumer_groups"`
	RateLimit                uint64  `json:"rate_limit_bytes_per_second,omitempty"`
	ReadAmplification        float64 `json:"read_amplification,omitempty"`
	WarmupTime               string  `json:"warmup_time"`
	SamplingTime             string  `json:"sampling_time"`
	MovingAverageWindow      int     `json:"moving_average_window"`
	Durability               string  `json:"durability,omitempty"`
	ConsumerOffsetDurability string  `json:"consumer_offset_durability,omitempty"`
	ReuseStreams             bool    `json:"reuse_streams"`
	KeepStreams              bool    `json:"keep_streams"`
	PollWait                 string  `json:"poll_wait,omitempty"`
}

func reportParams(p *Params) ReportParams {
	rp := ReportParams{
		Kind: p.Kind, Command: p.Command, Identifier: p.Identifier, Remark: p.Remark, Transport: p.Server.TransportName(), ServerAddress: p.Server.Address,
		MessageSize: p.MessageSize.String(), MessagesPerBatch: p.MessagesPerBatch.String(), MessageBatches: p.MessageBatches, TotalData: p.TotalData,
		Producers: p.Producers, Consumers: p.Consumers, Streams: p.Streams, Partitions: p.Partitions, ConsumerGroups: p.ConsumerGroups,
		RateLimit: p.RateLimit, WarmupTime: p.WarmupTime.String(), SamplingTime: p.SamplingTime.String(), MovingAverageWindow: p.MovingAverageWindow,
		Durability: p.Durability, ConsumerOffsetDurability: p.ConsumerOffsetDurability, ReuseStreams: p.ReuseStreams, KeepStreams: p.KeepStreams,
	}
	if p.Kind.endToEnd() && p.RateLimit > 0 {
		rp.ReadAmplification = p.ReadAmplification
	}
	if p.PollWait > 0 {
		rp.PollWait = p.PollWait.String()
	}
	return rp
}

// Hardware describes the machine the benchmark ran on.
type Hardware struct {
	Hostname  string  `json:"identifier"`
	CPUName   string  `json:"cpu_name"`
	CPUCores  int     `json:"cpu_cores"`
	MemoryGB  float64 `json:"total_memory_gb"`
	OSName    string  `json:"os_name"`
	OSVersion string  `json:"os_version"`
	Arch      string  `json:"arch"`
	GoVersion string  `json:"go_version"`
}

// DetectHardware reads the CPU model and memory from /proc (Linux) and the
// kernel from uname; missing facts stay empty.
func DetectHardware() Hardware {
	h := Hardware{CPUCores: runtime.NumCPU(), OSName: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUName = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemoryGB = float64(uint64(si.Totalram)*uint64(si.Unit)) / (1 << 30)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.OSName = unix.ByteSliceToString(u.Sysname[:])
		h.OSVersion = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

// ServerStats is the part of GET_STATS a report keeps.
type ServerStats struct {
	ServerVersion     string  `json:"server_version"`
	Hostname          string  `json:"hostname"`
	OSName            string  `json:"os_name"`
	OSVersion         string  `json:"os_version"`
	KernelVersion     string  `json:"kernel_version"`
	ProcessID         uint32  `json:"process_id"`
	CPUUsage          float32 `json:"cpu_usage"`
	TotalCPUUsage     float32 `json:"total_cpu_usage"`
	MemoryUsage       uint64  `json:"memory_usage"`
	TotalMemory       uint64  `json:"total_memory"`
	AvailableMemory   uint64  `json:"available_memory"`
	RunTimeUs         uint64  `json:"run_time_us"`
	ReadBytes         uint64  `json:"read_bytes"`
	WrittenBytes      uint64  `json:"written_bytes"`
	MessagesSizeBytes uint64  `json:"messages_size_bytes"`
	StreamsCount      uint32  `json:"streams_count"`
	TopicsCount       uint32  `json:"topics_count"`
	PartitionsCount   uint32  `json:"partitions_count"`
	SegmentsCount     uint32  `json:"segments_count"`
	MessagesCount     uint64  `json:"messages_count"`
	ClientsCount      uint32  `json:"clients_count"`
	ThreadsCount      uint32  `json:"threads_count"`
}

func serverStats(s wire.Stats) *ServerStats {
	return &ServerStats{
		ServerVersion: s.Version, Hostname: s.Hostname, OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.KernelVersion,
		ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage, MemoryUsage: s.MemoryUsage,
		TotalMemory: s.TotalMemory, AvailableMemory: s.AvailableMemory, RunTimeUs: s.RunTime, ReadBytes: s.ReadBytes,
		WrittenBytes: s.WrittenBytes, MessagesSizeBytes: s.MessagesSizeBytes, StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount,
		PartitionsCount: s.PartitionsCount, SegmentsCount: s.Segments, MessagesCount: s.MessagesCount, ClientsCount: s.ClientsCount,
		ThreadsCount: s.ThreadsCount,
	}
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("bench: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// BuildReport assembles a report from the actors' recorders.
func BuildReport(p *Params, recs []*Recorder, hw Hardware, stats *ServerStats, at time.Time) *Report {
	r := &Report{UUID: newUUID(), Timestamp: at.UTC(), Params: reportParams(p), Hardware: hw, ServerStats: stats}
	if p.Identifier != "" {
		r.Hardware.Hostname = p.Identifier
	}
	byKind := map[ActorKind][]int{}
	var order []ActorKind
	for i, rec := range recs {
		m := rec.Metrics(p.SamplingTime)
		r.Actors = append(r.Actors, m)
		if _, ok := byKind[rec.Kind]; !ok {
			order = append(order, rec.Kind)
		}
		byKind[rec.Kind] = append(byKind[rec.Kind], i)
	}
	var allActors []ActorMetrics
	var allRecs [][]Record
	for _, k := range order {
		var actors []ActorMetrics
		var rs [][]Record
		for _, i := range byKind[k] {
			actors = append(actors, r.Actors[i])
			rs = append(rs, recs[i].Records())
		}
		r.Groups = append(r.Groups, Group(k, actors, rs, p.SamplingTime))
		allActors = append(allActors, actors...)
		allRecs = append(allRecs, rs...)
	}
	if len(order) > 1 {
		g := Group("all", allActors, allRecs, p.SamplingTime)
		r.Aggregate = &g
	}
	return r
}

// WriteJSON writes the report indented.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// DirName is the per-run output directory name:
// <kind alias>_<producers>p_<consumers>c_<msg size>b_<batch>mpb[_<durability>]_<UTC time>,
// the durability present when the run chose one, so runs that differ only
// in it are told apart.
func (r *Report) DirName() string {
	p := r.Params
	dur := ""
	if p.Durability != "" {
		dur = "_" + p.Durability
	}
	return fmt.Sprintf("%s_%dp_%dc_%sb_%smpb%s_%s", Kind(p.Kind).Alias(), p.Producers, p.Consumers,
		strings.ReplaceAll(p.MessageSize, "..", "-"), strings.ReplaceAll(p.MessagesPerBatch, "..", "-"), dur, r.Timestamp.Format("20060102T150405Z"))
}

func groupTitle(k ActorKind) string {
	switch k {
	case ActorProducer:
		return "Producers"
	case ActorConsumer:
		return "Consumers"
	case ActorProducingConsumer:
		return "Producing consumers"
	}
	return "All actors"
}

func actorTitle(k ActorKind) string {
	switch k {
	case ActorProducer:
		return "Producer"
	case ActorConsumer:
		return "Consumer"
	case ActorProducingConsumer:
		return "Producing consumer"
	}
	return string(k)
}

// PrintSummary writes the human-readable results.
func (r *Report) PrintSummary(w io.Writer) {
	p := r.Params
	var total, bytes uint64
	for _, a := range r.Actors {
		total += a.Summary.TotalMessages
		bytes += a.Summary.TotalUserDataBytes
	}
	data := fmt.Sprintf("%d message batches per actor", p.MessageBatches)
	if p.TotalData > 0 {
		data = fmt.Sprintf("%d bytes of data in total", p.TotalData)
	}
	rate := ""
	if p.RateLimit > 0 {
		rate = fmt.Sprintf(", rate limit %.2f MB/s", float64(p.RateLimit)/1e6)
	}
	actors := ""
	switch {
	case p.Kind == EndToEndProducingConsumer:
		actors = fmt.Sprintf("%d producing consumers, ", p.Producers)
	default:
		if p.Producers > 0 {
			actors += fmt.Sprintf("%d producers, ", p.Producers)
		}
		if p.Consumers > 0 {
			actors += fmt.Sprintf("%d consumers, ", p.Consumers)
		}
	}
	groups := ""
	if p.ConsumerGroups > 0 {
		groups = fmt.Sprintf("%d consumer groups, ", p.ConsumerGroups)
	}
	fmt.Fprintf(w, "\nBenchmark: %s, %s%d streams, 1 topic per stream%s, %d partitions per topic, %s%s messages per batch, %s bytes per message, %s%s; %d messages, %.2f MB processed\n",
		p.Kind, actors, p.Streams, p.durabilityText(), p.Partitions, groups, p.MessagesPerBatch, p.MessageSize, data, rate, total, float64(bytes)/1e6)
	for _, a := range r.Actors {
		fmt.Fprintln(w, a.Summary.line(fmt.Sprintf("%s #%d (%s)", actorTitle(a.Kind), a.ID, a.Stream)))
	}
	for _, g := range r.Groups {
		fmt.Fprintf(w, "%s (average per actor %.2f MB/s)\n", g.Summary.line(groupTitle(g.Kind)+" total"), g.AvgThroughputMBps)
	}
	if r.Aggregate != nil {
		fmt.Fprintln(w, r.Aggregate.Summary.line("Aggregate"))
	}
}

// durabilityText is " (durability persisted, offsets replicated)" for the
// topic options the run chose, "" when it left both to the server.
func (p ReportParams) durabilityText() string {
	var parts []string
	if p.Durability != "" {
		parts = append(parts, "durability "+p.Durability)
	}
	if p.ConsumerOffsetDurability != "" {
		parts = append(parts, "offsets "+p.ConsumerOffsetDurability)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeOutputs writes report.json and the charts into a new directory
// under dir and returns the files written.
func (r *Report) writeOutputs(dir string, window int, charts bool) ([]string, error) {
	out := filepath.Join(dir, r.DirName())
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	files := []string{filepath.Join(out, "report.json")}
	if err := r.WriteJSON(files[0]); err != nil {
		return nil, err
	}
	if charts {
		tp := filepath.Join(out, "throughput.png")
		if err := r.ThroughputChart(tp, window); err != nil {
			return files, fmt.Errorf("throughput chart: %w", err)
		}
		lat := filepath.Join(out, "latency.png")
		if err := r.LatencyChart(lat, window); err != nil {
			return files, fmt.Errorf("latency chart: %w", err)
		}
		files = append(files, tp, lat)
	}
	return files, nil
}
