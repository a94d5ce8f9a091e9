// Package workload drives a chaos run's clients through package client and
// records every operation in a history (package history).
//
// Roles, each a fixed number of workers with their own connection:
//
//   - producers send batches of 1..BatchMax messages to a partition they
//     choose; messages carry ids (producer, sequence, attempt) and payloads
//     derived from them; a send that fails or whose outcome is unknown is
//     retried up to MaxAttempts: the same batch again (same ids, the
//     client's producer identity, kept across redials: exactly-once), or
//     with AtLeastOnce a new attempt with fresh ids;
//   - consumers poll (next strategy with or without auto-commit, or from an
//     offset), store offsets (usually what they have read, sometimes a
//     rewind) and read their stored offsets;
//   - group members join the consumer group, poll through it (next
//     strategy), store the group's offsets, read them, and sometimes leave;
//   - metadata workers create, delete and read streams and topics drawn
//     from a few names.
//
// After a worker sees an unknown outcome it continues under a new process
// id (see package history). Each worker stops at the context's end or after
// MaxOps operations.
//
// Liveness and FinalReads are the phases after healing: the first needs a
// number of successful sends and polls within a deadline; the second reads
// every partition in full from every node, each node through a client that
// never leaves it.
package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

// Config sizes and points the workload. Zero values take the defaults
// noted.
type Config struct {
	// Addrs are the nodes' client addresses, by node index.
	Addrs              []string
	Username, Password string
	// Stream and Topic receive the message workload; Partitions is the
	// topic's partition count; Group is the consumer group's name;
	// MetadataStream holds the topics the metadata workers churn, and
	// MetadataPrefix starts the names of the streams they churn.
	Stream, Topic  string
	Partitions     int
	Group          string
	MetadataStream string
	MetadataPrefix string
	// Tag is stamped in every message id (history.MsgID.Wire).
	Tag uint32

	Producers, Consumers, GroupMembers, MetadataWorkers int
	// BatchMax bounds a send's messages (default 5); MessageSize is the
	// payload size (default 64); MaxAttempts bounds attempts per batch
	// (default 3, at most 65535).
	BatchMax, MessageSize, MaxAttempts int
	// AtLeastOnce makes producers send without the producer identity and
	// resend a failed batch as a new attempt with new ids (what Iggy's
	// SDKs give); by default a batch is resent as it is and lands at most
	// once.
	AtLeastOnce bool
	// PollMax bounds a poll's count (default 20).
	PollMax int
	// DialTimeout bounds a connection with its login (default 10 s).
	// OpTimeout bounds one operation (default 2 s); Think is the pause
	// between a worker's operations (default 2 ms); MaxOps bounds each
	// worker's operations (default 100000).
	DialTimeout time.Duration
	OpTimeout   time.Duration
	Think       time.Duration
	MaxOps      int
	// MetadataNames is how many stream and topic names the metadata
	// workers draw from (default 4).
	MetadataNames int
	Seed          int64
	// Client is the base client configuration (addresses and credentials
	// are set from the fields above); nil means client.DefaultConfig with
	// short timeouts.
	Client *client.Config
	Logger *zap.Logger
}

