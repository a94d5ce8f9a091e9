package metadata

import (
	"math"
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestBootstrap(t *testing.T) {
	s := NewState()
	if s.Bootstrapped() || s.User(RootUserID) != nil {
		t.Fatal("fresh state has a root user")
	}
	boot := Bootstrap{RootUsername: "iggy", RootPasswordHash: "h", Limits: DefaultLimits()}
	if _, r := s.Apply(Meta{Op: 1, Timestamp: 5}, boot); r.Code != wire.CodeUnauthorized {
		t.Fatalf("non-system bootstrap: %v", r.Code)
	}
	if _, r := s.Apply(Meta{Op: 1, Timestamp: 5, System: true}, Bootstrap{RootUsername: "ig", RootPasswordHash: "h", Limits: DefaultLimits()}); r.Code != wire.CodeInvalidUsername {
		t.Fatalf("short root name: %v", r.Code)
	}
	if _, r := s.Apply(Meta{Op: 1, Timestamp: 5, System: true}, Bootstrap{RootUsername: "iggy", RootPasswordHash: "h"}); r.Code != wire.CodeInvalidCommand {
		t.Fatalf("zero limits: %v", r.Code)
	}
	s2, r := s.Apply(Meta{Op: 1, Timestamp: 5, System: true}, boot)
	if r.Code != OK || r.User.ID != RootUserID || r.User.CreatedAt != 5 || !permissionsEqual(r.User.Permissions, AllPermissions()) {
		t.Fatalf("bootstrap: %+v %+v", r.Code, r.User)
	}
	if !s2.Bootstrapped() || s2.UserByName("iggy") == nil {
		t.Fatal("root not resolvable")
	}
	if _, r := s2.Apply(Meta{Op: 2, System: true}, boot); r.Code != wire.CodeUserAlreadyExists {
		t.Fatalf("second bootstrap: %v", r.Code)
	}
}

func TestUserRules(t *testing.T) {
	inactive := UserInactive
	bad := UserStatus(7)
	taken := "alice"
	short := "al"
	tests := []struct {
		name string
		cmd  Command
		want wire.Code
	}{
		{"duplicate", CreateUser{Username: "alice", PasswordHash: "h", Status: UserActive}, wire.CodeUserAlreadyExists},
		{"root name taken", CreateUser{Username: "iggy", PasswordHash: "h", Status: UserActive}, wire.CodeUserAlreadyExists},
		{"short name", CreateUser{Username: "ab", PasswordHash: "h", Status: UserActive}, wire.CodeInvalidUsername},
		{"long name", CreateUser{Username: string(make([]byte, 51)), PasswordHash: "h", Status: UserActive}, wire.CodeInvalidUsername},
		{"bad status", CreateUser{Username: "carol", PasswordHash: "h", Status: 3}, wire.CodeInvalidUserStatus},
		{"no hash", CreateUser{Username: "carol", Status: UserActive}, wire.CodeInvalidPassword},
		{"option", CreateUser{Username: "carol", PasswordHash: "h", Status: UserActive, Options: wire.Options{stringOption("a", "b")}}, wire.CodeUnsupportedOptionKey},
		{"update missing", UpdateUser{User: NumericID(42)}, wire.CodeResourceNotFound},
		{"rename to taken", UpdateUser{User: NamedID("bob"), Username: &taken}, wire.CodeUserAlreadyExists},
		{"rename too short", UpdateUser{User: NamedID("bob"), Username: &short}, wire.CodeInvalidUsername},
		{"bad status update", UpdateUser{User: NamedID("bob"), Status: &bad}, wire.CodeInvalidUserStatus},
		{"deactivate", UpdateUser{User: NamedID("bob"), Status: &inactive}, OK},
		{"delete root", DeleteUser{User: NumericID(RootUserID)}, wire.CodeCannotDeleteUser},
		{"delete root by name", DeleteUser{User: NamedID("iggy")}, wire.CodeCannotDeleteUser},
		{"delete missing", DeleteUser{User: NamedID("nobody")}, wire.CodeResourceNotFound},
		{"root permissions", UpdatePermissions{User: NumericID(RootUserID)}, wire.CodeCannotChangePermissions},
		{"permissions missing user", UpdatePermissions{User: NumericID(99)}, wire.CodeResourceNotFound},
		{"password missing user", ChangePassword{User: NumericID(99), VerifiedHash: "x", NewPasswordHash: "y"}, wire.CodeResourceNotFound},
		{"password not verified", ChangePassword{User: NamedID("bob"), NewPasswordHash: "y"}, wire.CodeInvalidCredentials},
		{"password stale verification", ChangePassword{User: NamedID("bob"), VerifiedHash: "old", NewPasswordHash: "y"}, wire.CodeInvalidCredentials},
		{"password ok", ChangePassword{User: NamedID("bob"), VerifiedHash: "h-bob", NewPasswordHash: "y"}, OK},
		{"password empty new hash", ChangePassword{User: NamedID("bob"), VerifiedHash: "h-bob"}, wire.CodeInvalidPassword},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.user("alice", nil)
			m.user("bob", nil)
			m.expect(tc.want, tc.cmd)
		})
	}
}

