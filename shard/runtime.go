package shard

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Defaults for Config fields left zero.
const (
	DefaultTickInterval  = 10 * time.Millisecond
	DefaultBatchMax      = 256
	DefaultInboxCapacity = 65536
	DefaultDrainTimeout  = 10 * time.Second
	DefaultPollInterval  = 50 * time.Millisecond
	DefaultJoinTimeout   = 30 * time.Second

	// MaxInboxCapacity bounds the inbox, as sharding.inbox_capacity is
	// bounded in the config: a channel's buffer is allocated up front.
	MaxInboxCapacity = 1 << 20
)

var (
	// ErrInboxFull is returned by TrySend when the target inbox has no free
	// slot. The message was not queued; the caller owns it and must fail
	// the request, close the connection, or rely on a protocol retransmit.
	ErrInboxFull = errors.New("shard: inbox full")
	// ErrStopped is returned by TrySend once shutdown has stopped the
	// target shard.
	ErrStopped = errors.New("shard: stopped")
	// ErrDrainTimeout is wrapped by Shutdown when inboxes or handlers still
	// held work at shutdown_drain_timeout.
	ErrDrainTimeout = errors.New("shard: drain timeout")
	// ErrJoinTimeout is wrapped by Shutdown when a shard goroutine had not
	// returned by shutdown_join_timeout.
	ErrJoinTimeout = errors.New("shard: join timeout")
)

// Config sizes and times a Runtime. Zero durations and capacities take the
// defaults above; the server fills it from the [sharding] config section.
type Config struct {
	// CPUs holds one entry per shard: shard i runs on CPUs[i] (see
	// Resolve). Its length is the shard count. When empty, Shards gives the
	// count and Pin must be false.
	CPUs []int
	// Shards is the shard count when CPUs is empty.
	Shards int
	// Pin locks each shard goroutine to an OS thread and sets that thread's
	// affinity to its CPU. A failure to pin is logged and the shard runs
	// unpinned: it costs locality, not correctness.
	Pin bool
	// InboxCapacity bounds each shard's inbox (consensus frames,
	// forwarded requests, connection hand-offs, I/O completions).
	InboxCapacity int
	// BatchMax is the most messages one loop iteration takes; the rest
	// wait for the next iteration, so one busy producer cannot starve
	// ticks.
	BatchMax int
	// TickInterval is the consensus tick. Negative disables the internal
	// ticker (tests and the simulator drive Runtime.Tick themselves).
	TickInterval time.Duration
	// DrainTimeout bounds how long Shutdown waits for inboxes to empty and
	// handlers to report no pending work; PollInterval is how often it
	// looks; JoinTimeout bounds the wait for shard goroutines to return.
	DrainTimeout time.Duration
	PollInterval time.Duration
	JoinTimeout  time.Duration
	// Logger receives pinning and shutdown events; nil discards them.
	Logger *zap.Logger
}

