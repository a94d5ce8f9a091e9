package plane

import (
	"bytes"
	"errors"
	"testing"
)

func validHello() [HandshakeSize]byte {
	_, b := rawLocal(0, 3, keyOld).dialerHello(1)
	return b
}

func TestDecodeHandshakeRefusesMalformed(t *testing.T) {
	mut := func(f func(b []byte)) []byte {
		b := validHello()
		f(b[:])
		return b[:]
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"short", make([]byte, 10), "10 bytes"},
		{"long", make([]byte, HandshakeSize+1), "129 bytes"},
		{"magic", mut(func(b []byte) { b[0] = 'X' }), "bad magic"},
		{"version", mut(func(b []byte) { b[hsOffVersion] = 2 }), "version 2"},
		{"step zero", mut(func(b []byte) { b[hsOffStep] = 0 }), "unknown step"},
		{"step four", mut(func(b []byte) { b[hsOffStep] = 4 }), "unknown step"},
		{"flags", mut(func(b []byte) { b[hsOffFlags] |= 0x80 }), "unknown flags"},
		{"reserved 14", mut(func(b []byte) { b[hsOffReserved] = 1 }), "reserved"},
		{"roster zero", mut(func(b []byte) { b[hsOffRoster] = 0 }), "roster size 0"},
		{"self addressed", mut(func(b []byte) { b[hsOffReceiver] = b[hsOffSender] }), "sender 0, receiver 0"},
		{"zero key id", mut(func(b []byte) { clear(b[hsOffKeyID : hsOffKeyID+8]) }), "zero key id"},
		{"hello without nonce", mut(func(b []byte) { clear(b[hsOffNonce : hsOffNonce+32]) }), "hello needs a nonce"},
		{"hello with MAC", mut(func(b []byte) { b[hsOffMAC] = 1 }), "hello needs a nonce and no MAC"},
		{"challenge without MAC", mut(func(b []byte) { b[hsOffStep] = byte(StepChallenge); clear(b[hsOffKeyID2 : hsOffKeyID2+8]) }), "challenge needs"},
		{"finish with nonce", mut(func(b []byte) { b[hsOffStep] = byte(StepFinish); b[hsOffMAC] = 1 }), "finish needs"},
	} {
		_, err := DecodeHandshake(tc.in)
		if !errors.Is(err, ErrHandshakeMalformed) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	a := rawLocal(1, 3, keyOld) // acceptor
	d := rawLocal(0, 3, keyOld) // dialer
	_, hello := d.dialerHello(1)
	h, key, ch, err := a.acceptHello(hello[:], nil)
	if err != nil || h.Sender != 0 {
		t.Fatalf("acceptHello: %v %+v", err, h)
	}
	fin, err := d.dialerFinish(1, hello[:], ch[:], nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.acceptFinish(h, key, hello[:], ch[:], fin[:], nil); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][HandshakeSize]byte{hello, ch, fin} {
		m, err := DecodeHandshake(b[:])
		if err != nil {
			t.Fatal(err)
		}
		if m.Encode() != b {
			t.Fatalf("re-encoding step %d differs", m.Step)
		}
	}

	// Every transcript byte matters: flipping any bit of the hello or the
	// challenge (outside the MAC itself, which is checked directly) fails
	// the dialer's check of the challenge MAC, or an earlier field check.
	for i := 0; i < HandshakeSize*2; i++ {
		h2, c2 := hello, ch
		if i < HandshakeSize {
			h2[i] ^= 1
		} else {
			c2[i-HandshakeSize] ^= 1
		}
		if _, err := d.dialerFinish(1, h2[:], c2[:], nil); err == nil {
			t.Fatalf("flipping transcript byte %d went unnoticed", i)
		}
	}
	// A different TLS exporter (a spliced session) fails both MACs.
	if _, err := d.dialerFinish(1, hello[:], ch[:], []byte("other session")); classify(err) != ReasonBadMAC {
		t.Fatalf("exporter mismatch: %v", err)
	}
	fin2, _ := d.dialerFinish(1, hello[:], ch[:], nil)
	fin2[hsOffMAC+3] ^= 1
	if err := a.acceptFinish(h, key, hello[:], ch[:], fin2[:], nil); classify(err) != ReasonBadMAC {
		t.Fatalf("tampered finish: %v", err)
	}
	// A challenge MAC replayed as a finish MAC (reflection) does not verify.
	refl, _ := DecodeHandshake(fin[:])
	copy(refl.MAC[:], ch[hsOffMAC:])
	r := refl.Encode()
	if err := a.acceptFinish(h, key, hello[:], ch[:], r[:], nil); classify(err) != ReasonBadMAC {
		t.Fatalf("reflected MAC: %v", err)
	}
}

