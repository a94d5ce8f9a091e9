package cli

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// localState is the part of `iggo cluster up`'s state.json the tests read.
type localState struct {
	Nodes []struct {
		Name    string `json:"name"`
		PID     int    `json:"pid"`
		TCPPort int    `json:"tcp_port"`
		DataDir string `json:"data_dir"`
		Log     string `json:"log"`
	} `json:"nodes"`
}

func readLocalState(t testing.TB, dir string) localState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatalf("state file: %v", err)
	}
	var s localState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("state file: %v", err)
	}
	return s
}

func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// freeBase finds a base port whose client (base+i), replica (base+1000+i),
// gossip (base+2000+i) and HTTP (base+3000+i) ports are free for n nodes.
func freeBase(t testing.TB, n int) int {
	t.Helper()
	for attempt := 0; attempt < 200; attempt++ {
		// Below Linux's ephemeral range (32768 up), so no outgoing
		// connection of another test takes a port in the meantime.
		base := 20000 + rand.IntN(9000)
		ok := true
		for i := 0; i < n && ok; i++ {
			for _, p := range []int{base + i, base + 1000 + i, base + 2000 + i, base + 3000 + i} {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					ok = false
					break
				}
				ln.Close()
				pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
				if err != nil {
					ok = false
					break
				}
				pc.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free base port")
	return 0
}

// localCluster runs `iggo cluster ...` commands on one directory and kills
// whatever the state file lists when the test ends.
type localCluster struct {
	e    *cliEnv
	dir  string
	base int
	srv  string
}

func newLocalCluster(t *testing.T, nodes int) *localCluster {
	t.Helper()
	lc := &localCluster{e: &cliEnv{bin: iggoBinary(t), home: t.TempDir()}, dir: filepath.Join(t.TempDir(), "lc"),
		base: freeBase(t, nodes), srv: harness.Binary(t)}
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(lc.dir, "state.json"))
		if err != nil {
			return
		}
		var s localState
		_ = json.Unmarshal(b, &s)
		for _, n := range s.Nodes {
			if t.Failed() {
				if log, err := os.ReadFile(n.Log); err == nil {
					t.Logf("%s log (tail):\n%s", n.Name, tailString(string(log), 6<<10))
				}
			}
			if n.PID > 0 && pidAlive(n.PID) {
				_ = syscall.Kill(n.PID, syscall.SIGKILL)
			}
		}
	})
	return lc
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (lc *localCluster) run(t testing.TB, args ...string) result {
	t.Helper()
	return lc.e.exec(t, "", append([]string{"cluster"}, args...)...)
}

func (lc *localCluster) up(t testing.TB, nodes int, extra ...string) result {
	t.Helper()
	return lc.run(t, append([]string{"up", "--nodes", strconv.Itoa(nodes), "--dir", lc.dir, "--base-port", strconv.Itoa(lc.base), "--server", lc.srv}, extra...)...)
}

func (lc *localCluster) addr(i int) string { return "127.0.0.1:" + strconv.Itoa(lc.base+i) }

// console is node i's web console URL (its HTTP port, base+3000+i).
func (lc *localCluster) console(i int) string {
	return "http://127.0.0.1:" + strconv.Itoa(lc.base+3000+i) + "/ui/"
}

// consoleAnswers fails unless url answers GET with 200 and an HTML page.
func consoleAnswers(t *testing.T, url string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET %s: %s (%s), want 200 with the console page:\n%.500s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
}

