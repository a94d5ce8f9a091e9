package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// batchGen builds batches: message counts and payload sizes drawn from the
// ranges with a seeded generator, payloads sliced from one shared pattern
// buffer, ids counting up per actor.
type batchGen struct {
	rng     *rand.Rand
	sizes   Range
	counts  Range
	pattern []byte
	msgs    []wire.Message
	actor   uint64
	seq     uint64
}

func newBatchGen(seed uint64, sizes, counts Range) *batchGen {
	pattern := make([]byte, sizes.Max)
	for i := range pattern {
		pattern[i] = 'a' + byte(i%26)
	}
	return &batchGen{rng: rand.New(rand.NewPCG(seed, 0x1995)), sizes: sizes, counts: counts, pattern: pattern, actor: seed}
}

func drawIn(rng *rand.Rand, r Range) uint32 {
	if r.fixed() {
		return r.Min
	}
	return r.Min + uint32(rng.Uint64N(uint64(r.Max-r.Min)+1))
}

// next returns the next batch (reusing the previous slice) and its user
// bytes; every message carries originUs.
func (g *batchGen) next(originUs uint64) ([]wire.Message, uint64) {
	n := int(drawIn(g.rng, g.counts))
	if cap(g.msgs) < n {
		g.msgs = make([]wire.Message, n)
	}
	g.msgs = g.msgs[:n]
	var bytes uint64
	for i := range g.msgs {
		size := drawIn(g.rng, g.sizes)
		g.seq++
		g.msgs[i] = wire.Message{ID: wire.Uint128{Lo: g.seq, Hi: g.actor}, OriginTimestamp: originUs, Payload: g.pattern[:size]}
		bytes += uint64(size)
	}
	return g.msgs, bytes
}

// Budget is what producing actors may still send: a number of batches or
// of bytes, shared by every actor holding the same Budget.
type Budget struct {
	left    atomic.Int64
	byBytes bool
}

// NewBatchBudget allows n batches.
func NewBatchBudget(n uint64) *Budget {
	b := &Budget{}
	b.left.Store(int64(min(n, 1<<62)))
	return b
}

// NewByteBudget allows n bytes (the batch that crosses it still goes).
func NewByteBudget(n uint64) *Budget {
	b := &Budget{byBytes: true}
	b.left.Store(int64(min(n, 1<<62)))
	return b
}

// Take reserves one batch of bytes; false once the budget is spent.
func (b *Budget) Take(bytes uint64) bool {
	if b.byBytes {
		return b.left.Add(-int64(bytes))+int64(bytes) > 0
	}
	return b.left.Add(-1) >= 0
}

// streamState is what consumers of a stream need to know to stop: how many
// messages went in and whether every producer has finished.
type streamState struct {
	name      string
	produced  atomic.Uint64
	producers atomic.Int64
}

func (s *streamState) finished() bool { return s.producers.Load() == 0 }

// groupState is shared by the members of one consumer group.
type groupState struct {
	name     string
	consumed atomic.Uint64
	// progressAt is the unix-nano time of the group's last received batch.
	progressAt atomic.Int64
}

// actorEnv is what every actor needs from the run.
type actorEnv struct {
	p   *Params
	cfg client.Config
	// start and warmEnd are set by Run before it opens the gate; actors
	// read them only after passing it.
	start   time.Time
	warmEnd time.Time
	now     func() time.Time
	// arrived receives one value per actor that is connected (and joined
	// its group); gate is closed when every actor has arrived, so all
	// start together and logins stay out of the measured time.
	arrived chan struct{}
	gate    chan struct{}
}

