package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/version"
	"github.com/iggo/iggo/wire"
)

// Config holds every limit of a Client explicitly. Start from DefaultConfig.
type Config struct {
	// Addresses are the servers to try, in order ("host:port"). The first
	// reachable one is used; healthy nodes of the cluster roster are added
	// as further reconnect candidates.
	Addresses []string
	// Transport is how to reach the servers: TransportTCP (the default when
	// empty), TransportWS, or TransportQUIC when built in. Roster addresses
	// (leader redirection) use that transport's port.
	Transport string
	// TLS enables TLS when non-nil (ServerName defaults to the dialed host):
	// TCP with TLS, or WSS for TransportWS. TLSOptions builds one. QUIC
	// always runs TLS: nil there means the server certificate is not
	// verified (Iggy's QUIC client default).
	TLS *tls.Config
	// QUIC holds the QUIC transport settings (Transport "quic").
	QUIC QUICConfig

	// Credentials used by Connect and by re-login after a reconnect. Either
	// Username (with Password, which may be empty) or Token; neither means
	// Connect does not log in.
	Username string
	Password string
	Token    string

	// AtLeastOnceSends turns the producer identity off: sends then go out
	// as Iggy's SDKs send them (no identity; a send whose reply was lost
	// is not sent again, and one sent again by the caller may land twice).
	// By default every send carries the identity and is retried until the
	// call's deadline, applied at most once (see the package doc).
	AtLeastOnceSends bool
	// Producer, when set, continues that producer identity (from
	// Client.Producer of an earlier Client of the same user) instead of
	// starting one at the first login.
	Producer *Producer

	// SDKName and SDKVersion are sent in the login's version prefix.
	SDKName    string
	SDKVersion string

	// DialTimeout bounds one TCP (and TLS) connection attempt.
	DialTimeout time.Duration
	// RequestTimeout bounds one call, replays and reconnects included, when
	// the context has no earlier deadline.
	RequestTimeout time.Duration
	// MaxFrameSize is the largest reply frame accepted (header included).
	MaxFrameSize uint32

	// ReplayInterval is the pause between replays of a request answered
	// TransientNotCommitted (57) or TransientNotAccepted (58).
	ReplayInterval time.Duration
	// NotAcceptedBudget is how long a request answered 58 is replayed on
	// the same connection before the client re-checks who leads.
	NotAcceptedBudget time.Duration

	// Reconnect controls automatic reconnection (with re-login).
	Reconnect ReconnectConfig

	// MaxRedirects bounds leader redirections in one leader check.
	MaxRedirects int
	// LeaderlessWait is how long a leader check polls a roster without a
	// healthy leader before staying on the current node; LeaderlessPoll is
	// the polling interval.
	LeaderlessWait time.Duration
	LeaderlessPoll time.Duration

	// GroupAssignmentRefresh is how long a cached consumer-group assignment
	// is used before SYNC is asked again; GroupPollAttempts bounds resyncs
	// in one group poll.
	GroupAssignmentRefresh time.Duration
	GroupPollAttempts      int

	// HeartbeatInterval sends PING on an idle connection this often; 0
	// disables the heartbeat.
	HeartbeatInterval time.Duration

	// IdleCheck: before a request goes out on a connection idle at least
	// this long, the client checks (without blocking) whether the server
	// has closed it meanwhile — a node that died or restarted — and then
	// reconnects first, so the request counts as not sent and is sent on
	// the new connection instead of failing with an unknown outcome. 0
	// disables the check. Plain TCP on unix only.
	IdleCheck time.Duration

	// Logger receives connection events; nil means no logging.
	Logger *zap.Logger
}

// ReconnectConfig bounds automatic reconnection.
type ReconnectConfig struct {
	Enabled bool
	// MaxAttempts is the number of dial attempts per reconnection (each
	// attempt tries the next candidate address).
	MaxAttempts int
	// Backoff is the first pause between attempts; it doubles up to
	// MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxPerCall bounds how many reconnections one call may trigger.
	MaxPerCall int
}

