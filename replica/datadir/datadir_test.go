package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/shard/vfs"
)

func TestLockExclusive(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	started := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	me := Owner{PID: os.Getpid(), Node: "node-1", ReplicaID: 1, Started: started}
	l, err := Acquire(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ReadOwner(dir)
	if !ok || got != me {
		t.Fatalf("lock file says %+v (%v), want %+v", got, ok, me)
	}
	b, _ := os.ReadFile(filepath.Join(dir, LockFileName))
	want := "iggo data directory lock\npid=" + strconv.Itoa(me.PID) + "\nnode=node-1\nreplica_id=1\nstarted=2026-12-01T10:00:00.123456789Z\n"
	if string(b) != want {
		t.Fatalf("lock file:\n%q\nwant\n%q", b, want)
	}

	// A second lock on the same directory (another open file description,
	// as a second process has) is refused, naming the holder; the refusal
	// does not touch the file.
	_, err = Acquire(dir, Owner{PID: 999999, Node: "other", Started: time.Now()})
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second Acquire: %v, want *InUseError", err)
	}
	if inUse.Owner != me || inUse.Path != dir {
		t.Fatalf("refusal names %+v at %s", inUse.Owner, inUse.Path)
	}
	msg := "data directory " + dir + " is in use by pid " + strconv.Itoa(me.PID) + " (node-1, started 2026-12-01T10:00:00Z)"
	if err.Error() != msg {
		t.Fatalf("message %q, want %q", err, msg)
	}
	if b2, _ := os.ReadFile(filepath.Join(dir, LockFileName)); string(b2) != want {
		t.Fatalf("a refused Acquire rewrote the lock file: %q", b2)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	next := Owner{PID: os.Getpid(), Node: "single", Started: started.Add(time.Hour)}
	l2, err := Acquire(dir, next)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	defer l2.Release()
	if got, _ := ReadOwner(dir); got != next {
		t.Fatalf("the new owner's file says %+v (the old content must be replaced, not appended to)", got)
	}
}

func TestInUseWithoutReadableOwner(t *testing.T) {
	e := &InUseError{Path: "/d"}
	if !strings.Contains(e.Error(), "data directory /d is in use by another process") {
		t.Fatal(e.Error())
	}
	for _, b := range []string{"", "garbage\npid=3\n", lockHeader + "\npid=x\n", lockHeader + "\n"} {
		if _, ok := decodeOwner([]byte(b)); ok {
			t.Fatalf("decodeOwner(%q) accepted", b)
		}
	}
}

func TestTopEntry(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"logs", "logs"}, {"logs/", "logs"}, {"./runtime", "runtime"}, {"a/b/c", "a"},
		{"", ""}, {".", ""}, {"..", ""}, {"../x", ""}, {"/abs/logs", ""}, {"a/../b", "b"},
	} {
		if got := TopEntry(c.in); got != c.want {
			t.Errorf("TopEntry(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func layoutFor(dir string) Layout {
	return Layout{Path: dir, Entries: []string{"metadata", "streams", "state", "quarantine", "runtime", "logs"}, Keep: []string{"logs"}}
}

func write(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func list(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	slices.Sort(out)
	return out
}

func TestWipe(t *testing.T) {
	fsys := vfs.NewOS()
	t.Run("data directory", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, LockFileName, "metadata/superblock", "streams/1/topics/1/partitions/1/00000000000000000000.log",
			"state/log", "runtime/current_config.toml", "logs/iggo-server.log", "logs/iggo-server.log.1", "quarantine/1-1-1-5/x",
			"lost+found/")
		if err := Wipe(fsys, layoutFor(dir)); err != nil {
			t.Fatal(err)
		}
		want := []string{LockFileName, "logs/", "logs/iggo-server.log", "logs/iggo-server.log.1", "lost+found/"}
		if got := list(t, dir); !slices.Equal(got, want) {
			t.Fatalf("after Wipe: %v, want %v", got, want)
		}
	})
	t.Run("empty and missing", func(t *testing.T) {
		dir := t.TempDir()
		if err := Wipe(fsys, layoutFor(dir)); err != nil {
			t.Fatal(err)
		}
		if err := Wipe(fsys, layoutFor(filepath.Join(dir, "nope"))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("foreign directory refused, nothing removed", func(t *testing.T) {
		dir := t.TempDir()
		files := []string{"metadata/superblock", "photos/cat.jpg", "notes.txt", "a", "b", "c", "d"}
		write(t, dir, files...)
		before := list(t, dir)
		err := Wipe(fsys, layoutFor(dir))
		var fe *ForeignError
		if !errors.As(err, &fe) {
			t.Fatalf("Wipe of a foreign directory: %v", err)
		}
		if !slices.Equal(fe.Foreign, []string{"a", "b", "c", "d", "notes.txt"}) || fe.More != 1 {
			t.Fatalf("foreign entries %v (+%d)", fe.Foreign, fe.More)
		}
		for _, s := range []string{"--fresh: refusing to wipe " + dir, "does not look like an iggo data directory", "a, b, c, d, notes.txt and 1 more"} {
			if !strings.Contains(err.Error(), s) {
				t.Fatalf("message %q lacks %q", err, s)
			}
		}
		if after := list(t, dir); !slices.Equal(after, before) {
			t.Fatalf("a refused Wipe changed the directory: %v -> %v", before, after)
		}
	})
	t.Run("log files directly in the data directory", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "metadata/x", "iggo-server.log", "iggo-server.log.3")
		l := Layout{Path: dir, Entries: []string{"metadata"}, Keep: []string{"iggo-server.log*"}}
		if err := Wipe(fsys, l); err != nil {
			t.Fatal(err)
		}
		if got, want := list(t, dir), []string{"iggo-server.log", "iggo-server.log.3"}; !slices.Equal(got, want) {
			t.Fatalf("after Wipe: %v, want %v", got, want)
		}
	})
	t.Run("nested log directory", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "var/logs/iggo-server.log", "var/other/x", "var/y", "streams/z")
		l := Layout{Path: dir, Entries: []string{"streams", "var"}, Keep: []string{"var/logs"}}
		if err := Wipe(fsys, l); err != nil {
			t.Fatal(err)
		}
		if got, want := list(t, dir), []string{"var/", "var/logs/", "var/logs/iggo-server.log"}; !slices.Equal(got, want) {
			t.Fatalf("after Wipe: %v, want %v", got, want)
		}
	})
}

// FuzzDecodeOwner: any lock file content decodes without panicking, and
// whatever decodes re-encodes to a file that decodes to the same owner.
func FuzzDecodeOwner(f *testing.F) {
	f.Add(Owner{PID: 42, Node: "node-1", ReplicaID: 1, Started: time.Unix(1_700_000_000, 5).UTC()}.encode())
	f.Add([]byte(lockHeader + "\npid=7\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, ok := decodeOwner(b)
		if !ok {
			return
		}
		if o.PID <= 0 {
			t.Fatalf("accepted pid %d", o.PID)
		}
		if strings.ContainsAny(o.Node, "\n\r") {
			return // not representable in the line format
		}
		o2, ok2 := decodeOwner(o.encode())
		if !ok2 || o2.PID != o.PID || o2.Node != o.Node || o2.ReplicaID != o.ReplicaID || !o2.Started.Equal(o.Started) {
			t.Fatalf("round trip %+v -> %+v (%v)", o, o2, ok2)
		}
	})
}