func TestHandshakeKeyChoice(t *testing.T) {
	keys := func(ss ...string) *local {
		l := rawLocal(0, 2, ss[0])
		for _, s := range ss[1:] {
			l.keys = append(l.keys, deriveKey([]byte(s), l.cluster))
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		dialer   []string
		acceptor []string
		want     string // key the link uses; "" for a refusal
	}{
		{"same key", []string{keyOld}, []string{keyOld}, keyOld},
		{"dialer rotated", []string{keyNew, keyOld}, []string{keyOld}, keyOld},
		{"acceptor rotated", []string{keyOld}, []string{keyNew, keyOld}, keyOld},
		{"both rotated", []string{keyNew, keyOld}, []string{keyNew, keyOld}, keyNew},
		{"iggy step 1 against step 2", []string{keyOld, keyNew}, []string{keyNew, keyOld}, keyNew},
		{"rotation finished against not started", []string{keyNew}, []string{keyOld}, ""},
	} {
		d, a := keys(tc.dialer...), keys(tc.acceptor...)
		a.self, d.self = 1, 0
		_, hello := d.dialerHello(1)
		h, key, ch, err := a.acceptHello(hello[:], nil)
		if tc.want == "" {
			if classify(err) != ReasonNoSharedKey {
				t.Errorf("%s: %v, want no shared key", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if key.id != deriveKey([]byte(tc.want), a.cluster).id {
			t.Errorf("%s: chose the wrong key", tc.name)
		}
		fin, err := d.dialerFinish(1, hello[:], ch[:], nil)
		if err != nil {
			t.Fatalf("%s: dialer: %v", tc.name, err)
		}
		if err := a.acceptFinish(h, key, hello[:], ch[:], fin[:], nil); err != nil {
			t.Fatalf("%s: acceptor: %v", tc.name, err)
		}
	}
}

func TestKeysAreBoundToTheCluster(t *testing.T) {
	a, b := deriveKey([]byte(keyOld), ClusterID("a")), deriveKey([]byte(keyOld), ClusterID("b"))
	if a.id == b.id || bytes.Equal(a.mac, b.mac) {
		t.Fatal("one secret yields the same key in two clusters")
	}
	if ClusterID("a") == ClusterID("b") || ClusterID("x") != ClusterID("x") {
		t.Fatal("ClusterID is not a function of the name")
	}
}

func FuzzDecodeHandshake(f *testing.F) {
	a, d := rawLocal(1, 3, keyOld), rawLocal(0, 3, keyOld)
	_, hello := d.dialerHello(1)
	_, _, ch, _ := a.acceptHello(hello[:], nil)
	fin, _ := d.dialerFinish(1, hello[:], ch[:], nil)
	for _, b := range [][HandshakeSize]byte{hello, ch, fin} {
		f.Add(b[:])
	}
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add(make([]byte, HandshakeSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHandshake(b)
		if err != nil {
			if !errors.Is(err, ErrHandshakeMalformed) {
				t.Fatalf("error %v does not wrap ErrHandshakeMalformed", err)
			}
			return
		}
		if enc := h.Encode(); !bytes.Equal(enc[:], b) {
			t.Fatalf("decode/encode is not the identity on an accepted message")
		}
		// The state machines must refuse, never panic, on anything decodable.
		_, _, _, _ = a.acceptHello(b, nil)
		_, _ = d.dialerFinish(1, hello[:], b, nil)
		_ = a.acceptFinish(h, a.keys[0], hello[:], ch[:], b, nil)
	})
}
