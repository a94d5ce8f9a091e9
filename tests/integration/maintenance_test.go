package integration

import (
	"context"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// TestRetentionCleaner: the periodic cleaner deletes sealed segments whose
// messages expired (message_expiry) and the oldest sealed segments of a
// topic over max_topic_size; the active segment stays and offsets go on.
func TestRetentionCleaner(t *testing.T) {
	s := start(t, "IGGY_DATA_MAINTENANCE_MESSAGES_INTERVAL=200ms")
	c := s.Root(t)
	ctx := ctxT(t)
	seg := wire.Uint64Value(1 << 20)
	createStreamTopic(t, c, "exp", "t", 1, wire.Options{}.With("segment_size", seg).
		With("message_expiry", wire.Uint64Value(uint64(time.Second/time.Microsecond))))
	_, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: name("exp"), PartitionsCount: 1, Name: "size",
		Options: wire.Options{}.With("segment_size", seg).With("max_topic_size", wire.Uint64Value(3<<20))})
	must(t, err, "create size-bounded topic")
	for b := 0; b < 60; b++ {
		for _, tp := range []string{"t", "size"} {
			_, err := c.SendMessages(ctx, name("exp"), name(tp), wire.PartitionByID(0), payloadMsgs(t, 0, b*10, 10, 10<<10))
			must(t, err, "send")
		}
	}
	segments := func(tp string) (uint32, uint64, uint64) {
		td, err := c.GetTopic(ctx, name("exp"), name(tp))
		must(t, err, "get topic")
		p := td.Partitions[0]
		return p.SegmentsCount, p.MessagesCount, p.SizeBytes
	}
	if n, _, _ := segments("t"); n < 4 {
		t.Fatalf("expected several segments, have %d", n)
	}
	waitFor(t, func() bool {
		n, msgs, _ := segments("t")
		return n == 1 && msgs < 600
	}, "expired segments to be deleted")
	waitFor(t, func() bool {
		n, _, size := segments("size")
		return size <= 3<<20+(1<<20) && n <= 4
	}, "the size-bounded topic to shrink")
	pm := poll(t, c, "exp", "t", 0, wire.PollFromFirst(), 1, wire.SingleConsumer(id(1)), false)
	if o := offsets(pm); len(o) != 1 || o[0] == 0 {
		t.Fatalf("first message after expiry: %v", o)
	}
	conf, err := c.SendMessages(ctx, name("exp"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 10))
	must(t, err, "send after expiry")
	if conf[0].BaseOffset != 600 {
		t.Fatalf("next offset %d, want 600", conf[0].BaseOffset)
	}
}

// TestSilentGroupMemberIsEvicted: a consumer-group member that sends
// nothing for 1.2 heartbeat intervals gets Eviction(StaleClient), leaves
// the group, and its partitions move to the live member.
func TestSilentGroupMemberIsEvicted(t *testing.T) {
	s := start(t, "IGGY_HEARTBEAT_INTERVAL=1s")
	root := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, root, "hb", "t", 2, nil)
	_, err := root.CreateConsumerGroup(ctx, name("hb"), name("t"), "g")
	must(t, err, "create group")
	cfg := s.ClientConfig("iggy", "iggy")
	cfg.Reconnect.Enabled = false
	silent, err := client.Dial(ctx, cfg)
	must(t, err, "dial")
	defer silent.Close()
	live := s.Root(t)
	must(t, silent.JoinConsumerGroup(ctx, name("hb"), name("t"), name("g")), "silent joins")
	must(t, live.JoinConsumerGroup(ctx, name("hb"), name("t"), name("g")), "live joins")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
				_ = live.Ping(context.Background())
			}
		}
	}()
	waitFor(t, func() bool {
		a, err := live.SyncConsumerGroup(ctx, name("hb"), name("t"), name("g"))
		return err == nil && len(a.Partitions) == 2
	}, "the silent member to be evicted")
	if err := silent.Ping(ctx); err == nil {
		t.Fatal("the evicted connection still answers")
	}
}
