package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// Options control what Run prints while it runs.
type Options struct {
	// Out receives progress, the summary and the paths of written files.
	Out io.Writer
	// Progress selects bars, periodic lines or nothing.
	Progress ProgressMode
	// ProgressInterval is the period of ProgressLines (default 1 s).
	ProgressInterval time.Duration
}

// Result is what a finished run produced.
type Result struct {
	Report *Report
	// Files are the report and chart paths written (none without
	// Params.OutputDir).
	Files []string
}

// seedParallelism bounds the connections of the seeding phase.
const seedParallelism = 8

// Run executes one benchmark: it validates p, prepares the streams, runs
// the actors, prints the summary, writes the report and charts, and
// deletes the streams it created (unless p.KeepStreams) even when the run
// fails or ctx is cancelled.
func Run(ctx context.Context, p Params, opt Options) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	if opt.ProgressInterval <= 0 {
		opt.ProgressInterval = time.Second
	}
	cfg := clientConfig(&p)
	admin, err := client.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", p.Server.Address, err)
	}
	defer admin.Close()

	streams, created, err := setup(ctx, admin, &p)
	defer func() {
		if p.KeepStreams {
			return
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, name := range created {
			if err := admin.DeleteStream(cctx, wire.MustNamedID(name)); err != nil && !wire.IsNotFound(err) {
				fmt.Fprintf(opt.Out, "warning: could not delete benchmark stream %s: %v\n", name, err)
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := seed(ctx, &p, cfg, admin, streams, opt); err != nil {
		return nil, err
	}

	env := &actorEnv{p: &p, cfg: cfg, now: time.Now, gate: make(chan struct{})}
	type actor struct {
		run  func(context.Context) error
		rec  *Recorder
		prog *actorProgress
	}
	var actors []*actor
	add := func(kind ActorKind, id int, st *streamState, run func(ctx context.Context, prog *actorProgress, rec *Recorder) error) {
		a := &actor{rec: NewRecorder(kind, id, st.name), prog: &actorProgress{kind: kind, label: fmt.Sprintf("%s #%d", actorTitle(kind), id)}}
		a.run = func(ctx context.Context) error { return run(ctx, a.prog, a.rec) }
		actors = append(actors, a)
	}
	k := p.Kind
	switch {
	case k == EndToEndProducingConsumer:
		for id := 1; id <= p.Producers; id++ {
			st := streams[id-1]
			st.producers.Add(1)
			budget := perActorBudget(&p, p.Producers)
			add(ActorProducingConsumer, id, st, func(ctx context.Context, prog *actorProgress, rec *Recorder) error {
				return runProducingConsumer(ctx, env, id, st, budget, prog, rec)
			})
		}
	case k.hasProducers():
		var shared *Budget
		if !k.pinned() {
			if p.TotalData > 0 {
				shared = NewByteBudget(p.TotalData)
			} else {
				shared = NewBatchBudget(p.MessageBatches * uint64(p.Producers))
			}
		}
		for id := 1; id <= p.Producers; id++ {
			st := streams[(id-1)%p.Streams]
			st.producers.Add(1)
			budget, part := shared, wire.Balanced()
			if k.pinned() {
				budget, part = perActorBudget(&p, p.Producers), wire.PartitionByID(0)
			}
			add(ActorProducer, id, st, func(ctx context.Context, prog *actorProgress, rec *Recorder) error {
				return runProducer(ctx, env, id, st, part, budget, prog, rec)
			})
		}
	}
	if k.hasConsumers() {
		groups := make([]*groupState, p.ConsumerGroups)
		for g := range groups {
			groups[g] = &groupState{name: GroupName(g + 1)}
		}
		for id := 1; id <= p.Consumers; id++ {
			var spec consumerSpec
			if k.groups() {
				g := (id - 1) % p.ConsumerGroups
				spec = consumerSpec{id: id, st: streams[g], group: groups[g]}
			} else {
				spec = consumerSpec{id: id, st: streams[id-1]}
			}
			add(ActorConsumer, id, spec.st, func(ctx context.Context, prog *actorProgress, rec *Recorder) error {
				return runConsumer(ctx, env, spec, prog, rec)
			})
		}
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	progs := make([]*actorProgress, len(actors))
	for i, a := range actors {
		progs[i] = a.prog
	}
	// Every actor connects (and joins its group) first; the clock starts
	// when all have, or when one has failed (runCtx is then cancelled and
	// the others return).
	env.arrived = make(chan struct{}, len(actors))
	errs := make([]error, len(actors))
	var wg sync.WaitGroup
	for i, a := range actors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.run(runCtx); err != nil {
				errs[i] = err
				cancel()
			}
		}()
	}
	for arrived := 0; arrived < len(actors) && runCtx.Err() == nil; {
		select {
		case <-env.arrived:
			arrived++
		case <-runCtx.Done():
		}
	}
	env.start = time.Now()
	env.warmEnd = env.start.Add(p.WarmupTime)
	close(env.gate)
	var disp display = noDisplay{}
	if runCtx.Err() == nil {
		switch opt.Progress {
		case ProgressBars:
			disp = startBars(runCtx, opt.Out, progs, env.start)
		case ProgressLines:
			disp = startLines(runCtx, opt.Out, progs, opt.ProgressInterval, env.start)
		}
	}
	wg.Wait()
	disp.stop()
	if err := firstError(ctx, errs); err != nil {
		return nil, err
	}

	var stats *ServerStats
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if s, err := admin.GetStats(sctx); err == nil {
		stats = serverStats(s)
	}
	scancel()
	recs := make([]*Recorder, len(actors))
	for i, a := range actors {
		recs[i] = a.rec
	}
	rep := BuildReport(&p, recs, DetectHardware(), stats, env.start)
	rep.PrintSummary(opt.Out)
	res := &Result{Report: rep}
	if p.OutputDir != "" {
		files, err := rep.writeOutputs(p.OutputDir, p.MovingAverageWindow, !p.NoCharts)
		res.Files = files
		if err != nil {
			return res, fmt.Errorf("write report: %w", err)
		}
		fmt.Fprintf(opt.Out, "\nReport and charts:\n")
		for _, f := range files {
			fmt.Fprintf(opt.Out, "  %s\n", f)
		}
	}
	return res, nil
}

// firstError picks the error that caused the run to stop: the caller's
// cancellation, else the first actor error that is not a consequence of
// another actor's failure.
func firstError(ctx context.Context, errs []error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var canceled error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			canceled = err
		default:
			return err
		}
	}
	return canceled
}

