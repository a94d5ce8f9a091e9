package bench

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseKindAndRange(t *testing.T) {
	for _, k := range Kinds {
		if got, err := ParseKind(k.Alias); err != nil || got != k.Kind {
			t.Errorf("ParseKind(%q) = %v, %v", k.Alias, got, err)
		}
		if got, err := ParseKind(string(k.Kind)); err != nil || got != k.Kind {
			t.Errorf("ParseKind(%q) = %v, %v", k.Kind, got, err)
		}
		if k.Kind.Alias() != k.Alias {
			t.Errorf("%s alias %q", k.Kind, k.Kind.Alias())
		}
	}
	if _, err := ParseKind("e2ecg"); err == nil {
		t.Error("unknown kind accepted")
	}
	tests := []struct {
		in  string
		out Range
		err bool
	}{
		{"1000", Range{1000, 1000}, false},
		{"200..500", Range{200, 500}, false},
		{" 5 .. 5 ", Range{5, 5}, false},
		{"0", Range{}, true},
		{"500..200", Range{}, true},
		{"a..b", Range{}, true},
		{"", Range{}, true},
	}
	for _, tc := range tests {
		got, err := ParseRange(tc.in)
		if (err != nil) != tc.err || got != tc.out {
			t.Errorf("ParseRange(%q) = %v, %v", tc.in, got, err)
		}
	}
	if (Range{200, 500}).String() != "200..500" || (Range{7, 7}).String() != "7" {
		t.Error("Range.String")
	}
}

func TestDefaultsAreValid(t *testing.T) {
	for _, k := range Kinds {
		p := Defaults(k.Kind)
		if err := p.Validate(); err != nil {
			t.Errorf("defaults of %s invalid: %v", k.Kind, err)
		}
	}
	pp := Defaults(PinnedProducer)
	if pp.Producers != 8 || pp.Consumers != 0 || pp.Streams != 8 || pp.Partitions != 1 || pp.MessageBatches != 1000 || pp.MessageSize.Min != 1000 {
		t.Errorf("pp defaults %+v", pp)
	}
	bcg := Defaults(BalancedConsumerGroup)
	if bcg.Producers != 0 || bcg.Consumers != 8 || bcg.Streams != 1 || bcg.Partitions != 24 || bcg.ConsumerGroups != 1 {
		t.Errorf("bcg defaults %+v", bcg)
	}
	pp.Producers = 3
	pp.FollowActors()
	if pp.Streams != 3 {
		t.Errorf("FollowActors: %d streams", pp.Streams)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		kind Kind
		mod  func(*Params)
		want string
	}{
		{PinnedProducer, func(p *Params) { p.TotalData = 1 << 20 }, "not both"},
		{PinnedProducer, func(p *Params) { p.MessageBatches = 0 }, "give --message-batches or --total-data"},
		{PinnedProducer, func(p *Params) { p.Streams = 2 }, "needs a stream per producer"},
		{PinnedProducer, func(p *Params) { p.Partitions = 3 }, "one partition per stream"},
		{PinnedProducer, func(p *Params) { p.Consumers = 1 }, "has no separate consumers"},
		{PinnedConsumer, func(p *Params) { p.Producers = 2 }, "has no producers"},
		{PinnedProducerAndConsumer, func(p *Params) { p.Consumers = 3 }, "pairs each producer"},
		{BalancedConsumerGroup, func(p *Params) { p.ConsumerGroups = 2 }, "--consumer-groups must be 1..--streams"},
		{BalancedConsumerGroup, func(p *Params) { p.Consumers, p.Streams, p.ConsumerGroups = 1, 2, 2 }, "at least --consumer-groups"},
		{BalancedProducer, func(p *Params) { p.ConsumerGroups = 1 }, "uses no consumer groups"},
		{BalancedProducer, func(p *Params) { p.MessageSize = Range{1, MaxMessage + 1} }, "message size"},
		{BalancedProducer, func(p *Params) { p.MessageSize, p.MessagesPerBatch = Range{1 << 20, 1 << 20}, Range{100, 100} }, "exceeds"},
		{BalancedProducer, func(p *Params) { p.Producers = MaxActors + 1 }, "--producers must be"},
		{BalancedProducer, func(p *Params) { p.Durability = "fast" }, "--durability must be"},
		{BalancedProducer, func(p *Params) { p.SamplingTime = 0 }, "--sampling-time"},
		{BalancedProducer, func(p *Params) { p.IdleTimeout = 0 }, "--idle-timeout"},
		{BalancedProducer, func(p *Params) { p.MessageBatches, p.TotalData = 0, 10 }, "smaller than one message per actor"},
		{BalancedProducerAndConsumerGroup, func(p *Params) { p.ReadAmplification = 0.5 }, "--read-amplification"},
		{EndToEndProducingConsumer, func(p *Params) { p.Consumers = 2 }, "no separate consumers"},
	}
	for _, tc := range tests {
		p := Defaults(tc.kind)
		tc.mod(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.kind, err, tc.want)
		}
	}
}

