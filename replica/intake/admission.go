package intake

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// Configuration keys named in refusals.
const (
	KeyConnectionsMax     = "message_bus.connections_max"
	KeyUnauthPerAddress   = "message_bus.unauthenticated_per_address_max"
	KeyUnauthBytes        = "message_bus.unauthenticated_bytes_max"
	KeyUnauthFrame        = "message_bus.unauthenticated_frame_max"
	KeyInFlightBytes      = "message_bus.inflight_bytes_max"
	KeyFrameHeaderTimeout = "message_bus.frame_header_timeout"
	KeyFrameBodyTimeout   = "message_bus.frame_body_timeout"
	KeyUnauthIdleTimeout  = "message_bus.unauthenticated_idle_timeout"
)

// AdmissionConfig are the caps Admit enforces; a zero cap is no cap.
type AdmissionConfig struct {
	// ConnectionsMax caps open client connections on the node.
	ConnectionsMax int
	// TransportMax caps connections per transport name ("tcp", ...); a
	// refusal names the key "<transport>.connections_max".
	TransportMax map[string]int
	// UnauthPerAddress caps connections per source address (IPv6: per
	// /64) that have not logged in.
	UnauthPerAddress int
	// UnauthBase is what a connection holds before its login (its read
	// buffers), charged to Unauth at admission.
	UnauthBase int64
	// Unauth is the budget of bytes held by unauthenticated connections;
	// nil charges nothing.
	Unauth *Budget
}

// Refusal says which limit refused a connection.
type Refusal struct {
	// Key is the configuration key of the limit.
	Key string
	// Limit is its value.
	Limit int64
	// Transport is set for a per-transport cap.
	Transport string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("%s (%d) reached", r.Key, r.Limit)
}

// Admission counts the node's open client connections.
type Admission struct {
	cfg AdmissionConfig

	mu     sync.Mutex
	total  int
	per    map[string]int
	unauth map[netip.Prefix]int
	pend   int // connections not logged in
}

// NewAdmission returns an empty admission counter.
func NewAdmission(cfg AdmissionConfig) *Admission {
	return &Admission{cfg: cfg, per: map[string]int{}, unauth: map[netip.Prefix]int{}}
}

// Config returns the caps.
func (a *Admission) Config() AdmissionConfig { return a.cfg }

// Counts reports the open connections: all of them, per transport, and how
// many have not logged in.
func (a *Admission) Counts() (total int, perTransport map[string]int, unauthenticated int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	per := make(map[string]int, len(a.per))
	for k, v := range a.per {
		per[k] = v
	}
	return a.total, per, a.pend
}

// AddrKey is the key a source address is counted under: IPv4 (and
// IPv4-mapped IPv6) addresses by themselves, other IPv6 addresses by their
// /64. An address that does not parse counts as the invalid prefix, one
// key for all of them.
func AddrKey(addr net.Addr) netip.Prefix {
	var ip netip.Addr
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	case *net.UDPAddr:
		ip, _ = netip.AddrFromSlice(a.IP)
	default:
		if addr != nil {
			if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
				ip = ap.Addr()
			}
		}
	}
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		return netip.PrefixFrom(ip, 32)
	case ip.Is6():
		p, _ := ip.WithZone("").Prefix(64)
		return p
	}
	return netip.Prefix{}
}

// Admit takes a slot for a new connection of transport from src, or says
// which limit refuses it.
func (a *Admission) Admit(transport string, src netip.Prefix) (*Ticket, *Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.cfg.ConnectionsMax; m > 0 && a.total >= m {
		return nil, &Refusal{Key: KeyConnectionsMax, Limit: int64(m)}
	}
	if m := a.cfg.TransportMax[transport]; m > 0 && a.per[transport] >= m {
		return nil, &Refusal{Key: transport + ".connections_max", Limit: int64(m), Transport: transport}
	}
	if m := a.cfg.UnauthPerAddress; m > 0 && a.unauth[src] >= m {
		return nil, &Refusal{Key: KeyUnauthPerAddress, Limit: int64(m)}
	}
	if b := a.cfg.Unauth; b != nil && !b.Acquire(a.cfg.UnauthBase) {
		return nil, &Refusal{Key: b.Key(), Limit: b.Limit()}
	}
	a.total++
	a.per[transport]++
	a.unauth[src]++
	a.pend++
	return &Ticket{a: a, transport: transport, src: src, unauth: true}, nil
}

// Ticket is one admitted connection's claim on the counters.
type Ticket struct {
	a         *Admission
	transport string
	src       netip.Prefix
	unauth    bool
	released  bool
}

// Transport is the transport the connection came in on.
func (t *Ticket) Transport() string { return t.transport }

// Authenticated gives back the unauthenticated slot of the source address
// and the unauthenticated charge; later calls do nothing. A connection that
// logs out keeps its (authenticated) claim. A nil ticket (a connection
// that was never admitted) does nothing.
func (t *Ticket) Authenticated() {
	if t == nil {
		return
	}
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	t.leaveUnauthLocked()
}

func (t *Ticket) leaveUnauthLocked() {
	if !t.unauth || t.released {
		return
	}
	a := t.a
	t.unauth = false
	a.pend--
	if a.unauth[t.src]--; a.unauth[t.src] == 0 {
		delete(a.unauth, t.src)
	}
	if b := a.cfg.Unauth; b != nil {
		b.Release(a.cfg.UnauthBase)
	}
}

// Release gives back the connection's slot; later calls do nothing, as
// does a nil ticket.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	a := t.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.released {
		return
	}
	t.leaveUnauthLocked()
	t.released = true
	a.total--
	if a.per[t.transport]--; a.per[t.transport] == 0 {
		delete(a.per, t.transport)
	}
}
