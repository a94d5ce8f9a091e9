package partition

import (
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// Admission: what a client request becomes before its group takes it.
// Each returns the request to submit, or a non-zero Iggy code that
// answers the request at once.

// StoreOffsetRequest admits a store of consumer k's offset.
func (p *Partition) StoreOffsetRequest(k OffsetKey, offset uint64, user uint32, now uint64) (vsr.Request, wire.Code) {
	if p.visibleNext() == 0 || offset > p.Current() {
		return vsr.Request{}, wire.CodeInvalidOffset
	}
	return vsr.Request{Operation: OpStoreOffset, User: user, WallClock: now,
		Body: EncodeStoreOffset(k, offset, false, p.cfg.ConsumerOffsetsMax)}, 0
}

// DeleteOffsetRequest admits a delete of consumer k's offset.
func (p *Partition) DeleteOffsetRequest(k OffsetKey, user uint32, now uint64) (vsr.Request, wire.Code) {
	if _, ok := p.offsets[k]; !ok {
		return vsr.Request{}, wire.CodeConsumerOffsetNotFound
	}
	return vsr.Request{Operation: OpDeleteOffset, User: user, WallClock: now, Body: EncodeDeleteOffset(k)}, 0
}

// AutoCommitRequest is the store an auto-committing poll that returned
// messages up to last makes: none (false) when the stored offset is
// already there, CodeOffsetsFull when the cap refuses the key (the
// messages are then not answered: the consumer would read them again).
func (p *Partition) AutoCommitRequest(k OffsetKey, last uint64, user uint32, now uint64) (vsr.Request, bool, wire.Code) {
	if old, ok := p.offsets[k]; ok && old >= last {
		return vsr.Request{}, false, 0
	}
	if p.OffsetsFull(k) {
		return vsr.Request{}, false, CodeOffsetsFull
	}
	return vsr.Request{Operation: OpStoreOffset, User: user, WallClock: now,
		Body: EncodeStoreOffset(k, last, true, p.cfg.ConsumerOffsetsMax)}, true, 0
}

// DeleteSegmentsRequest is the replicated DELETE_SEGMENTS of the oldest n
// sealed segments (cluster mode: every replica deletes the same
// segments; the op names the first offset to keep, so replaying it
// deletes nothing more).
func (p *Partition) DeleteSegmentsRequest(n int, user uint32, now uint64) vsr.Request {
	return vsr.Request{Operation: OpDeleteSegments, User: user, WallClock: now, Body: EncodeDeleteSegments(p.KeepFrom(n))}
}

// SendRequest is the prepare of a send: body is the verified batch in its
// stored form, owned by the request in cluster mode (the replica keeps it
// for retransmission).
func SendRequest(producer vsr.Checksum, session, request uint64, user uint32, now uint64, body []byte) vsr.Request {
	return vsr.Request{Client: producer, Session: session, Request: request,
		Operation: OpSend, User: user, WallClock: now, Body: body}
}

// Cluster reports whether the partition's group has more than one replica.
func (p *Partition) Cluster() bool { return p.cluster }