func TestUserLifecycle(t *testing.T) {
	m := newMachine(t)
	perms := streamPerms(wire.StreamPermissions{StreamID: 3, ReadStream: true})
	a := m.user("alice", perms)
	b := m.user("bob", nil)
	if a.ID != 1 || b.ID != 2 || a.CreatedAt == 0 {
		t.Fatalf("ids %d %d", a.ID, b.ID)
	}
	// The stored permissions are a copy: mutating the command's value
	// does not reach the state.
	perms.Streams[0].ManageStream = true
	if m.s.User(1).Permissions.Streams[0].ManageStream {
		t.Fatal("state aliases the command's permissions")
	}
	m.must(DeleteUser{User: NamedID("alice")})
	// User ids are never reused: a session bound to a deleted id cannot
	// turn into another account.
	if c := m.user("carol", nil); c.ID != 3 {
		t.Fatalf("new user id %d, want 3", c.ID)
	}
	name := "robert"
	inactive := UserInactive
	r := m.must(UpdateUser{User: NumericID(2), Username: &name, Status: &inactive})
	if r.User.Username != "robert" || r.User.Status != UserInactive || m.s.UserByName("bob") != nil {
		t.Fatalf("update: %+v", r.User)
	}
	if len(r.Effects) != 1 || r.Effects[0].Kind != EffectUserDeactivated || r.Effects[0].User != 2 {
		t.Fatalf("effects %+v", r.Effects)
	}
	r = m.must(UpdatePermissions{User: NamedID("robert"), Permissions: &Permissions{Global: wire.GlobalPermissions{ReadUsers: true}}})
	if !r.User.Permissions.Global.ReadUsers {
		t.Fatal("permissions not updated")
	}
	r = m.must(UpdatePermissions{User: NamedID("robert")})
	if r.User.Permissions != nil {
		t.Fatal("permissions not removed")
	}
	r = m.must(DeleteUser{User: NumericID(2)})
	if len(r.Effects) != 1 || r.Effects[0].Kind != EffectUserDeleted || r.Effects[0].User != 2 {
		t.Fatalf("delete effects %+v", r.Effects)
	}
}

func TestUsersLimit(t *testing.T) {
	m := newMachine(t)
	l := DefaultLimits()
	l.MaxUsers = 2
	m.sys(SetLimits{Limits: l})
	m.user("alice", nil)
	m.expect(wire.CodeUsersLimitReached, CreateUser{Username: "bob", PasswordHash: "h", Status: UserActive})
}

