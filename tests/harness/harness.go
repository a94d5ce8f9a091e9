// Package harness starts real iggo-server processes for cross-process
// tests: it builds the binary once per test binary, runs any number of
// servers with their own data directories, environment and flags, learns
// each one's bound address from <data>/runtime/current_config.toml, and can
// kill -9, SIGSTOP/SIGCONT, stop and restart them; Exit runs one that is
// expected to refuse to start and returns its exit code and output. Every
// process is killed when the test ends, passed or failed.
//
// Every server serves the HTTP API on an ephemeral port of its own
// (IGGY_HTTP_ADDRESS, unless Env sets it; cluster nodes get a roster
// ports.http); Server.HTTPAddr is the bound address.
//
// StartCluster runs an N-node cluster: each node on its own loopback
// address 127.0.0.(11+id) when the machine lets them be bound (else all on
// 127.0.0.1 with distinct ports), its own data directory, and one shared
// generated configuration ([cluster] enabled, a random name and 48-byte
// pre-shared key, fast failover timing, a [[cluster.nodes]] roster with tcp,
// tcp_replica and gossip ports), started with --replica-id. Cluster adds
// Kill/KillAll, Stop, Restart(i, fresh), Pause/Resume, Addr, readiness
// (login and ping on every node), leader lookup and segment-file
// comparison across nodes.
//
// It is test support only: production code never imports it.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/iggo/iggo/client"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// RepoRoot finds the module root (the directory holding go.mod) above the
// working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Binary returns the path of an iggo-server built from this checkout (once
// per test binary). IGGO_SERVER_BINARY overrides it with a prebuilt one.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("IGGO_SERVER_BINARY"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "iggo-harness-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "iggo-server")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-checklinkname=0", "-o", buildPath, "./cmd/iggo-server")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("harness: building iggo-server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// Options describe one server process.
type Options struct {
	// Binary is the server executable; empty builds this checkout.
	Binary string
	// DataDir is the data directory (IGGY_PATH); empty makes a temporary
	// one that lives as long as the test.
	DataDir string
	// Env adds KEY=value variables. The harness sets IGGY_PATH,
	// IGGY_TCP_ADDRESS=127.0.0.1:0 (unless Env sets it) and
	// IGGY_SHARDING_PIN_CORES=false; other IGGY_* variables of the test
	// process are not inherited.
	Env []string
	// Args are extra command-line flags; DefaultRoot adds
	// --with-default-root-credentials.
	Args        []string
	DefaultRoot bool
	// StartTimeout bounds the wait for the runtime file (default 60 s).
	StartTimeout time.Duration
	// LogTail is how many bytes of output are logged when the test fails
	// (default 8 KiB).
	LogTail int
	// Transport is how Client, Root and ClientConfig reach the server
	// (zero: plaintext TCP); Serve lists further transports to serve. Any
	// TLS transport gets a test PKI (Server.PKI).
	Transport Transport
	Serve     []Transport
	// PKI, when set, is used instead of a fresh one (a cluster's nodes
	// share theirs).
	PKI *PKI
	// NoFile, when set, runs the server with RLIMIT_NOFILE soft and hard
	// at this many descriptors (through /bin/sh's ulimit, which then execs
	// the server: the process keeps the shell's pid).
	NoFile int
}

// Server is one running (or stopped) server process.
type Server struct {
	t    testing.TB
	opts Options

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	exit   error
	out    *syncBuffer
	// Addr is the bound client address of the current run; HTTPAddr the
	// bound HTTP API address ("" when the run serves no HTTP).
	Addr     string
	HTTPAddr string
	// MetricsAddr is the bound http.metrics.open_address ("" when off).
	MetricsAddr string
	// QUICAddr is the bound QUIC (UDP) address ("" when quic is off).
	QUICAddr string
	// WSAddr is the bound WebSocket address ("" when not served).
	WSAddr string
	// PKI signs the server's certificate when it serves TLS.
	PKI  *PKI
	tenv []string
}

// Start launches a server and waits until it serves.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	s := newServer(t, opts)
	s.launch(nil)
	return s
}

