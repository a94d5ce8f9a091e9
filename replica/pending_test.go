package replica

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

// TestPartitionsWaitForDescriptors: partitions the node's open budget does
// not hold are not given up: their requests get the retryable 58 while the
// others serve, and once the budget has room the shard opens them.
func TestPartitionsWaitForDescriptors(t *testing.T) {
	n := startNode(t, t.TempDir())
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	// Room for two more open partitions, then a topic of four.
	n.partSlots.Store(n.openParts.Load() + 2)
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 4, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	send := func(p uint32, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(p), []wire.Message{{Payload: []byte("x")}})
		return err
	}
	served, waiting := 0, 0
	for p := uint32(0); p < 4; p++ {
		err := send(p, 2*time.Second)
		switch {
		case err == nil:
			served++
		case wire.HasCode(err, wire.CodeTransientNotAccepted) || errors.Is(err, context.DeadlineExceeded):
			// Retryable; the client replays it until its deadline.
			waiting++
			c = dial(t, n) // a call cut short by its deadline leaves the connection mid-reply
		default:
			t.Fatalf("partition %d: %v", p, err)
		}
	}
	if served != 2 || waiting != 2 {
		t.Fatalf("%d partitions served, %d waiting; want 2 and 2", served, waiting)
	}
	if open := n.openParts.Load(); open != n.partSlots.Load() {
		t.Fatalf("%d partitions open, budget %d", open, n.partSlots.Load())
	}
	// Room again: the retry opens them.
	n.partSlots.Store(n.partSlots.Load() + 2)
	deadline := time.Now().Add(30 * time.Second)
	for p := uint32(0); p < 4; p++ {
		for {
			err := send(p, 5*time.Second)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("partition %d not served within 30 s of the budget freeing: %v", p, err)
			}
			c = dial(t, n)
			time.Sleep(100 * time.Millisecond)
		}
	}
	if open := n.openParts.Load(); open != n.partSlots.Load() {
		t.Fatalf("%d partitions open, budget %d", open, n.partSlots.Load())
	}
	// Deleting the topic returns its slots.
	if err := c.DeleteTopic(ctx, wire.NumericID(0), wire.NumericID(0)); err != nil {
		t.Fatal(err)
	}
	for n.openParts.Load() != n.partSlots.Load()-4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d partitions open after the delete, want %d", n.openParts.Load(), n.partSlots.Load()-4)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
