package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// Bounds of the smoke test's steps. The whole test stays well under four
// minutes on a 2-core machine once the Go build cache is warm.
const (
	buildTimeout   = 8 * time.Minute
	upTimeout      = 2 * time.Minute
	healthyTimeout = 2 * time.Minute
	demoTimeout    = 3 * time.Minute
	downTimeout    = 2 * time.Minute
	catchUpTimeout = 90 * time.Second
)

// composeEnv is one compose project of the smoke test: a unique name,
// image tag and subnet, and host ports chosen by Docker.
type composeEnv struct {
	t          *testing.T
	root       string
	file       string
	composeCmd []string // "docker compose" or "docker-compose"
	project    string
	image      string
	subnet     string // first three octets
	ids        map[string]string
}

func TestComposeSingleNode(t *testing.T) {
	e := newComposeEnv(t, "docker-compose.single.yml")
	e.buildImage()
	e.up()
	e.waitHealthy([]string{"node"})
	e.pingPublished("node")
	e.consoleAnswers("node")

	out := e.demo()
	mustContain(t, out, `stream "demo" created`, `topic "events" created with 3 partitions`, "iggo-demo: OK")

	// A killed node comes back from its volume: the second run finds the
	// stream and topic and appends after the first run's messages.
	e.docker(upTimeout, "kill", e.containerID("node"))
	e.compose(upTimeout, "start", "node")
	e.waitHealthy([]string{"node"})
	out = e.demo()
	mustContain(t, out, `stream "demo" exists`, `topic "events" exists with 3 partitions`,
		"partition 0: 400 messages at offsets 400..799 verified", "iggo-demo: OK")
}

func TestComposeCluster(t *testing.T) {
	e := newComposeEnv(t, "docker-compose.yml")
	nodes := []string{"node-1", "node-2", "node-3"}
	e.buildImage()
	e.up()
	e.waitHealthy(nodes)
	for _, n := range nodes {
		e.pingPublished(n)
		e.consoleAnswers(n)
	}

	out := e.demo()
	mustContain(t, out, `cluster "iggo-compose"`, `stream "demo" created`, `topic "events" created with 3 partitions`, "iggo-demo: OK")
	// The same over QUIC (UDP 8080 on every node, leader redirection to
	// the roster's quic port).
	quic := fmt.Sprintf("IGGO_DEMO_ADDRESSES=%s.11:8080,%s.12:8080,%s.13:8080", e.subnet, e.subnet, e.subnet)
	out = e.demo("-e", "IGGO_DEMO_TRANSPORT=quic", "-e", quic, "-e", "IGGO_DEMO_TOPIC=over-quic", "-e", "IGGO_DEMO_MESSAGES=300")
	mustContain(t, out, `topic "over-quic" created with 3 partitions`, "iggo-demo: OK")

	// node-1 is the demo's first address and a replica of every group:
	// without it the demo must fall over to the other nodes, and every
	// group must go on with the remaining two (a quorum of three).
	e.docker(upTimeout, "kill", e.containerID("node-1"))
	out = e.demo()
	mustContain(t, out, `stream "demo" exists`, `topic "events" exists with 3 partitions`,
		"partition 0: 400 messages at offsets 400..799 verified", "iggo-demo: OK")
	if strings.Contains(out, "connected to "+e.subnet+".11:") {
		t.Fatalf("the demo claims to be connected to the killed node-1:\n%s", out)
	}
	// A metadata write with one node down: a new topic.
	out = e.demo("-e", "IGGO_DEMO_TOPIC=after-kill", "-e", "IGGO_DEMO_MESSAGES=300")
	mustContain(t, out, `topic "after-kill" created with 3 partitions`, "iggo-demo: OK")

	// node-1 comes back from its volume and catches up on everything
	// written while it was down: its own view of both topics reaches the
	// counts the three runs produced (batches of 100 round robin over
	// three partitions).
	e.compose(upTimeout, "start", "node-1")
	e.waitHealthy(nodes)
	want := map[string][]uint64{"events": {800, 600, 600}, "after-kill": {100, 100, 100}}
	e.waitPartitionCounts("node-1", "demo", want)
	e.waitPartitionCounts("node-2", "demo", want)
}