func (c *Config) defaults() error {
	if len(c.Addrs) == 0 {
		return errors.New("workload: no node address")
	}
	if c.Stream == "" || c.Topic == "" || c.Partitions < 1 {
		return errors.New("workload: stream, topic and partitions are required")
	}
	if c.Producers+c.Consumers+c.GroupMembers+c.MetadataWorkers > 1000 {
		return errors.New("workload: at most 1000 workers")
	}
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&c.BatchMax, 5)
	set(&c.MessageSize, 64)
	set(&c.MaxAttempts, 3)
	c.MaxAttempts = min(c.MaxAttempts, 65535)
	set(&c.PollMax, 20)
	set(&c.MaxOps, 100000)
	set(&c.MetadataNames, 4)
	if c.OpTimeout <= 0 {
		c.OpTimeout = 2 * time.Second
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.Think <= 0 {
		c.Think = 2 * time.Millisecond
	}
	if c.Group == "" {
		c.Group = "chaos-group"
	}
	if c.MetadataStream == "" {
		c.MetadataStream = c.Stream + "-md"
	}
	if c.MetadataPrefix == "" {
		c.MetadataPrefix = c.Stream + "-md-s"
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return nil
}

// Workload is one run's clients.
type Workload struct {
	cfg    Config
	rec    *history.Recorder
	nodeOf map[string]int

	sid, tid wire.Identifier
	gid      wire.Identifier

	mu sync.Mutex
	// acked is the highest acknowledged offset per partition (+1), which
	// final reads wait for on every node.
	acked   []uint64
	nextPID int
	// retried sums the clients' RetriedSends as they close.
	retried atomic.Uint64
}

// RetriedSends is how many sends the workload's clients confirmed after
// losing an attempt's outcome (retries inside one call).
func (w *Workload) RetriedSends() uint64 { return w.retried.Load() }

// New prepares a workload recording into rec.
func New(cfg Config, rec *history.Recorder) (*Workload, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w := &Workload{cfg: cfg, rec: rec, nodeOf: map[string]int{}, acked: make([]uint64, cfg.Partitions)}
	for i, a := range cfg.Addrs {
		w.nodeOf[a] = i
	}
	var err error
	if w.sid, err = wire.NamedID(cfg.Stream); err != nil {
		return nil, err
	}
	if w.tid, err = wire.NamedID(cfg.Topic); err != nil {
		return nil, err
	}
	if w.gid, err = wire.NamedID(cfg.Group); err != nil {
		return nil, err
	}
	// Worker process ids start at 0; later ones come from nextPID.
	w.nextPID = cfg.Producers + cfg.Consumers + cfg.GroupMembers + cfg.MetadataWorkers
	return w, nil
}

// Config returns the effective configuration.
func (w *Workload) Config() Config { return w.cfg }

func (w *Workload) newPID() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.nextPID
	w.nextPID++
	return p
}

func (w *Workload) clientConfig(addrs []string) client.Config {
	var cfg client.Config
	if w.cfg.Client != nil {
		cfg = *w.cfg.Client
	} else {
		cfg = client.DefaultConfig()
		cfg.DialTimeout = time.Second
		cfg.LeaderlessWait = time.Second
		cfg.HeartbeatInterval = 0
	}
	cfg.Addresses = addrs
	// One attempt per recorded operation: no reconnect-and-resend inside
	// the client (see worker.finish).
	cfg.Reconnect.Enabled = false
	cfg.AtLeastOnceSends = w.cfg.AtLeastOnce
	cfg.Username, cfg.Password = w.cfg.Username, w.cfg.Password
	cfg.RequestTimeout = w.cfg.OpTimeout
	cfg.Logger = w.cfg.Logger
	return cfg
}

// invalidCredentialsGrace is how long dial keeps retrying logins refused
// with InvalidCredentials before it gives up.
const invalidCredentialsGrace = 10 * time.Second

// dial connects, retrying until ctx ends. Each attempt starts from a
// random node (the client tries only its first address when it does not
// reconnect by itself; the leader check then moves it to the leader).
// A login verifies a password hash (argon2, tens to hundreds of ms of CPU),
// so after a restart every worker logging in at once can saturate a small
// machine: attempts get a generous timeout and back off exponentially with
// jitter instead of giving up and piling on.
func (w *Workload) dial(ctx context.Context, addrs []string, rng *rand.Rand, prod *client.Producer) (*client.Client, error) {
	backoff := 100 * time.Millisecond
	var badCreds time.Time
	for {
		first := rng.IntN(len(addrs))
		cfg := w.clientConfig(append(slices.Clone(addrs[first:]), addrs[:first]...))
		cfg.RequestTimeout = max(w.cfg.OpTimeout, w.cfg.DialTimeout)
		if prod != nil && !prod.ID.IsZero() {
			cfg.Producer = prod
		}
		c, err := client.New(cfg)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, max(w.cfg.OpTimeout, w.cfg.DialTimeout))
		err = c.Connect(cctx)
		cancel()
		if err == nil {
			return c, nil
		}
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A cluster node that rejoins empty (--fresh, a refilled
		// partition's node) knows no users until its metadata caught up:
		// wrong credentials are final only when they persist.
		if wire.HasCode(err, wire.CodeInvalidCredentials) {
			if badCreds.IsZero() {
				badCreds = time.Now()
			} else if time.Since(badCreds) > invalidCredentialsGrace {
				return nil, err
			}
		} else {
			badCreds = time.Time{}
		}
		sleep(ctx, backoff/2+time.Duration(rng.Int64N(int64(backoff))))
		backoff = min(2*backoff, 2*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Classify maps a client error to an outcome and the Iggy code it
// carries: nil is OK; a broken connection, a timeout or a closed client is
// Info (the request may have applied); TransientNotCommitted is Info; any
// other server answer (status, result section, eviction) and a request the
// client provably never sent are Fail.
func Classify(err error) (history.Type, int) {
	if err == nil {
		return history.OK, 0
	}
	var ce *client.ConnError
	switch {
	case errors.As(err, &ce):
		return history.Info, int(ce.IggyCode())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, client.ErrClosed):
		return history.Info, 0
	case errors.Is(err, client.ErrOutcomeUnknown):
		code, _ := wire.CodeOf(err)
		return history.Info, int(code)
	}
	code, ok := wire.CodeOf(err)
	if !ok {
		return history.Info, 0
	}
	if code == wire.CodeTransientNotCommitted {
		return history.Info, int(code)
	}
	return history.Fail, int(code)
}

// node maps the client's current address to a node index (-1 unknown).
func (w *Workload) node(c *client.Client) int {
	if i, ok := w.nodeOf[c.Addr()]; ok {
		return i
	}
	return -1
}

// finish records an operation's outcome; it returns the outcome.
func (w *Workload) finish(h *history.Pending, c *client.Client, err error, v history.Value) history.Type {
	t, code := Classify(err)
	node := w.node(c)
	switch t {
	case history.OK:
		h.OK(node, v)
	case history.Fail:
		h.Fail(node, err, code)
	default:
		h.Info(node, err, code)
	}
	return t
}

func (w *Workload) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, w.cfg.OpTimeout)
}

