package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// overTransports runs body once per client transport the server serves
// (tcp, tcp-tls, ws, wss), each against its own server.
func overTransports(t *testing.T, body func(t *testing.T, tr harness.Transport)) {
	for _, tr := range harness.AllTransports {
		t.Run(tr.Name, func(t *testing.T) { body(t, tr) })
	}
}

// startOver starts a server whose clients (Root, Client) use tr.
func startOver(t testing.TB, tr harness.Transport, env ...string) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true, Env: env, Transport: tr})
}

// TestCrossTransport: messages sent over each transport are polled back
// over every other, byte-identical. One server serves one tcp and one
// websocket listener, so the data directory is served twice: tcp + ws +
// quic, then tcp-tls + wss + quic.
func TestCrossTransport(t *testing.T) {
	dir := t.TempDir() + "/data"
	const stream, topic = "x", "t"
	type sent struct {
		via  string
		msgs []wire.Message
	}
	var all []sent
	send := func(s *harness.Server, tr harness.Transport, tag uint32) {
		c := s.RootOver(t, tr)
		msgs := payloadMsgs(t, tag, 0, 10, 300+int(tag))
		for i := range msgs {
			msgs[i].Payload[20] = byte(tag) // distinct bytes per transport
		}
		_, err := c.SendMessages(ctxT(t), name(stream), name(topic), wire.PartitionByID(0), msgs)
		must(t, err, "send over "+tr.Name)
		all = append(all, sent{tr.Name, msgs})
	}
	check := func(s *harness.Server, tr harness.Transport) {
		c := s.RootOver(t, tr)
		pm := poll(t, c, stream, topic, 0, wire.PollFromOffset(0), 1000, wire.SingleConsumer(id(1)), false)
		got := pm.Messages()
		i := 0
		for _, sn := range all {
			for _, m := range sn.msgs {
				if i >= len(got) {
					t.Fatalf("over %s: polled %d messages, want more (sent over %s missing)", tr.Name, len(got), sn.via)
				}
				if !bytes.Equal(got[i].Payload, m.Payload) || got[i].ID != m.ID {
					t.Fatalf("over %s: message %d (sent over %s) differs", tr.Name, i, sn.via)
				}
				i++
			}
		}
		if i != len(got) {
			t.Fatalf("over %s: polled %d messages, sent %d", tr.Name, len(got), i)
		}
	}
	a := harness.Start(t, harness.Options{DefaultRoot: true, DataDir: dir, Transport: harness.TCP, Serve: []harness.Transport{harness.WS, harness.QUIC}})
	createStreamTopic(t, a.Root(t), stream, topic, 1, nil)
	send(a, harness.TCP, 1)
	send(a, harness.WS, 2)
	send(a, harness.QUIC, 5)
	check(a, harness.TCP)
	check(a, harness.WS)
	check(a, harness.QUIC)
	must(t, a.Stop(30*time.Second), "stopping the plaintext server")

	b := harness.Start(t, harness.Options{DefaultRoot: true, DataDir: dir, Transport: harness.TCPTLS, Serve: []harness.Transport{harness.WSS, harness.QUIC}})
	send(b, harness.TCPTLS, 3)
	send(b, harness.WSS, 4)
	for _, tr := range []harness.Transport{harness.TCPTLS, harness.WSS, harness.QUIC} {
		check(b, tr)
	}
}

// TestTLSRefusesPlaintext: a tcp.tls node closes plaintext clients (raw
// frames and the client library without TLS), logs it rate-limited, and
// keeps serving TLS clients.
func TestTLSRefusesPlaintext(t *testing.T) {
	s := startOver(t, harness.TCPTLS)
	good := s.Root(t)
	const attempts = 30
	for i := 0; i < attempts; i++ {
		r := dialRaw(t, s.Addr)
		r.writeBytes(r.frame(wire.OpNonReplicated, wire.CmdPing, nil))
		if f := r.read(); f != nil {
			t.Fatalf("attempt %d: a plaintext ping was answered (%d bytes)", i, len(f))
		}
	}
	cfg := s.ClientConfigOver(harness.TCP, "iggy", "iggy")
	cfg.Reconnect.Enabled = false
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := client.Dial(ctx, cfg); err == nil {
		c.Close()
		t.Fatal("the client logged in over plaintext to a TLS listener")
	}
	must(t, good.Ping(ctxT(t)), "TLS client after the plaintext attempts")
	lines := strings.Count(s.Output(), "plaintext on a TLS listener")
	if lines < 1 || lines >= attempts {
		t.Fatalf("%d log lines for %d plaintext attempts, want at least one and rate-limited", lines, attempts+1)
	}
	// A client that does not trust the server's CA is refused too.
	cfg = s.ClientConfig("iggy", "iggy")
	cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	cfg.Reconnect.Enabled = false
	if c, err := client.Dial(ctx, cfg); err == nil {
		c.Close()
		t.Fatal("a client without the CA connected")
	}
}

