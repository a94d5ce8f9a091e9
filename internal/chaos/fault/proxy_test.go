package fault

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// echoServer is an in-process TCP echo server on loopback.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(c, c)
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineConn{c, bufio.NewReader(c)}
}

// roundTrip sends msg and waits up to d for its echo.
func (c *lineConn) roundTrip(msg string, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

func (c *lineConn) await(d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	return c.r.ReadString('\n')
}

func TestProxyStallsAndCuts(t *testing.T) {
	target := echoServer(t)
	p := NewProxy()
	t.Cleanup(func() { p.Close() })
	clientAddr, err := p.Link(Client, 0, target)
	if err != nil {
		t.Fatal(err)
	}
	peerAddr, err := p.Link(1, 0, target)
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr(Client, 0) != clientAddr || p.Addr(0, 1) != "" {
		t.Error("Addr does not report the links")
	}
	if _, err := p.Link(Client, 0, target); err == nil {
		t.Error("duplicate link accepted")
	}

	c := dialLine(t, clientAddr)
	if got, err := c.roundTrip("hello", time.Second); err != nil || got != "hello\n" {
		t.Fatalf("through the proxy: %q %v", got, err)
	}

	// Requests stalled: nothing comes back until healed, then it does.
	if err := p.Block(Client, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := c.roundTrip("stalled-out", 200*time.Millisecond); err == nil {
		t.Fatalf("echo %q through a stalled link", got)
	}
	peer := dialLine(t, peerAddr)
	if got, err := peer.roundTrip("peer", time.Second); err != nil || got != "peer\n" {
		t.Errorf("blocking the clients stalled node 1's link: %q %v", got, err)
	}
	if err := p.Heal(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.await(2 * time.Second); err != nil || got != "stalled-out\n" {
		t.Fatalf("held bytes not delivered after heal: %q %v", got, err)
	}

	// Replies stalled.
	if err := p.Block(0, Client); err != nil {
		t.Fatal(err)
	}
	if got, err := c.roundTrip("stalled-back", 200*time.Millisecond); err == nil {
		t.Fatalf("echo %q through a stalled reply direction", got)
	}
	p.Heal()
	if got, err := c.await(2 * time.Second); err != nil || got != "stalled-back\n" {
		t.Fatalf("held reply not delivered after heal: %q %v", got, err)
	}

	// Isolation cuts existing connections and refuses new ones.
	if err := p.Isolate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.await(time.Second); err == nil {
		t.Error("connection survived isolation")
	}
	fresh := dialLine(t, clientAddr)
	if got, err := fresh.roundTrip("isolated", 500*time.Millisecond); err == nil {
		t.Errorf("echo %q from an isolated node", got)
	}
	p.Heal()
	again := dialLine(t, clientAddr)
	if got, err := again.roundTrip("back", time.Second); err != nil || got != "back\n" {
		t.Errorf("after heal: %q %v", got, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", clientAddr, 200*time.Millisecond); err == nil {
		t.Error("proxy still listening after Close")
	}
	if _, err := p.Link(2, 0, target); err == nil {
		t.Error("link on a closed proxy accepted")
	}
}

func TestProxyCloseEndsStalledPipes(t *testing.T) {
	target := echoServer(t)
	p := NewProxy()
	addr, err := p.Link(Client, 0, target)
	if err != nil {
		t.Fatal(err)
	}
	c := dialLine(t, addr)
	p.Block(Client, 0)
	c.Write([]byte("held\n"))
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs on a stalled pipe")
	}
}
