package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The WebSocket client (RFC 6455), just what the binary protocol needs:
// one upgrade request on "/", each Write sent as one masked binary message
// in one frame (header and payload in one write), and Read
// yielding the payload bytes of the server's binary messages as one
// stream. Pings are answered, a close frame ends the stream; text frames,
// masked server frames and reserved bits are errors.

// wsGUID is RFC 6455's handshake constant.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// dialWS opens ws://addr/ (wss:// with cfg.TLS).
func dialWS(ctx context.Context, addr string, cfg *Config) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if cfg.TLS != nil {
		tcfg := tlsFor(cfg, addr)
		tcfg.NextProtos = []string{"http/1.1"}
		cc := &corkConn{Conn: nc}
		tc := tls.Client(cc, tcfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
		nc = &tlsConn{Conn: tc, cork: cc}
	}
	c, err := wsHandshake(ctx, nc, addr)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

func wsHandshake(ctx context.Context, nc net.Conn, host string) (*wsConn, error) {
	if d, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(d)
		defer nc.SetDeadline(time.Time{})
	}
	var k [16]byte
	_, _ = rand.Read(k[:])
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET / HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return nil, fmt.Errorf("websocket upgrade request: %w", err)
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		return nil, fmt.Errorf("websocket upgrade response: %w", err)
	}
	_ = resp.Body.Close()
	sum := sha1.Sum([]byte(key + wsGUID))
	switch {
	case resp.StatusCode != http.StatusSwitchingProtocols:
		return nil, fmt.Errorf("websocket upgrade refused: %s", resp.Status)
	case !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"):
		return nil, fmt.Errorf("websocket upgrade: Upgrade header %q", resp.Header.Get("Upgrade"))
	case resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]):
		return nil, errors.New("websocket upgrade: wrong Sec-WebSocket-Accept")
	}
	return &wsConn{Conn: nc, br: br}, nil
}

// wsConn is one client WebSocket connection. Reads and writes may run on
// different goroutines (a pong is written under wmu).
type wsConn struct {
	net.Conn
	br   *bufio.Reader
	left int64 // payload bytes of the current data frame still to read

	wmu  sync.Mutex
	hdr  [14]byte
	wbuf []byte
}

// errWS is a server frame the client does not accept.
type errWS string

func (e errWS) Error() string { return "websocket: " + string(e) }

func (c *wsConn) Read(p []byte) (int, error) {
	for c.left == 0 {
		if err := c.nextFrame(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// nextFrame reads frame headers until a data frame starts (c.left set),
// answering pings and skipping pongs.
func (c *wsConn) nextFrame() error {
	var h [8]byte
	if _, err := io.ReadFull(c.br, h[:2]); err != nil {
		return err
	}
	op, size := h[0]&0x0f, int64(h[1]&0x7f)
	switch {
	case h[0]&0x70 != 0:
		return errWS("reserved bits set")
	case h[1]&0x80 != 0:
		return errWS("masked frame from the server")
	}
	switch size {
	case 126:
		if _, err := io.ReadFull(c.br, h[:2]); err != nil {
			return err
		}
		size = int64(binary.BigEndian.Uint16(h[:2]))
	case 127:
		if _, err := io.ReadFull(c.br, h[:8]); err != nil {
			return err
		}
		size = int64(binary.BigEndian.Uint64(h[:8]) & (1<<63 - 1))
	}
	switch op {
	case 0x0, 0x2: // continuation, binary
		c.left = size
		return nil
	case 0x8: // close
		return io.EOF
	case 0x9, 0xa: // ping, pong
		if size > 125 {
			return errWS("control frame over 125 bytes")
		}
		body := make([]byte, size)
		if _, err := io.ReadFull(c.br, body); err != nil {
			return err
		}
		if op == 0x9 {
			return c.frame(0xa, body)
		}
		return nil
	}
	return errWS(fmt.Sprintf("unexpected opcode %d (the binary protocol uses binary messages)", op))
}

// Write sends p as one binary message.
func (c *wsConn) Write(p []byte) (int, error) {
	if err := c.frame(0x2, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// frame writes one final frame of opcode op, masked, in one write.
func (c *wsConn) frame(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	h := c.hdr[:2]
	h[0] = 0x80 | op
	switch n := len(p); {
	case n < 126:
		h[1] = 0x80 | byte(n)
	case n <= 0xffff:
		h[1] = 0x80 | 126
		h = binary.BigEndian.AppendUint16(h, uint16(n))
	default:
		h[1] = 0x80 | 127
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	var key [4]byte
	_, _ = rand.Read(key[:])
	h = append(h, key[:]...)
	if need := len(h) + len(p); cap(c.wbuf) < need {
		c.wbuf = make([]byte, need)
	}
	f := c.wbuf[:len(h)+len(p)]
	copy(f, h)
	mask(f[len(h):], p, key)
	_, err := c.Conn.Write(f)
	if cap(c.wbuf) > 16<<20 {
		c.wbuf = nil // do not keep a huge send buffer
	}
	return err
}

// mask writes src XOR the repeating key to dst (len(dst) == len(src)).
func mask(dst, src []byte, key [4]byte) {
	k := uint64(binary.LittleEndian.Uint32(key[:]))
	k |= k << 32
	i := 0
	for ; i+8 <= len(src); i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^k)
	}
	for ; i < len(src); i++ {
		dst[i] = src[i] ^ key[i&3]
	}
}

// Close sends a close frame (best effort, without waiting for the answer)
// and closes the socket.
func (c *wsConn) Close() error {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_ = c.frame(0x8, []byte{0x03, 0xe8}) // 1000, normal closure
	return c.Conn.Close()
}
