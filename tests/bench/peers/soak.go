package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SoakOptions configure Soak: one node under a steady load for Duration,
// its RSS sampled every second.
type SoakOptions struct {
	Iggo      Iggo
	Work, Out string
	KeepWork  bool
	// Duration of the load at Rate payload bytes per second (all
	// producers together), Producers producers and as many consumers in
	// one group polling while they send, on a topic of Partitions.
	Duration               time.Duration
	Rate                   uint64
	Producers, Partitions  int
	MessageSize, BatchSize int
	Durability             string
	// Window is the span each row of the table covers (a minute).
	Window time.Duration
	// BasePort: the node serves on BasePort+60.
	BasePort int
	Log      io.Writer
}

// SoakWindow is the node's RSS over one window of the run.
type SoakWindow struct {
	FromSecs float64 `json:"from_secs"`
	ToSecs   float64 `json:"to_secs"`
	Samples  int     `json:"samples"`
	RSSMin   uint64  `json:"rss_min_bytes"`
	RSSMax   uint64  `json:"rss_max_bytes"`
}

// SoakResult is what Soak measured.
type SoakResult struct {
	Started     time.Time    `json:"started"`
	Host        string       `json:"host"`
	Cores       int          `json:"cores"`
	Durability  string       `json:"durability"`
	MessageSize int          `json:"message_size"`
	BatchSize   int          `json:"batch_size"`
	Producers   int          `json:"producers"`
	Partitions  int          `json:"partitions"`
	RateBytes   uint64       `json:"rate_bytes_per_sec"`
	Seconds     float64      `json:"seconds"`
	Produce     Figure       `json:"produce"`
	Consume     Figure       `json:"consume"`
	Windows     []SoakWindow `json:"windows"`
	// Growth is the last window's RSS peak over the second's, minus 1
	// (the first window includes the ramp-up).
	Growth float64 `json:"rss_growth"`
	Load   float64 `json:"load_avg_1m"`
}

// rssSeries samples a process's VmRSS every period, keeping each sample.
type rssSeries struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	rss   []uint64
	stopc chan struct{}
	done  chan struct{}
}

