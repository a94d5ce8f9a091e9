//go:build !linux

// Package udpgro gives a QUIC endpoint's UDP socket coalesced reads where
// the kernel has them (Linux's UDP_GRO, udpgro_linux.go); elsewhere Wrap is
// the socket itself.
package udpgro

import "net"

// Wrap is the socket itself: UDP receive offload is Linux's.
func Wrap(c *net.UDPConn) net.PacketConn { return c }