func TestPersonalAccessTokens(t *testing.T) {
	m := newMachine(t)
	alice := m.user("alice", nil)
	h := func(i byte) TokenHash { return TokenHash{i} }
	r := m.as(alice.ID, CreatePersonalAccessToken{Name: "ci", Expiry: 60_000_000, Hash: h(1)})
	if r.Code != OK || r.Token.ExpiryAt != m.ts+60_000_000 || r.Token.CreatedAt != m.ts {
		t.Fatalf("create: %v %+v", r.Code, r.Token)
	}
	if r := m.as(alice.ID, CreatePersonalAccessToken{Name: "ci", Hash: h(2)}); r.Code != wire.CodePersonalAccessTokenAlreadyExists {
		t.Fatalf("duplicate name: %v", r.Code)
	}
	if r := m.as(alice.ID, CreatePersonalAccessToken{Name: "other", Hash: h(1)}); r.Code != wire.CodePersonalAccessTokenAlreadyExists {
		t.Fatalf("duplicate hash: %v", r.Code)
	}
	if r := m.as(alice.ID, CreatePersonalAccessToken{Name: "far", Expiry: math.MaxUint64 - 5, Hash: h(3)}); r.Code != wire.CodeInvalidPersonalAccessTokenExpiry {
		t.Fatalf("overflowing expiry: %v", r.Code)
	}
	// Token names are per user.
	if r := m.root(CreatePersonalAccessToken{Name: "ci", Hash: h(4)}); r.Code != OK || r.Token.ExpiryAt != 0 {
		t.Fatalf("root token: %v", r.Code)
	}
	if r := m.as(alice.ID, CreatePersonalAccessToken{Name: "forever", Expiry: math.MaxUint64, Hash: h(5)}); r.Code != OK || r.Token.ExpiryAt != 0 {
		t.Fatalf("never-expiring token: %+v", r)
	}
	u, pat, ok := m.s.TokenByHash(h(1))
	if !ok || u.ID != alice.ID || pat.Name != "ci" {
		t.Fatalf("lookup: %v %v %v", u, pat, ok)
	}
	if r := m.as(alice.ID, DeletePersonalAccessToken{Name: "nope"}); r.Code != wire.CodeResourceNotFound {
		t.Fatalf("delete missing: %v", r.Code)
	}
	// Expiry cleanup removes only the expired token (alice's "ci").
	m.ts += 61_000_000
	if got := m.s.ExpiredTokens(m.ts + 1000); len(got) != 1 || got[0] != (TokenRef{alice.ID, "ci"}) {
		t.Fatalf("ExpiredTokens = %v", got)
	}
	if r := m.as(alice.ID, DeleteExpiredTokens{}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("client-issued cleanup: %v", r.Code)
	}
	m.sys(DeleteExpiredTokens{})
	if _, _, ok := m.s.TokenByHash(h(1)); ok {
		t.Fatal("expired token survived cleanup")
	}
	if len(m.s.User(alice.ID).Tokens) != 1 || len(m.s.User(RootUserID).Tokens) != 1 {
		t.Fatal("cleanup removed live tokens")
	}
	if r := m.as(alice.ID, DeletePersonalAccessToken{Name: "forever"}); r.Code != OK {
		t.Fatalf("delete: %v", r.Code)
	}
	if _, _, ok := m.s.TokenByHash(h(5)); ok {
		t.Fatal("deleted token still indexed")
	}
	// Deleting a user drops its tokens from the login index.
	m.as(alice.ID, CreatePersonalAccessToken{Name: "x", Hash: h(6)})
	m.must(DeleteUser{User: NumericID(alice.ID)})
	if _, _, ok := m.s.TokenByHash(h(6)); ok {
		t.Fatal("token of a deleted user still indexed")
	}
}

func TestTokensPerUserLimit(t *testing.T) {
	m := newMachine(t)
	l := DefaultLimits()
	l.MaxTokensPerUser = 2
	m.sys(SetLimits{Limits: l})
	m.root(CreatePersonalAccessToken{Name: "a", Hash: TokenHash{1}})
	m.root(CreatePersonalAccessToken{Name: "b", Hash: TokenHash{2}})
	m.expect(wire.CodePersonalAccessTokensLimitReached, CreatePersonalAccessToken{Name: "c", Hash: TokenHash{3}})
	m.expect(wire.CodeInvalidPersonalAccessTokenName, CreatePersonalAccessToken{Name: "", Hash: TokenHash{3}})
}

