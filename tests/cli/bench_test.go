package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// benchReport is the part of report.json the test checks.
type benchReport struct {
	Params struct {
		Kind     string `json:"benchmark_kind"`
		Command  string `json:"bench_command"`
		Address  string `json:"server_address"`
		Streams  int    `json:"streams"`
		Parts    int    `json:"partitions"`
		Producer int    `json:"producers"`
		Consumer int    `json:"consumers"`
	} `json:"params"`
	Hardware struct {
		Cores int `json:"cpu_cores"`
	} `json:"hardware"`
	Server *struct {
		Version  string  `json:"server_version"`
		Messages uint64  `json:"messages_count"`
		Streams  uint32  `json:"streams_count"`
		CPU      float64 `json:"cpu_usage"`
	} `json:"server_stats"`
	Groups []benchMetrics `json:"group_metrics"`
	Actors []benchMetrics `json:"individual_metrics"`
}

type benchMetrics struct {
	Kind    string `json:"actor_kind"`
	ID      int    `json:"actor_id"`
	Stream  string `json:"stream"`
	Actors  int    `json:"actors"`
	Summary struct {
		Seconds   float64 `json:"total_time_secs"`
		UserBytes uint64  `json:"total_user_data_bytes"`
		Messages  uint64  `json:"total_messages"`
		Batches   uint64  `json:"total_message_batches"`
		MBps      float64 `json:"throughput_megabytes_per_second"`
		MsgPerSec float64 `json:"throughput_messages_per_second"`
		Latency   struct {
			P50     float64 `json:"p50_ms"`
			P99     float64 `json:"p99_ms"`
			Max     float64 `json:"max_ms"`
			Avg     float64 `json:"avg_ms"`
			Samples uint64  `json:"samples"`
		} `json:"latency"`
	} `json:"summary"`
}

