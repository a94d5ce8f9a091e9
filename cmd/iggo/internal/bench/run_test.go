package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/cmd/iggo/internal/fakeserver"
	"github.com/iggo/iggo/wire"
)

func startFake(t *testing.T) *fakeserver.Server {
	t.Helper()
	s, err := fakeserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// tiny shrinks a kind's defaults to a run that takes milliseconds.
func tiny(kind Kind, addr string) Params {
	p := Defaults(kind)
	p.Server.Address = addr
	p.MessageSize, p.MessagesPerBatch, p.MessageBatches = Range{64, 64}, Range{10, 10}, 5
	if p.Producers > 0 {
		p.Producers = 2
	}
	if p.Consumers > 0 {
		p.Consumers = 2
	}
	if kind.pinned() {
		p.FollowActors()
	} else {
		p.Partitions = 3
	}
	p.SamplingTime = time.Millisecond
	p.IdleTimeout = 5 * time.Second
	return p
}

func run(t *testing.T, p Params) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := Run(ctx, p, Options{Out: &out, Progress: ProgressLines, ProgressInterval: time.Millisecond})
	if err != nil {
		t.Fatalf("%s: %v\n%s", p.Kind, err, out.String())
	}
	return res, out.String()
}

func groupOf(r *Report, k ActorKind) *GroupMetrics {
	for i := range r.Groups {
		if r.Groups[i].Kind == k {
			return &r.Groups[i]
		}
	}
	return nil
}

func TestEveryKindAgainstFakeServer(t *testing.T) {
	srv := startFake(t)
	tests := []struct {
		kind          Kind
		mod           func(*Params)
		sent, recvd   uint64 // messages recorded by producers / consumers
		groupMessages uint64 // producing consumers
	}{
		{kind: PinnedProducer, sent: 2 * 5 * 10},
		{kind: PinnedConsumer, recvd: 2 * 5 * 10},
		{kind: PinnedProducerAndConsumer, sent: 100, recvd: 100},
		{kind: BalancedProducer, sent: 100},
		{kind: BalancedConsumerGroup, recvd: 100},
		{kind: BalancedProducerAndConsumerGroup, sent: 100, recvd: 100},
		{kind: EndToEndProducingConsumer, groupMessages: 100},
		{kind: BalancedConsumerGroup, mod: func(p *Params) { p.Consumers, p.Streams, p.ConsumerGroups = 3, 2, 2 }, recvd: 3 * 5 * 10},
		{kind: PinnedProducer, mod: func(p *Params) { p.MessageBatches, p.TotalData = 0, 20_000 }, sent: 20_000 / 64},
		{kind: BalancedProducer, mod: func(p *Params) { p.MessageSize, p.MessagesPerBatch = Range{10, 100}, Range{1, 20} }},
	}
	for _, tc := range tests {
		p := tiny(tc.kind, srv.Addr())
		if tc.mod != nil {
			tc.mod(&p)
		}
		res, out := run(t, p)
		r := res.Report
		if g := groupOf(r, ActorProducer); tc.sent > 0 && (g == nil || g.Summary.TotalMessages < tc.sent || g.Summary.TotalMessages > tc.sent+2*10) {
			t.Errorf("%s: producers recorded %+v, want %d messages", tc.kind, g, tc.sent)
		}
		if g := groupOf(r, ActorConsumer); tc.recvd > 0 && (g == nil || g.Summary.TotalMessages != tc.recvd) {
			t.Errorf("%s: consumers recorded %+v, want %d messages", tc.kind, g, tc.recvd)
		}
		if g := groupOf(r, ActorProducingConsumer); tc.groupMessages > 0 && (g == nil || g.Summary.TotalMessages != tc.groupMessages) {
			t.Errorf("%s: producing consumers recorded %+v", tc.kind, g)
		}
		for _, a := range r.Actors {
			if a.Summary.TotalTimeSecs < 0 {
				t.Errorf("%s: negative time %+v", tc.kind, a.Summary)
			}
			if !tc.kind.pinned() {
				continue // a shared budget or group may leave an actor nothing to do
			}
			if a.Summary.TotalMessages == 0 || a.Summary.Latency.P50 <= 0 || a.Summary.ThroughputMBps <= 0 {
				t.Errorf("%s: actor %s #%d measured nothing: %+v", tc.kind, a.Kind, a.ID, a.Summary)
			}
		}
		if !strings.Contains(out, "Benchmark: "+string(tc.kind)) || !strings.Contains(out, "total: ") {
			t.Errorf("%s: summary missing:\n%s", tc.kind, out)
		}
		if r.ServerStats == nil || r.ServerStats.ServerVersion != "fakeserver" {
			t.Errorf("%s: server stats %+v", tc.kind, r.ServerStats)
		}
		if names := srv.StreamNames(); len(names) != 0 {
			t.Fatalf("%s: streams left behind: %v", tc.kind, names)
		}
	}
}

