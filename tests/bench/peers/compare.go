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
	"time"
)

// natsPortOffset is where JetStream's ports start above BasePort.
const natsPortOffset = 4000

// Setups of a comparison.
const (
	SetupSingle  = "single"
	SetupCluster = "cluster"
)

// CompareOptions configure Compare.
type CompareOptions struct {
	Iggo  Iggo
	Tools Tools
	// Work holds every server's data and log during the run (removed
	// afterwards unless KeepWork); Out receives peers.md, peers.json and
	// peers.png.
	Work, Out string
	KeepWork  bool
	// Batches each iggo producer sends (of BatchSize messages) on
	// replicated rows, PersistedBatches on persisted ones (0: Batches);
	// JetStream publishes the same total, Producers × batches × BatchSize.
	Batches, PersistedBatches uint64
	BatchSize                 int
	MessageSize               int
	Producers                 []int
	// Setups (SetupSingle, SetupCluster) and Durabilities ("replicated",
	// "persisted") to run, in order.
	Setups       []string
	Durabilities []string
	JSModes      []JSMode
	// ClusterNode is the iggo node the producers connect to.
	ClusterNode int
	// BasePort: iggo's cluster serves on BasePort.. (replica plane +1000,
	// gossip +2000, HTTP +3000), the single node on BasePort+10, JetStream
	// from BasePort+4000 (client +0.., routes +100.., monitoring +200..).
	BasePort int
	// DiskBytes in DiskChunk writes measure the disk first (0: skip).
	DiskBytes, DiskChunk uint64
	// Versions are recorded in the results.
	NATSServerVersion, NATSCLIVersion string
	Log                               io.Writer
}

// Row is one line of the comparison.
type Row struct {
	Setup      string   `json:"setup"`
	Durability string   `json:"durability"`
	Producers  int      `json:"producers"`
	Messages   uint64   `json:"messages"`
	Iggo       Figure   `json:"iggo"`
	JetStream  []Figure `json:"jetstream"`
}

// Ratio is iggo's throughput over JetStream mode i's (NaN when either is
// missing).
func (r Row) Ratio(i int) float64 {
	if i >= len(r.JetStream) || r.Iggo.Err != "" || r.JetStream[i].Err != "" || r.JetStream[i].MsgsPerSec <= 0 {
		return nan()
	}
	return r.Iggo.MsgsPerSec / r.JetStream[i].MsgsPerSec
}

// BestRatio is iggo's throughput over the best JetStream mode's in the row
// (NaN when iggo or every mode is missing).
func (r Row) BestRatio() float64 {
	best := 0.0
	for _, f := range r.JetStream {
		if f.Err == "" {
			best = max(best, f.MsgsPerSec)
		}
	}
	if r.Iggo.Err != "" || best <= 0 {
		return nan()
	}
	return r.Iggo.MsgsPerSec / best
}

// CompareResult is what Compare measured.
type CompareResult struct {
	Started           time.Time `json:"started"`
	Host              string    `json:"host"`
	Cores             int       `json:"cores"`
	NATSServerVersion string    `json:"nats_server_version"`
	NATSCLIVersion    string    `json:"nats_cli_version"`
	MessageSize       int       `json:"message_size"`
	BatchSize         int       `json:"batch_size"`
	Modes             []JSMode  `json:"jetstream_modes"`
	Disk              *Disk     `json:"disk,omitempty"`
	Rows              []Row     `json:"rows"`
}

func (o *CompareOptions) validate() error {
	switch {
	case o.Batches == 0 || o.BatchSize < 1 || o.MessageSize < 1:
		return errors.New("peers: batches, batch size and message size must be positive")
	case len(o.Producers) == 0 || len(o.Setups) == 0 || len(o.Durabilities) == 0 || len(o.JSModes) == 0:
		return errors.New("peers: give producers, setups, durabilities and JetStream modes")
	case o.Out == "" || o.Work == "":
		return errors.New("peers: give an output and a work directory")
	case o.BasePort < 1024 || o.BasePort > 65535-natsPortOffset-300:
		return fmt.Errorf("peers: base port %d leaves no room for the servers' ports", o.BasePort)
	case o.ClusterNode < 0 || o.ClusterNode > 2:
		return fmt.Errorf("peers: cluster node %d: want 0..2", o.ClusterNode)
	}
	for _, s := range o.Setups {
		if s != SetupSingle && s != SetupCluster {
			return fmt.Errorf("peers: setup %q: want %s or %s", s, SetupSingle, SetupCluster)
		}
	}
	for _, d := range o.Durabilities {
		if d != "replicated" && d != "persisted" {
			return fmt.Errorf("peers: durability %q: want replicated or persisted", d)
		}
	}
	for _, p := range o.Producers {
		if p < 1 || p > 64 {
			return fmt.Errorf("peers: %d producers: want 1..64", p)
		}
	}
	return nil
}

