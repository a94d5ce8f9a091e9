// Package longpoll parks polls that found nothing until the partition they
// read makes messages past their offset visible, or their deadline passes.
//
// A Hub belongs to one node. Each partition replica the node hosts has a
// Feed, opened by its owning shard when the partition opens and closed
// when it closes. The shard calls Feed.Publish with the partition's
// visible end (the offset after the last message a poll can read) every
// time it publishes the partition's figures, which it does right after
// the segment write of committed, applied batches: on a primary and on
// every backup alike, so a poll served by a backup waits for that backup's
// own commit. Publish never blocks on a waiter: it stores the end, and
// only when waiters are registered takes the feed's short mutex and sends
// on each woken waiter's one-slot channel without waiting.
//
// A connection goroutine holds a Waiter. Its poll ran on the owning shard
// and came back empty together with the offset it needs (the poll is
// non-empty once the visible end passes it). It registers that need on one
// feed, or on several (a consumer-group poll without a partition waits on
// every partition the member owns), and blocks on the waiter's channel, a
// deadline timer and the node's stop channel. Registration checks the
// visible end after it is listed and Publish checks for listed waiters
// after it stores the end (both sequentially consistent atomics), so a
// publish that races a registration is seen by one of them: no wake-up is
// lost. A woken connection polls again through the shard like any poll;
// nothing here reads messages.
//
// Waiting polls are bounded twice: Limits.Node on the node and
// Limits.Conn per Slots (a binary connection has one request in flight, so
// it never holds more than one; a session serving concurrent requests over
// several connections shares one Slots). Acquire refuses what does not
// fit and the caller answers with an Iggy code.
//
// Latency: Publish stamps the wall-clock time of the wake-up into each
// waiter it wakes; Delivered, called by the connection once the reply is
// written, records the time from that publish to the written reply in a
// histogram (Stats).
package longpoll

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Limits bounds waiting polls.
type Limits struct {
	// Node is the most polls waiting on the node at once; 0 refuses every
	// wait.
	Node int
	// Conn is the most one Slots may hold at once.
	Conn int
}

// Hub is a node's registry of feeds and waiting polls. Safe for
// concurrent use.
type Hub struct {
	limits  Limits
	feeds   sync.Map // uint64 namespace → *Feed
	waiting atomic.Int64

	waits   atomic.Uint64 // slots granted
	refused atomic.Uint64 // slots refused
	woken   atomic.Uint64 // wake-ups by a publish or a closing feed
	expired atomic.Uint64 // waits that reached their deadline

	mu  sync.Mutex
	lat *hdrhistogram.Histogram // µs from publish to written reply
}

