package transport

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

// serverFor starts a listener on loopback; each accepted StreamConn is
// handed to serve on its own goroutine. It returns the address.
func serverFor(t *testing.T, grace time.Duration, serve func(net.Conn)) string {
	t.Helper()
	tlsConf, err := QUICTLS(config.QUICCertificateConfig{SelfSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := BindUDP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	q := config.Default().QUIC
	ln, err := ListenQUIC(pc, tlsConf, QUICConfig(q, 10*time.Second), grace)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, addr string) *quic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	qc, err := quic.DialAddr(ctx, addr, &tls.Config{InsecureSkipVerify: true}, &quic.Config{MaxIdleTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qc.CloseWithError(0, "") })
	return qc
}

// echo reads frames from c as the serving path does (buffered, one frame
// then one reply) and answers each with a reply frame twice its length
// whose fill is the request's fill + 1, written in two pieces. The error
// that ended it goes to done.
func echo(done chan<- error) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReaderSize(c, 4096)
		for {
			hdr := make([]byte, wire.HeaderSize)
			if _, err := io.ReadFull(br, hdr); err != nil {
				done <- err
				return
			}
			size := int(binary.LittleEndian.Uint32(hdr[48:]))
			body := make([]byte, size-wire.HeaderSize)
			if _, err := io.ReadFull(br, body); err != nil {
				done <- err
				return
			}
			reply := frame(2*size, hdr[0]+1)
			if _, err := c.Write(reply[:100]); err != nil {
				done <- err
				return
			}
			if _, err := c.Write(reply[100:]); err != nil {
				done <- err
				return
			}
		}
	}
}

// TestStreamPerCommand: each command goes on a stream of its own, the
// reply comes back on it and the stream ends after it; the next command
// takes the next stream (with one stream of credit, so it is granted only
// when the previous stream is done).
func TestStreamPerCommand(t *testing.T) {
	done := make(chan error, 1)
	addr := serverFor(t, 10*time.Second, echo(done))
	qc := dial(t, addr)
	for i, n := range []int{wire.HeaderSize, 1000, 200_000} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := qc.OpenStreamSync(ctx)
		cancel()
		if err != nil {
			t.Fatalf("command %d: open: %v", i, err)
		}
		_ = s.SetDeadline(time.Now().Add(30 * time.Second))
		fill := byte(10 * (i + 1))
		if _, err := s.Write(frame(n, fill)); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		got, err := io.ReadAll(s)
		if err != nil {
			t.Fatalf("command %d: reply: %v", i, err)
		}
		if want := frame(2*n, fill+1); !bytes.Equal(got, want) {
			t.Fatalf("command %d: reply of %d bytes, want %d (fill %d)", i, len(got), len(want), fill+1)
		}
	}
	_ = qc.CloseWithError(0, "bye")
	select {
	case err := <-done:
		if errors.As(err, new(*ProtocolError)) {
			t.Fatalf("a clean close was refused: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not see the close")
	}
}

// TestBadStreamsRefused: each malformed stream ends the connection with a
// ProtocolError naming what was wrong, and the client sees the protocol
// violation code.
func TestBadStreamsRefused(t *testing.T) {
	cases := []struct {
		name   string
		send   func(s *quic.Stream)
		reason string
	}{
		{"empty", func(s *quic.Stream) { _ = s.Close() }, "closed without a request"},
		{"stalled", func(s *quic.Stream) { _, _ = s.Write(frame(1000, 1)[:10]) }, "no whole request header within"},
		{"truncated", func(s *quic.Stream) { _, _ = s.Write(frame(1000, 1)[:600]); _ = s.Close() }, "ended inside its request frame"},
		{"two frames", func(s *quic.Stream) {
			_, _ = s.Write(append(frame(300, 1), frame(300, 2)...))
			_ = s.Close()
		}, "more than one request frame"},
		{"reset", func(s *quic.Stream) { _, _ = s.Write(frame(1000, 1)[:10]); s.CancelWrite(7) }, "reset the stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			addr := serverFor(t, time.Second, echo(done))
			qc := dial(t, addr)
			s, err := qc.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			tc.send(s)
			var err2 error
			select {
			case err2 = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("server did not refuse the stream")
			}
			var se *ProtocolError
			if !errors.As(err2, &se) || !strings.Contains(se.Reason, tc.reason) {
				t.Fatalf("server ended with %v, want a ProtocolError %q", err2, tc.reason)
			}
			select {
			case <-qc.Context().Done():
			case <-time.After(30 * time.Second):
				t.Fatal("connection not closed")
			}
			var ae *quic.ApplicationError
			if err := context.Cause(qc.Context()); !errors.As(err, &ae) || ae.ErrorCode != QUICProtocolViolation {
				t.Fatalf("connection closed with %v, want application error %#x", err, QUICProtocolViolation)
			}
		})
	}
}

