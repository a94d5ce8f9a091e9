package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// The QUIC transport against the real server: commands over QUIC, a send
// over one transport polled back over the other byte for byte, bad streams
// and certificate refusals.

func startQUIC(t *testing.T, env ...string) *harness.Server {
	t.Helper()
	return start(t, append(append([]string(nil), harness.QUICEnv...), env...)...)
}

// TestQUICCommands runs the command families over QUIC: system, streams and
// topics, send and poll, offsets, users and permissions, consumer groups.
func TestQUICCommands(t *testing.T) {
	s := startQUIC(t)
	c := s.RootQUIC(t)
	ctx := ctxT(t)

	must(t, c.Ping(ctx), "ping")
	me, err := c.GetMe(ctx)
	must(t, err, "get me")
	if me.Transport != wire.TransportQUIC {
		t.Fatalf("get me over quic reports transport %d, want %d (quic)", me.Transport, wire.TransportQUIC)
	}
	cm, err := c.GetClusterMetadata(ctx)
	must(t, err, "cluster metadata")
	_, qport, _ := net.SplitHostPort(s.QUICAddr)
	if len(cm.Nodes) != 1 || strconv.Itoa(int(cm.Nodes[0].QUICPort)) != qport {
		t.Fatalf("cluster metadata %+v, quic bound at %s", cm, s.QUICAddr)
	}

	createStreamTopic(t, c, "q", "t", 2, nil)
	cons := wire.SingleConsumer(id(3))
	for b := 0; b < 3; b++ {
		conf, err := c.SendMessages(ctx, name("q"), name("t"), wire.PartitionByID(1), payloadMsgs(t, 1, b*100, 100, 1000))
		must(t, err, "send over quic")
		if len(conf) != 1 || conf[0].BaseOffset != uint64(b*100) {
			t.Fatalf("confirmation %+v, want base %d", conf, b*100)
		}
	}
	wantOffsets(t, poll(t, c, "q", "t", 1, wire.PollFromOffset(0), 1000, cons, false), 0, 300)
	pm := poll(t, c, "q", "t", 1, wire.PollFromOffset(150), 20, cons, false)
	wantOffsets(t, pm, 150, 20)
	for i, m := range pm.Messages() {
		if _, seq := seqOf(m.Payload); seq != uint64(150+i) {
			t.Fatalf("message at offset %d carries seq %d", m.Offset, seq)
		}
	}
	must(t, c.StoreConsumerOffset(ctx, cons, name("q"), name("t"), wire.SomePartition(1), 41), "store offset")
	off, err := c.GetConsumerOffset(ctx, cons, name("q"), name("t"), wire.SomePartition(1))
	must(t, err, "get offset")
	if off == nil || off.StoredOffset != 41 || off.CurrentOffset != 299 {
		t.Fatalf("offset %+v", off)
	}
	wantOffsets(t, poll(t, c, "q", "t", 1, wire.PollFromNext(), 5, cons, true), 42, 5)

	// A reply larger than one flow-control window (the client's is 100 KB).
	big := poll(t, c, "q", "t", 1, wire.PollFromFirst(), 300, cons, false)
	wantOffsets(t, big, 0, 300)

	// Errors come back over the stream like replies.
	_, err = c.SendMessages(ctx, name("q"), name("t"), wire.PartitionByID(5), payloadMsgs(t, 0, 0, 1, 32))
	wantCode(t, err, wire.CodePartitionNotFound, "send to a missing partition")

	// Users and permissions: a user without rights is refused over QUIC too.
	_, err = c.CreateUser(ctx, wire.CreateUser{Username: "quser", Password: "secret-pass", Status: wire.UserActive})
	must(t, err, "create user")
	u := s.QUICClient(t, "quser", "secret-pass")
	_, err = u.SendMessages(ctx, name("q"), name("t"), wire.PartitionByID(1), payloadMsgs(t, 0, 0, 1, 32))
	wantCode(t, err, wire.CodeUnauthorized, "send without permission")

	// Consumer groups.
	_, err = c.CreateConsumerGroup(ctx, name("q"), name("t"), "g")
	must(t, err, "create group")
	must(t, c.JoinConsumerGroup(ctx, name("q"), name("t"), name("g")), "join group")
	g, err := c.GetConsumerGroup(ctx, name("q"), name("t"), name("g"))
	must(t, err, "get group")
	if g.MembersCount != 1 {
		t.Fatalf("group %+v", g)
	}
	must(t, c.LeaveConsumerGroup(ctx, name("q"), name("t"), name("g")), "leave group")

	clients, err := c.GetClients(ctx)
	must(t, err, "get clients")
	quics := 0
	for _, cl := range clients {
		if cl.Transport == wire.TransportQUIC {
			quics++
		}
	}
	if quics != 2 {
		t.Fatalf("get clients: %d over quic, want 2: %+v", quics, clients)
	}
	must(t, c.Logout(ctx), "logout")
}

