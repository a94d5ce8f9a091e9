package client

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/wire"
)

func testFrame(n int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, n)
	binary.LittleEndian.PutUint32(b[48:], uint32(n))
	return b
}

// quicServer answers each stream with reply(request) and records the
// requests; it returns the address.
func quicServer(t *testing.T, reply func(req []byte) []byte, got chan<- []byte) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&quic.Config{MaxIncomingStreams: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					s, err := qc.AcceptStream(context.Background())
					if err != nil {
						return
					}
					req, err := io.ReadAll(s)
					if err != nil {
						return
					}
					got <- req
					r := reply(req)
					_, _ = s.Write(r[:len(r)/2])
					_, _ = s.Write(r[len(r)/2:])
					_ = s.Close()
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestQUICConnStreamPerRequest: each request frame, however it is written,
// goes out on a stream of its own, closed after it; the reply is read from
// that stream.
func TestQUICConnStreamPerRequest(t *testing.T) {
	got := make(chan []byte, 8)
	addr := quicServer(t, func(req []byte) []byte { return testFrame(len(req)+300, req[0]+1) }, got)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dialQUIC(ctx, addr, nil, DefaultQUICConfig(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	for i, n := range []int{wire.HeaderSize, 5000, 300_000} {
		req := testFrame(n, byte(10*i))
		// Written in three pieces: the frame, not the write, ends the stream.
		for _, part := range [][]byte{req[:10], req[10 : n/2], req[n/2:]} {
			if _, err := c.Write(part); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		reply := make([]byte, n+300)
		if _, err := io.ReadFull(c, reply); err != nil {
			t.Fatalf("request %d: reply: %v", i, err)
		}
		if !bytes.Equal(reply, testFrame(n+300, byte(10*i)+1)) {
			t.Fatalf("request %d: wrong reply", i)
		}
		select {
		case r := <-got:
			if !bytes.Equal(r, req) {
				t.Fatalf("request %d: the server's stream held %d bytes, want exactly the %d-byte frame", i, len(r), n)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("server saw no request")
		}
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read with no request in flight succeeded")
	}
}

// quicRequest dials a test QUIC server answering with reply, sends it one
// header-only request and returns the connection (closed when the test
// ends) with the reply to read.
func quicRequest(t *testing.T, reply func([]byte) []byte) *quicConn {
	t.Helper()
	addr := quicServer(t, reply, make(chan []byte, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dialQUIC(ctx, addr, nil, DefaultQUICConfig(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(testFrame(wire.HeaderSize, 0)); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestQUICConnBadReply: a reply stream holding more than one frame is an
// error; one that ends inside its frame is an unexpected EOF.
func TestQUICConnBadReply(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func([]byte) []byte
		want  error
	}{
		// The server writes a reply in two halves (quicServer): here the
		// first half already holds the first frame and part of the next, so
		// the read that completes the frame sees the extra bytes.
		{"two frames", func([]byte) []byte { return append(testFrame(200, 1), testFrame(400, 2)...) }, errQUICProtocol},
		{"truncated", func([]byte) []byte { return testFrame(1000, 1)[:700] }, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := quicRequest(t, tc.reply)
			_, err := io.ReadAll(io.LimitReader(c, 2000))
			if !errors.Is(err, tc.want) {
				t.Fatalf("reading the reply: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestQUICConnSecondFrameNeverDelivered: a second frame that arrives after
// the reply's frame was read whole is never handed to the caller: the read
// that completes the reply returns it alone, and the next read finds no
// request in flight (or, when both frames arrived together, the read fails
// with the one-frame rule).
func TestQUICConnSecondFrameNeverDelivered(t *testing.T) {
	c := quicRequest(t, func([]byte) []byte { return append(testFrame(300, 1), testFrame(300, 2)...) })
	got, err := io.ReadAll(io.LimitReader(c, 2000))
	if err == nil || len(got) > 300 || !bytes.Equal(got, testFrame(300, 1)[:len(got)]) {
		t.Fatalf("read %d bytes (%v); want at most the first 300-byte frame, then an error", len(got), err)
	}
	if !errors.Is(err, errQUICProtocol) && (len(got) != 300 || !strings.Contains(err.Error(), "no request in flight")) {
		t.Fatalf("after %d bytes: %v", len(got), err)
	}
}

// TestQUICConnectionString: iggy+quic:// takes Iggy's QUIC options; they
// mean nothing on other transports.
func TestQUICConnectionString(t *testing.T) {
	cfg := DefaultConfig()
	err := ParseConnectionString("iggy+quic://u:p@h:8080?initial_mtu=1400&receive_window=1000000&keep_alive_interval=2000"+
		"&max_idle_timeout=30000&validate_certificate=true&reconnection_max_retries=4&response_buffer_size=1&send_window=5", &cfg)
	q := cfg.QUIC
	if err != nil || cfg.Transport != TransportQUIC || q.InitialMTU != 1400 || q.ReceiveWindow != 1_000_000 ||
		q.KeepAliveInterval != 2*time.Second || q.MaxIdleTimeout != 30*time.Second || cfg.TLS == nil ||
		cfg.TLS.ServerName != "localhost" || cfg.Reconnect.MaxAttempts != 4 {
		t.Fatalf("parsed %+v (%v)", cfg, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg = DefaultConfig()
	if err := ParseConnectionString("iggy+quic://u:p@h:8080?validate_certificate=false", &cfg); err != nil || cfg.TLS != nil {
		t.Fatalf("validate_certificate=false: TLS %+v (%v)", cfg.TLS, err)
	}
	for _, mtu := range []string{"1199", "1453"} {
		cfg = DefaultConfig()
		if err := ParseConnectionString("iggy+quic://u:p@h:8080?initial_mtu="+mtu, &cfg); err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "initial_mtu") {
			t.Errorf("initial_mtu=%s: %v, want a refusal naming initial_mtu", mtu, err)
		}
	}
	for _, s := range []string{"iggy+tcp://u:p@h:8090?initial_mtu=1400", "iggy+quic://u:p@h:8080?initial_mtu=big"} {
		cfg = DefaultConfig()
		if err := ParseConnectionString(s, &cfg); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}