// wsDial opens a raw WebSocket connection to s.
func wsDial(t *testing.T, s *harness.Server) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+s.WSAddr+"/", nil)
	must(t, err, "websocket dial")
	c.SetReadLimit(1 << 26)
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// wsClosed reports whether the server ends c within 10 s (a read fails)
// instead of answering.
func wsClosed(t *testing.T, c *websocket.Conn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.Read(ctx)
	if err != nil && ctx.Err() != nil {
		t.Fatal("the server neither answered nor closed within 10 s")
	}
	return err != nil
}

// TestWebSocketBadMessages: a text message, a frame split over two
// messages, two frames in one message and a message over max_message_size
// each close their connection with a rate-limited line; a well-formed
// ping on another connection is answered throughout.
func TestWebSocketBadMessages(t *testing.T) {
	s := startOver(t, harness.WS, "IGGY_WEBSOCKET_MAX_MESSAGE_SIZE=64 KiB", "IGGY_WEBSOCKET_MAX_FRAME_SIZE=32 KiB")
	r := &raw{t: t, client: wire.Uint128{Lo: 99, Hi: 7}}
	ping := r.frame(wire.OpNonReplicated, wire.CmdPing, nil)
	ctx := ctxT(t)

	good := wsDial(t, s)
	roundTrip := func(what string) {
		must(t, good.Write(ctx, websocket.MessageBinary, ping), what+": write")
		typ, reply, err := good.Read(ctx)
		must(t, err, what+": read")
		if typ != websocket.MessageBinary || statusOf(t, reply) != 0 {
			t.Fatalf("%s: reply %v %d bytes", what, typ, len(reply))
		}
	}
	roundTrip("first ping")

	cases := []struct {
		name string
		send func(c *websocket.Conn) error
	}{
		{"text", func(c *websocket.Conn) error { return c.Write(ctx, websocket.MessageText, ping) }},
		{"split", func(c *websocket.Conn) error {
			if err := c.Write(ctx, websocket.MessageBinary, ping[:100]); err != nil {
				return err
			}
			return c.Write(ctx, websocket.MessageBinary, ping[100:])
		}},
		{"two frames", func(c *websocket.Conn) error {
			return c.Write(ctx, websocket.MessageBinary, append(append([]byte(nil), ping...), ping...))
		}},
		{"oversized message", func(c *websocket.Conn) error {
			return c.Write(ctx, websocket.MessageBinary, r.frame(wire.OpNonReplicated, wire.CmdPing, make([]byte, 100<<10)))
		}},
		{"oversized ws frame", func(c *websocket.Conn) error {
			// 40 KiB in one WebSocket frame: under the message limit, over the frame limit.
			return c.Write(ctx, websocket.MessageBinary, r.frame(wire.OpNonReplicated, wire.CmdPing, make([]byte, 40<<10)))
		}},
	}
	for _, tc := range cases {
		c := wsDial(t, s)
		if err := tc.send(c); err != nil {
			t.Logf("%s: write failed early: %v", tc.name, err)
		}
		if !wsClosed(t, c) {
			t.Fatalf("%s: the server answered instead of closing", tc.name)
		}
		roundTrip("ping after " + tc.name)
	}
	out := s.Output()
	if n := strings.Count(out, "closing connection: message refused"); n < 1 || n > len(cases) {
		t.Fatalf("%d refusal lines for %d bad connections", n, len(cases))
	}
	for _, want := range []string{"text message", "ends inside a frame", "more than one frame", "max_frame_size"} {
		if !strings.Contains(out, want) {
			t.Errorf("no log line says %q", want)
		}
	}
}

// TestWebSocketConnectionsMax: connections_max counts WebSocket
// connections with the others: beyond it a ws client is closed at accept.
func TestWebSocketConnectionsMax(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true, Transport: harness.WS,
		Env: []string{"IGGY_MESSAGE_BUS_CONNECTIONS_MAX=2"}})
	a := s.RootOver(t, harness.WS)
	b := s.RootOver(t, harness.TCP)
	cfg := s.ClientConfigOver(harness.WS, "iggy", "iggy")
	cfg.Reconnect.Enabled = false
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if c, err := client.Dial(ctx, cfg); err == nil {
		c.Close()
		t.Fatal("a third connection was served with connections_max = 2")
	}
	must(t, a.Ping(ctx), "ws client within the cap")
	must(t, b.Ping(ctx), "tcp client within the cap")
	if !strings.Contains(s.Output(), "message_bus.connections_max") {
		t.Fatal("the refusal was not logged")
	}
	_ = net.IPv4len
}
