package metadata

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/iggo/iggo/wire"
)

// TestPartitionsCapAdmission: the node-wide cap decided at admission, on
// the admitting node's view and configuration.
func TestPartitionsCapAdmission(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 6)
	m.stream("s2")
	m.topic("s2", "u", 2) // 8 partitions in all
	perms := &Permissions{Global: wire.GlobalPermissions{ManageTopics: true, ManageStreams: true}}
	ops := m.user("ops", perms).ID
	for _, tc := range []struct {
		name string
		cap  uint32
		req  wire.Request
		want wire.Code
	}{
		{"no cap", 0, &wire.CreatePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 1000}, OK},
		{"partitions up to the cap", 10, &wire.CreatePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 2}, OK},
		{"partitions over the cap", 10, &wire.CreatePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 3}, wire.CodeTooManyPartitions},
		{"topic up to the cap", 10, &wire.CreateTopic{StreamID: NamedID("s"), Name: "v", PartitionsCount: 2}, OK},
		{"topic over the cap", 10, &wire.CreateTopic{StreamID: NamedID("s"), Name: "v", PartitionsCount: 3}, wire.CodeTooManyPartitions},
		{"topic without partitions at the cap", 8, &wire.CreateTopic{StreamID: NamedID("s"), Name: "v"}, OK},
		{"cap below what exists", 5, &wire.CreatePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 1}, wire.CodeTooManyPartitions},
		{"deleting is never capped", 5, &wire.DeletePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 1}, OK},
		{"permission is checked first", 5, &wire.CreateTopic{StreamID: NamedID("s"), Name: "v", PartitionsCount: 1}, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultAdmitConfig()
			cfg.PartitionsMax = tc.cap
			user := ops
			if tc.name == "permission is checked first" {
				user = m.user("nobody-"+tc.name[:4], nil).ID
				tc.want = wire.CodeUnauthorized
			}
			a, code := Admit(m.s, user, tc.req, cfg)
			if code != tc.want {
				t.Fatalf("code %v, want %v", code, tc.want)
			}
			if code != OK {
				return
			}
			switch c := a.Command.(type) {
			case CreateTopic:
				if c.PartitionsMax != tc.cap {
					t.Fatalf("stamped cap %d, want %d", c.PartitionsMax, tc.cap)
				}
			case CreatePartitions:
				if c.PartitionsMax != tc.cap {
					t.Fatalf("stamped cap %d, want %d", c.PartitionsMax, tc.cap)
				}
			}
		})
	}
}

// TestPartitionsCapApply: Apply checks the stamped cap against the
// committed count, so creates admitted concurrently against one view
// cannot overshoot it together, and every replica decides alike whatever
// its own configuration.
func TestPartitionsCapApply(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 4)
	cfg := DefaultAdmitConfig()
	cfg.PartitionsMax = 10
	view := m.s
	a1, c1 := Admit(view, RootUserID, &wire.CreatePartitions{StreamID: NamedID("s"), TopicID: NamedID("t"), PartitionsCount: 4}, cfg)
	a2, c2 := Admit(view, RootUserID, &wire.CreateTopic{StreamID: NamedID("s"), Name: "u", PartitionsCount: 4}, cfg)
	if c1 != OK || c2 != OK {
		t.Fatalf("admission against one view: %v %v", c1, c2)
	}
	if r := m.root(a1.Command); r.Code != OK {
		t.Fatalf("first create: %v", r.Code)
	}
	if r := m.root(a2.Command); r.Code != wire.CodeTooManyPartitions || len(r.Effects) != 0 {
		t.Fatalf("second create over the stamped cap: %v, %d effects", r.Code, len(r.Effects))
	}
	if n := m.s.PartitionsTotal(); n != 8 {
		t.Fatalf("%d partitions, want 8", n)
	}
	// Up to the cap exactly.
	m.must(CreateTopic{Stream: NamedID("s"), Name: "u", PartitionsCount: 2, Defaults: DefaultTopicDefaults(), PartitionsMax: 10})
	m.expect(wire.CodeTooManyPartitions, CreatePartitions{Stream: NamedID("s"), Topic: NamedID("u"), Count: 1, PartitionsMax: 10})
	// A command without a stamp (0: no cap, as version 2 prepares decode)
	// is not capped.
	m.must(CreatePartitions{Stream: NamedID("s"), Topic: NamedID("u"), Count: 1})
	// Deleting frees room.
	m.must(DeleteTopic{Stream: NamedID("s"), Topic: NamedID("u")})
	m.must(CreatePartitions{Stream: NamedID("s"), Topic: NamedID("t"), Count: 2, PartitionsMax: 10})
}

