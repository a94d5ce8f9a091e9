package metadata

import (
	"strings"
	"testing"

	"github.com/iggo/iggo/wire"
)

// cheap parameters keep the tests fast; the format and checks are the
// same as with the defaults.
var cheapArgon = Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("s3cret", cheapArgon)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=64,t=1,p=1$") {
		t.Fatalf("hash %q is not an argon2id PHC string", h)
	}
	if !VerifyPassword(h, "s3cret") || VerifyPassword(h, "s3cret ") || VerifyPassword(h, "") {
		t.Fatal("verify accepts the wrong password or rejects the right one")
	}
	h2, _ := HashPassword("s3cret", cheapArgon)
	if h == h2 {
		t.Fatal("two hashes of one password share a salt")
	}
	for _, bad := range []string{
		"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=18$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=9999999999,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=0,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1,p=0$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1,p=1,x=2$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1,p=1$!!$a2V5a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$a2V5",
		h + "$extra",
	} {
		if VerifyPassword(bad, "s3cret") {
			t.Errorf("malformed hash %q verified", bad)
		}
	}
	if _, err := HashPassword("x", Argon2Params{}); err == nil {
		t.Fatal("zero parameters accepted")
	}
}

func TestCredentialBounds(t *testing.T) {
	for name, want := range map[string]wire.Code{"ab": wire.CodeInvalidUsername, "abc": OK, strings.Repeat("u", 50): OK,
		strings.Repeat("u", 51): wire.CodeInvalidUsername, "ab\xff": wire.CodeInvalidUsername} {
		if got := ValidateUsername(name); got != want {
			t.Errorf("ValidateUsername(%q) = %v", name, got)
		}
	}
	for pw, want := range map[string]wire.Code{"ab": wire.CodeInvalidPassword, "abc": OK, strings.Repeat("p", 100): OK,
		strings.Repeat("p", 101): wire.CodeInvalidPassword} {
		if got := ValidatePassword(pw); got != want {
			t.Errorf("ValidatePassword(%d bytes) = %v", len(pw), got)
		}
	}
}

func TestAuthenticate(t *testing.T) {
	m := newMachine(t)
	good, _ := HashPassword("pw-alice", cheapArgon)
	m.must(CreateUser{Username: "alice", PasswordHash: good, Status: UserActive})
	m.must(CreateUser{Username: "sleepy", PasswordHash: good, Status: UserInactive})
	if u, code := m.s.AuthenticatePassword("alice", "pw-alice"); code != OK || u.Username != "alice" {
		t.Fatalf("good login: %v", code)
	}
	if _, code := m.s.AuthenticatePassword("alice", "nope"); code != wire.CodeInvalidCredentials {
		t.Fatalf("bad password: %v", code)
	}
	if _, code := m.s.AuthenticatePassword("nobody", "pw-alice"); code != wire.CodeInvalidCredentials {
		t.Fatalf("unknown user: %v", code)
	}
	if _, code := m.s.AuthenticatePassword("sleepy", "pw-alice"); code != wire.CodeUserInactive {
		t.Fatalf("inactive user: %v", code)
	}

	tok, hash, err := GenerateToken()
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 67 || HashToken(tok) != hash {
		t.Fatalf("token %q (%d chars)", tok, len(tok))
	}
	if tok2, _, _ := GenerateToken(); tok2 == tok {
		t.Fatal("two tokens are equal")
	}
	alice := m.s.UserByName("alice").ID
	m.as(alice, CreatePersonalAccessToken{Name: "ci", Expiry: 1_000_000, Hash: hash})
	now := m.ts
	if u, code := m.s.AuthenticateToken(tok, now); code != OK || u.ID != alice {
		t.Fatalf("token login: %v", code)
	}
	if _, code := m.s.AuthenticateToken(tok, now+1_000_000); code != wire.CodePersonalAccessTokenExpired {
		t.Fatalf("expired token: %v", code)
	}
	if _, code := m.s.AuthenticateToken(tok+"x", now); code != wire.CodeInvalidPersonalAccessToken {
		t.Fatalf("unknown token: %v", code)
	}
	inactive := UserInactive
	m.must(UpdateUser{User: NamedID("alice"), Status: &inactive})
	if _, code := m.s.AuthenticateToken(tok, now); code != wire.CodeUserInactive {
		t.Fatalf("token of an inactive user: %v", code)
	}
}

// PasswordCached answers true only for a pair that verified before, so the
// node can skip the verification slot exactly when no Argon2 runs.
func TestPasswordCached(t *testing.T) {
	SetVerifyCacheEntries(DefaultVerifyCacheEntries)
	t.Cleanup(func() { SetVerifyCacheEntries(DefaultVerifyCacheEntries) })
	m := newMachine(t)
	good, _ := HashPassword("pw-carol", cheapArgon)
	m.must(CreateUser{Username: "carol", PasswordHash: good, Status: UserActive})
	if m.s.PasswordCached("carol", "pw-carol") {
		t.Fatal("cached before any verification")
	}
	if _, code := m.s.AuthenticatePassword("carol", "wrong"); code != wire.CodeInvalidCredentials || m.s.PasswordCached("carol", "wrong") {
		t.Fatalf("a failure was cached (%v)", code)
	}
	if _, code := m.s.AuthenticatePassword("carol", "pw-carol"); code != OK {
		t.Fatal(code)
	}
	if !m.s.PasswordCached("carol", "pw-carol") || m.s.PasswordCached("carol", "pw-carol2") || m.s.PasswordCached("nobody", "pw-carol") {
		t.Fatal("cache answer wrong after a success")
	}
}