// newServer prepares a server whose process is killed when the test ends
// (its output tail logged if the test failed); it starts nothing.
func newServer(t testing.TB, opts Options) *Server {
	if opts.Binary == "" {
		opts.Binary = Binary(t)
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.LogTail == 0 {
		opts.LogTail = 8 << 10
	}
	s := &Server{t: t, opts: opts, PKI: opts.PKI}
	ts := append([]Transport{opts.Transport}, opts.Serve...)
	for i := range ts {
		if ts[i].Name == "" {
			ts[i] = TCP
		}
		if ts[i].TLS && s.PKI == nil {
			s.PKI = MustPKI(t)
		}
	}
	env, err := transportEnv(ts, s.PKI)
	if err != nil {
		t.Fatal(err)
	}
	s.tenv = env
	t.Cleanup(func() {
		s.Kill()
		if t.Failed() {
			t.Logf("server %s output (last %d bytes):\n%s", s.opts.DataDir, s.opts.LogTail, s.Tail(s.opts.LogTail))
		}
	})
	return s
}

// Exit runs a server that is expected to refuse to start: it waits up to
// timeout for the process to exit (killing it and failing the test
// otherwise) and returns its exit code and everything it printed.
func Exit(t testing.TB, opts Options, timeout time.Duration) (int, string) {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	s := newServer(t, opts)
	s.start(nil, false)
	if !s.waitExit(timeout) {
		s.Kill()
		t.Fatalf("harness: server on %s still running after %v, want it to refuse to start:\n%s", opts.DataDir, timeout, s.Tail(8<<10))
	}
	code := 0
	var ee *exec.ExitError
	if err := s.exitErr(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harness: waiting for the server: %v", err)
	}
	return code, s.Output()
}

// StartN launches n servers; opts(i) gives each one's options.
func StartN(t testing.TB, n int, opts func(i int) Options) []*Server {
	t.Helper()
	out := make([]*Server, n)
	for i := range out {
		out[i] = Start(t, opts(i))
	}
	return out
}

// PID is the process id of the current run (0 before the first start).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// DataDir is the server's data directory.
func (s *Server) DataDir() string { return s.opts.DataDir }

func (s *Server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") {
			env = append(env, kv)
		}
	}
	env = append(env, "IGGY_PATH="+s.opts.DataDir, "IGGY_SHARDING_PIN_CORES=false")
	hasAddr, hasHTTP := false, false
	for _, kv := range s.opts.Env {
		if strings.HasPrefix(kv, "IGGY_TCP_ADDRESS=") {
			hasAddr = true
		}
		if strings.HasPrefix(kv, "IGGY_HTTP_ADDRESS=") {
			hasHTTP = true
		}
	}
	if !hasAddr {
		env = append(env, "IGGY_TCP_ADDRESS=127.0.0.1:0")
	}
	if !hasHTTP {
		env = append(env, "IGGY_HTTP_ADDRESS=127.0.0.1:0")
	}
	env = append(env, s.tenv...)
	return append(env, s.opts.Env...)
}

// launch starts the process (extra flags added to this run only) and waits
// for it to serve.
func (s *Server) launch(extra []string) {
	s.t.Helper()
	s.spawn(extra)
	s.awaitAddr()
}

func (s *Server) runtimeFile() string {
	return filepath.Join(s.opts.DataDir, "runtime", "current_config.toml")
}

// spawn starts the process without waiting for it to serve, removing the
// previous run's runtime file first (awaitAddr waits for the new one).
func (s *Server) spawn(extra []string) { s.t.Helper(); s.start(extra, true) }

// start starts the process; clearRuntime removes the runtime file first
// (Exit leaves the data directory alone).
func (s *Server) start(extra []string, clearRuntime bool) {
	s.t.Helper()
	if clearRuntime {
		_ = os.Remove(s.runtimeFile())
	}
	args := append([]string(nil), s.opts.Args...)
	if s.opts.DefaultRoot {
		args = append(args, "--with-default-root-credentials")
	}
	args = append(args, extra...)
	cmd := exec.Command(s.opts.Binary, args...)
	if s.opts.NoFile > 0 {
		cmd = exec.Command("/bin/sh", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, s.opts.NoFile), s.opts.Binary}, args...)...)
	}
	cmd.Env = s.env()
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		out = &syncBuffer{}
	} else {
		fmt.Fprintf(out, "\n==== harness: restart %v ====\n", extra)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("harness: starting %s: %v", s.opts.Binary, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.out, s.Addr, s.HTTPAddr, s.MetricsAddr, s.WSAddr, s.QUICAddr = cmd, exited, out, "", "", "", "", ""
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.exit = err
		s.mu.Unlock()
		close(exited)
	}()
}

// awaitAddr waits until the current run wrote its runtime file (its
// listeners are bound) and records the client address.
func (s *Server) awaitAddr() {
	s.t.Helper()
	runtimeFile := s.runtimeFile()
	s.mu.Lock()
	exited, out := s.exited, s.out
	s.mu.Unlock()
	deadline := time.Now().Add(s.opts.StartTimeout)
	for {
		if rt, err := readRuntime(runtimeFile); err == nil && rt.TCP.Address != "" {
			s.mu.Lock()
			s.Addr = rt.TCP.Address
			if rt.QUIC.Enabled {
				s.QUICAddr = rt.QUIC.Address
			}
			if rt.WebSocket.Enabled {
				s.WSAddr = rt.WebSocket.Address
			}
			if rt.HTTP.Enabled {
				s.HTTPAddr = rt.HTTP.Address
				if rt.HTTP.Metrics.Enabled {
					s.MetricsAddr = rt.HTTP.Metrics.OpenAddress
				}
			}
			s.mu.Unlock()
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("harness: server exited during start (%v):\n%s", s.exitErr(), out.Tail(8<<10))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			s.t.Fatalf("harness: server did not start within %v:\n%s", s.opts.StartTimeout, out.Tail(8<<10))
		}
	}
}

