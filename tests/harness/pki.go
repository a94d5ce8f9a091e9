package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// PKI is a test certificate authority and one server certificate it signed
// for localhost, ::1 and 127.0.0.1 to 127.0.0.63 (every loopback address
// NodeIPs hands out), written as PEM files.
type PKI struct {
	CAFile, CertFile, KeyFile string
	Pool                      *x509.CertPool
}

// NewPKI writes a fresh PKI under dir.
func NewPKI(dir string) (*PKI, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iggo test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "iggo test server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv6loopback}}
	for i := 1; i < 64; i++ {
		leaf.IPAddresses = append(leaf.IPAddresses, net.IPv4(127, 0, 0, byte(i)))
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	p := &PKI{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key"),
		Pool: x509.NewCertPool()}
	p.Pool.AddCert(caCert)
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{p.CAFile, "CERTIFICATE", caDER}, {p.CertFile, "CERTIFICATE", der}, {p.KeyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// MustPKI is NewPKI in a test's temporary directory.
func MustPKI(t testing.TB) *PKI {
	t.Helper()
	p, err := NewPKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatalf("harness: test PKI: %v", err)
	}
	return p
}

// ClientTLS trusts the PKI's CA only.
func (p *PKI) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.Pool, MinVersion: tls.VersionTLS12}
}

// Transport is one way a client reaches a server.
type Transport struct {
	Name string
	TLS  bool
	WS   bool
}

// The client transports the server serves.
var (
	TCP    = Transport{Name: "tcp"}
	TCPTLS = Transport{Name: "tcp-tls", TLS: true}
	WS     = Transport{Name: "ws", WS: true}
	WSS    = Transport{Name: "wss", TLS: true, WS: true}
	// AllTransports is every transport, for suites run over each.
	AllTransports = []Transport{TCP, TCPTLS, WS, WSS}
)

// Wire is the transport code GET_ME reports for t.
func (t Transport) Wire() uint8 {
	if t.WS {
		return wire.TransportWebSocket
	}
	return wire.TransportTCP
}

func (t Transport) String() string { return t.Name }

// transportEnv is the server environment serving every transport of ts
// (plaintext TCP is always on; tcp-tls replaces it, wss replaces ws).
func transportEnv(ts []Transport, p *PKI) ([]string, error) {
	has := map[string]bool{}
	for _, t := range ts {
		has[t.Name] = true
	}
	if has["tcp"] && has["tcp-tls"] || has["ws"] && has["wss"] {
		return nil, fmt.Errorf("harness: one server cannot serve %v (one tcp and one websocket listener)", ts)
	}
	var env []string
	tlsKeys := func(prefix string) {
		env = append(env, prefix+"_ENABLED=true", prefix+"_SELF_SIGNED=false", prefix+"_CERT_FILE="+p.CertFile, prefix+"_KEY_FILE="+p.KeyFile)
	}
	if has["tcp-tls"] {
		tlsKeys("IGGY_TCP_TLS")
	}
	if has["ws"] || has["wss"] {
		env = append(env, "IGGY_WEBSOCKET_ENABLED=true", "IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0")
	}
	if has["wss"] {
		tlsKeys("IGGY_WEBSOCKET_TLS")
	}
	return env, nil
}

// configure points cfg at addr over t (TLS trusting p).
func (t Transport) configure(cfg *client.Config, tcpAddr, wsAddr string, p *PKI) {
	cfg.Addresses = []string{tcpAddr}
	cfg.Transport = client.TransportTCP
	if t.WS {
		cfg.Addresses = []string{wsAddr}
		cfg.Transport = client.TransportWS
	}
	cfg.TLS = nil
	if t.TLS {
		cfg.TLS = p.ClientTLS()
	}
}
