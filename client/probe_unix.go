//go:build unix

package client

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the peer has closed (or reset) the TCP
// connection nc: a non-blocking MSG_PEEK read returns end of stream or an
// error other than "would block". Pending bytes, and connections it cannot
// inspect (TLS), count as open; the exchange then finds out as before.
func peerClosed(nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == nil:
			closed = n == 0
		case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EWOULDBLOCK), errors.Is(rerr, syscall.EINTR):
		default:
			closed = true
		}
		return true // never wait for readiness
	})
	return closed || err != nil
}
