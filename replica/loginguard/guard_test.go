package loginguard

import (
	"net/netip"
	"sync"
	"testing"
	"time"
)

// fakeClock drives a guard's throttle: sleeping advances it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(d time.Duration, _ <-chan struct{}) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return true
}

func throttled(cfg Config) (*Guard, *fakeClock) {
	g := New(cfg)
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	g.now, g.sleep = clk.now, clk.sleep
	return g, clk
}

var (
	addrA = netip.MustParsePrefix("127.0.0.2/32")
	addrB = netip.MustParsePrefix("127.0.0.3/32")
)

func baseConfig() Config {
	return Config{Verifications: 2, QueueMax: 4, QueueTimeout: time.Second, Throttle: true,
		AddressBurst: 3, AddressInterval: time.Second, UserBurst: 6, UserInterval: 500 * time.Millisecond,
		DelayMax: 2 * time.Second, EntriesMax: 100}
}

func TestThrottleDelaysFailures(t *testing.T) {
	g, clk := throttled(baseConfig())
	fail := func() bool { return false }
	type step struct {
		verdict Verdict
		waited  time.Duration
	}
	var got []step
	for i := 0; i < 7; i++ {
		v, w := g.Check(nil, Attempt{Addr: addrA}, fail)
		got = append(got, step{v, w})
	}
	// Three failures free (the burst), then each waits for the next
	// token (one a second); once the debt would need more than DelayMax
	// the attempt ends Throttled after DelayMax, unchecked.
	want := []step{{Failed, 0}, {Failed, 0}, {Failed, 0}, {Failed, time.Second}, {Failed, time.Second},
		{Failed, time.Second}, {Failed, time.Second}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("attempt %d: %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	// Another address is not affected.
	if v, w := g.Check(nil, Attempt{Addr: addrB}, fail); v != Failed || w != 0 {
		t.Fatalf("address B: %v %v", v, w)
	}
	_ = clk
}

func TestThrottleParallelDebt(t *testing.T) {
	g, _ := throttled(baseConfig())
	// Attempts that arrive together all take tokens first: the ones past
	// the burst owe 1 s, 2 s, 3 s ...; those owing more than DelayMax (2 s)
	// are throttled without a check and give their token back.
	g.sleep = func(time.Duration, <-chan struct{}) bool { return true } // time stands still
	checked := 0
	verdicts := map[Verdict]int{}
	for i := 0; i < 10; i++ {
		v, _ := g.Check(nil, Attempt{Addr: addrA}, func() bool { checked++; return false })
		verdicts[v]++
	}
	if verdicts[Failed] != 5 || verdicts[Throttled] != 5 || checked != 5 {
		t.Fatalf("verdicts %v, %d checked", verdicts, checked)
	}
}

func TestThrottleSuccessIsFree(t *testing.T) {
	g, _ := throttled(baseConfig())
	g.sleep = func(time.Duration, <-chan struct{}) bool { return true }
	for i := 0; i < 1000; i++ {
		if v, w := g.Check(nil, Attempt{Addr: addrA, User: "app", Costly: true}, func() bool { return true }); v != Passed || w != 0 {
			t.Fatalf("login %d: %v after %v", i, v, w)
		}
	}
}

func TestThrottlePerUser(t *testing.T) {
	cfg := baseConfig()
	cfg.AddressBurst = 100
	g, _ := throttled(cfg)
	g.sleep = func(time.Duration, <-chan struct{}) bool { return true }
	// Failures from many addresses against one user exhaust the user's
	// bucket (burst 6, then 0.5 s each, DelayMax 2 s: 4 more).
	verdicts := map[Verdict]int{}
	for i := 0; i < 20; i++ {
		a := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), 32)
		v, _ := g.Check(nil, Attempt{Addr: a, User: "root"}, func() bool { return false })
		verdicts[v]++
	}
	if verdicts[Failed] != 10 || verdicts[Throttled] != 10 {
		t.Fatalf("verdicts %v", verdicts)
	}
	// Names that are not users ("") have no bucket of their own.
	if v, _ := g.Check(nil, Attempt{Addr: addrB}, func() bool { return false }); v != Failed {
		t.Fatalf("no user: %v", v)
	}
}

func TestThrottleOff(t *testing.T) {
	cfg := baseConfig()
	cfg.Throttle = false
	g, _ := throttled(cfg)
	for i := 0; i < 50; i++ {
		if v, w := g.Check(nil, Attempt{Addr: addrA, User: "root"}, func() bool { return false }); v != Failed || w != 0 {
			t.Fatalf("attempt %d: %v %v", i, v, w)
		}
	}
}

