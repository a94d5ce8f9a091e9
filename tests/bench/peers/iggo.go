package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// Iggo locates the iggo binaries: Dir holds iggo and iggo-server.
type Iggo struct{ Dir string }

func (g Iggo) cli() string    { return filepath.Join(g.Dir, "iggo") }
func (g Iggo) server() string { return filepath.Join(g.Dir, "iggo-server") }

// iggoNode is a single iggo-server this run started.
type iggoNode struct {
	proc *proc
	addr string
	data string
}

// startIggoNode starts a single node serving TCP on addr with its data in
// <work>/<name>/data, HTTP off (its default port may be taken), logging at
// warn. env adds IGGY_* overrides.
func (w *work) startIggoNode(g Iggo, name, addr string, env ...string) (*iggoNode, error) {
	data := w.path(name, "data")
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		return nil, err
	}
	return w.restartIggoNode(g, name, addr, data, env...)
}

func (w *work) restartIggoNode(g Iggo, name, addr, data string, env ...string) (*iggoNode, error) {
	env = append([]string{"IGGY_PATH=" + data, "IGGY_TCP_ADDRESS=" + addr, "IGGY_HTTP_ENABLED=false", "IGGY_LOGGING_LEVEL=warn"}, env...)
	p, err := w.start(name, g.server(), []string{"--with-default-root-credentials"}, env)
	if err != nil {
		return nil, err
	}
	return &iggoNode{proc: p, addr: addr, data: data}, nil
}

// waitIggo dials addr as iggy/iggy until a login succeeds, the process
// exits or the timeout passes.
func waitIggo(ctx context.Context, addr string, p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			return fmt.Errorf("iggo-server on %s exited: %v\n%s", addr, p.err, p.tail(20))
		}
		c, err := dialIggo(ctx, addr)
		if err == nil {
			err = c.Ping(ctx)
			c.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("iggo-server on %s not serving after %s: %w", addr, timeout, last)
}

func dialIggo(ctx context.Context, addr string) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{addr}
	cfg.Username, cfg.Password = "iggy", "iggy"
	cfg.DialTimeout = time.Second
	cfg.RequestTimeout = 10 * time.Second
	cfg.HeartbeatInterval = 0
	cfg.Reconnect.Enabled = false
	cfg.SDKName = "iggo-peers"
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.Dial(dctx, cfg)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// iggoCluster is a local cluster started with `iggo cluster up`.
type iggoCluster struct {
	g    Iggo
	w    *work
	dir  string
	base int
}

func (w *work) iggoClusterUp(ctx context.Context, g Iggo, nodes, basePort int) (*iggoCluster, error) {
	c := &iggoCluster{g: g, w: w, dir: w.path("iggo-cluster"), base: basePort}
	err := w.run(ctx, "iggo-cluster", g.cli(), "cluster", "up", "--nodes", strconv.Itoa(nodes), "--dir", c.dir,
		"--base-port", strconv.Itoa(basePort), "--fresh", "--wait", "3m")
	if err != nil {
		c.down()
		return nil, err
	}
	return c, nil
}

func (c *iggoCluster) addr(node int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.base+node))
}

// down stops every node and removes the cluster's directory.
func (c *iggoCluster) down() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*stopTimeout)
	defer cancel()
	if err := c.w.run(ctx, "iggo-cluster", c.g.cli(), "cluster", "down", "--dir", c.dir, "--purge"); err != nil {
		fmt.Fprintf(c.w.log, "warning: iggo cluster down: %v\n", err)
	}
}

// iggoReport is the part of iggo bench's report.json this package reads.
type iggoReport struct {
	Groups []struct {
		Kind    string      `json:"actor_kind"`
		Summary iggoSummary `json:"summary"`
	} `json:"group_metrics"`
	Actors []struct {
		Kind    string      `json:"actor_kind"`
		Summary iggoSummary `json:"summary"`
	} `json:"individual_metrics"`
}

type iggoSummary struct {
	TotalTimeSecs float64 `json:"total_time_secs"`
	TotalMessages uint64  `json:"total_messages"`
	Latency       struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	} `json:"latency"`
}

// Figure is one measurement: messages per second over the run (all
// messages of the actors of one kind divided by the longest actor's
// duration) and per-batch latency.
type Figure struct {
	Messages   uint64  `json:"messages"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	// Load is the 1-minute load average just before the run.
	Load float64 `json:"load_avg_1m"`
	// Err is why there is no figure ("" when there is one).
	Err string `json:"error,omitempty"`
}

// figureOf reads actor kind's figure ("producer", "consumer") from a
// report.
func (r *iggoReport) figureOf(kind string) (Figure, error) {
	var f Figure
	var longest float64
	n := 0
	for _, a := range r.Actors {
		if a.Kind != kind {
			continue
		}
		n++
		f.Messages += a.Summary.TotalMessages
		longest = max(longest, a.Summary.TotalTimeSecs)
	}
	if n == 0 || longest <= 0 {
		return f, fmt.Errorf("report has no measured %s", kind)
	}
	f.MsgsPerSec = float64(f.Messages) / longest
	for _, g := range r.Groups {
		if g.Kind == kind {
			f.P50Ms, f.P99Ms = g.Summary.Latency.P50, g.Summary.Latency.P99
		}
	}
	return f, nil
}

// readIggoReport reads the one report.json `iggo bench -o dir` wrote.
func readIggoReport(dir string) (*iggoReport, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*", "report.json"))
	if err != nil {
		return nil, err
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("want one report.json under %s, found %d", dir, len(m))
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		return nil, err
	}
	var r iggoReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", m[0], err)
	}
	return &r, nil
}

// iggoBench runs `iggo --tcp-server-address addr bench <args> -o <dir>
// --progress none` and returns its report. name names the log and the
// output directory.
func (w *work) iggoBench(ctx context.Context, g Iggo, name, addr string, args ...string) (*iggoReport, error) {
	out := w.path("reports", name)
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	full := append([]string{"--tcp-server-address", addr, "bench"}, args...)
	full = append(full, "--progress", "none", "--no-charts", "-o", out)
	if err := w.run(ctx, "iggo-bench", g.cli(), full...); err != nil {
		return nil, err
	}
	return readIggoReport(out)
}

// topicMessages is the message count of bench-stream-1/topic-1 on addr.
func topicMessages(ctx context.Context, addr string) (uint64, error) {
	c, err := dialIggo(ctx, addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	td, err := c.GetTopic(ctx, wire.MustNamedID("bench-stream-1"), wire.MustNamedID("topic-1"))
	if err != nil {
		return 0, err
	}
	return td.MessagesCount, nil
}