func TestPermissionGateInApply(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 1)
	nobody := m.user("nobody", nil)
	streamer := m.user("streamer", &Permissions{Global: wire.GlobalPermissions{ManageStreams: true}})
	reader := m.user("reader", streamPerms(wire.StreamPermissions{StreamID: 0, ReadTopics: true}))

	tests := []struct {
		name string
		user uint32
		cmd  Command
		want wire.Code
	}{
		{"no permission to create a stream", nobody.ID, CreateStream{Name: "x"}, wire.CodeUnauthorized},
		{"manage_streams creates", streamer.ID, CreateStream{Name: "x"}, OK},
		{"not-found wins over permission", nobody.ID, DeleteStream{Stream: NamedID("nope")}, wire.CodeStreamIdNotFound},
		{"stream read cannot delete", reader.ID, DeleteStream{Stream: NumericID(0)}, wire.CodeUnauthorized},
		{"read_topics may create groups", reader.ID, CreateConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Name: "g"}, OK},
		{"read_topics may not create topics", reader.ID, CreateTopic{Stream: NumericID(0), Name: "x", Defaults: DefaultTopicDefaults()}, wire.CodeUnauthorized},
		{"manage_streams may not create users", streamer.ID, CreateUser{Username: "zed", PasswordHash: "h", Status: UserActive}, wire.CodeUnauthorized},
		{"own password", nobody.ID, ChangePassword{User: NumericID(nobody.ID), VerifiedHash: "h-nobody", NewPasswordHash: "n"}, OK},
		{"someone else's password", nobody.ID, ChangePassword{User: NumericID(streamer.ID), VerifiedHash: "h-streamer", NewPasswordHash: "n"}, wire.CodeUnauthorized},
		{"own permissions", nobody.ID, UpdatePermissions{User: NumericID(nobody.ID), Permissions: AllPermissions()}, wire.CodeUnauthorized},
		{"own tokens", nobody.ID, CreatePersonalAccessToken{Name: "t", Hash: TokenHash{9}}, OK},
		{"unknown acting user", 999, CreatePersonalAccessToken{Name: "t", Hash: TokenHash{9}}, wire.CodeUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mm := *m
			if r := mm.as(tc.user, tc.cmd); r.Code != tc.want {
				t.Fatalf("got %v, want %v", r.Code, tc.want)
			}
		})
	}

	// Deactivated users are refused even with grants.
	inactive := UserInactive
	m.must(UpdateUser{User: NumericID(streamer.ID), Status: &inactive})
	if r := m.as(streamer.ID, CreateStream{Name: "y"}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("inactive user: %v", r.Code)
	}
}

func TestGrantsRevokedWithTheirObject(t *testing.T) {
	m := newMachine(t)
	m.stream("s0")
	m.stream("s1")
	m.topic("s1", "t", 1)
	m.topic("s1", "u", 1)
	u := m.user("alice", streamPerms(
		wire.StreamPermissions{StreamID: 1, Topics: []wire.TopicPermissions{{TopicID: 1, ReadTopic: true}, {TopicID: 0, ManageTopic: true}}},
		wire.StreamPermissions{StreamID: 0, ManageStream: true},
	))
	m.must(DeleteStream{Stream: NumericID(0)})
	m.must(DeleteTopic{Stream: NumericID(1), Topic: NumericID(0)})
	p := m.s.User(u.ID).Permissions
	want := streamPerms(wire.StreamPermissions{StreamID: 1, Topics: []wire.TopicPermissions{{TopicID: 1, ReadTopic: true}}})
	if !permissionsEqual(p, want) {
		t.Fatalf("permissions after deletes: %+v", p)
	}
	// The reused ids are not reachable through stale grants.
	m.stream("new")
	if m.s.Allowed(u.ID, ActionDeleteStream, 0, 0) {
		t.Fatal("stale grant applies to a recreated stream")
	}
}