// Setup creates the stream, topic, group and metadata stream, retrying
// until they exist or ctx ends. It records nothing: it runs before faults.
func (w *Workload) Setup(ctx context.Context) error {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 0xfeed))
	c, err := w.dial(ctx, w.cfg.Addrs, rng, nil)
	if err != nil {
		return fmt.Errorf("workload: setup: %w", err)
	}
	defer c.Close()
	step := func(what string, f func(context.Context) error) error {
		for {
			octx, cancel := w.opCtx(ctx)
			err := f(octx)
			cancel()
			if err == nil || wire.IsAlreadyExists(err) {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("workload: setup: %s: %w (last error %v)", what, ctx.Err(), err)
			}
			w.cfg.Logger.Debug("setup retry", zap.String("step", what), zap.Error(err))
			sleep(ctx, 100*time.Millisecond)
		}
	}
	steps := []struct {
		what string
		f    func(context.Context) error
	}{
		{"create stream", func(ctx context.Context) error { _, err := c.CreateStream(ctx, w.cfg.Stream, nil); return err }},
		{"create topic", func(ctx context.Context) error {
			_, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: w.sid, PartitionsCount: uint32(w.cfg.Partitions), Name: w.cfg.Topic})
			return err
		}},
		{"create group", func(ctx context.Context) error {
			_, err := c.CreateConsumerGroup(ctx, w.sid, w.tid, w.cfg.Group)
			return err
		}},
		{"create metadata stream", func(ctx context.Context) error { _, err := c.CreateStream(ctx, w.cfg.MetadataStream, nil); return err }},
		{"check topic", func(ctx context.Context) error {
			t, err := c.GetTopic(ctx, w.sid, w.tid)
			if err == nil && int(t.PartitionsCount) != w.cfg.Partitions {
				return fmt.Errorf("topic %s has %d partitions, want %d", w.cfg.Topic, t.PartitionsCount, w.cfg.Partitions)
			}
			return err
		}},
	}
	for _, s := range steps {
		if err := step(s.what, s.f); err != nil {
			return err
		}
	}
	return nil
}

// Run runs every worker until ctx ends or they reach MaxOps.
func (w *Workload) Run(ctx context.Context) {
	var wg sync.WaitGroup
	idx := 0
	spawn := func(n int, f func(ctx context.Context, worker, pid int, rng *rand.Rand)) {
		for i := 0; i < n; i++ {
			pid := idx
			idx++
			rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), uint64(pid)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(ctx, i, pid, rng)
			}()
		}
	}
	spawn(w.cfg.Producers, w.producer)
	spawn(w.cfg.Consumers, w.consumer)
	spawn(w.cfg.GroupMembers, w.member)
	spawn(w.cfg.MetadataWorkers, w.metadata)
	wg.Wait()
}

