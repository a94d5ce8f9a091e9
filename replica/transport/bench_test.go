package transport

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"

	"github.com/iggo/iggo/replica/config"
)

// BenchmarkTransports: lockstep round trips of a 1 MB request frame and a
// 256-byte reply over loopback, per transport, with the serving side
// reading as the serving path does (header, then the body).
func BenchmarkTransports(b *testing.B) {
	cfg, err := ServerTLS(TLSSpec{Key: "tcp.tls", SelfSigned: true})
	if err != nil {
		b.Fatal(err)
	}
	const size = 1 << 20
	req := frame(size, 7)
	for _, tc := range []struct {
		name string
		ln   func(net.Listener) Listener
		dial func(addr string) (net.Conn, error)
	}{
		{TCP, NewTCP, func(a string) (net.Conn, error) { return net.Dial("tcp", a) }},
		{TCPTLS, func(l net.Listener) Listener { return NewTCPTLS(l, cfg) }, func(a string) (net.Conn, error) {
			return tls.Dial("tcp", a, &tls.Config{InsecureSkipVerify: true})
		}},
		{WS, func(l net.Listener) Listener { return NewWS(l, WSOptions{}, nil) }, func(a string) (net.Conn, error) {
			return wsDialBench("ws://"+a+"/", nil)
		}},
		{WSS, func(l net.Listener) Listener { return NewWS(l, WSOptions{}, cfg) }, func(a string) (net.Conn, error) {
			return wsDialBench("wss://"+a+"/", &tls.Config{InsecureSkipVerify: true})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			l := tc.ln(raw)
			defer l.Close()
			go func() {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if Handshake(c, 10*time.Second) != nil {
					return
				}
				buf := make([]byte, size)
				reply := frame(256, 1)
				for {
					if _, err := io.ReadFull(c, buf[:256]); err != nil {
						return
					}
					n := binary.LittleEndian.Uint32(buf[48:])
					if _, err := io.ReadFull(c, buf[256:n]); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
			c, err := tc.dial(l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			reply := make([]byte, 256)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func wsDialBench(url string, tc *tls.Config) (net.Conn, error) {
	opts := &websocket.DialOptions{}
	if tc != nil {
		opts.HTTPClient = httpClientTLS(tc)
	}
	ws, _, err := websocket.Dial(context.Background(), url, opts)
	if err != nil {
		return nil, err
	}
	return websocket.NetConn(context.Background(), ws, websocket.MessageBinary), nil
}

// BenchmarkQUIC: the same round trips over QUIC, one stream per command
// (Iggy's usage), the server side a StreamConn read as the serving path
// reads it; "gro" on the listener's own socket (BindUDP), "plain" on a
// UDP socket without coalesced reads, for the difference UDP_GRO makes.
func BenchmarkQUIC(b *testing.B) {
	tlsConf, err := QUICTLS(config.QUICCertificateConfig{SelfSigned: true})
	if err != nil {
		b.Fatal(err)
	}
	const size = 1 << 20
	req := frame(size, 7)
	for _, tc := range []struct {
		name string
		bind func() (net.PacketConn, error)
	}{
		{"gro", func() (net.PacketConn, error) { return BindUDP("127.0.0.1:0") }},
		{"plain", func() (net.PacketConn, error) {
			return net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pc, err := tc.bind()
			if err != nil {
				b.Fatal(err)
			}
			ln, err := ListenQUIC(pc, tlsConf, QUICConfig(config.Default().QUIC, 10*time.Second), 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, size)
				reply := frame(256, 1)
				for {
					if _, err := io.ReadFull(c, buf[:256]); err != nil {
						return
					}
					n := binary.LittleEndian.Uint32(buf[48:])
					if _, err := io.ReadFull(c, buf[256:n]); err != nil {
						return
					}
					if _, err := c.Write(reply); err != nil {
						return
					}
				}
			}()
			ctx := context.Background()
			qc, err := quic.DialAddr(ctx, ln.Addr().String(), &tls.Config{InsecureSkipVerify: true},
				&quic.Config{InitialStreamReceiveWindow: 100_000, InitialConnectionReceiveWindow: 100_000})
			if err != nil {
				b.Fatal(err)
			}
			defer qc.CloseWithError(0, "")
			reply := make([]byte, 512)
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := qc.OpenStreamSync(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Write(req); err != nil {
					b.Fatal(err)
				}
				_ = s.Close()
				n, err := io.ReadFull(s, reply)
				if !errors.Is(err, io.ErrUnexpectedEOF) || n != 256 {
					b.Fatalf("reply: %d bytes, %v (want 256 then the end of the stream)", n, err)
				}
			}
		})
	}
}
