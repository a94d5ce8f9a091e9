package metadata

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"sync"
)

// DefaultVerifyCacheEntries is how many successful password verifications
// a process remembers by default.
const DefaultVerifyCacheEntries = 4096

// verifyCache remembers (PHC hash, password) pairs that verified, so that a
// storm of logins by the same users (clients reconnecting after a failover,
// a benchmark's actors) costs one Argon2 derivation per pair instead of one
// per login: Argon2id is built to cost tens of milliseconds of a core, and
// a few hundred logins a second would otherwise take every core from the
// data path.
//
// Entries are keyed by HMAC-SHA256 under a random per-process key of the
// hash and the password, so memory never holds a password or anything an
// offline guess could be checked against without the process key. Only
// successes are cached: a wrong password always pays the full Argon2 cost,
// so the cache gives a guesser nothing. The PHC hash is part of the key, so
// a changed password (a new hash with a new salt) never matches an old
// entry. The cache is bounded; when full, it forgets everything and starts
// again (rare, and the cost is only the Argon2 work it saved).
type verifyCache struct {
	mu      sync.Mutex
	key     [32]byte
	max     int
	entries map[[32]byte]struct{}
}

var verified = newVerifyCache(DefaultVerifyCacheEntries)

func newVerifyCache(max int) *verifyCache {
	c := &verifyCache{max: max, entries: map[[32]byte]struct{}{}}
	if _, err := rand.Read(c.key[:]); err != nil {
		// crypto/rand does not fail on supported platforms; without a
		// key the cache must not be used.
		c.max = 0
	}
	return c
}

// SetVerifyCacheEntries bounds the process-wide cache of successful
// password verifications; 0 turns it off. It drops what is cached.
func SetVerifyCacheEntries(n int) {
	if n < 0 {
		n = 0
	}
	verified.mu.Lock()
	defer verified.mu.Unlock()
	verified.max = n
	verified.entries = map[[32]byte]struct{}{}
}

func (c *verifyCache) id(hash, password string) [32]byte {
	m := hmac.New(sha256.New, c.key[:])
	m.Write([]byte(hash))
	m.Write([]byte{0})
	m.Write([]byte(password))
	var out [32]byte
	m.Sum(out[:0])
	return out
}

func (c *verifyCache) has(hash, password string) bool {
	id := c.id(hash, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max == 0 {
		return false
	}
	_, ok := c.entries[id]
	return ok
}

func (c *verifyCache) add(hash, password string) {
	id := c.id(hash, password)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max == 0 {
		return
	}
	if len(c.entries) >= c.max {
		clear(c.entries)
	}
	c.entries[id] = struct{}{}
}

func (c *verifyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
