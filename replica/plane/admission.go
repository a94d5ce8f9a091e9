package plane

import (
	"net"
	"net/netip"
	"sync"
)

// gate admits accepted connections to the handshake until they deliver a
// valid hello (see "Admission" in the package doc). A connection from a
// roster address that may dial this node (a lower replica id's ip) is
// admitted ahead of everyone else: it does not use the shared pool, and
// when its address's quota is full the oldest waiting connection from that
// address is closed to make room. Any other address gets at most perAddr
// waiting connections and all of them together at most general; beyond
// that the new connection is refused at once.
type gate struct {
	roster  map[netip.Addr]bool
	perAddr int
	general int

	mu      sync.Mutex
	used    int // waiting connections from addresses outside the roster
	pending map[netip.Addr][]*pass
}

// pass is one admitted connection waiting for its hello.
type pass struct {
	g       *gate
	addr    netip.Addr
	roster  bool
	conn    net.Conn
	done    bool // released or evicted
	evicted bool
}

func newGate(roster []netip.Addr, perAddr, general int) *gate {
	g := &gate{roster: map[netip.Addr]bool{}, perAddr: perAddr, general: general, pending: map[netip.Addr][]*pass{}}
	for _, a := range roster {
		g.roster[a.Unmap()] = true
	}
	return g
}

// gateRefusal says why enter refused a connection: the per-address quota
// or the shared pool.
type gateRefusal uint8

const (
	gateAdmitted gateRefusal = iota
	gateAddressFull
	gatePoolFull
)

// enter admits conn from addr, or says which limit refuses it. A roster
// address at its quota evicts its oldest waiting connection (closed here;
// its handshake goroutine sees the close and reports the eviction).
func (g *gate) enter(addr netip.Addr, conn net.Conn) (*pass, gateRefusal) {
	addr = addr.Unmap()
	g.mu.Lock()
	defer g.mu.Unlock()
	q := g.pending[addr]
	p := &pass{g: g, addr: addr, roster: g.roster[addr], conn: conn}
	switch {
	case p.roster:
		if len(q) >= g.perAddr {
			old := q[0]
			q = q[1:]
			old.done, old.evicted = true, true
			_ = old.conn.Close()
		}
	case len(q) >= g.perAddr:
		return nil, gateAddressFull
	case g.used >= g.general:
		return nil, gatePoolFull
	default:
		g.used++
	}
	g.pending[addr] = append(q, p)
	return p, gateAdmitted
}

// release ends the wait of p (hello received, or the connection is gone).
// It is idempotent and reports whether p had been evicted.
func (p *pass) release() (evicted bool) {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if p.done {
		return p.evicted
	}
	p.done = true
	q := g.pending[p.addr]
	for i, x := range q {
		if x == p {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(g.pending, p.addr)
	} else {
		g.pending[p.addr] = q
	}
	if !p.roster {
		g.used--
	}
	return false
}

// isEvicted reports whether p was closed to make room for a newer
// connection from its address.
func (p *pass) isEvicted() bool {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	return p.evicted
}

// waiting returns the number of waiting connections: from addr, and from
// all addresses outside the roster.
func (g *gate) waiting(addr netip.Addr) (fromAddr, pool int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending[addr.Unmap()]), g.used
}
