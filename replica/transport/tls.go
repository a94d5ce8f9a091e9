package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"time"
)

// TLSSpec is a listener's TLS block ([tcp.tls], [websocket.tls]).
type TLSSpec struct {
	// Key is the block's dotted config path, for messages ("tcp.tls").
	Key        string
	SelfSigned bool
	CertFile   string
	KeyFile    string
}

// TLSConfig is a loaded server TLS configuration.
type TLSConfig struct {
	cfg *tls.Config
	// Generated: the certificate was generated at start (self_signed).
	Generated bool
}

// Config returns the crypto/tls configuration (callers must not modify it).
func (t *TLSConfig) Config() *tls.Config { return t.cfg }

// cipherSuites are the TLS 1.2 suites served: ECDHE key exchange, AEAD
// ciphers. TLS 1.3 suites are not configurable in crypto/tls (all AEAD).
var cipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// ServerTLS loads s. Without self_signed both files must load. With it, as
// Iggy's server does, a certificate for hosts (plus localhost and the
// loopback addresses) is generated in memory while cert_file does not
// exist, and the pair is loaded once it does. A file that is missing or
// does not load otherwise refuses; errors name the key.
func ServerTLS(s TLSSpec, hosts ...string) (*TLSConfig, error) {
	if s.SelfSigned {
		_, cerr := os.Stat(s.CertFile)
		if s.CertFile == "" || errors.Is(cerr, fs.ErrNotExist) {
			cert, err := SelfSigned(hosts...)
			if err != nil {
				return nil, fmt.Errorf("%s.self_signed: %w", s.Key, err)
			}
			return &TLSConfig{cfg: serverConfig(cert), Generated: true}, nil
		}
	}
	for _, f := range []struct{ key, path string }{{"cert_file", s.CertFile}, {"key_file", s.KeyFile}} {
		if f.path == "" {
			return nil, fmt.Errorf("%s.%s: must be set when %s.enabled and not self_signed", s.Key, f.key, s.Key)
		}
		if _, err := os.ReadFile(f.path); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", s.Key, f.key, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s.cert_file/%s.key_file: %w", s.Key, s.Key, err)
	}
	return &TLSConfig{cfg: serverConfig(cert)}, nil
}

func serverConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		CipherSuites: cipherSuites,
	}
}

// SelfSigned generates an ECDSA P-256 server certificate for hosts (IP
// addresses or DNS names) plus localhost, 127.0.0.1 and ::1, valid for a
// year from an hour ago.
func SelfSigned(hosts ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "iggo server (self-signed)"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	AddHosts(tmpl, append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)...)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signing: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// AddHosts adds hosts to tmpl's subject alternative names, IPs as IP SANs
// and the rest as DNS names (empty and wildcard binds are skipped).
func AddHosts(tmpl *x509.Certificate, hosts ...string) {
	for _, h := range hosts {
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				continue
			}
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			continue
		}
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
}

// tlsConn is a server TLS connection whose handshake the serving goroutine
// runs (Handshake); WriteVec coalesces buffers into full records.
type tlsConn struct {
	*tls.Conn
	name    string
	scratch []byte
}

func newTLSConn(name string, c net.Conn, cfg *tls.Config) *tlsConn {
	return &tlsConn{Conn: tls.Server(&readAhead{Conn: c}, cfg), name: name}
}

// readAheadSize is the socket read size under TLS: crypto/tls reads one
// record (at most 16 KiB) per call, a system call each, so a large frame
// is read in far fewer calls through this buffer. It is allocated on the
// first read and kept while the connection lives.
const readAheadSize = 64 << 10

// readAhead buffers the socket reads beneath a TLS connection.
type readAhead struct {
	net.Conn
	buf  []byte
	r, w int
}

func (c *readAhead) Read(p []byte) (int, error) {
	if c.r == c.w {
		if len(p) >= readAheadSize {
			return c.Conn.Read(p)
		}
		if c.buf == nil {
			c.buf = make([]byte, readAheadSize)
		}
		n, err := c.Conn.Read(c.buf)
		c.r, c.w = 0, n
		if n == 0 {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

func (c *tlsConn) Handshake(timeout time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(timeout))
	err := c.HandshakeContext(contextBackground)
	_ = c.SetDeadline(time.Time{})
	if err == nil {
		return nil
	}
	var rh tls.RecordHeaderError
	return &HandshakeError{Transport: c.name, Plaintext: errors.As(err, &rh), Err: err}
}

// recordMax is the largest TLS record payload.
const recordMax = 16 << 10

func (c *tlsConn) WriteVec(bufs net.Buffers) (int64, error) {
	if c.scratch == nil {
		c.scratch = make([]byte, 0, recordMax)
	}
	var total int64
	flush := func() error {
		if len(c.scratch) == 0 {
			return nil
		}
		n, err := c.Conn.Write(c.scratch)
		total += int64(n)
		c.scratch = c.scratch[:0]
		return err
	}
	for _, b := range bufs {
		if len(b) >= recordMax {
			if err := flush(); err != nil {
				return total, err
			}
			n, err := c.Conn.Write(b)
			total += int64(n)
			if err != nil {
				return total, err
			}
			continue
		}
		if len(c.scratch)+len(b) > recordMax {
			if err := flush(); err != nil {
				return total, err
			}
		}
		c.scratch = append(c.scratch, b...)
	}
	return total, flush()
}
