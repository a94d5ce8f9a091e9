package intake

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

func TestBudget(t *testing.T) {
	b := NewBudget("k", 100)
	if !b.Acquire(60) || b.Acquire(41) || !b.Acquire(40) || b.Used() != 100 {
		t.Fatalf("used %d", b.Used())
	}
	b.Release(100)
	if b.Used() != 0 {
		t.Fatal(b.Used())
	}
	// Many goroutines never take more than the limit together.
	var wg sync.WaitGroup
	var mu sync.Mutex
	held := 0
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				if b.Acquire(7) {
					mu.Lock()
					held += 7
					if held > 100 {
						t.Errorf("held %d over 100", held)
					}
					held -= 7
					mu.Unlock()
					b.Release(7)
				}
			}
		}()
	}
	wg.Wait()
	defer func() {
		if recover() == nil {
			t.Fatal("releasing what was not taken did not panic")
		}
	}()
	b.Release(1)
}

func TestAddrKey(t *testing.T) {
	cases := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 5}, "127.0.0.2/32"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, "10.1.2.3/32"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 5}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::1"), Port: 9}, "2001:db8:1:2::/64"},
		{&net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 1}, "192.0.2.1/32"},
		{pipeAddr{}, "invalid Prefix"},
	}
	for _, c := range cases {
		if got := AddrKey(c.addr).String(); got != c.want {
			t.Errorf("AddrKey(%v) = %s, want %s", c.addr, got, c.want)
		}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

func TestAdmission(t *testing.T) {
	a4 := netip.MustParsePrefix("127.0.0.2/32")
	b4 := netip.MustParsePrefix("127.0.0.3/32")
	unauth := NewBudget(KeyUnauthBytes, 10*8192)
	a := NewAdmission(AdmissionConfig{ConnectionsMax: 6, TransportMax: map[string]int{"ws": 1}, UnauthPerAddress: 3,
		UnauthBase: 8192, Unauth: unauth})
	var tickets []*Ticket
	admit := func(tr string, src netip.Prefix, wantKey string) {
		t.Helper()
		tk, r := a.Admit(tr, src)
		switch {
		case wantKey == "" && r != nil:
			t.Fatalf("refused by %v", r)
		case wantKey != "" && (r == nil || r.Key != wantKey):
			t.Fatalf("want refusal by %s, got %v", wantKey, r)
		}
		if tk != nil {
			tickets = append(tickets, tk)
		}
	}
	admit("tcp", a4, "")
	admit("tcp", a4, "")
	admit("tcp", a4, "")
	admit("tcp", a4, KeyUnauthPerAddress) // three unauthenticated from a4
	tickets[0].Authenticated()
	tickets[0].Authenticated() // twice is once
	admit("tcp", a4, "")       // a slot of a4 came back
	admit("ws", b4, "")
	admit("ws", b4, "ws.connections_max")
	admit("tcp", b4, "")
	if unauth.Used() != 5*8192 { // six, one logged in
		t.Fatalf("unauthenticated budget holds %d, want 5 connections", unauth.Used())
	}
	admit("tcp", b4, KeyConnectionsMax) // six open
	total, per, pend := a.Counts()
	if total != 6 || per["tcp"] != 5 || per["ws"] != 1 || pend != 5 {
		t.Fatalf("counts %d %v %d", total, per, pend)
	}
	for _, tk := range tickets {
		tk.Release()
		tk.Release()
	}
	total, per, pend = a.Counts()
	if total != 0 || len(per) != 0 || pend != 0 || unauth.Used() != 0 || len(a.unauth) != 0 {
		t.Fatalf("after release: %d %v %d, budget %d", total, per, pend, unauth.Used())
	}
	// The unauthenticated budget refuses on its own.
	small := NewAdmission(AdmissionConfig{UnauthBase: 8192, Unauth: NewBudget(KeyUnauthBytes, 2*8192)})
	small.Admit("tcp", a4)
	small.Admit("tcp", b4)
	if _, r := small.Admit("tcp", b4); r == nil || r.Key != KeyUnauthBytes {
		t.Fatalf("budget refusal: %v", r)
	}
}

func TestClientConnections(t *testing.T) {
	p := func(v int) *int { return &v }
	cases := []struct {
		name        string
		configured  *int
		soft        uint64
		reserved    int
		want, wantR int
		wantErr     string
	}{
		{"unset: half", nil, 20000, 256, 10000, 256, ""},
		{"unset: the reserve wins", nil, 600, 256, 300, 256, ""},
		{"unset: small limit split evenly", nil, 300, 256, 150, 150, ""},
		{"unset: tiny limit", nil, 3, 256, 1, 1, ""},
		{"zero: all but the reserve", p(0), 1024, 256, 768, 256, ""},
		{"zero, small limit", p(0), 200, 256, 100, 100, ""},
		{"explicit", p(50), 1024, 256, 50, 256, ""},
		{"explicit at the edge", p(768), 1024, 256, 768, 256, ""},
		{"explicit too many", p(769), 1024, 256, 0, 256, "message_bus.connections_max 769 exceeds"},
		{"explicit too many for a small limit", p(250), 256, 16, 0, 16, "exceeds"},
		{"no descriptor at all", nil, 0, 256, 0, 0, "leaves no descriptor"},
		{"huge soft", nil, 1 << 40, 256, 1<<30 - 1, 256, ""},
	}
	for _, c := range cases {
		got, r, err := ClientConnections(c.configured, c.soft, c.reserved)
		switch {
		case c.wantErr != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.wantErr))):
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		case c.wantErr == "" && (err != nil || got != c.want || r != c.wantR):
			t.Errorf("%s: %d (reserve %d), %v; want %d (reserve %d)", c.name, got, r, err, c.want, c.wantR)
		}
	}
}

