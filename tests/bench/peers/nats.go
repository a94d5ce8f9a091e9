package peers

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// JSMode is how the nats CLI publishes: `nats bench js pub <Name> --batch
// <Batch>` (Name sync, async, atomic or fast).
type JSMode struct {
	Name  string `json:"name"`
	Batch int    `json:"batch"`
}

func (m JSMode) String() string { return fmt.Sprintf("%s:%d", m.Name, m.Batch) }

// Label names the mode in tables and charts.
func (m JSMode) Label() string {
	switch m.Name {
	case "fast":
		return fmt.Sprintf("JetStream fast batch %d", m.Batch)
	case "async":
		return fmt.Sprintf("JetStream async %d", m.Batch)
	case "atomic":
		return fmt.Sprintf("JetStream atomic batch %d", m.Batch)
	}
	return "JetStream " + m.Name
}

// ParseJSModes parses "fast:1000,async:500".
func ParseJSModes(s string) ([]JSMode, error) {
	var out []JSMode
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, batch, ok := strings.Cut(part, ":")
		switch name {
		case "sync", "async", "atomic", "fast":
		default:
			return nil, fmt.Errorf("JetStream mode %q: want sync, async, atomic or fast", name)
		}
		m := JSMode{Name: name, Batch: 1}
		if ok {
			n, err := strconv.Atoi(batch)
			if err != nil || n < 1 || n > 100_000 {
				return nil, fmt.Errorf("JetStream mode %q: batch must be 1..100000", part)
			}
			m.Batch = n
		} else if name != "sync" {
			return nil, fmt.Errorf("JetStream mode %q: give a batch, e.g. %s:500", part, name)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no JetStream mode in %q", s)
	}
	return out, nil
}

// jsAckTimeout is the nats CLI's --timeout for benchmark runs.
const jsAckTimeout = "60s"

// natsPorts are one nats-server's ports.
type natsPorts struct{ client, cluster, monitor int }

func natsPortsOf(base, node int) natsPorts {
	return natsPorts{client: base + node, cluster: base + 100 + node, monitor: base + 200 + node}
}

// natsConfig is node's (0-based) configuration in an n-node set on
// loopback: JetStream with its own store; syncAlways sets sync_interval:
// always (fsync after every write); n > 1 adds a cluster with routes to
// every other node.
func natsConfig(node, n, base int, storeDir string, syncAlways bool) string {
	p := natsPortsOf(base, node)
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: \"peers-%d\"\n", node+1)
	fmt.Fprintf(&b, "listen: \"127.0.0.1:%d\"\n", p.client)
	fmt.Fprintf(&b, "http: \"127.0.0.1:%d\"\n", p.monitor)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n", storeDir)
	if syncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	if n > 1 {
		fmt.Fprintf(&b, "cluster {\n  name: \"iggo-peers\"\n  listen: \"127.0.0.1:%d\"\n  routes: [\n", p.cluster)
		for i := 0; i < n; i++ {
			if i != node {
				fmt.Fprintf(&b, "    \"nats-route://127.0.0.1:%d\"\n", natsPortsOf(base, i).cluster)
			}
		}
		b.WriteString("  ]\n}\n")
	}
	return b.String()
}

// natsSet is n nats-servers this run started.
type natsSet struct {
	procs []*proc
	base  int
	dir   string
}

func (s *natsSet) url(node int) string {
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(natsPortsOf(s.base, node).client))
}

func (s *natsSet) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	_ = os.RemoveAll(s.dir)
}

