package intake

import (
	"net"
)

// Listener admits every connection its inner listener accepts under an
// Admission, for transports whose requests authenticate one by one (HTTP):
// a connection counts against connections_max (and the per-transport cap)
// from accept to close, and its unauthenticated claim is given back at
// once, since no login follows on the connection itself. A refused
// connection is passed to Refused, closed, and Accept goes on.
type Listener struct {
	net.Listener
	Admission *Admission
	Transport string
	// Refused is told of each refusal before the connection closes; nil
	// says nothing.
	Refused func(c net.Conn, r *Refusal)
}

// Accept returns the next admitted connection; its Close releases the
// claim.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		t, r := l.Admission.Admit(l.Transport, AddrKey(c.RemoteAddr()))
		if r != nil {
			if l.Refused != nil {
				l.Refused(c, r)
			}
			_ = c.Close()
			continue
		}
		t.Authenticated()
		return &admittedConn{Conn: c, t: t}, nil
	}
}

type admittedConn struct {
	net.Conn
	t *Ticket
}

// Close closes the connection and gives back its claim (once: a Ticket's
// Release is idempotent).
func (c *admittedConn) Close() error {
	err := c.Conn.Close()
	c.t.Release()
	return err
}
