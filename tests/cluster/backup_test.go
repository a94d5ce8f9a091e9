package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestClientOnBackup: a client that stays connected to a node which is not
// the metadata primary (no leader redirection) logs in, creates streams,
// topics and users, sends to partitions led by every node, polls, stores
// and reads consumer offsets; what it did is visible on the other nodes.
// When the metadata primary is then killed, the same connection keeps
// working through the view change.
func TestClientOnBackup(t *testing.T) {
	// Two shards per node: requests also cross shards on their way.
	c := startCluster(t, harness.ClusterOptions{Shards: 2})
	leader, view, err := c.WaitPrimary("metadata", 0, 30*time.Second)
	must(t, err, "metadata primary")
	b := (leader + 1) % c.Size()
	t.Logf("metadata primary node %d (view %d); the client stays on node %d", leader, view, b)

	cfg := c.ClientConfig(b, "iggy", "iggy")
	cfg.RequestTimeout = 30 * time.Second
	ctx := ctxT(t, 3*time.Minute)
	cl, err := client.Dial(ctx, cfg)
	must(t, err, "login on a backup")
	defer cl.Close()

	// Metadata writes through the backup.
	_, err = cl.CreateStream(ctx, "bk", nil)
	must(t, err, "create stream via backup")
	for _, dur := range []string{"replicated", "persisted"} {
		_, err = cl.CreateTopic(ctx, wire.CreateTopic{StreamID: name("bk"), PartitionsCount: 3, Name: dur,
			Options: wire.Options{}.With("durability", wire.StringValue(dur)).With("consumer_offset_durability", wire.StringValue(dur))})
		must(t, err, "create topic via backup")
	}
	_, err = cl.CreateUser(ctx, wire.CreateUser{Username: "bk-user", Password: "bk-pass-1", Status: 1})
	must(t, err, "create user via backup")

	sendPoll := func(round int) {
		t.Helper()
		for _, topic := range []string{"replicated", "persisted"} {
			for p := uint32(0); p < 3; p++ {
				msgs := make([]wire.Message, batchSize)
				for j := range msgs {
					m, err := client.NewMessage(payload(uint32(round), uint64(j)))
					must(t, err, "message")
					msgs[j] = m
				}
				conf, err := cl.SendMessages(ctx, name("bk"), name(topic), wire.PartitionByID(p), msgs)
				must(t, err, fmt.Sprintf("round %d: send to %s/%d via backup", round, topic, p))
				if want := uint64(round * batchSize); conf[0].BaseOffset != want {
					t.Fatalf("round %d: %s/%d base offset %d, want %d", round, topic, p, conf[0].BaseOffset, want)
				}
				// Reads are served locally, and a backup answers a forwarded
				// send only once it applied it too: the poll right after
				// the acknowledgement, on the same node, sees the batch.
				pm, err := cl.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(7)), StreamID: name("bk"),
					TopicID: name(topic), Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(conf[0].BaseOffset), Count: 1000})
				must(t, err, "poll via backup")
				got := pm.Messages()
				if len(got) != batchSize || got[0].Offset != conf[0].BaseOffset {
					t.Fatalf("round %d: %s/%d polled %d messages from %d via the backup right after the acknowledgement", round, topic, p, len(got), conf[0].BaseOffset)
				}
				cons := wire.SingleConsumer(wire.NumericID(9))
				must(t, cl.StoreConsumerOffset(ctx, cons, name("bk"), name(topic), wire.SomePartition(p), conf[0].BaseOffset+3), "store offset via backup")
				off, err := cl.GetConsumerOffset(ctx, cons, name("bk"), name(topic), wire.SomePartition(p))
				must(t, err, "get offset via backup")
				if off == nil || off.StoredOffset != conf[0].BaseOffset+3 {
					t.Fatalf("round %d: %s/%d stored offset %+v, want %d", round, topic, p, off, conf[0].BaseOffset+3)
				}
			}
		}
	}
	sendPoll(0)
	// Which nodes led the partitions the sends above went to (logged).
	led := map[int]bool{}
	for p := 0; p < 3; p++ {
		st, err := cl.GetStream(ctx, name("bk"))
		must(t, err, "get stream")
		pr, _, err := c.WaitPrimary(fmt.Sprintf("%d/0/%d", st.ID, p), 0, 10*time.Second)
		must(t, err, "partition primary")
		led[pr] = true
	}
	t.Logf("partition primaries of bk/replicated on nodes %v", led)

	// Another node sees it all, and the new user logs in there.
	other := (b + 1) % c.Size()
	c.Client(t, other, "bk-user", "bk-pass-1")
	oc := c.Root(t, other)
	for _, topic := range []string{"replicated", "persisted"} {
		td, err := oc.GetTopic(ctx, name("bk"), name(topic))
		must(t, err, "get topic elsewhere")
		if td.PartitionsCount != 3 {
			t.Fatalf("topic %s on node %d: %d partitions", topic, other, td.PartitionsCount)
		}
		k := partKey{spec: &topicSpec{stream: "bk", topic: topic}, partition: 2}
		if got := readAll(t, c, other, k, batchSize, 30*time.Second); len(got) != batchSize {
			t.Fatalf("node %d holds %d messages of %s/2", other, len(got), topic)
		}
	}
	// A second login on the backup.
	c.Root(t, b)

	// Kill the metadata primary; the connection to the backup keeps working
	// (unless the backup was the one killed, which it is not).
	c.Kill(leader)
	newLeader, newView, err := c.WaitPrimary("metadata", view+1, 30*time.Second)
	must(t, err, "metadata view change")
	t.Logf("killed node %d; metadata primary now node %d (view %d)", leader, newLeader, newView)
	sendPoll(1)
	_, err = cl.CreateStream(ctx, "bk-after", nil)
	must(t, err, "create stream via the same connection after the view change")
	c.Restart(leader, false)
	sendPoll(2)
	streams, err := c.Root(t, leader).GetStreams(context.Background())
	must(t, err, "streams on the restarted node")
	if len(streams) != 2 {
		t.Fatalf("restarted node %d lists %d streams, want 2", leader, len(streams))
	}
}