func TestAcceptBackoff(t *testing.T) {
	b := AcceptBackoff{Min: 5 * time.Millisecond, Max: 40 * time.Millisecond}
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, b.Failed())
	}
	want := []time.Duration{5, 10, 20, 40, 40, 40}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoff %v", got)
		}
	}
	b.Succeeded()
	if d := b.Failed(); d != 5*time.Millisecond {
		t.Fatalf("after success %v", d)
	}
	if !OutOfDescriptors(&net.OpError{Op: "accept", Err: &osSyscallErr{err: errEMFILE}}) || OutOfDescriptors(io.EOF) {
		t.Fatal("OutOfDescriptors")
	}
}

// ---------------------------------------------------------------------------
// Reader.

func frameOf(size int) []byte {
	body := make([]byte, size-wire.HeaderSize)
	for i := range body {
		body[i] = byte(i)
	}
	return wire.AppendRequest(nil, wire.RequestHeader{Client: wire.Uint128{Lo: 1}, Operation: wire.OpSendMessages, Session: 1, Request: 1}, body)
}

type rig struct {
	lim      Limits
	server   net.Conn
	client   net.Conn
	r        *Reader
	unauth   *Budget
	inflight *Budget
}

func newRig(t *testing.T, unauthBytes, inflight int64) *rig {
	t.Helper()
	s, c := net.Pipe()
	t.Cleanup(func() { s.Close(); c.Close() })
	g := &rig{server: s, client: c, unauth: NewBudget(KeyUnauthBytes, unauthBytes), inflight: NewBudget(KeyInFlightBytes, inflight)}
	g.lim = Limits{MaxFrame: 1 << 20, UnauthFrameMax: 8192, HeaderTimeout: 200 * time.Millisecond, BodyTimeout: 300 * time.Millisecond,
		Unauth: g.unauth, InFlight: g.inflight, UnauthReadBuffer: 4096, ReadBuffer: 65536, KeepBuffer: 1 << 20}
	g.r = NewReader(s, &g.lim)
	return g
}

// send writes b from the client side without blocking the test.
func (g *rig) send(b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := g.client.Write(b)
		done <- err
	}()
	return done
}

