package integration

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

// raw is a hand-driven client connection for malformed and out-of-protocol
// frames.
type raw struct {
	t       *testing.T
	c       net.Conn
	client  wire.Uint128
	session uint64
	request uint64
}

func dialRaw(t *testing.T, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	must(t, err, "dial")
	t.Cleanup(func() { _ = c.Close() })
	return &raw{t: t, c: c, client: wire.Uint128{Lo: uint64(time.Now().UnixNano()), Hi: 7}}
}

func (r *raw) writeBytes(b []byte) {
	r.t.Helper()
	_ = r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *raw) frame(op wire.Operation, code wire.CommandCode, body []byte) []byte {
	h := wire.RequestHeader{Client: r.client, Operation: op, Code: code, Session: r.session, Request: r.request}
	if op == wire.OpRegister {
		h.Session, h.Request = 0, 0
	}
	return wire.AppendRequest(nil, h, body)
}

// read returns the next frame from the server, or nil when the server
// closed the connection.
func (r *raw) read() []byte {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := wire.ReadFrame(r.c, nil, 0)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			r.t.Fatal("no answer within 10 s: the server dropped a request silently")
		}
		return nil
	}
	return f
}

func (r *raw) roundTrip(op wire.Operation, code wire.CommandCode, body []byte) []byte {
	r.t.Helper()
	r.writeBytes(r.frame(op, code, body))
	return r.read()
}

func statusOf(t *testing.T, f []byte) wire.Code {
	t.Helper()
	if f == nil || wire.FrameKindOf(f) != wire.FrameReply {
		t.Fatalf("want a reply frame, got %v", f)
	}
	return wire.Code(binary.LittleEndian.Uint32(f[216:]))
}

func evictionOf(t *testing.T, f []byte) (wire.EvictionReason, uint32, uint32) {
	t.Helper()
	if f == nil || wire.FrameKindOf(f) != wire.FrameEviction {
		t.Fatalf("want an eviction frame, got %d bytes", len(f))
	}
	return wire.EvictionReason(f[255]), binary.LittleEndian.Uint32(f[148:]), binary.LittleEndian.Uint32(f[144:])
}

func loginBody(t *testing.T, user, pass string, proto wire.ProtocolVersion) []byte {
	b, err := (&wire.LoginRegister{Version: wire.ClientVersionInfo{Protocol: proto, SDKName: "raw", SDKVersion: "1"},
		Username: user, Password: pass}).AppendBody(nil)
	must(t, err, "login body")
	return b
}

func (r *raw) login(user, pass string) {
	r.t.Helper()
	f := r.roundTrip(wire.OpRegister, 0, loginBody(r.t, user, pass, wire.CurrentProtocol))
	if statusOf(r.t, f) != 0 {
		r.t.Fatalf("login status %d", statusOf(r.t, f))
	}
	lr, err := wire.DecodeLoginReply(f[wire.HeaderSize+4:])
	must(r.t, err, "login reply")
	r.session, r.request = lr.Session, 1
}

func closed(r *raw) bool {
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	_, err := r.c.Read(b[:])
	return err != nil
}

