//go:build linux

package udpgro

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// bind is a loopback socket wrapped as a QUIC endpoint's is.
func bind(t *testing.T) net.PacketConn {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	pc := Wrap(uc)
	t.Cleanup(func() { _ = pc.Close() })
	return pc
}

// segmentOOB is a UDP_SEGMENT control message: the kernel cuts the
// datagram into packets of size bytes (UDP GSO, as quic-go sends).
func segmentOOB(size uint16) []byte {
	b := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(b[unix.CmsgLen(0):], size)
	return b
}

// cmsgLevels lists the levels of the control messages in oob.
func cmsgLevels(t *testing.T, oob []byte) []int32 {
	t.Helper()
	var lv []int32
	for len(oob) > 0 {
		h, _, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			t.Fatal(err)
		}
		lv = append(lv, h.Level)
		oob = rest
	}
	return lv
}

func batch(n, size int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, size)}
		ms[i].OOB = make([]byte, 128)
	}
	return ms
}

// TestGROConnSplitsCoalescedReads: a GSO send of 20 packets (the last one
// shorter) arrives on a wrapped socket as one read and is handed out packet
// by packet, across ReadBatch calls when the batch is smaller, each with
// the sender's address; a plain datagram after it is one packet.
func TestGROConnSplitsCoalescedReads(t *testing.T) {
	pc := bind(t)
	gc, ok := pc.(*groConn)
	if !ok {
		t.Fatalf("kernel refused UDP_GRO (%T)", pc) // Linux 5.0 has it
	}
	// the TOS byte as quic-go asks for it (ECN): handed on with each packet
	rc, err := gc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	cl, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const seg, count = 1400, 20
	payload := make([]byte, seg*(count-1)+321)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	if _, _, err := cl.WriteMsgUDP(payload, segmentOOB(seg), nil); err != nil {
		t.Fatalf("UDP GSO send: %v", err)
	}
	if _, err := cl.Write([]byte("plain")); err != nil {
		t.Fatal(err)
	}
	_ = gc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got [][]byte
	calls := 0
	for len(got) < count+1 {
		ms := batch(8, 1452)
		n, err := gc.ReadBatch(ms, 0)
		if err != nil {
			t.Fatalf("after %d packets: %v", len(got), err)
		}
		calls++
		for _, m := range ms[:n] {
			if m.Addr.String() != cl.LocalAddr().String() {
				t.Fatalf("packet from %v, want %v", m.Addr, cl.LocalAddr())
			}
			if m.Flags != 0 {
				t.Fatalf("flags %#x", m.Flags)
			}
			if lv := cmsgLevels(t, m.OOB[:m.NN]); len(lv) != 1 || lv[0] != unix.IPPROTO_IP {
				t.Fatalf("control message levels %v, want the IP one (TOS) only", lv)
			}
			got = append(got, append([]byte(nil), m.Buffers[0][:m.N]...))
		}
	}
	if len(got) != count+1 {
		t.Fatalf("%d packets, want %d", len(got), count+1)
	}
	for i := range count {
		want := payload[i*seg : min((i+1)*seg, len(payload))]
		if !bytes.Equal(got[i], want) {
			t.Fatalf("packet %d: %d bytes, want %d (content differs: %v)", i, len(got[i]), len(want), len(got[i]) == len(want))
		}
	}
	if string(got[count]) != "plain" {
		t.Fatalf("last packet %q, want plain", got[count])
	}
	// 20 packets in batches of 8 are three calls when coalesced, plus one
	// for the plain datagram; one read per packet would be 21.
	if calls > 4 {
		t.Errorf("%d ReadBatch calls for %d packets: the reads were not coalesced", calls, count+1)
	}
}

// TestGROConnTruncates: a packet longer than the batch's buffer is cut and
// flagged MSG_TRUNC, as the kernel flags a short read.
func TestGROConnTruncates(t *testing.T) {
	pc := bind(t)
	gc, ok := pc.(*groConn)
	if !ok {
		t.Fatalf("kernel refused UDP_GRO (%T)", pc)
	}
	cl, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Write(make([]byte, 2000)); err != nil {
		t.Fatal(err)
	}
	_ = gc.SetReadDeadline(time.Now().Add(10 * time.Second))
	ms := batch(2, 1452)
	n, err := gc.ReadBatch(ms, 0)
	if err != nil || n != 1 || ms[0].N != 1452 || ms[0].Flags&unix.MSG_TRUNC == 0 {
		t.Fatalf("n %d err %v: N %d flags %#x, want one truncated packet of 1452", n, err, ms[0].N, ms[0].Flags)
	}
}
