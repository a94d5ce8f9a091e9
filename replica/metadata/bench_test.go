package metadata

import (
	"fmt"
	"testing"

	"github.com/iggo/iggo/wire"
)

// bigState builds streams × topics × partitions with one group per topic
// and a non-root user holding a few stream grants.
func bigState(b *testing.B, streams, topics, partitions int) *State {
	b.Helper()
	st := bootstrapStep()
	s, _ := NewState().Apply(st.meta, st.cmd)
	op := uint64(1)
	must := func(c Command) {
		op++
		var r Result
		if s, r = s.Apply(Meta{Op: op, Timestamp: op}, c); r.Code != OK {
			b.Fatalf("%T: %v", c, r.Code)
		}
	}
	for sid := range streams {
		must(CreateStream{Name: fmt.Sprintf("stream-%d", sid)})
		for tp := range topics {
			must(CreateTopic{Stream: wire.NumericID(uint32(sid)), Name: fmt.Sprintf("topic-%d", tp), PartitionsCount: uint32(partitions), Defaults: DefaultTopicDefaults()})
			must(CreateConsumerGroup{Stream: wire.NumericID(uint32(sid)), Topic: wire.NumericID(uint32(tp)), Name: "g"})
		}
	}
	must(CreateUser{Username: "reader", PasswordHash: "h", Status: UserActive, Permissions: &Permissions{Streams: []wire.StreamPermissions{
		{StreamID: 3, ReadTopics: true}, {StreamID: 7, Topics: []wire.TopicPermissions{{TopicID: 1, PollMessages: true}}},
	}}})
	return s
}

func BenchmarkApplyJoinLeave(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			s := bigState(b, n, 10, 4)
			join := JoinConsumerGroup{Stream: wire.NumericID(uint32(n / 2)), Topic: wire.NumericID(5), Group: wire.NumericID(0)}
			leave := LeaveConsumerGroup{Stream: join.Stream, Topic: join.Topic, Group: join.Group}
			m := Meta{Client: cl(1), Timestamp: 1}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				m.Op = uint64(i)
				var r Result
				if i%2 == 0 {
					s, r = s.Apply(m, join)
				} else {
					s, r = s.Apply(m, leave)
				}
				if r.Code != OK {
					b.Fatal(r.Code)
				}
			}
		})
	}
}

func BenchmarkApplyCreateDeleteTopic(b *testing.B) {
	s := bigState(b, 100, 10, 4)
	create := CreateTopic{Stream: wire.NumericID(50), Name: "bench", PartitionsCount: 8, Defaults: DefaultTopicDefaults()}
	del := DeleteTopic{Stream: wire.NumericID(50), Topic: wire.MustNamedID("bench")}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		var r Result
		if i%2 == 0 {
			s, r = s.Apply(Meta{Op: uint64(i)}, create)
		} else {
			s, r = s.Apply(Meta{Op: uint64(i)}, del)
		}
		if r.Code != OK {
			b.Fatal(r.Code)
		}
	}
}

func BenchmarkApplyDisconnect(b *testing.B) {
	s := bigState(b, 1000, 10, 4)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s, _ = s.Apply(Meta{Op: uint64(i), System: true}, DisconnectClient{Client: cl(42)})
	}
}

func BenchmarkAllowed(b *testing.B) {
	s := bigState(b, 10, 10, 1)
	u := s.UserByName("reader").ID
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !s.Allowed(u, ActionPollMessages, 7, 1) || s.Allowed(u, ActionSendMessages, uint32(i%10), 1) {
			b.Fatal("wrong decision")
		}
	}
}

func BenchmarkResolveByName(b *testing.B) {
	s := bigState(b, 1000, 10, 1)
	sid, tid := wire.MustNamedID("stream-512"), wire.MustNamedID("topic-7")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, code := s.ResolveTopic(sid, tid); code != OK {
			b.Fatal(code)
		}
	}
}

func BenchmarkSnapshot(b *testing.B) {
	s := bigState(b, 1000, 10, 4)
	snap := EncodeSnapshot(s)
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		b.ReportAllocs()
		for range b.N {
			EncodeSnapshot(s)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(snap)))
		b.ReportAllocs()
		for range b.N {
			if _, err := DecodeSnapshot(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkOpCodec(b *testing.B) {
	m := Meta{UserID: 3, Timestamp: 5, Client: cl(9)}
	c := CreateTopic{Stream: wire.NumericID(1), Name: "orders", PartitionsCount: 8, Defaults: DefaultTopicDefaults(),
		Options: wire.Options{stringOption(OptDurability, "persisted")}}
	body, _ := EncodeOp(m, c)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := EncodeOp(m, c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, _, err := DecodeOp(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
