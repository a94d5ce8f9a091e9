package cli

import (
	"crypto/tls"
	"time"

	"github.com/spf13/pflag"

	"github.com/iggo/iggo/client"
)

// DefaultQUICAddress is Iggy's QUIC server default.
const DefaultQUICAddress = "127.0.0.1:8080"

// QUICOptions are Iggy's --quic-* global options (those quic-go has).
type QUICOptions struct {
	ServerAddress       string
	ServerName          string
	ValidateCertificate bool
	InitialMTU          uint16
	ReceiveWindow       uint64
	KeepAliveInterval   uint64 // ms
	MaxIdleTimeout      uint64 // ms
}

func addQUICFlags(f *pflag.FlagSet, q *QUICOptions) {
	d := client.DefaultQUICConfig()
	f.StringVar(&q.ServerAddress, "quic-server-address", DefaultQUICAddress, "server QUIC address (with --transport quic)")
	f.StringVar(&q.ServerName, "quic-server-name", "localhost", "TLS server name of the QUIC server")
	f.BoolVar(&q.ValidateCertificate, "quic-validate-certificate", false, "verify the QUIC server's certificate (system roots, or --tcp-tls-ca-file)")
	f.Uint16Var(&q.InitialMTU, "quic-initial-mtu", d.InitialMTU, "initial QUIC packet size")
	f.Uint64Var(&q.ReceiveWindow, "quic-receive-window", d.ReceiveWindow, "QUIC receive window (bytes)")
	f.Uint64Var(&q.KeepAliveInterval, "quic-keep-alive-interval", uint64(d.KeepAliveInterval/time.Millisecond), "QUIC keep-alive interval (ms, 0: none)")
	f.Uint64Var(&q.MaxIdleTimeout, "quic-max-idle-timeout", uint64(d.MaxIdleTimeout/time.Millisecond), "QUIC idle timeout (ms)")
}

// apply points cfg at --quic-server-address with the --quic-* options. tc
// is the --tcp-tls-* TLS configuration when given (its CA file and domain
// are used when the certificate is verified).
func (q QUICOptions) apply(cfg *client.Config, tc *tls.Config) {
	cfg.Transport = client.TransportQUIC
	cfg.Addresses = []string{q.ServerAddress}
	cfg.QUIC = client.QUICConfig{InitialMTU: q.InitialMTU, ReceiveWindow: q.ReceiveWindow,
		KeepAliveInterval: time.Duration(q.KeepAliveInterval) * time.Millisecond,
		MaxIdleTimeout:    time.Duration(q.MaxIdleTimeout) * time.Millisecond}
	switch {
	case q.ValidateCertificate && tc != nil:
		c := tc.Clone()
		c.InsecureSkipVerify = false
		if c.ServerName == "" {
			c.ServerName = q.ServerName
		}
		cfg.TLS = c
	case q.ValidateCertificate:
		cfg.TLS = &tls.Config{ServerName: q.ServerName}
	default:
		cfg.TLS = nil // QUIC always runs TLS; nil skips verification (Iggy's default)
	}
}
