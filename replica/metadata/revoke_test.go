package metadata

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/iggo/iggo/wire"
)

func tokenID(n byte) [16]byte {
	var id [16]byte
	id[0], id[15] = n, n
	return id
}

// TestRevokeAccessToken: a revocation holds until the token's expiry,
// repeats are no-ops, expired entries go at the next revocation or
// DeleteExpiredTokens, clients cannot send it, the list stays sorted and
// it survives the snapshot; a full list refuses rather than drops.
func TestRevokeAccessToken(t *testing.T) {
	m := newMachine(t)
	now := func() uint64 { return m.ts / 1e6 }
	if r := m.root(RevokeAccessToken{ID: tokenID(1), Expiry: now() + 100}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("a client's revocation: %v", r.Code)
	}
	for _, n := range []byte{5, 1, 3} {
		if r := m.sys(RevokeAccessToken{ID: tokenID(n), Expiry: now() + 10*uint64(n)}); r.Code != OK {
			t.Fatalf("revoke %d: %v", n, r.Code)
		}
	}
	if r := m.sys(RevokeAccessToken{ID: tokenID(3), Expiry: now() + 30}); r.Code != OK || len(m.s.RevokedTokens()) != 3 {
		t.Fatalf("repeat: %v, %d entries", r.Code, len(m.s.RevokedTokens()))
	}
	l := m.s.RevokedTokens()
	for i := 1; i < len(l); i++ {
		if bytes.Compare(l[i-1].ID[:], l[i].ID[:]) >= 0 {
			t.Fatalf("not ascending: %v", l)
		}
	}
	if !m.s.AccessTokenRevoked(tokenID(1), now()) || m.s.AccessTokenRevoked(tokenID(2), now()) {
		t.Fatal("lookup")
	}
	if m.s.AccessTokenRevoked(tokenID(1), now()+11) {
		t.Fatal("revocation outlived the token")
	}
	// Already expired: nothing recorded.
	if r := m.sys(RevokeAccessToken{ID: tokenID(9), Expiry: now() - 1}); r.Code != OK || m.s.AccessTokenRevoked(tokenID(9), 0) {
		t.Fatal("an expired token was recorded")
	}
	s, err := DecodeSnapshot(EncodeSnapshot(m.s))
	if err != nil || len(s.RevokedTokens()) != 3 || !s.AccessTokenRevoked(tokenID(5), now()) {
		t.Fatalf("snapshot: %v %v", err, s)
	}
	// 35 s later tokens 1 and 3 expired: DeleteExpiredTokens drops them.
	m.ts += 35e6
	m.sys(DeleteExpiredTokens{})
	if l := m.s.RevokedTokens(); len(l) != 1 || l[0].ID != tokenID(5) {
		t.Fatalf("after expiry: %v", l)
	}
	// Full list.
	ls := m.s
	big := make([]RevokedToken, MaxRevokedAccessTokens)
	for i := range big {
		binary.BigEndian.PutUint32(big[i].ID[:], uint32(i)+1)
		big[i].Expiry = now() + 1000
	}
	full := *ls
	full.revoked = big
	m.s = &full
	if r := m.sys(RevokeAccessToken{ID: [16]byte{0xff}, Expiry: now() + 1000}); r.Code != wire.CodeError {
		t.Fatalf("a full list took another entry: %v", r.Code)
	}
	// The op round-trips.
	b, err := EncodeOp(Meta{System: true, Timestamp: 7}, RevokeAccessToken{ID: tokenID(4), Expiry: 99})
	if err != nil {
		t.Fatal(err)
	}
	_, c, err := DecodeOp(b)
	if err != nil || c != (RevokeAccessToken{ID: tokenID(4), Expiry: 99}) {
		t.Fatalf("op round trip: %v %+v", err, c)
	}
}

// TestSnapshotDecodesVersion2: a version-2 snapshot (no revocation list)
// decodes with none.
func TestSnapshotDecodesVersion2(t *testing.T) {
	m := newMachine(t)
	m.sys(RevokeAccessToken{ID: tokenID(1), Expiry: m.ts/1e6 + 100})
	old := encodeSnapshot(m.s, snapshotVersionV2)
	s, err := DecodeSnapshot(old)
	if err != nil || len(s.RevokedTokens()) != 0 || !s.Bootstrapped() {
		t.Fatalf("version 2: %v", err)
	}
}
