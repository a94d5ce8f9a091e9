package cli

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/iggo/iggo/client"
)

// QUICOptions are Iggy's --quic-* global options besides the address (those
// quic-go has).
type QUICOptions struct {
	ServerName          string
	ValidateCertificate bool
	InitialMTU          uint16
	ReceiveWindow       uint64
	KeepAliveInterval   uint64 // ms
	MaxIdleTimeout      uint64 // ms
}

func addQUICFlags(f *pflag.FlagSet, q *QUICOptions) {
	d := client.DefaultQUICConfig()
	f.StringVar(&q.ServerName, "quic-server-name", "localhost", "TLS server name of the QUIC server")
	f.BoolVar(&q.ValidateCertificate, "quic-validate-certificate", false, "verify the QUIC server's certificate (system roots, or --tls-ca-file)")
	f.Uint16Var(&q.InitialMTU, "quic-initial-mtu", d.InitialMTU, "initial QUIC packet size")
	f.Uint64Var(&q.ReceiveWindow, "quic-receive-window", d.ReceiveWindow, "QUIC receive window (bytes)")
	f.Uint64Var(&q.KeepAliveInterval, "quic-keep-alive-interval", uint64(d.KeepAliveInterval/time.Millisecond), "QUIC keep-alive interval (ms, 0: none)")
	f.Uint64Var(&q.MaxIdleTimeout, "quic-max-idle-timeout", uint64(d.MaxIdleTimeout/time.Millisecond), "QUIC idle timeout (ms)")
}

// apply sets cfg's QUIC settings from the options. Without
// --quic-validate-certificate the server's certificate is not verified
// (Iggy's QUIC default); with it, against caFile when given, else the
// system roots, for --quic-server-name.
func (q QUICOptions) apply(cfg *client.Config, caFile string) error {
	cfg.QUIC = client.QUICConfig{InitialMTU: q.InitialMTU, ReceiveWindow: q.ReceiveWindow,
		KeepAliveInterval: time.Duration(q.KeepAliveInterval) * time.Millisecond,
		MaxIdleTimeout:    time.Duration(q.MaxIdleTimeout) * time.Millisecond}
	cfg.TLS = nil // QUIC always runs TLS; nil skips verification
	if !q.ValidateCertificate {
		return nil
	}
	tc := &tls.Config{ServerName: q.ServerName, MinVersion: tls.VersionTLS13}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return localErr("read --tls-ca-file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return localErr("%s holds no PEM certificates", caFile)
		}
		tc.RootCAs = pool
	}
	cfg.TLS = tc
	return nil
}
