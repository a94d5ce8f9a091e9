package shard

import (
	"errors"
	"fmt"
	"math/bits"
)

// Namespace is the packed 64-bit identity of a consensus group: a partition
// (stream, topic, partition) or the metadata group. Layout, bit 0 least
// significant:
//
//	bits  0..19  partition id (20 bits, ids 0..999,999)
//	bits 20..31  topic id     (12 bits, ids 0..4,095)
//	bits 32..51  stream id    (20 bits, ids 0..1,048,575)
//	bits 52..62  zero
//	bit  63      metadata group sentinel
//
// (0,0,0) packs to 0 and is a legal partition, which is why the metadata group
// is marked by the top bit rather than by zero. The layout is Iggy's, so a
// namespace seen on the wire or in a log means the same thing in both systems.
type Namespace uint64

const (
	// StreamIDLimit, TopicIDLimit and PartitionIDLimit are exclusive upper
	// bounds on the ids a namespace can carry. The partition field has room
	// for 1,048,575 but ids from 1,000,000 up are refused, as Iggy refuses
	// them, so both systems agree on which namespaces exist.
	StreamIDLimit    = 1 << 20
	TopicIDLimit     = 1 << 12
	PartitionIDLimit = 1_000_000

	partitionShift = 0
	topicShift     = 20
	streamShift    = 32
	partitionMask  = 1<<20 - 1
	topicMask      = 1<<12 - 1
	streamMask     = 1<<20 - 1

	// MetadataGroup is the namespace of the cluster's one metadata
	// consensus group, hosted on shard 0.
	MetadataGroup Namespace = 1 << 63

	// packedMax is the largest namespace a partition can pack to.
	packedMax Namespace = 1<<52 - 1
)

// ErrNamespaceRange is wrapped by NewNamespace when an id does not fit. Ids
// are never masked: masking would silently alias two partitions onto one
// consensus group.
var ErrNamespaceRange = errors.New("shard: namespace id out of range")

// NewNamespace packs a partition's ids, refusing any id outside its field.
func NewNamespace(stream, topic, partition uint32) (Namespace, error) {
	switch {
	case stream >= StreamIDLimit:
		return 0, fmt.Errorf("%w: stream id %d must be < %d", ErrNamespaceRange, stream, StreamIDLimit)
	case topic >= TopicIDLimit:
		return 0, fmt.Errorf("%w: topic id %d must be < %d", ErrNamespaceRange, topic, TopicIDLimit)
	case partition >= PartitionIDLimit:
		return 0, fmt.Errorf("%w: partition id %d must be < %d", ErrNamespaceRange, partition, PartitionIDLimit)
	}
	return Namespace(uint64(stream)<<streamShift | uint64(topic)<<topicShift | uint64(partition)<<partitionShift), nil
}

// MustNamespace is NewNamespace for ids the caller has already validated; an
// out-of-range id is a broken invariant and panics.
func MustNamespace(stream, topic, partition uint32) Namespace {
	ns, err := NewNamespace(stream, topic, partition)
	if err != nil {
		panic(err.Error())
	}
	return ns
}

// Stream returns the stream id field.
func (n Namespace) Stream() uint32 { return uint32(uint64(n) >> streamShift & streamMask) }

// Topic returns the topic id field.
func (n Namespace) Topic() uint32 { return uint32(uint64(n) >> topicShift & topicMask) }

// Partition returns the partition id field.
func (n Namespace) Partition() uint32 { return uint32(uint64(n) >> partitionShift & partitionMask) }

// IsMetadata reports whether n names the metadata group.
func (n Namespace) IsMetadata() bool { return n == MetadataGroup }

// Valid reports whether n is the metadata group or a namespace NewNamespace
// could have produced. Decoders use it on namespaces read from the wire.
func (n Namespace) Valid() bool {
	if n == MetadataGroup {
		return true
	}
	return n <= packedMax && n.Partition() < PartitionIDLimit
}

func (n Namespace) String() string {
	if n == MetadataGroup {
		return "metadata"
	}
	return fmt.Sprintf("%d/%d/%d", n.Stream(), n.Topic(), n.Partition())
}

// Hash is MurmurHash3 x86_32 with seed 0 over the namespace's eight
// little-endian bytes, the function Iggy routes by.
//
// It is the reference algorithm specialised to an 8-byte input (two blocks,
// no tail) rather than a call into github.com/spaolacci/murmur3: that
// library's one-shot Sum32WithSeed walks memory with uintptr arithmetic that
// the race detector's checkptr rejects (the process aborts under -race), and
// its streaming form allocates a digest per call on a path every request
// takes. The tests check this function against both the library's streaming
// form and an independent implementation.
func (n Namespace) Hash() uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := uint32(0) // seed
	for _, k := range [2]uint32{uint32(n), uint32(n >> 32)} {
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	h ^= 8 // input length
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// OwningShard returns the shard, among shardCount, that owns group n on this
// node: (hash >> 16) mod shardCount. The upper half of the hash is used
// because the low bits mix poorly for the small integers namespaces are made
// of. Routing is node-local: nodes with different shard counts place the same
// partition on different shards, and nothing depends on them agreeing.
//
// The metadata group is hosted on shard 0 by design and is not hashed here;
// callers route it explicitly (see Route).
func OwningShard(n Namespace, shardCount int) int {
	if shardCount <= 0 {
		panic(fmt.Sprintf("shard: OwningShard with shard count %d", shardCount))
	}
	if shardCount == 1 {
		return 0
	}
	return int((n.Hash() >> 16) % uint32(shardCount))
}

// Route returns the shard that serves group n: shard 0 for the metadata group,
// OwningShard otherwise.
func Route(n Namespace, shardCount int) int {
	if n == MetadataGroup {
		return 0
	}
	return OwningShard(n, shardCount)
}
