package harness

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/internal/pki"
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
	ca, err := pki.NewCA("iggo test CA", 48*time.Hour)
	if err != nil {
		return nil, err
	}
	p := &PKI{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key"),
		Pool: ca.Pool()}
	hosts := []string{"localhost", "::1"}
	for i := 1; i < 64; i++ {
		hosts = append(hosts, fmt.Sprintf("127.0.0.%d", i))
	}
	if err := ca.WriteCert(p.CAFile); err != nil {
		return nil, err
	}
	if err := ca.Issue("iggo test server", 48*time.Hour, p.CertFile, p.KeyFile, hosts...); err != nil {
		return nil, err
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
	// QUIC: the QUIC listener (always TLS; the test PKI's certificate).
	QUIC bool
}

// The client transports the server serves.
var (
	TCP    = Transport{Name: "tcp"}
	TCPTLS = Transport{Name: "tcp-tls", TLS: true}
	WS     = Transport{Name: "ws", WS: true}
	WSS    = Transport{Name: "wss", TLS: true, WS: true}
	QUIC   = Transport{Name: "quic", TLS: true, QUIC: true}
	// AllTransports is every transport, for suites run over each.
	AllTransports = []Transport{TCP, TCPTLS, WS, WSS, QUIC}
)

// Wire is the transport code GET_ME reports for t.
func (t Transport) Wire() uint8 {
	switch {
	case t.WS:
		return wire.TransportWebSocket
	case t.QUIC:
		return wire.TransportQUIC
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
	if has["quic"] {
		env = append(env, "IGGY_QUIC_ENABLED=true", "IGGY_QUIC_ADDRESS=127.0.0.1:0", "IGGY_QUIC_CERTIFICATE_SELF_SIGNED=false",
			"IGGY_QUIC_CERTIFICATE_CERT_FILE="+p.CertFile, "IGGY_QUIC_CERTIFICATE_KEY_FILE="+p.KeyFile)
	}
	return env, nil
}

// configure points cfg at addr over t (TLS trusting p).
func (t Transport) configure(cfg *client.Config, tcpAddr, wsAddr, quicAddr string, p *PKI) {
	cfg.Addresses = []string{tcpAddr}
	cfg.Transport = client.TransportTCP
	switch {
	case t.WS:
		cfg.Addresses = []string{wsAddr}
		cfg.Transport = client.TransportWS
	case t.QUIC:
		cfg.Addresses = []string{quicAddr}
		cfg.Transport = client.TransportQUIC
	}
	cfg.TLS = nil
	if t.TLS {
		cfg.TLS = p.ClientTLS()
	}
}
