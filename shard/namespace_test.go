package shard

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"testing"

	"github.com/spaolacci/murmur3"
)

// refMurmur3x86_32 is a second, independent MurmurHash3 x86_32 written from
// the public algorithm description, used to cross-check the library.
func refMurmur3x86_32(data []byte, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data) / 4
	for i := 0; i < n; i++ {
		k := binary.LittleEndian.Uint32(data[4*i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	tail := data[4*n:]
	var k uint32
	switch len(tail) {
	case 3:
		k ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(tail[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

func TestMurmur3PublishedVectors(t *testing.T) {
	// Published test vectors for MurmurHash3 x86_32.
	cases := []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514e28b7},
		{"", 0xffffffff, 0x81f16f39},
		{"\x00\x00\x00\x00", 0, 0x2362f9de},
		{"aaaa", 0x9747b28c, 0x5a97808a},
		{"Hello, world!", 1234, 0xfaf6cdb3},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2fa826cd},
	}
	for _, c := range cases {
		if got := refMurmur3x86_32([]byte(c.in), c.seed); got != c.want {
			t.Errorf("reference murmur3(%q, %#x) = %#x, want %#x", c.in, c.seed, got, c.want)
		}
		if got := libMurmur3(t, []byte(c.in), c.seed); got != c.want {
			t.Errorf("library murmur3(%q, %#x) = %#x, want %#x", c.in, c.seed, got, c.want)
		}
	}
}

// libMurmur3 hashes with github.com/spaolacci/murmur3's streaming form; its
// one-shot Sum32WithSeed aborts under checkptr (-race).
func libMurmur3(t testing.TB, data []byte, seed uint32) uint32 {
	h := murmur3.New32WithSeed(seed)
	if _, err := h.Write(data); err != nil {
		t.Fatal(err)
	}
	return h.Sum32()
}

func TestNamespaceHashMatchesLibraryAndReference(t *testing.T) {
	// Namespaces with every field at assorted values, plus raw bit patterns
	// Hash must also handle (it hashes whatever it is given).
	x := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 5000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x)
		ns := Namespace(x)
		if got, lib, ref := ns.Hash(), libMurmur3(t, b[:], 0), refMurmur3x86_32(b[:], 0); got != lib || got != ref {
			t.Fatalf("Hash(%#x) = %#x, library %#x, reference %#x", x, got, lib, ref)
		}
	}
}

func TestNamespacePacking(t *testing.T) {
	cases := []struct {
		s, t, p uint32
		want    Namespace
	}{
		{0, 0, 0, 0},
		{5, 2, 7, 0x5_0020_0007},
		{1, 0, 0, 0x1_0000_0000},
		{0, 1, 0, 0x10_0000},
		{0, 0, 1, 1},
		{4095, 4095, 999_999, 0xFFF_FFFF_423F},
		{StreamIDLimit - 1, TopicIDLimit - 1, PartitionIDLimit - 1, 0xF_FFFF_FFFF_423F},
	}
	for _, c := range cases {
		got, err := NewNamespace(c.s, c.t, c.p)
		if err != nil {
			t.Fatalf("NewNamespace(%d,%d,%d): %v", c.s, c.t, c.p, err)
		}
		if got != c.want {
			t.Errorf("NewNamespace(%d,%d,%d) = %#x, want %#x", c.s, c.t, c.p, uint64(got), uint64(c.want))
		}
		if got.Stream() != c.s || got.Topic() != c.t || got.Partition() != c.p {
			t.Errorf("%#x unpacks to (%d,%d,%d)", uint64(got), got.Stream(), got.Topic(), got.Partition())
		}
		if !got.Valid() || got.IsMetadata() {
			t.Errorf("%#x: Valid=%v IsMetadata=%v", uint64(got), got.Valid(), got.IsMetadata())
		}
	}
}

func TestNamespaceRefusesOutOfRange(t *testing.T) {
	cases := []struct {
		s, t, p uint32
		field   string
	}{
		{StreamIDLimit, 0, 0, "stream"},
		{0, TopicIDLimit, 0, "topic"},
		{0, 0, PartitionIDLimit, "partition"},
		{0, 0, 1<<20 - 1, "partition"}, // fits the field, still refused
		{^uint32(0), 0, 0, "stream"},
	}
	for _, c := range cases {
		ns, err := NewNamespace(c.s, c.t, c.p)
		if !errors.Is(err, ErrNamespaceRange) {
			t.Fatalf("NewNamespace(%d,%d,%d) = %#x, %v; want ErrNamespaceRange", c.s, c.t, c.p, uint64(ns), err)
		}
		if want := c.field + " id"; !contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if Namespace(0xF_4240).Valid() { // partition field 1,000,000
		t.Error("partition id 1,000,000 decoded as valid")
	}
	if Namespace(1 << 52).Valid() {
		t.Error("bit 52 set decoded as valid")
	}
	if !MetadataGroup.Valid() || !MetadataGroup.IsMetadata() {
		t.Error("metadata group not valid")
	}
}

func TestMustNamespacePanicsOutOfRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("MustNamespace accepted topic 4096")
		}
	}()
	MustNamespace(1, TopicIDLimit, 1)
}

