package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iggo/iggo/tests/harness"
)

// TestTransports: the CLI over TLS (--tcp-tls-enabled, --tls-ca-file) and
// WSS (--transport ws, --websocket-*), iggo bench --transport ws (the
// report names wss), a plaintext attempt on the TLS port (exit 3) and an
// unknown --transport (exit 2); QUIC is TestQUICTransport's.
func TestTransports(t *testing.T) {
	srv := harness.Start(t, harness.Options{DefaultRoot: true, Transport: harness.TCPTLS, Serve: []harness.Transport{harness.WSS}})
	e := newCLI(t, srv)
	ca := srv.PKI.CAFile
	login := []string{"-u", "iggy", "-p", "iggy"}
	tlsArgs := append([]string{"--tcp-server-address", srv.Addr, "--tcp-tls-enabled", "--tls-ca-file", ca}, login...)
	wsArgs := append([]string{"--transport", "ws", "--websocket-server-address", srv.WSAddr, "--websocket-tls-enabled", "--tls-ca-file", ca}, login...)

	if r := e.exec(t, "", append(tlsArgs, "stream", "create", "over-tls")...); r.code != exitOK {
		t.Fatalf("stream create over TLS:\n%v", r)
	}
	r := e.exec(t, "", append(wsArgs, "stream", "list")...)
	if r.code != exitOK {
		t.Fatalf("stream list over wss:\n%v", r)
	}
	mustContain(t, r.out, "over-tls")
	r = e.exec(t, "", append(wsArgs, "me")...)
	if r.code != exitOK {
		t.Fatalf("me over wss:\n%v", r)
	}
	mustContain(t, r.out, "WebSocket")

	dir := t.TempDir()
	benchArgs := append([]string{"--websocket-tls-enabled", "--tls-ca-file", ca}, login...)
	r = e.exec(t, "", append(benchArgs, "bench", "pp", "--transport", "ws", "--server-address", srv.WSAddr, "-p", "1", "-b", "5", "-P", "10",
		"-m", "100", "-o", dir, "--progress", "none", "--no-charts")...)
	if r.code != exitOK {
		t.Fatalf("bench over wss:\n%v", r)
	}
	reports, _ := filepath.Glob(filepath.Join(dir, "*", "report.json"))
	if len(reports) != 1 {
		t.Fatalf("report files %v", reports)
	}
	b, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Params struct {
			Transport string `json:"transport"`
		} `json:"params"`
		Transport string `json:"transport"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Transport != "wss" && rep.Params.Transport != "wss" {
		t.Fatalf("report transport %q / %q, want wss:\n%s", rep.Transport, rep.Params.Transport, b)
	}

	plain := e.exec(t, "", append([]string{"--tcp-server-address", srv.Addr}, append(login, "stream", "list")...)...)
	if plain.code != exitConnection || strings.Contains(plain.out, "over-tls") {
		t.Fatalf("plaintext CLI on a TLS port:\n%v", plain)
	}
	expectFailure(t, e.exec(t, "", append(login, "--transport", "carrier-pigeon", "stream", "list")...), exitUsage, "want tcp, ws or quic")
}

// TestLocalClusterTLS: `iggo cluster up --tls` serves TLS with its own CA
// and prints a connect line that works; plaintext is refused.
func TestLocalClusterTLS(t *testing.T) {
	lc := newLocalCluster(t, 1)
	r := lc.up(t, 1, "--tls")
	if r.code != exitOK {
		t.Fatalf("up --tls:\n%v", r)
	}
	defer lc.run(t, "down", "--dir", lc.dir, "--purge")
	ca := filepath.Join(lc.dir, "certs", "ca.pem")
	mustContain(t, r.out, "Connect:  iggo --tcp-server-address "+lc.addr(0)+" --tcp-tls-enabled --tls-ca-file "+ca+" -u iggy -p iggy stream list")
	out := lc.e.exec(t, "", "--tcp-server-address", lc.addr(0), "--tcp-tls-enabled", "--tls-ca-file", ca, "-u", "iggy", "-p", "iggy", "stream", "create", "tls-kept")
	if out.code != exitOK {
		t.Fatalf("stream create over TLS:\n%v", out)
	}
	if r := lc.run(t, "status", "--dir", lc.dir, "-l", "list"); r.code != exitOK || !strings.Contains(r.out, "|running|") {
		t.Fatalf("status of a TLS cluster:\n%v", r)
	}
	if out := lc.e.exec(t, "", "--tcp-server-address", lc.addr(0), "-u", "iggy", "-p", "iggy", "stream", "list"); out.code != exitConnection {
		t.Fatalf("plaintext on the TLS node:\n%v", out)
	}
}