// DefaultConfig is the configuration with Iggy Go SDK-like limits.
func DefaultConfig() Config {
	return Config{
		Addresses:              []string{"127.0.0.1:8090"},
		SDKName:                "iggo-go",
		SDKVersion:             version.Version,
		DialTimeout:            5 * time.Second,
		RequestTimeout:         30 * time.Second,
		MaxFrameSize:           wire.DefaultMaxFrameSize,
		ReplayInterval:         50 * time.Millisecond,
		NotAcceptedBudget:      2 * time.Second,
		Reconnect:              ReconnectConfig{Enabled: true, MaxAttempts: 5, Backoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxPerCall: 3},
		MaxRedirects:           3,
		LeaderlessWait:         5 * time.Second,
		LeaderlessPoll:         250 * time.Millisecond,
		GroupAssignmentRefresh: 5 * time.Second,
		GroupPollAttempts:      2,
		HeartbeatInterval:      5 * time.Second,
		IdleCheck:              100 * time.Millisecond,
		QUIC:                   DefaultQUICConfig(),
	}
}

// Validate reports the first unusable setting.
func (c *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(len(c.Addresses) > 0, "client config: no server address")
	_, known := dialers[c.Transport]
	check(c.Transport == "" || known, "client config: transport %q is not built into this binary (have %s)", c.Transport, strings.Join(Transports(), ", "))
	check(c.Token == "" || c.Username == "", "client config: set either Username or Token, not both")
	check(len(c.SDKName) >= 1 && len(c.SDKName) <= 255, "client config: SDKName must be 1..255 bytes")
	check(len(c.SDKVersion) >= 1 && len(c.SDKVersion) <= 255, "client config: SDKVersion must be 1..255 bytes")
	check(c.DialTimeout > 0, "client config: DialTimeout must be > 0")
	check(c.RequestTimeout > 0, "client config: RequestTimeout must be > 0")
	check(c.MaxFrameSize >= wire.HeaderSize, "client config: MaxFrameSize must be >= %d", wire.HeaderSize)
	check(c.ReplayInterval > 0, "client config: ReplayInterval must be > 0")
	check(c.NotAcceptedBudget > 0, "client config: NotAcceptedBudget must be > 0")
	check(c.MaxRedirects >= 0, "client config: MaxRedirects must be >= 0")
	check(c.LeaderlessWait >= 0 && c.LeaderlessPoll > 0, "client config: LeaderlessWait >= 0 and LeaderlessPoll > 0")
	check(c.GroupAssignmentRefresh > 0 && c.GroupPollAttempts > 0, "client config: group refresh and attempts must be > 0")
	check(c.HeartbeatInterval >= 0, "client config: HeartbeatInterval must be >= 0")
	check(c.IdleCheck >= 0, "client config: IdleCheck must be >= 0")
	if c.Transport == TransportQUIC {
		q := c.QUIC
		// quic-go would raise a smaller one and cut a larger one unannounced
		check(q.InitialMTU >= quicMinMTU && q.InitialMTU <= quicMaxMTU, "client config: QUIC.InitialMTU (initial_mtu) must be %d to %d (quic-go's packet sizes), got %d", quicMinMTU, quicMaxMTU, q.InitialMTU)
		check(q.ReceiveWindow > 0 && q.KeepAliveInterval >= 0 && q.MaxIdleTimeout >= 0,
			"client config: QUIC.ReceiveWindow must be > 0 and its timers >= 0")
	}
	if c.Reconnect.Enabled {
		r := c.Reconnect
		check(r.MaxAttempts > 0 && r.Backoff > 0 && r.MaxBackoff >= r.Backoff && r.MaxPerCall > 0,
			"client config: reconnect needs MaxAttempts > 0, 0 < Backoff <= MaxBackoff, MaxPerCall > 0")
	}
	return errors.Join(errs...)
}
