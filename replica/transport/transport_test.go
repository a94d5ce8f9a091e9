package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/iggo/iggo/internal/pki"
	"github.com/iggo/iggo/wire"
)

// frame is a fake request frame of size bytes (the size field at offset
// 48, as the serving path reads it).
func frame(size int, fill byte) []byte {
	b := bytes.Repeat([]byte{fill}, size)
	binary.LittleEndian.PutUint32(b[48:], uint32(size))
	return b
}

// serve accepts one connection of l, runs its handshake and returns it.
func serve(t *testing.T, l Listener) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		if err := Handshake(c, 10*time.Second); err != nil {
			c.Close()
			ch <- nil
			return
		}
		ch <- c
	}()
	return ch
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestServerTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	if err := ca.Issue("s", time.Hour, cert, key, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		spec TLSSpec
		want string // "" loads; else the key the error names
		gen  bool
	}{
		{TLSSpec{Key: "tcp.tls", CertFile: cert, KeyFile: key}, "", false},
		{TLSSpec{Key: "tcp.tls", CertFile: missing, KeyFile: key}, "tcp.tls.cert_file", false},
		{TLSSpec{Key: "tcp.tls", CertFile: cert, KeyFile: missing}, "tcp.tls.key_file", false},
		{TLSSpec{Key: "websocket.tls", CertFile: key, KeyFile: cert}, "websocket.tls.cert_file", false},
		{TLSSpec{Key: "tcp.tls", SelfSigned: true, CertFile: missing, KeyFile: missing + "2"}, "", true},
		{TLSSpec{Key: "tcp.tls", SelfSigned: true, CertFile: cert, KeyFile: key}, "", false},
		{TLSSpec{Key: "tcp.tls", SelfSigned: true, CertFile: cert, KeyFile: missing}, "tcp.tls.key_file", false},
		{TLSSpec{Key: "tcp.tls", SelfSigned: true, CertFile: missing, KeyFile: key}, "", true},
	} {
		got, err := ServerTLS(tc.spec)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.spec, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: error %v, want one naming %s", tc.spec, err, tc.want)
		case err == nil && got.Generated != tc.gen:
			t.Errorf("%+v: generated %v, want %v", tc.spec, got.Generated, tc.gen)
		case err == nil && got.Config().MinVersion != tls.VersionTLS12:
			t.Errorf("%+v: min version %x", tc.spec, got.Config().MinVersion)
		}
	}
}

// TestTLSPlaintext: a plaintext client on a TLS listener fails the
// handshake as Plaintext and gets no answer; a TLS client is served.
func TestTLSPlaintext(t *testing.T) {
	cfg, err := ServerTLS(TLSSpec{Key: "tcp.tls", SelfSigned: true})
	if err != nil {
		t.Fatal(err)
	}
	l := NewTCPTLS(listen(t), cfg)
	ch := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			ch <- err
			return
		}
		defer c.Close()
		ch <- Handshake(c, 10*time.Second)
	}()
	pc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Write(frame(256, 0))
	var he *HandshakeError
	if err := <-ch; !errors.As(err, &he) || !he.Plaintext || !IsClientFault(err) {
		t.Fatalf("plaintext handshake: %v, want a plaintext HandshakeError", err)
	}
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(pc); len(b) != 0 {
		t.Fatalf("the server answered plaintext with %d bytes", len(b))
	}

	srv := serve(t, l)
	tc, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	sc := <-srv
	if sc == nil {
		t.Fatal("TLS 1.2 handshake failed")
	}
	defer sc.Close()
	go tc.Write([]byte("hello"))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(sc, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q, %v", buf, err)
	}
	// A vectored write arrives whole and in order.
	parts := net.Buffers{bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 40<<10), bytes.Repeat([]byte{3}, 10)}
	go sc.(VecWriter).WriteVec(parts)
	got := make([]byte, 100+40<<10+10)
	if _, err := io.ReadFull(tc, got); err != nil || got[0] != 1 || got[100] != 2 || got[len(got)-1] != 3 {
		t.Fatalf("vectored write: %v", err)
	}
}

