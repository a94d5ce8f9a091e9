package operator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// TestTLSCertificatesMissing: a TLS listener whose certificate or key file
// is missing or unreadable refuses to start, naming the key, before it
// touches storage; with both files in place the same settings serve.
func TestTLSCertificatesMissing(t *testing.T) {
	p := harness.MustPKI(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	must(t, os.WriteFile(garbage, []byte("not a certificate"), 0o600), "write")
	unreadable := filepath.Join(t.TempDir(), "unreadable.pem")
	must(t, os.WriteFile(unreadable, []byte("x"), 0o600), "write")
	must(t, os.Chmod(unreadable, 0), "chmod")
	canRead := false
	if f, err := os.Open(unreadable); err == nil { // root reads anything
		canRead = true
		f.Close()
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"tcp cert missing", []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false", "IGGY_TCP_TLS_CERT_FILE=" + missing, "IGGY_TCP_TLS_KEY_FILE=" + p.KeyFile}, "tcp.tls.cert_file"},
		{"tcp key missing", []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false", "IGGY_TCP_TLS_CERT_FILE=" + p.CertFile, "IGGY_TCP_TLS_KEY_FILE=" + missing}, "tcp.tls.key_file"},
		{"tcp cert garbage", []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false", "IGGY_TCP_TLS_CERT_FILE=" + garbage, "IGGY_TCP_TLS_KEY_FILE=" + p.KeyFile}, "tcp.tls.cert_file"},
		{"self_signed with one file missing", []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=true", "IGGY_TCP_TLS_CERT_FILE=" + p.CertFile, "IGGY_TCP_TLS_KEY_FILE=" + missing}, "tcp.tls.key_file"},
		{"wss cert missing", []string{"IGGY_WEBSOCKET_ENABLED=true", "IGGY_WEBSOCKET_ADDRESS=127.0.0.1:0", "IGGY_WEBSOCKET_TLS_ENABLED=true", "IGGY_WEBSOCKET_TLS_SELF_SIGNED=false", "IGGY_WEBSOCKET_TLS_CERT_FILE=" + missing, "IGGY_WEBSOCKET_TLS_KEY_FILE=" + p.KeyFile}, "websocket.tls.cert_file"},
	}
	if !canRead {
		cases = append(cases, struct {
			name string
			env  []string
			want string
		}{"tcp key unreadable", []string{"IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false", "IGGY_TCP_TLS_CERT_FILE=" + p.CertFile, "IGGY_TCP_TLS_KEY_FILE=" + unreadable}, "tcp.tls.key_file"})
	}
	for _, tc := range cases {
		dir := filepath.Join(t.TempDir(), "data")
		code, out := harness.Exit(t, harness.Options{DataDir: dir, DefaultRoot: true, Env: tc.env}, 60*time.Second)
		if code == 0 || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: exit %d, want a refusal naming %s:\n%s", tc.name, code, tc.want, out)
		}
		if strings.Contains(out, "recovered") {
			t.Fatalf("%s: the refused start recovered storage first:\n%s", tc.name, out)
		}
	}
	s := harness.Start(t, harness.Options{DefaultRoot: true, Transport: harness.TCPTLS})
	must(t, s.Root(t).Ping(ctxT(t)), "ping over TLS with both files")
}
