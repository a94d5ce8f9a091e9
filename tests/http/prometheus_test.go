package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestPrometheusScrape starts Debian's prometheus against a node (bearer
// authentication with a personal access token, as Iggy's /metrics wants),
// sends messages over TCP and checks through Prometheus's own query API
// that the scraped message counter equals what was sent. prometheus must
// be installed (.ci/run installs it); without it the test fails.
func TestPrometheusScrape(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatalf("prometheus is not installed (apt-get install -y prometheus): %v", err)
	}
	s := start(t)
	hc := root(t, s)
	pat := decode[obj](t, expect(t, hc, "POST", "/personal-access-tokens", obj{"name": "scraper", "expiry": 0}, 200))["token"].(string)

	// A scrape by hand first: Iggy's names, auth required.
	anon := *hc
	anon.Token = ""
	errorOf(t, expect(t, &anon, "GET", "/metrics", nil, 401), 77, "access_token_missing")
	body := string(expect(t, hc, "GET", "/metrics", nil, 200).Body)
	for _, name := range []string{"# TYPE streams gauge", "# TYPE messages gauge", "# TYPE users gauge", "# TYPE clients gauge",
		"# TYPE http_requests_total counter", "iggo_request_duration_seconds", "go_goroutines", "iggo_shard_inbox_depth", "iggo_ready 1"} {
		if !strings.Contains(body, name) {
			t.Fatalf("/metrics lacks %q", name)
		}
	}

	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: iggo
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: %q
    static_configs:
      - targets: [%q]
`, pat, s.HTTPAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_, _ = cmd.Process.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			t.Logf("prometheus log:\n%s", b)
		}
	})

	tc := s.Root(t)
	ctx := ctxT(t)
	if _, err := tc.CreateStream(ctx, "metered", nil); err != nil {
		t.Fatal(err)
	}
	sid, tid := wire.MustNamedID("metered"), wire.MustNamedID("t")
	if _, err := tc.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, PartitionsCount: 2, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	const batches, per = 7, 50
	for i := 0; i < batches; i++ {
		msgs := make([]wire.Message, per)
		for j := range msgs {
			msgs[j] = wire.Message{ID: wire.Uint128{Lo: uint64(i*per + j + 1)}, Payload: []byte("payload-" + strconv.Itoa(j))}
		}
		if _, err := tc.SendMessages(ctx, sid, tid, wire.Balanced(), msgs); err != nil {
			t.Fatal(err)
		}
	}
	want := float64(batches * per)

	query := func(q string) (float64, bool) {
		u := "http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(q)
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(qctx, "GET", u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, false
		}
		defer resp.Body.Close()
		var out struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Value []any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&out) != nil || out.Status != "success" || len(out.Data.Result) != 1 {
			return 0, false
		}
		v, err := strconv.ParseFloat(out.Data.Result[0].Value[1].(string), 64)
		return v, err == nil
	}
	deadline := time.Now().Add(90 * time.Second)
	var last float64
	for {
		v, ok := query(`sum(iggo_messages_appended_total{job="iggo",stream="0"})`)
		if ok && v == want {
			break
		}
		if ok {
			last = v
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus reports %v appended messages, want %v", last, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if v, ok := query(`messages{job="iggo"}`); !ok || v != want {
		t.Fatalf("Iggy's messages gauge through prometheus: %v %v, want %v", v, ok, want)
	}
	if v, ok := query(`up{job="iggo"}`); !ok || v != 1 {
		t.Fatalf("up = %v %v", v, ok)
	}
}

// TestMetricsOpenAddress: http.metrics.open_address serves the endpoint
// without a token on its own listener; the API's endpoint still needs one.
func TestMetricsOpenAddress(t *testing.T) {
	s := start(t, "IGGY_HTTP_METRICS_OPEN_ADDRESS=127.0.0.1:0")
	if s.MetricsAddr == "" {
		t.Fatal("runtime file names no metrics address")
	}
	resp, err := http.Get("http://" + s.MetricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	_, _ = fmt.Fprint(&b, resp.Status)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("open metrics: %s", b.String())
	}
	resp, err = http.Get(s.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("API metrics without a token: %d", resp.StatusCode)
	}
}

// TestDeployMonitoringFiles: deploy/prometheus/prometheus.yml passes
// promtool, and every metric the Grafana dashboard queries is one a node
// exports.
func TestDeployMonitoringFiles(t *testing.T) {
	repo, err := harness.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("promtool (Debian's prometheus package) is not installed: %v", err)
	}
	if out, err := exec.Command(promtool, "check", "config", filepath.Join(repo, "deploy/prometheus/prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(repo, "deploy/grafana/iggo-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	s := start(t)
	hc := root(t, s)
	// A send and a group so that every family has a sample.
	tc := s.Root(t)
	if _, err := tc.CreateStream(ctxT(t), "d", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.CreateTopic(ctxT(t), wire.CreateTopic{StreamID: wire.MustNamedID("d"), PartitionsCount: 1, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tc.SendMessages(ctxT(t), wire.MustNamedID("d"), wire.MustNamedID("t"), wire.Balanced(), []wire.Message{{Payload: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	exposition := string(expect(t, hc, "GET", "/metrics", nil, 200).Body)
	name := regexp.MustCompile(`[a-z_][a-z0-9_]*\{`)
	checked := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				fam := strings.TrimSuffix(m, "{")
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					fam = strings.TrimSuffix(fam, suf)
				}
				// Gossip runs in cluster mode only.
				if !strings.HasPrefix(fam, "iggo_gossip_") && !strings.Contains(exposition, "# TYPE "+fam+" ") {
					t.Errorf("dashboard queries %s (in %q), which the node does not export", fam, tg.Expr)
				}
				checked++
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d metric references found in the dashboard", checked)
	}
}
