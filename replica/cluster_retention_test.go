package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// TestClusterRetention: retention is a replicated decision. Only node 0
// runs the cleaner (fast); nodes 1 and 2 never do. Each topic (one with a
// short message_expiry, one with a small max_topic_size) gets data in a
// partition node 0 leads and in one another node leads. The partition led
// by node 0 loses its old sealed segments on every replica alike (its
// primary proposed the deletion), the other keeps them all on every
// replica (node 0, a backup there, deletes nothing on its own), and every
// node serves the same first offset. Retention evaluated per node (the
// behaviour before) leaves node 0's segments different from the others'.
// retentionCluster starts 3 nodes whose cleaner runs every 100 ms where
// cleaner(node) says so, and creates stream "s" through node 0.
func retentionCluster(t *testing.T, ctx context.Context, cleaner func(node int) bool) (*testCluster, *client.Client) {
	t.Helper()
	tc := newTestCluster(t, 3)
	tc.tune = func(i int, cfg *config.Config) {
		cfg.DataMaintenance.Messages.CleanerEnabled = cleaner(i)
		cfg.DataMaintenance.Messages.Interval = config.D(100 * time.Millisecond)
	}
	tc.startAll()
	c := tc.dial(0)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	return tc, c
}

func TestClusterRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tc, c := retentionCluster(t, ctx, func(node int) bool { return node == 0 })

	const (
		expTopic, sizeTopic = uint32(0), uint32(1)
		share               = 2 << 20 // max_topic_size per partition
		batches, per, size  = 32, 8, 10 << 10
	)
	// In view 0, partition p of topic is led by leader(topic, p).
	leader := func(topic, p uint32) int {
		return int(vsr.PrimaryIndex(0, uint64(shard.MustNamespace(0, topic, p)), uint8(len(tc.nodes))))
	}
	// led: a partition node 0 leads; other: one it does not.
	type pick struct{ led, other, parts uint32 }
	choose := func(topic uint32) pick {
		k := pick{led: ^uint32(0), other: ^uint32(0)}
		for p := uint32(0); k.led == ^uint32(0) || k.other == ^uint32(0); p++ {
			if leader(topic, p) == 0 && k.led == ^uint32(0) {
				k.led = p
			} else if leader(topic, p) != 0 && k.other == ^uint32(0) {
				k.other = p
			}
			k.parts = p + 1
		}
		return k
	}
	picks := map[uint32]pick{expTopic: choose(expTopic), sizeTopic: choose(sizeTopic)}
	seg := wire.Uint64Value(1 << 20)
	topics := []struct {
		name string
		opts wire.Options
	}{
		{"exp", wire.Options{}.With("segment_size", seg).With("message_expiry", wire.Uint64Value(uint64(time.Second/time.Microsecond)))},
		{"size", wire.Options{}.With("segment_size", seg).With("max_topic_size", wire.Uint64Value(uint64(picks[sizeTopic].parts)*share))},
	}
	for id, tp := range topics {
		if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: picks[uint32(id)].parts,
			Name: tp.name, Options: tp.opts}); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range tc.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d hosting the partitions", i), func() error {
			for topic, k := range picks {
				for p := uint32(0); p < k.parts; p++ {
					if _, _, ok := n.PartitionPrimary(0, topic, p); !ok {
						return fmt.Errorf("topic %d partition %d not hosted", topic, p)
					}
				}
			}
			return nil
		})
	}
	for b := 0; b < batches; b++ {
		for topic, k := range picks {
			for _, p := range []uint32{k.led, k.other} {
				msgs := make([]wire.Message, per)
				for i := range msgs {
					pl := make([]byte, size)
					binary.LittleEndian.PutUint64(pl, uint64(b*per+i))
					msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(b*per + i + 1)}, Payload: pl}
				}
				if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(topic), wire.PartitionByID(p), msgs); err != nil {
					t.Fatalf("topic %d partition %d batch %d: %v", topic, p, b, err)
				}
			}
		}
	}
	const total = batches * per

	// The partitions node 0 leads (still in view 0): their old segments go
	// on every node.
	for topic, k := range picks {
		if id, view, _ := tc.nodes[0].PartitionPrimary(0, topic, k.led); id != 0 || view != 0 {
			t.Fatalf("topic %d partition %d: primary %d in view %d, the test needs node 0 in view 0", topic, k.led, id, view)
		}
	}
	for i := range tc.nodes {
		eventually(t, 60*time.Second, fmt.Sprintf("node %d: expired segments deleted", i), func() error {
			names, err := segmentNames(tc.dirs[i], 0, expTopic, picks[expTopic].led)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return fmt.Errorf("segments %v, want only the active one", names)
			}
			return nil
		})
		eventually(t, 60*time.Second, fmt.Sprintf("node %d: size-bounded partition within its share", i), func() error {
			names, err := segmentNames(tc.dirs[i], 0, sizeTopic, picks[sizeTopic].led)
			if err != nil {
				return err
			}
			var sum int64
			for _, name := range names {
				fi, err := os.Stat(filepath.Join(partitionDir(tc.dirs[i], 0, sizeTopic, picks[sizeTopic].led), name))
				if err != nil {
					return err
				}
				sum += fi.Size()
			}
			if sum > share || len(names) < 2 || names[0] == fmt.Sprintf("%020d.log", 0) {
				return fmt.Errorf("segments %v, %d bytes; want the oldest gone, a sealed one kept, at most %d bytes", names, sum, share)
			}
			return nil
		})
	}
	for topic, k := range picks {
		eventually(t, 30*time.Second, fmt.Sprintf("topic %d: identical segments", topic), func() error {
			return tc.sameTopicSegments(topic, k.parts, 0, 1, 2)
		})
	}

	// Consumers see the same first offset on every node: past 0 where node
	// 0 leads, 0 (nothing deleted) where it does not.
	firstOffset := func(i int, topic, p uint32) (uint64, int, error) {
		pm, err := tc.dial(i).PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(77)),
			StreamID: wire.NumericID(0), TopicID: wire.NumericID(topic), Partition: wire.SomePartition(p),
			Strategy: wire.PollFromFirst(), Count: total})
		if err != nil {
			return 0, 0, err
		}
		msgs := pm.Messages()
		if len(msgs) == 0 {
			return 0, 0, fmt.Errorf("no messages")
		}
		for j, m := range msgs {
			if m.Offset != msgs[0].Offset+uint64(j) || binary.LittleEndian.Uint64(m.Payload) != m.Offset {
				return 0, 0, fmt.Errorf("message %d: offset %d payload %d", j, m.Offset, binary.LittleEndian.Uint64(m.Payload))
			}
		}
		if last := msgs[len(msgs)-1].Offset; last != total-1 {
			return 0, 0, fmt.Errorf("last offset %d, want %d", last, total-1)
		}
		return msgs[0].Offset, len(msgs), nil
	}
	for topic, k := range picks {
		for _, p := range []uint32{k.led, k.other} {
			var first []uint64
			for i := range tc.nodes {
				f, n, err := firstOffset(i, topic, p)
				if err != nil {
					t.Fatalf("node %d topic %d partition %d: %v", i, topic, p, err)
				}
				t.Logf("node %d topic %d partition %d: first offset %d, %d messages", i, topic, p, f, n)
				first = append(first, f)
			}
			if first[0] != first[1] || first[0] != first[2] {
				t.Fatalf("topic %d partition %d: first offsets %v differ between nodes", topic, p, first)
			}
			if deleted := first[0] > 0; deleted != (p == k.led) {
				t.Fatalf("topic %d partition %d: first offset %d (node 0 leads it: %v)", topic, p, first[0], p == k.led)
			}
		}
	}
	// Writes go on after retention, at the next offset.
	conf, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(expTopic), wire.PartitionByID(picks[expTopic].led),
		[]wire.Message{{ID: wire.Uint128{Lo: 1 << 40}, Payload: make([]byte, 8)}})
	if err != nil {
		t.Fatal(err)
	}
	if conf[0].BaseOffset != total {
		t.Fatalf("next offset %d, want %d", conf[0].BaseOffset, total)
	}
}

