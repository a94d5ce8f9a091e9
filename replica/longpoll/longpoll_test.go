package longpoll

import (
	"sync"
	"testing"
	"time"
)

const long = 30 * time.Second

func wait(t *testing.T, w *Waiter, targets []Target, deadline time.Time) <-chan Outcome {
	t.Helper()
	out := make(chan Outcome, 1)
	go func() { out <- w.Wait(targets, deadline, nil, nil) }()
	return out
}

// parked waits until f lists n waiters.
func parked(t *testing.T, f *Feed, n int) {
	t.Helper()
	for end := time.Now().Add(long); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if int(f.nwait.Load()) == n {
			return
		}
	}
	t.Fatalf("feed lists %d waiters, want %d", f.nwait.Load(), n)
}

func TestPublishPastTheNeedWakes(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	f := h.Open(7, 1)
	f.Publish(10)
	w := h.NewWaiter()
	out := wait(t, w, []Target{{NS: 7, Rev: 1, After: 10}}, time.Now().Add(long))
	parked(t, f, 1)
	f.Publish(10) // not past the need: nothing
	select {
	case o := <-out:
		t.Fatalf("woke with %v before the end passed the need", o)
	case <-time.After(20 * time.Millisecond):
	}
	f.Publish(11)
	if o := <-out; o != Woken {
		t.Fatalf("outcome %v, want Woken", o)
	}
	if f.nwait.Load() != 0 {
		t.Fatalf("woken waiter still listed")
	}
	w.Delivered()
	if s := h.Stats(); s.Woken != 1 || s.Delivers != 1 || s.Max <= 0 {
		t.Fatalf("stats %+v, want one wake-up and one delivery with a latency", s)
	}
}

func TestAlreadyVisibleReturnsAtOnce(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	f := h.Open(7, 1)
	f.Publish(5)
	w := h.NewWaiter()
	if o := w.Wait([]Target{{NS: 7, Rev: 1, After: 4}}, time.Now().Add(long), nil, nil); o != Woken {
		t.Fatalf("outcome %v, want Woken: offset 4 is visible", o)
	}
	if f.nwait.Load() != 0 {
		t.Fatal("an immediate wake-up left a registration behind")
	}
}

func TestDeadline(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	f := h.Open(7, 1)
	w := h.NewWaiter()
	start := time.Now()
	if o := w.Wait([]Target{{NS: 7, Rev: 1, After: 0}}, start.Add(30*time.Millisecond), nil, nil); o != Deadline {
		t.Fatalf("outcome %v, want Deadline", o)
	}
	if time.Since(start) < 30*time.Millisecond {
		t.Fatal("returned before the deadline")
	}
	if f.nwait.Load() != 0 {
		t.Fatal("expired waiter still listed")
	}
	w.Delivered() // no wake-up: nothing recorded
	if s := h.Stats(); s.Expired != 1 || s.Delivers != 0 {
		t.Fatalf("stats %+v", s)
	}
	if o := w.Wait([]Target{{NS: 7, Rev: 1}}, time.Now().Add(-time.Second), nil, nil); o != Deadline {
		t.Fatalf("past deadline: outcome %v", o)
	}
}

func TestStop(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	h.Open(7, 1)
	w := h.NewWaiter()
	stop := make(chan struct{})
	out := make(chan Outcome, 1)
	go func() { out <- w.Wait([]Target{{NS: 7, Rev: 1}}, time.Now().Add(long), stop, nil) }()
	close(stop)
	if o := <-out; o != Stopped {
		t.Fatalf("outcome %v, want Stopped", o)
	}
	cancel := make(chan struct{})
	close(cancel)
	if o := w.Wait([]Target{{NS: 7, Rev: 1}}, time.Now().Add(long), nil, cancel); o != Cancelled {
		t.Fatalf("outcome %v, want Cancelled", o)
	}
}

func TestClosedOrReplacedFeedWakes(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	f := h.Open(7, 1)
	w := h.NewWaiter()
	out := wait(t, w, []Target{{NS: 7, Rev: 1}}, time.Now().Add(long))
	parked(t, f, 1)
	f.Close()
	if o := <-out; o != Woken {
		t.Fatalf("close: outcome %v, want Woken", o)
	}
	// Gone: immediate.
	if o := w.Wait([]Target{{NS: 7, Rev: 1}}, time.Now().Add(long), nil, nil); o != Woken {
		t.Fatalf("missing feed: outcome %v", o)
	}
	// Another revision: immediate.
	h.Open(7, 2)
	if o := w.Wait([]Target{{NS: 7, Rev: 1}}, time.Now().Add(long), nil, nil); o != Woken {
		t.Fatalf("other revision: outcome %v", o)
	}
	// A closed old feed must not remove the new one.
	f.Close()
	if _, ok := h.feeds.Load(uint64(7)); !ok {
		t.Fatal("closing the old feed removed the new one")
	}
}