func TestNamespaceHashGolden(t *testing.T) {
	// Golden hashes; each is also recomputed with the independent reference
	// implementation, so a wrong constant here fails loudly.
	cases := []struct {
		ns   Namespace
		hash uint32
	}{
		{0, 0x63852afc},
		{0x5_0020_0007, 0x4a90bb6b},
		{0x1_0000_0000, 0x3ad85688},
		{1, 0x53075d44},
		{MetadataGroup, 0x516faf25},
	}
	for _, c := range cases {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(c.ns))
		ref := refMurmur3x86_32(b[:], 0)
		if got := c.ns.Hash(); got != ref || got != libMurmur3(t, b[:], 0) {
			t.Errorf("Hash(%#x) = %#x, reference %#x", uint64(c.ns), got, ref)
		}
		if c.ns.Hash() != c.hash {
			t.Errorf("Hash(%#x) = %#x, golden %#x", uint64(c.ns), c.ns.Hash(), c.hash)
		}
	}
}

func TestOwningShardGolden(t *testing.T) {
	// Upper 16 bits of the golden hashes, reduced by hand:
	// 0x6385=25477, 0x4a90=19088, 0x3ad8=15064, 0x5307=21255.
	cases := []struct {
		ns     Namespace
		shards int
		want   int
	}{
		{0, 1, 0}, {0, 2, 1}, {0, 3, 1}, {0, 4, 1}, {0, 8, 5},
		{0x5_0020_0007, 1, 0}, {0x5_0020_0007, 2, 0}, {0x5_0020_0007, 3, 2}, {0x5_0020_0007, 8, 0},
		{0x1_0000_0000, 3, 1}, {0x1_0000_0000, 8, 0},
		{1, 2, 1}, {1, 3, 0}, {1, 4, 3}, {1, 8, 7},
	}
	for _, c := range cases {
		if got := OwningShard(c.ns, c.shards); got != c.want {
			t.Errorf("OwningShard(%v, %d) = %d, want %d", c.ns, c.shards, got, c.want)
		}
	}
	if Route(MetadataGroup, 8) != 0 {
		t.Error("metadata group not routed to shard 0")
	}
	if Route(1, 8) != 7 {
		t.Error("Route disagrees with OwningShard for a partition")
	}
}

func TestOwningShardSpreads(t *testing.T) {
	// Every shard must own some of the first 64 partitions of a topic; a
	// routing that used the low hash bits or ignored the hash would not.
	const shards = 4
	var owned [shards]int
	for p := uint32(0); p < 64; p++ {
		owned[OwningShard(MustNamespace(1, 1, p), shards)]++
	}
	for i, n := range owned {
		if n == 0 {
			t.Errorf("shard %d owns none of 64 partitions: %v", i, owned)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
