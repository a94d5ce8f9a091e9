package shard

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a test Handler. Hooks run on the shard goroutine; everything
// the test reads afterwards is guarded by mu.
type recorder struct {
	mu        sync.Mutex
	batches   [][]int
	ticks     []uint64
	leftover  *Leftover[int]
	onHandle  func(it *Iteration[int])
	pending   func() int
	closed    chan struct{}
	closeOnce sync.Once
}

func newRecorder() *recorder { return &recorder{closed: make(chan struct{})} }

func (r *recorder) Handle(it *Iteration[int]) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(it.Messages))
	r.ticks = append(r.ticks, it.Ticks)
	hook := r.onHandle
	r.mu.Unlock()
	if hook != nil {
		hook(it)
	}
}

func (r *recorder) Close(left Leftover[int]) {
	r.mu.Lock()
	r.leftover = &left
	r.mu.Unlock()
	r.closeOnce.Do(func() { close(r.closed) })
}

func (r *recorder) all() (msgs []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		msgs = append(msgs, b...)
	}
	return msgs
}

// pendingRecorder adds PendingReporter.
type pendingRecorder struct{ *recorder }

func (p pendingRecorder) Pending() int { return p.pending() }

func manualConfig(shards int) Config {
	return Config{
		Shards:        shards,
		InboxCapacity: 16,
		BatchMax:      64,
		TickInterval:  -1,
		DrainTimeout:  5 * time.Second,
		PollInterval:  time.Millisecond,
		JoinTimeout:   5 * time.Second,
	}
}

func start(t *testing.T, cfg Config, hs ...Handler[int]) *Runtime[int] {
	t.Helper()
	rt, err := New[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(func(i int) Handler[int] { return hs[i] }); err != nil {
		t.Fatal(err)
	}
	return rt
}

// shutdown stops rt at the end of a test even when the test fails early.
func shutdownOnCleanup(t *testing.T, rt *Runtime[int]) {
	t.Cleanup(func() { _, _ = rt.Shutdown() })
}

// eventually waits for cond, failing after a generous deadline. It checks an
// outcome, not a speed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// gate blocks the first Handle call until released, so a test can fill the
// inbox behind a busy loop.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) hold(*Iteration[int]) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{},
		{Shards: 2, CPUs: []int{0}},
		{Shards: 1, Pin: true},
		{Shards: 1, InboxCapacity: MaxInboxCapacity + 1},
		{Shards: 1, InboxCapacity: -1},
		{Shards: 1, BatchMax: -1},
		{Shards: 1, PollInterval: -1},
	}
	for i, c := range bad {
		if _, err := New[int](c); err == nil {
			t.Errorf("config %d %+v accepted", i, c)
		}
	}
	rt, err := New[int](Config{CPUs: []int{3, 5}})
	if err != nil {
		t.Fatal(err)
	}
	c := rt.Config()
	if rt.Shards() != 2 || rt.Shard(1).CPU() != 5 || c.InboxCapacity != DefaultInboxCapacity ||
		c.BatchMax != DefaultBatchMax || c.TickInterval != DefaultTickInterval {
		t.Fatalf("defaults not applied: %+v", c)
	}
}

func TestOverflowRefused(t *testing.T) {
	g := newGate()
	r := newRecorder()
	r.onHandle = g.hold
	cfg := manualConfig(1)
	cfg.InboxCapacity = 4
	rt := start(t, cfg, r)
	shutdownOnCleanup(t, rt)
	s := rt.Shard(0)

	if err := s.TrySend(0); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the loop holds message 0 and is stuck in Handle
	for i := 1; i <= 4; i++ {
		if err := s.TrySend(i); err != nil {
			t.Fatalf("send %d into an inbox of 4: %v", i, err)
		}
	}
	err := s.TrySend(5)
	if !errors.Is(err, ErrInboxFull) {
		t.Fatalf("fifth queued send = %v, want ErrInboxFull", err)
	}
	st := s.Stats()
	if st.Refused != 1 || st.Accepted != 5 || st.Queued != 4 {
		t.Fatalf("stats after overflow: %+v", st)
	}
	close(g.release)
	eventually(t, "all accepted messages processed", func() bool { return s.Stats().Processed == 5 })
	if msgs := r.all(); !slices.Equal(msgs, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("processed %v", msgs)
	}
}