func sampleRSSSeries(pid int, period time.Duration) *rssSeries {
	s := &rssSeries{start: time.Now(), stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if v, err := rssBytes(pid); err == nil {
				s.mu.Lock()
				s.at = append(s.at, time.Since(s.start))
				s.rss = append(s.rss, v)
				s.mu.Unlock()
			}
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSeries) stop() {
	close(s.stopc)
	<-s.done
}

// windows groups the samples into spans of w.
func (s *rssSeries) windows(w time.Duration) []SoakWindow {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SoakWindow
	for i, at := range s.at {
		k := int(at / w)
		for len(out) <= k {
			n := len(out)
			out = append(out, SoakWindow{FromSecs: (time.Duration(n) * w).Seconds(), ToSecs: (time.Duration(n+1) * w).Seconds()})
		}
		win := &out[k]
		v := s.rss[i]
		if win.Samples == 0 || v < win.RSSMin {
			win.RSSMin = v
		}
		win.RSSMax = max(win.RSSMax, v)
		win.Samples++
	}
	// Spans without a sample (none expected) are dropped.
	kept := out[:0]
	for _, win := range out {
		if win.Samples > 0 {
			kept = append(kept, win)
		}
	}
	return kept
}

// Soak runs the load and writes soak.md and soak.json.
func Soak(ctx context.Context, o SoakOptions) (*SoakResult, error) {
	switch {
	case o.Duration <= 0 || o.Rate == 0 || o.Window <= 0:
		return nil, errors.New("peers: soak: duration, rate and window must be positive")
	case o.Producers < 1 || o.Partitions < 1 || o.MessageSize < 1 || o.BatchSize < 1:
		return nil, errors.New("peers: soak: producers, partitions, message size and batch size must be positive")
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
	res := &SoakResult{Started: time.Now().UTC(), Cores: numCPU(), Durability: o.Durability, MessageSize: o.MessageSize,
		BatchSize: o.BatchSize, Producers: o.Producers, Partitions: o.Partitions, RateBytes: o.Rate, Load: loadAvg1()}
	res.Host, _ = os.Hostname()
	addr := "127.0.0.1:" + strconv.Itoa(o.BasePort+60)
	node, err := w.startIggoNode(o.Iggo, "iggo-soak", addr)
	if err != nil {
		return nil, err
	}
	defer node.proc.stop()
	if err := waitIggo(ctx, addr, node.proc, 2*time.Minute); err != nil {
		return nil, err
	}
	total := uint64(o.Duration.Seconds() * float64(o.Rate))
	fmt.Fprintf(o.Log, "== soak: %s at %s MB/s (%s MB), %d producers and consumers, %d partitions\n",
		o.Duration, strconv.FormatFloat(float64(o.Rate)/1e6, 'f', -1, 64), thousands(total/1e6), o.Producers, o.Partitions)
	// iggo bench splits --rate-limit over every actor, consumers too: twice
	// the rate leaves the producers Rate between them.
	series := sampleRSSSeries(node.proc.pid(), time.Second)
	start := time.Now()
	rep, err := w.iggoBench(ctx, o.Iggo, "soak", addr, "bpcg",
		"-p", strconv.Itoa(o.Producers), "-c", strconv.Itoa(o.Producers), "-g", "1", "-s", "1", "-a", strconv.Itoa(o.Partitions),
		"-m", strconv.Itoa(o.MessageSize), "-P", strconv.Itoa(o.BatchSize), "-T", strconv.FormatUint(total, 10),
		"-r", strconv.FormatUint(2*o.Rate, 10)+"B", "--durability", o.Durability, "--idle-timeout", "60s")
	series.stop()
	res.Seconds = time.Since(start).Seconds()
	if err == nil {
		res.Produce, err = rep.figureOf("producer")
	}
	if err == nil {
		res.Consume, err = rep.figureOf("consumer")
	}
	if err != nil {
		return res, err
	}
	res.Windows = series.windows(o.Window)
	if n := len(res.Windows); n >= 2 && res.Windows[1].RSSMax > 0 {
		res.Growth = float64(res.Windows[n-1].RSSMax)/float64(res.Windows[1].RSSMax) - 1
	}
	if err := res.write(o.Out); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "\n%s\nwrote %s and %s\n", res.Markdown(), filepath.Join(o.Out, "soak.md"), filepath.Join(o.Out, "soak.json"))
	return res, nil
}

// Markdown renders the soak table.
func (r *SoakResult) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s on %s (%d cores, load average %.1f at the start); one node, %s topic of %d partitions, "+
		"`iggo bench bpcg` with %d producers and %d consumers in one group, %d-byte messages in batches of %d, "+
		"rate-limited to %s MB/s for %.0f s; the server's VmRSS sampled every second.\n\n",
		r.Started.Format("2006-01-02 15:04 UTC"), r.Host, r.Cores, r.Load, r.Durability, r.Partitions, r.Producers, r.Producers,
		r.MessageSize, r.BatchSize, strconv.FormatFloat(float64(r.RateBytes)/1e6, 'f', -1, 64), r.Seconds)
	fmt.Fprintf(&b, "Produce %s msgs/s (p50 / p99 %s ms), consume %s msgs/s (end to end p50 / p99 %s ms).\n\n",
		rate(r.Produce), latencies(r.Produce), rate(r.Consume), latencies(r.Consume))
	b.WriteString("| From s | To s | RSS min MiB | RSS max MiB |\n|---|---|---|---|\n")
	for _, w := range r.Windows {
		fmt.Fprintf(&b, "| %.0f | %.0f | %s | %s |\n", w.FromSecs, w.ToSecs, mib(w.RSSMin), mib(w.RSSMax))
	}
	if len(r.Windows) >= 2 {
		fmt.Fprintf(&b, "\nRSS peak of the last window against the second's: %+.1f%%.\n", 100*r.Growth)
	}
	return b.String()
}

func (r *SoakResult) write(dir string) error { return writeReport(dir, "soak", r, r.Markdown()) }
