package operator

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/datadir"
	"github.com/iggo/iggo/tests/harness"
)

// TestSecondServerRefused: a second server on a running server's data
// directory exits at once naming the owner's pid, with or without --fresh
// and whether or not it asks for the same port; it changes no byte of the
// directory (the running server's log aside, which that server writes);
// the first server keeps serving, and after both stopped the data is
// intact and the node starts without --fresh.
func TestSecondServerRefused(t *testing.T) {
	a := harness.Start(t, harness.Options{DefaultRoot: true})
	setup(t, a, "kept", 100)
	dir := a.DataDir()
	if o, ok := datadir.ReadOwner(dir); !ok || o.PID != a.PID() || o.Node != "single node" {
		t.Fatalf("lock file names %+v (%v), want pid %d", o, ok, a.PID())
	}
	before := hashTree(t, dir, logsDir)
	want := "iggo-server: refusing to start: data directory " + dir + " is in use by pid " + strconv.Itoa(a.PID()) + " (single node, started "
	for _, c := range []struct {
		what string
		opts harness.Options
	}{
		{"another port", harness.Options{DataDir: dir, DefaultRoot: true}},
		{"the same port", harness.Options{DataDir: dir, Env: []string{"IGGY_TCP_ADDRESS=" + a.Addr}}},
		{"--fresh", harness.Options{DataDir: dir, Args: []string{"--fresh"}}},
	} {
		start := time.Now()
		code, out := harness.Exit(t, c.opts, 60*time.Second)
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("second server (%s): exit %d, output:\n%s\nwant exit 1 and %q", c.what, code, out, want)
		}
		if strings.Contains(out, "recovered") || strings.Contains(out, "INFO") {
			t.Fatalf("second server (%s) got past the lock:\n%s", c.what, out)
		}
		t.Logf("%s: refused in %v", c.what, time.Since(start).Round(time.Millisecond))
		if d := diff(before, hashTree(t, dir, logsDir)); d != "" {
			t.Fatalf("the refused server (%s) changed the data directory:\n%s", c.what, d)
		}
	}
	if !a.Running() {
		t.Fatal("the first server died")
	}
	c := a.Root(t)
	wantPayloads(t, payloads(t, c, "kept", "t"), 100, "first server after the refusals")
	send(t, c, "kept", "t", "x", 1)
	must(t, a.Stop(60*time.Second), "stopping the first server")

	a.Restart()
	got := payloads(t, a.Root(t), "kept", "t")
	wantPayloads(t, got[:100], 100, "after restart")
	if len(got) != 101 || got[100] != "x-0" {
		t.Fatalf("after restart: %d messages (last %q), want 101 ending with x-0", len(got), got[len(got)-1])
	}
}

// TestFailedStartTouchesNothing: a server that cannot bind its client port
// fails before it reads its storage: recovery does not run and every file
// of the stopped node's data directory is byte-identical afterwards, apart
// from the lock file (rewritten with the failed run's pid) and its log.
func TestFailedStartTouchesNothing(t *testing.T) {
	a := harness.Start(t, harness.Options{DefaultRoot: true})
	setup(t, a, "kept", 50)
	must(t, a.Stop(60*time.Second), "stopping the server")
	dir := a.DataDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err, "binding a port")
	defer busy.Close()
	skip := func(rel string) bool { return rel == datadir.LockFileName || logsDir(rel) }
	before := hashTree(t, dir, skip)
	if _, ok := before[filepath.Join("metadata", "superblock")]; !ok {
		t.Fatalf("the data directory lacks its metadata superblock: %v", before)
	}
	code, out := harness.Exit(t, harness.Options{DataDir: dir, Env: []string{"IGGY_TCP_ADDRESS=" + busy.Addr().String()}}, 60*time.Second)
	if code != 1 || !strings.Contains(out, "binding tcp "+busy.Addr().String()) || !strings.Contains(out, "address already in use") {
		t.Fatalf("start on a busy port: exit %d, output:\n%s", code, out)
	}
	for _, s := range []string{"recovered", "storage"} {
		if strings.Contains(out, "\t"+s) {
			t.Fatalf("the failed start ran %q before binding:\n%s", s, out)
		}
	}
	if d := diff(before, hashTree(t, dir, skip)); d != "" {
		t.Fatalf("a start that failed to bind changed the data directory:\n%s", d)
	}
	a.Restart()
	wantPayloads(t, payloads(t, a.Root(t), "kept", "t"), 50, "after the failed start")
}