func TestReaderFramesAndBudgets(t *testing.T) {
	g := newRig(t, 1<<20, 1<<20)
	g.r.SetAuthenticated(true)
	small, big := frameOf(300), frameOf(200_000)
	g.send(append(append(bytes.Clone(small), big...), small...))
	for i, want := range [][]byte{small, big, small} {
		f, err := g.r.Next(time.Second)
		if err != nil || !bytes.Equal(f, want) {
			t.Fatalf("frame %d: %v", i, err)
		}
		if u := g.inflight.Used(); u < int64(len(want)) || u > 2*int64(len(want))+wire.BodyGrowthMin {
			t.Fatalf("frame %d of %d bytes holds %d of the in-flight budget", i, len(want), u)
		}
		if g.unauth.Used() != 0 {
			t.Fatal("an authenticated frame charged the unauthenticated budget")
		}
		g.r.Release()
		if g.inflight.Used() != 0 {
			t.Fatalf("released frame still holds %d", g.inflight.Used())
		}
	}
	if !g.r.big {
		t.Fatal("the read buffer did not grow after the login")
	}
}

func TestReaderUnauthenticatedLimits(t *testing.T) {
	g := newRig(t, 1<<20, 1<<20)
	g.send(frameOf(300))
	if _, err := g.r.Next(time.Second); err != nil {
		t.Fatal(err)
	}
	if g.unauth.Used() == 0 || g.inflight.Used() == 0 {
		t.Fatal("an unauthenticated frame is charged to both budgets")
	}
	g.send(frameOf(9000)) // over UnauthFrameMax
	_, err := g.r.Next(time.Second)
	var le *LimitError
	if !errors.As(err, &le) || le.Key != KeyUnauthFrame || le.Answerable || le.Size != 9000 {
		t.Fatalf("oversized unauthenticated frame: %v", err)
	}
	if g.unauth.Used() != 0 || g.inflight.Used() != 0 {
		t.Fatal("budget held after a refusal")
	}
}

func TestReaderUnauthenticatedBudget(t *testing.T) {
	g := newRig(t, 5000, 1<<20)
	g.send(frameOf(8000))
	_, err := g.r.Next(time.Second)
	var le *LimitError
	if !errors.As(err, &le) || le.Key != KeyUnauthBytes || le.Answerable {
		t.Fatalf("want the unauthenticated budget to refuse: %v", err)
	}
	if g.unauth.Used() != 0 || g.inflight.Used() != 0 {
		t.Fatal("budget held after a refusal")
	}
}

func TestReaderInFlightDrains(t *testing.T) {
	g := newRig(t, 1<<20, 100_000)
	g.r.SetAuthenticated(true)
	big, small := frameOf(300_000), frameOf(400)
	g.send(append(bytes.Clone(big), small...))
	_, err := g.r.Next(time.Second)
	var le *LimitError
	if !errors.As(err, &le) || le.Key != KeyInFlightBytes || !le.Answerable || le.Rest <= 0 {
		t.Fatalf("want an answerable refusal: %v", err)
	}
	if g.inflight.Used() != 0 {
		t.Fatal("budget held after a refusal")
	}
	if err := g.r.Discard(le); err != nil || le.Rest != 0 {
		t.Fatalf("discard: %v", err)
	}
	if h, err := wire.DecodeRequestHeader(le.Header, 1<<20); err != nil || h.Size != 300_000 {
		t.Fatalf("refused header: %v %+v", err, h)
	}
	if g.inflight.Used() != 0 {
		t.Fatal("budget held after a refusal")
	}
	// The stream is still framed: the next frame reads.
	f, err := g.r.Next(time.Second)
	if err != nil || !bytes.Equal(f, small) {
		t.Fatalf("frame after the drained one: %v", err)
	}
}