// TestLocalClusterSingleNode: `iggo cluster up --nodes 1` (clustering off)
// starts a background server that outlives the command, prints how to
// connect, and the printed command works; status shows the node running,
// pinging, leader and healthy; a second up refuses; down stops it and a
// later up continues on the same data; down --purge removes the directory;
// bad parameters are refused with their exit codes.
func TestLocalClusterSingleNode(t *testing.T) {
	lc := newLocalCluster(t, 1)
	r := lc.up(t, 1)
	if r.code != exitOK {
		t.Fatalf("up:\n%v", r)
	}
	mustContain(t, r.out, "Started a single node (clustering off) in "+lc.dir, "| node-0 | "+lc.addr(0),
		"Root credentials: iggy / iggy", "Connect:  iggo --tcp-server-address "+lc.addr(0)+" -u iggy -p iggy stream list",
		"Status:   iggo cluster status --dir "+lc.dir, "Stop:     iggo cluster down --dir "+lc.dir+" [--purge]")
	st := readLocalState(t, lc.dir)
	if len(st.Nodes) != 1 || !pidAlive(st.Nodes[0].PID) {
		t.Fatalf("state %+v: the node is not running after up returned", st)
	}
	mustContain(t, r.out, "Console:  "+lc.console(0)+" (log in as iggy / iggy)")
	consoleAnswers(t, lc.console(0))
	pid := st.Nodes[0].PID

	// The printed connect line works.
	out := lc.e.exec(t, "", "--tcp-server-address", lc.addr(0), "-u", "iggy", "-p", "iggy", "stream", "create", "lc-kept")
	if out.code != exitOK {
		t.Fatalf("stream create:\n%v", out)
	}

	r = lc.run(t, "status", "--dir", lc.dir, "-l", "list")
	if r.code != exitOK {
		t.Fatalf("status:\n%v", r)
	}
	want := "node-0|" + lc.addr(0) + "|" + strconv.Itoa(pid) + "|running|"
	if !strings.HasPrefix(r.out, want) || !strings.HasSuffix(r.out, "|leader|healthy|node-0\n") {
		t.Fatalf("status -l list = %q, want %q...|leader|healthy|node-0", r.out, want)
	}
	r = lc.run(t, "status", "--dir", lc.dir)
	mustContain(t, r.out, "Cluster \"iggo-local\" in "+lc.dir+" (1 nodes", "| Node ", "| Health ", "| Leader ", "| running ", "| leader ", "| healthy ",
		"Role, health and leader as each node reports them itself.")
	mustNotContain(t, r.out, "quorum")

	// up on a running cluster starts nothing and says so.
	if r := lc.up(t, 1); r.code != exitOK || !strings.Contains(r.out, "The single node (clustering off) in "+lc.dir+" is already running") ||
		!strings.Contains(r.out, "| "+strconv.Itoa(pid)+" ") {
		t.Fatalf("up on a running node:\n%v", r)
	}

	r = lc.run(t, "down", "--dir", lc.dir)
	if r.code != exitOK || r.out != "Stopped node-0\n" {
		t.Fatalf("down:\n%v", r)
	}
	if pidAlive(pid) {
		t.Fatalf("pid %d still running after down", pid)
	}
	expectFailure(t, lc.run(t, "status", "--dir", lc.dir), exitLocal, "no local cluster in "+lc.dir)
	expectFailure(t, lc.run(t, "down", "--dir", lc.dir), exitLocal, "no local cluster in "+lc.dir)

	// up again continues on the data.
	if r := lc.up(t, 1); r.code != exitOK {
		t.Fatalf("second up:\n%v", r)
	}
	out = lc.e.exec(t, "", "--tcp-server-address", lc.addr(0), "-u", "iggy", "-p", "iggy", "stream", "get", "lc-kept")
	if out.code != exitOK {
		t.Fatalf("the stream did not survive down/up:\n%v", out)
	}
	// A node that died shows as not running.
	pid = readLocalState(t, lc.dir).Nodes[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); pidAlive(pid) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	r = lc.run(t, "status", "--dir", lc.dir, "-l", "list")
	if r.code != exitConnection || r.out != "node-0|"+lc.addr(0)+"|"+strconv.Itoa(pid)+"|not running|-|-|-|-\n" ||
		r.err != "error: no quorum: 0 of 1 nodes answer, a quorum is 1; not running: node-0\n" {
		t.Fatalf("status of a dead node:\n%v", r)
	}
	r = lc.run(t, "down", "--dir", lc.dir, "--purge")
	if r.code != exitOK || !strings.Contains(r.out, "No node was running\nRemoved "+lc.dir+"\n") {
		t.Fatalf("down --purge:\n%v", r)
	}
	if _, err := os.Stat(lc.dir); !os.IsNotExist(err) {
		t.Fatalf("--purge left %s (%v)", lc.dir, err)
	}

	// Bad parameters.
	expectFailure(t, lc.up(t, 0), exitUsage, "--nodes must be 1..9, got 0")
	expectFailure(t, lc.up(t, 10), exitUsage, "--nodes must be 1..9, got 10")
	expectFailure(t, lc.run(t, "up", "--dir", lc.dir, "--base-port", "64000", "--server", lc.srv), exitUsage, "--base-port 64000 leaves no room for 3 nodes")
	expectFailure(t, lc.run(t, "up", "--dir", lc.dir, "--server", filepath.Join(lc.dir, "nope")), exitLocal, "--server "+filepath.Join(lc.dir, "nope"))
	busy, err := net.Listen("tcp", lc.addr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	expectFailure(t, lc.up(t, 1), exitLocal, "client port "+strconv.Itoa(lc.base)+" of node 0 is not free", "choose another --base-port")
	if _, err := os.Stat(filepath.Join(lc.dir, "state.json")); !os.IsNotExist(err) {
		t.Fatal("a refused up left a state file")
	}
	notCluster := t.TempDir()
	expectFailure(t, lc.run(t, "down", "--dir", notCluster, "--purge"), exitLocal, "does not look like a local cluster directory")
	if _, err := os.Stat(notCluster); err != nil {
		t.Fatalf("down --purge removed a foreign directory: %v", err)
	}
}

// TestLocalClusterThreeNodes: `iggo cluster up --nodes 3` starts three
// clustered background servers (roster, shared key from the secret file,
// never written into cluster.toml); data written through one node is read
// through another; status lists all three running and answering with the
// roles the metadata reports; a node killed shows as not running; down
// stops the rest and --purge removes everything.
func TestLocalClusterThreeNodes(t *testing.T) {
	lc := newLocalCluster(t, 3)
	r := lc.up(t, 3)
	if r.code != exitOK {
		t.Fatalf("up:\n%v", r)
	}
	mustContain(t, r.out, "Started a 3-node cluster \"iggo-local\" in "+lc.dir, "| node-0 | "+lc.addr(0), "| node-1 | "+lc.addr(1),
		"| node-2 | "+lc.addr(2), "| 127.0.0.1:"+strconv.Itoa(lc.base+1002)+" ")
	cfg, err := os.ReadFile(filepath.Join(lc.dir, "cluster.toml"))
	if err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(filepath.Join(lc.dir, "secret"))
	if err != nil || len(strings.TrimSpace(string(secret))) < 32 {
		t.Fatalf("secret file: %q %v", secret, err)
	}
	mustContain(t, string(cfg), "enabled = true", "replica_id = 2", "tcp_replica = "+strconv.Itoa(lc.base+1001))
	mustNotContain(t, string(cfg), strings.TrimSpace(string(secret)))
	st := readLocalState(t, lc.dir)
	if len(st.Nodes) != 3 {
		t.Fatalf("state %+v", st)
	}
	mustContain(t, r.out, "Console:  "+lc.console(0)+" (log in as iggy / iggy)",
		"(every node serves it on its HTTP port, "+strconv.Itoa(lc.base+3000)+".."+strconv.Itoa(lc.base+3002)+")")
	for i := range 3 {
		consoleAnswers(t, lc.console(i))
	}

	ok := func(addr string, args ...string) string {
		t.Helper()
		r := lc.e.exec(t, "", append([]string{"--tcp-server-address", addr, "-u", "iggy", "-p", "iggy"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("want success:\n%v", r)
		}
		return r.out
	}
	ok(lc.addr(1), "stream", "create", "lc3")
	ok(lc.addr(2), "topic", "create", "lc3", "t", "3", "none")
	ok(lc.addr(0), "message", "send", "lc3", "t", "--partition-id", "1", "hello-from-node-0")
	var polled string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if polled = ok(lc.addr(2), "message", "poll", "lc3", "t", "1", "--first", "-m", "10"); strings.Contains(polled, "hello-from-node-0") {
			break
		}
	}
	mustContain(t, polled, "hello-from-node-0")

	r = lc.run(t, "status", "--dir", lc.dir, "-l", "list")
	if r.code != exitOK {
		t.Fatalf("status:\n%v", r)
	}
	leaders := 0
	for i, row := range rows(r.out) {
		if len(row) != 8 || row[0] != "node-"+strconv.Itoa(i) || row[1] != lc.addr(i) || row[2] != strconv.Itoa(st.Nodes[i].PID) ||
			row[3] != "running" || !strings.HasSuffix(row[4], " ms") {
			t.Fatalf("status row %d %q:\n%v", i, row, r)
		}
		switch row[5] {
		case "leader":
			leaders++
		case "follower", "unknown":
		default:
			t.Fatalf("status row %d role %q", i, row[5])
		}
	}
	if leaders != 1 {
		t.Fatalf("status shows %d leaders:\n%v", leaders, r)
	}

	// A graceful stop of the whole cluster and a restart on its data.
	r = lc.run(t, "down", "--dir", lc.dir)
	if r.code != exitOK || r.out != "Stopped node-0, node-1, node-2\n" {
		t.Fatalf("down:\n%v", r)
	}
	for _, n := range st.Nodes {
		if pidAlive(n.PID) {
			t.Fatalf("%s still running after down", n.Name)
		}
	}
	if r := lc.up(t, 3); r.code != exitOK {
		t.Fatalf("up after down:\n%v", r)
	}
	st = readLocalState(t, lc.dir)
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if polled = ok(lc.addr(1), "message", "poll", "lc3", "t", "1", "--first", "-m", "10"); strings.Contains(polled, "hello-from-node-0") {
			break
		}
	}
	mustContain(t, polled, "hello-from-node-0")

	if err := syscall.Kill(st.Nodes[2].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); pidAlive(st.Nodes[2].PID) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	r = lc.run(t, "status", "--dir", lc.dir, "-l", "list")
	if got := rows(r.out); r.code != exitConnection || len(got) != 3 || got[2][3] != "not running" || got[2][4] != "-" || got[0][3] != "running" ||
		!strings.Contains(r.err, "not running: node-2") || strings.Contains(r.err, "quorum") {
		t.Fatalf("status after killing node-2:\n%v", r)
	}
	// Two of three still serve writes.
	ok(lc.addr(0), "message", "send", "lc3", "t", "--partition-id", "2", "after-kill")

	r = lc.run(t, "down", "--dir", lc.dir, "--purge")
	if r.code != exitOK {
		t.Fatalf("down:\n%v", r)
	}
	mustContain(t, r.out, "Stopped node-0, node-1\n", "Removed "+lc.dir)
	for _, n := range st.Nodes {
		if pidAlive(n.PID) {
			t.Fatalf("%s (pid %d) still running after down", n.Name, n.PID)
		}
	}
}

// TestLocalClusterRestartDown: after a whole-cluster restart (down, up) a
// node killed -9 shows as not running and status exits 3 while the other
// two keep a quorum; `up` restarts just that node (the others keep their
// pids) and it serves what was written while it was down. With two nodes
// killed status reports no quorum from what the surviving node itself
// answers (a ping, no login); `start NODE` brings the nodes back one at a
// time, and status exits 0 once every node runs and reports its role.
func TestLocalClusterRestartDown(t *testing.T) {
	lc := newLocalCluster(t, 3)
	if r := lc.up(t, 3); r.code != exitOK {
		t.Fatalf("up:\n%v", r)
	}
	ok := func(addr string, args ...string) string {
		t.Helper()
		r := lc.e.exec(t, "", append([]string{"--tcp-server-address", addr, "-u", "iggy", "-p", "iggy"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("want success:\n%v", r)
		}
		return r.out
	}
	ok(lc.addr(0), "stream", "create", "rd")
	ok(lc.addr(0), "topic", "create", "rd", "t", "1", "none")
	ok(lc.addr(0), "message", "send", "rd", "t", "--partition-id", "0", "before-restart")
	if r := lc.run(t, "down", "--dir", lc.dir); r.code != exitOK {
		t.Fatalf("down:\n%v", r)
	}
	if r := lc.up(t, 3); r.code != exitOK {
		t.Fatalf("up after down:\n%v", r)
	}
	st := readLocalState(t, lc.dir)
	kill := func(i int) {
		t.Helper()
		pid := readLocalState(t, lc.dir).Nodes[i].PID
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(10 * time.Second); pidAlive(pid) && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
	}
	kill(1)
	r := lc.run(t, "status", "--dir", lc.dir, "-l", "list")
	got := rows(r.out)
	if r.code != exitConnection || len(got) != 3 || got[1][3] != "not running" || got[0][3] != "running" || got[2][3] != "running" ||
		!strings.Contains(r.err, "not running: node-1") || strings.Contains(r.err, "quorum") {
		t.Fatalf("status with node-1 killed:\n%v", r)
	}
	ok(lc.addr(2), "message", "send", "rd", "t", "--partition-id", "0", "while-node-1-was-down")

	r = lc.up(t, 3)
	if r.code != exitOK || !strings.Contains(r.out, "Restarted node-1 (1 of 3 nodes were down) in "+lc.dir) {
		t.Fatalf("up with node-1 down:\n%v", r)
	}
	after := readLocalState(t, lc.dir)
	if after.Nodes[0].PID != st.Nodes[0].PID || after.Nodes[2].PID != st.Nodes[2].PID || after.Nodes[1].PID == st.Nodes[1].PID ||
		!pidAlive(after.Nodes[1].PID) {
		t.Fatalf("up restarted more than node-1, or not it: before %+v, after %+v", st.Nodes, after.Nodes)
	}
	var polled string
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		r := lc.e.exec(t, "", "--tcp-server-address", lc.addr(1), "-u", "iggy", "-p", "iggy", "message", "poll", "rd", "t", "0", "--first", "-m", "10")
		if polled = r.out; r.code == exitOK && strings.Contains(polled, "while-node-1-was-down") {
			break
		}
	}
	mustContain(t, polled, "before-restart", "while-node-1-was-down")
	waitStatusOK(t, lc)

	// Two of three down: no quorum.
	kill(1)
	kill(2)
	r = lc.run(t, "status", "--dir", lc.dir, "-l", "list", "--timeout", "3s")
	got = rows(r.out)
	if r.code != exitConnection || len(got) != 3 || got[0][3] != "running" || !strings.HasSuffix(got[0][4], " ms") ||
		got[0][5] != "unknown" || got[1][3] != "not running" || got[2][3] != "not running" ||
		r.err != "error: no quorum: 1 of 3 nodes answer, a quorum is 2; not running: node-1, node-2; role unknown: node-0\n" {
		t.Fatalf("status without a quorum:\n%v", r)
	}
	r = lc.run(t, "status", "--dir", lc.dir, "--timeout", "3s")
	mustContain(t, r.out, "No quorum: 1 of 3 nodes answer, a quorum is 2", "node-0 answers a ping but no login and GET_CLUSTER_METADATA (no answer within 3s",
		"node-1 is not running", "node-2 is not running")

	r = lc.run(t, "start", "node-2", "--dir", lc.dir)
	if r.code != exitOK || !strings.Contains(r.out, "Started node-2 (pid ") {
		t.Fatalf("start node-2:\n%v", r)
	}
	if r := lc.run(t, "start", "node-0", "--dir", lc.dir); r.code != exitOK || !strings.Contains(r.out, "node-0 is already running (pid "+strconv.Itoa(st.Nodes[0].PID)+")") {
		t.Fatalf("start of a running node:\n%v", r)
	}
	expectFailure(t, lc.run(t, "start", "node-9", "--dir", lc.dir), exitUsage, "no node \"node-9\"", "nodes: node-0, node-1, node-2")
	expectFailure(t, lc.run(t, "start", "1", "--dir", t.TempDir()), exitLocal, "no local cluster in")
	// Quorum is back; node-1 is still down.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		r = lc.run(t, "status", "--dir", lc.dir, "-l", "list")
		if got = rows(r.out); len(got) == 3 && got[0][5] != "unknown" && got[2][5] != "unknown" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the two nodes never reported their roles:\n%v", r)
		}
	}
	if r.code != exitConnection || got[1][3] != "not running" || strings.Contains(r.err, "quorum") {
		t.Fatalf("status with node-1 still down:\n%v", r)
	}
	if r := lc.run(t, "start", "1", "--dir", lc.dir); r.code != exitOK {
		t.Fatalf("start 1:\n%v", r)
	}
	waitStatusOK(t, lc)
	ok(lc.addr(1), "message", "send", "rd", "t", "--partition-id", "0", "after-start")
}

// waitStatusOK waits until `iggo cluster status` exits 0: every node runs,
// answers and reports its role.
func waitStatusOK(t *testing.T, lc *localCluster) {
	t.Helper()
	var r result
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if r = lc.run(t, "status", "--dir", lc.dir, "-l", "list"); r.code == exitOK {
			leaders := 0
			for _, row := range rows(r.out) {
				if row[3] != "running" || row[5] == "unknown" || row[7] == "unknown" {
					t.Fatalf("status exited 0 with %q:\n%v", row, r)
				}
				if row[5] == "leader" {
					leaders++
				}
			}
			if leaders > 1 {
				t.Fatalf("status shows %d leaders:\n%v", leaders, r)
			}
			return
		}
	}
	t.Fatalf("status never exited 0:\n%v", r)
}