// TestQUICTCPByteIdentical: messages sent over QUIC are polled back over TCP
// byte for byte (payload, headers, id), and the other way round.
func TestQUICTCPByteIdentical(t *testing.T) {
	s := startQUIC(t)
	q, tc := s.RootQUIC(t), s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, tc, "x", "t", 1, nil)
	cons := wire.SingleConsumer(id(1))
	check := func(from, to *client.Client, base uint64, what string) {
		msgs := make([]wire.Message, 50)
		for i := range msgs {
			p := bytes.Repeat([]byte{byte(i), byte(base)}, 300+i)
			m, err := client.NewMessage(p)
			must(t, err, "message")
			msgs[i] = m
		}
		_, err := from.SendMessages(ctx, name("x"), name("t"), wire.PartitionByID(0), msgs)
		must(t, err, what+": send")
		pm := poll(t, to, "x", "t", 0, wire.PollFromOffset(base), 50, cons, false)
		got := pm.Messages()
		if len(got) != len(msgs) {
			t.Fatalf("%s: polled %d messages, want %d", what, len(got), len(msgs))
		}
		for i, m := range got {
			if m.Offset != base+uint64(i) || !bytes.Equal(m.Payload, msgs[i].Payload) ||
				!bytes.Equal(m.UserHeaders, msgs[i].UserHeaders) || m.ID != msgs[i].ID {
				t.Fatalf("%s: message %d differs (offset %d, %d payload bytes, id %v want %v)", what, i, m.Offset, len(m.Payload), m.ID, msgs[i].ID)
			}
		}
	}
	check(q, tc, 0, "quic to tcp")
	check(tc, q, 50, "tcp to quic")
}

// TestQUICBadStreams: a stream that closes without a request or carries two
// frames ends its connection with QUIC's protocol-violation code and one
// log line; other connections are not affected.
func TestQUICBadStreams(t *testing.T) {
	s := startQUIC(t)
	good := s.RootQUIC(t)
	ctx := ctxT(t)
	for _, tc := range []struct {
		name string
		send func(st *quic.Stream)
	}{
		{"empty", func(st *quic.Stream) { _ = st.Close() }},
		{"two frames", func(st *quic.Stream) {
			f := make([]byte, 2*wire.HeaderSize) // two header-only frames on one stream
			binary.LittleEndian.PutUint32(f[48:], wire.HeaderSize)
			binary.LittleEndian.PutUint32(f[wire.HeaderSize+48:], wire.HeaderSize)
			_, _ = st.Write(f)
			_ = st.Close()
		}},
	} {
		qc, err := quic.DialAddr(ctx, s.QUICAddr, &tls.Config{InsecureSkipVerify: true}, &quic.Config{MaxIdleTimeout: time.Minute})
		must(t, err, "dial")
		st, err := qc.OpenStream()
		must(t, err, "open stream")
		tc.send(st)
		select {
		case <-qc.Context().Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: connection not closed", tc.name)
		}
		var ae *quic.ApplicationError
		if err := context.Cause(qc.Context()); !errors.As(err, &ae) || ae.ErrorCode != 0x1004 {
			t.Fatalf("%s: connection closed with %v, want application error 0x1004", tc.name, err)
		}
	}
	must(t, good.Ping(ctx), "ping on another connection")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.Output(), "quic stream") && !strings.Contains(s.Output(), "closed without a request") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the refused stream:\n%s", s.Tail(4<<10))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestQUICCertificateRefusal: with self_signed off, a missing certificate
// or key file refuses to start, naming its key.
func TestQUICCertificateRefusal(t *testing.T) {
	dir := t.TempDir()
	certFile := dir + "/cert.pem"
	must(t, os.WriteFile(certFile, []byte("not read as far as the key"), 0o600), "write cert")
	for _, tc := range []struct {
		env []string
		key string
	}{
		{[]string{"IGGY_QUIC_CERTIFICATE_CERT_FILE=" + dir + "/none.pem", "IGGY_QUIC_CERTIFICATE_KEY_FILE=" + dir + "/none-key.pem"}, "quic.certificate.cert_file"},
		{[]string{"IGGY_QUIC_CERTIFICATE_CERT_FILE=" + certFile, "IGGY_QUIC_CERTIFICATE_KEY_FILE=" + dir + "/none-key.pem"}, "quic.certificate.key_file"},
	} {
		env := append(append([]string(nil), harness.QUICEnv...), "IGGY_QUIC_CERTIFICATE_SELF_SIGNED=false")
		code, out := harness.Exit(t, harness.Options{DefaultRoot: true, Env: append(env, tc.env...)}, 60*time.Second)
		if code == 0 || !strings.Contains(out, tc.key) {
			t.Fatalf("exit %d, want a refusal naming %s:\n%s", code, tc.key, out)
		}
	}
}
