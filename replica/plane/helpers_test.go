package plane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/iggo/iggo/vsr"
)

const (
	testCluster = "plane-test"
	keyOld      = "old-shared-secret-0123456789abcdef"
	keyNew      = "new-shared-secret-0123456789abcdef"
)

// testFrame builds a sealed frame from replica from: a header-only
// StartViewChange when body is empty, else a Chunk carrying body.
func testFrame(cluster vsr.Checksum, from, count uint8, group uint64, body []byte) []byte {
	f := make([]byte, vsr.HeaderSize+len(body))
	copy(f[32:48], cluster[:])
	binary.LittleEndian.PutUint32(f[48:], uint32(len(f)))
	binary.LittleEndian.PutUint16(f[56:], vsr.ProtocolVersion)
	f[59], f[60] = from, count
	binary.LittleEndian.PutUint64(f[64:], group)
	if len(body) == 0 {
		f[58] = byte(vsr.CmdStartViewChange)
	} else {
		f[58] = byte(vsr.CmdChunk)
		binary.LittleEndian.PutUint32(f[108:], uint32(len(body)))
		copy(f[vsr.HeaderSize:], body)
		cb := vsr.BodyChecksum(body)
		copy(f[16:32], cb[:])
	}
	(*vsr.Header)(f[:vsr.HeaderSize]).Seal()
	return f
}

// delivery is one frame a test transport received.
type delivery struct {
	from  uint8
	group uint64
	frame []byte
}

// sink is a Deliver that records frames in a bounded channel and refuses
// (like a full shard inbox) when it is full or told to.
type sink struct {
	ch     chan delivery
	mu     sync.Mutex
	refuse bool
}

var errSinkFull = errors.New("test inbox full")

func newSink(capacity int) *sink { return &sink{ch: make(chan delivery, capacity)} }

func (s *sink) deliver(from uint8, group uint64, m vsr.Message) error {
	s.mu.Lock()
	refuse := s.refuse
	s.mu.Unlock()
	if refuse {
		return errSinkFull
	}
	f := append(append([]byte(nil), m.Header[:]...), m.Body...)
	select {
	case s.ch <- delivery{from, group, f}:
		return nil
	default:
		return errSinkFull
	}
}

func (s *sink) setRefuse(v bool) {
	s.mu.Lock()
	s.refuse = v
	s.mu.Unlock()
}

// next waits for the next delivery; the wait is bounded so a lost frame
// fails the test instead of hanging it.
func (s *sink) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-s.ch:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no frame delivered within 10 s")
		return delivery{}
	}
}

// listenOn binds a loopback listener; ip varies within 127.0.0.0/8 so
// source-address checks can tell nodes apart.
func listenOn(t *testing.T, ip string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func addrOf(ln net.Listener) netip.AddrPort {
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// node is one test transport with its listener, sink and log.
type node struct {
	tr   *Transport
	ln   net.Listener
	sink *sink
	logs *observer.ObservedLogs
	cfg  Config
}

type cluster struct {
	roster []Member
	lns    []net.Listener
	nodes  []*node
}

// newCluster binds n listeners on 127.0.0.1, 127.0.0.2, ... and builds the
// roster from them.
func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{nodes: make([]*node, n)}
	for i := 0; i < n; i++ {
		ln := listenOn(t, fmt.Sprintf("127.0.0.%d", i+1))
		c.lns = append(c.lns, ln)
		c.roster = append(c.roster, Member{ID: uint8(i), Name: fmt.Sprintf("node-%d", i), Addr: addrOf(ln)})
	}
	return c
}

func baseConfig(self uint8, roster []Member) Config {
	return Config{
		Self: self, Roster: roster, ClusterName: testCluster,
		Auth: true, Secret: []byte(keyOld),
		ReconnectMin: 10 * time.Millisecond, ReconnectMax: 100 * time.Millisecond,
		HandshakeGrace: 5 * time.Second, CloseTimeout: 5 * time.Second,
		LogInterval: time.Millisecond,
	}
}

// start starts node i with cfg adjusted by mut, on listener ln (a fresh
// one when nil: restarts rebind the same address).
func (c *cluster) start(t *testing.T, i int, ln net.Listener, mut func(*Config)) *node {
	t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", c.roster[i].Addr.String())
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg := baseConfig(uint8(i), c.roster)
	if mut != nil {
		mut(&cfg)
	}
	core, logs := observer.New(zap.DebugLevel)
	s := newSink(4096)
	cfg.Deliver = s.deliver
	cfg.Listener = ln
	cfg.Logger = zap.New(core)
	tr, err := New(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	if err := tr.Start(); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	nd := &node{tr: tr, ln: ln, sink: s, logs: logs, cfg: cfg}
	c.nodes[i] = nd
	return nd
}

func (c *cluster) startAll(t *testing.T, mut func(i int, cfg *Config)) {
	for i := range c.roster {
		c.start(t, i, c.lns[i], func(cfg *Config) {
			if mut != nil {
				mut(i, cfg)
			}
		})
	}
}

// eventually polls cond until it holds or 10 s pass. It waits for
// asynchronous progress (connects, deliveries); it asserts no speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *cluster) waitMesh(t *testing.T) {
	t.Helper()
	eventually(t, "full mesh", func() bool {
		for _, n := range c.nodes {
			for j := range c.roster {
				if uint8(j) != n.cfg.Self && !n.tr.Connected(uint8(j)) {
					return false
				}
			}
		}
		return true
	})
}

// logged reports whether a warn-level log line mentions reason.
func logged(logs *observer.ObservedLogs, reason Reason) bool {
	for _, e := range logs.All() {
		if e.Level < zap.WarnLevel {
			continue
		}
		for _, f := range e.Context {
			if f.Key == "reason" && f.String == reason.String() {
				return true
			}
		}
	}
	return false
}

func peerStats(s Stats, id uint8) PeerStats {
	for _, p := range s.Peers {
		if p.ReplicaID == id {
			return p
		}
	}
	panic(fmt.Sprintf("no peer %d in stats", id))
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