// ready reports the actor connected and waits for the start.
func (e *actorEnv) ready(ctx context.Context) error {
	e.arrived <- struct{}{} // buffered for every actor
	select {
	case <-e.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *actorEnv) since() time.Duration { return e.now().Sub(e.start) }

func (e *actorEnv) limiter(scale float64) *RateLimiter {
	r := e.p.perActorRate()
	if r == 0 {
		return nil
	}
	return NewRateLimiter(r * scale)
}

func (e *actorEnv) dial(ctx context.Context, who string) (*client.Client, error) {
	c, err := client.Dial(ctx, e.cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", who, err)
	}
	return c, nil
}

// producer sends batches until its budget is spent.
func runProducer(ctx context.Context, e *actorEnv, id int, st *streamState, part wire.Partitioning, budget *Budget, prog *actorProgress, rec *Recorder) error {
	who := fmt.Sprintf("producer #%d", id)
	defer st.producers.Add(-1)
	defer prog.done.Store(true)
	c, err := e.dial(ctx, who)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := e.ready(ctx); err != nil {
		return err
	}
	sid, tid := wire.MustNamedID(st.name), wire.MustNamedID(TopicName)
	gen := newBatchGen(uint64(id), e.p.MessageSize, e.p.MessagesPerBatch)
	lim := e.limiter(1)
	began := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		measuring := !e.now().Before(e.warmEnd)
		if measuring && !began {
			rec.Begin(e.since())
			began = true
		}
		msgs, user := gen.next(0)
		if measuring && !budget.Take(user) {
			return nil
		}
		var expected time.Duration
		if lim != nil {
			expected = lim.ExpectedInterval(user)
			if err := lim.Wait(ctx, user); err != nil {
				return err
			}
		}
		t0 := e.now()
		origin := uint64(t0.UnixMicro())
		for i := range msgs {
			msgs[i].OriginTimestamp = origin
		}
		if _, err := c.SendMessages(ctx, sid, tid, part, msgs); err != nil {
			return fmt.Errorf("%s: send to %s: %w", who, st.name, err)
		}
		lat := e.now().Sub(t0)
		st.produced.Add(uint64(len(msgs)))
		prog.add(uint64(len(msgs)), user)
		if measuring {
			rec.Add(Record{At: e.since(), Messages: uint64(len(msgs)), UserBytes: user, TotalBytes: uint64(wire.BatchSize(msgs)), Latency: lat, Expected: expected})
		}
	}
}

// consumerTarget tells a consumer when it has everything.
type consumerSpec struct {
	id    int
	st    *streamState
	group *groupState // nil: individual consumer on partition 0
}

// runConsumer polls until it (or its group) has received everything
// produced into the stream.
func runConsumer(ctx context.Context, e *actorEnv, spec consumerSpec, prog *actorProgress, rec *Recorder) error {
	who := fmt.Sprintf("consumer #%d", spec.id)
	defer prog.done.Store(true)
	c, err := e.dial(ctx, who)
	if err != nil {
		return err
	}
	defer c.Close()
	st := spec.st
	sid, tid := wire.MustNamedID(st.name), wire.MustNamedID(TopicName)
	scale := 1.0
	if e.p.Kind.endToEnd() {
		scale = e.p.ReadAmplification
	}
	lim := e.limiter(scale)
	req := wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(uint32(spec.id))), StreamID: sid, TopicID: tid,
		Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(0), Count: e.p.MessagesPerBatch.Max,
		WaitMillis: uint32(e.p.PollWait / time.Millisecond)}
	if spec.group != nil {
		gid := wire.MustNamedID(spec.group.name)
		if err := c.JoinConsumerGroup(ctx, sid, tid, gid); err != nil {
			return fmt.Errorf("%s: join group %s: %w", who, spec.group.name, err)
		}
		req.Consumer = wire.GroupConsumer(gid)
		req.Partition = wire.OptionalPartition{}
		req.Strategy = wire.PollFromNext()
		req.AutoCommit = true
	}
	if err := e.ready(ctx); err != nil {
		return err
	}
	var consumed uint64 // individual consumers: next offset to read
	lastProgress := e.now()
	began := false
	backoff := time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		total := st.produced.Load()
		prog.target.Store(total)
		done := consumed
		if spec.group != nil {
			done = spec.group.consumed.Load()
			if at := spec.group.progressAt.Load(); at > lastProgress.UnixNano() {
				lastProgress = time.Unix(0, at)
			}
		}
		if st.finished() && done >= st.produced.Load() {
			return nil
		}
		measuring := !e.now().Before(e.warmEnd)
		if measuring && !began {
			rec.Begin(e.since())
			began = true
		}
		if spec.group == nil {
			req.Strategy = wire.PollFromOffset(consumed)
		}
		t0 := e.now()
		polled, err := c.PollMessages(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: poll %s: %w", who, st.name, err)
		}
		recvAt := e.now()
		msgs := polled.Messages()
		if len(msgs) == 0 {
			if recvAt.Sub(lastProgress) > e.p.IdleTimeout {
				return fmt.Errorf("%s: no messages for %s (received %d of %d produced into %s)", who, e.p.IdleTimeout, done, st.produced.Load(), st.name)
			}
			if req.WaitMillis > 0 && recvAt.Sub(t0) >= e.p.PollWait/2 {
				// The server held the poll: nothing to back off from.
				continue
			}
			if err := sleepCtx(ctx, backoff); err != nil {
				return err
			}
			backoff = min(2*backoff, 20*time.Millisecond)
			continue
		}
		backoff = time.Millisecond
		lastProgress = recvAt
		var user uint64
		origin := msgs[0].OriginTimestamp
		for _, m := range msgs {
			user += uint64(len(m.Payload) + len(m.UserHeaders))
			origin = min(origin, m.OriginTimestamp)
		}
		n := uint64(len(msgs))
		if spec.group != nil {
			spec.group.consumed.Add(n)
			spec.group.progressAt.Store(recvAt.UnixNano())
		} else {
			consumed = msgs[len(msgs)-1].Offset + 1
		}
		prog.add(n, user)
		lat := recvAt.Sub(t0)
		if e.p.Kind.endToEnd() {
			lat = recvAt.Sub(time.UnixMicro(int64(origin)))
		}
		var expected time.Duration
		if lim != nil {
			expected = lim.ExpectedInterval(user)
		}
		if measuring {
			rec.Add(Record{At: e.since(), Messages: n, UserBytes: user, TotalBytes: user + n*wire.FrameHeaderSize + wire.BatchHeaderSize, Latency: lat, Expected: expected})
		}
		if lim != nil {
			if err := lim.Wait(ctx, user); err != nil {
				return err
			}
		}
	}
}

