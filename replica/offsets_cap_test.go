package replica

import (
	"context"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

// TestConsumerOffsetsCapOverTheWire: a real node with
// partition.consumer_offsets_max = 2 answers a client's store of a third
// consumer's offset, and an auto-commit poll of another, with TopicFull
// (3009); updates of stored consumers and a group's offset pass, and a
// delete frees a slot.
func TestConsumerOffsetsCapOverTheWire(t *testing.T) {
	n := startNodeWith(t, func(c *config.Config) { c.Partition.ConsumerOffsetsMax = 2 })
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	setupStreamTopic(ctx, t, c, 1)
	for range 3 {
		sendOne(ctx, t, c, 0, "m")
	}
	s, tp, part := wire.NumericID(0), wire.NumericID(0), wire.SomePartition(0)
	store := func(cons wire.Consumer, off uint64) error {
		return c.StoreConsumerOffset(ctx, cons, s, tp, part, off)
	}
	for id := uint32(1); id <= 2; id++ {
		if err := store(wire.SingleConsumer(wire.NumericID(id)), 0); err != nil {
			t.Fatalf("consumer %d under the cap: %v", id, err)
		}
	}
	if err := store(wire.SingleConsumer(wire.NumericID(3)), 0); !wire.HasCode(err, wire.CodeTopicFull) {
		t.Fatalf("third consumer with a cap of 2: %v, want TopicFull (3009)", err)
	}
	if err := store(wire.SingleConsumer(wire.NumericID(2)), 2); err != nil {
		t.Fatalf("update of a stored consumer at the cap: %v", err)
	}
	poll := wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(4)), StreamID: s, TopicID: tp,
		Partition: part, Strategy: wire.PollFromNext(), Count: 10, AutoCommit: true}
	if _, err := c.PollMessages(ctx, poll); !wire.HasCode(err, wire.CodeTopicFull) {
		t.Fatalf("auto-commit poll of a new consumer at the cap: %v, want TopicFull (3009)", err)
	}
	if err := c.DeleteConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(1)), s, tp, part); err != nil {
		t.Fatal(err)
	}
	if err := store(wire.SingleConsumer(wire.NumericID(3)), 1); err != nil {
		t.Fatalf("store after a delete freed a slot: %v", err)
	}
	if _, err := c.PollMessages(ctx, poll); !wire.HasCode(err, wire.CodeTopicFull) {
		t.Fatalf("auto-commit poll of a new consumer at the cap again: %v", err)
	}
	got, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(3)), s, tp, part)
	if err != nil || got == nil || got.StoredOffset != 1 {
		t.Fatalf("consumer 3's offset: %+v %v, want 1", got, err)
	}
}