// TestFreshForeignDirectory: --fresh on a directory holding anything but
// an iggo data directory's layout is refused before anything is created or
// removed in it.
func TestFreshForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"notes.txt", "photos/cat.jpg", "metadata/mine.txt"} {
		p := filepath.Join(dir, f)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755), "mkdir")
		must(t, os.WriteFile(p, []byte("precious "+f), 0o644), "write")
	}
	before := hashTree(t, dir, nil)
	code, out := harness.Exit(t, harness.Options{DataDir: dir, Args: []string{"--fresh"}}, 60*time.Second)
	want := "iggo-server: refusing to start: --fresh: refusing to wipe " + dir + ": it does not look like an iggo data directory (unexpected: notes.txt, photos)"
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("--fresh on a foreign directory: exit %d, output:\n%s\nwant %q", code, out, want)
	}
	if d := diff(before, hashTree(t, dir, nil)); d != "" {
		t.Fatalf("the refused --fresh changed the directory:\n%s", d)
	}
	// An empty directory and a missing one are fine.
	empty := t.TempDir()
	s := harness.Start(t, harness.Options{DataDir: empty, DefaultRoot: true, Args: []string{"--fresh"}})
	must(t, s.Root(t).Ping(ctxT(t)), "ping")
	must(t, s.Stop(60*time.Second), "stop")
	s2 := harness.Start(t, harness.Options{DataDir: filepath.Join(t.TempDir(), "new", "data"), DefaultRoot: true, Args: []string{"--fresh"}})
	must(t, s2.Root(t).Ping(ctxT(t)), "ping")
}

// TestFreshKeepsItsLog: --fresh on a server's own data directory wipes the
// data and keeps the log directory: the previous run's lines and the lines
// of the run that wiped (the wipe itself, the start after it) are in the
// log file afterwards.
func TestFreshKeepsItsLog(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	setup(t, s, "before-fresh", 10)
	must(t, s.Stop(60*time.Second), "stop")
	s.Restart("--fresh")
	c := s.Root(t)
	streams, err := c.GetStreams(ctxT(t))
	must(t, err, "streams")
	if len(streams) != 0 {
		t.Fatalf("--fresh kept %d streams", len(streams))
	}
	_, err = c.CreateStream(ctxT(t), "after-fresh", nil)
	must(t, err, "create stream")
	must(t, s.Stop(60*time.Second), "stop")

	var created []string
	wiped, startedAfter := -1, -1
	for i, l := range readLog(t, s.DataDir()) {
		switch {
		case l.str("logger") == "replica.audit" && l.str("msg") == "stream created":
			created = append(created, l.str("stream"))
		case strings.HasPrefix(l.str("msg"), "--fresh: wiped the data directory"):
			wiped = i
		case l.str("msg") == "iggo server started" && wiped >= 0 && startedAfter < 0:
			startedAfter = i
		}
	}
	if wiped < 0 || startedAfter < 0 {
		t.Fatalf("the log file lacks the wipe (line %d) or the start after it (line %d)", wiped, startedAfter)
	}
	if len(created) != 2 || created[0] != "before-fresh" || created[1] != "after-fresh" {
		t.Fatalf("audit lines of the two runs: %v, want [before-fresh after-fresh]", created)
	}
	if _, err := os.Stat(filepath.Join(s.DataDir(), datadir.LockFileName)); err != nil {
		t.Fatalf("the lock file did not survive --fresh: %v", err)
	}
}
