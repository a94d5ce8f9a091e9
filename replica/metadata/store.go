package metadata

import (
	"sync"
	"sync/atomic"
)

// Store holds the current State and publishes each new one atomically.
// Readers on any goroutine (every shard) call View and work on the
// returned State without locks: it never changes. The single writer (the
// metadata replica on shard 0) calls Apply in commit order.
type Store struct {
	cur atomic.Pointer[State]
	mu  sync.Mutex // serializes writers; readers never take it
}

// NewStore returns a store publishing s (NewState() for a fresh node).
func NewStore(s *State) *Store {
	st := &Store{}
	st.cur.Store(s)
	return st
}

// View returns the latest published state.
func (st *Store) View() *State { return st.cur.Load() }

// Apply applies a committed command to the latest state and publishes the
// result before returning.
func (st *Store) Apply(m Meta, c Command) Result {
	st.mu.Lock()
	defer st.mu.Unlock()
	next, r := st.cur.Load().Apply(m, c)
	st.cur.Store(next)
	return r
}

// Advance records op as applied without changing anything else: for ops
// the metadata state machine does not interpret (session registrations),
// so that LastApplied — and a checkpoint taken right after op — names it.
func (st *Store) Advance(op uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ns := *st.cur.Load()
	ns.lastApplied = op
	st.cur.Store(&ns)
}

// Replace publishes s wholesale (checkpoint load, state transfer).
func (st *Store) Replace(s *State) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cur.Store(s)
}

// PartitionStats are the per-partition figures the owning shard keeps.
type PartitionStats struct {
	SegmentsCount uint32
	CurrentOffset uint64
	SizeBytes     uint64
	MessagesCount uint64
}

// StatsSource gives the live statistics of a partition incarnation; the
// node implements it over its shards. p.Revision identifies the
// incarnation so a reused id does not report a dead partition's figures.
type StatsSource interface {
	PartitionStats(stream, topic uint32, p Partition) PartitionStats
}

// TopicTotals sums a topic's partition sizes and message counts for the
// topic record of GET_TOPIC / GET_STREAM / GET_TOPICS.
func TopicTotals(t *Topic, src StatsSource) (sizeBytes, messagesCount uint64) {
	for _, p := range t.Partitions {
		ps := src.PartitionStats(t.StreamID, t.ID, p)
		sizeBytes += ps.SizeBytes
		messagesCount += ps.MessagesCount
	}
	return sizeBytes, messagesCount
}

// StreamTotals sums TopicTotals over a stream's topics.
func StreamTotals(st *Stream, src StatsSource) (sizeBytes, messagesCount uint64) {
	for t := range st.topics.all {
		sz, n := TopicTotals(t, src)
		sizeBytes += sz
		messagesCount += n
	}
	return sizeBytes, messagesCount
}
