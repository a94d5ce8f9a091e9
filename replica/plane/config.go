package plane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/vsr"
)

// Member is one roster entry as the replica plane sees it.
type Member struct {
	ID   uint8
	Name string
	// Addr is the member's roster ip and tcp_replica port: where it is
	// dialed, and the only source address it may connect from (unless
	// Config.AnySourceAddress).
	Addr netip.AddrPort
}

// TLSMode selects how links are encrypted.
type TLSMode uint8

const (
	TLSOff TLSMode = iota
	// TLSSelfSigned generates a throwaway certificate at start; the dialer
	// accepts any certificate. TLS then only encrypts: peers are
	// authenticated by the key handshake, which also binds the TLS session
	// (exporter), so a man in the middle cannot splice two sessions.
	TLSSelfSigned
	// TLSCA loads CertFile/KeyFile and verifies every peer against CAFile,
	// in both directions (mutual TLS). A peer's certificate must carry its
	// roster ip as an IP SAN: in this mode a replica's identity is proven
	// by its own private key, not only by the shared cluster key.
	TLSCA
)

var tlsModeNames = [...]string{"off", "self_signed", "ca"}

// String names the mode as log lines show it.
func (m TLSMode) String() string {
	if int(m) < len(tlsModeNames) {
		return tlsModeNames[m]
	}
	return "tls_mode(" + strconv.Itoa(int(m)) + ")"
}

// TLS configures link encryption.
type TLS struct {
	Mode     TLSMode
	CertFile string
	KeyFile  string
	CAFile   string
}

// Deliver receives one inbound frame from replica from, for consensus group
// group. m aliases a buffer allocated for this frame alone; the receiver owns
// it. Deliver runs on the link's reader goroutine and must not block: it
// should hand the frame to the bounded inbox of the shard that owns the group
// (shard.Route) with TrySend and return that error. A non-nil error makes the
// transport drop the frame and count it (PeerStats.DroppedIn); see the package
// doc for why that is safe.
type Deliver func(from uint8, group uint64, m vsr.Message) error

// Config configures one node's Transport.
type Config struct {
	// Self is this node's replica id; Roster lists every member, Self
	// included, with ids 0..len-1 (in any order).
	Self   uint8
	Roster []Member
	// ClusterName is hashed into the cluster id (ClusterID) that every frame
	// and handshake carries.
	ClusterName string

	// Auth enables the pre-shared key. Secret (≥ MinSecretBytes) signs and
	// verifies; PreviousSecret, during a rotation, is also accepted. Without
	// Auth the handshake still checks cluster, roster and ids but proves
	// nothing.
	Auth           bool
	Secret         []byte
	PreviousSecret []byte
	TLS            TLS
	// DataKeyID identifies the node's encryption-at-rest key (codec.KeyID),
	// zero with encryption off. Replicas journal each other's stored
	// batches, so peers keyed differently are refused (ReasonDataKey).
	DataKeyID [16]byte

	// Listener, when set, is the bound tcp_replica socket (shard 0 binds it
	// and hands it over); the transport owns it from Start on and closes it
	// in Close. Otherwise Start listens on ListenAddr, or on the roster
	// address of Self when that is empty too.
	Listener   net.Listener
	ListenAddr string

	// Deliver receives inbound frames. Required.
	Deliver Deliver

	// MaxMessageSize bounds every frame, header included
	// (message_bus.max_message_size).
	MaxMessageSize uint32
	// MaxBatch is the most frames one vectored write carries
	// (message_bus.max_batch).
	MaxBatch int
	// ReadBufferSize is the read-ahead per link: 0 means
	// DefaultReadBufferSize, negative reads unbuffered
	// (message_bus.replica_read_buffer_size, where 0 is unbuffered).
	ReadBufferSize int
	// PeerQueueCapacity bounds each peer's outbound queue, in frames
	// (message_bus.peer_queue_capacity).
	PeerQueueCapacity int

	// ReconnectMin is the first redial delay after a failure, doubling per
	// consecutive failure up to ReconnectMax (message_bus.reconnect_period);
	// each delay is jittered to [d/2, d] so restarted peers are not dialed in
	// lockstep.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// HandshakeGrace bounds connect + TLS + handshake (message_bus.handshake_grace).
	HandshakeGrace time.Duration
	// HelloGrace bounds an accepted connection's wait for a valid hello,
	// TLS included (message_bus.replica_hello_grace); at most
	// HandshakeGrace.
	HelloGrace time.Duration
	// WriteTimeout bounds one vectored write. A peer that cannot absorb a
	// batch for this long is treated as dead and its link is closed; the
	// node should use cluster.heartbeat_timeout, since such a peer is
	// deposed or ignored by consensus by then anyway.
	WriteTimeout time.Duration
	// CloseTimeout bounds Close's wait for the goroutines
	// (message_bus.close_peer_timeout).
	CloseTimeout time.Duration
	// KeepAlive configures TCP keep-alives; a half-open link whose peer
	// vanished is detected and closed by the kernel.
	KeepAlive net.KeepAliveConfig
	// HandshakesMax bounds the accepted connections from outside the
	// roster that wait for their hello at once; more are refused
	// (ReasonBusy, message_bus.replica_handshakes_max). Connections from
	// the roster ips of lower ids do not count against it.
	HandshakesMax int
	// HandshakesPerAddress bounds the connections from one source address
	// that wait for their hello (message_bus.replica_handshakes_per_address).
	// Beyond it a new connection is refused (ReasonAddressQuota) — except
	// from a roster address, where the oldest waiting one is closed instead.
	HandshakesPerAddress int
	// AnySourceAddress turns off the source-address check (a peer must
	// connect from its roster ip) and the dialer's binding to this node's
	// roster ip. Needed only behind NAT that rewrites source addresses.
	AnySourceAddress bool
	// LogInterval is the least time between two refusal log lines of one
	// reason.
	LogInterval time.Duration

	Logger *zap.Logger
}

