package integration

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// The QUIC transport against the real server, beside the command suite and
// the cross-transport test (transports_test.go, which run over QUIC too):
// replies beyond the client's flow-control window, bad streams and
// certificate refusals.

func startQUIC(t *testing.T, env ...string) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true, Env: env, Serve: []harness.Transport{harness.QUIC}})
}

// TestQUICLargeReplies: sends and polls larger than the client's 100 KB
// flow-control window go through, and GET_CLIENTS tells QUIC clients apart.
func TestQUICLargeReplies(t *testing.T) {
	s := startQUIC(t)
	c := s.RootOver(t, harness.QUIC)
	ctx := ctxT(t)
	createStreamTopic(t, c, "q", "t", 1, nil)
	for b := 0; b < 3; b++ {
		conf, err := c.SendMessages(ctx, name("q"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 1, b*100, 100, 1000))
		must(t, err, "send over quic")
		if len(conf) != 1 || conf[0].BaseOffset != uint64(b*100) {
			t.Fatalf("confirmation %+v, want base %d", conf, b*100)
		}
	}
	pm := poll(t, c, "q", "t", 0, wire.PollFromFirst(), 300, wire.SingleConsumer(id(3)), false)
	wantOffsets(t, pm, 0, 300)
	for i, m := range pm.Messages() {
		if _, seq := seqOf(m.Payload); seq != uint64(i) {
			t.Fatalf("message at offset %d carries seq %d", m.Offset, seq)
		}
	}
	s.Root(t) // one more over tcp
	clients, err := c.GetClients(ctx)
	must(t, err, "get clients")
	byTransport := map[uint8]int{}
	for _, cl := range clients {
		byTransport[cl.Transport]++
	}
	if byTransport[wire.TransportQUIC] != 1 || byTransport[wire.TransportTCP] != 1 {
		t.Fatalf("get clients by transport %v, want one quic and one tcp: %+v", byTransport, clients)
	}
}

// TestQUICBadStreams: a stream that closes without a request or carries two
// frames ends its connection with QUIC's protocol-violation code and one
// log line; other connections are not affected.
func TestQUICBadStreams(t *testing.T) {
	s := startQUIC(t)
	good := s.RootOver(t, harness.QUIC)
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
		env := []string{"IGGY_QUIC_ENABLED=true", "IGGY_QUIC_ADDRESS=127.0.0.1:0", "IGGY_QUIC_CERTIFICATE_SELF_SIGNED=false"}
		code, out := harness.Exit(t, harness.Options{DefaultRoot: true, Env: append(env, tc.env...)}, 60*time.Second)
		if code == 0 || !strings.Contains(out, tc.key) {
			t.Fatalf("exit %d, want a refusal naming %s:\n%s", code, tc.key, out)
		}
	}
}
