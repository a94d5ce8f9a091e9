package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuiltBinary builds cmd/iggo and runs it as a process: the same
// commands behave as in-process, and exit codes reach the shell.
func TestBuiltBinary(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the binary: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "iggo")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "github.com/iggo/iggo/cmd/iggo")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false -ldflags=-checklinkname=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h := newHarness(t)
	run := func(stdin string, args ...string) result {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "IGGO_HOME="+h.home, "IGGY_USERNAME=", "IGGY_PASSWORD=")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run %v: %v", args, err)
		}
		return result{code: code, out: out.String(), err: errb.String()}
	}
	g := []string{"--tcp-server-address", h.srv.Addr(), "-u", "iggy", "-p", "iggy"}
	if r := run("", append(g, "stream", "create", "bin")...); r.code != 0 || r.err != "" {
		t.Fatalf("create: %v", r)
	}
	r := run("one\n", append(g, "message", "send", "bin", "0", "-p", "0")...)
	h.expectFailure(r, ExitServer, "topic 0 not found in stream 'bin'")
	if r := run("", append(g, "topic", "create", "bin", "t", "1", "none")...); r.code != 0 || r.err != "" {
		t.Fatalf("topic create: %v", r)
	}
	if r := run("one\ntwo\n", append(g, "message", "send", "bin", "t")...); r.code != 0 || r.err != "" {
		t.Fatalf("send from stdin: %v", r)
	}
	if r := run("", append(g, "-q", "message", "poll", "-f", "-m", "5", "--format", "payload", "bin", "t", "0")...); r.out != "one\ntwo\n" {
		t.Fatalf("poll: %v", r)
	}
	r = run("", append(g, "stream", "list", "-l", "list")...)
	if r.code != 0 || !strings.Contains(r.out, "|bin|") || r.err != "" {
		t.Fatalf("list: %v", r)
	}
	r = run("", append(g, "stream", "get", "nope")...)
	h.expectFailure(r, ExitServer, "stream 'nope' not found")
	r = run("", append(g, "stream", "get")...)
	h.expectFailure(r, ExitUsage, "accepts 1 arg(s)")
	r = run("", "--version")
	if r.code != 0 || !strings.Contains(r.out, Version) {
		t.Fatalf("--version: %v", r)
	}
}
