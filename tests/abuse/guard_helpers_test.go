package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// Helpers of the guard_* tests (replica-plane admission, resource caps,
// authorization, message limits). Names carry the guard prefix so they do
// not collide with the other helpers of this package.

func guardCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func guardMust(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// guardCode is the Iggy code an error carries (0 for none).
func guardCode(err error) wire.Code {
	var ce interface{ IggyCode() wire.Code }
	if errors.As(err, &ce) {
		return ce.IggyCode()
	}
	if c, ok := wire.CodeOf(err); ok {
		return c
	}
	return 0
}

// guardWantCode fails unless err carries code.
func guardWantCode(t testing.TB, err error, code wire.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want %s (%d)", what, code, uint32(code))
	}
	if got := guardCode(err); got != code {
		t.Fatalf("%s: got %v (code %d), want %s (%d)", what, err, uint32(got), code, uint32(code))
	}
}

// guardDial logs in to addr as user/password; the client is closed when the
// test ends.
func guardDial(t testing.TB, addr, user, password string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{addr}
	cfg.Username, cfg.Password = user, password
	cfg.HeartbeatInterval = 0
	cfg.MaxRedirects = 0
	cfg.Reconnect.Enabled = false
	cl, err := client.Dial(guardCtx(t, 30*time.Second), cfg)
	guardMust(t, err, "login as "+user)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// guardSinceLastRun is the part of a server's output written by its latest
// run (after the harness's restart marker, if any).
func guardSinceLastRun(out string) string {
	if i := strings.LastIndex(out, "==== harness: restart"); i >= 0 {
		return out[i:]
	}
	return out
}

// guardLogFields parses the JSON field block of the log lines of out that
// contain msg.
func guardLogFields(out, msg string) []map[string]any {
	var res []map[string]any
	for _, l := range strings.Split(out, "\n") {
		if !strings.Contains(l, "\t"+msg+"\t") && !strings.HasSuffix(l, "\t"+msg) {
			continue
		}
		f := map[string]any{}
		if j := strings.IndexByte(l, '{'); j >= 0 {
			_ = json.Unmarshal([]byte(l[j:]), &f)
		}
		// The console encoder starts a line with its time; kept as "ts".
		if ts, _, ok := strings.Cut(l, "\t"); ok {
			if at, err := time.Parse(time.RFC3339Nano, ts); err == nil {
				f["ts"] = at
			}
		}
		res = append(res, f)
	}
	return res
}

// guardCountLines counts the lines of out containing s.
func guardCountLines(out, s string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// guardLinkedPeers returns the peers node's latest run logged a replica link
// up with.
func guardLinkedPeers(n *harness.Node) map[int]bool {
	peers := map[int]bool{}
	for _, f := range guardLogFields(guardSinceLastRun(n.Output()), "replica link up") {
		if p, ok := f["peer"].(float64); ok {
			peers[int(p)] = true
		}
	}
	return peers
}

// guardFlood holds connections open to a replica-plane port without ever
// sending a hello, the way a hostile client without the cluster key would:
// each of its sockets redials as soon as the node closes it. Sockets are
// spread over source addresses; the whole flood is bounded in sockets and
// time and stops at Stop (or when the test ends).
type guardFlood struct {
	target  string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	dials   atomic.Int64 // successful connects
	refused atomic.Int64 // connects the node closed at once (under 100 ms)
	held    atomic.Int64 // sockets currently open
	// closedAfter sums how long each socket the node closed had been open.
	mu          sync.Mutex
	closedAfter []time.Duration
}

func guardStartFlood(t testing.TB, target string, sources []string, perSource int, maxDur time.Duration) *guardFlood {
	ctx, cancel := context.WithTimeout(context.Background(), maxDur)
	f := &guardFlood{target: target, cancel: cancel}
	for _, src := range sources {
		for i := 0; i < perSource; i++ {
			f.wg.Add(1)
			go f.socket(ctx, src)
		}
	}
	t.Cleanup(f.Stop)
	return f
}

func (f *guardFlood) socket(ctx context.Context, src string) {
	defer f.wg.Done()
	d := net.Dialer{Timeout: 2 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", f.target)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		f.dials.Add(1)
		f.held.Add(1)
		opened := time.Now()
		stop := context.AfterFunc(ctx, func() { c.Close() })
		var buf [64]byte
		_, _ = c.Read(buf[:]) // returns when the node closes the socket (or at Stop)
		stop()
		c.Close()
		f.held.Add(-1)
		if ctx.Err() != nil {
			return
		}
		open := time.Since(opened)
		if open < 100*time.Millisecond {
			f.refused.Add(1)
			// Refused at once: redial after a short pause, so the flood
			// stays a bounded load on a shared machine.
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
		f.mu.Lock()
		f.closedAfter = append(f.closedAfter, open)
		f.mu.Unlock()
	}
}

// Stop ends the flood and waits for its sockets to close.
func (f *guardFlood) Stop() {
	f.cancel()
	f.wg.Wait()
}

// maxHeld is the longest time the node kept one flood socket open before it
// closed it (those still open at Stop are not counted).
func (f *guardFlood) maxHeld() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m time.Duration
	for _, d := range f.closedAfter {
		m = max(m, d)
	}
	return m
}

// guardSources returns n loopback source addresses that are not roster
// addresses of the harness (127.0.0.100 + i), falling back to 127.0.0.1
// when they cannot be bound.
func guardSources(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		ip := net.IPv4(127, 0, 0, byte(100+i)).String()
		ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return []string{"127.0.0.1"}
		}
		ln.Close()
		out = append(out, ip)
	}
	return out
}
