package peers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ScalingOptions configure Scaling.
type ScalingOptions struct {
	Iggo      Iggo
	Work, Out string
	KeepWork  bool
	// Producers and Partitions span the table: one cell per pair, as many
	// consumers (in one group) as producers.
	Producers  []int
	Partitions []int
	// CellData is what the producers of one cell send together; BootData
	// what the node holds when its boot is timed (0: no boot rows).
	CellData, BootData     uint64
	MessageSize, BatchSize int
	// Durability of the benchmark topics ("replicated" or "persisted").
	Durability string
	// BasePort: the node serves on BasePort+50.
	BasePort int
	Log      io.Writer
}

// ScalingCell is one producers × partitions measurement.
type ScalingCell struct {
	Partitions int    `json:"partitions"`
	Producers  int    `json:"producers"`
	Consumers  int    `json:"consumers"`
	Produce    Figure `json:"produce"`
	// Consume latency is end to end (send to receipt).
	Consume Figure `json:"consume"`
	// RSSPeak is the node's largest VmRSS sampled during the cell.
	RSSPeak uint64  `json:"rss_peak_bytes"`
	Load    float64 `json:"load_avg_1m"`
	Err     string  `json:"error,omitempty"`
}

// BootRow is one boot measurement.
type BootRow struct {
	Partitions int     `json:"partitions"`
	DataBytes  uint64  `json:"data_bytes"`
	Messages   uint64  `json:"messages"`
	FillRate   float64 `json:"fill_msgs_per_sec"`
	// ServingSecs: exec to the first successful login; CompleteSecs: to
	// the topic reporting every message.
	ServingSecs  float64 `json:"serving_secs"`
	CompleteSecs float64 `json:"complete_secs"`
	RSSAfterBoot uint64  `json:"rss_after_boot_bytes"`
	DiskBytes    uint64  `json:"disk_bytes"`
	Load         float64 `json:"load_avg_1m"`
	Err          string  `json:"error,omitempty"`
}

// ScalingResult is what Scaling measured.
type ScalingResult struct {
	Started     time.Time     `json:"started"`
	Host        string        `json:"host"`
	Cores       int           `json:"cores"`
	NoFile      uint64        `json:"rlimit_nofile"`
	Durability  string        `json:"durability"`
	MessageSize int           `json:"message_size"`
	BatchSize   int           `json:"batch_size"`
	CellData    uint64        `json:"cell_data_bytes"`
	BootData    uint64        `json:"boot_data_bytes"`
	Cells       []ScalingCell `json:"cells"`
	Boots       []BootRow     `json:"boots"`
}

