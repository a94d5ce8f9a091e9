package wire

import (
	"encoding/binary"
	"math/bits"
)

// XXH32 constants from the xxHash specification.
const (
	xxh32P1 uint32 = 0x9E3779B1
	xxh32P2 uint32 = 0x85EBCA77
	xxh32P3 uint32 = 0xC2B2AE3D
	xxh32P4 uint32 = 0x27D4EB2F
	xxh32P5 uint32 = 0x165667B1
)

// XXH32 is the 32-bit xxHash of b with seed 0. Iggy uses it to route a message
// key to a partition (XXH32(key) % partitions) and to turn a string consumer
// id into the u32 that keys its offsets.
func XXH32(b []byte) uint32 { return xxh32Seed(b, 0) }

func xxh32Round(acc, lane uint32) uint32 {
	return bits.RotateLeft32(acc+lane*xxh32P2, 13) * xxh32P1
}

func xxh32Seed(b []byte, seed uint32) uint32 {
	n := len(b)
	var acc uint32
	if n >= 16 {
		v1 := seed + xxh32P1 + xxh32P2
		v2 := seed + xxh32P2
		v3 := seed
		v4 := seed - xxh32P1
		for len(b) >= 16 {
			v1 = xxh32Round(v1, binary.LittleEndian.Uint32(b[0:]))
			v2 = xxh32Round(v2, binary.LittleEndian.Uint32(b[4:]))
			v3 = xxh32Round(v3, binary.LittleEndian.Uint32(b[8:]))
			v4 = xxh32Round(v4, binary.LittleEndian.Uint32(b[12:]))
			b = b[16:]
		}
		acc = bits.RotateLeft32(v1, 1) + bits.RotateLeft32(v2, 7) + bits.RotateLeft32(v3, 12) + bits.RotateLeft32(v4, 18)
	} else {
		acc = seed + xxh32P5
	}
	acc += uint32(n)
	for len(b) >= 4 {
		acc = bits.RotateLeft32(acc+binary.LittleEndian.Uint32(b)*xxh32P3, 17) * xxh32P4
		b = b[4:]
	}
	for _, c := range b {
		acc = bits.RotateLeft32(acc+uint32(c)*xxh32P5, 11) * xxh32P1
	}
	acc ^= acc >> 15
	acc *= xxh32P2
	acc ^= acc >> 13
	acc *= xxh32P3
	acc ^= acc >> 16
	return acc
}

// PartitionForKey is Iggy's key routing: XXH32(key) % partitions.
// partitions must be > 0.
func PartitionForKey(key []byte, partitions uint32) uint32 {
	return XXH32(key) % partitions
}

// ConsumerKey is the u32 that keys an individual consumer's offsets: the
// numeric id as is, a string id hashed with XXH32.
func ConsumerKey(id Identifier) uint32 {
	if v, ok := id.Numeric(); ok {
		return v
	}
	name, _ := id.Name()
	return xxh32String(name)
}

func xxh32String(s string) uint32 {
	// Names are at most 255 bytes, so a stack buffer avoids the allocation.
	var buf [MaxNameLength]byte
	n := copy(buf[:], s)
	return XXH32(buf[:n])
}