func TestRunWritesReportAndKeepsStreams(t *testing.T) {
	srv := startFake(t)
	p := tiny(PinnedProducer, srv.Addr())
	p.OutputDir = t.TempDir()
	p.KeepStreams = true
	p.Durability, p.ConsumerOffsetDurability = "persisted", "replicated"
	p.RateLimit = 2_000_000
	p.WarmupTime = 5 * time.Millisecond
	p.Command = "iggo bench pp"
	res, out := run(t, p)
	if len(res.Files) != 3 {
		t.Fatalf("files %v", res.Files)
	}
	mustContain(t, out, "Report and charts:", res.Files[0], "rate limit 2.00 MB/s")
	b, err := os.ReadFile(res.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Params.Command != "iggo bench pp" || rep.Params.RateLimit != 2_000_000 || rep.Params.Durability != "persisted" || len(rep.Actors) != 2 {
		t.Fatalf("report params %+v", rep.Params)
	}
	if filepath.Dir(res.Files[1]) != filepath.Dir(res.Files[0]) {
		t.Fatal("charts not next to the report")
	}
	names := srv.StreamNames()
	if strings.Join(names, ",") != "bench-stream-1,bench-stream-2" {
		t.Fatalf("kept streams %v", names)
	}
	opts, _ := srv.TopicOptions("bench-stream-1", TopicName)
	if v, ok := opts.Get("durability"); !ok || string(v.Value) != "persisted" {
		t.Fatalf("topic durability %v", opts)
	}
	// Each producer was paced at 1 MB/s: 5 batches of 640 B take >= 4 intervals.
	for _, a := range rep.Actors {
		if a.Summary.TotalTimeSecs < 4*640/1e6 {
			t.Errorf("actor %d not paced: %v s", a.ID, a.Summary.TotalTimeSecs)
		}
	}

	// A second run reuses the kept streams and appends.
	before := srv.MessageCount("bench-stream-1", TopicName, 0)
	p.ReuseStreams, p.OutputDir = true, ""
	run(t, p)
	if after := srv.MessageCount("bench-stream-1", TopicName, 0); after < before+50 {
		t.Fatalf("reuse: %d messages before, %d after", before, after)
	}
	// pc with --reuse-streams reads what is there, without seeding.
	pc := tiny(PinnedConsumer, srv.Addr())
	pc.ReuseStreams, pc.KeepStreams = true, true
	res, _ = run(t, pc)
	want := srv.MessageCount("bench-stream-1", TopicName, 0) + srv.MessageCount("bench-stream-2", TopicName, 0)
	if g := groupOf(res.Report, ActorConsumer); g == nil || g.Summary.TotalMessages != want {
		t.Fatalf("pc on reused streams read %+v", g)
	}
	// Without reuse, stale bench streams are replaced and then removed.
	run(t, tiny(PinnedProducer, srv.Addr()))
	if names := srv.StreamNames(); len(names) != 0 {
		t.Fatalf("streams left: %v", names)
	}
}

func TestRunFailsCleanly(t *testing.T) {
	srv := startFake(t)
	// The server refuses sends: the run fails with the server's code and
	// still deletes its streams.
	srv.SetHook(func(h wire.RequestHeader, req wire.Request) ([]byte, bool) {
		if _, ok := req.(*wire.SendMessages); ok {
			return wire.AppendStatusReply(nil, &h, wire.CodeTopicFull), true
		}
		return nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Run(ctx, tiny(PinnedProducer, srv.Addr()), Options{Progress: ProgressNone})
	if !wire.HasCode(err, wire.CodeTopicFull) || !strings.Contains(err.Error(), "producer #") {
		t.Fatalf("refused sends: %v", err)
	}
	if names := srv.StreamNames(); len(names) != 0 {
		t.Fatalf("streams left after failure: %v", names)
	}
	// Polls that never return data hit the idle timeout.
	srv.SetHook(func(h wire.RequestHeader, req wire.Request) ([]byte, bool) {
		if _, ok := req.(*wire.PollMessages); ok {
			return wire.AppendReply(nil, &h, wire.AppendPollReplyPrefix(nil, 0, 0, 0)), true
		}
		return nil, false
	})
	p := tiny(PinnedConsumer, srv.Addr())
	p.IdleTimeout = 150 * time.Millisecond
	start := time.Now()
	_, err = Run(ctx, p, Options{Progress: ProgressNone})
	if err == nil || !strings.Contains(err.Error(), "no messages for 150ms") {
		t.Fatalf("idle consumer: %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("idle timeout took %v", time.Since(start))
	}
	// Cancellation stops a run and still cleans up.
	srv.SetHook(nil)
	cctx, ccancel := context.WithCancel(ctx)
	p = tiny(PinnedProducer, srv.Addr())
	p.MessageBatches = 1 << 40
	go func() {
		time.Sleep(100 * time.Millisecond)
		ccancel()
	}()
	if _, err := Run(cctx, p, Options{Progress: ProgressNone}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if names := srv.StreamNames(); len(names) != 0 {
		t.Fatalf("streams left after cancel: %v", names)
	}
	// Bad credentials fail before anything is created.
	p = tiny(PinnedProducer, srv.Addr())
	p.Server.Password = "nope"
	if _, err := Run(ctx, p, Options{}); !wire.HasCode(err, wire.CodeInvalidCredentials) {
		t.Fatalf("bad password: %v", err)
	}
	// Invalid parameters are refused up front.
	p = tiny(PinnedProducer, srv.Addr())
	p.Streams = 1
	if _, err := Run(ctx, p, Options{}); err == nil || !strings.Contains(err.Error(), "stream per producer") {
		t.Fatalf("invalid params: %v", err)
	}
}

func BenchmarkBatchGen(b *testing.B) {
	g := newBatchGen(1, Range{1000, 1000}, Range{1000, 1000})
	b.ReportAllocs()
	for b.Loop() {
		g.next(1)
	}
}

func BenchmarkRecorderAdd(b *testing.B) {
	r := NewRecorder(ActorProducer, 1, "s")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		r.Add(Record{At: time.Duration(i), Messages: 1000, UserBytes: 1_000_000, Latency: time.Duration(i%5000) * time.Microsecond, Expected: time.Millisecond})
	}
}

// BenchmarkPinnedProducerFake is the whole pipeline (client, wire, fake
// server) for one producer; it measures the tool, not a server.
func BenchmarkPinnedProducerFake(b *testing.B) {
	srv, err := fakeserver.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	p := Defaults(PinnedProducer)
	p.Server.Address = srv.Addr()
	p.Producers, p.Streams = 1, 1
	p.MessageSize, p.MessagesPerBatch = Range{1000, 1000}, Range{100, 100}
	p.MessageBatches = uint64(b.N)
	b.SetBytes(100 * 1000)
	b.ResetTimer()
	if _, err := Run(context.Background(), p, Options{Progress: ProgressNone}); err != nil {
		b.Fatal(err)
	}
}

func TestProgressBarsRender(t *testing.T) {
	srv := startFake(t)
	p := tiny(PinnedProducerAndConsumer, srv.Addr())
	p.MessageBatches = 50
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := Run(ctx, p, Options{Out: &out, Progress: ProgressBars}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, out.String(), "Producer #1", "Consumer #2", "all actors", "msgs", "MB/s", "Benchmark: pinned-producer-and-consumer")
}

// TestActorsStartTogether checks the start gate: every actor logs in (slow
// logins here) before any of them sends, so logins stay out of the
// measured time and no actor gets a head start.
func TestActorsStartTogether(t *testing.T) {
	srv := startFake(t)
	var mu sync.Mutex
	arrived, logins, loginsAtFirstSend := 0, 0, -1
	srv.SetHook(func(hd wire.RequestHeader, req wire.Request) ([]byte, bool) {
		switch req.(type) {
		case *wire.LoginRegister:
			mu.Lock()
			arrived++
			n := arrived
			mu.Unlock()
			// The admin connection logs in first; actors' logins take
			// longer the later they arrive.
			time.Sleep(time.Duration(n-1) * 30 * time.Millisecond)
			mu.Lock()
			logins++
			mu.Unlock()
		case *wire.SendMessages:
			mu.Lock()
			if loginsAtFirstSend < 0 {
				loginsAtFirstSend = logins
			}
			mu.Unlock()
		}
		return nil, false
	})
	p := tiny(PinnedProducer, srv.Addr())
	p.Producers = 4
	p.FollowActors()
	res, _ := run(t, p)
	mu.Lock()
	defer mu.Unlock()
	if loginsAtFirstSend != 1+p.Producers {
		t.Fatalf("the first send came after %d of %d logins", loginsAtFirstSend, 1+p.Producers)
	}
	for _, a := range res.Report.Actors {
		if a.Summary.TotalMessages != 50 {
			t.Fatalf("actor #%d sent %d messages", a.ID, a.Summary.TotalMessages)
		}
	}
}

// A topic with more partitions than CREATE_TOPIC takes is created with
// 1,000 and grown by CREATE_PARTITIONS requests of at most 1,000.
func TestRunCreatesTopicsBeyondOneRequest(t *testing.T) {
	srv := startFake(t)
	p := tiny(BalancedProducer, srv.Addr())
	p.Partitions = 2345
	p.KeepStreams = true
	run(t, p)
	if n := srv.Requests(wire.CmdCreatePartitions); n != 2 {
		t.Fatalf("%d CREATE_PARTITIONS requests, want 2 (1000 + 1000 + 345)", n)
	}
	c, err := client.Dial(context.Background(), clientConfig(&p))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	td, err := c.GetTopic(context.Background(), wire.MustNamedID(StreamName(1)), wire.MustNamedID(TopicName))
	if err != nil {
		t.Fatal(err)
	}
	if td.PartitionsCount != 2345 || len(td.Partitions) != 2345 {
		t.Fatalf("topic has %d partitions (%d listed), want 2345", td.PartitionsCount, len(td.Partitions))
	}
}
