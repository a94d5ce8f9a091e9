package partition

import (
	"encoding/binary"

	"github.com/iggo/iggo/wire"
)

// Partition prepare operations. 160..162 are Iggy's; the others are iggo's
// internal partition operations (never sent by clients).
const (
	OpSend             = uint8(wire.OpSendMessages)
	OpStoreOffset      = uint8(wire.OpStoreConsumerOffset)
	OpDeleteOffset     = uint8(wire.OpDeleteConsumerOffset)
	OpPurge            = uint8(170)
	OpDropGroupOffsets = uint8(171)
	OpDeleteSegments   = uint8(172)
)

const (
	offsetFlagAuto     = 1
	offsetOpSize       = 18
	deleteOffsetOpSize = 5
	// offsetOpSizeUncapped is a store-offset body journaled before the
	// cap field (applied without a cap).
	offsetOpSizeUncapped = 14
)

// CodeOffsetsFull answers a store of a new consumer-offset key on a
// partition that holds partition.consumer_offsets_max keys of its kind.
// Iggy has no code of its own for it; TopicFull (3009) is its nearest.
const CodeOffsetsFull = wire.CodeTopicFull

// OffsetKey identifies a stored consumer offset: kind 1 (consumer, numeric
// id or XXH32 of the name) or 2 (consumer group id).
type OffsetKey struct {
	Kind uint8
	ID   uint32
}

// EncodeStoreOffset is a store-offset body (op 161) carrying limit, the
// node's partition.consumer_offsets_max.
func EncodeStoreOffset(k OffsetKey, offset uint64, auto bool, limit int) []byte {
	b := make([]byte, offsetOpSize)
	b[0] = k.Kind
	binary.LittleEndian.PutUint32(b[1:], k.ID)
	binary.LittleEndian.PutUint64(b[5:], offset)
	if auto {
		b[13] = offsetFlagAuto
	}
	binary.LittleEndian.PutUint32(b[14:], uint32(limit))
	return b
}

// EncodeDeleteOffset is a delete-offset body (op 162).
func EncodeDeleteOffset(k OffsetKey) []byte {
	b := make([]byte, deleteOffsetOpSize)
	b[0] = k.Kind
	binary.LittleEndian.PutUint32(b[1:], k.ID)
	return b
}

// EncodePurge is a purge body (op 170).
func EncodePurge(gen uint64) []byte { return binary.LittleEndian.AppendUint64(nil, gen) }

// EncodeDropGroup is a drop-group-offsets body (op 171).
func EncodeDropGroup(group uint32) []byte { return binary.LittleEndian.AppendUint32(nil, group) }

// EncodeDeleteSegments is a delete-segments body (op 172).
func EncodeDeleteSegments(keepFrom uint64) []byte {
	return binary.LittleEndian.AppendUint64(nil, keepFrom)
}

// ReplyCode is the code of a [code u32] reply (every op but a send), or
// false for a reply of another length.
func ReplyCode(reply []byte) (uint32, bool) {
	if len(reply) != 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(reply), true
}

func codeReply(code uint32) []byte { return binary.LittleEndian.AppendUint32(make([]byte, 0, 4), code) }
