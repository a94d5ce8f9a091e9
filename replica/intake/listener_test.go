package intake

import (
	"net"
	"testing"
	"time"
)

// TestListenerAdmitsUpToTheCap: with connections_max 2, a third accepted
// connection is refused and closed while two are open, and admitted again
// once one of them closes; the claims are not unauthenticated ones.
func TestListenerAdmitsUpToTheCap(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdmission(AdmissionConfig{ConnectionsMax: 2, UnauthPerAddress: 1})
	refused := make(chan *Refusal, 4)
	ln := &Listener{Listener: inner, Admission: a, Transport: "http", Refused: func(_ net.Conn, r *Refusal) { refused <- r }}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	wait := func() net.Conn {
		select {
		case c := <-accepted:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("no connection admitted")
			return nil
		}
	}
	dial()
	first := wait()
	dial()
	wait()
	if total, per, unauth := a.Counts(); total != 2 || per["http"] != 2 || unauth != 0 {
		t.Fatalf("counts %d %v %d, want 2 http, none unauthenticated", total, per, unauth)
	}
	third := dial()
	select {
	case r := <-refused:
		if r.Key != KeyConnectionsMax {
			t.Fatalf("refused by %s", r.Key)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("third connection not refused")
	}
	_ = third.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := third.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("refused connection read %d %v, want closed", n, err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	_ = first.Close() // a second close gives nothing back twice
	dial()
	wait()
	if total, _, _ := a.Counts(); total != 2 {
		t.Fatalf("total %d after close and a new admission, want 2", total)
	}
}