func TestBatchDrainingRespectsLimitAndOrder(t *testing.T) {
	r := newRecorder()
	cfg := manualConfig(1)
	cfg.BatchMax = 3
	rt, err := New[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Queued before Start, so the first wake-up finds all of them.
	for i := 0; i < 10; i++ {
		if err := rt.Send(0, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Start(func(int) Handler[int] { return r }); err != nil {
		t.Fatal(err)
	}
	shutdownOnCleanup(t, rt)
	eventually(t, "10 messages processed", func() bool { return rt.Shard(0).Stats().Processed == 10 })
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	for i := range r.batches {
		n := len(r.batches[i])
		if n == 0 || n > 3 {
			t.Fatalf("iteration %d carried %d messages (limit 3)", i, n)
		}
		total += n
	}
	if len(r.batches) != 4 || total != 10 {
		t.Fatalf("%d iterations for 10 messages at batch 3: %v", len(r.batches), r.batches)
	}
	var msgs []int
	for i := range r.batches {
		msgs = append(msgs, r.batches[i]...)
	}
	if !slices.Equal(msgs, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("order lost: %v", msgs)
	}
	if st := rt.Shard(0).Stats(); st.MaxBatch != 3 || st.Iterations != 4 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTicksCoalesce(t *testing.T) {
	g := newGate()
	r := newRecorder()
	r.onHandle = g.hold
	rt := start(t, manualConfig(1), r)
	shutdownOnCleanup(t, rt)
	if err := rt.Send(0, 1); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	for i := 0; i < 50; i++ {
		rt.Tick()
	}
	if n := len(rt.Shard(0).tickWake); n != 1 {
		t.Fatalf("%d tick wake-ups queued, want 1", n)
	}
	close(g.release)
	eventually(t, "ticks delivered", func() bool { return rt.Shard(0).Stats().Ticks == 50 })
	r.mu.Lock()
	ticks := slices.Clone(r.ticks)
	r.mu.Unlock()
	if !slices.Equal(ticks, []uint64{0, 50}) {
		t.Fatalf("iterations saw ticks %v, want [0 50]", ticks)
	}
	if st := rt.Shard(0).Stats(); st.TickWakesCoalesced != 49 || st.Iterations != 2 {
		t.Fatalf("stats %+v", st)
	}
}

func TestInternalTickerReachesEveryShard(t *testing.T) {
	hs := []*recorder{newRecorder(), newRecorder(), newRecorder()}
	cfg := manualConfig(3)
	cfg.TickInterval = time.Millisecond
	rt := start(t, cfg, hs[0], hs[1], hs[2])
	shutdownOnCleanup(t, rt)
	eventually(t, "ticks on every shard", func() bool {
		for _, st := range rt.Stats() {
			if st.Ticks < 3 {
				return false
			}
		}
		return true
	})
}

func TestShutdownDrainsCleanly(t *testing.T) {
	r := newRecorder()
	rt := start(t, manualConfig(1), r)
	for i := 0; i < 10; i++ {
		if err := rt.Send(0, i); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := rt.Shutdown()
	if err != nil || !rep.Drained || len(rep.Unjoined) != 0 || rep.Abandoned[0] != 0 {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	msgs := r.all()
	if len(msgs) != 10 {
		t.Fatalf("processed %d of 10 before stop", len(msgs))
	}
	<-r.closed
	if r.leftover == nil || len(r.leftover.Messages) != 0 {
		t.Fatalf("leftover %+v", r.leftover)
	}
	if err := rt.Send(0, 11); !errors.Is(err, ErrStopped) {
		t.Fatalf("send after shutdown = %v", err)
	}
	if _, err := rt.Shutdown(); err == nil {
		t.Fatal("second Shutdown succeeded")
	}
}

func TestShutdownWaitsForPendingWork(t *testing.T) {
	r := newRecorder()
	var outstanding atomic.Int64
	outstanding.Store(3)
	r.pending = func() int { return int(outstanding.Load()) }
	// Each tick completes one unit of pending work, as a retransmit timer or
	// an I/O completion would.
	r.onHandle = func(it *Iteration[int]) {
		for i := uint64(0); i < it.Ticks && outstanding.Load() > 0; i++ {
			outstanding.Add(-1)
		}
	}
	cfg := manualConfig(1)
	cfg.TickInterval = time.Millisecond
	rt := start(t, cfg, pendingRecorder{r})
	if err := rt.Send(0, 1); err != nil { // publishes Pending=3
		t.Fatal(err)
	}
	rep, err := rt.Shutdown()
	if err != nil || !rep.Drained {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	if outstanding.Load() != 0 {
		t.Fatalf("shutdown finished with %d pending", outstanding.Load())
	}
}

func TestShutdownDrainTimeout(t *testing.T) {
	r := newRecorder()
	r.pending = func() int { return 1 } // never finishes
	cfg := manualConfig(1)
	cfg.DrainTimeout = 20 * time.Millisecond
	rt := start(t, cfg, pendingRecorder{r})
	if err := rt.Send(0, 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "first iteration", func() bool { return rt.Shard(0).Stats().Iterations == 1 })
	rep, err := rt.Shutdown()
	if !errors.Is(err, ErrDrainTimeout) || errors.Is(err, ErrJoinTimeout) || rep.Drained || len(rep.Unjoined) != 0 {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
}

func TestShutdownJoinTimeoutHandsLeftoversToClose(t *testing.T) {
	g := newGate()
	r := newRecorder()
	r.onHandle = g.hold
	cfg := manualConfig(2)
	cfg.DrainTimeout = 10 * time.Millisecond
	cfg.JoinTimeout = 10 * time.Millisecond
	other := newRecorder()
	rt := start(t, cfg, r, other)
	if err := rt.Send(0, 0); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	for i := 1; i <= 5; i++ {
		if err := rt.Send(0, i); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := rt.Shutdown()
	if !errors.Is(err, ErrDrainTimeout) || !errors.Is(err, ErrJoinTimeout) {
		t.Fatalf("Shutdown error = %v", err)
	}
	if !slices.Equal(rep.Unjoined, []int{0}) || rep.Drained {
		t.Fatalf("report %+v", rep)
	}
	if err := rt.Send(0, 7); !errors.Is(err, ErrStopped) {
		t.Fatalf("send after stop = %v", err)
	}
	// The wedged handler comes back; the loop stops and returns what was
	// still queued instead of dropping it.
	close(g.release)
	<-r.closed
	r.mu.Lock()
	left := r.leftover
	r.mu.Unlock()
	if !slices.Equal(left.Messages, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("leftover %+v", left)
	}
	if st := rt.Shard(0).Stats(); st.Abandoned != 5 || st.RefusedStopped != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Every message a sender saw accepted is either handled or handed to Close:
// nothing vanishes, even when shutdown races with senders.
func TestNoMessageLostAcrossShutdownRace(t *testing.T) {
	const shards, senders, perSender = 3, 6, 2000
	hs := make([]*recorder, shards)
	for i := range hs {
		hs[i] = newRecorder()
	}
	cfg := manualConfig(shards)
	cfg.InboxCapacity = 64
	cfg.DrainTimeout = time.Millisecond
	cfg.TickInterval = time.Millisecond
	rt := start(t, cfg, hs[0], hs[1], hs[2])

	var wg sync.WaitGroup
	accepted := make([][]int, senders)
	for w := 0; w < senders; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perSender; i++ {
				m := w*perSender + i
				err := rt.Send(m%shards, m)
				switch {
				case err == nil:
					accepted[w] = append(accepted[w], m)
				case errors.Is(err, ErrStopped):
					return
				case errors.Is(err, ErrInboxFull):
				default:
					t.Errorf("send: %v", err)
					return
				}
			}
		}(w)
	}
	time.Sleep(2 * time.Millisecond) // let senders get going; correctness does not depend on it
	if _, err := rt.Shutdown(); err != nil && !errors.Is(err, ErrDrainTimeout) {
		t.Fatal(err)
	}
	wg.Wait()

	want := map[int]bool{}
	for _, a := range accepted {
		for _, m := range a {
			want[m] = true
		}
	}
	got := map[int]int{}
	for _, h := range hs {
		<-h.closed
		msgs := h.all()
		for _, m := range msgs {
			got[m]++
		}
		for _, m := range h.leftover.Messages {
			got[m]++
		}
	}
	for m := range want {
		if got[m] != 1 {
			t.Fatalf("accepted message %d seen %d times", m, got[m])
		}
	}
	if len(got) != len(want) {
		t.Fatalf("saw %d distinct messages, accepted %d", len(got), len(want))
	}
	for _, st := range rt.Stats() {
		if st.Accepted != st.Processed+st.Abandoned {
			t.Fatalf("shard %d: accepted %d != processed %d + abandoned %d", st.Shard, st.Accepted, st.Processed, st.Abandoned)
		}
	}
}

func TestPinnedShardRunsOnItsCPU(t *testing.T) {
	allowed := AllowedCPUs()
	cpu := allowed[len(allowed)-1]
	r := newRecorder()
	seen := make(chan []int, 1)
	r.onHandle = func(*Iteration[int]) {
		got, err := currentThreadCPUs()
		if err != nil {
			got = nil
		}
		select {
		case seen <- got:
		default:
		}
	}
	cfg := manualConfig(1)
	cfg.Shards = 0
	cfg.CPUs = []int{cpu}
	cfg.Pin = true
	rt := start(t, cfg, r)
	shutdownOnCleanup(t, rt)
	if err := rt.Send(0, 1); err != nil {
		t.Fatal(err)
	}
	if got := <-seen; !slices.Equal(got, []int{cpu}) {
		t.Fatalf("pinned shard ran with affinity %v, want [%d]", got, cpu)
	}
}

func TestRoundRobin(t *testing.T) {
	cases := []struct {
		shards int
		skip   bool
		want   []int
	}{
		{1, false, []int{0, 0, 0}},
		{1, true, []int{0, 0, 0}},
		{3, false, []int{0, 1, 2, 0, 1, 2}},
		{3, true, []int{1, 2, 1, 2}},
		{2, true, []int{1, 1, 1}},
	}
	for _, c := range cases {
		r := NewRoundRobin(c.shards, c.skip)
		var got []int
		for range c.want {
			got = append(got, r.Next())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("RoundRobin(%d, skip=%v) = %v, want %v", c.shards, c.skip, got, c.want)
		}
	}
	a, b := NewRoundRobin(4, false), NewRoundRobin(4, true)
	if a.Next() != 0 || b.Next() != 1 || b.Next() != 2 || a.Next() != 1 {
		t.Fatal("two choosers are not independent")
	}
}

func TestRoundRobinConcurrentIsEven(t *testing.T) {
	r := NewRoundRobin(4, true)
	var counts [4]atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				counts[r.Next()].Add(1)
			}
		}()
	}
	wg.Wait()
	if counts[0].Load() != 0 || counts[1].Load() != 400 || counts[2].Load() != 400 || counts[3].Load() != 400 {
		t.Fatalf("uneven: %d %d %d %d", counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load())
	}
}

// Shutdown must not declare the runtime drained while a cross-shard forward
// is still queued: a message bounces between two shards for many hops after
// Shutdown begins, and every hop must be handled before the loops stop.
func TestDrainWaitsForCrossShardForwards(t *testing.T) {
	const hops = 2000
	var handled atomic.Int64
	var rt *Runtime[int]
	mk := func(next int) *recorder {
		r := newRecorder()
		r.onHandle = func(it *Iteration[int]) {
			for _, m := range it.Messages {
				handled.Add(1)
				if m > 0 {
					if err := rt.Send(next, m-1); err != nil {
						panic(err)
					}
				}
			}
		}
		return r
	}
	a, b := mk(1), mk(0)
	cfg := manualConfig(2)
	cfg.PollInterval = 50 * time.Microsecond
	var err error
	rt, err = New[int](cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := []*recorder{a, b}
	if err := rt.Start(func(i int) Handler[int] { return hs[i] }); err != nil {
		t.Fatal(err)
	}
	if err := rt.Send(0, hops); err != nil {
		t.Fatal(err)
	}
	rep, err := rt.Shutdown()
	if err != nil || !rep.Drained {
		t.Fatalf("Shutdown = %+v, %v", rep, err)
	}
	if got := handled.Load(); got != hops+1 {
		t.Fatalf("handled %d of %d hops before stop (abandoned %v)", got, hops+1, rep.Abandoned)
	}
}