// worker holds a worker's connection and process id.
type worker struct {
	w   *Workload
	pid int
	c   *client.Client
	rng *rand.Rand
	ops int
}

func (w *Workload) newWorker(ctx context.Context, pid int, rng *rand.Rand) *worker {
	k := &worker{w: w, pid: pid, rng: rng}
	k.c, _ = w.dial(ctx, w.cfg.Addrs, rng, nil)
	return k
}

func (k *worker) close() {
	if k.c != nil {
		k.w.retried.Add(k.c.RetriedSends())
		k.c.Close()
	}
}

// next reports whether the worker may run another operation, pausing
// Think first.
func (k *worker) next(ctx context.Context) bool {
	if ctx.Err() != nil || k.c == nil || k.ops >= k.w.cfg.MaxOps {
		return false
	}
	k.ops++
	sleep(ctx, k.w.cfg.Think)
	return ctx.Err() == nil
}

// finish records an operation's outcome. After an unknown outcome the
// worker continues under a new process id; after a broken connection it
// dials again (the clients do not reconnect by themselves, so that every
// attempt of a request is one recorded operation: a client that silently
// re-sent a poll with auto-commit would hide a store).
func (k *worker) finish(ctx context.Context, h *history.Pending, err error, v history.Value) history.Type {
	t := k.w.finish(h, k.c, err, v)
	if t == history.Info {
		k.pid = k.w.newPID()
	}
	if broken(err) {
		// The new client continues the producer identity (and the send
		// left in doubt), so the retry of that batch is applied at most
		// once.
		p := k.c.Producer()
		k.w.retried.Add(k.c.RetriedSends())
		k.c.Close()
		k.c, _ = k.w.dial(ctx, k.w.cfg.Addrs, k.rng, &p)
	}
	return t
}

// broken reports errors after which the client has no usable connection.
func broken(err error) bool {
	if err == nil {
		return false
	}
	var ce *client.ConnError
	var ev *wire.EvictionError
	return errors.As(err, &ce) || errors.As(err, &ev) || errors.Is(err, client.ErrNotConnected) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, client.ErrClosed)
}

func (w *Workload) base(part uint32) history.Value {
	return history.Value{Stream: w.cfg.Stream, Topic: w.cfg.Topic, Partition: history.U32(part)}
}

// batch mints the messages of one attempt.
func (w *Workload) batch(producer uint32, seq uint64, n int, attempt uint32) ([]history.MsgID, []wire.Message) {
	ids := make([]history.MsgID, n)
	msgs := make([]wire.Message, n)
	for i := range ids {
		ids[i] = history.MsgID{Producer: producer, Seq: seq + uint64(i), Attempt: attempt}
		msgs[i] = wire.Message{ID: ids[i].Wire(w.cfg.Tag), OriginTimestamp: uint64(time.Now().UnixMicro()),
			Payload: history.Payload(w.cfg.Tag, ids[i], w.cfg.MessageSize)}
	}
	return ids, msgs
}

// send performs one attempt; it returns the outcome and the error.
func (w *Workload) send(ctx context.Context, k *worker, part uint32, ids []history.MsgID, msgs []wire.Message) (history.Type, error) {
	n := len(ids)
	args := w.base(part)
	args.Msgs = ids
	h := w.rec.Invoke(k.pid, history.Send, args)
	octx, cancel := w.opCtx(ctx)
	conf, err := k.c.SendMessages(octx, w.sid, w.tid, wire.PartitionByID(part), msgs)
	cancel()
	res := history.Value{}
	if err == nil && len(conf) > 0 {
		res.Partition, res.Base = history.U32(conf[0].PartitionID), history.U64(conf[0].BaseOffset)
		w.mu.Lock()
		if p := conf[0].PartitionID; int(p) < len(w.acked) {
			w.acked[p] = max(w.acked[p], conf[0].BaseOffset+uint64(n))
		}
		w.mu.Unlock()
	}
	return k.finish(ctx, h, err, res), err
}