// waitPartitionCounts waits until service, asked directly through its
// published port, reports exactly want[topic][p] messages in partition p
// of each topic.
func (e *composeEnv) waitPartitionCounts(service, stream string, want map[string][]uint64) {
	e.t.Helper()
	addr := e.published(service)
	ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
	defer cancel()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{addr}
	cfg.Username, cfg.Password = "iggy", "iggy"
	// Stay on this node: the roster's addresses are the bridge network's.
	cfg.MaxRedirects = 0
	cfg.Reconnect.Enabled = false
	start := time.Now()
	var last string
	for {
		got, err := partitionCounts(ctx, cfg, stream, want)
		if err == nil && got == fmt.Sprint(want) {
			e.t.Logf("%s reports %s after %v", service, got, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if err != nil {
			last = err.Error()
		} else {
			last = got
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s (%s) did not reach the partition counts %v within %v; last: %s", service, addr, want, catchUpTimeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// partitionCounts renders the per-partition message counts of the topics
// of want, in want's shape.
func partitionCounts(ctx context.Context, cfg client.Config, stream string, want map[string][]uint64) (string, error) {
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close()
	got := map[string][]uint64{}
	for topic := range want {
		td, err := c.GetTopic(ctx, wire.MustNamedID(stream), wire.MustNamedID(topic))
		if err != nil {
			return "", fmt.Errorf("get topic %s/%s: %w", stream, topic, err)
		}
		for _, p := range td.Partitions {
			got[topic] = append(got[topic], p.MessagesCount)
		}
	}
	return fmt.Sprint(got), nil
}

// newComposeEnv checks that Docker and Compose are usable (failing the test
// with what is missing otherwise) and registers the cleanup that removes
// the project, its volumes and its image even when the test fails.
func newComposeEnv(t *testing.T, file string) *composeEnv {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("this test needs Docker Engine and Compose: the docker command is not on PATH (%v); "+
			"install docker.io and docker-compose (Debian) and start dockerd", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		t.Fatalf("this test needs a running Docker engine: `docker version` failed: %v\n%s", err, out)
	}
	var compose []string
	if exec.CommandContext(ctx, "docker", "compose", "version").Run() == nil {
		compose = []string{"docker", "compose"}
	} else if exec.CommandContext(ctx, "docker-compose", "version").Run() == nil {
		compose = []string{"docker-compose"}
	} else {
		t.Fatal("this test needs Docker Compose: neither `docker compose` nor `docker-compose` works; install docker-compose (Debian)")
	}
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("%d%s", os.Getpid(), hex.EncodeToString(rb[:]))
	e := &composeEnv{t: t, root: root, file: filepath.Join(root, "deploy", file), composeCmd: compose,
		project: "iggosmoke" + tag}
	t.Cleanup(e.cleanup)
	return e
}

func (e *composeEnv) cleanup() {
	if e.t.Failed() {
		out, _ := e.run(downTimeout, e.composeArgs("--profile", "demo", "logs", "--no-color", "--tail", "300"))
		e.t.Logf("compose logs of %s:\n%s", e.project, out)
	}
	if out, err := e.run(downTimeout, e.composeArgs("--profile", "demo", "down", "-v", "--remove-orphans", "--timeout", "5")); err != nil {
		e.t.Errorf("compose down -v of %s: %v\n%s", e.project, err, out)
	}
}

// env is the environment of every compose command: a unique subnet and
// image, and empty host ports so Docker picks free ones.
func (e *composeEnv) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		// A parent make's jobserver settings do not belong to ours.
		if strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=") ||
			strings.HasPrefix(kv, "IGGO_") || strings.HasPrefix(kv, "COMPOSE_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "IGGO_IMAGE="+e.image, "IGGO_SUBNET_PREFIX="+e.subnet,
		"IGGO_PORT=", "IGGO_PORT_1=", "IGGO_PORT_2=", "IGGO_PORT_3=",
		"IGGO_HTTP_PORT=", "IGGO_HTTP_PORT_1=", "IGGO_HTTP_PORT_2=", "IGGO_HTTP_PORT_3=", "IGGO_BIND=127.0.0.1")
}

func (e *composeEnv) composeArgs(args ...string) []string {
	return append(append(append([]string(nil), e.composeCmd...), "-f", e.file, "-p", e.project), args...)
}

// run executes argv in the repository root with the project environment.
func (e *composeEnv) run(timeout time.Duration, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = e.root
	cmd.Env = e.env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (timed out after %v)", err, timeout)
	}
	return out.String(), err
}

func (e *composeEnv) mustRun(timeout time.Duration, argv []string) string {
	e.t.Helper()
	out, err := e.run(timeout, argv)
	if err != nil {
		e.t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}

func (e *composeEnv) compose(timeout time.Duration, args ...string) string {
	e.t.Helper()
	return e.mustRun(timeout, e.composeArgs(args...))
}

func (e *composeEnv) docker(timeout time.Duration, args ...string) string {
	e.t.Helper()
	return e.mustRun(timeout, append([]string{"docker"}, args...))
}

// image is the one image the tests of this run share: built by the first
// test that needs it, removed by TestMain.
var image struct {
	once sync.Once
	tag  string
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if image.tag != "" {
		ctx, cancel := context.WithTimeout(context.Background(), downTimeout)
		if out, err := exec.CommandContext(ctx, "docker", "image", "rm", "-f", image.tag).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "removing image %s: %v\n%s", image.tag, err, out)
			code = 1
		}
		cancel()
	}
	if image.dir != "" {
		os.RemoveAll(image.dir)
	}
	os.Exit(code)
}

// buildImage builds the static binaries and the image with the Makefile's
// own target, into a temporary build context, once per test binary.
func (e *composeEnv) buildImage() {
	e.t.Helper()
	image.once.Do(func() {
		start := time.Now()
		if image.dir, image.err = os.MkdirTemp("", "iggo-docker-build-"); image.err != nil {
			return
		}
		var rb [4]byte
		if _, image.err = rand.Read(rb[:]); image.err != nil {
			return
		}
		image.tag = fmt.Sprintf("iggo:smoke-%d%s", os.Getpid(), hex.EncodeToString(rb[:]))
		argv := []string{"make", "--no-print-directory", "docker-image", "DOCKER_IMAGE=" + image.tag, "DOCKER_BUILD_DIR=" + image.dir}
		if out, err := e.run(buildTimeout, argv); err != nil {
			image.err = fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out)
			return
		}
		e.t.Logf("built %s in %v", image.tag, time.Since(start).Round(time.Second))
	})
	if image.err != nil {
		e.t.Fatalf("building the image: %v", image.err)
	}
	e.image = image.tag
}

// up starts the project on a random private /24 in 172.16.0.0/12, trying
// another one when Docker reports an overlap with an existing network.
func (e *composeEnv) up() {
	e.t.Helper()
	var out string
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		// 172.18–28: clear of docker0's usual 172.17.0.0/16 and of the
		// compose files' defaults (172.29.0, 172.30.0).
		b, _ := rand.Int(rand.Reader, big.NewInt(11*256))
		e.subnet = fmt.Sprintf("172.%d.%d", 18+b.Int64()/256, b.Int64()%256)
		out, err = e.run(upTimeout, e.composeArgs("up", "-d"))
		if err == nil {
			e.t.Logf("project %s up on %s.0/24", e.project, e.subnet)
			return
		}
		if !strings.Contains(out, "overlap") {
			break
		}
		e.run(downTimeout, e.composeArgs("down", "-v", "--remove-orphans"))
	}
	e.t.Fatalf("compose up: %v\n%s", err, out)
}