// Compare runs the comparison and writes its outputs. A measurement that
// fails is recorded in its row (and the outputs still written); the
// returned error then names every failure.
func Compare(ctx context.Context, o CompareOptions) (*CompareResult, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	w, err := newWork(o.Work, o.Log)
	if err != nil {
		return nil, err
	}
	defer w.finish(o.KeepWork)
	res := &CompareResult{Started: time.Now().UTC(), Cores: numCPU(), NATSServerVersion: o.NATSServerVersion, NATSCLIVersion: o.NATSCLIVersion,
		MessageSize: o.MessageSize, BatchSize: o.BatchSize, Modes: o.JSModes}
	res.Host, _ = os.Hostname()
	if o.DiskBytes > 0 {
		fmt.Fprintf(o.Log, "== disk: %d MiB in %d MiB writes, each followed by fdatasync\n", o.DiskBytes>>20, o.DiskChunk>>20)
		d, err := DiskBandwidth(ctx, w.path("disk"), o.DiskBytes, o.DiskChunk)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "   %.1f MB/s, %.1f MB/s with pages released (load %.2f)\n", d.MBps, d.ReleasedMBps, d.Load)
		res.Disk = &d
	}
	var failures []string
	for _, setup := range o.Setups {
		rows, err := compareSetup(ctx, w, &o, setup)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			failures = append(failures, err.Error())
		}
	}
	for _, r := range res.Rows {
		if r.Iggo.Err != "" {
			failures = append(failures, fmt.Sprintf("%s %s %dp iggo: %s", r.Setup, r.Durability, r.Producers, r.Iggo.Err))
		}
		for i, f := range r.JetStream {
			if f.Err != "" {
				failures = append(failures, fmt.Sprintf("%s %s %dp %s: %s", r.Setup, r.Durability, r.Producers, o.JSModes[i].Label(), f.Err))
			}
		}
	}
	if err := res.write(o.Out); err != nil {
		return res, err
	}
	fmt.Fprintf(o.Log, "\n%s\nwrote %s, %s and %s\n", res.Markdown(), filepath.Join(o.Out, "peers.md"), filepath.Join(o.Out, "peers.json"), filepath.Join(o.Out, "peers.png"))
	if len(failures) > 0 {
		return res, fmt.Errorf("peers: %d measurements failed:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	return res, nil
}

// compareSetup runs every row of one setup: the iggo side stays up for
// the whole setup, JetStream is started per durability (its sync setting
// is server-wide).
func compareSetup(ctx context.Context, w *work, o *CompareOptions, setup string) ([]Row, error) {
	var rows []Row
	for _, d := range o.Durabilities {
		batches := o.Batches
		if d == "persisted" && o.PersistedBatches > 0 {
			batches = o.PersistedBatches
		}
		for _, p := range o.Producers {
			rows = append(rows, Row{Setup: setup, Durability: d, Producers: p, Messages: uint64(p) * batches * uint64(o.BatchSize),
				JetStream: make([]Figure, len(o.JSModes))})
		}
	}
	// failAll marks what was not measured yet.
	failAll := func(err error) ([]Row, error) {
		msg := "not measured: " + firstLine(err)
		for i := range rows {
			if rows[i].Iggo.Err == "" && rows[i].Iggo.Messages == 0 {
				rows[i].Iggo.Err = msg
			}
			for j := range rows[i].JetStream {
				if rows[i].JetStream[j].Err == "" && rows[i].JetStream[j].Messages == 0 {
					rows[i].JetStream[j].Err = msg
				}
			}
		}
		return rows, err
	}
	nodes, replicas := 1, 1
	var iggoAddr string
	var stopIggo func()
	fmt.Fprintf(o.Log, "== %s: starting iggo\n", setupTitle(setup))
	if setup == SetupCluster {
		nodes, replicas = 3, 3
		c, err := w.iggoClusterUp(ctx, o.Iggo, 3, o.BasePort)
		if err != nil {
			return failAll(fmt.Errorf("iggo cluster: %w", err))
		}
		iggoAddr, stopIggo = c.addr(o.ClusterNode), c.down
	} else {
		n, err := w.startIggoNode(o.Iggo, "iggo-single", "127.0.0.1:"+strconv.Itoa(o.BasePort+10))
		if err != nil {
			return failAll(err)
		}
		stopIggo = func() { n.proc.stop(); _ = os.RemoveAll(filepath.Dir(n.data)) }
		if err := waitIggo(ctx, n.addr, n.proc, 2*time.Minute); err != nil {
			stopIggo()
			return failAll(err)
		}
		iggoAddr = n.addr
	}
	defer stopIggo()
	i := 0
	for _, d := range o.Durabilities {
		fmt.Fprintf(o.Log, "== %s, %s: starting JetStream (%d node(s), %s)\n", setupTitle(setup), d, nodes, jsSyncTitle(d))
		js, err := w.startNATS(ctx, o.Tools, "nats-"+setup+"-"+d, nodes, o.BasePort+natsPortOffset, d == "persisted")
		if err != nil {
			return failAll(fmt.Errorf("JetStream: %w", err))
		}
		for range o.Producers {
			r := &rows[i]
			i++
			name := fmt.Sprintf("%s-%s-%dp", setup, d, r.Producers)
			r.Iggo = measureIggo(ctx, w, o, name, iggoAddr, r)
			fmt.Fprintf(o.Log, "   %dp iggo %s\n", r.Producers, r.Iggo)
			for m, mode := range o.JSModes {
				load := loadAvg1()
				fig, err := w.natsBench(ctx, o.Tools, name+"-"+mode.Name, jsBench{mode: mode, url: js.url(0), replicas: replicas,
					producers: r.Producers, messages: r.Messages, size: o.MessageSize})
				if err != nil {
					fig = Figure{Err: firstLine(err)}
				}
				fig.Load = load
				r.JetStream[m] = fig
				fmt.Fprintf(o.Log, "   %dp %s %s\n", r.Producers, mode.Label(), fig)
			}
			if ctx.Err() != nil {
				js.stop()
				return rows, ctx.Err()
			}
		}
		js.stop()
	}
	return rows, nil
}

func measureIggo(ctx context.Context, w *work, o *CompareOptions, name, addr string, r *Row) Figure {
	load := loadAvg1()
	batches := r.Messages / uint64(r.Producers) / uint64(o.BatchSize)
	rep, err := w.iggoBench(ctx, o.Iggo, name, addr, "pp", "-p", strconv.Itoa(r.Producers), "-m", strconv.Itoa(o.MessageSize),
		"-P", strconv.Itoa(o.BatchSize), "-b", strconv.FormatUint(batches, 10), "--durability", r.Durability,
		"--remark", "iggo-peers "+name)
	var f Figure
	if err == nil {
		f, err = rep.figureOf("producer")
	}
	if err == nil && f.Messages != r.Messages {
		err = fmt.Errorf("the producers sent %d messages, want %d", f.Messages, r.Messages)
	}
	if err != nil {
		f = Figure{Err: firstLine(err)}
	}
	f.Load = load
	return f
}

func (f Figure) String() string {
	if f.Err != "" {
		return "failed: " + f.Err
	}
	return fmt.Sprintf("%.0f msgs/s (p50 %.1f ms, p99 %.1f ms; %d messages, load %.2f)", f.MsgsPerSec, f.P50Ms, f.P99Ms, f.Messages, f.Load)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func setupTitle(s string) string {
	if s == SetupCluster {
		return "3-node"
	}
	return "single node"
}

func jsSyncTitle(d string) string {
	if d == "persisted" {
		return "sync always"
	}
	return "default sync"
}

// write stores peers.md, peers.json and peers.png in dir.
func (r *CompareResult) write(dir string) error {
	if err := writeReport(dir, "peers", r, r.Markdown()); err != nil {
		return err
	}
	return r.Chart(filepath.Join(dir, "peers.png"))
}
