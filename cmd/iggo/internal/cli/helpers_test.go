package cli

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/cmd/iggo/internal/fakeserver"
)

// harness runs CLI commands in-process against a fake server, with a
// private config directory.
type harness struct {
	t    *testing.T
	srv  *fakeserver.Server
	home string
	env  map[string]string
	exts []Extension
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	srv, err := fakeserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h := &harness{t: t, srv: srv, home: t.TempDir()}
	h.env = map[string]string{"IGGO_HOME": h.home}
	return h
}

type result struct {
	code     int
	out, err string
}

func (r result) String() string {
	return "exit " + strconv.Itoa(r.code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err
}

// run executes args (without global flags) as "iggo --tcp-server-address
// ADDR args...".
func (h *harness) run(args ...string) result {
	return h.runIn("", append([]string{"--tcp-server-address", h.srv.Addr()}, args...)...)
}

// runAs adds root credentials.
func (h *harness) runAs(args ...string) result {
	return h.run(append([]string{"-u", "iggy", "-p", "iggy"}, args...)...)
}

// runIn executes exactly args with stdin.
func (h *harness) runIn(stdin string, args ...string) result {
	h.t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	io := IO{In: strings.NewReader(stdin), Out: &out, Err: &errb, Getenv: func(k string) string { return h.env[k] }}
	code := runWith(ctx, args, io, h.exts)
	return result{code: code, out: out.String(), err: errb.String()}
}

// ok runs and fails the test unless the command succeeded silently on
// stderr.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	r := h.runAs(args...)
	if r.code != 0 || r.err != "" {
		h.t.Fatalf("iggo %s: %v", strings.Join(args, " "), r)
	}
	return r.out
}

func (h *harness) okIn(stdin string, args ...string) string {
	h.t.Helper()
	r := h.runIn(stdin, append([]string{"--tcp-server-address", h.srv.Addr(), "-u", "iggy", "-p", "iggy"}, args...)...)
	if r.code != 0 || r.err != "" {
		h.t.Fatalf("iggo %s: %v", strings.Join(args, " "), r)
	}
	return r.out
}

// fails runs and checks the exit code and that stderr holds every part.
func (h *harness) fails(code int, parts []string, args ...string) result {
	h.t.Helper()
	r := h.runAs(args...)
	h.expectFailure(r, code, parts...)
	return r
}

func (h *harness) expectFailure(r result, code int, parts ...string) {
	h.t.Helper()
	if r.code != code {
		h.t.Fatalf("want exit %d: %v", code, r)
	}
	if !strings.HasPrefix(r.err, "error: ") {
		h.t.Fatalf("stderr does not start with 'error: ': %v", r)
	}
	for _, p := range parts {
		if !strings.Contains(r.err, p) {
			h.t.Fatalf("stderr lacks %q: %v", p, r)
		}
	}
}

func mustContain(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("output lacks %q:\n%s", p, s)
		}
	}
}