// runtimeDoc is what the harness reads from the runtime file.
type runtimeDoc struct {
	TCP struct {
		Address string `toml:"address"`
	} `toml:"tcp"`
	QUIC struct {
		Enabled bool   `toml:"enabled"`
		Address string `toml:"address"`
	} `toml:"quic"`
	HTTP struct {
		Enabled bool   `toml:"enabled"`
		Address string `toml:"address"`
		Metrics struct {
			Enabled     bool   `toml:"enabled"`
			OpenAddress string `toml:"open_address"`
		} `toml:"metrics"`
	} `toml:"http"`
	WebSocket struct {
		Enabled bool   `toml:"enabled"`
		Address string `toml:"address"`
	} `toml:"websocket"`
}

func readRuntime(path string) (runtimeDoc, error) {
	var doc runtimeDoc
	b, err := os.ReadFile(path)
	if err != nil {
		return doc, err
	}
	err = toml.Unmarshal(b, &doc)
	return doc, err
}

func (s *Server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exit
}

// Pid is the process id of the current run (0 before the first start).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Running reports whether the process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	ch := s.exited
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

func (s *Server) signal(sig os.Signal) error {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return errors.New("harness: no process")
	}
	return cmd.Process.Signal(sig)
}

func (s *Server) waitExit(d time.Duration) bool {
	s.mu.Lock()
	ch := s.exited
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to be gone. A
// stopped (SIGSTOP) process is killed too.
func (s *Server) Kill() {
	if !s.Running() {
		return
	}
	_ = s.signal(syscall.SIGKILL)
	s.waitExit(30 * time.Second)
}

// Stop sends SIGTERM and waits for a clean exit (killing after timeout).
func (s *Server) Stop(timeout time.Duration) error {
	if !s.Running() {
		return nil
	}
	_ = s.signal(syscall.SIGCONT)
	if err := s.signal(syscall.SIGTERM); err != nil {
		return err
	}
	if !s.waitExit(timeout) {
		s.Kill()
		return fmt.Errorf("harness: server did not stop within %v", timeout)
	}
	return s.exitErr()
}

// Pause sends SIGSTOP; Resume sends SIGCONT.
func (s *Server) Pause() error  { return s.signal(syscall.SIGSTOP) }
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

// Restart starts the server again on the same data directory (after Kill
// or Stop); extra flags apply to this run only (for example "--fresh").
func (s *Server) Restart(extra ...string) {
	s.t.Helper()
	if s.Running() {
		s.t.Fatal("harness: Restart of a running server; Kill or Stop it first")
	}
	s.launch(extra)
}

// Output returns everything the process printed so far (all runs).
func (s *Server) Output() string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		return ""
	}
	return out.String()
}

// Tail returns the last n bytes of the output.
func (s *Server) Tail(n int) string {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	if out == nil {
		return ""
	}
	return out.Tail(n)
}

// HTTPURL is the base URL of the server's HTTP API (plain HTTP).
func (s *Server) HTTPURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.HTTPAddr
}

// ClientConfig is a client configuration for this server.
func (s *Server) ClientConfig(username, password string) client.Config {
	return s.ClientConfigOver(s.opts.Transport, username, password)
}

// ClientConfigOver is ClientConfig over transport tr (one the server
// serves).
func (s *Server) ClientConfigOver(tr Transport, username, password string) client.Config {
	cfg := client.DefaultConfig()
	if tr.Name == "" {
		tr = TCP
	}
	tr.configure(&cfg, s.Addr, s.WSAddr, s.QUICAddr, s.PKI)
	cfg.Username, cfg.Password = username, password
	cfg.HeartbeatInterval = 0
	return cfg
}

// Client connects a logged-in client (closed when the test ends).
func (s *Server) Client(t testing.TB, username, password string) *client.Client {
	t.Helper()
	return s.ClientOver(t, s.opts.Transport, username, password)
}

// ClientOver is Client over transport tr.
func (s *Server) ClientOver(t testing.TB, tr Transport, username, password string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := s.ClientConfigOver(tr, username, password)
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("harness: connecting to %v over %s: %v", cfg.Addresses, tr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Root connects as iggy/iggy (servers started with DefaultRoot).
func (s *Server) Root(t testing.TB) *client.Client { return s.Client(t, "iggy", "iggy") }

// RootOver is Root over transport tr.
func (s *Server) RootOver(t testing.TB, tr Transport) *client.Client {
	return s.ClientOver(t, tr, "iggy", "iggy")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.Bytes()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return string(s)
}
