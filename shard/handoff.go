package shard

import (
	"fmt"
	"sync/atomic"
)

// RoundRobin picks the shard that takes over a newly accepted connection.
// Shard 0 accepts every connection (it binds all listeners) and immediately
// hands each to the next shard in turn, before reading a byte, so that
// connection work spreads over all cores.
//
// With skipZero set and more than one shard, shard 0 is left out: it already
// carries the listeners and the metadata group. The server builds one
// chooser, for client connections (cluster.coordinator.
// skip_shard_zero_for_clients, default false: client connections are short
// and benefit from every core); replica links are served by the replica
// plane, not handed to shards. With a single shard, everything lands on
// shard 0 regardless.
type RoundRobin struct {
	next   atomic.Uint64
	first  int
	shards int
}

// NewRoundRobin returns a chooser over shardCount shards.
func NewRoundRobin(shardCount int, skipZero bool) *RoundRobin {
	if shardCount < 1 {
		panic(fmt.Sprintf("shard: NewRoundRobin with %d shards", shardCount))
	}
	r := &RoundRobin{shards: shardCount}
	if skipZero && shardCount > 1 {
		r.first = 1
	}
	return r
}

// Next returns the next target shard. Safe for concurrent use.
func (r *RoundRobin) Next() int {
	span := uint64(r.shards - r.first)
	return r.first + int((r.next.Add(1)-1)%span)
}
