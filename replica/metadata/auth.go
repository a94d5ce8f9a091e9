package metadata

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/iggo/iggo/wire"
	"golang.org/x/crypto/argon2"
)

// Credential bounds (Iggy's).
const (
	MinUsernameLength = 3
	MaxUsernameLength = 50
	MinPasswordLength = 3
	MaxPasswordLength = 100
	// tokenBytes is the random size of a personal access token.
	tokenBytes = 50
)

// ValidateUsername checks Iggy's username bounds (3..50 bytes of UTF-8).
func ValidateUsername(name string) wire.Code {
	if len(name) < MinUsernameLength || len(name) > MaxUsernameLength || !utf8.ValidString(name) {
		return wire.CodeInvalidUsername
	}
	return OK
}

// ValidatePassword checks Iggy's password bounds (3..100 bytes). The node
// calls it before hashing a new password.
func ValidatePassword(password string) wire.Code {
	if len(password) < MinPasswordLength || len(password) > MaxPasswordLength {
		return wire.CodeInvalidPassword
	}
	return OK
}

// Argon2Params are the Argon2id cost parameters for new hashes. Stored
// hashes carry their own parameters, so changing these affects only
// hashes computed afterwards.
type Argon2Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
	SaltLength  uint32
	KeyLength   uint32
}

// DefaultArgon2Params are the argon2 crate's defaults (what Iggy uses):
// 19 MiB, 2 passes, 1 lane, 16-byte salt, 32-byte key.
func DefaultArgon2Params() Argon2Params {
	return Argon2Params{MemoryKiB: 19456, Iterations: 2, Parallelism: 1, SaltLength: 16, KeyLength: 32}
}

// Parameter ceilings accepted when verifying a stored hash, so a corrupt
// or hostile hash cannot make verification allocate without bound.
const (
	maxArgonMemoryKiB  = 1 << 21 // 2 GiB
	maxArgonIterations = 64
	maxArgonKeyLength  = 128
)

var b64 = base64.RawStdEncoding

// HashPassword computes an Argon2id hash of password with a random salt
// and returns it as a PHC string ($argon2id$v=19$m=..,t=..,p=..$salt$key).
// It is expensive by design: the node calls it on the connection's shard
// before replicating, never inside Apply.
func HashPassword(password string, p Argon2Params) (string, error) {
	if p.SaltLength < 8 || p.KeyLength < 16 || p.KeyLength > maxArgonKeyLength || p.Parallelism == 0 ||
		p.Iterations == 0 || p.Iterations > maxArgonIterations || p.MemoryKiB < 8*uint32(p.Parallelism) || p.MemoryKiB > maxArgonMemoryKiB {
		return "", fmt.Errorf("metadata: invalid argon2 parameters %+v", p)
	}
	salt := make([]byte, p.SaltLength)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("metadata: reading salt: %w", err)
	}
	return hashWithSalt(password, salt, p), nil
}

func hashWithSalt(password string, salt []byte, p Argon2Params) string {
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, p.KeyLength)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.MemoryKiB, p.Iterations, p.Parallelism, b64.EncodeToString(salt), b64.EncodeToString(key))
}

type phc struct {
	p    Argon2Params
	salt []byte
	key  []byte
}

func parsePHC(h string) (phc, bool) {
	parts := strings.Split(h, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return phc{}, false
	}
	var out phc
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return phc{}, false
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return phc{}, false
		}
		switch k {
		case "m":
			out.p.MemoryKiB = uint32(n)
		case "t":
			out.p.Iterations = uint32(n)
		case "p":
			if n > 255 {
				return phc{}, false
			}
			out.p.Parallelism = uint8(n)
		default:
			return phc{}, false
		}
	}
	var err error
	if out.salt, err = b64.DecodeString(parts[4]); err != nil || len(out.salt) < 8 {
		return phc{}, false
	}
	if out.key, err = b64.DecodeString(parts[5]); err != nil || len(out.key) < 16 || len(out.key) > maxArgonKeyLength {
		return phc{}, false
	}
	p := out.p
	if p.Parallelism == 0 || p.Iterations == 0 || p.Iterations > maxArgonIterations ||
		p.MemoryKiB < 8*uint32(p.Parallelism) || p.MemoryKiB > maxArgonMemoryKiB {
		return phc{}, false
	}
	return out, true
}

// VerifyPassword reports whether password matches the PHC hash, in
// constant time with respect to the key. A malformed hash never matches.
// A pair that verified before is answered from a bounded in-memory cache
// (verifyCache) without a new Argon2 derivation.
func VerifyPassword(hash, password string) bool {
	h, ok := parsePHC(hash)
	if !ok {
		return false
	}
	if verified.has(hash, password) {
		return true
	}
	key := argon2.IDKey([]byte(password), h.salt, h.p.Iterations, h.p.MemoryKiB, h.p.Parallelism, uint32(len(h.key)))
	if subtle.ConstantTimeCompare(key, h.key) != 1 {
		return false
	}
	verified.add(hash, password)
	return true
}

var (
	dummyHashOnce sync.Once
	dummyHash     string
)

// AuthenticatePassword checks username/password against s. It returns
// InvalidCredentials for an unknown user or a wrong password (spending an
// Argon2 verification either way, so timing does not reveal which) and
// UserInactive for a correct password on an inactive account.
func (s *State) AuthenticatePassword(username, password string) (*User, wire.Code) {
	u := s.UserByName(username)
	if u == nil {
		dummyHashOnce.Do(func() {
			dummyHash = hashWithSalt("iggo-dummy", make([]byte, 16), DefaultArgon2Params())
		})
		VerifyPassword(dummyHash, password)
		return nil, wire.CodeInvalidCredentials
	}
	if !VerifyPassword(u.PasswordHash, password) {
		return nil, wire.CodeInvalidCredentials
	}
	if u.Status != UserActive {
		return nil, wire.CodeUserInactive
	}
	return u, OK
}

// PasswordCached reports whether username/password is a pair that verified
// before and is still remembered (verifyCache), so that checking it again
// costs no Argon2 derivation. It says nothing about a pair that is not
// cached.
func (s *State) PasswordCached(username, password string) bool {
	u := s.UserByName(username)
	return u != nil && verified.has(u.PasswordHash, password)
}

// GenerateToken mints a personal access token (base64url of 50 random
// bytes, 67 characters) and its hash. The node calls it on the primary
// before replication; only the hash enters the prepare.
func GenerateToken() (string, TokenHash, error) {
	var raw [tokenBytes]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", TokenHash{}, fmt.Errorf("metadata: generating token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	return tok, HashToken(tok), nil
}

// HashToken is the stored form of a token. Tokens carry 400 bits of
// randomness, so a plain SHA-256 is enough and keeps PAT login cheap.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// AuthenticateToken resolves a PAT login at now (µs): InvalidPAT when the
// token is unknown, PATExpired when expired, UserInactive when its owner
// is inactive.
func (s *State) AuthenticateToken(token string, now uint64) (*User, wire.Code) {
	u, pat, ok := s.TokenByHash(HashToken(token))
	if !ok {
		return nil, wire.CodeInvalidPersonalAccessToken
	}
	if pat.Expired(now) {
		return nil, wire.CodePersonalAccessTokenExpired
	}
	if u.Status != UserActive {
		return nil, wire.CodeUserInactive
	}
	return u, OK
}
