package intake

import (
	"fmt"
	"sync/atomic"
)

// Budget is a node-wide count of bytes with a limit. Acquire and Release
// are lock-free and safe from any goroutine.
type Budget struct {
	key   string
	limit int64
	used  atomic.Int64
}

// NewBudget makes a budget of limit bytes; key is the configuration key
// that sets it, named in refusals. A limit <= 0 never refuses.
func NewBudget(key string, limit int64) *Budget {
	return &Budget{key: key, limit: limit}
}

// Key is the configuration key of the budget.
func (b *Budget) Key() string { return b.key }

// Limit is the budget's size in bytes (<= 0: unlimited).
func (b *Budget) Limit() int64 { return b.limit }

// Used is what is taken now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Acquire takes n bytes, or reports false and takes nothing when they do
// not fit.
func (b *Budget) Acquire(n int64) bool {
	if n < 0 {
		panic(fmt.Sprintf("intake: %s: acquiring %d bytes", b.key, n))
	}
	if b.limit <= 0 {
		b.used.Add(n)
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Release gives back n bytes taken before.
func (b *Budget) Release(n int64) {
	if n == 0 {
		return
	}
	if v := b.used.Add(-n); v < 0 || n < 0 {
		panic(fmt.Sprintf("intake: %s: released %d bytes, leaving %d", b.key, n, v))
	}
}
