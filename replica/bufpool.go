package replica

import "sync/atomic"

// stampPool recycles the buffers a replicated partition stamps committed
// batches' headers into (applySend copies each prepare body's 256-byte
// header, stamps the copy and writes the body's frames after it, so the
// replica keeps the unstamped original for retransmission). A buffer comes
// back only once its segment write has finished: nothing else references
// it then (segments copy what they index, replies carry offsets only).
//
// It belongs to one shard loop and needs no lock. Idle buffers are bounded
// by count and bytes, both from [memory_pool]: bucket_capacity buffers and
// size divided among the shards; enabled = false turns pooling off.
type stampPool struct {
	free      [][]byte
	idleBytes int
	maxCount  int
	maxBytes  int
	// stats mirror the pool for the metrics (written by the owning loop
	// only, read at scrape time).
	stats *poolStats
}

type poolStats struct {
	idleBytes, idleCount atomic.Int64
	hits, misses         atomic.Uint64
}

func newStampPool(enabled bool, sizeBytes int64, bucketCapacity, shards int) stampPool {
	if !enabled || shards < 1 || sizeBytes <= 0 || bucketCapacity <= 0 {
		return stampPool{stats: new(poolStats)}
	}
	return stampPool{maxCount: bucketCapacity, maxBytes: int(sizeBytes / int64(shards)), stats: new(poolStats)}
}

// get returns a buffer of length n, reusing the most recently returned one
// when it is large enough (a producer's batches are usually alike in size;
// a too small one is dropped for the collector).
func (sp *stampPool) get(n int) []byte {
	for len(sp.free) > 0 {
		last := len(sp.free) - 1
		b := sp.free[last]
		sp.free[last] = nil
		sp.free = sp.free[:last]
		sp.idleBytes -= cap(b)
		sp.stats.idleBytes.Store(int64(sp.idleBytes))
		sp.stats.idleCount.Store(int64(len(sp.free)))
		if cap(b) >= n {
			sp.stats.hits.Add(1)
			return b[:n]
		}
	}
	sp.stats.misses.Add(1)
	return make([]byte, n)
}

// put offers b back; it is dropped when the pool is off or full.
func (sp *stampPool) put(b []byte) {
	if b == nil || len(sp.free) >= sp.maxCount || sp.idleBytes+cap(b) > sp.maxBytes {
		return
	}
	sp.free = append(sp.free, b[:0])
	sp.idleBytes += cap(b)
	sp.stats.idleBytes.Store(int64(sp.idleBytes))
	sp.stats.idleCount.Store(int64(len(sp.free)))
}

// Get and Put make the pool a partition.Buffers (the shard's write
// pipeline stamps into it).
func (sp *stampPool) Get(n int) []byte { return sp.get(n) }
func (sp *stampPool) Put(b []byte)     { sp.put(b) }