func (c *Config) applyDefaults() error {
	if len(c.CPUs) > 0 {
		if c.Shards != 0 && c.Shards != len(c.CPUs) {
			return fmt.Errorf("shard: Config.Shards %d disagrees with %d CPUs", c.Shards, len(c.CPUs))
		}
		c.Shards = len(c.CPUs)
	} else if c.Pin {
		return errors.New("shard: Config.Pin needs Config.CPUs")
	}
	if c.Shards < 1 {
		return fmt.Errorf("shard: shard count %d must be at least 1", c.Shards)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.InboxCapacity, DefaultInboxCapacity)
	def(&c.BatchMax, DefaultBatchMax)
	if c.InboxCapacity < 1 || c.InboxCapacity > MaxInboxCapacity {
		return fmt.Errorf("shard: InboxCapacity %d must be within 1..%d", c.InboxCapacity, MaxInboxCapacity)
	}
	if c.BatchMax < 1 {
		return fmt.Errorf("shard: BatchMax %d must be at least 1", c.BatchMax)
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defd(&c.TickInterval, DefaultTickInterval)
	defd(&c.DrainTimeout, DefaultDrainTimeout)
	defd(&c.PollInterval, DefaultPollInterval)
	defd(&c.JoinTimeout, DefaultJoinTimeout)
	if c.PollInterval < 0 || c.DrainTimeout < 0 || c.JoinTimeout < 0 {
		return errors.New("shard: shutdown durations must not be negative")
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// Handler is one shard's logic. Every method runs on the shard's own
// goroutine, so a handler's state needs no locks.
type Handler[M any] interface {
	// Handle processes everything one wake-up brought: elapsed ticks and up
	// to BatchMax messages. Durability is the handler's own business: the
	// node batches its fdatasyncs through vfs inside Handle.
	Handle(it *Iteration[M])
	// Close runs once, on the shard goroutine, after the loop stops. It
	// receives whatever was still queued (possible only when the drain
	// timed out) so that resources inside messages, such as connection
	// file descriptors, are released and owners are told, not dropped.
	Close(left Leftover[M])
}

// PendingReporter is implemented by handlers that hold work outside their
// inbox (I/O in flight, prepares awaiting quorum). Shutdown's drain waits
// until every shard's inbox is empty and Pending returns 0. It is called on
// the shard goroutine after each iteration.
type PendingReporter interface {
	Pending() int
}

// Leftover is what a stopped shard still had queued.
type Leftover[M any] struct {
	Messages []M
}

// Iteration is one pass of a shard loop. The runtime reuses it; handlers
// must not retain it or its slices past Handle.
type Iteration[M any] struct {
	// Shard is the shard index.
	Shard int
	// Seq counts this shard's iterations from 1.
	Seq uint64
	// Ticks is the number of consensus ticks that elapsed since the last
	// iteration that saw any. Ticks coalesce: a shard busy for 50 ms sees
	// Ticks=5 once, never five queued tick messages.
	Ticks uint64
	// Messages are the inbox's messages in arrival order.
	Messages []M
}

// Runtime runs one loop per shard, each on its own goroutine (pinned when
// configured), and a ticker that feeds every shard coalesced ticks.
type Runtime[M any] struct {
	cfg    Config
	shards []*Shard[M]
	log    *zap.Logger

	mu         sync.Mutex
	started    bool
	shutdown   bool
	tickerStop chan struct{}
	tickerDone chan struct{}
}

// New validates cfg and builds the shards; nothing runs until Start.
func New[M any](cfg Config) (*Runtime[M], error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	rt := &Runtime[M]{cfg: cfg, log: cfg.Logger}
	rt.shards = make([]*Shard[M], cfg.Shards)
	for i := range rt.shards {
		cpu := -1
		if len(cfg.CPUs) > 0 {
			cpu = cfg.CPUs[i]
		}
		rt.shards[i] = &Shard[M]{
			id:       i,
			cpu:      cpu,
			main:     make(chan M, cfg.InboxCapacity),
			tickWake: make(chan struct{}, 1),
			stop:     make(chan struct{}),
			done:     make(chan struct{}),
		}
	}
	return rt, nil
}

// Config returns the effective configuration (defaults applied).
func (rt *Runtime[M]) Config() Config { return rt.cfg }

// Shards is the shard count.
func (rt *Runtime[M]) Shards() int { return len(rt.shards) }

// Shard returns shard i.
func (rt *Runtime[M]) Shard(i int) *Shard[M] { return rt.shards[i] }

// Send is Shard(i).TrySend(m).
func (rt *Runtime[M]) Send(i int, m M) error { return rt.shards[i].TrySend(m) }

// Start creates each shard's handler with newHandler (called on the caller's
// goroutine, in shard order) and starts the loops and the ticker.
func (rt *Runtime[M]) Start(newHandler func(shard int) Handler[M]) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.started {
		return errors.New("shard: runtime already started")
	}
	rt.started = true
	handlers := make([]Handler[M], len(rt.shards))
	for i := range handlers {
		handlers[i] = newHandler(i)
		if handlers[i] == nil {
			return fmt.Errorf("shard: handler factory returned nil for shard %d", i)
		}
	}
	for i, s := range rt.shards {
		go s.run(rt, handlers[i])
	}
	if rt.cfg.TickInterval > 0 {
		rt.tickerStop = make(chan struct{})
		rt.tickerDone = make(chan struct{})
		go rt.tickLoop(rt.cfg.TickInterval)
	}
	return nil
}

func (rt *Runtime[M]) tickLoop(d time.Duration) {
	defer close(rt.tickerDone)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			rt.Tick()
		case <-rt.tickerStop:
			return
		}
	}
}

// Tick delivers one consensus tick to every shard. The internal ticker calls
// it every TickInterval; with the ticker disabled the caller drives time.
// It never blocks and never queues more than one wake-up per shard.
func (rt *Runtime[M]) Tick() {
	for _, s := range rt.shards {
		s.tick()
	}
}

// Stats snapshots every shard's counters.
func (rt *Runtime[M]) Stats() []Stats {
	out := make([]Stats, len(rt.shards))
	for i, s := range rt.shards {
		out[i] = s.Stats()
	}
	return out
}

