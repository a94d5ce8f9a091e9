package plane

import (
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestBindBeforeStart: Bind holds the roster port without accepting (a
// peer's dial connects into the backlog, no link comes up), fails on a
// port already taken, and Start then serves on the same socket.
func TestBindBeforeStart(t *testing.T) {
	c := newCluster(t, 2)
	addr1 := c.roster[1].Addr.String()
	for _, ln := range c.lns {
		ln.Close() // the transports bind the roster addresses themselves
	}
	// Replica 1 binds; replica 0, the lower id, is the one that dials.
	cfg := baseConfig(1, c.roster)
	cfg.Deliver = newSink(16).deliver
	cfg.Logger = zap.NewNop()
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Bind(); err != nil {
		t.Fatal(err)
	}
	if tr.Addr() == nil || tr.Addr().String() != addr1 {
		t.Fatalf("bound %v, want %s", tr.Addr(), addr1)
	}
	// A second transport for the same roster entry cannot bind it.
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Bind(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second Bind: %v", err)
	}
	other.Close()
	// Bound, not accepting: replica 0's dials connect (the kernel's
	// backlog) but no handshake is answered, so no link comes up until
	// Start.
	peer := c.start(t, 0, nil, nil)
	conn, err := net.Dial("tcp", addr1)
	if err != nil {
		t.Fatalf("dial of a bound transport: %v", err)
	}
	conn.Close()
	time.Sleep(300 * time.Millisecond) // several of replica 0's redials (10..100 ms apart)
	if peer.tr.Connected(1) || tr.Connected(0) {
		t.Fatal("a link came up before Start")
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the link after Start", func() bool { return tr.Connected(0) && peer.tr.Connected(1) })
	if err := tr.Bind(); err != nil {
		t.Fatalf("Bind after Start: %v", err)
	}
}
