package localcluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeServerEnv makes this test binary, run as a node (started through
// startNode under the name iggo-server), sleep until it is killed.
const fakeServerEnv = "IGGO_LOCALCLUSTER_FAKE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(fakeServerEnv) == "1" {
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestAliveDuringExec: a node startNode has just started is Alive, though
// its execve may still be mapping the binary. The kernel fills in
// /proc/<pid>/cmdline only after exec.Cmd.Start has returned (Start returns
// once the close-on-exec pipe closes, early in execve), and when the binary
// is not in the page cache that takes milliseconds: `up` then found node-0's
// command line empty and failed at once with "node node-0 exited during
// start" and an empty log.
func TestAliveDuringExec(t *testing.T) {
	dir := t.TempDir()
	st := fakeCluster(t, dir, filepath.Join(dir, "iggo-server"), dir, 0)
	server := st.Server
	n := &st.Nodes[0]
	for i := 0; i < 10; i++ {
		// As after other work pushed iggo-server out of the page cache.
		// (A no-op where the temporary directory is in memory: the window
		// is then some microseconds, which this test may miss.)
		evict(t, server)
		p, err := startNode(st, n, "")
		if err != nil {
			t.Fatal(err)
		}
		alive := st.Alive(*n)
		_ = p.Kill()
		_, _ = p.Wait()
		if !alive {
			t.Fatalf("start %d: node with pid %d is not alive just after its start", i, n.PID)
		}
		if st.Alive(*n) {
			t.Fatalf("start %d: node with pid %d is alive after it was killed and reaped", i, n.PID)
		}
	}
	self0 := NodeState{ID: 0, PID: os.Getpid()}
	if st.Alive(self0) {
		t.Fatalf("this test binary, not started as a node, counts as node 0")
	}
}

// A live process started as a node of one cluster is not a node of
// another cluster, nor another node of its own: a pid recorded in a stale
// state file and reused by such a process must not be signalled by Down.
func TestAliveIsThatNode(t *testing.T) {
	dir := t.TempDir()
	st := fakeCluster(t, dir, filepath.Join(dir, "not-named-like-the-server"), filepath.Join(dir, "a"), 1)
	server := st.Server
	n := &st.Nodes[0]
	p, err := startNode(st, n, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for !st.Alive(*n) {
		if time.Now().After(deadline) {
			t.Fatalf("node-1 (pid %d, server %s) never counted as alive", n.PID, server)
		}
		time.Sleep(10 * time.Millisecond)
	}
	other := &State{Name: "lc", Server: server, Dir: filepath.Join(dir, "b"), Nodes: st.Nodes}
	if other.Alive(*n) {
		t.Fatalf("pid %d of a cluster in %s counts as a node of the cluster in %s", n.PID, st.Dir, other.Dir)
	}
	if st.Alive(NodeState{ID: 0, PID: n.PID}) {
		t.Fatalf("pid %d, node 1, counts as node 0", n.PID)
	}
}

// fakeCluster returns a one-node cluster state in clusterDir (created)
// whose server binary is a copy of this test binary at server, run as a
// fake node (fakeServerEnv) that sleeps until killed; its files go in dir.
func fakeCluster(t *testing.T, dir, server, clusterDir string, id int) *State {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, server)
	if err := os.MkdirAll(clusterDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeServerEnv, "1")
	return &State{Name: "lc", Server: server, Dir: clusterDir, Nodes: []NodeState{{ID: id, Name: fmt.Sprintf("node-%d", id),
		IP: "127.0.0.1", TCPPort: 1, HTTPPort: 2, DataDir: filepath.Join(dir, "data"), Log: filepath.Join(dir, "server.log")}}}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Sync(); err != nil { // written back, so evict can drop it
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// evict drops path's pages from the page cache.
func evict(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Logf("fadvise: %v", err)
	}
}
