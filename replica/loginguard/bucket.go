package loginguard

import (
	"sync"
	"time"
)

// bucket is a token bucket whose tokens may go negative (debt). It is
// written here rather than taken from golang.org/x/time/rate because an
// attempt's tokens must be given back after the fact when it succeeds,
// which rate.Reservation.Cancel no longer does once the reservation's time
// has passed.
type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b up to now.
func (b *bucket) refill(now time.Time, burst float64, every time.Duration) {
	if now.After(b.at) {
		b.tokens = min(burst, b.tokens+float64(now.Sub(b.at))/float64(every))
		b.at = now
	}
}

// buckets is a bounded table of buckets keyed by K.
type buckets[K comparable] struct {
	burst float64
	every time.Duration
	max   int

	mu        sync.Mutex
	m         map[K]*bucket
	overflow  bucket
	lastPrune time.Time
}

func newBuckets[K comparable](burst int, every time.Duration, maxEntries int) *buckets[K] {
	return &buckets[K]{burst: float64(burst), every: every, max: maxEntries, m: map[K]*bucket{},
		overflow: bucket{tokens: float64(burst)}}
}

// get returns k's bucket, creating it full; mu held.
func (bs *buckets[K]) get(k K, now time.Time) *bucket {
	if b := bs.m[k]; b != nil {
		return b
	}
	if len(bs.m) >= bs.max && now.Sub(bs.lastPrune) >= time.Second {
		bs.lastPrune = now
		for key, b := range bs.m {
			b.refill(now, bs.burst, bs.every)
			if b.tokens >= bs.burst {
				delete(bs.m, key)
			}
		}
	}
	if len(bs.m) >= bs.max {
		return &bs.overflow
	}
	b := &bucket{tokens: bs.burst, at: now}
	bs.m[k] = b
	return b
}

// take takes one token of k's bucket and returns how long until its debt
// (if any) is paid.
func (bs *buckets[K]) take(k K, now time.Time) time.Duration {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.get(k, now)
	b.refill(now, bs.burst, bs.every)
	b.tokens--
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens * float64(bs.every))
}

// give gives one token back to k's bucket.
func (bs *buckets[K]) give(k K, now time.Time) {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.get(k, now)
	b.refill(now, bs.burst, bs.every)
	b.tokens = min(bs.burst, b.tokens+1)
}

// depleted reports whether k's bucket holds less than a full burst: the
// key failed recently (successes give their tokens back).
func (bs *buckets[K]) depleted(k K, now time.Time) bool {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	b := bs.m[k]
	if b == nil {
		return false
	}
	b.refill(now, bs.burst, bs.every)
	return b.tokens < bs.burst
}

func (bs *buckets[K]) len() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.m)
}