// ShutdownReport says how a shutdown went.
type ShutdownReport struct {
	// Drained is true when every inbox emptied and every handler reported no
	// pending work before DrainTimeout.
	Drained bool
	// Abandoned counts, per shard, the messages still queued at stop; they
	// were handed to Handler.Close.
	Abandoned []int
	// Unjoined lists the shards whose goroutine had not returned within
	// JoinTimeout (a wedged handler). Their goroutines are left running.
	Unjoined []int
}

// Shutdown stops the runtime in three phases:
//
//  1. drain: messages are still accepted and ticks still flow, so in-flight
//     work (replies, retransmits, syncs) can finish; every PollInterval it
//     checks whether all inboxes are empty and all handlers idle, giving up
//     at DrainTimeout. Callers stop their listeners first, or producers
//     outside the runtime keep the inboxes busy until the timeout.
//  2. stop: every later TrySend fails with ErrStopped; each loop finishes
//     its current iteration, hands whatever is still queued to
//     Handler.Close, and returns.
//  3. join: waits up to JoinTimeout for the loops to return.
//
// The error wraps ErrDrainTimeout and/or ErrJoinTimeout; the report holds
// the details either way. Shutdown is idempotent in effect: later calls
// return an error without doing anything.
func (rt *Runtime[M]) Shutdown() (ShutdownReport, error) {
	rt.mu.Lock()
	if !rt.started || rt.shutdown {
		rt.mu.Unlock()
		return ShutdownReport{}, errors.New("shard: Shutdown on a runtime that is not running")
	}
	rt.shutdown = true
	rt.mu.Unlock()

	rep := ShutdownReport{Abandoned: make([]int, len(rt.shards))}
	rep.Drained = rt.drain()

	if rt.tickerStop != nil {
		close(rt.tickerStop)
		<-rt.tickerDone
	}
	for _, s := range rt.shards {
		s.closeGate()
	}

	rep.Unjoined = rt.join(rep.Abandoned)
	var errs []error
	if !rep.Drained {
		rt.log.Warn("shard drain timed out", zap.Duration("timeout", rt.cfg.DrainTimeout), zap.Ints("abandoned", rep.Abandoned))
		errs = append(errs, fmt.Errorf("%w after %v: abandoned per shard %v", ErrDrainTimeout, rt.cfg.DrainTimeout, rep.Abandoned))
	}
	if len(rep.Unjoined) > 0 {
		rt.log.Error("shard goroutines did not return", zap.Duration("timeout", rt.cfg.JoinTimeout), zap.Ints("shards", rep.Unjoined))
		errs = append(errs, fmt.Errorf("%w after %v: shards %v", ErrJoinTimeout, rt.cfg.JoinTimeout, rep.Unjoined))
	}
	return rep, errors.Join(errs...)
}