// producer sends batches. Exactly-once (the default): a batch whose send
// failed or whose outcome is unknown is sent again as it is — the same
// message ids and bytes, so the client reuses its producer request number
// and the partition applies it at most once — until it is acknowledged,
// the client reports ErrOutcomeUnknown (the partition no longer knows the
// producer: retrying could duplicate) or MaxAttempts. AtLeastOnce: each
// attempt is a new batch (new ids), as an Iggy SDK user would resend.
func (w *Workload) producer(ctx context.Context, i, pid int, rng *rand.Rand) {
	k := w.newWorker(ctx, pid, rng)
	defer k.close()
	producer := uint32(i)
	var seq uint64
	for k.next(ctx) {
		n := 1 + rng.IntN(w.cfg.BatchMax)
		part := uint32(rng.IntN(w.cfg.Partitions))
		ids, msgs := w.batch(producer, seq, n, 1)
		// A failed redial (k.c nil) ends the attempts: next ends the worker.
		for attempt := 1; attempt <= w.cfg.MaxAttempts && ctx.Err() == nil && k.c != nil; attempt++ {
			if attempt > 1 && w.cfg.AtLeastOnce {
				ids, msgs = w.batch(producer, seq, n, uint32(attempt))
			}
			t, err := w.send(ctx, k, part, ids, msgs)
			if t == history.OK || errors.Is(err, client.ErrOutcomeUnknown) {
				break
			}
		}
		seq += uint64(n)
	}
}

// observe turns a poll reply into observations.
func (w *Workload) observe(p wire.PolledMessages) []history.Obs {
	msgs := p.Messages()
	out := make([]history.Obs, len(msgs))
	for i, m := range msgs {
		id := history.FromWire(m.ID, w.cfg.Tag)
		out[i] = history.Obs{Offset: m.Offset, ID: id, Corrupt: !id.Foreign && !history.PayloadMatches(w.cfg.Tag, id, m.Payload)}
	}
	return out
}

func (w *Workload) consumer(ctx context.Context, i, pid int, rng *rand.Rand) {
	k := w.newWorker(ctx, pid, rng)
	defer k.close()
	cid := uint32(1000 + i)
	consumer := wire.SingleConsumer(wire.NumericID(cid))
	key := fmt.Sprintf("c:%d", cid)
	seen := make([]int64, w.cfg.Partitions) // highest offset read, -1 none
	for j := range seen {
		seen[j] = -1
	}
	for k.next(ctx) {
		part := uint32(rng.IntN(w.cfg.Partitions))
		args := w.base(part)
		args.Consumer = key
		switch r := rng.IntN(10); {
		case r < 6: // poll
			req := wire.PollMessages{Consumer: consumer, StreamID: w.sid, TopicID: w.tid, Partition: wire.SomePartition(part),
				Count: uint32(1 + rng.IntN(w.cfg.PollMax))}
			if r < 4 {
				req.Strategy, args.Strategy = wire.PollFromNext(), "next"
				req.AutoCommit = rng.IntN(2) == 0
			} else {
				from := uint64(rng.IntN(int(max(seen[part]+2, 1))))
				req.Strategy, args.Strategy, args.From = wire.PollFromOffset(from), "offset", history.U64(from)
			}
			args.Count, args.AutoCommit = req.Count, req.AutoCommit
			h := w.rec.Invoke(k.pid, history.Poll, args)
			octx, cancel := w.opCtx(ctx)
			res, err := k.c.PollMessages(octx, req)
			cancel()
			v := history.Value{}
			if err == nil {
				v.Partition, v.Read, v.Current = history.U32(res.PartitionID), w.observe(res), history.U64(res.CurrentOffset)
				if n := len(v.Read); n > 0 {
					seen[part] = max(seen[part], int64(v.Read[n-1].Offset))
				}
			}
			k.finish(ctx, h, err, v)
		case r < 8: // store: what was read, or sometimes a rewind
			if seen[part] < 0 {
				continue
			}
			off := uint64(seen[part])
			if rng.IntN(10) == 0 {
				off = uint64(rng.Int64N(seen[part] + 1))
			}
			args.Offset = history.U64(off)
			h := w.rec.Invoke(k.pid, history.StoreOffset, args)
			octx, cancel := w.opCtx(ctx)
			err := k.c.StoreConsumerOffset(octx, consumer, w.sid, w.tid, wire.SomePartition(part), off)
			cancel()
			k.finish(ctx, h, err, history.Value{})
		default: // read the stored offset
			h := w.rec.Invoke(k.pid, history.GetOffset, args)
			octx, cancel := w.opCtx(ctx)
			o, err := k.c.GetConsumerOffset(octx, consumer, w.sid, w.tid, wire.SomePartition(part))
			cancel()
			v := history.Value{}
			if err == nil && o != nil {
				v.Offset = history.U64(o.StoredOffset)
			}
			k.finish(ctx, h, err, v)
		}
	}
}