// fakeClock drives a RateLimiter without sleeping.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) limiter(rate float64) *RateLimiter {
	r := NewRateLimiter(rate)
	r.now = func() time.Time { return c.now }
	r.sleep = func(ctx context.Context, d time.Duration) error {
		c.sleeps = append(c.sleeps, d)
		c.now = c.now.Add(d)
		return ctx.Err()
	}
	return r
}

func TestRateLimiterPaces(t *testing.T) {
	c := &fakeClock{now: time.Unix(1000, 0)}
	r := c.limiter(1_000_000) // 1 MB/s
	if got := r.ExpectedInterval(100_000); got != 100*time.Millisecond {
		t.Fatalf("ExpectedInterval = %v", got)
	}
	ctx := context.Background()
	start := c.now
	for range 10 {
		if err := r.Wait(ctx, 100_000); err != nil {
			t.Fatal(err)
		}
	}
	// The first batch goes at once; the next nine wait their 100 ms slot.
	if len(c.sleeps) != 9 {
		t.Fatalf("sleeps %v", c.sleeps)
	}
	for _, d := range c.sleeps {
		if d != 100*time.Millisecond {
			t.Fatalf("sleeps %v", c.sleeps)
		}
	}
	if c.now.Sub(start) != 900*time.Millisecond {
		t.Fatalf("elapsed %v", c.now.Sub(start))
	}
	// A stall of 1 s does not buy a burst: the next batches are paced again.
	c.now = c.now.Add(time.Second)
	c.sleeps = nil
	for range 3 {
		if err := r.Wait(ctx, 100_000); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.sleeps) != 2 || c.sleeps[0] != 100*time.Millisecond {
		t.Fatalf("after stall: sleeps %v", c.sleeps)
	}
	// Cancellation ends a wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	real := NewRateLimiter(1)
	_ = real.Wait(cctx, 1)
	if err := real.Wait(cctx, 1); err == nil {
		t.Fatal("cancelled wait returned nil")
	}
}

func TestBudgets(t *testing.T) {
	b := NewBatchBudget(3)
	n := 0
	for b.Take(999) {
		n++
	}
	if n != 3 {
		t.Fatalf("batch budget allowed %d", n)
	}
	bb := NewByteBudget(1000)
	n = 0
	for bb.Take(300) {
		n++
	}
	if n != 4 { // 300, 600, 900, then 1200 crosses: the crossing batch still goes
		t.Fatalf("byte budget allowed %d", n)
	}
	shared := NewBatchBudget(1000)
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := 0
			for shared.Take(1) {
				mine++
			}
			mu.Lock()
			total += mine
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1000 {
		t.Fatalf("shared budget handed out %d", total)
	}
}

func TestBatchGen(t *testing.T) {
	g := newBatchGen(7, Range{10, 20}, Range{3, 5})
	h := newBatchGen(7, Range{10, 20}, Range{3, 5})
	seen := map[int]bool{}
	var lastID uint64
	for range 200 {
		msgs, bytes := g.next(42)
		hm, hb := h.next(42)
		if len(msgs) != len(hm) || bytes != hb {
			t.Fatal("same seed, different batches")
		}
		if len(msgs) < 3 || len(msgs) > 5 {
			t.Fatalf("batch of %d", len(msgs))
		}
		seen[len(msgs)] = true
		var sum uint64
		for _, m := range msgs {
			if len(m.Payload) < 10 || len(m.Payload) > 20 || m.OriginTimestamp != 42 || m.ID.Hi != 7 || m.ID.Lo <= lastID {
				t.Fatalf("message %+v", m)
			}
			lastID = m.ID.Lo
			sum += uint64(len(m.Payload))
		}
		if sum != bytes {
			t.Fatalf("bytes %d, payloads %d", bytes, sum)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("batch sizes drawn: %v", seen)
	}
}
