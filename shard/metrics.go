package shard

import "sync/atomic"

// counters are plain atomics; exposition (Prometheus) is layered on later by
// reading Stats. Sender-side and loop-side counters sit on separate cache
// lines so producers on other cores do not bounce the loop's line.
type counters struct {
	// written by senders
	accepted           atomic.Uint64
	refused            atomic.Uint64
	refusedStopped     atomic.Uint64
	tickWakesCoalesced atomic.Uint64
	_                  [64]byte
	// written by the loop
	processed  atomic.Uint64
	iterations atomic.Uint64
	ticks      atomic.Uint64
	maxBatch   atomic.Uint64
	abandoned  atomic.Uint64
}

// Stats is a snapshot of one shard's counters.
type Stats struct {
	Shard int
	CPU   int
	// Accepted counts messages queued; Processed those a handler has
	// finished (Handle returned).
	Accepted  uint64
	Processed uint64
	// Refused counts TrySend calls refused because the inbox was full;
	// RefusedStopped those refused after stop.
	Refused        uint64
	RefusedStopped uint64
	// Iterations counts loop passes that ran the handler.
	Iterations uint64
	// Ticks counts ticks delivered to the handler; TickWakesCoalesced
	// counts ticks that found a wake-up already pending and merged into it.
	Ticks              uint64
	TickWakesCoalesced uint64
	// MaxBatch is the largest number of messages one iteration carried.
	MaxBatch uint64
	// Abandoned is the number of messages handed to Handler.Close at stop.
	Abandoned uint64
	// Queued is the inbox's current length.
	Queued int
}

// Stats snapshots the shard's counters. Counters are read one by one, so a
// snapshot taken under load is not a single instant.
func (s *Shard[M]) Stats() Stats {
	c := &s.stats
	return Stats{
		Shard:              s.id,
		CPU:                s.cpu,
		Accepted:           c.accepted.Load(),
		Processed:          c.processed.Load(),
		Refused:            c.refused.Load(),
		RefusedStopped:     c.refusedStopped.Load(),
		Iterations:         c.iterations.Load(),
		Ticks:              c.ticks.Load(),
		TickWakesCoalesced: c.tickWakesCoalesced.Load(),
		MaxBatch:           c.maxBatch.Load(),
		Abandoned:          c.abandoned.Load(),
		Queued:             len(s.main),
	}
}