// startNATS starts n nats-servers under <work>/<name> and waits until
// every one reports healthy and JetStream answers.
func (w *work) startNATS(ctx context.Context, t Tools, name string, n, base int, syncAlways bool) (*natsSet, error) {
	s := &natsSet{base: base, dir: w.path(name)}
	for i := 0; i < n; i++ {
		dir := w.path(name, fmt.Sprintf("node-%d", i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			s.stop()
			return nil, err
		}
		conf := dir + "/nats.conf"
		if err := os.WriteFile(conf, []byte(natsConfig(i, n, base, dir+"/store", syncAlways)), 0o644); err != nil {
			s.stop()
			return nil, err
		}
		p, err := w.start(fmt.Sprintf("%s-%d", name, i+1), t.NATSServer, []string{"-c", conf}, nil)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.procs = append(s.procs, p)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for i, p := range s.procs {
		if err := waitHealthz(ctx, natsPortsOf(base, i).monitor, p, deadline); err != nil {
			s.stop()
			return nil, err
		}
	}
	// JetStream's meta leader answers account info once elected.
	var err error
	for time.Now().Before(deadline) {
		if err = w.run(ctx, name+"-check", t.NATS, "--server", s.url(0), "account", "info"); err == nil {
			return s, nil
		}
		if serr := sleepCtx(ctx, 250*time.Millisecond); serr != nil {
			err = serr
			break
		}
	}
	s.stop()
	return nil, fmt.Errorf("JetStream on %s not ready: %w", s.url(0), err)
}

func waitHealthz(ctx context.Context, port int, p *proc, deadline time.Time) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	hc := &http.Client{Timeout: 2 * time.Second}
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("nats-server %s exited: %v\n%s", p.name, p.err, p.tail(20))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("nats-server %s not healthy: %v", p.name, last)
}

// jsBench is one `nats bench js pub` run.
type jsBench struct {
	mode      JSMode
	url       string
	replicas  int
	producers int
	messages  uint64
	size      int
}

// natsBench runs b, reads its CSV and deletes the stream afterwards.
func (w *work) natsBench(ctx context.Context, t Tools, name string, b jsBench) (Figure, error) {
	csvPath := w.path("reports", name+".csv")
	if err := os.MkdirAll(w.path("reports"), 0o755); err != nil {
		return Figure{}, err
	}
	_ = os.Remove(csvPath)
	// Room for every message with its headers and index, twice over.
	maxBytes := 2*b.messages*uint64(b.size+128) + 64<<20
	// --timeout bounds each wait for an acknowledgement (the CLI's default
	// of 5 s fails async publishing with sync_interval: always on a
	// loaded machine: "JS PubAsync ack timeout"); the run's own bound is
	// the context.
	args := []string{"--server", b.url, "--timeout", jsAckTimeout, "bench", "js", "pub", b.mode.Name}
	if b.mode.Name != "sync" {
		args = append(args, "--batch", strconv.Itoa(b.mode.Batch))
	}
	args = append(args, "bench.peers", "--create", "--storage", "file", "--replicas", strconv.Itoa(b.replicas),
		"--maxbytes", strconv.FormatUint(maxBytes, 10), "--purge", "--msgs", strconv.FormatUint(b.messages, 10),
		"--size", strconv.Itoa(b.size), "--clients", strconv.Itoa(b.producers), "--no-progress", "--csv", csvPath)
	err := w.run(ctx, "nats-bench", t.NATS, args...)
	if err != nil && ctx.Err() == nil {
		// A JetStream cluster that just started may not have elected the
		// stream's leader yet on a loaded machine: one more attempt after a
		// pause, reported, before the measurement counts as failed.
		fmt.Fprintf(w.log, "   %s: JetStream bench failed, retrying once: %v\n", name, firstLine(err))
		select {
		case <-time.After(3 * time.Second):
		case <-ctx.Done():
		}
		_ = os.Remove(csvPath)
		err = w.run(ctx, "nats-bench", t.NATS, args...)
	}
	// The stream goes either way, so the next run starts empty and the
	// disk does not fill up.
	rmCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if rerr := w.run(rmCtx, "nats-bench", t.NATS, "--server", b.url, "stream", "rm", "benchstream", "-f"); rerr != nil && err == nil {
		fmt.Fprintf(w.log, "warning: removing the benchmark stream: %v\n", rerr)
	}
	cancel()
	if err != nil {
		return Figure{}, err
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return Figure{}, err
	}
	defer f.Close()
	fig, err := parseNATSCSV(f, b.size)
	if err != nil {
		return Figure{}, fmt.Errorf("%s: %w", csvPath, err)
	}
	if fig.Messages != b.messages {
		return Figure{}, fmt.Errorf("%s: the clients published %d messages, want %d", csvPath, fig.Messages, b.messages)
	}
	return fig, nil
}

// parseNATSCSV reads the nats CLI's --csv output (a header line starting
// "#RunID", one line per client; latencies in µs): messages are the
// clients' MsgBytes over the message size, throughput those over the
// longest client's DurationSecs, p50 and p99 the worst client's.
func parseNATSCSV(r io.Reader, size int) (Figure, error) {
	rd := csv.NewReader(r)
	rd.FieldsPerRecord = -1
	rows, err := rd.ReadAll()
	if err != nil {
		return Figure{}, err
	}
	if len(rows) < 2 {
		return Figure{}, fmt.Errorf("no client lines")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimPrefix(strings.TrimSpace(h), "#")] = i
	}
	for _, k := range []string{"ClientID", "MsgBytes", "DurationSecs", "P50LatencyMicroSecs", "P99LatencyMicroSecs"} {
		if _, ok := col[k]; !ok {
			return Figure{}, fmt.Errorf("no column %s in %v", k, rows[0])
		}
	}
	var f Figure
	var longest float64
	for _, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			return Figure{}, fmt.Errorf("line %v: %d fields, header has %d", row, len(row), len(rows[0]))
		}
		num := func(k string) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(row[col[k]]), 64)
			if err != nil {
				return 0, fmt.Errorf("client %s: %s: %w", row[col["ClientID"]], k, err)
			}
			return v, nil
		}
		bytes, err := num("MsgBytes")
		if err != nil {
			return Figure{}, err
		}
		dur, err := num("DurationSecs")
		if err != nil {
			return Figure{}, err
		}
		p50, err := num("P50LatencyMicroSecs")
		if err != nil {
			return Figure{}, err
		}
		p99, err := num("P99LatencyMicroSecs")
		if err != nil {
			return Figure{}, err
		}
		f.Messages += uint64(bytes) / uint64(size)
		longest = max(longest, dur)
		f.P50Ms, f.P99Ms = max(f.P50Ms, p50/1000), max(f.P99Ms, p99/1000)
	}
	if longest <= 0 {
		return Figure{}, fmt.Errorf("no client ran for a measurable time")
	}
	f.MsgsPerSec = float64(f.Messages) / longest
	return f, nil
}
