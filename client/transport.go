package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"

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
	cc := &corkConn{Conn: nc}
	tc := tls.Client(cc, tlsFor(cfg, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return &tlsConn{Conn: tc, cork: cc}, nil
}

// tlsConn sends the records of one Write in few socket writes: crypto/tls
// writes every record (at most 16 KiB) with its own write call, which for
// a 1 MB send costs 64 system calls.
type tlsConn struct {
	*tls.Conn
	cork *corkConn
}

func (c *tlsConn) Write(p []byte) (int, error) {
	c.cork.hold()
	n, err := c.Conn.Write(p)
	if ferr := c.cork.release(); err == nil {
		err = ferr
	}
	return n, err
}

// corkConn buffers writes between hold and release (up to corkMax bytes at
// a time); other writes pass straight through.
type corkConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  []byte
	err  error
}

const corkMax = 256 << 10

func (c *corkConn) hold() {
	c.mu.Lock()
	c.held, c.err = true, nil
	c.mu.Unlock()
}

func (c *corkConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	c.flushLocked()
	if cap(c.buf) > corkMax {
		c.buf = nil
	}
	return c.err
}

func (c *corkConn) flushLocked() {
	if len(c.buf) > 0 && c.err == nil {
		_, c.err = c.Conn.Write(c.buf)
	}
	c.buf = c.buf[:0]
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		return c.Conn.Write(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	c.buf = append(c.buf, p...)
	if len(c.buf) >= corkMax {
		c.flushLocked()
	}
	return len(p), c.err
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
