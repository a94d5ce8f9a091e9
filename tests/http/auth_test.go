package http_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggo/iggo/client/httpclient"
)

// TestJWTLifecycle: an access token expires after http.jwt.access_token_expiry
// (no clock skew here), a valid one refreshes into a new one, logout revokes
// the presented token (and only it), and a revoked token cannot refresh.
func TestJWTLifecycle(t *testing.T) {
	s := start(t, "IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY=3s", "IGGY_HTTP_JWT_CLOCK_SKEW=0s")
	c := root(t, s)
	expect(t, c, "GET", "/streams", nil, 200)

	// Refresh: a new token for the same user, both valid.
	var id httpclient.Identity
	if err := c.Call(ctxT(t), "POST", "/users/refresh-token", map[string]string{"token": c.Token}, &id); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if id.UserID != 0 || id.AccessToken.Token == "" || id.AccessToken.Token == c.Token {
		t.Fatalf("refreshed identity %+v", id)
	}
	fresh := httpclient.New(s.HTTPURL())
	fresh.Token = id.AccessToken.Token
	expect(t, fresh, "GET", "/streams", nil, 200)
	errorOf(t, expect(t, fresh, "POST", "/users/refresh-token", map[string]string{"token": "garbage"}, 401), 40, "unauthenticated")

	// Logout revokes c's token everywhere; the refreshed one still works.
	expect(t, c, "DELETE", "/users/logout", nil, 204)
	errorOf(t, expect(t, c, "GET", "/streams", nil, 401), 40, "unauthenticated")
	errorOf(t, expect(t, fresh, "POST", "/users/refresh-token", map[string]string{"token": c.Token}, 401), 40, "unauthenticated")
	expect(t, fresh, "GET", "/streams", nil, 200)

	// Expiry: after 3 s (+1) the token is refused, and cannot refresh.
	deadline := time.Now().Add(time.Duration(id.AccessToken.Expiry-uint64(time.Now().Unix())+1) * time.Second)
	time.Sleep(time.Until(deadline) + 200*time.Millisecond)
	errorOf(t, expect(t, fresh, "GET", "/streams", nil, 401), 40, "unauthenticated")
	errorOf(t, expect(t, fresh, "POST", "/users/refresh-token", map[string]string{"token": fresh.Token}, 401), 40, "unauthenticated")

	// The revocation is replicated state: it survives a restart once the
	// tokens are signed with a configured secret.
	s2 := start(t, "IGGY_HTTP_JWT_ENCODING_SECRET=0123456789abcdef0123456789abcdef", "IGGY_HTTP_JWT_DECODING_SECRET=0123456789abcdef0123456789abcdef")
	c2 := root(t, s2)
	expect(t, c2, "DELETE", "/users/logout", nil, 204)
	if err := s2.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	s2.Restart()
	c2.Base = s2.HTTPURL()
	errorOf(t, expect(t, c2, "GET", "/streams", nil, 401), 40, "unauthenticated")
	c3 := root(t, s2)
	expect(t, c3, "GET", "/streams", nil, 200)
}

// TestCORSPreflight: a browser preflight is answered by the CORS layer
// (no token needed), with the configured origins, methods and headers.
func TestCORSPreflight(t *testing.T) {
	s := start(t)
	req, _ := http.NewRequestWithContext(ctxT(t), "OPTIONS", s.HTTPURL()+"/streams", nil)
	req.Header.Set("Origin", "https://ui.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	// As browsers send it: lower-case, sorted, comma-separated.
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.Header.Get("Access-Control-Allow-Origin") != "*" ||
		resp.Header.Get("Access-Control-Allow-Methods") != "POST" || resp.Header.Get("Access-Control-Allow-Headers") == "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	// A simple request from an origin gets the exposed headers.
	req, _ = http.NewRequestWithContext(ctxT(t), "GET", s.HTTPURL()+"/ping", nil)
	req.Header.Set("Origin", "https://ui.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Expose-Headers") == "" {
		t.Fatalf("simple request: %v", resp.Header)
	}

	// Explicit origins: another origin gets no CORS headers.
	s2 := start(t, "IGGY_HTTP_CORS_ALLOWED_ORIGINS=https://ok.example")
	req, _ = http.NewRequestWithContext(ctxT(t), "OPTIONS", s2.HTTPURL()+"/streams", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", "GET")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("foreign origin allowed: %v", resp.Header)
	}
}

// TestHTTPS: with http.tls the API speaks TLS only, with the configured
// certificate (a test CA made here signs it).
func TestHTTPS(t *testing.T) {
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iggo test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)

	s := start(t, "IGGY_HTTP_TLS_ENABLED=true", "IGGY_HTTP_TLS_CERT_FILE="+certFile, "IGGY_HTTP_TLS_KEY_FILE="+keyFile)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	c := httpclient.New("https://" + s.HTTPAddr)
	c.HTTP = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if _, err := c.Login(ctxT(t), "iggy", "iggy"); err != nil {
		t.Fatalf("login over https: %v", err)
	}
	expect(t, c, "GET", "/streams", nil, 200)
	// Plain HTTP to the TLS port gets no API answer.
	resp, err := http.Get("http://" + s.HTTPAddr + "/ping")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && bytes.Equal(b, []byte("pong")) {
			t.Fatal("plain HTTP answered on the TLS listener")
		}
	}
	// A client without the CA refuses the certificate.
	if _, err := http.Get("https://" + s.HTTPAddr + "/ping"); err == nil {
		t.Fatal("certificate of an unknown CA accepted")
	}
}
