package abuse

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// Shared helpers of the abuse tests. Keep them generic: other files of the
// package (replica-plane floods, partition caps, authorization, message
// limits) use them too.

// attacker returns the loopback address attackers dial from: 127.0.0.(1+i),
// i >= 1, so that 127.0.0.1 stays the legitimate clients' address.
func attacker(i int) string { return fmt.Sprintf("127.0.0.%d", 1+i) }

// start runs a single node with root iggy/iggy and env on top of quiet,
// test-sized defaults; nofile > 0 runs it under that RLIMIT_NOFILE.
func start(t *testing.T, nofile int, env ...string) *harness.Server {
	t.Helper()
	base := []string{
		"IGGY_LOGGING_FILE_ENABLED=false",
		"IGGY_HEARTBEAT_ENABLED=false",
	}
	return harness.Start(t, harness.Options{DefaultRoot: true, NoFile: nofile, Env: append(base, env...), LogTail: 32 << 10})
}

// rss is the resident set size of process pid in bytes (VmRSS).
func rss(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// openFDs counts process pid's open descriptors.
func openFDs(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("reading /proc/%d/fd: %v", pid, err)
	}
	return len(ents)
}

// sampler records the peak RSS of a process every 50 ms until stopped. When
// the RSS passes abort it calls onAbort once (the test stops its load
// there: on code without the limits the load could take the machine's
// memory).
type sampler struct {
	t       testing.TB
	pid     int
	abort   int64
	onAbort func()

	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func sampleRSS(t testing.TB, pid int, abort int64, onAbort func()) *sampler {
	s := &sampler{t: t, pid: pid, abort: abort, onAbort: onAbort, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		aborted := false
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
						kb, _ := strconv.ParseInt(f[1], 10, 64)
						s.mu.Lock()
						s.peak = max(s.peak, kb<<10)
						over := s.peak > s.abort
						s.mu.Unlock()
						if over && !aborted && s.onAbort != nil {
							aborted = true
							s.onAbort()
						}
					}
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { s.Stop() })
	return s
}

// Stop ends sampling and returns the peak.
func (s *sampler) Stop() int64 {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// dialFrom connects to addr from the local IP from (port chosen by the
// kernel). Connections are closed when the test ends.
func dialFrom(t testing.TB, from, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// closedWithin reports whether the server closes c within d (reading and
// discarding whatever it sends first).
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b [512]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// waitClosed waits up to d for the server to close c and returns how long
// that took (d and false when it did not).
func waitClosed(c net.Conn, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	ok := closedWithin(c, d)
	return time.Since(start), ok
}

func randomClient() wire.Uint128 {
	var b [16]byte
	_, _ = rand.Read(b[:])
	u := wire.Uint128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
	if u.IsZero() {
		u.Lo = 1
	}
	return u
}

// loginFrame is a Register (password form) frame for a fresh client id.
func loginFrame(user, pass string) []byte {
	body, err := (&wire.LoginRegister{Version: wire.ClientVersionInfo{Protocol: wire.CurrentProtocol, SDKName: "abuse", SDKVersion: "1"},
		Username: user, Password: pass}).AppendBody(nil)
	if err != nil {
		panic(err)
	}
	return wire.AppendRequest(nil, wire.RequestHeader{Client: randomClient(), Operation: wire.OpRegister}, body)
}

// session is a raw logged-in connection.
type session struct {
	c       net.Conn
	client  wire.Uint128
	session uint64
	request uint64
}

// rawLogin logs in on c and returns the session; on a refusal it returns
// the eviction reason or status as an error.
func rawLogin(c net.Conn, user, pass string, timeout time.Duration) (*session, error) {
	f := loginFrame(user, pass)
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(f); err != nil {
		return nil, err
	}
	reply, err := wire.ReadFrame(c, nil, 0)
	if err != nil {
		return nil, err
	}
	if wire.FrameKindOf(reply) == wire.FrameEviction {
		return nil, fmt.Errorf("evicted: %w", evictionReason(reply))
	}
	h, payload, err := wire.DecodeReply(reply, 0)
	if err != nil {
		return nil, err
	}
	lr, err := wire.DecodeLoginReply(payload)
	if err != nil {
		return nil, err
	}
	_ = h
	var client wire.Uint128
	client.Lo = binary.LittleEndian.Uint64(f[128:])
	client.Hi = binary.LittleEndian.Uint64(f[136:])
	return &session{c: c, client: client, session: lr.Session, request: 1}, nil
}

// evictionError is an eviction frame's reason.
type evictionError wire.EvictionReason

func (e evictionError) Error() string { return fmt.Sprintf("eviction reason %d", uint8(e)) }

func evictionReason(f []byte) error { return evictionError(f[255]) }

// header returns a request header declaring a frame of size bytes on s.
func (s *session) header(op wire.Operation, size uint32) []byte {
	h := wire.RequestHeader{Client: s.client, Operation: op, Session: s.session, Request: s.request}
	f := wire.AppendRequest(nil, h, nil)
	binary.LittleEndian.PutUint32(f[48:], size)
	return f
}

// declaredHeader is a header declaring size bytes from an unknown client.
func declaredHeader(size uint32) []byte {
	f := wire.AppendRequest(nil, wire.RequestHeader{Client: randomClient(), Operation: wire.OpNonReplicated, Code: wire.CmdPing}, nil)
	binary.LittleEndian.PutUint32(f[48:], size)
	return f
}

// legitLogin dials from 127.0.0.1 with the Go client, logs in and pings;
// it returns how long that took.
func legitLogin(t testing.TB, s *harness.Server, user, pass string, budget time.Duration) (time.Duration, error) {
	cfg := s.ClientConfig(user, pass)
	cfg.Reconnect.Enabled = false
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	start := time.Now()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return time.Since(start), err
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		return time.Since(start), err
	}
	return time.Since(start), nil
}

// warmLogin logs in once as iggy/iggy, so that later logins of the same
// pair are answered from the server's verification cache: a test that
// bounds a login's latency then measures the node, not one Argon2
// derivation on a loaded machine.
func warmLogin(t testing.TB, s *harness.Server) {
	t.Helper()
	if _, err := legitLogin(t, s, "iggy", "iggy", 30*time.Second); err != nil {
		t.Fatalf("warm-up login: %v", err)
	}
}

// countLines counts the lines of out that contain every one of subs.
func countLines(out string, subs ...string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		ok := true
		for _, s := range subs {
			if !strings.Contains(line, s) {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

// awaitLines waits up to d for the server's output to hold at least n
// lines containing every one of subs and returns the count.
func awaitLines(s *harness.Server, d time.Duration, n int, subs ...string) int {
	end := time.Now().Add(d)
	for {
		c := countLines(s.Output(), subs...)
		if c >= n || time.Now().After(end) {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// flood runs attempt on n goroutines, each at most 10,000 times, until end
// passes, stop closes or attempt returns false; wait returns once every
// goroutine has ended.
func flood(n int, end time.Time, stop <-chan struct{}, attempt func() bool) (wait func()) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 10000 && time.Now().Before(end); k++ {
				select {
				case <-stop:
					return
				default:
				}
				if !attempt() {
					return
				}
			}
		}()
	}
	return wg.Wait
}