func (w *Workload) member(ctx context.Context, i, pid int, rng *rand.Rand) {
	k := w.newWorker(ctx, pid, rng)
	defer k.close()
	key := "g:" + w.cfg.Group
	group := wire.GroupConsumer(w.gid)
	joined := false
	groupArgs := history.Value{Stream: w.cfg.Stream, Topic: w.cfg.Topic, Consumer: key}
	for k.next(ctx) {
		if !joined {
			h := w.rec.Invoke(k.pid, history.JoinGroup, groupArgs)
			octx, cancel := w.opCtx(ctx)
			err := k.c.JoinConsumerGroup(octx, w.sid, w.tid, w.gid)
			cancel()
			joined = k.finish(ctx, h, err, history.Value{}) == history.OK
			continue
		}
		switch r := rng.IntN(20); {
		case r < 14: // poll through the group, then store what was read
			args := groupArgs
			args.Strategy, args.Count, args.AutoCommit = "next", uint32(1+rng.IntN(w.cfg.PollMax)), rng.IntN(2) == 0
			h := w.rec.Invoke(k.pid, history.GroupPoll, args)
			octx, cancel := w.opCtx(ctx)
			res, err := k.c.PollGroup(octx, w.sid, w.tid, w.gid, wire.PollFromNext(), args.Count, args.AutoCommit)
			cancel()
			v := history.Value{}
			owned := err == nil && res.PartitionID != wire.NoAssignedPartition && res.PartitionID != wire.ResyncPartition
			if owned {
				v.Partition, v.Read, v.Current = history.U32(res.PartitionID), w.observe(res), history.U64(res.CurrentOffset)
			}
			t := k.finish(ctx, h, err, v)
			if t != history.OK || !owned || len(v.Read) == 0 || args.AutoCommit {
				continue
			}
			sargs := w.base(res.PartitionID)
			sargs.Consumer = key
			sargs.Offset = history.U64(v.Read[len(v.Read)-1].Offset)
			h = w.rec.Invoke(k.pid, history.StoreOffset, sargs)
			octx, cancel = w.opCtx(ctx)
			err = k.c.StoreConsumerOffset(octx, group, w.sid, w.tid, wire.SomePartition(res.PartitionID), *sargs.Offset)
			cancel()
			k.finish(ctx, h, err, history.Value{})
		case r < 19: // read a stored offset
			part := uint32(rng.IntN(w.cfg.Partitions))
			args := w.base(part)
			args.Consumer = key
			h := w.rec.Invoke(k.pid, history.GetOffset, args)
			octx, cancel := w.opCtx(ctx)
			o, err := k.c.GetConsumerOffset(octx, group, w.sid, w.tid, wire.SomePartition(part))
			cancel()
			v := history.Value{}
			if err == nil && o != nil {
				v.Offset = history.U64(o.StoredOffset)
			}
			k.finish(ctx, h, err, v)
		default:
			h := w.rec.Invoke(k.pid, history.LeaveGroup, groupArgs)
			octx, cancel := w.opCtx(ctx)
			err := k.c.LeaveConsumerGroup(octx, w.sid, w.tid, w.gid)
			cancel()
			k.finish(ctx, h, err, history.Value{})
			joined = false
		}
	}
}

