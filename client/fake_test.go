package client

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

// fakeServer is a scripted iggo/Iggy server built on package wire, on a
// loopback listener. It answers every request with what a single node would
// (login, roster, topics, sends, polls...) unless a hook replaces the reply.
type fakeServer struct {
	t    *testing.T
	ln   net.Listener
	addr string

	mu         sync.Mutex
	requests   []record
	conns      map[net.Conn]bool
	sessions   uint64
	partitions uint32
	roster     *wire.ClusterMetadata
	hook       func(fc *fakeConn, h wire.RequestHeader, body []byte) (reply []byte, handled bool)
	// lockstep makes the server check, before each reply, that the client
	// has not written anything more (one request in flight).
	lockstep   bool
	violations int
	// noRecord skips keeping request copies (benchmarks).
	noRecord bool
	wg       sync.WaitGroup
}

// record is one request as the server saw it.
type record struct {
	conn    int
	header  wire.RequestHeader
	body    []byte
	frame   []byte
	session uint64 // bound session of the connection at the time
}

type fakeConn struct {
	s       *fakeServer
	nc      net.Conn
	id      int
	session uint64
	client  wire.Uint128
	peeked  []byte
}

// Read lets the connection serve bytes consumed by the lockstep check first.
func (fc *fakeConn) Read(p []byte) (int, error) {
	if len(fc.peeked) > 0 {
		n := copy(p, fc.peeked)
		fc.peeked = fc.peeked[n:]
		return n, nil
	}
	return fc.nc.Read(p)
}

// dropConnection is returned by hooks to make the server close the socket
// without answering.
var dropConnection = []byte("drop")

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startFakeServer(t, ln)
}

func startFakeServer(t *testing.T, ln net.Listener) *fakeServer {
	s := &fakeServer{t: t, ln: ln, addr: ln.Addr().String(), conns: map[net.Conn]bool{}, partitions: 3}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *fakeServer) accept() {
	defer s.wg.Done()
	id := 0
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[nc] = true
		s.mu.Unlock()
		id++
		fc := &fakeConn{s: s, nc: nc, id: id}
		s.wg.Add(1)
		go fc.serve()
	}
}

func (s *fakeServer) setHook(h func(fc *fakeConn, h wire.RequestHeader, body []byte) ([]byte, bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

func (s *fakeServer) recorded() []record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]record(nil), s.requests...)
}

func (s *fakeServer) countCode(code wire.CommandCode) int {
	n := 0
	for _, r := range s.recorded() {
		if r.header.Code == code {
			n++
		}
	}
	return n
}

func (s *fakeServer) openConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (fc *fakeConn) serve() {
	s := fc.s
	defer s.wg.Done()
	defer func() {
		fc.nc.Close()
		s.mu.Lock()
		delete(s.conns, fc.nc)
		s.mu.Unlock()
	}()
	for {
		frame, err := wire.ReadFrame(fc, nil, 0)
		if err != nil {
			return
		}
		s.mu.Lock()
		check := s.lockstep
		s.mu.Unlock()
		if check {
			time.Sleep(2 * time.Millisecond)
			var one [1]byte
			_ = fc.nc.SetReadDeadline(time.Now().Add(time.Millisecond))
			if n, _ := fc.nc.Read(one[:]); n > 0 {
				fc.peeked = append(fc.peeked, one[0])
				s.mu.Lock()
				s.violations++
				s.mu.Unlock()
			}
			_ = fc.nc.SetReadDeadline(time.Time{})
		}
		h, body, err := wire.DecodeRequest(frame, 0)
		if err != nil {
			s.t.Errorf("fake server: bad request frame: %v", err)
			return
		}
		s.mu.Lock()
		if !s.noRecord {
			s.requests = append(s.requests, record{conn: fc.id, header: h, body: bytes.Clone(body), frame: bytes.Clone(frame), session: fc.session})
		}
		hook := s.hook
		s.mu.Unlock()
		var reply []byte
		handled := false
		if hook != nil {
			reply, handled = hook(fc, h, body)
		}
		if !handled {
			reply = fc.defaultReply(h, body)
		}
		if bytes.Equal(reply, dropConnection) {
			return
		}
		if reply == nil {
			continue // swallow: the client must time out
		}
		if _, err := fc.nc.Write(reply); err != nil {
			return
		}
	}
}