// join waits up to JoinTimeout for every loop to return, filling abandoned
// for those that did and returning the ids of those that did not.
func (rt *Runtime[M]) join(abandoned []int) (unjoined []int) {
	deadline := time.NewTimer(rt.cfg.JoinTimeout)
	defer deadline.Stop()
	expired := false
	for _, s := range rt.shards {
		if !expired {
			select {
			case <-s.done:
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-s.done:
			abandoned[s.id] = int(s.stats.abandoned.Load())
		default:
			unjoined = append(unjoined, s.id)
		}
	}
	return unjoined
}

// drain reports whether every shard went idle before DrainTimeout.
func (rt *Runtime[M]) drain() bool {
	// A shard checked early in the scan can receive a message from one
	// checked later (a cross-shard forward) after it was seen idle. Such a
	// send raises the total accepted count, so a scan only counts when that
	// total did not move while it ran.
	accepted := func() (n uint64) {
		for _, s := range rt.shards {
			n += s.stats.accepted.Load()
		}
		return n
	}
	idle := func() bool {
		before := accepted()
		for _, s := range rt.shards {
			if !s.idle() {
				return false
			}
		}
		return accepted() == before
	}
	if idle() {
		return true
	}
	deadline := time.Now().Add(rt.cfg.DrainTimeout)
	poll := time.NewTicker(max(rt.cfg.PollInterval, time.Millisecond))
	defer poll.Stop()
	for range poll.C {
		if idle() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
	return false
}

// Shard is one shard's inbox and loop state. TrySend is safe from any
// goroutine; everything else belongs to the loop.
type Shard[M any] struct {
	id  int
	cpu int

	main     chan M
	tickWake chan struct{}
	stop     chan struct{}
	done     chan struct{}

	// gate counts senders inside TrySend in its low bits and carries the
	// stopped flag in its top bit, so that shutdown can wait out senders
	// that passed the stopped check before draining the inbox for the last
	// time: without it a racing send could land after the final drain and
	// vanish.
	gate atomic.Int64

	pendingTicks atomic.Uint64
	pending      atomic.Int64

	stats counters
}

const gateStopped = int64(1) << 62

// ID is the shard index.
func (s *Shard[M]) ID() int { return s.id }

// CPU is the CPU the shard is assigned (-1 when unpinned and unassigned).
func (s *Shard[M]) CPU() int { return s.cpu }

// TrySend queues m on the inbox or refuses it with ErrInboxFull (inbox
// full) or ErrStopped (after shutdown). It never blocks. On refusal the
// caller still owns m.
func (s *Shard[M]) TrySend(m M) error {
	if s.gate.Add(1)&gateStopped != 0 {
		s.gate.Add(-1)
		s.stats.refusedStopped.Add(1)
		return fmt.Errorf("%w: shard %d", ErrStopped, s.id)
	}
	// Counted before the send so that the drain never sees a queued
	// message with accepted == processed.
	s.stats.accepted.Add(1)
	select {
	case s.main <- m:
		s.gate.Add(-1)
		return nil
	default:
		s.stats.accepted.Add(^uint64(0))
		s.gate.Add(-1)
		s.stats.refused.Add(1)
		return fmt.Errorf("%w: shard %d inbox holds %d", ErrInboxFull, s.id, cap(s.main))
	}
}

func (s *Shard[M]) tick() {
	s.pendingTicks.Add(1)
	select {
	case s.tickWake <- struct{}{}:
	default:
		s.stats.tickWakesCoalesced.Add(1)
	}
}

func (s *Shard[M]) idle() bool {
	select {
	case <-s.done:
		return true
	default:
	}
	return s.stats.accepted.Load() == s.stats.processed.Load() && s.pending.Load() == 0
}

// closeGate marks the shard stopped, waits for senders already inside
// TrySend (they never block, so the wait is short), then stops the loop.
func (s *Shard[M]) closeGate() {
	s.gate.Or(gateStopped)
	for s.gate.Load() != gateStopped {
		runtime.Gosched()
	}
	close(s.stop)
}

func (s *Shard[M]) run(rt *Runtime[M], h Handler[M]) {
	defer close(s.done)
	if rt.cfg.Pin {
		if err := PinCurrentThread(s.cpu); err != nil {
			rt.log.Warn("shard runs unpinned", zap.Int("shard", s.id), zap.Int("cpu", s.cpu), zap.Error(err))
		} else {
			rt.log.Debug("shard pinned", zap.Int("shard", s.id), zap.Int("cpu", s.cpu))
		}
	}
	pr, _ := h.(PendingReporter)
	batchMax := rt.cfg.BatchMax
	it := &Iteration[M]{Shard: s.id}
	for {
		select {
		case <-s.stop:
			s.finish(h)
			return
		default:
		}
		select {
		case <-s.stop:
			s.finish(h)
			return
		case m := <-s.main:
			it.Messages = append(it.Messages, m)
		case <-s.tickWake:
		}
		s.fill(it, batchMax)
		it.Ticks = s.pendingTicks.Swap(0)
		n := len(it.Messages)
		if n == 0 && it.Ticks == 0 {
			continue
		}
		s.iterate(h, pr, it, n)
	}
}

// fill takes what is already queued without blocking, up to batchMax
// messages in all.
func (s *Shard[M]) fill(it *Iteration[M], batchMax int) {
	for len(it.Messages) < batchMax {
		select {
		case m := <-s.main:
			it.Messages = append(it.Messages, m)
		default:
			return
		}
	}
}

func (s *Shard[M]) iterate(h Handler[M], pr PendingReporter, it *Iteration[M], n int) {
	it.Seq++
	h.Handle(it)

	s.stats.iterations.Add(1)
	s.stats.ticks.Add(it.Ticks)
	if uint64(n) > s.stats.maxBatch.Load() {
		s.stats.maxBatch.Store(uint64(n))
	}
	if pr != nil {
		s.pending.Store(int64(pr.Pending()))
	}
	// Published last: the drain must not see accepted == processed while
	// the handler is still inside this iteration.
	s.stats.processed.Add(uint64(n))

	clear(it.Messages)
	it.Messages = it.Messages[:0]
	it.Ticks = 0
}

// finish hands the still-queued messages to Close. closeGate has already
// waited out every sender, so the inbox can only shrink now.
func (s *Shard[M]) finish(h Handler[M]) {
	var left Leftover[M]
	for {
		select {
		case m := <-s.main:
			left.Messages = append(left.Messages, m)
			continue
		default:
		}
		break
	}
	s.stats.abandoned.Store(uint64(len(left.Messages)))
	h.Close(left)
}