func (w *Workload) metadata(ctx context.Context, i, pid int, rng *rand.Rand) {
	k := w.newWorker(ctx, pid, rng)
	defer k.close()
	mds := wire.MustNamedID(w.cfg.MetadataStream)
	for k.next(ctx) {
		n := rng.IntN(w.cfg.MetadataNames)
		streamName := fmt.Sprintf("%s%d", w.cfg.MetadataPrefix, n)
		topicName := fmt.Sprintf("t%d", n)
		kinds := []history.Kind{history.CreateStream, history.DeleteStream, history.GetStream, history.GetStream,
			history.CreateTopic, history.DeleteTopic, history.GetTopic, history.GetTopic}
		kind := kinds[rng.IntN(len(kinds))]
		args := history.Value{Name: streamName}
		if kind == history.CreateTopic || kind == history.DeleteTopic || kind == history.GetTopic {
			args = history.Value{Stream: w.cfg.MetadataStream, Name: topicName}
		}
		h := w.rec.Invoke(k.pid, kind, args)
		octx, cancel := w.opCtx(ctx)
		var err error
		v := history.Value{}
		switch kind {
		case history.CreateStream:
			var s wire.Stream
			if s, err = k.c.CreateStream(octx, streamName, nil); err == nil {
				v.ID = history.U32(s.ID)
			}
		case history.DeleteStream:
			err = k.c.DeleteStream(octx, wire.MustNamedID(streamName))
		case history.GetStream:
			var s wire.StreamDetails
			if s, err = k.c.GetStream(octx, wire.MustNamedID(streamName)); err == nil {
				v.ID = history.U32(s.ID)
			}
		case history.CreateTopic:
			var t wire.TopicDetails
			if t, err = k.c.CreateTopic(octx, wire.CreateTopic{StreamID: mds, PartitionsCount: 1, Name: topicName}); err == nil {
				v.ID = history.U32(t.ID)
			}
		case history.DeleteTopic:
			err = k.c.DeleteTopic(octx, mds, wire.MustNamedID(topicName))
		case history.GetTopic:
			var t wire.TopicDetails
			if t, err = k.c.GetTopic(octx, mds, wire.MustNamedID(topicName)); err == nil {
				v.ID = history.U32(t.ID)
			}
		}
		cancel()
		k.finish(ctx, h, err, v)
	}
}

// Liveness runs sends and polls (fresh producer and consumer ids) until
// need of them succeeded or ctx ends, and returns how many succeeded.
func (w *Workload) Liveness(ctx context.Context, need int) int {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.Seed), 0x11fe))
	k := &worker{w: w, pid: w.newPID(), rng: rng}
	var err error
	if k.c, err = w.dial(ctx, w.cfg.Addrs, rng, nil); err != nil {
		return 0
	}
	defer k.close()
	producer := uint32(w.cfg.Producers) // an id no run-phase producer used
	var seq uint64
	ok := 0
	for i := 0; ok < need && ctx.Err() == nil; i++ {
		part := uint32(i % w.cfg.Partitions)
		if i%2 == 0 {
			ids, msgs := w.batch(producer, seq, 1, 1)
			if t, _ := w.send(ctx, k, part, ids, msgs); t == history.OK {
				ok++
			}
			seq++
			continue
		}
		args := w.base(part)
		args.Consumer, args.Strategy, args.From, args.Count = "c:999", "offset", history.U64(0), 1
		h := w.rec.Invoke(k.pid, history.Poll, args)
		octx, cancel := w.opCtx(ctx)
		res, err := k.c.PollMessages(octx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(999)), StreamID: w.sid, TopicID: w.tid,
			Partition: wire.SomePartition(part), Strategy: wire.PollFromOffset(0), Count: 1})
		cancel()
		v := history.Value{}
		if err == nil {
			v.Partition, v.Read, v.Current = history.U32(res.PartitionID), w.observe(res), history.U64(res.CurrentOffset)
		}
		t := k.finish(ctx, h, err, v)
		if t == history.OK {
			ok++
		} else {
			sleep(ctx, 50*time.Millisecond)
		}
	}
	return ok
}

// FinalReads reads every partition in full from every node, each through
// a client pinned to that node, and records one FinalRead per (node,
// partition). It repeats rounds until every node holds every acknowledged
// offset and all nodes agree on each partition, until three rounds in a
// row read the same thing (waiting longer would not change the verdict),
// or until ctx ends; it returns the number of rounds.
func (w *Workload) FinalReads(ctx context.Context) int {
	w.mu.Lock()
	want := slices.Clone(w.acked)
	w.mu.Unlock()
	var prev [][]extent
	stable := 0
	for rounds := 1; ; rounds++ {
		cur := make([][]extent, len(w.cfg.Addrs))
		for n := range w.cfg.Addrs {
			cur[n] = w.readNode(ctx, n)
		}
		if ctx.Err() != nil || converged(cur, want) {
			return rounds
		}
		if slices.EqualFunc(cur, prev, slices.Equal[[]extent]) {
			if stable++; stable >= 2 {
				return rounds
			}
		} else {
			stable = 0
		}
		prev = cur
		sleep(ctx, 500*time.Millisecond)
	}
}

// extent is what a final read of one partition found: how many messages
// and the offset after the last one; count -1 means the read failed.
type extent struct {
	count int
	end   uint64
}

