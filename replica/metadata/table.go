package metadata

import "slices"

// table maps dense ids to shared, immutable records with copy-on-write
// updates. It is a two-level array: a write copies the chunk directory
// (one pointer per 256 ids) and one 256-slot chunk, not the whole id range,
// so a change to one stream out of a million copies ~34 KiB instead of
// 8 MiB. The zero value is empty.
type table[T any] struct {
	chunks []*tchunk[T]
	gen    uint64 // transaction that owns chunks (see txn.go)
	size   uint32 // highest live id + 1
	live   uint32
}

const (
	chunkBits = 8
	chunkSize = 1 << chunkBits
)

type tchunk[T any] struct {
	gen   uint64
	live  uint32
	items [chunkSize]*T
}

// get returns the record with id, or nil.
func (t *table[T]) get(id uint32) *T {
	c := id >> chunkBits
	if uint64(c) >= uint64(len(t.chunks)) {
		return nil
	}
	return t.chunks[c].items[id&(chunkSize-1)]
}

// lowestFree returns the lowest id without a record (Iggy's slab rule).
func (t *table[T]) lowestFree() uint32 {
	for ci, c := range t.chunks {
		if c.live == chunkSize {
			continue
		}
		for i, p := range c.items {
			if p == nil {
				return uint32(ci)<<chunkBits | uint32(i)
			}
		}
	}
	return uint32(len(t.chunks)) << chunkBits
}

// set stores v (nil deletes) under id on behalf of transaction gen,
// copying the directory and the chunk first unless gen already owns them.
func (t *table[T]) set(gen uint64, id uint32, v *T) {
	ci := int(id >> chunkBits)
	if v == nil && t.get(id) == nil {
		return // deleting nothing must not grow the directory
	}
	if t.gen != gen {
		t.chunks = slices.Clone(t.chunks)
		t.gen = gen
	}
	for len(t.chunks) <= ci {
		t.chunks = append(t.chunks, &tchunk[T]{gen: gen})
	}
	c := t.chunks[ci]
	if c.gen != gen {
		cp := *c
		cp.gen = gen
		c = &cp
		t.chunks[ci] = c
	}
	slot := &c.items[id&(chunkSize-1)]
	switch {
	case *slot == nil && v != nil:
		c.live++
		t.live++
	case *slot != nil && v == nil:
		c.live--
		t.live--
	}
	*slot = v
	if v != nil && id >= t.size {
		t.size = id + 1
	}
	if v == nil && id+1 == t.size {
		for t.size > 0 && t.get(t.size-1) == nil {
			t.size--
		}
		// Drop empty trailing chunks so a restored table (built from live
		// ids only) and a live one have the same shape.
		for len(t.chunks) > 0 && t.chunks[len(t.chunks)-1].live == 0 {
			t.chunks = t.chunks[:len(t.chunks)-1]
		}
	}
}

// all yields the records in ascending id order.
func (t *table[T]) all(yield func(*T) bool) {
	for _, c := range t.chunks {
		if c.live == 0 {
			continue
		}
		for _, p := range c.items {
			if p != nil && !yield(p) {
				return
			}
		}
	}
}