// MinSecretBytes is the shortest accepted pre-shared key.
const MinSecretBytes = config.SharedSecretMinBytes

// Defaults for the fields a zero Config leaves unset.
const (
	DefaultMaxBatch          = 256
	DefaultPeerQueueCapacity = 4096
	DefaultReadBufferSize    = 32 << 10
	DefaultReconnectMin      = 50 * time.Millisecond
	DefaultReconnectMax      = time.Second
	DefaultHandshakeGrace    = 10 * time.Second
	DefaultHelloGrace        = 2 * time.Second
	DefaultHandshakesPerAddr = 4
	DefaultWriteTimeout      = 5 * time.Second
	DefaultCloseTimeout      = 2 * time.Second
	DefaultHandshakesMax     = 64
	DefaultLogInterval       = 10 * time.Second
)

// DefaultKeepAlive probes an idle link after 5 s, then every 2 s, and drops
// it after 3 unanswered probes: a vanished peer is noticed in about 11 s even
// when no frame is in flight.
var DefaultKeepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}

func (c *Config) applyDefaults() error {
	if c.Deliver == nil {
		return errors.New("plane: Config.Deliver is required")
	}
	if len(c.Roster) == 0 || len(c.Roster) > vsr.ReplicasMax {
		return fmt.Errorf("plane: roster has %d members, want 1..%d", len(c.Roster), vsr.ReplicasMax)
	}
	seen := make([]bool, len(c.Roster))
	for _, m := range c.Roster {
		if int(m.ID) >= len(c.Roster) || seen[m.ID] {
			return fmt.Errorf("plane: roster ids must be 0..%d without repeats, got %d", len(c.Roster)-1, m.ID)
		}
		seen[m.ID] = true
		if !m.Addr.IsValid() || m.Addr.Port() == 0 {
			return fmt.Errorf("plane: replica %d has no address", m.ID)
		}
	}
	if int(c.Self) >= len(c.Roster) {
		return fmt.Errorf("plane: self %d is not in a roster of %d", c.Self, len(c.Roster))
	}
	if c.ClusterName == "" {
		return errors.New("plane: ClusterName is required")
	}
	if c.Auth {
		if len(c.Secret) < MinSecretBytes {
			return fmt.Errorf("plane: the shared secret must be at least %d bytes, got %d", MinSecretBytes, len(c.Secret))
		}
		if len(c.PreviousSecret) != 0 && len(c.PreviousSecret) < MinSecretBytes {
			return fmt.Errorf("plane: the previous shared secret must be at least %d bytes, got %d", MinSecretBytes, len(c.PreviousSecret))
		}
	}
	if c.TLS.Mode != TLSOff && !c.Auth {
		return errors.New("plane: TLS requires Auth (TLS alone does not authenticate the dialing peer)")
	}
	if c.TLS.Mode == TLSCA && (c.TLS.CertFile == "" || c.TLS.KeyFile == "" || c.TLS.CAFile == "") {
		return errors.New("plane: TLS CA mode needs CertFile, KeyFile and CAFile")
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = uint32(64 << 20)
	}
	if c.MaxMessageSize < vsr.HeaderSize {
		return fmt.Errorf("plane: MaxMessageSize %d is below the %d-byte header", c.MaxMessageSize, vsr.HeaderSize)
	}
	setInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setInt(&c.MaxBatch, DefaultMaxBatch)
	setInt(&c.PeerQueueCapacity, DefaultPeerQueueCapacity)
	setInt(&c.HandshakesMax, DefaultHandshakesMax)
	setInt(&c.HandshakesPerAddress, DefaultHandshakesPerAddr)
	switch {
	case c.ReadBufferSize == 0:
		c.ReadBufferSize = DefaultReadBufferSize
	case c.ReadBufferSize < 0:
		c.ReadBufferSize = 0
	}
	setDur(&c.ReconnectMin, DefaultReconnectMin)
	setDur(&c.ReconnectMax, DefaultReconnectMax)
	if c.ReconnectMax < c.ReconnectMin {
		c.ReconnectMax = c.ReconnectMin
	}
	setDur(&c.HandshakeGrace, DefaultHandshakeGrace)
	setDur(&c.HelloGrace, DefaultHelloGrace)
	c.HelloGrace = min(c.HelloGrace, c.HandshakeGrace)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.CloseTimeout, DefaultCloseTimeout)
	setDur(&c.LogInterval, DefaultLogInterval)
	if c.KeepAlive == (net.KeepAliveConfig{}) {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// FromConfig maps the server configuration onto a transport Config for
// replica self: the roster (ip:tcp_replica), cluster.name, [cluster.auth],
// [cluster.tls] and [message_bus]. ReconnectMax is message_bus.
// reconnect_period and ReconnectMin a sixteenth of it (at least 10 ms);
// WriteTimeout is cluster.heartbeat_timeout. The caller sets Deliver,
// Listener and Logger. cfg must have passed Validate.
func FromConfig(cfg *config.Config, self uint8) (Config, error) {
	cl := cfg.Cluster
	c := Config{Self: self, ClusterName: cl.Name}
	for _, n := range cl.Nodes {
		ip, err := netip.ParseAddr(n.IP)
		if err != nil {
			return Config{}, fmt.Errorf("plane: cluster.nodes %q ip: %w", n.Name, err)
		}
		if n.Ports.TCPReplica == nil || n.ReplicaID < 0 || n.ReplicaID > 255 {
			return Config{}, fmt.Errorf("plane: cluster.nodes %q needs a replica id and ports.tcp_replica", n.Name)
		}
		c.Roster = append(c.Roster, Member{ID: uint8(n.ReplicaID), Name: n.Name, Addr: netip.AddrPortFrom(ip.Unmap(), *n.Ports.TCPReplica)})
	}
	if a := cl.Auth; a.Enabled {
		c.Auth = true
		c.Secret = []byte(a.SharedSecret)
		if a.PreviousSharedSecret != "" {
			c.PreviousSecret = []byte(a.PreviousSharedSecret)
		}
	}
	if t := cl.TLS; t.Enabled {
		if t.SelfSigned {
			c.TLS = TLS{Mode: TLSSelfSigned}
		} else {
			c.TLS = TLS{Mode: TLSCA, CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile}
		}
	}
	b := cfg.MessageBus
	c.MaxMessageSize = uint32(b.MaxMessageSize)
	c.MaxBatch = b.MaxBatch
	c.ReadBufferSize = int(b.ReplicaReadBufferSize)
	if c.ReadBufferSize == 0 {
		c.ReadBufferSize = -1 // the key's 0 means unbuffered
	}
	c.PeerQueueCapacity = b.PeerQueueCapacity
	c.ReconnectMax = b.ReconnectPeriod.Duration
	c.ReconnectMin = max(b.ReconnectPeriod.Duration/16, 10*time.Millisecond)
	c.HandshakeGrace = b.HandshakeGrace.Duration
	c.HelloGrace = b.ReplicaHelloGrace.Duration
	c.HandshakesMax = b.ReplicaHandshakesMax
	c.HandshakesPerAddress = b.ReplicaHandshakesPerAddress
	c.CloseTimeout = b.ClosePeerTimeout.Duration
	c.WriteTimeout = cl.HeartbeatTimeout.Duration
	return c, nil
}
