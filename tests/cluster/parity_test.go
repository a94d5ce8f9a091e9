package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestFreshClusterLeaderIsNodeZero: as in Iggy 0.9, the metadata group's
// primary in view v is v mod n, so a fresh cluster's leader is node 0 and
// every node reports it.
func TestFreshClusterLeaderIsNodeZero(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	p, v, err := c.WaitPrimary("metadata", 0, 30*time.Second)
	must(t, err, "metadata primary")
	if v == 0 && p != 0 {
		t.Fatalf("metadata primary in view 0 is node %d, want node 0", p)
	}
	ctx := ctxT(t, time.Minute)
	for i := 0; i < c.Size(); i++ {
		var leader int
		var lerr error
		deadline := time.Now().Add(30 * time.Second)
		for {
			leader, lerr = c.Leader(ctx, i)
			if lerr == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		must(t, lerr, fmt.Sprintf("leader as node %d reports it", i))
		if leader != 0 {
			t.Fatalf("node %d reports node %d as leader of a fresh cluster, want node 0", i, leader)
		}
	}
}

// partFigures are one partition's figures in a GET_TOPIC reply.
type partFigures struct {
	current, messages, size uint64
}

func topicFigures(t *testing.T, cl *client.Client, stream, topic string) map[uint32]partFigures {
	t.Helper()
	td, err := cl.GetTopic(ctxT(t, 30*time.Second), name(stream), name(topic))
	must(t, err, "get topic")
	out := map[uint32]partFigures{}
	for _, p := range td.Partitions {
		out[p.ID] = partFigures{current: p.CurrentOffset, messages: p.MessagesCount, size: p.SizeBytes}
	}
	return out
}

// TestWholeClusterRestartKeepsCurrentOffsets: after every node of a cluster
// is stopped (and, in a second round, killed with -9) and started again,
// every node reports each partition's current offset, message count and
// size as before, without a write since the restart, and polls and stored
// consumer offsets are those of before.
func TestWholeClusterRestartKeepsCurrentOffsets(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{Shards: 2})
	specs := durabilitySpecs()
	for _, s := range specs {
		s.partitions = 3
	}
	createTopics(t, c, 0, specs)
	cl := c.Root(t, 0)
	ctx := ctxT(t, 2*time.Minute)
	cons := wire.SingleConsumer(wire.NumericID(7))
	for _, s := range specs {
		for p := uint32(0); p < s.partitions; p++ {
			for b := uint32(0); b <= p; b++ {
				msgs := make([]wire.Message, 5+int(p))
				for j := range msgs {
					m, err := client.NewMessage(payload(p, uint64(j)))
					must(t, err, "message")
					msgs[j] = m
				}
				_, err := cl.SendMessages(ctx, name(s.stream), name(s.topic), wire.PartitionByID(p), msgs)
				must(t, err, "send")
			}
			must(t, cl.StoreConsumerOffset(ctx, cons, name(s.stream), name(s.topic), wire.SomePartition(p), uint64(p+1)), "store offset")
		}
	}
	want := map[string]map[uint32]partFigures{}
	for _, s := range specs {
		want[s.stream] = topicFigures(t, cl, s.stream, s.topic)
		for p := uint32(0); p < s.partitions; p++ {
			n := uint64(p+1) * uint64(5+p)
			if f := want[s.stream][p]; f.current != n-1 || f.messages != n {
				t.Fatalf("%s/%d before the restart: %+v, want current %d of %d messages", s.stream, p, f, n-1, n)
			}
		}
	}
	// Every node reports the figures before the restart too (backups
	// apply the commits shortly after the primary).
	check := func(phase string) {
		t.Helper()
		for i := 0; i < c.Size(); i++ {
			ci := c.Root(t, i)
			for _, s := range specs {
				deadline := time.Now().Add(30 * time.Second)
				for {
					got := topicFigures(t, ci, s.stream, s.topic)
					same := len(got) == len(want[s.stream])
					for p, f := range want[s.stream] {
						same = same && got[p] == f
					}
					if same {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: node %d reports %s as %+v, want %+v", phase, i, s.stream, got, want[s.stream])
					}
					time.Sleep(200 * time.Millisecond)
				}
				for p := uint32(0); p < s.partitions; p++ {
					deadline := time.Now().Add(30 * time.Second)
					for {
						off, err := ci.GetConsumerOffset(ctxT(t, 30*time.Second), cons, name(s.stream), name(s.topic), wire.SomePartition(p))
						must(t, err, "get offset")
						if off != nil && off.StoredOffset == uint64(p+1) && off.CurrentOffset == want[s.stream][p].current {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("%s: node %d: %s/%d consumer offset %+v, want stored %d current %d", phase, i, s.stream, p, off, p+1, want[s.stream][p].current)
						}
						time.Sleep(200 * time.Millisecond)
					}
				}
			}
			_ = ci.Close()
		}
	}
	check("before the restart")
	must(t, c.StopAll(30*time.Second), "stop all")
	c.StartAll()
	check("after stopping and starting every node")
	c.KillAll()
	c.StartAll()
	check("after killing and starting every node")
}