// TestBench runs every benchmark kind briefly against one real server and
// checks the report and charts: every message sent is counted once, the
// consumers receive all of it, the server holds exactly that many, the
// figures are consistent, and the benchmark's streams are gone afterwards.
func TestBench(t *testing.T) {
	srv := startServer(t)
	e := newCLI(t, srv)
	const (
		batches = 8
		perB    = 50
		size    = 200
	)
	for _, c := range []struct {
		kind       string
		alias      string
		args       []string
		produced   uint64 // messages the producing actors send
		consumed   uint64 // messages the consumers receive
		seeded     uint64 // messages put in before the measured run
		actorKinds map[string]int
	}{
		{"pinned-producer", "pp", []string{"-p", "2"}, 2 * batches * perB, 0, 0, map[string]int{"producer": 2}},
		{"pinned-consumer", "pc", []string{"-c", "2"}, 0, 2 * batches * perB, 2 * batches * perB, map[string]int{"consumer": 2}},
		{"pinned-producer-and-consumer", "ppc", []string{"-p", "2", "-c", "2"}, 2 * batches * perB, 2 * batches * perB, 0, map[string]int{"producer": 2, "consumer": 2}},
		{"balanced-producer", "bp", []string{"-p", "2", "-a", "3"}, 2 * batches * perB, 0, 0, map[string]int{"producer": 2}},
		{"balanced-consumer-group", "bcg", []string{"-c", "2", "-a", "3"}, 0, 2 * batches * perB, 2 * batches * perB, map[string]int{"consumer": 2}},
		{"balanced-producer-and-consumer-group", "bpcg", []string{"-p", "2", "-c", "2", "-a", "3"}, 2 * batches * perB, 2 * batches * perB, 0, map[string]int{"producer": 2, "consumer": 2}},
		{"end-to-end-producing-consumer", "e2e", []string{"-p", "2"}, 2 * batches * perB, 0, 0, map[string]int{"producing_consumer": 2}},
	} {
		t.Run(c.alias, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"bench", c.alias}, c.args...)
			args = append(args, "-b", strconv.Itoa(batches), "-P", strconv.Itoa(perB), "-m", strconv.Itoa(size),
				"-o", dir, "--progress", "lines", "--progress-interval", "100ms", "--durability", "replicated")
			out := e.ok(t, args...)
			mustContain(t, out, "Running "+c.kind+" against "+srv.Addr, "Benchmark: "+c.kind+", ", "1 topic per stream (durability replicated), ", "Report and charts:", "p99.9")
			if c.seeded > 0 {
				mustContain(t, out, "Seeding ")
			}
			reports, _ := filepath.Glob(filepath.Join(dir, "*", "report.json"))
			if len(reports) != 1 {
				t.Fatalf("report files: %v\n%s", reports, out)
			}
			runDir := filepath.Dir(reports[0])
			if !strings.HasPrefix(filepath.Base(runDir), c.alias+"_") {
				t.Fatalf("run directory %s", runDir)
			}
			for _, f := range []string{"report.json", "throughput.png", "latency.png"} {
				path := filepath.Join(runDir, f)
				mustContain(t, out, "  "+path+"\n")
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasSuffix(f, ".png") && (len(b) < 2000 || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))) {
					t.Fatalf("%s is not a chart (%d bytes)", f, len(b))
				}
			}
			var rep benchReport
			b, _ := os.ReadFile(reports[0])
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("report.json: %v", err)
			}
			if rep.Params.Kind != c.kind || rep.Params.Address != srv.Addr || rep.Hardware.Cores < 1 {
				t.Fatalf("report params %+v", rep.Params)
			}
			// The command is recorded without the password.
			if !strings.Contains(rep.Params.Command, "-u iggy -p ****** bench "+c.alias) || strings.Contains(rep.Params.Command, "-p iggy") {
				t.Fatalf("recorded command %q", rep.Params.Command)
			}
			// Every actor did its share, and the group totals add up.
			kinds := map[string]int{}
			sums := map[string]uint64{}
			for _, a := range rep.Actors {
				kinds[a.Kind]++
				sums[a.Kind] += a.Summary.Messages
				// Balanced kinds share one budget (and one group's
				// partitions): in a run this short one actor may do it all.
				if a.Summary.Messages == 0 && strings.HasPrefix(c.kind, "balanced") {
					continue
				}
				checkMetrics(t, "actor "+a.Kind+" #"+strconv.Itoa(a.ID), a, perB, size)
				if a.Stream == "" {
					t.Fatalf("actor %s #%d without a stream", a.Kind, a.ID)
				}
			}
			for k, n := range c.actorKinds {
				if kinds[k] != n {
					t.Fatalf("actors %v, want %v", kinds, c.actorKinds)
				}
			}
			var produced, consumed uint64
			for _, g := range rep.Groups {
				if g.Summary.Messages != sums[g.Kind] || g.Actors != kinds[g.Kind] {
					t.Fatalf("group %s: %d messages from %d actors; actors sum to %d from %d", g.Kind, g.Summary.Messages, g.Actors, sums[g.Kind], kinds[g.Kind])
				}
				checkMetrics(t, "group "+g.Kind, g, perB, size)
				switch g.Kind {
				case "producer", "producing_consumer":
					produced += g.Summary.Messages
				case "consumer":
					consumed += g.Summary.Messages
				}
			}
			// (e2e actors count a batch once they have polled it back.)
			if produced != c.produced || consumed != c.consumed {
				t.Fatalf("produced %d, consumed %d; want %d and %d", produced, consumed, c.produced, c.consumed)
			}
			// The server, asked after the actors finished, holds exactly
			// what was sent (the previous runs' streams are deleted).
			if rep.Server == nil || rep.Server.Version != "0.9.0-iggo" {
				t.Fatalf("server stats %+v", rep.Server)
			}
			if want := c.produced + c.seeded; rep.Server.Messages != want {
				t.Fatalf("server counts %d messages, the run sent %d", rep.Server.Messages, want)
			}
			// The benchmark deleted its streams.
			if left := e.ok(t, "-q", "stream", "list", "-l", "list"); strings.Contains(left, "bench-stream-") {
				t.Fatalf("streams left behind:\n%s", left)
			}
		})
	}

	t.Run("durability reaches the server", func(t *testing.T) {
		e.ok(t, "bench", "pp", "-p", "1", "-b", "2", "-P", "10", "-m", "100", "--no-output", "--progress", "none",
			"--durability", "persisted", "--consumer-offset-durability", "persisted", "--keep-streams")
		get := e.ok(t, "topic", "get", "bench-stream-1", "topic-1")
		mustContain(t, get, "durability=persisted", "consumer_offset_durability=persisted")
		if cell(t, get, "Topic message count") != "20" {
			t.Fatalf("kept stream:\n%s", get)
		}
		e.ok(t, "stream", "delete", "bench-stream-1")
	})

	t.Run("credentials from a login session", func(t *testing.T) {
		// Logged in as a user without permissions, the benchmark runs as
		// that user (and is refused), not as the iggy/iggy default.
		e.ok(t, "user", "create", "viewer", "viewer-pw")
		defer e.ok(t, "user", "delete", "viewer")
		h := e.withHome(t)
		if r := h.run(t, "-u", "viewer", "-p", "viewer-pw", "login", "1h"); r.code != exitOK {
			t.Fatalf("login as viewer:\n%v", r)
		}
		args := []string{"bench", "e2e", "-p", "1", "-b", "2", "-P", "10", "-m", "100", "--no-output", "--progress", "none"}
		expectFailure(t, h.run(t, args...), exitServer, "permission denied (Iggy error 41 Unauthorized)")
		h.run(t, "logout")
		h.ok(t, "login", "1h") // as root
		r := h.run(t, args...)
		if r.code != exitOK || r.err != "" {
			t.Fatalf("bench with root's session:\n%v", r)
		}
		mustContain(t, r.out, "Producing consumers total: ")
		h.run(t, "logout")
	})

	t.Run("bad parameters", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			part string
		}{
			{[]string{"bench", "pp", "-p", "3", "-s", "2", "--no-output"}, "needs a stream per producer"},
			{[]string{"bench", "pp", "-m", "0"}, "--message-size"},
			{[]string{"bench", "bp", "-T", "1GB", "-b", "10"}, "not both"},
			{[]string{"bench", "bcg", "-g", "3"}, "--consumer-groups must be"},
			{[]string{"bench", "pp", "--rate-limit", "fast"}, "--rate-limit"},
			{[]string{"bench", "pp", "--progress", "loud"}, "invalid --progress"},
			{[]string{"bench", "pp", "--consumers", "2"}, "unknown flag: --consumers"},
			{[]string{"bench", "pp", "--durability", "eventually", "-b", "1", "--no-output"}, "durability"},
		} {
			expectFailure(t, e.root(t, c.args...), exitUsage, c.part)
		}
		expectFailure(t, e.run(t, "-u", "iggy", "-p", "bad", "bench", "pp", "-p", "1", "-b", "1", "--no-output"), exitServer, "invalid username or password")
	})
}

// checkMetrics checks one summary for consistency: whole batches of perB
// messages of size bytes, positive throughput, ordered latencies and one
// latency sample per batch.
func checkMetrics(t *testing.T, who string, m benchMetrics, perB, size int) {
	t.Helper()
	s := m.Summary
	if s.Messages == 0 || s.Batches == 0 || s.Messages != s.Batches*uint64(perB) || s.UserBytes != s.Messages*uint64(size) {
		t.Fatalf("%s: %d messages in %d batches, %d user bytes", who, s.Messages, s.Batches, s.UserBytes)
	}
	if s.Seconds <= 0 || s.MBps <= 0 || s.MsgPerSec <= 0 {
		t.Fatalf("%s: %v s, %v MB/s, %v msg/s", who, s.Seconds, s.MBps, s.MsgPerSec)
	}
	l := s.Latency
	if l.Samples != s.Batches || l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max || l.Avg <= 0 || l.Avg > l.Max {
		t.Fatalf("%s: latency %+v for %d batches", who, l, s.Batches)
	}
}