func TestManyWaitersOneFeed(t *testing.T) {
	const n = 200
	h := New(Limits{Node: n, Conn: 1})
	f := h.Open(1, 1)
	var wg sync.WaitGroup
	outs := make([]Outcome, n)
	for i := range n {
		wg.Add(1)
		w := h.NewWaiter()
		go func() {
			defer wg.Done()
			// Half need offset 0, half offset 5.
			outs[i] = w.Wait([]Target{{NS: 1, Rev: 1, After: uint64(i % 2 * 5)}}, time.Now().Add(long), nil, nil)
		}()
	}
	parked(t, f, n)
	f.Publish(1) // wakes the i%2 == 0 half only
	parked(t, f, n/2)
	f.Publish(6)
	wg.Wait()
	for i, o := range outs {
		if o != Woken {
			t.Fatalf("waiter %d: %v", i, o)
		}
	}
}

func TestOneWaiterManyFeeds(t *testing.T) {
	h := New(Limits{Node: 8, Conn: 1})
	a, b, c := h.Open(1, 1), h.Open(2, 1), h.Open(3, 1)
	w := h.NewWaiter()
	out := wait(t, w, []Target{{NS: 1, Rev: 1}, {NS: 2, Rev: 1}, {NS: 3, Rev: 1}}, time.Now().Add(long))
	parked(t, c, 1)
	b.Publish(1)
	if o := <-out; o != Woken {
		t.Fatalf("outcome %v", o)
	}
	for _, f := range []*Feed{a, b, c} {
		if f.nwait.Load() != 0 {
			t.Fatalf("feed %d still lists the waiter", f.ns)
		}
	}
}

func TestLimits(t *testing.T) {
	h := New(Limits{Node: 3, Conn: 2})
	var s1, s2 Slots
	if !h.Acquire(&s1) || !h.Acquire(&s1) {
		t.Fatal("two slots on one connection refused")
	}
	if h.Acquire(&s1) {
		t.Fatal("third slot on one connection granted past Conn = 2")
	}
	if !h.Acquire(&s2) {
		t.Fatal("node slot 3 refused")
	}
	if h.Acquire(&s2) {
		t.Fatal("node slot 4 granted past Node = 3")
	}
	if s := h.Stats(); s.Waiting != 3 || s.Refused != 2 {
		t.Fatalf("stats %+v", s)
	}
	h.Release(&s1)
	if !h.Acquire(&s2) {
		t.Fatal("a released slot was not reusable")
	}
	off := New(Limits{Node: 0, Conn: 1})
	if off.Acquire(&Slots{}) || off.Enabled() {
		t.Fatal("Node = 0 must refuse every wait")
	}
}

func TestReleaseWithoutAcquirePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	New(Limits{Node: 1, Conn: 1}).Release(&Slots{})
}

// TestNoLostWakeup races registrations against publishes: every waiter
// needs the offset the publisher is about to make visible, so each must
// wake (a lost wake-up would hang until the long deadline).
func TestNoLostWakeup(t *testing.T) {
	h := New(Limits{Node: 64, Conn: 1})
	f := h.Open(9, 1)
	const rounds = 2000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(1); i <= rounds; i++ {
			f.Publish(i)
			if i%64 == 0 {
				time.Sleep(time.Microsecond)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := h.NewWaiter()
			for i := 0; i < rounds/8; i++ {
				need := f.Visible() + uint64(g%2)
				if need >= rounds {
					return
				}
				if o := w.Wait([]Target{{NS: 9, Rev: 1, After: need}}, time.Now().Add(long), nil, nil); o != Woken {
					t.Errorf("need %d: outcome %v (visible %d)", need, o, f.Visible())
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
}

func BenchmarkPublishNoWaiters(b *testing.B) {
	h := New(Limits{Node: 1, Conn: 1})
	f := h.Open(1, 1)
	for i := range b.N {
		f.Publish(uint64(i + 1))
	}
}