func converged(ext [][]extent, want []uint64) bool {
	for p := range want {
		for n := range ext {
			if ext[n][p].count < 0 || ext[n][p].end < want[p] || ext[n][p] != ext[0][p] {
				return false
			}
		}
	}
	return true
}

// readNode reads every partition from node n.
func (w *Workload) readNode(ctx context.Context, n int) []extent {
	lengths := make([]extent, w.cfg.Partitions)
	for p := range lengths {
		lengths[p].count = -1
	}
	cfg := w.clientConfig([]string{w.cfg.Addrs[n]})
	cfg.MaxRedirects = 0 // never wander to another node
	c, err := client.New(cfg)
	if err != nil {
		return lengths
	}
	defer c.Close()
	octx, cancel := w.opCtx(ctx)
	err = c.Connect(octx)
	cancel()
	for p := 0; p < w.cfg.Partitions; p++ {
		args := w.base(uint32(p))
		args.Node = history.Int(n)
		h := w.rec.Invoke(w.newPID(), history.FinalRead, args)
		if err != nil {
			t, code := Classify(err)
			if t == history.OK {
				t = history.Info
			}
			if t == history.Fail {
				h.Fail(n, err, code)
			} else {
				h.Info(n, err, code)
			}
			continue
		}
		read, cur, rerr := w.readPartition(ctx, c, uint32(p))
		if rerr == nil && c.Addr() != w.cfg.Addrs[n] {
			rerr = fmt.Errorf("workload: final read of node %d was served by %s", n, c.Addr())
		}
		if rerr != nil {
			h.Info(n, rerr, 0)
			err = rerr // the connection is suspect: report the rest unknown
			continue
		}
		h.OK(n, history.Value{Read: read, Current: history.U64(cur)})
		lengths[p].count = len(read)
		if len(read) > 0 {
			lengths[p].end = read[len(read)-1].Offset + 1
		}
	}
	return lengths
}

// readPartition polls partition p from offset 0 to its end.
func (w *Workload) readPartition(ctx context.Context, c *client.Client, p uint32) ([]history.Obs, uint64, error) {
	var out []history.Obs
	var from, cur uint64
	consumer := wire.SingleConsumer(wire.NumericID(998))
	for {
		octx, cancel := w.opCtx(ctx)
		res, err := c.PollMessages(octx, wire.PollMessages{Consumer: consumer, StreamID: w.sid, TopicID: w.tid,
			Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(from), Count: 1000})
		cancel()
		if err != nil {
			return nil, 0, err
		}
		cur = res.CurrentOffset
		obs := w.observe(res)
		if len(obs) == 0 {
			return out, cur, nil
		}
		out = append(out, obs...)
		next := obs[len(obs)-1].Offset + 1
		if next <= from {
			// The server went backwards; stop rather than loop. The
			// checker sees the order violation in what was read.
			return out, cur, nil
		}
		from = next
		if len(out) > 10_000_000 {
			return out, cur, errors.New("workload: final read exceeds 10M messages")
		}
	}
}

// Acked returns the acknowledged end offset of every partition so far.
func (w *Workload) Acked() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

// Holds reports whether node n serves every partition up to want (the end
// offsets from Acked), reading through a client pinned to that node. It
// records nothing: the runner uses it to tell when a node whose data a
// fault destroyed has been refilled by its peers.
func (w *Workload) Holds(ctx context.Context, n int, want []uint64) bool {
	cfg := w.clientConfig([]string{w.cfg.Addrs[n]})
	cfg.MaxRedirects = 0
	cfg.Logger = nil
	c, err := client.New(cfg)
	if err != nil {
		return false
	}
	defer c.Close()
	octx, cancel := w.opCtx(ctx)
	err = c.Connect(octx)
	cancel()
	if err != nil {
		return false
	}
	for p, end := range want {
		if end == 0 {
			continue
		}
		octx, cancel := w.opCtx(ctx)
		res, err := c.PollMessages(octx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(997)), StreamID: w.sid, TopicID: w.tid,
			Partition: wire.SomePartition(uint32(p)), Strategy: wire.PollFromOffset(end - 1), Count: 1})
		cancel()
		if err != nil || c.Addr() != w.cfg.Addrs[n] || res.MessagesCount == 0 || res.CurrentOffset+1 < end {
			return false
		}
	}
	return true
}
