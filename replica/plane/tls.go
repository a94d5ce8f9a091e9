package plane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"time"
)

// ALPN is the application protocol both ends of a TLS link must negotiate.
const ALPN = "iggo-replica"

// exporterLabel names the TLS exporter value bound into the handshake MACs.
const exporterLabel = "EXPORTER-iggo-replica-v1"

// tlsConfigs builds the acceptor's and the dialer's TLS configurations.
// The dialer's ServerName is set per dial (the target's roster ip).
func tlsConfigs(t TLS, self Member) (server, client *tls.Config, err error) {
	base := func() *tls.Config {
		return &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{ALPN}}
	}
	switch t.Mode {
	case TLSOff:
		return nil, nil, nil
	case TLSSelfSigned:
		cert, err := selfSigned(self)
		if err != nil {
			return nil, nil, err
		}
		server, client = base(), base()
		server.Certificates = []tls.Certificate{cert}
		// The dialer accepts any certificate: with a throwaway certificate
		// there is nothing to verify it against. The key handshake, bound to
		// this session's exporter, authenticates the peer.
		client.InsecureSkipVerify = true
		return server, client, nil
	case TLSCA:
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("plane: loading cluster.tls cert/key: %w", err)
		}
		caPEM, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, nil, fmt.Errorf("plane: reading cluster.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, nil, fmt.Errorf("plane: cluster.tls.ca_file %s holds no PEM certificate", t.CAFile)
		}
		server, client = base(), base()
		server.Certificates = []tls.Certificate{cert}
		server.ClientAuth = tls.RequireAndVerifyClientCert
		server.ClientCAs = pool
		client.Certificates = []tls.Certificate{cert}
		client.RootCAs = pool
		return server, client, nil
	}
	return nil, nil, fmt.Errorf("plane: unknown TLS mode %d", t.Mode)
}

// selfSigned makes an ECDSA P-256 certificate for this node's roster ip,
// valid for a year from an hour ago (clock skew).
func selfSigned(self Member) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plane: generating TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plane: TLS serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "iggo replica " + self.Name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{self.Addr.Addr().AsSlice()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("plane: self-signing: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// exporter returns the TLS exporter value that binds the handshake to this
// TLS session, or nil for a plain connection.
func exporter(c net.Conn) ([]byte, error) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return nil, nil
	}
	cs := tc.ConnectionState()
	if cs.NegotiatedProtocol != ALPN {
		return nil, refuse(ReasonTLS, "peer negotiated ALPN %q, want %q", cs.NegotiatedProtocol, ALPN)
	}
	return cs.ExportKeyingMaterial(exporterLabel, nil, 32)
}

// certNames reports whether the verified peer certificate of c carries ip as
// an IP SAN. Only meaningful in CA mode, where the chain was verified.
func certNames(c net.Conn, ip netip.Addr) error {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return errors.New("not a TLS connection")
	}
	certs := tc.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return errors.New("no client certificate")
	}
	for _, a := range certs[0].IPAddresses {
		if got, ok := netip.AddrFromSlice(a); ok && got.Unmap() == ip.Unmap() {
			return nil
		}
	}
	return fmt.Errorf("certificate %q names %v, not %s", certs[0].Subject.CommonName, certs[0].IPAddresses, ip)
}