// Scaling runs the scaling table and writes scaling.md and scaling.json.
// A partition count the node refuses is recorded in its rows; other
// failures are too, and the returned error names them all.
func Scaling(ctx context.Context, o ScalingOptions) (*ScalingResult, error) {
	switch {
	case len(o.Producers) == 0 || len(o.Partitions) == 0:
		return nil, errors.New("peers: give producer and partition counts")
	case o.CellData == 0 || o.MessageSize < 1 || o.BatchSize < 1:
		return nil, errors.New("peers: cell data, message size and batch size must be positive")
	case o.Durability != "replicated" && o.Durability != "persisted":
		return nil, fmt.Errorf("peers: durability %q: want replicated or persisted", o.Durability)
	case o.Out == "" || o.Work == "":
		return nil, errors.New("peers: give an output and a work directory")
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	w, err := newWork(o.Work, o.Log)
	if err != nil {
		return nil, err
	}
	defer w.finish(o.KeepWork)
	res := &ScalingResult{Started: time.Now().UTC(), Cores: numCPU(), Durability: o.Durability,
		MessageSize: o.MessageSize, BatchSize: o.BatchSize, CellData: o.CellData, BootData: o.BootData}
	res.Host, _ = os.Hostname()
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		res.NoFile = lim.Cur
	}
	var failures []string
	for _, n := range o.Partitions {
		cells, boot, err := scalePartitions(ctx, w, &o, n)
		res.Cells = append(res.Cells, cells...)
		if boot != nil {
			res.Boots = append(res.Boots, *boot)
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err != nil {
			failures = append(failures, err.Error())
		}
	}
	if err := res.write(o.Out); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "\n%s\nwrote %s and %s\n", res.Markdown(), filepath.Join(o.Out, "scaling.md"), filepath.Join(o.Out, "scaling.json"))
	if len(failures) > 0 {
		return res, fmt.Errorf("peers: scaling: %d failures:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	return res, nil
}

// refusedPartitions reports the node's refusal of a partition count
// (TooManyPartitions, 2015): a finding of the table, not a failure.
func refusedPartitions(err error) bool {
	return err != nil && strings.Contains(err.Error(), "TooManyPartitions")
}

func scalePartitions(ctx context.Context, w *work, o *ScalingOptions, partitions int) ([]ScalingCell, *BootRow, error) {
	addr := "127.0.0.1:" + strconv.Itoa(o.BasePort+50)
	name := fmt.Sprintf("iggo-scaling-%d", partitions)
	var env []string
	cells := make([]ScalingCell, len(o.Producers))
	for i, p := range o.Producers {
		cells[i] = ScalingCell{Partitions: partitions, Producers: p, Consumers: p}
	}
	fail := func(from int, err error) ([]ScalingCell, *BootRow, error) {
		for i := from; i < len(cells); i++ {
			if cells[i].Err == "" {
				cells[i].Err = firstLine(err)
			}
		}
		return cells, nil, err
	}
	fmt.Fprintf(o.Log, "== %d partitions: starting a node\n", partitions)
	node, err := w.startIggoNode(o.Iggo, name, addr, env...)
	if err != nil {
		return fail(0, err)
	}
	defer func() {
		node.proc.stop()
		_ = os.RemoveAll(filepath.Dir(node.data))
	}()
	if err := waitIggo(ctx, addr, node.proc, 2*time.Minute); err != nil {
		return fail(0, err)
	}
	for i := range cells {
		c := &cells[i]
		c.Load = loadAvg1()
		rss := sampleRSS(node.proc.pid())
		rep, err := w.iggoBench(ctx, o.Iggo, fmt.Sprintf("scaling-%da-%dp", partitions, c.Producers), addr, "bpcg",
			"-p", strconv.Itoa(c.Producers), "-c", strconv.Itoa(c.Consumers), "-g", "1", "-s", "1", "-a", strconv.Itoa(partitions),
			"-m", strconv.Itoa(o.MessageSize), "-P", strconv.Itoa(o.BatchSize), "-T", strconv.FormatUint(o.CellData, 10),
			"--durability", o.Durability, "--idle-timeout", "60s")
		c.RSSPeak = rss.stop()
		if err == nil {
			c.Produce, err = rep.figureOf("producer")
		}
		if err == nil {
			c.Consume, err = rep.figureOf("consumer")
		}
		if err != nil {
			if refusedPartitions(err) {
				fmt.Fprintf(o.Log, "   %d partitions refused by the node: %s\n", partitions, firstLine(err))
				_, _, _ = fail(i, fmt.Errorf("refused by the node: %s", refusedText(err)))
				return cells, &BootRow{Partitions: partitions, DataBytes: o.BootData, Err: "refused by the node: " + refusedText(err)}, nil
			}
			return fail(i, err)
		}
		c.Produce.Load, c.Consume.Load = c.Load, c.Load
		fmt.Fprintf(o.Log, "   %dp/%dc: produce %s; consume %s; RSS peak %.0f MiB\n", c.Producers, c.Consumers, c.Produce, c.Consume, float64(c.RSSPeak)/(1<<20))
	}
	if o.BootData == 0 {
		return cells, nil, nil
	}
	boot := &BootRow{Partitions: partitions, DataBytes: o.BootData, Load: loadAvg1()}
	fmt.Fprintf(o.Log, "== %d partitions: filling %d MB, then timing a restart\n", partitions, o.BootData/1e6)
	rep, err := w.iggoBench(ctx, o.Iggo, fmt.Sprintf("scaling-%da-fill", partitions), addr, "bp",
		"-p", "4", "-s", "1", "-a", strconv.Itoa(partitions), "-m", strconv.Itoa(o.MessageSize), "-P", strconv.Itoa(o.BatchSize),
		"-T", strconv.FormatUint(o.BootData, 10), "--durability", o.Durability, "--keep-streams", "--idle-timeout", "60s")
	var fill Figure
	if err == nil {
		fill, err = rep.figureOf("producer")
	}
	if err == nil {
		boot.FillRate = fill.MsgsPerSec
		boot.Messages, err = topicMessages(ctx, addr)
	}
	if err != nil {
		boot.Err = firstLine(err)
		return cells, boot, err
	}
	node.proc.stop()
	boot.DiskBytes = dirBytes(node.data)
	start := time.Now()
	node, err = w.restartIggoNode(o.Iggo, name, addr, node.data, env...)
	if err != nil {
		boot.Err = firstLine(err)
		return cells, boot, err
	}
	if err := waitIggo(ctx, addr, node.proc, 30*time.Minute); err != nil {
		boot.Err = firstLine(err)
		return cells, boot, err
	}
	boot.ServingSecs = time.Since(start).Seconds()
	for {
		n, err := topicMessages(ctx, addr)
		if err == nil && n == boot.Messages {
			break
		}
		if time.Since(start) > 30*time.Minute || ctx.Err() != nil {
			boot.Err = fmt.Sprintf("topic reports %d of %d messages after the restart (%v)", n, boot.Messages, err)
			return cells, boot, errors.New(boot.Err)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return cells, boot, err
		}
	}
	boot.CompleteSecs = time.Since(start).Seconds()
	boot.RSSAfterBoot, _ = rssBytes(node.proc.pid())
	fmt.Fprintf(o.Log, "   %s messages (%.0f MB on disk): serving after %.2f s, topic complete after %.2f s, RSS %.0f MiB\n",
		thousands(boot.Messages), float64(boot.DiskBytes)/1e6, boot.ServingSecs, boot.CompleteSecs, float64(boot.RSSAfterBoot)/(1<<20))
	return cells, boot, nil
}

// refusedText is the server's part of a refusal ("... (Iggy error 2015
// TooManyPartitions)").
func refusedText(err error) string {
	s := firstLine(err)
	for _, l := range strings.Split(err.Error(), "\n") {
		if strings.Contains(l, "TooManyPartitions") {
			s = l
			break
		}
	}
	if i := strings.Index(s, "error: "); i >= 0 {
		s = s[i+len("error: "):]
	}
	if i := strings.Index(s, "TooManyPartitions"); i >= 0 {
		s = s[:i+len("TooManyPartitions")]
		if strings.Contains(s, "(") && !strings.Contains(s, ")") {
			s += ")"
		}
	}
	return s
}

func dirBytes(dir string) uint64 {
	var n uint64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += uint64(st.Blocks) * 512
			} else {
				n += uint64(info.Size())
			}
		}
		return nil
	})
	return n
}

