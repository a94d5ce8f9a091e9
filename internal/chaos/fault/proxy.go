package fault

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is the loopback-only network: every directed link (a node, or the
// clients, dialing a node) goes through a TCP proxy on 127.0.0.1 that the
// dialer is configured to use instead of the node's real address.
//
// Block(a, b) stalls the bytes a sends to b on every connection between
// them, whichever side dialed: the proxy stops forwarding that direction
// (holding at most one read buffer), the kernel buffers fill and the sender
// blocks, as if packets were lost and retransmitted; on Heal the held bytes
// flow again. Isolate(i) cuts: connections touching i are closed and new
// ones are accepted and closed at once until Heal.
type Proxy struct {
	mu       sync.Mutex
	cond     *sync.Cond
	links    map[[2]int]*proxyLink
	blocked  map[[2]int]bool
	isolated map[int]bool
	closed   bool
	wg       sync.WaitGroup
}

type proxyLink struct {
	from, to int
	target   string
	ln       net.Listener
	conns    map[*proxyConn]bool
}

type proxyConn struct {
	a, b   net.Conn // a: the dialer's side, b: the target's side
	closed bool
}

// NewProxy returns a proxy network without links.
func NewProxy() *Proxy {
	p := &Proxy{links: map[[2]int]*proxyLink{}, blocked: map[[2]int]bool{}, isolated: map[int]bool{}}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// Link starts forwarding connections that from (a node index or Client)
// opens to node to, whose real address is target, and returns the address
// from must dial instead.
func (p *Proxy) Link(from, to int, target string) (string, error) {
	if to < 0 || from == to {
		return "", fmt.Errorf("fault: proxy link %d -> %d: bad endpoints", from, to)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("fault: proxy closed")
	}
	if l, ok := p.links[[2]int{from, to}]; ok {
		return "", fmt.Errorf("fault: proxy link %d -> %d exists (%s)", from, to, l.ln.Addr())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("fault: proxy link %d -> %d: %w", from, to, err)
	}
	l := &proxyLink{from: from, to: to, target: target, ln: ln, conns: map[*proxyConn]bool{}}
	p.links[[2]int{from, to}] = l
	p.wg.Add(1)
	go p.accept(l)
	return ln.Addr().String(), nil
}

// Addr is the listen address of link from -> to ("" if none).
func (p *Proxy) Addr(from, to int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.links[[2]int{from, to}]; ok {
		return l.ln.Addr().String()
	}
	return ""
}

func (p *Proxy) cutLocked(l *proxyLink) bool {
	return p.isolated[l.from] || p.isolated[l.to]
}

func (p *Proxy) accept(l *proxyLink) {
	defer p.wg.Done()
	for {
		a, err := l.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed || p.cutLocked(l) {
			p.mu.Unlock()
			a.Close()
			continue
		}
		p.mu.Unlock()
		b, err := net.DialTimeout("tcp", l.target, 5*time.Second)
		if err != nil {
			a.Close()
			continue
		}
		c := &proxyConn{a: a, b: b}
		p.mu.Lock()
		if p.closed || p.cutLocked(l) {
			p.mu.Unlock()
			a.Close()
			b.Close()
			continue
		}
		l.conns[c] = true
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(l, c, c.a, c.b, [2]int{l.from, l.to})
		go p.pipe(l, c, c.b, c.a, [2]int{l.to, l.from})
	}
}

// pipe copies src to dst, holding the data while direction dir is blocked.
func (p *Proxy) pipe(l *proxyLink, c *proxyConn, src, dst net.Conn, dir [2]int) {
	defer p.wg.Done()
	defer p.drop(l, c)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.blocked[dir] && !c.closed && !p.closed {
				p.cond.Wait()
			}
			gone := c.closed || p.closed
			p.mu.Unlock()
			if gone {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // pass the half-close on
					return
				}
			}
			return
		}
	}
}

func (p *Proxy) drop(l *proxyLink, c *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeConnLocked(l, c)
}

func (p *Proxy) closeConnLocked(l *proxyLink, c *proxyConn) {
	if c.closed {
		return
	}
	c.closed = true
	c.a.Close()
	c.b.Close()
	delete(l.conns, c)
	p.cond.Broadcast()
}

// Block implements Network.
func (p *Proxy) Block(from, to int) error {
	if from == to {
		return fmt.Errorf("fault: block %d -> %d: same endpoint", from, to)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("fault: proxy closed")
	}
	p.blocked[[2]int{from, to}] = true
	return nil
}

// Isolate implements Network.
func (p *Proxy) Isolate(i int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("fault: proxy closed")
	}
	p.isolated[i] = true
	for _, l := range p.links {
		if p.cutLocked(l) {
			for c := range l.conns {
				p.closeConnLocked(l, c)
			}
		}
	}
	return nil
}

// Heal implements Network.
func (p *Proxy) Heal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.blocked)
	clear(p.isolated)
	p.cond.Broadcast()
	return nil
}

// Close implements Network: listeners and connections are closed and the
// forwarding goroutines have ended when it returns.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for _, l := range p.links {
		l.ln.Close()
		for c := range l.conns {
			p.closeConnLocked(l, c)
		}
	}
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}
