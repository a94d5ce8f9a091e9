//go:build !linux

package transport

import "net"

// withGRO is the socket itself: UDP receive offload is Linux's (see
// udpgro_linux.go).
func withGRO(c *net.UDPConn) net.PacketConn { return c }
