package vsr

import "math/bits"

// splitmix64 is a fixed 64-bit mixer (Steele, Lea, Flood). It derives the
// primary offset of a group and seeds PRNG.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// PRNG is xoshiro256**: small, fast and fully determined by its seed, so a
// simulator seed replays every jitter decision exactly. It is not safe for
// concurrent use.
type PRNG struct{ s [4]uint64 }

// NewPRNG seeds a generator; every seed, including 0, gives a valid state.
func NewPRNG(seed uint64) *PRNG {
	p := &PRNG{}
	x := seed
	for i := range p.s {
		x += 0x9e3779b97f4a7c15
		p.s[i] = splitmix64(x)
	}
	return p
}

// Uint64 returns the next value.
func (p *PRNG) Uint64() uint64 {
	s := &p.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// Intn returns a value in [0, n); n must be positive.
func (p *PRNG) Intn(n int) int {
	if n <= 0 {
		panic("vsr: PRNG.Intn with non-positive bound")
	}
	hi, _ := bits.Mul64(p.Uint64(), uint64(n))
	return int(hi)
}

// Chance returns true with probability num/den.
func (p *PRNG) Chance(num, den int) bool { return p.Intn(den) < num }
