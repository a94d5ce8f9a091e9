package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// syncParts is the member's pollable partitions.
func syncParts(t *testing.T, c *client.Client, group string) []uint32 {
	t.Helper()
	a, err := c.SyncConsumerGroup(ctxT(t), name("c"), name("t"), name(group))
	must(t, err, "sync")
	return a.Partitions
}

// groupPoll polls partition p as a member of group, without committing.
func groupPoll(t *testing.T, c *client.Client, group string, p uint32, n uint32) wire.PolledMessages {
	t.Helper()
	pm, err := c.PollMessages(ctxT(t), wire.PollMessages{Consumer: wire.GroupConsumer(name(group)), StreamID: name("c"), TopicID: name("t"),
		Partition: wire.SomePartition(p), Strategy: wire.PollFromNext(), Count: n})
	must(t, err, "group poll")
	return pm
}

// TestCooperativeRebalance: a member joining takes partitions from the
// member that owned them cooperatively, as Iggy 0.9 does. A partition the
// old owner polled but has not committed stays the old owner's (its
// commits are accepted, its polls of it get the resync sentinel) and the
// joiner does not receive it until the old owner commits; one the old
// owner never commits moves once consumer_group.rebalancing_timeout (3 s
// here) has passed; partitions with nothing in flight move at once.
func TestCooperativeRebalance(t *testing.T) {
	s := start(t, "IGGY_CONSUMER_GROUP_REBALANCING_TIMEOUT=3s")
	root := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, root, "c", "t", 4, nil)
	for p := uint32(0); p < 4; p++ {
		_, err := root.SendMessages(ctx, name("c"), name("t"), wire.PartitionByID(p), payloadMsgs(t, p, 0, 10, 32))
		must(t, err, "send")
	}
	_, err := root.CreateConsumerGroup(ctx, name("c"), name("t"), "g")
	must(t, err, "create group")
	a, b := s.Root(t), s.Root(t)
	must(t, a.JoinConsumerGroup(ctx, name("c"), name("t"), name("g")), "a joins")
	if got := syncParts(t, a, "g"); !slices.Equal(got, []uint32{0, 1, 2, 3}) {
		t.Fatalf("a alone polls %v", got)
	}
	// a works on partitions 2 and 3: polled, not committed.
	for _, p := range []uint32{2, 3} {
		if pm := groupPoll(t, a, "g", p, 5); pm.MessagesCount != 5 {
			t.Fatalf("a polled %d messages of partition %d", pm.MessagesCount, p)
		}
	}
	joined := time.Now()
	must(t, b.JoinConsumerGroup(ctx, name("c"), name("t"), name("g")), "b joins")
	// b's share is partitions 2 and 3, both in flight with a: b gets
	// neither yet, a no longer polls them.
	if got := syncParts(t, b, "g"); len(got) != 0 {
		t.Fatalf("b got %v while a has them in flight", got)
	}
	if got := syncParts(t, a, "g"); !slices.Equal(got, []uint32{0, 1}) {
		t.Fatalf("a polls %v during the hand-off", got)
	}
	for _, m := range []*client.Client{a, b} {
		if pm := groupPoll(t, m, "g", 2, 5); pm.PartitionID != wire.ResyncPartition || pm.MessagesCount != 0 {
			t.Fatalf("poll of a partition being handed off answered %+v", pm)
		}
	}
	// a commits partition 2: it moves to b, which continues after a.
	must(t, a.StoreConsumerOffset(ctx, wire.GroupConsumer(name("g")), name("c"), name("t"), wire.SomePartition(2), 4), "a commits 2")
	waitFor(t, func() bool { return slices.Equal(syncParts(t, b, "g"), []uint32{2}) }, "partition 2 to reach b after a committed")
	if time.Since(joined) >= 3*time.Second {
		t.Fatalf("partition 2 moved only after %v, the rebalancing timeout", time.Since(joined))
	}
	pm := groupPoll(t, b, "g", 2, 10)
	if offs := offsets(pm); len(offs) != 5 || offs[0] != 5 {
		t.Fatalf("b read %v of partition 2, want 5..9 (a committed 0..4)", offs)
	}
	// Partition 3 is never committed: it stays a's until the timeout.
	if slices.Contains(syncParts(t, b, "g"), 3) {
		t.Fatal("partition 3 moved before a committed or the timeout passed")
	}
	waitFor(t, func() bool { return slices.Equal(syncParts(t, b, "g"), []uint32{2, 3}) }, "partition 3 to reach b at the rebalancing timeout")
	if el := time.Since(joined); el < 3*time.Second {
		t.Fatalf("partition 3 moved after %v, before the 3 s rebalancing timeout", el)
	}
	// Only the uncommitted range is read again after a timeout.
	pm = groupPoll(t, b, "g", 3, 10)
	if offs := offsets(pm); len(offs) != 10 || offs[0] != 0 {
		t.Fatalf("b read %v of partition 3 after the timeout, want 0..9", offs)
	}
	if got := syncParts(t, a, "g"); !slices.Equal(got, []uint32{0, 1}) {
		t.Fatalf("a polls %v after the hand-offs", got)
	}
	// Nothing in flight: a third member gets its share (b's partition 3,
	// which b committed) at once.
	must(t, b.StoreConsumerOffset(ctx, wire.GroupConsumer(name("g")), name("c"), name("t"), wire.SomePartition(3), 9), "b commits 3")
	c := s.Root(t)
	must(t, c.JoinConsumerGroup(ctx, name("c"), name("t"), name("g")), "c joins")
	if got := syncParts(t, c, "g"); !slices.Equal(got, []uint32{3}) {
		t.Fatalf("c got %v at once, want partition 3", got)
	}
}
