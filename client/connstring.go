package client

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ParseConnectionString applies an Iggy connection string to cfg:
//
//	iggy://user:pass@host:port[?options]        (TCP)
//	iggy+tcp://user:pass@host:port[?options]
//	iggy+ws://user:pass@host:port[?options]     (WebSocket; tls=true: WSS)
//	iggy+quic://user:pass@host:port[?options]
//	iggy://iggypat-...@host:port                (a personal access token)
//
// Options, as Iggy's SDK reads them: tls (true/false), tls_domain,
// tls_ca_file, tls_validate_certificate (false skips verification),
// heartbeat_interval, reconnection_retries (a number or "unlimited"),
// reconnection_interval, reestablish_after (accepted; reconnection here
// starts at once), nodelay (accepted; always on), max_message_size (the
// largest reply, WebSocket). iggy+quic also takes Iggy's QUIC options
// (quicOption). An unknown option is an error.
func ParseConnectionString(s string, cfg *Config) error {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return fmt.Errorf("client: connection string %q: no scheme (iggy://, iggy+tcp://, iggy+ws://, iggy+quic://)", redact(s))
	}
	switch scheme {
	case "iggy", "iggy+tcp":
		cfg.Transport = TransportTCP
	case "iggy+ws":
		cfg.Transport = TransportWS
	case "iggy+quic":
		cfg.Transport = TransportQUIC
	default:
		return fmt.Errorf("client: connection string: unsupported scheme %q", scheme)
	}
	creds, rest, ok := strings.Cut(rest, "@")
	if !ok || creds == "" {
		return fmt.Errorf("client: connection string %q: no credentials (user:password@ or token@)", redact(s))
	}
	if user, pass, isPass := strings.Cut(creds, ":"); isPass {
		if user == "" || pass == "" {
			return fmt.Errorf("client: connection string: username and password must both be set")
		}
		cfg.Username, cfg.Password, cfg.Token = user, pass, ""
	} else {
		cfg.Token, cfg.Username, cfg.Password = creds, "", ""
	}
	addr, query, _ := strings.Cut(rest, "?")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("client: connection string: server address %q must be host:port", addr)
	}
	cfg.Addresses = []string{addr}
	opts, err := url.ParseQuery(query)
	if err != nil {
		return fmt.Errorf("client: connection string options: %w", err)
	}
	var tlsOn bool
	var to TLSOptions
	for k, vs := range opts {
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "tls":
			tlsOn, err = strconv.ParseBool(v)
		case "tls_domain":
			to.Domain = v
		case "tls_ca_file":
			to.CAFile = v
		case "tls_validate_certificate":
			var b bool
			b, err = strconv.ParseBool(v)
			to.Insecure = !b
		case "heartbeat_interval":
			cfg.HeartbeatInterval, err = parseDuration(v)
		case "reconnection_retries":
			if v == "unlimited" {
				cfg.Reconnect.MaxAttempts = 1 << 30
				break
			}
			cfg.Reconnect.MaxAttempts, err = strconv.Atoi(v)
			cfg.Reconnect.Enabled = cfg.Reconnect.MaxAttempts > 0
		case "reconnection_interval":
			cfg.Reconnect.Backoff, err = parseDuration(v)
			cfg.Reconnect.MaxBackoff = max(cfg.Reconnect.MaxBackoff, cfg.Reconnect.Backoff)
		case "reestablish_after", "nodelay":
			// Accepted for compatibility (see the doc comment).
		case "max_message_size":
			var n uint64
			n, err = strconv.ParseUint(v, 10, 32)
			cfg.MaxFrameSize = uint32(n)
		default:
			if ok, qerr := quicOption(k, v, cfg); ok && cfg.Transport == TransportQUIC {
				err = qerr
				break
			}
			return fmt.Errorf("client: connection string: unknown option %q", k)
		}
		if err != nil {
			return fmt.Errorf("client: connection string option %s=%q: %v", k, v, err)
		}
	}
	if tlsOn {
		tc, err := to.Config()
		if err != nil {
			return err
		}
		cfg.TLS = tc
	} else if to != (TLSOptions{}) {
		return fmt.Errorf("client: connection string: tls_* options need tls=true")
	}
	return nil
}

// parseDuration reads Iggy's durations ("5s", "500ms", "1m", also "5 s").
func parseDuration(v string) (time.Duration, error) {
	return time.ParseDuration(strings.ReplaceAll(v, " ", ""))
}

// redact hides the credentials of a connection string for messages.
func redact(s string) string {
	if i := strings.LastIndex(s, "@"); i >= 0 {
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			return s[:j+3] + "***" + s[i:]
		}
	}
	return s
}