// New returns a hub with the given limits.
func New(l Limits) *Hub {
	return &Hub{limits: l, lat: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

// Enabled reports whether any poll may wait.
func (h *Hub) Enabled() bool { return h.limits.Node > 0 && h.limits.Conn > 0 }

// Feed is one partition replica's visible end, written by its owning
// shard and read by waiting connections.
type Feed struct {
	hub     *Hub
	ns, rev uint64
	visible atomic.Uint64
	nwait   atomic.Int32

	mu     sync.Mutex
	regs   []reg
	closed bool
}

type reg struct {
	w     *Waiter
	after uint64
}

// Open returns the feed of the partition with namespace ns and revision
// rev, replacing a feed the namespace had (which its shard must have
// closed).
func (h *Hub) Open(ns, rev uint64) *Feed {
	f := &Feed{hub: h, ns: ns, rev: rev}
	h.feeds.Store(ns, f)
	return f
}

// Publish records that messages below end are visible and wakes every
// waiter that needs an offset below it. It never waits on a waiter.
func (f *Feed) Publish(end uint64) {
	if f == nil {
		return
	}
	for {
		cur := f.visible.Load()
		if end <= cur {
			return
		}
		if f.visible.CompareAndSwap(cur, end) {
			break
		}
	}
	if f.nwait.Load() == 0 {
		return
	}
	now := time.Now().UnixNano()
	f.mu.Lock()
	kept := f.regs[:0]
	for _, r := range f.regs {
		if end > r.after {
			r.w.fire(now)
			continue
		}
		kept = append(kept, r)
	}
	clear(f.regs[len(kept):])
	f.regs = kept
	f.nwait.Store(int32(len(kept)))
	f.mu.Unlock()
}

// Close wakes every waiter (their next poll finds the partition gone or
// reopened) and removes the feed from the hub.
func (f *Feed) Close() {
	if f == nil {
		return
	}
	f.hub.feeds.CompareAndDelete(f.ns, f)
	now := time.Now().UnixNano()
	f.mu.Lock()
	f.closed = true
	for _, r := range f.regs {
		r.w.fire(now)
	}
	clear(f.regs)
	f.regs = nil
	f.nwait.Store(0)
	f.mu.Unlock()
}

// Visible is the last end published.
func (f *Feed) Visible() uint64 { return f.visible.Load() }

// register lists w as needing an offset at or above after; it reports
// false (and lists nothing) when that is visible already or the feed is
// closed.
func (f *Feed) register(w *Waiter, after uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.regs = append(f.regs, reg{w: w, after: after})
	f.nwait.Store(int32(len(f.regs)))
	if f.visible.Load() > after {
		f.regs = f.regs[:len(f.regs)-1]
		f.nwait.Store(int32(len(f.regs)))
		return false
	}
	return true
}

func (f *Feed) unregister(w *Waiter) {
	if f.nwait.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.regs {
		if r.w == w {
			last := len(f.regs) - 1
			f.regs[i] = f.regs[last]
			f.regs[last] = reg{}
			f.regs = f.regs[:last]
			f.nwait.Store(int32(len(f.regs)))
			return
		}
	}
}

// Slots counts the waiting polls of one connection (or of one session's
// connections).
type Slots struct{ n atomic.Int32 }

// Held is how many waits the slots hold now.
func (s *Slots) Held() int { return int(s.n.Load()) }

// Acquire takes a waiting slot of s and of the node; false when either is
// full (or waits are off), counted as refused.
func (h *Hub) Acquire(s *Slots) bool {
	if !h.Enabled() {
		h.refused.Add(1)
		return false
	}
	if int(s.n.Add(1)) > h.limits.Conn {
		s.n.Add(-1)
		h.refused.Add(1)
		return false
	}
	if h.waiting.Add(1) > int64(h.limits.Node) {
		h.waiting.Add(-1)
		s.n.Add(-1)
		h.refused.Add(1)
		return false
	}
	h.waits.Add(1)
	return true
}

// Release returns a slot Acquire granted.
func (h *Hub) Release(s *Slots) {
	if s.n.Add(-1) < 0 {
		panic("longpoll: Release without Acquire")
	}
	h.waiting.Add(-1)
}

// Target is one feed a poll waits on: the partition's namespace and
// revision, and the offset its poll needs (it wakes once the visible end
// is above After).
type Target struct {
	NS, Rev uint64
	After   uint64
}

// Outcome says why Wait returned.
type Outcome uint8

// Outcomes.
const (
	Woken     Outcome = iota + 1 // a publish passed a target, or a target's feed is gone
	Deadline                     // the deadline passed
	Stopped                      // stop was closed
	Cancelled                    // cancel was closed (the requester went away)
)

// Waiter parks one connection's poll. Not safe for concurrent use: one
// goroutine waits on it at a time.
type Waiter struct {
	hub   *Hub
	ch    chan struct{}
	fired atomic.Int64 // unix ns of the publish that woke it; 0 none
	at    atomic.Int64 // fired value of the last wake-up, for Delivered
	feeds []*Feed
	timer *time.Timer
}

// NewWaiter returns a waiter of h.
func (h *Hub) NewWaiter() *Waiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Waiter{hub: h, ch: make(chan struct{}, 1), timer: t}
}

func (w *Waiter) fire(now int64) {
	w.fired.CompareAndSwap(0, now)
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Wait registers the targets and blocks until one of them is passed (or
// its feed is gone), the deadline passes, stop is closed (the node stops)
// or cancel is closed (nil: never). A target whose feed does not exist, or
// whose revision differs, wakes at once: the next poll reports what
// happened to the partition.
func (w *Waiter) Wait(targets []Target, deadline time.Time, stop, cancel <-chan struct{}) Outcome {
	w.fired.Store(0)
	select {
	case <-w.ch:
	default:
	}
	now := time.Now().UnixNano()
	immediate := false
	for _, t := range targets {
		v, ok := w.hub.feeds.Load(t.NS)
		f, _ := v.(*Feed)
		if !ok || f.rev != t.Rev || !f.register(w, t.After) {
			immediate = true
			break
		}
		w.feeds = append(w.feeds, f)
	}
	out := Woken
	if immediate {
		w.fired.CompareAndSwap(0, now)
	} else {
		d := time.Until(deadline)
		if d <= 0 {
			out = Deadline
		} else {
			w.timer.Reset(d)
			select {
			case <-w.ch:
			case <-w.timer.C:
				out = Deadline
			case <-stop:
				out = Stopped
			case <-cancel:
				out = Cancelled
			}
			w.timer.Stop()
		}
	}
	for i, f := range w.feeds {
		f.unregister(w)
		w.feeds[i] = nil
	}
	w.feeds = w.feeds[:0]
	if out == Deadline && w.fired.Load() != 0 {
		out = Woken // a publish and the deadline raced; the publish counts
	}
	switch out {
	case Woken:
		w.hub.woken.Add(1)
		w.at.Store(w.fired.Load())
	case Deadline:
		w.hub.expired.Add(1)
	}
	return out
}

// Delivered records, after the reply to a woken poll was written, the time
// since the publish that woke it. Call it once per reply; a reply after a
// deadline or without a wake-up records nothing.
func (w *Waiter) Delivered() {
	at := w.at.Swap(0)
	if at == 0 {
		return
	}
	us := (time.Now().UnixNano() - at) / 1e3
	w.hub.mu.Lock()
	_ = w.hub.lat.RecordValue(max(us, 1))
	w.hub.mu.Unlock()
}

// Forget drops a pending wake-up time (the poll after it found nothing
// and waits again, or answered with an error).
func (w *Waiter) Forget() { w.at.Store(0) }

// Stats are the hub's counters and its publish-to-delivery latency.
type Stats struct {
	Waiting  int64  // polls holding a slot now
	Waits    uint64 // slots granted
	Refused  uint64 // slots refused
	Woken    uint64 // wake-ups
	Expired  uint64 // deadlines reached
	Delivers int64  // replies after a wake-up recorded in the histogram
	// Publish-to-written-reply latency of woken polls.
	P50, P99, Max time.Duration
}

// Stats returns a snapshot.
func (h *Hub) Stats() Stats {
	s := Stats{Waiting: h.waiting.Load(), Waits: h.waits.Load(), Refused: h.refused.Load(),
		Woken: h.woken.Load(), Expired: h.expired.Load()}
	h.mu.Lock()
	s.Delivers = h.lat.TotalCount()
	if s.Delivers > 0 {
		s.P50 = time.Duration(h.lat.ValueAtQuantile(50)) * time.Microsecond
		s.P99 = time.Duration(h.lat.ValueAtQuantile(99)) * time.Microsecond
		s.Max = time.Duration(h.lat.Max()) * time.Microsecond
	}
	h.mu.Unlock()
	return s
}