func mib(b uint64) string { return fmt.Sprintf("%.0f", float64(b)/(1<<20)) }

// Markdown renders the scaling tables.
func (r *ScalingResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d cores, RLIMIT_NOFILE %d); one node, %s topics, %d-byte messages in batches of %d; "+
		"each cell: `iggo bench bpcg` (one stream, one topic, producers and as many consumers in one group polling while they send), %s MB in all.\n\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Host, r.Cores, r.NoFile, r.Durability, r.MessageSize, r.BatchSize, thousands(r.CellData/1e6))
	b.WriteString("| Partitions | Producers | Consumers | produce msgs/s | produce p50 / p99 ms | consume msgs/s | end-to-end p50 / p99 ms | server RSS peak MiB | load avg |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Cells {
		if c.Err != "" {
			fmt.Fprintf(&b, "| %s | %d | %d | %s | | | | | |\n", thousands(uint64(c.Partitions)), c.Producers, c.Consumers, c.Err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %.1f |\n", thousands(uint64(c.Partitions)), c.Producers, c.Consumers,
			rate(c.Produce), latencies(c.Produce), rate(c.Consume), latencies(c.Consume), mib(c.RSSPeak), c.Load)
	}
	if len(r.Boots) > 0 {
		fmt.Fprintf(&b, "\nBoot with data: the node filled with %s MB (`iggo bench bp`, 4 producers), stopped with SIGTERM and started again; "+
			"serving = exec to the first login, complete = to the topic reporting every message.\n\n", thousands(r.BootData/1e6))
		b.WriteString("| Partitions | Messages | On disk MB | fill msgs/s | boot: serving s | boot: complete s | RSS after boot MiB | load avg |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|\n")
		for _, br := range r.Boots {
			if br.Err != "" {
				fmt.Fprintf(&b, "| %s | %s | | | | | | |\n", thousands(uint64(br.Partitions)), br.Err)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f | %.2f | %s | %.1f |\n", thousands(uint64(br.Partitions)), thousands(br.Messages),
				thousands(br.DiskBytes/1e6), thousands(uint64(br.FillRate)), br.ServingSecs, br.CompleteSecs, mib(br.RSSAfterBoot), br.Load)
		}
	}
	return b.String()
}

func (r *ScalingResult) write(dir string) error { return writeReport(dir, "scaling", r, r.Markdown()) }

// writeReport stores v as dir/name.json and md as dir/name.md.
func writeReport(dir, name string, v any, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".md"), []byte(md), 0o644)
}
