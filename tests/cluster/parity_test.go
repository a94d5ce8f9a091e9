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

// TestCooperativeRebalanceCluster: member A (connected to node 1) polls
// half of every partition without committing; member B (connected to node
// 2) joins and polls in a loop while A is still working, and A commits a
// moment later. B must never receive a message A polled (no redelivery:
// every partition B takes was handed over only after A committed it, well
// before consumer_group.rebalancing_timeout), and must end up with its
// share, read from right after A's commits.
func TestCooperativeRebalanceCluster(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	specs := []*topicSpec{{stream: "coop", topic: "t", durability: "replicated", partitions: 4}}
	createTopics(t, c, 0, specs)
	root := c.Root(t, 0)
	ctx := ctxT(t, 2*time.Minute)
	const perPartition, polled = 20, 10
	for p := uint32(0); p < 4; p++ {
		msgs := make([]wire.Message, perPartition)
		for j := range msgs {
			m, err := client.NewMessage(payload(p, uint64(j)))
			must(t, err, "message")
			msgs[j] = m
		}
		_, err := root.SendMessages(ctx, name("coop"), name("t"), wire.PartitionByID(p), msgs)
		must(t, err, "send")
	}
	_, err := root.CreateConsumerGroup(ctx, name("coop"), name("t"), "g")
	must(t, err, "create group")
	group := wire.GroupConsumer(name("g"))
	poll := func(cl *client.Client, p uint32, n uint32) wire.PolledMessages {
		pm, err := cl.PollMessages(ctx, wire.PollMessages{Consumer: group, StreamID: name("coop"), TopicID: name("t"),
			Partition: wire.SomePartition(p), Strategy: wire.PollFromNext(), Count: n})
		must(t, err, "group poll")
		return pm
	}
	sync := func(cl *client.Client) []uint32 {
		a, err := cl.SyncConsumerGroup(ctx, name("coop"), name("t"), name("g"))
		must(t, err, "sync")
		return a.Partitions
	}
	a, b := c.Root(t, 1), c.Root(t, 2)
	must(t, a.JoinConsumerGroup(ctx, name("coop"), name("t"), name("g")), "a joins")
	type key struct {
		p   uint32
		off uint64
	}
	byA := map[key]bool{}
	for _, p := range sync(a) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			pm := poll(a, p, polled)
			for _, m := range pm.Messages() {
				byA[key{p, m.Offset}] = true
			}
			if pm.MessagesCount == polled {
				break
			}
			// Node 1 has not applied the sends yet: nothing was
			// committed, so the next poll starts from 0 again.
			if time.Now().After(deadline) {
				t.Fatalf("a polled %d messages of partition %d", pm.MessagesCount, p)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	must(t, b.JoinConsumerGroup(ctx, name("coop"), name("t"), name("g")), "b joins")
	// A commits 300 ms after B joined; B polls all along.
	commitAt := time.Now().Add(300 * time.Millisecond)
	committed := false
	byB := map[key]int{}
	redelivered := 0
	deadline := time.Now().Add(60 * time.Second)
	for {
		if !committed && time.Now().After(commitAt) {
			for p := uint32(0); p < 4; p++ {
				if !byA[key{p, polled - 1}] {
					continue
				}
				err := a.StoreConsumerOffset(ctx, group, name("coop"), name("t"), wire.SomePartition(p), polled-1)
				must(t, err, fmt.Sprintf("a commits partition %d", p))
			}
			committed = true
		}
		total := 0
		for _, p := range sync(b) {
			pm := poll(b, p, 5)
			for _, m := range pm.Messages() {
				k := key{p, m.Offset}
				if byA[k] {
					redelivered++
				}
				byB[k]++
			}
			if n := len(pm.Messages()); n > 0 {
				last := pm.Messages()[n-1].Offset
				must(t, b.StoreConsumerOffset(ctx, group, name("coop"), name("t"), wire.SomePartition(p), last), "b commits")
			}
		}
		for range byB {
			total++
		}
		if committed && total == 2*(perPartition-polled) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b read %d messages (%d redelivered), partitions %v", total, redelivered, sync(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("cooperative rebalance: a polled %d messages in flight, b read %d, redelivered %d", len(byA), len(byB), redelivered)
	if redelivered != 0 {
		t.Fatalf("b received %d messages a had polled before a committed them", redelivered)
	}
	for k, n := range byB {
		if n != 1 || k.off < polled {
			t.Fatalf("b read partition %d offset %d %d times (a committed 0..%d)", k.p, k.off, n, polled-1)
		}
	}
	if got := sync(b); len(got) != 2 {
		t.Fatalf("b owns %v at the end, want its share of 2", got)
	}
}
