package vsr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func forwardFrame(m Message) []byte {
	return append(append([]byte{}, m.Header[:]...), m.Body...)
}

func TestForwardRoundTrip(t *testing.T) {
	s := Sender{Cluster: Checksum{1, 2, 3}, Group: MetadataGroup, Replica: 2, ReplicaCount: 3, Incarnation: 99}
	req := Request{Token: 7, Client: Checksum{9}, Session: 11, Request: 12, Operation: 160, User: 5,
		WallClock: 1234, Body: []byte("batch")}
	m, err := Decode(forwardFrame(EncodeForward(s, req)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Command() != CmdForward || m.Header.Replica() != 2 || m.Header.Group() != MetadataGroup {
		t.Fatalf("header: %s from %d group %x", m.Header.Command(), m.Header.Replica(), m.Header.Group())
	}
	got := ForwardedRequest(m)
	if got.Token != 7 || got.Client != req.Client || got.Session != 11 || got.Request != 12 || got.Operation != 160 ||
		got.User != 5 || got.WallClock != 1234 || !bytes.Equal(got.Body, req.Body) {
		t.Fatalf("request: %+v", got)
	}
	rp := Reply{Op: 40, Timestamp: 41, Status: StatusEvicted, Eviction: EvictSessionTooLow, Primary: 1, Body: []byte{1, 2}}
	origin := ForwardOriginOf(m)
	if origin != (ForwardOrigin{Token: 7, Incarnation: 99}) {
		t.Fatalf("forward origin %+v", origin)
	}
	m, err = Decode(forwardFrame(EncodeForwardReply(Sender{Cluster: s.Cluster, Group: s.Group, ReplicaCount: 3, Incarnation: 5}, origin, rp, 3021)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	back0, back, code := ForwardedReply(m)
	if m.Header.Incarnation() != 5 || binary.LittleEndian.Uint64(m.Header[116:]) != 99 {
		t.Fatalf("forward_reply: incarnation %d at 72, origin %d at 116", m.Header.Incarnation(), binary.LittleEndian.Uint64(m.Header[116:]))
	}
	if back0 != origin || code != 3021 || back.Op != 40 || back.Timestamp != 41 || back.Status != StatusEvicted ||
		back.Eviction != EvictSessionTooLow || back.Primary != 1 || !bytes.Equal(back.Body, rp.Body) {
		t.Fatalf("reply: origin %+v code %d %+v", back0, code, back)
	}
}

func TestForwardRejectsReservedBytes(t *testing.T) {
	s := Sender{Cluster: Checksum{1}, Group: 5, Replica: 0, ReplicaCount: 3, Incarnation: 1}
	for _, tc := range []struct {
		name string
		m    Message
		at   int
	}{
		{"forward", EncodeForward(s, Request{Operation: 1}), 200},
		{"forward_reply", EncodeForwardReply(s, ForwardOrigin{Token: 1, Incarnation: 1}, Reply{}, 0), 124},
	} {
		h := *tc.m.Header
		h[tc.at] = 1
		h.Seal()
		if _, err := Decode(h[:], 1<<20); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s with a reserved byte set: %v", tc.name, err)
		}
	}
	h := *EncodeForward(s, Request{Operation: 1}).Header
	h[offFwdOperation] = 0
	h.Seal()
	if _, err := Decode(h[:], 1<<20); !errors.Is(err, ErrMalformed) {
		t.Fatalf("forward of operation 0: %v", err)
	}
}
