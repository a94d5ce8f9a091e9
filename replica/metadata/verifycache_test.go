package metadata

import (
	"fmt"
	"testing"
)

func TestVerifyCacheRemembersOnlySuccesses(t *testing.T) {
	SetVerifyCacheEntries(DefaultVerifyCacheEntries)
	t.Cleanup(func() { SetVerifyCacheEntries(DefaultVerifyCacheEntries) })
	p := Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	h, err := HashPassword("secret-1", p)
	if err != nil {
		t.Fatal(err)
	}
	if VerifyPassword(h, "wrong") {
		t.Fatal("a wrong password verified")
	}
	if n := verified.len(); n != 0 {
		t.Fatalf("a failed verification was cached (%d entries)", n)
	}
	if !VerifyPassword(h, "secret-1") {
		t.Fatal("the right password did not verify")
	}
	if n := verified.len(); n != 1 {
		t.Fatalf("cache holds %d entries after one success, want 1", n)
	}
	// Cached: still right, and a wrong password is still wrong.
	if !VerifyPassword(h, "secret-1") || VerifyPassword(h, "secret-2") {
		t.Fatal("cached verification answered wrongly")
	}
	// A new hash of another password (a password change) does not match
	// the old password through the cache.
	h2, err := HashPassword("secret-2", p)
	if err != nil {
		t.Fatal(err)
	}
	if VerifyPassword(h2, "secret-1") {
		t.Fatal("old password verified against the new hash")
	}
	// A malformed hash never verifies, cached pair or not.
	if VerifyPassword(h[:len(h)-2], "secret-1") {
		t.Fatal("a damaged hash verified")
	}
}

func TestVerifyCacheBoundedAndSwitchable(t *testing.T) {
	t.Cleanup(func() { SetVerifyCacheEntries(DefaultVerifyCacheEntries) })
	SetVerifyCacheEntries(3)
	p := Argon2Params{MemoryKiB: 64, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	for i := 0; i < 10; i++ {
		pw := fmt.Sprintf("pw-%d", i)
		h, err := HashPassword(pw, p)
		if err != nil {
			t.Fatal(err)
		}
		if !VerifyPassword(h, pw) {
			t.Fatalf("%s did not verify", pw)
		}
		if n := verified.len(); n > 3 {
			t.Fatalf("cache grew to %d entries, bound 3", n)
		}
	}
	SetVerifyCacheEntries(0)
	h, _ := HashPassword("pw-x", p)
	if !VerifyPassword(h, "pw-x") {
		t.Fatal("verification failed with the cache off")
	}
	if n := verified.len(); n != 0 {
		t.Fatalf("cache off but holds %d entries", n)
	}
}

// BenchmarkLoginVerify shows what the cache saves: a repeated login of the
// same user with Iggy's default Argon2 parameters.
func BenchmarkLoginVerify(b *testing.B) {
	h, err := HashPassword("bench-password", DefaultArgon2Params())
	if err != nil {
		b.Fatal(err)
	}
	for _, entries := range []int{0, DefaultVerifyCacheEntries} {
		b.Run(fmt.Sprintf("cache=%d", entries), func(b *testing.B) {
			SetVerifyCacheEntries(entries)
			defer SetVerifyCacheEntries(DefaultVerifyCacheEntries)
			for b.Loop() {
				if !VerifyPassword(h, "bench-password") {
					b.Fatal("did not verify")
				}
			}
		})
	}
}
