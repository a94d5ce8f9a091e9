package check

import (
	"testing"

	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

func offArgs(consumer string, part uint32) history.Value {
	return history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(part), Consumer: consumer}
}

func (b *builder) store(p, node int, consumer string, part uint32, v uint64, outcome history.Type) {
	a := offArgs(consumer, part)
	a.Offset = history.U64(v)
	b.invoke(p, history.StoreOffset, a)
	switch outcome {
	case history.OK:
		b.ok(p, history.StoreOffset, node, history.Value{})
	case history.Fail:
		b.fail(p, history.StoreOffset, int(wire.CodeInvalidOffset))
	default:
		b.info(p, history.StoreOffset)
	}
}

func (b *builder) getOffset(p, node int, consumer string, part uint32, v int64) {
	b.invoke(p, history.GetOffset, offArgs(consumer, part))
	res := history.Value{}
	if v >= 0 {
		res.Offset = history.U64(uint64(v))
	}
	b.ok(p, history.GetOffset, node, res)
}

// pollNext records a next-strategy poll returning offsets [from, from+n).
func (b *builder) pollNext(p, node int, consumer string, part uint32, from uint64, n int, auto bool) {
	a := offArgs(consumer, part)
	a.Strategy, a.Count, a.AutoCommit = "next", 10, auto
	b.invoke(p, history.Poll, a)
	var read []history.Obs
	for i := 0; i < n; i++ {
		read = append(read, history.Obs{Offset: from + uint64(i), ID: id(9, from+uint64(i), 1)})
	}
	b.ok(p, history.Poll, node, history.Value{Partition: history.U32(part), Read: read})
}

// offsetsOnly is meta for histories without sends: corrupt/final-read
// checks are off because no partitions are declared and reads name ids
// that only the offsets check looks at.
func offsetsMeta(strict bool) history.Meta {
	m := meta(1, 0)
	m.Checks.StrictReads = strict
	return m
}

func runOffsets(t *testing.T, b *builder, strict bool) *Result {
	t.Helper()
	r := Check(offsetsMeta(strict), b.events, Options{})
	// Polls in these histories read ids no producer sent; only the
	// offsets checks matter here.
	delete(r.Counts, Corrupt)
	r.Valid = true
	for _, n := range r.Counts {
		if n > 0 {
			r.Valid = false
		}
	}
	return r
}

func TestOffsetsMonotonicValid(t *testing.T) {
	b := &builder{}
	b.getOffset(0, 0, "c:1", 0, -1)
	b.store(0, 0, "c:1", 0, 4, history.OK)
	b.getOffset(0, 0, "c:1", 0, 4)
	b.pollNext(0, 0, "c:1", 0, 5, 3, true) // reads 4, stores 7
	b.getOffset(1, 0, "c:1", 0, 7)
	b.store(1, 0, "c:1", 0, 2, history.OK) // explicit rewind
	b.getOffset(0, 0, "c:1", 0, 2)
	b.pollNext(0, 0, "c:1", 0, 3, 1, false)
	expect(t, runOffsets(t, b, true))
}

func TestOffsetRegress(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(0, 0, "c:1", 0, 10)
	b.getOffset(1, 0, "c:1", 0, 5)
	expect(t, runOffsets(t, b, false), OffsetRegress)
	expect(t, runOffsets(t, b, true), OffsetRegress, OffsetLinearizable)
}

func TestOffsetLostAfterRestart(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "g:g", 1, 3, history.OK)
	b.getOffset(0, 0, "g:g", 1, 3)
	b.pollNext(0, 0, "g:g", 1, 0, 2, false) // nothing stored any more
	expect(t, runOffsets(t, b, false), OffsetRegress)
}

func TestOffsetRegressExplainedByConcurrentStore(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(1, 0, "c:1", 0, 10)
	// A store of 5 is in flight while the second read runs.
	a := offArgs("c:1", 0)
	a.Offset = history.U64(5)
	b.invoke(2, history.StoreOffset, a)
	b.getOffset(1, 0, "c:1", 0, 5)
	b.ok(2, history.StoreOffset, 0, history.Value{})
	expect(t, runOffsets(t, b, true))
}

func TestOffsetRegressExplainedByUnknownStore(t *testing.T) {
	b := &builder{}
	b.store(2, 0, "c:1", 0, 5, history.Info) // may land any time later
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(1, 0, "c:1", 0, 10)
	b.getOffset(1, 0, "c:1", 0, 5)
	expect(t, runOffsets(t, b, true))
}

func TestFailedStoreDoesNotExplain(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(1, 0, "c:1", 0, 10)
	b.store(2, 0, "c:1", 0, 5, history.Fail)
	b.getOffset(1, 0, "c:1", 0, 5)
	expect(t, runOffsets(t, b, true), OffsetRegress, OffsetLinearizable)
}

func TestUnknownAutoCommitPollIsAWildcard(t *testing.T) {
	b := &builder{}
	a := offArgs("c:1", 0)
	a.Strategy, a.AutoCommit = "next", true
	b.invoke(2, history.Poll, a)
	b.info(2, history.Poll)
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(1, 0, "c:1", 0, 10)
	b.getOffset(1, 0, "c:1", 0, 6) // the lost poll's commit landed late
	expect(t, runOffsets(t, b, true))
}

func TestStaleFollowerReadsOnlyFlaggedWhenStrict(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(1, 0, "c:1", 0, 10)
	b.getOffset(1, 1, "c:1", 0, 4) // another node, lagging
	b.store(3, 0, "c:1", 0, 4, history.OK)
	expect(t, runOffsets(t, b, false))
	expect(t, runOffsets(t, b, true), OffsetRegress, OffsetLinearizable)
}

func TestKeysAreIndependent(t *testing.T) {
	b := &builder{}
	b.store(0, 0, "c:1", 0, 10, history.OK)
	b.getOffset(0, 0, "c:1", 0, 10)
	b.getOffset(0, 0, "c:1", 1, -1)
	b.getOffset(0, 0, "c:2", 0, -1)
	expect(t, runOffsets(t, b, true))
}
