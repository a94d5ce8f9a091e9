// Package cli runs the built iggo binary against a real iggo-server process
// (started with tests/harness): every command group with its output, bad
// input with its message and exit code, and every benchmark kind. Each test
// file starts one server and runs its cases as subtests against it.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// Exit codes documented in cmd/iggo/README.md.
const (
	exitOK         = 0
	exitServer     = 1
	exitUsage      = 2
	exitConnection = 3
	exitLocal      = 4
)

var (
	iggoOnce sync.Once
	iggoPath string
	iggoErr  error
)

// iggoBinary builds cmd/iggo once per test binary (IGGO_CLI_BINARY
// overrides it with a prebuilt one).
func iggoBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("IGGO_CLI_BINARY"); p != "" {
		return p
	}
	iggoOnce.Do(func() {
		root, err := harness.RepoRoot()
		if err != nil {
			iggoErr = err
			return
		}
		dir, err := os.MkdirTemp("", "iggo-cli-bin-")
		if err != nil {
			iggoErr = err
			return
		}
		iggoPath = filepath.Join(dir, "iggo")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-checklinkname=0", "-o", iggoPath, "./cmd/iggo")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			iggoErr = fmt.Errorf("building iggo: %v\n%s", err, out)
		}
	})
	if iggoErr != nil {
		t.Fatal(iggoErr)
	}
	return iggoPath
}

// cliEnv runs the iggo binary against one server with a private config
// directory (IGGO_HOME).
type cliEnv struct {
	bin  string
	srv  *harness.Server
	home string
	// env adds KEY=value variables to every run.
	env []string
}

func newCLI(t *testing.T, srv *harness.Server) *cliEnv {
	t.Helper()
	return &cliEnv{bin: iggoBinary(t), srv: srv, home: t.TempDir()}
}

// withHome is a copy of e with its own empty config directory.
func (e *cliEnv) withHome(t *testing.T) *cliEnv {
	c := *e
	c.home = t.TempDir()
	c.env = append([]string(nil), e.env...)
	return &c
}

type result struct {
	code     int
	out, err string
	args     []string
}

func (r result) String() string {
	return fmt.Sprintf("iggo %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, r.out, r.err)
}

// exec runs exactly args with stdin; the process is killed if it outlives
// two minutes.
func (e *cliEnv) exec(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") && !strings.HasPrefix(kv, "IGGO_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, "IGGO_HOME="+e.home), e.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running iggo %v: %v", args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("iggo %v did not finish within 2 minutes", args)
	}
	return result{code: code, out: out.String(), err: errb.String(), args: args}
}

// run adds the server address.
func (e *cliEnv) run(t testing.TB, args ...string) result {
	t.Helper()
	return e.exec(t, "", append([]string{"--tcp-server-address", e.srv.Addr}, args...)...)
}

// runIn is run with stdin.
func (e *cliEnv) runIn(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	return e.exec(t, stdin, append([]string{"--tcp-server-address", e.srv.Addr}, args...)...)
}

// root adds the address and the root credentials.
func (e *cliEnv) root(t testing.TB, args ...string) result {
	t.Helper()
	return e.run(t, append([]string{"-u", "iggy", "-p", "iggy"}, args...)...)
}

// ok runs as root and fails the test unless the command succeeded with
// nothing on stderr; it returns stdout.
func (e *cliEnv) ok(t testing.TB, args ...string) string {
	t.Helper()
	r := e.root(t, args...)
	if r.code != exitOK || r.err != "" {
		t.Fatalf("want success:\n%v", r)
	}
	return r.out
}

// okIn is ok with stdin.
func (e *cliEnv) okIn(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	r := e.runIn(t, stdin, append([]string{"-u", "iggy", "-p", "iggy"}, args...)...)
	if r.code != exitOK || r.err != "" {
		t.Fatalf("want success:\n%v", r)
	}
	return r.out
}

// fails runs as root and checks the failure.
func (e *cliEnv) fails(t testing.TB, code int, parts []string, args ...string) result {
	t.Helper()
	r := e.root(t, args...)
	expectFailure(t, r, code, parts...)
	return r
}

// expectFailure checks the exit code, that stderr is one "error: " line
// (plus cobra's usage hint for parse errors) holding every part, and that
// stdout carries no result (only the "Executing ..."/"Running ..." status
// line printed before the request).
func expectFailure(t testing.TB, r result, code int, parts ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("want exit %d:\n%v", code, r)
	}
	if !strings.HasPrefix(r.err, "error: ") {
		t.Fatalf("stderr does not start with 'error: ':\n%v", r)
	}
	lines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
	if len(lines) > 2 || (len(lines) == 2 && !strings.HasPrefix(lines[1], "Run 'iggo ")) {
		t.Fatalf("stderr is not one error line:\n%v", r)
	}
	for _, p := range parts {
		if !strings.Contains(r.err, p) {
			t.Fatalf("stderr lacks %q:\n%v", p, r)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
		if l != "" && !strings.HasPrefix(l, "Executing ") && !strings.HasPrefix(l, "Running ") {
			t.Fatalf("a failed command printed a result:\n%v", r)
		}
	}
}

func mustContain(t testing.TB, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("output lacks %q:\n%s", p, s)
		}
	}
}

func mustNotContain(t testing.TB, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(s, p) {
			t.Fatalf("output holds %q:\n%s", p, s)
		}
	}
}

// rows parses "-l list" output into its |-separated fields.
func rows(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, strings.Split(l, "|"))
		}
	}
	return out
}

// cell finds the value of a two-column property table row.
func cell(t testing.TB, table, property string) string {
	t.Helper()
	for _, l := range strings.Split(table, "\n") {
		f := strings.Split(l, "|")
		if len(f) >= 3 && strings.TrimSpace(f[1]) == property {
			return strings.TrimSpace(f[2])
		}
	}
	t.Fatalf("no %q row in:\n%s", property, table)
	return ""
}

// partitionCounts reads the per-partition message counts from `topic get`.
func partitionCounts(t testing.TB, e *cliEnv, stream, topic string) map[int]int {
	t.Helper()
	out := e.ok(t, "topic", "get", stream, topic)
	counts := map[int]int{}
	inParts := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "|")
		if len(f) < 7 {
			continue
		}
		if strings.TrimSpace(f[1]) == "Partition" {
			inParts = true
			continue
		}
		if !inParts {
			continue
		}
		id, err1 := strconv.Atoi(strings.TrimSpace(f[1]))
		n, err2 := strconv.Atoi(strings.TrimSpace(f[6]))
		if err1 != nil || err2 != nil {
			t.Fatalf("partition row %q", l)
		}
		counts[id] = n
	}
	return counts
}

// startServer starts the one server of a test file.
func startServer(t *testing.T) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true})
}
