package plane

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
)

// testPKI is a CA and one certificate per roster member (IP SAN = its
// roster ip), written as PEM files.
type testPKI struct {
	dir    string
	caFile string
	pool   *x509.CertPool
}

func pemWrite(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newCA(t *testing.T, dir, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	path := filepath.Join(dir, name+".pem")
	pemWrite(t, path, "CERTIFICATE", der)
	return ca, key, path
}

func issue(t *testing.T, dir, name string, ip net.IP, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{ip},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	pemWrite(t, certFile, "CERTIFICATE", der)
	pemWrite(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func newTestPKI(t *testing.T, roster []Member) *testPKI {
	dir := t.TempDir()
	ca, caKey, caFile := newCA(t, dir, "ca")
	for _, m := range roster {
		issue(t, dir, fmt.Sprintf("node-%d", m.ID), m.Addr.Addr().AsSlice(), ca, caKey)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{dir: dir, caFile: caFile, pool: pool}
}

func (p *testPKI) config(i int) TLS {
	return TLS{Mode: TLSCA, CAFile: p.caFile,
		CertFile: filepath.Join(p.dir, fmt.Sprintf("node-%d.pem", i)),
		KeyFile:  filepath.Join(p.dir, fmt.Sprintf("node-%d-key.pem", i))}
}

// clientTLS is a dialer configuration presenting node i's certificate.
func (p *testPKI) clientTLS(t *testing.T, i int, target Member) *tls.Config {
	c := p.config(i)
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{ALPN}, Certificates: []tls.Certificate{cert},
		RootCAs: p.pool, ServerName: target.Addr.Addr().String()}
}

func TestTLSSelfSignedMesh(t *testing.T) {
	c := newCluster(t, 3)
	c.startAll(t, func(i int, cfg *Config) { cfg.TLS = TLS{Mode: TLSSelfSigned} })
	c.waitMesh(t)
	for round := 0; round < 3; round++ {
		exchange(t, c, round)
	}
}

func TestTLSCAMesh(t *testing.T) {
	c := newCluster(t, 3)
	pki := newTestPKI(t, c.roster)
	c.startAll(t, func(i int, cfg *Config) { cfg.TLS = pki.config(i) })
	c.waitMesh(t)
	for round := 0; round < 3; round++ {
		exchange(t, c, round)
	}
}

func TestTLSRefusesPlainPeerAndForeignCA(t *testing.T) {
	c := newCluster(t, 2)
	pki := newTestPKI(t, c.roster)
	nd := c.start(t, 1, c.lns[1], func(cfg *Config) { cfg.TLS = pki.config(1) })

	// A plain-TCP peer speaks the key handshake into a TLS listener.
	conn := rawDial(t, "127.0.0.1", c.roster[1].Addr)
	_ = clientHandshake(conn, rawLocal(0, 2, keyOld), 1, nil)
	expectRefusal(t, nd, ReasonTLS, conn)

	// A certificate from another CA, for the right ip.
	other := t.TempDir()
	ca2, key2, _ := newCA(t, other, "rogue-ca")
	certFile, keyFile := issue(t, other, "rogue", net.ParseIP("127.0.0.1"), ca2, key2)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	before := nd.tr.Stats().Refused(ReasonTLS)
	conn2 := rawDial(t, "127.0.0.1", c.roster[1].Addr)
	tc := tls.Client(conn2, &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{ALPN},
		Certificates: []tls.Certificate{cert}, RootCAs: pki.pool, ServerName: "127.0.0.2"})
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	// TLS 1.3 clients finish before the server checks their certificate;
	// the refusal shows on the first read.
	if err := tc.Handshake(); err == nil {
		if _, err := tc.Read(make([]byte, 1)); err == nil {
			t.Fatal("a certificate from another CA was accepted")
		}
	}
	eventually(t, "foreign CA refused", func() bool { return nd.tr.Stats().Refused(ReasonTLS) > before })

	// The legitimate peer still links.
	c.start(t, 0, c.lns[0], func(cfg *Config) { cfg.TLS = pki.config(0) })
	c.waitMesh(t)
	exchange(t, c, 0)
}
