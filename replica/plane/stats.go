package plane

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Reason classifies a refused connection or a link closed for a protocol
// violation. Each is counted (Stats.Refusals) and logged, rate-limited per
// reason.
type Reason uint8

const (
	// Handshake refusals.
	ReasonGarbage        Reason = iota // not a well-formed handshake message
	ReasonWrongCluster                 // the peer's cluster id differs (cluster.name)
	ReasonAuthMismatch                 // auth or TLS enabled on one side only
	ReasonRosterMismatch               // the rosters have different sizes
	ReasonWrongTarget                  // the peer addressed another replica id
	ReasonUnknownReplica               // the claimed id is not in the roster, or is ours
	ReasonWrongDirection               // a higher id dialed a lower one
	ReasonSourceAddress                // the connection does not come from the claimed id's roster ip
	ReasonCertIdentity                 // the TLS client certificate does not name the claimed id's roster ip
	ReasonNoSharedKey                  // no key in common (wrong shared_secret)
	ReasonBadMAC                       // the transcript MAC does not verify
	ReasonWrongPeer                    // the dialed address answered as another replica id
	ReasonTimeout                      // the handshake did not finish within handshake_grace
	ReasonTLS                          // the TLS handshake failed
	ReasonIO                           // the connection failed during the handshake
	ReasonBusy                         // the shared pool of connections waiting for a hello is full (replica_handshakes_max)
	ReasonDataKey                      // encryption at rest is keyed differently (encryption.key)
	ReasonAddressQuota                 // the source address has replica_handshakes_per_address connections waiting for a hello
	ReasonSuperseded                   // a newer handshake claiming the same replica replaced this one
	// Link violations by an authenticated peer; the link is closed.
	ReasonFrameTooLarge // a frame's size field is above max_message_size
	ReasonFrameCorrupt  // a frame fails the vsr decoder (seal, body checksum, shape)
	ReasonFrameCluster  // a frame carries another cluster id
	ReasonFrameSender   // a frame names a sender other than the link's peer
	ReasonCount         // number of reasons
)

var reasonNames = [ReasonCount]string{
	"garbage", "wrong_cluster", "auth_mismatch", "roster_mismatch", "wrong_target",
	"unknown_replica", "wrong_direction", "source_address", "cert_identity",
	"no_shared_key", "bad_mac", "wrong_peer", "timeout", "tls", "io", "busy", "data_key",
	"address_quota", "superseded",
	"frame_too_large", "frame_corrupt", "frame_cluster", "frame_sender",
}

func (r Reason) String() string {
	if r < ReasonCount {
		return reasonNames[r]
	}
	return "unknown"
}

// PeerStats is one peer link's counters.
type PeerStats struct {
	ReplicaID uint8
	Name      string
	Addr      string
	Connected bool
	// Since is when the current state (connected or not) began.
	Since time.Time

	Connects      uint64 // links established
	Disconnects   uint64 // links lost
	DialFailures  uint64 // outbound attempts that did not yield a link (peer down, refused handshake)
	FramesOut     uint64
	BytesOut      uint64
	WriteBatches  uint64 // vectored writes; FramesOut/WriteBatches is the coalescing factor
	FramesIn      uint64
	BytesIn       uint64
	RefusedFull   uint64 // Send refused: the peer queue was full
	RefusedDown   uint64 // Send refused: no link to the peer
	DroppedIn     uint64 // inbound frames the node's delivery queue refused (dropped, see package doc)
	DroppedQueued uint64 // queued outbound frames discarded when the link went down
	Violations    uint64 // links closed for a frame-level protocol violation
}

// Stats is a snapshot of a transport's counters.
type Stats struct {
	Self  uint8
	Peers []PeerStats // every roster member but Self, by replica id
	// Refusals counts refused connections and closed links by reason.
	Refusals [ReasonCount]uint64
	// Accepted counts inbound connections that completed the handshake.
	Accepted uint64
}

// Refused returns the count for one reason.
func (s Stats) Refused(r Reason) uint64 { return s.Refusals[r] }

type peerCounters struct {
	connects, disconnects, dialFailures  atomic.Uint64
	framesOut, bytesOut, batches         atomic.Uint64
	framesIn, bytesIn                    atomic.Uint64
	refusedFull, refusedDown             atomic.Uint64
	droppedIn, droppedQueued, violations atomic.Uint64
}

// logLimiter lets at most one log line per key through each interval and
// reports how many it held back, so a peer hammering the listener with
// garbage cannot flood the log. Keys are reasons, a fixed set.
type logLimiter struct {
	mu         sync.Mutex
	every      time.Duration
	last       [ReasonCount + 1]time.Time
	suppressed [ReasonCount + 1]uint64
}

func (l *logLimiter) allow(key Reason, now time.Time) (bool, uint64) {
	if key > ReasonCount {
		key = ReasonCount
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last[key].IsZero() && now.Sub(l.last[key]) < l.every {
		l.suppressed[key]++
		return false, 0
	}
	l.last[key] = now
	n := l.suppressed[key]
	l.suppressed[key] = 0
	return true, n
}

// logRefusal logs one refusal at warn level, rate-limited per reason.
func (t *Transport) logRefusal(r Reason, msg string, fields ...zap.Field) {
	ok, held := t.limit.allow(r, time.Now())
	if !ok {
		return
	}
	fields = append(fields, zap.String("reason", r.String()))
	if held > 0 {
		fields = append(fields, zap.Uint64("suppressed_since_last", held))
	}
	t.log.Warn(msg, fields...)
}
