//go:build linux

// Package udpgro gives a QUIC endpoint's UDP socket coalesced reads (Linux's
// UDP_GRO) in the form quic-go reads them. A QUIC sender with
// UDP GSO (quic-go's, on Linux) hands the kernel one buffer of up to 64
// KiB cut into equal packets; without UDP_GRO on the receiving socket the
// kernel cuts it into single datagrams, queues and wakes the reader for
// each, and the reader takes each with its own share of a recvmmsg. With
// UDP_GRO the datagrams of one flow arrive together as one read whose
// control message names the packet size; Wrap's conn hands them to quic-go
// one packet each (quic-go reads through ReadBatch) and keeps its send path
// (GSO, ECN, DF) on the socket unchanged. The server's QUIC listener
// (replica/transport) and the client's QUIC dialer (client) use it.
package udpgro

import (
	"encoding/binary"
	"net"
	"sync"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// groBufferSize holds the largest UDP payload one read can return.
const groBufferSize = 1<<16 - 1

// groConn is a UDP socket with UDP_GRO on, read packet by packet through
// ReadBatch (quic-go's batch-read hook); every other method is the
// socket's. One goroutine reads (quic-go's endpoint loop); mu guards the
// pending read against any other.
type groConn struct {
	*net.UDPConn

	mu   sync.Mutex
	buf  []byte // the last read: packets buf[off:n], seg bytes each (the last may be shorter)
	oob  []byte // its control messages as read
	fwd  []byte // those given to every packet of it (all but UDP_GRO)
	addr *net.UDPAddr
	off  int
	n    int
	seg  int
}

// Wrap turns UDP_GRO on for c and wraps it; the socket itself when the
// kernel refuses (before Linux 5.0), which reads datagram by datagram.
func Wrap(c *net.UDPConn) net.PacketConn {
	rc, err := c.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil || serr != nil {
		return c
	}
	return &groConn{UDPConn: c, buf: make([]byte, groBufferSize), oob: make([]byte, 256), fwd: make([]byte, 0, 256)}
}

// ReadBatch fills ms with the packets of the pending read, reading the
// socket (one datagram or one coalesced run) when none is pending; it
// blocks as ReadMsgUDP does, under the socket's read deadline.
func (c *groConn) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off >= c.n {
		n, oobn, _, addr, err := c.ReadMsgUDP(c.buf, c.oob)
		if err != nil {
			return 0, err
		}
		if n == 0 { // an empty datagram: one packet of no bytes
			_, c.fwd = groSplit(c.oob[:oobn], c.fwd[:0])
			ms[0].N, ms[0].NN, ms[0].Flags, ms[0].Addr = 0, copy(ms[0].OOB, c.fwd), 0, addr
			return 1, nil
		}
		c.off, c.n, c.addr = 0, n, addr
		if c.seg, c.fwd = groSplit(c.oob[:oobn], c.fwd[:0]); c.seg <= 0 || c.seg > n {
			c.seg = n
		}
	}
	k := 0
	for ; k < len(ms) && c.off < c.n; k++ {
		m := &ms[k]
		data := c.buf[c.off:min(c.off+c.seg, c.n)]
		m.N = copy(m.Buffers[0], data)
		m.NN = copy(m.OOB, c.fwd)
		m.Flags = 0
		if m.N < len(data) {
			m.Flags = unix.MSG_TRUNC
		}
		m.Addr = c.addr
		c.off += len(data)
	}
	return k, nil
}

// groSplit is the packet size a UDP_GRO control message in oob names (0:
// none, the read is one datagram) and the other control messages (the
// IP-level ones quic-go reads: ECN bits, packet info) appended to fwd.
func groSplit(oob, fwd []byte) (int, []byte) {
	seg := 0
	for len(oob) > 0 {
		h, body, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			break
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO {
			switch len(body) {
			case 2:
				seg = int(binary.NativeEndian.Uint16(body))
			case 4:
				seg = int(binary.NativeEndian.Uint32(body))
			}
		} else {
			fwd = append(fwd, oob[:len(oob)-len(rest)]...)
		}
		oob = rest
	}
	return seg, fwd
}