// containerID returns service's container, looked up once: kill and start
// keep a container's id, and nothing in these tests recreates one.
func (e *composeEnv) containerID(service string) string {
	e.t.Helper()
	if id, ok := e.ids[service]; ok {
		return id
	}
	id := strings.TrimSpace(e.compose(upTimeout, "ps", "-a", "-q", service))
	if id == "" || strings.Contains(id, "\n") {
		e.t.Fatalf("compose ps -a -q %s: %q", service, id)
	}
	if e.ids == nil {
		e.ids = map[string]string{}
	}
	e.ids[service] = id
	return id
}

// waitHealthy waits until every service's container reports healthy (the
// image's `iggo ping` health check) and fails at once if one has stopped.
func (e *composeEnv) waitHealthy(services []string) {
	e.t.Helper()
	deadline := time.Now().Add(healthyTimeout)
	start := time.Now()
	for {
		ids := make([]string, len(services))
		for i, s := range services {
			ids[i] = e.containerID(s)
		}
		states := strings.Split(strings.TrimSpace(e.docker(30*time.Second,
			append([]string{"inspect", "-f", "{{.State.Status}} {{.State.Health.Status}}"}, ids...)...)), "\n")
		if len(states) != len(services) {
			e.t.Fatalf("docker inspect of %v returned %d states: %q", services, len(states), states)
		}
		var pending []string
		for i, s := range services {
			state := strings.TrimSpace(states[i])
			switch {
			case state == "running healthy":
			case strings.HasPrefix(state, "exited") || strings.HasPrefix(state, "dead"):
				e.t.Fatalf("service %s stopped while waiting for it to become healthy (%s)", s, state)
			default:
				pending = append(pending, s+": "+state)
			}
		}
		if len(pending) == 0 {
			e.t.Logf("%v healthy after %v", services, time.Since(start).Round(100*time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("not healthy after %v: %v", healthyTimeout, pending)
		}
		time.Sleep(time.Second)
	}
}

// published returns the host address of service's client port.
func (e *composeEnv) published(service string) string {
	e.t.Helper()
	addr := strings.TrimSpace(e.compose(upTimeout, "port", service, "8090"))
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		e.t.Fatalf("compose port %s 8090 = %q, want a port on 127.0.0.1", service, addr)
	}
	return addr
}

// pingPublished pings service's client port through its published host
// port on loopback.
func (e *composeEnv) pingPublished(service string) {
	e.t.Helper()
	addr := e.published(service)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{addr}
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		e.t.Fatalf("dial %s (published port of %s): %v", addr, service, err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		e.t.Fatalf("ping %s (published port of %s): %v", addr, service, err)
	}
}

// consoleAnswers fails unless service's web console (/ui/ on its HTTP
// port, published on loopback) answers 200 with an HTML page.
func (e *composeEnv) consoleAnswers(service string) {
	e.t.Helper()
	addr := strings.TrimSpace(e.compose(upTimeout, "port", service, "3000"))
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		e.t.Fatalf("compose port %s 3000 = %q, want a port on 127.0.0.1", service, addr)
	}
	url := "http://" + addr + "/ui/"
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		e.t.Fatalf("GET %s (console of %s): %v", url, service, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		e.t.Fatalf("GET %s (console of %s): %s (%s), want 200 with the console page:\n%.500s",
			url, service, resp.Status, resp.Header.Get("Content-Type"), body)
	}
}

// demo runs the one-shot demo service (with extra `run` flags such as
// -e NAME=VALUE) and returns its output; it fails the test unless the demo
// exits 0.
func (e *composeEnv) demo(runArgs ...string) string {
	e.t.Helper()
	start := time.Now()
	args := append([]string{"--profile", "demo", "run", "--rm"}, runArgs...)
	out := e.compose(demoTimeout, append(args, "demo")...)
	e.t.Logf("demo run (%v):\n%s", time.Since(start).Round(100*time.Millisecond), out)
	return out
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}