func (fc *fakeConn) login(h wire.RequestHeader) []byte {
	s := fc.s
	s.mu.Lock()
	s.sessions++
	fc.session = s.sessions
	s.mu.Unlock()
	fc.client = h.Client
	p, _ := (&wire.LoginReply{UserID: 0, Session: fc.session, ServerProtocol: wire.CurrentProtocol, ServerVersion: "fake"}).AppendTo(nil)
	return wire.AppendReply(nil, &h, p)
}

func (fc *fakeConn) defaultReply(h wire.RequestHeader, body []byte) []byte {
	s := fc.s
	switch h.Operation {
	case wire.OpRegister:
		reg, err := wire.DecodeRegister(body)
		if err != nil {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictMalformedLogin, 0, 0)
		}
		if reg.Password != nil && reg.Password.Password == "wrong" {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictInvalidCredentials, 0, 0)
		}
		return fc.login(h)
	case wire.OpLogout:
		fc.session = 0
		return wire.AppendReply(nil, &h, nil)
	case wire.OpNonReplicated:
		if fc.session == 0 && h.Code != wire.CmdPing {
			return wire.AppendStatusReply(nil, &h, wire.CodeUnauthenticated)
		}
	default:
		if fc.session == 0 || h.Session != fc.session {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictNoSession, 0, 0)
		}
	}
	req, err := wire.DecodeRequestBody(h.Code, body)
	if err != nil {
		return wire.AppendStatusReply(nil, &h, wire.CodeInvalidCommand)
	}
	var payload wire.ReplyPayload
	switch r := req.(type) {
	case *wire.GetClusterMetadata:
		s.mu.Lock()
		md := s.roster
		s.mu.Unlock()
		if md == nil {
			host, port, _ := net.SplitHostPort(s.addr)
			p, _ := strconv.Atoi(port)
			md = &wire.ClusterMetadata{Name: "fake", Nodes: []wire.ClusterNode{{Name: "n0", IP: host, TCPPort: uint16(p)}}}
		}
		payload = md
	case *wire.CreateStream:
		payload = &wire.Stream{ID: 0, Name: r.Name}
	case *wire.GetTopic:
		s.mu.Lock()
		n := s.partitions
		s.mu.Unlock()
		td := wire.TopicDetails{Topic: wire.Topic{ID: 0, PartitionsCount: n, Name: "t", CompressionAlgorithm: wire.CompressionNone}}
		for i := uint32(0); i < n; i++ {
			td.Partitions = append(td.Partitions, wire.Partition{ID: i, SegmentsCount: 1})
		}
		payload = &td
	case *wire.SendMessages:
		payload = wire.SendConfirmations{{PartitionID: r.Partitioning.PartitionID, BaseOffset: 0}}
	case *wire.PollMessages:
		b, _ := wire.AppendBatch(nil, []wire.Message{{Payload: []byte("p" + strconv.Itoa(int(r.Partition.ID)))}})
		v, _ := wire.ParseBatch(b)
		v.Stamp(uint64(r.Partition.ID), 0, 1)
		out := wire.AppendPollReplyPrefix(nil, r.Partition.ID, 0, 1)
		payload = wire.SnapshotFile(append(out, b...))
	case *wire.SyncConsumerGroup:
		payload = &wire.GroupAssignment{Generation: 1, Partitions: []uint32{0, 2}}
	}
	var p []byte
	if payload != nil {
		p, err = payload.AppendTo(nil)
		if err != nil {
			s.t.Errorf("fake server: encode reply: %v", err)
		}
	}
	return wire.AppendReply(nil, &h, p)
}

// testConfig is a fast configuration pointing at addr.
func testConfig(addrs ...string) Config {
	cfg := DefaultConfig()
	cfg.Addresses = addrs
	cfg.Username, cfg.Password = "iggy", "iggy"
	cfg.DialTimeout = 2 * time.Second
	cfg.RequestTimeout = 5 * time.Second
	cfg.ReplayInterval = 5 * time.Millisecond
	cfg.NotAcceptedBudget = 50 * time.Millisecond
	cfg.Reconnect.Backoff = 5 * time.Millisecond
	cfg.Reconnect.MaxBackoff = 20 * time.Millisecond
	cfg.LeaderlessWait = 100 * time.Millisecond
	cfg.LeaderlessPoll = 10 * time.Millisecond
	cfg.HeartbeatInterval = 0
	return cfg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