// TestWriteWithoutRequest: a frame written while no command is in flight
// is refused (QUIC has nowhere to put it).
func TestWriteWithoutRequest(t *testing.T) {
	got := make(chan error, 1)
	addr := serverFor(t, time.Second, func(c net.Conn) {
		_, err := c.Write(frame(wire.HeaderSize, 1))
		got <- err
		_ = c.Close()
	})
	dial(t, addr)
	select {
	case err := <-got:
		var se *ProtocolError
		if !errors.As(err, &se) {
			t.Fatalf("write with no request: %v, want a ProtocolError", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no connection")
	}
}

// TestReadDeadline: the caller's read deadline bounds the wait for the
// next stream and is reported as a timeout (the serving path's idle limit).
func TestReadDeadline(t *testing.T) {
	got := make(chan error, 1)
	addr := serverFor(t, time.Minute, func(c net.Conn) {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 10))
		got <- err
		_ = c.Close()
	})
	dial(t, addr)
	select {
	case err := <-got:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read past the deadline: %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("read deadline not honoured")
	}
}

// TestCertificateFiles: the PEM files are loaded; a missing or unreadable
// file is an error naming its key.
func TestCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	cert, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certPath, keyPath, cert)
	conf, err := QUICTLS(config.QUICCertificateConfig{CertFile: certPath, KeyFile: keyPath})
	if err != nil || len(conf.Certificates) != 1 || !bytes.Equal(conf.Certificates[0].Certificate[0], cert.Certificate[0]) {
		t.Fatalf("loading the files: %v", err)
	}
	for _, tc := range []struct {
		c   config.QUICCertificateConfig
		key string
	}{
		{config.QUICCertificateConfig{CertFile: filepath.Join(dir, "missing.pem"), KeyFile: keyPath}, "quic.certificate.cert_file"},
		{config.QUICCertificateConfig{CertFile: certPath, KeyFile: filepath.Join(dir, "missing.pem")}, "quic.certificate.key_file"},
		{config.QUICCertificateConfig{CertFile: keyPath, KeyFile: keyPath}, "quic.certificate.cert_file"},
	} {
		if _, err := QUICTLS(tc.c); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%+v: %v, want an error naming %s", tc.c, err, tc.key)
		}
	}
	if os.Getuid() != 0 { // root reads any file
		if err := os.Chmod(keyPath, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := QUICTLS(config.QUICCertificateConfig{CertFile: certPath, KeyFile: keyPath}); err == nil || !strings.Contains(err.Error(), "quic.certificate.key_file") {
			t.Errorf("unreadable key: %v", err)
		}
	}
}

func writePEM(t *testing.T, certPath, keyPath string, c tls.Certificate) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLateFIN: a client that closes its send side only after the reply has
// come (its FIN later than its frame) is not stopped meanwhile: its close
// succeeds and the stream completes, so the next command gets a stream.
func TestLateFIN(t *testing.T) {
	done := make(chan error, 1)
	addr := serverFor(t, 10*time.Second, echo(done))
	qc := dial(t, addr)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		s, err := qc.OpenStreamSync(ctx)
		cancel()
		if err != nil {
			t.Fatalf("command %d: open: %v", i, err)
		}
		_ = s.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := s.Write(frame(500, 1)); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, 1000)
		if _, err := io.ReadFull(s, reply); err != nil {
			t.Fatalf("command %d: reply: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond) // the server has answered and finished its side
		if err := s.Close(); err != nil {
			t.Fatalf("command %d: closing the send side after the reply: %v", i, err)
		}
		if _, err := s.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("command %d: after the reply: %v, want EOF", i, err)
		}
	}
}