// runProducingConsumer sends a batch to its stream, polls it back, and
// repeats until its budget is spent.
func runProducingConsumer(ctx context.Context, e *actorEnv, id int, st *streamState, budget *Budget, prog *actorProgress, rec *Recorder) error {
	who := fmt.Sprintf("producing consumer #%d", id)
	defer st.producers.Add(-1)
	defer prog.done.Store(true)
	c, err := e.dial(ctx, who)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := e.ready(ctx); err != nil {
		return err
	}
	sid, tid := wire.MustNamedID(st.name), wire.MustNamedID(TopicName)
	gen := newBatchGen(uint64(id), e.p.MessageSize, e.p.MessagesPerBatch)
	lim := e.limiter(1)
	consumer := wire.SingleConsumer(wire.NumericID(uint32(id)))
	var next uint64
	began := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		measuring := !e.now().Before(e.warmEnd)
		if measuring && !began {
			rec.Begin(e.since())
			began = true
		}
		msgs, user := gen.next(0)
		if measuring && !budget.Take(user) {
			return nil
		}
		var expected time.Duration
		if lim != nil {
			expected = lim.ExpectedInterval(user)
			if err := lim.Wait(ctx, user); err != nil {
				return err
			}
		}
		t0 := e.now()
		origin := uint64(t0.UnixMicro())
		for i := range msgs {
			msgs[i].OriginTimestamp = origin
		}
		want := uint64(len(msgs))
		batchBytes := uint64(wire.BatchSize(msgs))
		if _, err := c.SendMessages(ctx, sid, tid, wire.PartitionByID(0), msgs); err != nil {
			return fmt.Errorf("%s: send to %s: %w", who, st.name, err)
		}
		st.produced.Add(want)
		var got uint64
		lastProgress := e.now()
		for got < want {
			polled, err := c.PollMessages(ctx, wire.PollMessages{Consumer: consumer, StreamID: sid, TopicID: tid,
				Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(next), Count: uint32(want - got)})
			if err != nil {
				return fmt.Errorf("%s: poll %s: %w", who, st.name, err)
			}
			pm := polled.Messages()
			if len(pm) == 0 {
				if e.now().Sub(lastProgress) > e.p.IdleTimeout {
					return fmt.Errorf("%s: the batch sent to %s did not come back within %s", who, st.name, e.p.IdleTimeout)
				}
				if err := sleepCtx(ctx, time.Millisecond); err != nil {
					return err
				}
				continue
			}
			lastProgress = e.now()
			got += uint64(len(pm))
			next = pm[len(pm)-1].Offset + 1
		}
		lat := e.now().Sub(t0)
		prog.add(want, user)
		if measuring {
			rec.Add(Record{At: e.since(), Messages: want, UserBytes: user, TotalBytes: batchBytes, Latency: lat, Expected: expected})
		}
	}
}
