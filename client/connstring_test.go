package client

import (
	"strings"
	"testing"
	"time"
)

func TestParseConnectionString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want func(c Config) bool
		err  string
	}{
		{in: "iggy://user:secret@127.0.0.1:8090", want: func(c Config) bool {
			return c.Transport == TransportTCP && c.Username == "user" && c.Password == "secret" && c.Addresses[0] == "127.0.0.1:8090" && c.TLS == nil
		}},
		{in: "iggy+tcp://u:p@h:1?tls=true&tls_domain=example.com", want: func(c Config) bool {
			return c.TLS != nil && c.TLS.ServerName == "example.com" && !c.TLS.InsecureSkipVerify
		}},
		{in: "iggy+ws://u:p@h:8092?tls=true&tls_validate_certificate=false", want: func(c Config) bool {
			return c.Transport == TransportWS && c.TLS != nil && c.TLS.InsecureSkipVerify
		}},
		{in: "iggy+quic://u:p@h:8080", want: func(c Config) bool { return c.Transport == TransportQUIC }},
		{in: "iggy://iggypat-abc@h:8090", want: func(c Config) bool { return c.Token == "iggypat-abc" && c.Username == "" }},
		{in: "iggy://u:p@h:8090?heartbeat_interval=2s&reconnection_retries=3&reconnection_interval=250ms", want: func(c Config) bool {
			return c.HeartbeatInterval == 2*time.Second && c.Reconnect.MaxAttempts == 3 && c.Reconnect.Backoff == 250*time.Millisecond
		}},
		{in: "iggy://u:p@h:8090?invalid_option=invalid", err: "unknown option"},
		{in: "iggy://u:p@h:8090?tls_domain=x", err: "need tls=true"},
		{in: "iggy://u:p@h:8090?tls=true&tls_ca_file=/nonexistent/ca.pem", err: "ca file"},
		{in: "iggy+http://u:p@h:3000", err: "unsupported scheme"},
		{in: "iggy://:secret@h:8090", err: "both be set"},
		{in: "iggy://u:p@h", err: "host:port"},
		{in: "u:p@h:8090", err: "no scheme"},
	} {
		cfg := DefaultConfig()
		err := ParseConnectionString(tc.in, &cfg)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.err == "" && !tc.want(cfg):
			t.Errorf("%s: config %+v", tc.in, cfg)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: the error shows the password: %v", tc.in, err)
		}
	}
}

func TestTransportNotBuilt(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Transport = "carrier-pigeon"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "not built") {
		t.Fatalf("validate: %v", err)
	}
}