// TestOpPartitionsCapStamp: version 3 bodies carry the cap; version 2
// bodies decode without it and as Legacy.
func TestOpPartitionsCapStamp(t *testing.T) {
	ct := CreateTopic{Stream: NumericID(0), PartitionsCount: 3, Name: "t", Defaults: DefaultTopicDefaults(), PartitionsMax: 77}
	cp := CreatePartitions{Stream: NumericID(0), Topic: NumericID(1), Count: 2, PartitionsMax: 78}
	for _, c := range []Command{ct, cp} {
		b := mustEncode(t, Meta{UserID: 3}, c)
		meta, got, err := DecodeOp(b)
		if err != nil || meta.Legacy {
			t.Fatalf("%T: %v, legacy %v", c, err, meta.Legacy)
		}
		switch g := got.(type) {
		case CreateTopic:
			if g.PartitionsMax != 77 || g.Name != "t" || g.Defaults != ct.Defaults {
				t.Fatalf("decoded %+v", g)
			}
		case CreatePartitions:
			if g != cp {
				t.Fatalf("decoded %+v", g)
			}
		}
		// The same command as a version 2 body: no cap stamp.
		stamp := int(binary.LittleEndian.Uint16(b[32:]))
		old := append([]byte{opVersionV2}, b[1:32]...)
		old = binary.LittleEndian.AppendUint16(old, uint16(stamp-4))
		old = append(old, b[opHeaderSize:opHeaderSize+stamp-4]...)
		old = append(old, b[opHeaderSize+stamp:]...)
		meta, got, err = DecodeOp(old)
		if err != nil || !meta.Legacy {
			t.Fatalf("%T version 2: %v, legacy %v", c, err, meta.Legacy)
		}
		switch g := got.(type) {
		case CreateTopic:
			if g.PartitionsMax != 0 || g.Name != "t" {
				t.Fatalf("version 2 decoded %+v", g)
			}
		case CreatePartitions:
			if g.PartitionsMax != 0 || g.Count != 2 {
				t.Fatalf("version 2 decoded %+v", g)
			}
		}
		// A version 2 body with a version 3 stamp has 4 unread bytes.
		bad := bytes.Clone(b)
		bad[0] = opVersionV2
		if _, _, err := DecodeOp(bad); err == nil {
			t.Fatalf("%T: version 2 body with a cap stamp accepted", c)
		}
	}
}

// TestRootGuard: only root changes root, at admission and in Apply; a
// journal of version 2 prepares replays with the old rule.
func TestRootGuard(t *testing.T) {
	m := newMachine(t)
	admin := m.user("admin", &Permissions{Global: wire.GlobalPermissions{ManageUsers: true, ReadUsers: true}}).ID
	bob := m.user("bob", nil).ID
	name := "evil"
	inactive, active := UserInactive, UserActive
	cfg := DefaultAdmitConfig()
	cfg.Argon2 = cheapArgon
	root := NumericID(RootUserID)
	for _, tc := range []struct {
		name  string
		actor uint32
		req   wire.Request
		cmd   Command
		want  wire.Code
	}{
		{"admin renames root", admin, &wire.UpdateUser{UserID: root, Username: &name}, UpdateUser{User: root, Username: &name}, wire.CodeUnauthorized},
		{"admin deactivates root", admin, &wire.UpdateUser{UserID: root, Status: ptr(uint8(UserInactive))}, UpdateUser{User: root, Status: &inactive}, wire.CodeUnauthorized},
		{"admin changes root's password", admin, &wire.ChangePassword{UserID: root, CurrentPassword: "x", NewPassword: "new-pw"}, ChangePassword{User: root, VerifiedHash: "root-hash", NewPasswordHash: "h2"}, wire.CodeUnauthorized},
		{"admin sets root's permissions", admin, &wire.UpdatePermissions{UserID: root}, UpdatePermissions{User: root}, wire.CodeUnauthorized},
		{"admin deletes root", admin, &wire.DeleteUser{UserID: NamedID("iggy")}, DeleteUser{User: NamedID("iggy")}, wire.CodeUnauthorized},
		{"admin renames bob", admin, &wire.UpdateUser{UserID: NumericID(bob), Username: &name}, UpdateUser{User: NumericID(bob), Username: &name}, OK},
		{"root deactivates itself", RootUserID, &wire.UpdateUser{UserID: root, Status: ptr(uint8(UserInactive))}, UpdateUser{User: root, Status: &inactive}, wire.CodeInvalidUserStatus},
		{"root keeps itself active", RootUserID, &wire.UpdateUser{UserID: root, Status: ptr(uint8(UserActive))}, UpdateUser{User: root, Status: &active}, OK},
		{"root renames itself", RootUserID, &wire.UpdateUser{UserID: root, Username: ptr("boss")}, UpdateUser{User: root, Username: ptr("boss")}, OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, code := Admit(m.s, tc.actor, tc.req, cfg); code != tc.want {
				t.Fatalf("admission: %v, want %v", code, tc.want)
			}
			before := m.s
			if r := m.as(tc.actor, tc.cmd); r.Code != tc.want {
				t.Fatalf("apply: %v, want %v", r.Code, tc.want)
			}
			m.s = before // each case on the same state
		})
	}
	// Prepares written before the rule replay as they committed.
	next, r := m.s.Apply(Meta{Op: m.op + 1, Timestamp: m.ts + 1, UserID: admin, Legacy: true}, UpdateUser{User: root, Username: &name})
	if r.Code != OK || next.User(RootUserID).Username != "evil" {
		t.Fatalf("legacy rename of root: %v", r.Code)
	}
}

func ptr[T any](v T) *T { return &v }

// TestTokenDeletionEffects: deleting a token, or removing it once expired,
// tells the node which sessions to end.
func TestTokenDeletionEffects(t *testing.T) {
	m := newMachine(t)
	bob := m.user("bob", nil).ID
	h1, h2 := TokenHash{1}, TokenHash{2}
	m.as(bob, CreatePersonalAccessToken{Name: "ci", Hash: h1})
	m.as(bob, CreatePersonalAccessToken{Name: "short", Hash: h2, Expiry: 10})
	r := m.as(bob, DeletePersonalAccessToken{Name: "ci"})
	if r.Code != OK || len(r.Effects) != 1 || r.Effects[0] != (Effect{Kind: EffectTokenDeleted, User: bob, Token: h1}) {
		t.Fatalf("delete: %v %+v", r.Code, r.Effects)
	}
	r = m.sys(DeleteExpiredTokens{})
	if r.Code != OK || len(r.Effects) != 1 || r.Effects[0] != (Effect{Kind: EffectTokenDeleted, User: bob, Token: h2}) {
		t.Fatalf("expiry: %v %+v", r.Code, r.Effects)
	}
}