func clientConfig(p *Params) client.Config {
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{p.Server.Address}
	cfg.TLS = p.Server.TLS
	cfg.Transport = p.Server.Transport
	cfg.Username, cfg.Password, cfg.Token = p.Server.Username, p.Server.Password, p.Server.Token
	if cfg.Token != "" {
		cfg.Username, cfg.Password = "", ""
	}
	cfg.SDKName = "iggo-bench"
	cfg.HeartbeatInterval = 0
	// A benchmark reports a broken connection rather than hiding it.
	cfg.Reconnect.Enabled = false
	cfg.RequestTimeout = max(p.IdleTimeout, time.Second)
	return cfg
}

func perActorBudget(p *Params, actors int) *Budget {
	if p.TotalData > 0 {
		return NewByteBudget(p.TotalData / uint64(actors))
	}
	return NewBatchBudget(p.MessageBatches)
}

// topicOptions are the settings of the topics the benchmark creates.
func topicOptions(p *Params) wire.Options {
	var o wire.Options
	if p.MaxTopicSize != 0 {
		o = o.With(wire.OptMaxTopicSize, wire.Uint64Value(p.MaxTopicSize))
	}
	if p.MessageExpiry != 0 {
		o = o.With(wire.OptMessageExpiry, wire.Uint64Value(p.MessageExpiry))
	}
	if p.Durability != "" {
		o = o.With("durability", wire.StringValue(p.Durability))
	}
	if p.ConsumerOffsetDurability != "" {
		o = o.With("consumer_offset_durability", wire.StringValue(p.ConsumerOffsetDurability))
	}
	return o
}

// setup creates (or, with ReuseStreams, adopts) the benchmark streams and
// groups. It returns a state per stream and the names of the streams it
// created, which are deleted at the end.
func setup(ctx context.Context, admin *client.Client, p *Params) ([]*streamState, []string, error) {
	existing, err := admin.GetStreams(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list streams: %w", err)
	}
	have := map[string]bool{}
	for _, s := range existing {
		have[s.Name] = true
	}
	var created []string
	states := make([]*streamState, p.Streams)
	sub := wire.MustNamedID(TopicName)
	for i := 1; i <= p.Streams; i++ {
		name := StreamName(i)
		sid := wire.MustNamedID(name)
		states[i-1] = &streamState{name: name}
		if have[name] && p.ReuseStreams {
			td, err := admin.GetTopic(ctx, sid, sub)
			if err == nil {
				states[i-1].produced.Store(existingMessages(p, td))
				continue
			}
			if !wire.IsNotFound(err) {
				return states, created, fmt.Errorf("inspect %s: %w", name, err)
			}
			if err := createTopic(ctx, admin, p, sid); err != nil {
				return states, created, fmt.Errorf("create topic in %s: %w", name, err)
			}
			continue
		}
		if have[name] {
			if err := admin.DeleteStream(ctx, sid); err != nil && !wire.IsNotFound(err) {
				return states, created, fmt.Errorf("delete stale stream %s: %w", name, err)
			}
		}
		if _, err := admin.CreateStream(ctx, name, nil); err != nil {
			return states, created, fmt.Errorf("create stream %s: %w", name, err)
		}
		created = append(created, name)
		if err := createTopic(ctx, admin, p, sid); err != nil {
			return states, created, fmt.Errorf("create topic in %s: %w", name, err)
		}
	}
	for g := 1; g <= p.ConsumerGroups; g++ {
		sid, gid := wire.MustNamedID(StreamName(g)), wire.MustNamedID(GroupName(g))
		// A group left over from an earlier run would resume at its stored
		// offsets; start from a fresh one.
		if err := admin.DeleteConsumerGroup(ctx, sid, sub, gid); err != nil && !wire.IsNotFound(err) {
			return states, created, fmt.Errorf("reset group %s: %w", GroupName(g), err)
		}
		if _, err := admin.CreateConsumerGroup(ctx, sid, sub, GroupName(g)); err != nil {
			return states, created, fmt.Errorf("create group %s: %w", GroupName(g), err)
		}
	}
	return states, created, nil
}

