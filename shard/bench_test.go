package shard

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// countHandler counts messages and closes done when it has seen want.
type countHandler struct {
	seen atomic.Int64
	want int64
	done chan struct{}
}

func (h *countHandler) Handle(it *Iteration[int]) {
	if h.seen.Add(int64(len(it.Messages))) == h.want {
		close(h.done)
	}
}
func (h *countHandler) Close(Leftover[int]) {}

func benchConfig(shards int) Config {
	return Config{Shards: shards, InboxCapacity: 65536, BatchMax: 256, TickInterval: -1}
}

// BenchmarkInboxThroughput pushes b.N messages through one shard from one
// producer; a full inbox makes the producer yield and retry.
func BenchmarkInboxThroughput(b *testing.B) {
	h := &countHandler{want: int64(b.N), done: make(chan struct{})}
	rt, err := New[int](benchConfig(1))
	if err != nil {
		b.Fatal(err)
	}
	if err := rt.Start(func(int) Handler[int] { return h }); err != nil {
		b.Fatal(err)
	}
	defer rt.Shutdown()
	s := rt.Shard(0)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for {
			err := s.TrySend(i)
			if err == nil {
				break
			}
			if !errors.Is(err, ErrInboxFull) {
				b.Fatal(err)
			}
			runtime.Gosched()
		}
	}
	<-h.done
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
	st := s.Stats()
	b.ReportMetric(float64(st.Processed)/float64(max(st.Iterations, 1)), "msgs/iteration")
}

// hopHandler forwards a countdown to the next shard until it reaches zero.
type hopHandler struct {
	rt   *Runtime[int]
	next int
	done chan struct{}
}

func (h *hopHandler) Handle(it *Iteration[int]) {
	for _, m := range it.Messages {
		if m == 0 {
			close(h.done)
			continue
		}
		if err := h.rt.Send(h.next, m-1); err != nil {
			panic(err)
		}
	}
}
func (h *hopHandler) Close(Leftover[int]) {}

// BenchmarkCrossShardHop measures one shard-to-shard hand-off: a single
// message bounces between two shards b.N times, so ns/op is the latency of
// one hop (send, wake the other loop, receive).
func BenchmarkCrossShardHop(b *testing.B) {
	rt, err := New[int](benchConfig(2))
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	if err := rt.Start(func(i int) Handler[int] {
		return &hopHandler{rt: rt, next: 1 - i, done: done}
	}); err != nil {
		b.Fatal(err)
	}
	defer rt.Shutdown()
	b.ResetTimer()
	if err := rt.Send(0, b.N); err != nil {
		b.Fatal(err)
	}
	<-done
}

func BenchmarkOwningShard(b *testing.B) {
	ns := MustNamespace(7, 3, 0)
	sum := 0
	for i := 0; i < b.N; i++ {
		sum += OwningShard(ns+Namespace(i&1023), 8)
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