func wsPair(t *testing.T, opts WSOptions) (*websocket.Conn, net.Conn) {
	l := NewWS(listen(t), opts, nil)
	srv := serve(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+l.Addr().String()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 24)
	t.Cleanup(func() { c.CloseNow() })
	sc := <-srv
	if sc == nil {
		t.Fatal("websocket handshake failed")
	}
	t.Cleanup(func() { sc.Close() })
	return c, sc
}

// TestWSFrames: frames in consecutive binary messages read as one stream;
// replies go out one message per Write or WriteVec.
func TestWSFrames(t *testing.T) {
	c, sc := wsPair(t, WSOptions{})
	ctx := context.Background()
	a, b := frame(wire.HeaderSize, 1), frame(wire.HeaderSize+5000, 2)
	go func() {
		c.Write(ctx, websocket.MessageBinary, a)
		c.Write(ctx, websocket.MessageBinary, b)
	}()
	got := make([]byte, len(a)+len(b))
	sc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(sc, got); err != nil || !bytes.Equal(got, append(append([]byte(nil), a...), b...)) {
		t.Fatalf("read the frames: %v", err)
	}
	go sc.(VecWriter).WriteVec(net.Buffers{a[:10], a[10:]})
	typ, m, err := c.Read(ctx)
	if err != nil || typ != websocket.MessageBinary || !bytes.Equal(m, a) {
		t.Fatalf("WriteVec: %v %v %d bytes", err, typ, len(m))
	}
	// A read deadline passes as a timeout, not a protocol error.
	sc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	var ne net.Error
	if _, err := sc.Read(got); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v", err)
	}
}

// TestWSRefusals: each message the protocol does not allow fails the read
// with a ProtocolError naming it.
func TestWSRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		send func(c *websocket.Conn)
		want string
	}{
		{"text", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageText, frame(256, 0)) }, "text message"},
		{"partial", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, frame(300, 0)[:200]) }, "ends inside a frame"},
		{"two", func(c *websocket.Conn) {
			c.Write(ctx, websocket.MessageBinary, append(frame(256, 0), frame(256, 0)...))
		}, "more than one frame"},
		{"short", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}) }, "ends inside a frame"},
		{"declared too big", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, frame(8<<10, 0)[:300]) }, "frame declares"},
		{"ws frame too big", func(c *websocket.Conn) { c.Write(ctx, websocket.MessageBinary, frame(3<<10, 0)) }, "max_frame_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, sc := wsPair(t, WSOptions{MaxMessage: 4 << 10, MaxFrame: 2 << 10})
			go tc.send(c)
			sc.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err := io.ReadAll(sc)
			var pe *ProtocolError
			if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tc.want) {
				t.Fatalf("read: %v, want a ProtocolError saying %q", err, tc.want)
			}
		})
	}
}

// TestWSMaxWrite: a reply over MaxWrite fails instead of being sent.
func TestWSMaxWrite(t *testing.T) {
	_, sc := wsPair(t, WSOptions{MaxWrite: 1000})
	if _, err := sc.Write(make([]byte, 1001)); err == nil {
		t.Fatal("a 1001-byte reply was written with max_write_buffer_size 1000")
	}
	if _, err := sc.(VecWriter).WriteVec(net.Buffers{make([]byte, 600), make([]byte, 600)}); err == nil {
		t.Fatal("a 1200-byte vectored reply was written")
	}
}

// TestWSNotUpgrade: a plain HTTP request is answered with an error status
// and fails the handshake.
func TestWSNotUpgrade(t *testing.T) {
	l := NewWS(listen(t), WSOptions{}, nil)
	srv := serve(t, l)
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	if sc := <-srv; sc != nil {
		t.Fatal("a plain GET passed the handshake")
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 426") {
		t.Fatalf("answer %q", b)
	}
}

func httpClientTLS(tc *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}