// TestBadInput sends malformed frames, out-of-range sizes, unknown commands,
// wrong protocol versions, pre-login and session-less requests while a
// producer keeps sending on another connection: each gets Iggy's answer or
// the connection is closed, and the producer and its data are unaffected.
func TestBadInput(t *testing.T) {
	s := start(t)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "bad", "t", 1, nil)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		sent := 0
		for {
			select {
			case <-stop:
				done <- sent
				return
			default:
			}
			if _, err := c.SendMessages(ctx, name("bad"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, sent, 10, 64)); err != nil {
				t.Errorf("producer failed during the bad input: %v", err)
				done <- sent
				return
			}
			sent += 10
		}
	}()

	t.Run("size below 256 closes", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		f := r.frame(wire.OpNonReplicated, wire.CmdPing, nil)
		binary.LittleEndian.PutUint32(f[48:], 100)
		r.writeBytes(f)
		if !closed(r) {
			t.Fatal("connection stayed open after a frame of 100 bytes")
		}
	})
	t.Run("size above 64 MiB closes", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		f := r.frame(wire.OpNonReplicated, wire.CmdPing, nil)
		binary.LittleEndian.PutUint32(f[48:], 64<<20+1)
		r.writeBytes(f)
		if !closed(r) {
			t.Fatal("connection stayed open after a 64 MiB + 1 frame")
		}
	})
	t.Run("garbage header closes", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		g := make([]byte, 256)
		for i := range g {
			g[i] = byte(i * 7)
		}
		binary.LittleEndian.PutUint32(g[48:], 256)
		r.writeBytes(g)
		if !closed(r) {
			t.Fatal("connection stayed open after a garbage header")
		}
	})
	t.Run("truncated frame then close", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		f := r.frame(wire.OpNonReplicated, wire.CmdPing, make([]byte, 100))
		r.writeBytes(f[:300])
		_ = r.c.Close()
	})
	t.Run("only ping before login", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdPing, nil)); st != 0 {
			t.Fatalf("pre-login ping status %d", st)
		}
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdGetStreams, nil)); st != wire.CodeUnauthenticated {
			t.Fatalf("pre-login read status %d, want 40", st)
		}
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdGetClusterMetadata, nil)); st != wire.CodeUnauthenticated {
			t.Fatalf("pre-login cluster metadata status %d, want 40", st)
		}
	})
	t.Run("replicated op without a session is evicted", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		r.session, r.request = 5, 1
		body, _ := (&wire.CreateStream{Name: "x"}).AppendBody(nil)
		if reason, _, _ := evictionOf(t, r.roundTrip(wire.OpCreateStream, 0, body)); reason != wire.EvictNoSession {
			t.Fatalf("eviction reason %d, want NoSession", reason)
		}
	})
	t.Run("wrong protocol version", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		v, _ := wire.PackVersion(0, 12, 0)
		reason, lo, hi := evictionOf(t, r.roundTrip(wire.OpRegister, 0, loginBody(t, "iggy", "iggy", v)))
		if reason != wire.EvictIncompatibleProtocol || lo == 0 || lo > hi || wire.ProtocolVersion(lo)>>10 != wire.CurrentProtocol>>10 {
			t.Fatalf("eviction %d window [%d, %d]", reason, lo, hi)
		}
	})
	t.Run("bad credentials and malformed logins", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		if reason, _, _ := evictionOf(t, r.roundTrip(wire.OpRegister, 0, loginBody(t, "iggy", "wrong-password", wire.CurrentProtocol))); reason != wire.EvictInvalidCredentials {
			t.Fatalf("bad password eviction %d", reason)
		}
		r = dialRaw(t, s.Addr)
		if reason, _, _ := evictionOf(t, r.roundTrip(wire.OpRegister, 0, []byte{1, 2})); reason != wire.EvictMalformedLogin {
			t.Fatalf("malformed login eviction %d", reason)
		}
		r = dialRaw(t, s.Addr)
		r.login("iggy", "iggy")
		if reason, _, _ := evictionOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdLoginUser, []byte{4, 'i', 'g', 'g', 'y'})); reason != wire.EvictMalformedLogin {
			t.Fatalf("legacy login eviction %d", reason)
		}
	})
	t.Run("unknown command and undecodable bodies", func(t *testing.T) {
		r := dialRaw(t, s.Addr)
		r.login("iggy", "iggy")
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, 60000, nil)); st != wire.CodeInvalidCommand {
			t.Fatalf("unknown command status %d, want 3", st)
		}
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdGetStream, []byte{9, 9, 9})); st == 0 {
			t.Fatal("undecodable get_stream accepted")
		}
		// A send whose batch checksum does not verify.
		body, err := (&wire.SendMessages{StreamID: name("bad"), TopicID: name("t"), Partitioning: wire.PartitionByID(0),
			Messages: payloadMsgs(t, 0, 0, 3, 32)}).AppendBody(nil)
		must(t, err, "send body")
		body[len(body)-1] ^= 0xFF
		st := statusOf(t, r.roundTrip(wire.OpSendMessages, 0, body))
		if st != wire.CodeInvalidMessageChecksum && st != wire.CodeInvalidBatchChecksum {
			t.Fatalf("corrupt batch status %d", st)
		}
		// The connection still works.
		if st := statusOf(t, r.roundTrip(wire.OpNonReplicated, wire.CmdPing, nil)); st != 0 {
			t.Fatalf("ping after errors: %d", st)
		}
		// A wrong session on a bound connection.
		r.session++
		body, _ = (&wire.CreateStream{Name: "y"}).AppendBody(nil)
		if reason, _, _ := evictionOf(t, r.roundTrip(wire.OpCreateStream, 0, body)); reason != wire.EvictSessionError {
			t.Fatalf("foreign session eviction %d", reason)
		}
	})

	close(stop)
	sent := <-done
	if sent == 0 {
		t.Fatal("the producer sent nothing")
	}
	pm := poll(t, c, "bad", "t", 0, wire.PollFromFirst(), uint32(sent)+10, wire.SingleConsumer(id(1)), false)
	wantOffsets(t, pm, 0, sent)
	for i, m := range pm.Messages() {
		if _, seq := seqOf(m.Payload); seq != uint64(i) {
			t.Fatalf("offset %d holds seq %d", i, seq)
		}
	}
	if _, err := c.GetStream(ctx, name("x")); err == nil {
		t.Fatal("a session-less create stream was applied")
	}
}