func TestBucketTableBounded(t *testing.T) {
	cfg := baseConfig()
	cfg.EntriesMax = 16
	g, clk := throttled(cfg)
	for i := 0; i < 200; i++ {
		a := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), 32)
		g.Check(nil, Attempt{Addr: a}, func() bool { return false })
		if n := g.addrs.len(); n > 16 {
			t.Fatalf("table grew to %d", n)
		}
	}
	// Once the buckets refilled, new addresses get buckets of their own
	// again (the full ones are pruned).
	clk.sleep(time.Minute, nil)
	a := netip.MustParsePrefix("10.9.9.9/32")
	g.Check(nil, Attempt{Addr: a}, func() bool { return false })
	g.addrs.mu.Lock()
	_, own := g.addrs.m[a]
	g.addrs.mu.Unlock()
	if !own {
		t.Fatal("refilled buckets were not pruned")
	}
}

func TestVerificationSlots(t *testing.T) {
	cfg := baseConfig()
	cfg.Throttle = false
	cfg.Verifications, cfg.QueueMax, cfg.QueueTimeout = 2, 1, 100*time.Millisecond
	g := New(cfg)
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Check(nil, Attempt{Addr: addrA, Costly: true}, func() bool { running <- struct{}{}; <-release; return true })
		}()
	}
	<-running
	<-running
	// Both slots busy: a cheap check does not wait for one.
	if v, _ := g.Check(nil, Attempt{Addr: addrA}, func() bool { return true }); v != Passed {
		t.Fatalf("cheap check: %v", v)
	}
	// One may queue (and times out); a second finds the queue full.
	queued := make(chan Verdict, 1)
	go func() {
		v, _ := g.Check(nil, Attempt{Addr: addrA, Costly: true}, func() bool { return true })
		queued <- v
	}()
	for {
		if _, w := g.InUse(); w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if v, _ := g.Check(nil, Attempt{Addr: addrA, Costly: true}, func() bool { return true }); v != Busy {
		t.Fatalf("over the queue: %v", v)
	}
	if v := <-queued; v != Busy {
		t.Fatalf("queued past its timeout: %v", v)
	}
	// A stop ends a wait.
	stop := make(chan struct{})
	close(stop)
	if v, _ := g.Check(stop, Attempt{Addr: addrA, Costly: true}, func() bool { return true }); v != Stopped {
		t.Fatalf("stopping: %v", v)
	}
	close(release)
	wg.Wait()
	if r, w := g.InUse(); r != 0 || w != 0 {
		t.Fatalf("slots left %d/%d", r, w)
	}
}

func TestDefaultVerifications(t *testing.T) {
	const argon = 19 << 20
	cases := []struct {
		cpus int
		mem  uint64
		want int
	}{
		{2, 16 << 30, 2},
		{64, 16 << 30, 64},
		{64, 1 << 30, 6},  // 1 GiB / 8 / 19 MiB
		{8, 100 << 20, 1}, // tiny container
		{0, 0, 1},
		{1024, 1 << 40, 256},
	}
	for _, c := range cases {
		if got := DefaultVerifications(c.cpus, c.mem, argon); got != c.want {
			t.Errorf("DefaultVerifications(%d, %d) = %d, want %d", c.cpus, c.mem, got, c.want)
		}
	}
	if MemoryLimit() == 0 {
		t.Error("MemoryLimit found nothing on this machine")
	}
}

// Attempts from an address that failed recently use at most
// Verifications-1 slots: with suspects queued, a clean address still gets
// the last slot at once.
func TestSuspectsLeaveASlot(t *testing.T) {
	cfg := baseConfig()
	cfg.Verifications, cfg.QueueMax, cfg.QueueTimeout = 3, 16, 5*time.Second
	g := New(cfg)
	g.Check(nil, Attempt{Addr: addrA}, func() bool { return false }) // addrA now suspect
	release := make(chan struct{})
	running := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.Check(nil, Attempt{Addr: addrA, Costly: true}, func() bool { running <- struct{}{}; <-release; return false })
		}()
	}
	<-running
	<-running
	// A third suspect waits: the last slot is not for it.
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.Check(nil, Attempt{Addr: addrA, Costly: true}, func() bool { running <- struct{}{}; return false })
	}()
	for {
		if _, w := g.InUse(); w == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if r, _ := g.InUse(); r != 2 {
		t.Fatalf("%d slots in use, want 2", r)
	}
	// A clean address takes the third slot without waiting.
	start := time.Now()
	if v, _ := g.Check(nil, Attempt{Addr: addrB, Costly: true}, func() bool { return true }); v != Passed || time.Since(start) > time.Second {
		t.Fatalf("clean attempt: %v after %v", v, time.Since(start))
	}
	close(release)
	wg.Wait()
	if r, w := g.InUse(); r != 0 || w != 0 {
		t.Fatalf("slots left %d/%d", r, w)
	}
}
