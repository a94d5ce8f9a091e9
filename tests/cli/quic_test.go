package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/iggo/iggo/tests/harness"
)

// TestQUICTransport: the CLI and the benchmark reach the server over QUIC
// with --transport quic; what the CLI created over QUIC is seen over TCP.
func TestQUICTransport(t *testing.T) {
	srv := harness.Start(t, harness.Options{DefaultRoot: true, Serve: []harness.Transport{harness.QUIC}})
	e := newCLI(t, srv)
	quic := []string{"--transport", "quic", "--quic-server-address", srv.QUICAddr, "-u", "iggy", "-p", "iggy"}
	r := e.exec(t, "", append(quic, "stream", "create", "over-quic")...)
	if r.code != exitOK {
		t.Fatalf("stream create over quic:\n%v", r)
	}
	mustContain(t, e.ok(t, "stream", "list"), "over-quic")
	r = e.exec(t, "", append(quic, "me")...)
	if r.code != exitOK {
		t.Fatalf("me over quic:\n%v", r)
	}
	mustContain(t, r.out, "QUIC")

	dir := t.TempDir()
	r = e.exec(t, "", append(quic, "bench", "pp", "-p", "1", "-b", "4", "-P", "50", "-m", "200", "-o", dir, "--no-charts", "--progress", "none")...)
	if r.code != exitOK {
		t.Fatalf("bench over quic:\n%v", r)
	}
	mustContain(t, r.out, "Running pinned-producer against "+srv.QUICAddr)
	reports, _ := filepath.Glob(filepath.Join(dir, "*", "report.json"))
	if len(reports) != 1 {
		t.Fatalf("reports %v", reports)
	}
	b, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Params struct {
			Transport string `json:"transport"`
		} `json:"params"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Params.Transport != "quic" {
		t.Fatalf("report transport %q (%v):\n%s", rep.Params.Transport, err, b[:min(len(b), 400)])
	}
}
