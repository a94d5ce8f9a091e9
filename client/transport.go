package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"

	"github.com/coder/websocket"

	"github.com/iggo/iggo/wire"
)

// Transports a Client can dial (Config.Transport).
const (
	TransportTCP  = "tcp"
	TransportWS   = "ws"
	TransportQUIC = "quic"
)

// dialFunc opens one connection to addr ("host:port") with cfg's transport
// and TLS settings, ready for frames (handshakes done, within the dial
// timeout). Each transport is one entry of dialers.
type dialFunc func(ctx context.Context, addr string, cfg *Config) (net.Conn, error)

// dialers maps Config.Transport to its dialer. A transport built in
// another file adds itself here from an init function.
var dialers = map[string]dialFunc{
	TransportTCP: dialTCP,
	TransportWS:  dialWS,
}

// ErrTransportNotBuilt is a Config.Transport this build has no dialer for.
var ErrTransportNotBuilt = errors.New("client: transport not built into this binary")

func (c *Client) dial(ctx context.Context, addr string) (net.Conn, error) {
	t := c.cfg.Transport
	if t == "" {
		t = TransportTCP
	}
	d, ok := dialers[t]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrTransportNotBuilt, t)
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	return d(dctx, addr, &c.cfg)
}

// tlsFor is cfg.TLS with ServerName defaulted to addr's host.
func tlsFor(cfg *Config, addr string) *tls.Config {
	tc := cfg.TLS.Clone()
	if tc.ServerName == "" {
		host, _, _ := net.SplitHostPort(addr)
		tc.ServerName = host
	}
	if tc.MinVersion == 0 {
		tc.MinVersion = tls.VersionTLS12
	}
	return tc
}

func dialTCP(ctx context.Context, addr string, cfg *Config) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true) // lockstep frames must not wait for Nagle
	}
	if cfg.TLS == nil {
		return nc, nil
	}
	tc := tls.Client(nc, tlsFor(cfg, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return tc, nil
}

// dialWS opens ws://addr/ (wss:// with cfg.TLS): each request frame goes
// out as one binary message, replies are read as a byte stream.
func dialWS(ctx context.Context, addr string, cfg *Config) (net.Conn, error) {
	scheme := "ws"
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, a)
			if tc, ok := nc.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			return nc, err
		},
		ForceAttemptHTTP2: false,
	}
	if cfg.TLS != nil {
		scheme = "wss"
		tr.TLSClientConfig = tlsFor(cfg, addr)
	}
	defer tr.CloseIdleConnections()
	ws, _, err := websocket.Dial(ctx, scheme+"://"+addr+"/", &websocket.DialOptions{
		HTTPClient:      &http.Client{Transport: tr},
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, err
	}
	limit := int64(cfg.MaxFrameSize)
	if limit < wire.HeaderSize {
		limit = wire.DefaultMaxFrameSize
	}
	ws.SetReadLimit(limit)
	return websocket.NetConn(context.Background(), ws, websocket.MessageBinary), nil
}

// TLSOptions are the TLS settings of Iggy's SDKs and CLI.
type TLSOptions struct {
	// CAFile is a PEM file of the certificates that sign the server's
	// (tls_ca_file); empty: the system roots.
	CAFile string
	// Domain is the server name checked against the certificate
	// (tls_domain); empty: the dialed host.
	Domain string
	// Insecure skips verification of the server's certificate (for tests
	// against self-signed servers; tls_validate_certificate=false).
	Insecure bool
}

// Config builds the crypto/tls client configuration.
func (o TLSOptions) Config() (*tls.Config, error) {
	tc := &tls.Config{ServerName: o.Domain, MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("client: tls ca file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: tls ca file %s holds no PEM certificate", o.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// portOf is the roster port of the client's transport.
func (c *Config) portOf(n wire.ClusterNode) uint16 {
	switch c.Transport {
	case TransportWS:
		return n.WSPort
	case TransportQUIC:
		return n.QUICPort
	}
	return n.TCPPort
}

// Transports lists the transports built into this binary, sorted.
func Transports() []string {
	out := make([]string, 0, len(dialers))
	for t := range dialers {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