func TestReaderDeadlines(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		g := newRig(t, 1<<20, 1<<20)
		_, err := g.r.Next(100 * time.Millisecond)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Phase != "idle" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("partial header", func(t *testing.T) {
		g := newRig(t, 1<<20, 1<<20)
		g.send(frameOf(300)[:3])
		start := time.Now()
		_, err := g.r.Next(0)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Phase != "header" || te.Got != 3 {
			t.Fatalf("%v", err)
		}
		if time.Since(start) < g.lim.HeaderTimeout {
			t.Fatal("closed before the header deadline")
		}
	})
	t.Run("partial body", func(t *testing.T) {
		g := newRig(t, 1<<20, 1<<20)
		g.r.SetAuthenticated(true)
		f := frameOf(500_000)
		g.send(f[:100_000])
		_, err := g.r.Next(0)
		var te *TimeoutError
		if !errors.As(err, &te) || te.Phase != "body" || te.Got != 100_000 {
			t.Fatalf("%v", err)
		}
		if g.inflight.Used() != 0 {
			t.Fatal("budget held after a timeout")
		}
	})
	t.Run("eof", func(t *testing.T) {
		g := newRig(t, 1<<20, 1<<20)
		g.client.Close()
		if _, err := g.r.Next(0); !errors.Is(err, io.EOF) {
			t.Fatalf("%v", err)
		}
		g = newRig(t, 1<<20, 1<<20)
		done := g.send(frameOf(300)[:280])
		go func() { <-done; g.client.Close() }()
		if _, err := g.r.Next(0); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%v", err)
		}
	})
}

// A frame that declares 1 MiB and trickles holds what arrived, not what it
// declared.
func TestReaderTrickleHoldsWhatArrived(t *testing.T) {
	g := newRig(t, 1<<30, 1<<30)
	g.r.SetAuthenticated(true)
	g.lim.BodyTimeout = 2 * time.Second
	f := frameOf(1 << 20)
	errc := make(chan error, 1)
	go func() {
		_, err := g.r.Next(0)
		errc <- err
	}()
	sent := 0
	for _, n := range []int{300, 1000, 5000, 20000} {
		if _, err := g.client.Write(f[sent : sent+n]); err != nil {
			t.Fatal(err)
		}
		sent += n
		time.Sleep(20 * time.Millisecond)
		if u := g.inflight.Used(); u > 2*int64(sent)+wire.BodyGrowthMin {
			t.Fatalf("%d bytes arrived, %d charged", sent, u)
		}
		if c := cap(g.r.buf); c > 2*sent+wire.BodyGrowthMin && c > 4096 {
			t.Fatalf("%d bytes arrived, buffer of %d", sent, c)
		}
	}
	g.client.Close()
	if err := <-errc; !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%v", err)
	}
}

// FuzzReader: whatever arrives, the reader returns whole frames within
// the limits and gives back every byte of budget.
func FuzzReader(f *testing.F) {
	f.Add(frameOf(300), true)
	f.Add(append(frameOf(260), frameOf(9000)...), false)
	f.Add(frameOf(300)[:100], true)
	f.Fuzz(func(t *testing.T, in []byte, auth bool) {
		unauth, inflight := NewBudget(KeyUnauthBytes, 12_000), NewBudget(KeyInFlightBytes, 40_000)
		lim := Limits{MaxFrame: 64 << 10, UnauthFrameMax: 8192, Unauth: unauth, InFlight: inflight,
			UnauthReadBuffer: 4096, ReadBuffer: 65536, KeepBuffer: 1 << 20}
		r := NewReader(&bytesConn{Reader: bytes.NewReader(in)}, &lim)
		r.SetAuthenticated(auth)
		for i := 0; i < 64; i++ {
			frame, err := r.Next(0)
			if err != nil {
				var le *LimitError
				if errors.As(err, &le) && le.Answerable {
					if r.Discard(le) == nil {
						continue
					}
				}
				break
			}
			if size := wire.FrameSizeOf(frame); int(size) != len(frame) || size > lim.MaxFrame || (!auth && size > lim.UnauthFrameMax) {
				t.Fatalf("frame of %d bytes, size field %d", len(frame), size)
			}
			if inflight.Used() > inflight.Limit() || unauth.Used() > unauth.Limit() {
				t.Fatal("over budget")
			}
		}
		r.Release()
		if inflight.Used() != 0 || unauth.Used() != 0 {
			t.Fatalf("budget left held: %d %d", inflight.Used(), unauth.Used())
		}
	})
}

type bytesConn struct{ *bytes.Reader }

func (*bytesConn) SetReadDeadline(time.Time) error { return nil }