// createTopic creates the benchmark topic in stream sid with p.Partitions
// partitions: CREATE_TOPIC takes at most wire.MaxPartitionsPerRequest, so a
// larger topic is created with that many and grown with CREATE_PARTITIONS
// requests of at most as many each.
func createTopic(ctx context.Context, admin *client.Client, p *Params, sid wire.Identifier) error {
	first := min(p.Partitions, wire.MaxPartitionsPerRequest)
	if _, err := admin.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, PartitionsCount: uint32(first), Name: TopicName, Options: topicOptions(p)}); err != nil {
		return err
	}
	for have := first; have < p.Partitions; {
		n := min(p.Partitions-have, wire.MaxPartitionsPerRequest)
		if err := admin.CreatePartitions(ctx, sid, wire.MustNamedID(TopicName), uint32(n)); err != nil {
			return fmt.Errorf("add partitions %d..%d: %w", have, have+n-1, err)
		}
		have += n
	}
	return nil
}

// existingMessages is what a reused topic offers its readers: partition 0
// for individual consumers, the whole topic for groups.
func existingMessages(p *Params, td wire.TopicDetails) uint64 {
	if p.Kind.groups() {
		return td.MessagesCount
	}
	for _, part := range td.Partitions {
		if part.ID == 0 {
			return part.MessagesCount
		}
	}
	return 0
}

// seed fills the streams of consumer-only kinds (pc, bcg) before the
// measured run; reused streams that already hold messages are left alone.
func seed(ctx context.Context, p *Params, cfg client.Config, admin *client.Client, streams []*streamState, opt Options) error {
	if p.Kind != PinnedConsumer && p.Kind != BalancedConsumerGroup {
		return nil
	}
	readers := make([]int, len(streams))
	for id := 1; id <= p.Consumers; id++ {
		if p.Kind.groups() {
			readers[(id-1)%p.ConsumerGroups]++
		} else {
			readers[id-1]++
		}
	}
	type job struct {
		st     *streamState
		budget *Budget
		part   wire.Partitioning
	}
	var jobs []job
	for i, st := range streams {
		if readers[i] == 0 || st.produced.Load() > 0 {
			continue
		}
		j := job{st: st, part: wire.PartitionByID(0)}
		if p.Kind.groups() {
			j.part = wire.Balanced()
		}
		actors := 1
		if p.Kind.groups() {
			actors = readers[i] // the group's members share what is seeded
		}
		if p.TotalData > 0 {
			j.budget = NewByteBudget(p.TotalData / uint64(p.Consumers) * uint64(actors))
		} else {
			j.budget = NewBatchBudget(p.MessageBatches * uint64(actors))
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil
	}
	if opt.Progress != ProgressNone {
		fmt.Fprintf(opt.Out, "Seeding %d streams for %s (not measured)...\n", len(jobs), p.Kind)
	}
	sem := make(chan struct{}, seedParallelism)
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = seedStream(ctx, p, cfg, j.st, j.part, j.budget, uint64(1000+i))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func seedStream(ctx context.Context, p *Params, cfg client.Config, st *streamState, part wire.Partitioning, budget *Budget, seedID uint64) error {
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return fmt.Errorf("seed %s: connect: %w", st.name, err)
	}
	defer c.Close()
	gen := newBatchGen(seedID, p.MessageSize, p.MessagesPerBatch)
	sid, tid := wire.MustNamedID(st.name), wire.MustNamedID(TopicName)
	for {
		msgs, user := gen.next(uint64(time.Now().UnixMicro()))
		if !budget.Take(user) {
			return nil
		}
		if _, err := c.SendMessages(ctx, sid, tid, part, msgs); err != nil {
			return fmt.Errorf("seed %s: %w", st.name, err)
		}
		st.produced.Add(uint64(len(msgs)))
	}
}
