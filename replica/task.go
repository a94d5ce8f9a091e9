package replica

import (
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// task is one unit of work for a shard loop: a request (one type per kind
// of work, below), the result the shard fills, and how its sender learns
// that it finished.
//
// A connection owns one task and reuses it for every request it forwards
// (it waits for the answer before reading the next frame); its request
// values are preallocated in connRequests, so forwarding allocates nothing.
// Internal tasks (a metadata effect, a system command, a forwarded request,
// a partition's own op) are allocated by their sender.
type task struct {
	// req is what the shard is asked to do. Nil for a task that is only a
	// consensus.Waiter, submitted straight to a group (a forwarded request,
	// a partition's own op).
	req request
	result

	// done wakes the connection that owns the task; then is an internal
	// task's callback, run on the shard goroutine (it may submit more
	// work). A task with neither is not waited for. finish picks.
	done chan struct{}
	then func(*task)
	// early finishes the task as soon as it completes instead of after the
	// iteration's storage work (shardLoop.complete). Set only where nothing
	// that work writes references the task's buffers: a clustered send,
	// whose body the shard copied before submitting it, and a forwarded
	// request's reply to the backup that forwarded it. Its reply then
	// does not wait for the segment write of the op it answers.
	early bool
}

// result is what the shard answers a task with.
type result struct {
	status  uint32 // non-zero: an Iggy code for the reply's status field
	vstatus vsr.Status
	evict   vsr.EvictionReason
	op      uint64
	reply   []byte
	poll    pollResult // a poll's records, a consumer offset
}

// fail records a non-zero Iggy code for the reply's status field.
func (t *task) fail(code uint32) { t.status = code }

// SetCode implements consensus.Waiter.
func (t *task) SetCode(code uint32) { t.status = code }

// SetReply implements consensus.Waiter.
func (t *task) SetReply(rp vsr.Reply) {
	t.vstatus, t.evict, t.op, t.reply = rp.Status, rp.Eviction, rp.Op, rp.Body
}

func (t *task) resetResult() {
	t.status, t.vstatus, t.evict, t.op, t.reply = 0, 0, 0, 0, nil
	t.early = false
	t.poll.Reset()
}

// waited reports whether anyone waits for the task to finish.
func (t *task) waited() bool { return t.done != nil || t.then != nil }

// internal reports whether the task completes with a callback on the shard
// goroutine rather than by waking a connection.
func (t *task) internal() bool { return t.then != nil }

// finish completes the task: the connection waiting on it wakes, or the
// internal callback runs. The shard calls it for every finished task
// (shardLoop.complete queues them until the iteration's storage work is
// done).
func (t *task) finish() {
	switch {
	case t.then != nil:
		t.then(t)
	case t.done != nil:
		t.done <- struct{}{}
	}
}

// request is what a task asks of a shard; shardLoop.dispatch switches on
// its type.
type request interface{ isRequest() }

// partRef names the partition incarnation a request is for.
type partRef struct {
	ns  shard.Namespace
	rev uint64
}

// Requests a connection sends to the shard owning the partition.

// sendReq appends a verified batch.
type sendReq struct {
	partRef
	user uint32
	// body is the batch in its stored form: it aliases the connection's
	// read buffer or its encoding buffer, unless owned (a fresh allocation
	// nothing else references).
	body  []byte
	owned bool
	// producer is the producer identity (zero: none, at-least-once), the
	// key of the partition's producer table; session and request number
	// its sends.
	producer         vsr.Checksum
	session, request uint64
}

// storeOffsetReq stores a consumer offset.
type storeOffsetReq struct {
	partRef
	user   uint32
	key    offsetKey
	offset uint64
}

// deleteOffsetReq deletes a consumer offset.
type deleteOffsetReq struct {
	partRef
	user uint32
	key  offsetKey
}

// getOffsetReq reads a consumer offset (into result.poll).
type getOffsetReq struct {
	partRef
	key offsetKey
}

// pollReq polls messages (into result.poll), storing the consumer's offset
// when auto.
type pollReq struct {
	partRef
	user     uint32
	key      offsetKey
	strategy wire.PollingStrategy
	count    uint32
	auto     bool
	// buf is the connection's read buffer for the records, kept across
	// polls.
	buf []byte
}

// deleteSegmentsReq deletes a partition's oldest sealed segments.
type deleteSegmentsReq struct {
	partRef
	user  uint32
	count uint32
}

// Requests for shard 0, which runs the metadata group.

// metaReq is a request for the metadata replica.
type metaReq struct{ req vsr.Request }

// systemReq queues a system command (run on the node's own session).
type systemReq struct{ cmd metadata.Command }

// Work the node hands a shard.

// adoptConnReq hands a connection over to the shard that serves it.
type adoptConnReq struct{ conn *conn }

// openPartitionReq creates or opens a partition.
type openPartitionReq struct{ spec partitionSpec }

// deletePartitionReq deletes a partition.
type deletePartitionReq struct{ partRef }

// purgePartitionReq purges a partition to generation gen.
type purgePartitionReq struct {
	partRef
	gen uint64
}

// groupDeletedReq drops a deleted consumer group's offsets.
type groupDeletedReq struct {
	partRef
	group uint32
}

// cleanReq runs a retention pass over the shard's partitions.
type cleanReq struct{}

// frameReq is a replica-plane frame for a group of the shard.
type frameReq struct {
	from uint8
	msg  vsr.Message
}

func (*sendReq) isRequest()            {}
func (*storeOffsetReq) isRequest()     {}
func (*deleteOffsetReq) isRequest()    {}
func (*getOffsetReq) isRequest()       {}
func (*pollReq) isRequest()            {}
func (*deleteSegmentsReq) isRequest()  {}
func (*metaReq) isRequest()            {}
func (*systemReq) isRequest()          {}
func (*adoptConnReq) isRequest()       {}
func (*openPartitionReq) isRequest()   {}
func (*deletePartitionReq) isRequest() {}
func (*purgePartitionReq) isRequest()  {}
func (*groupDeletedReq) isRequest()    {}
func (*cleanReq) isRequest()           {}
func (*frameReq) isRequest()           {}

// connRequests are a connection's preallocated request values: the task
// points at one of them per request.
type connRequests struct {
	send           sendReq
	storeOffset    storeOffsetReq
	deleteOffset   deleteOffsetReq
	getOffset      getOffsetReq
	poll           pollReq
	deleteSegments deleteSegmentsReq
	meta           metaReq
	system         systemReq
}