// TestClusterRetentionTransfer: a replica that comes back far behind
// fetches the partition by state transfer after retention deleted segments
// and the partition went idle. The retention op asks for a checkpoint right
// after it, so the checkpoint peers serve lists only segments they still
// have; without it their latest checkpoint lists the deleted segment on
// every peer alike and the transfer waits for ops that never come.
func TestClusterRetentionTransfer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tc, c := retentionCluster(t, ctx, func(int) bool { return true })
	opts := wire.Options{}.With("segment_size", wire.Uint64Value(1<<20)).
		With("message_expiry", wire.Uint64Value(uint64(2*time.Second/time.Microsecond)))
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t", Options: opts}); err != nil {
		t.Fatal(err)
	}
	for i, n := range tc.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d hosting the partition", i), func() error {
			if _, _, ok := n.PartitionPrimary(0, 0, 0); !ok {
				return fmt.Errorf("not hosted")
			}
			return nil
		})
	}
	const behind = 2
	tc.stop(behind)
	// One op per send, 4 KiB each: past the partition journal's window
	// (256 slots) and past one 1 MiB segment.
	const sends, size = 320, 4 << 10
	for i := 0; i < sends; i++ {
		pl := make([]byte, size)
		binary.LittleEndian.PutUint64(pl, uint64(i))
		if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0),
			[]wire.Message{{ID: wire.Uint128{Lo: uint64(i + 1)}, Payload: pl}}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for _, i := range []int{0, 1} {
		eventually(t, 60*time.Second, fmt.Sprintf("node %d: expired segment deleted", i), func() error {
			names, err := segmentNames(tc.dirs[i], 0, 0, 0)
			if err != nil {
				return err
			}
			if len(names) != 1 || names[0] == fmt.Sprintf("%020d.log", 0) {
				return fmt.Errorf("segments %v, want only the active one", names)
			}
			return nil
		})
	}
	// The partition is idle from here on.
	if err := tc.start(behind, false); err != nil {
		t.Fatal(err)
	}
	// (The segment files are in place a moment before the install counts.)
	eventually(t, 90*time.Second, "the returning node catches up by state transfer", func() error {
		if got := tc.nodes[behind].installs.Load(); got < 1 {
			return fmt.Errorf("%d checkpoints installed by state transfer, want the partition's", got)
		}
		return tc.sameTopicSegments(0, 1, 0, 1, behind)
	})
	back := tc.dial(behind)
	pm, err := back.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(77)),
		StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Partition: wire.SomePartition(0),
		Strategy: wire.PollFromFirst(), Count: sends})
	if err != nil {
		t.Fatal(err)
	}
	msgs := pm.Messages()
	if len(msgs) == 0 || msgs[0].Offset == 0 || msgs[len(msgs)-1].Offset != sends-1 {
		t.Fatalf("returning node serves %d messages from %v", len(msgs), msgs[0:min(1, len(msgs))])
	}
	for j, m := range msgs {
		if m.Offset != msgs[0].Offset+uint64(j) || binary.LittleEndian.Uint64(m.Payload) != m.Offset {
			t.Fatalf("message %d: offset %d payload %d", j, m.Offset, binary.LittleEndian.Uint64(m.Payload))
		}
	}
}
