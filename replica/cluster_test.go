package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

// testCluster is an in-process cluster on 127.0.0.1: every node's client
// and replica-plane listeners are bound on port 0 first and their ports
// written into the shared roster.
type testCluster struct {
	t      *testing.T
	dirs   []string
	client []int
	repl   []int
	nodes  []*Node
	logs   []*zap.Logger
}

const testClusterSecret = "0123456789abcdef0123456789abcdef-test"

func newTestCluster(t *testing.T, size int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: make([]*Node, size)}
	for i := 0; i < size; i++ {
		tc.dirs = append(tc.dirs, t.TempDir())
		tc.client = append(tc.client, freePort(t))
		tc.repl = append(tc.repl, freePort(t))
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	})
	return tc
}

// freePort reserves a loopback port by binding it and releasing it at
// once; the node binds it again right away.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return p
}

func (tc *testCluster) config(i int) *config.Config {
	cfg := config.Default()
	cfg.Path = tc.dirs[i]
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	cl := &cfg.Cluster
	cl.Enabled = true
	cl.Name = "iggo-test"
	cl.HeartbeatTimeout = config.D(2 * time.Second)
	cl.Auth.Enabled = true
	cl.Auth.SharedSecret = testClusterSecret
	cl.Nodes = nil
	for j := range tc.dirs {
		cl.Nodes = append(cl.Nodes, config.ClusterNode{Name: fmt.Sprintf("node-%d", j), IP: "127.0.0.1", ReplicaID: j,
			Ports: config.NodePorts{TCP: config.Port(uint16(tc.client[j])), TCPReplica: config.Port(uint16(tc.repl[j]))}})
	}
	return cfg
}

// start boots node i (fresh wipes its directory first).
func (tc *testCluster) start(i int, fresh bool) error {
	tc.t.Helper()
	log := zaptest.NewLogger(tc.t, zaptest.Level(zap.WarnLevel)).With(zap.Int("node", i))
	if testing.Verbose() {
		log = zaptest.NewLogger(tc.t).With(zap.Int("node", i))
	}
	n, err := New(Options{Config: tc.config(i), ReplicaID: i, Fresh: fresh, DefaultRootCredentials: true,
		Environ: []string{}, Logger: log})
	if err != nil {
		return err
	}
	if err := n.Start(); err != nil {
		return err
	}
	tc.nodes[i] = n
	return nil
}

func (tc *testCluster) startAll() {
	tc.t.Helper()
	errs := make(chan error, len(tc.nodes))
	for i := range tc.nodes {
		go func() { errs <- tc.start(i, false) }()
	}
	for range tc.nodes {
		if err := <-errs; err != nil {
			tc.t.Fatal(err)
		}
	}
}

func (tc *testCluster) stop(i int) {
	tc.t.Helper()
	if err := tc.nodes[i].Close(); err != nil {
		tc.t.Fatal(err)
	}
	tc.nodes[i] = nil
}

func (tc *testCluster) dial(i int) *client.Client {
	tc.t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{tc.nodes[i].Addr()}
	cfg.Username, cfg.Password = DefaultRootUsername, DefaultRootPassword
	cfg.HeartbeatInterval = 0
	cfg.RequestTimeout = 60 * time.Second
	// A view change takes a heartbeat timeout: keep replaying 58 through it.
	cfg.NotAcceptedBudget = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var c *client.Client
	var err error
	// Root is created once a metadata quorum formed: retry the login.
	for {
		if c, err = client.Dial(ctx, cfg); err == nil {
			break
		}
		if ctx.Err() != nil {
			tc.t.Fatalf("dialing node %d: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tc.t.Cleanup(func() { _ = c.Close() })
	return c
}

// eventually retries f until it returns nil or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func clusterBatch(from, n int) []wire.Message {
	msgs := make([]wire.Message, n)
	for i := range msgs {
		pl := make([]byte, 48)
		binary.LittleEndian.PutUint64(pl, uint64(from+i))
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(from + i + 1)}, Payload: pl}
	}
	return msgs
}

// checkPartition polls partition p of stream 0 / topic 0 on c and checks
// it holds exactly want messages with dense offsets and the test payloads.
func checkPartition(ctx context.Context, c *client.Client, p uint32, want int) error {
	pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(77)),
		StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Partition: wire.SomePartition(p),
		Strategy: wire.PollFromFirst(), Count: 100000})
	if err != nil {
		return err
	}
	msgs := pm.Messages()
	if len(msgs) != want {
		return fmt.Errorf("partition %d: %d messages, want %d", p, len(msgs), want)
	}
	for i, m := range msgs {
		if m.Offset != uint64(i) || binary.LittleEndian.Uint64(m.Payload) != uint64(i) {
			return fmt.Errorf("partition %d message %d: offset %d payload %d", p, i, m.Offset, binary.LittleEndian.Uint64(m.Payload))
		}
	}
	return nil
}

// segmentBytes returns the concatenated .log files of a partition.
func segmentBytes(dir string, stream, topic, p uint32) ([]byte, error) {
	pdir := partitionDir(dir, stream, topic, p)
	var out []byte
	err := filepath.WalkDir(pdir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".log") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, b...)
		}
		return nil
	})
	return out, err
}

// TestClusterReplicates runs three nodes: metadata created through one
// node and messages sent through every node (backups forward to the
// primary) reach every node, which serve them from their own segments, and
// the segments are byte-identical.
func TestClusterReplicates(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := []*client.Client{tc.dial(0), tc.dial(1), tc.dial(2)}
	if _, err := clients[1].CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	const parts = 3
	if _, err := clients[2].CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: parts, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	// Every node learns the topic and hosts its partition groups.
	for i := range tc.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d hosting the partitions", i), func() error {
			for p := uint32(0); p < parts; p++ {
				if _, _, ok := tc.nodes[i].PartitionPrimary(0, 0, p); !ok {
					return fmt.Errorf("partition %d not hosted", p)
				}
			}
			return nil
		})
	}
	const batches, per = 6, 10
	for p := uint32(0); p < parts; p++ {
		for b := 0; b < batches; b++ {
			c := clients[(int(p)+b)%3]
			if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(p), clusterBatch(b*per, per)); err != nil {
				t.Fatalf("partition %d batch %d: %v", p, b, err)
			}
		}
	}
	for i, c := range clients {
		for p := uint32(0); p < parts; p++ {
			eventually(t, 30*time.Second, fmt.Sprintf("node %d partition %d", i, p), func() error {
				return checkPartition(ctx, c, p, batches*per)
			})
		}
	}
	for p := uint32(0); p < parts; p++ {
		ref, err := segmentBytes(tc.dirs[0], 0, 0, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(ref) == 0 {
			t.Fatalf("partition %d: no segment bytes on node 0", p)
		}
		for i := 1; i < 3; i++ {
			b, err := segmentBytes(tc.dirs[i], 0, 0, p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ref, b) {
				t.Fatalf("partition %d: node %d's segments (%d bytes) differ from node 0's (%d bytes)", p, i, len(b), len(ref))
			}
		}
	}
	// Roles: every node agrees on the metadata primary, and primaries of
	// the partitions are spread.
	leader, _ := tc.nodes[0].MetadataPrimary()
	for i := range tc.nodes {
		if l, _ := tc.nodes[i].MetadataPrimary(); l != leader {
			t.Fatalf("node %d says the metadata primary is %d, node 0 says %d", i, l, leader)
		}
		if len(tc.nodes[i].PeerLinks()) != 2 {
			t.Fatalf("node %d: %d peer links", i, len(tc.nodes[i].PeerLinks()))
		}
	}
}

// setupTopic creates stream 0 / topic 0 with parts partitions through c and
// waits until every running node hosts them.
func (tc *testCluster) setupTopic(ctx context.Context, c *client.Client, parts uint32) {
	tc.t.Helper()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		tc.t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: parts, Name: "t"}); err != nil {
		tc.t.Fatal(err)
	}
	for i, n := range tc.nodes {
		if n == nil {
			continue
		}
		eventually(tc.t, 30*time.Second, fmt.Sprintf("node %d hosting the partitions", i), func() error {
			for p := uint32(0); p < parts; p++ {
				if _, _, ok := n.PartitionPrimary(0, 0, p); !ok {
					return fmt.Errorf("partition %d not hosted", p)
				}
			}
			return nil
		})
	}
}

// sendAll sends batches [from, to) of per messages to partition p.
func sendAll(ctx context.Context, t *testing.T, c *client.Client, p uint32, from, to, per int) {
	t.Helper()
	for b := from; b < to; b++ {
		if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(p), clusterBatch(b*per, per)); err != nil {
			t.Fatalf("partition %d batch %d: %v", p, b, err)
		}
	}
}

func (tc *testCluster) sameSegments(parts uint32, nodes ...int) error {
	for p := uint32(0); p < parts; p++ {
		ref, err := segmentBytes(tc.dirs[nodes[0]], 0, 0, p)
		if err != nil {
			return err
		}
		for _, i := range nodes[1:] {
			b, err := segmentBytes(tc.dirs[i], 0, 0, p)
			if err != nil {
				return err
			}
			if !bytes.Equal(ref, b) {
				return fmt.Errorf("partition %d: node %d's segments (%d bytes) differ from node %d's (%d bytes)", p, i, len(b), nodes[0], len(ref))
			}
		}
	}
	return nil
}

// TestClusterFailover closes the node that leads the metadata group and a
// partition: the other two elect new primaries, and clients connected to
// them keep creating metadata and sending to every partition.
func TestClusterFailover(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, view := tc.nodes[0].MetadataPrimary()
	survivors := []int{}
	for i := range tc.nodes {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	c := tc.dial(survivors[0])
	const parts, per = 3, 5
	tc.setupTopic(ctx, c, parts)
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, c, p, 0, 4, per)
	}
	tc.stop(leader)
	clients := []*client.Client{tc.dial(survivors[0]), tc.dial(survivors[1])}
	if _, err := clients[1].CreateStream(ctx, "after-failover", nil); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, clients[int(p)%2], p, 4, 8, per)
	}
	for _, i := range survivors {
		l, v := tc.nodes[i].MetadataPrimary()
		if l == leader || v <= view {
			t.Fatalf("node %d: metadata primary %d in view %d after replica %d (view %d) stopped", i, l, v, leader, view)
		}
	}
	for k, cl := range clients {
		for p := uint32(0); p < parts; p++ {
			eventually(t, 30*time.Second, fmt.Sprintf("node %d partition %d", survivors[k], p), func() error {
				return checkPartition(ctx, cl, p, 8*per)
			})
		}
		if _, err := cl.GetStream(ctx, wire.MustNamedID("after-failover")); err != nil {
			t.Fatalf("node %d: %v", survivors[k], err)
		}
	}
	// The stopped node comes back, catches up from its peers and holds the
	// same segments.
	if err := tc.start(leader, false); err != nil {
		t.Fatal(err)
	}
	back := tc.dial(leader)
	for p := uint32(0); p < parts; p++ {
		eventually(t, 60*time.Second, fmt.Sprintf("restarted node %d partition %d", leader, p), func() error {
			return checkPartition(ctx, back, p, 8*per)
		})
	}
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(parts, 0, 1, 2) })
	if _, err := back.GetStream(ctx, wire.MustNamedID("after-failover")); err != nil {
		t.Fatalf("restarted node %d: %v", leader, err)
	}
}
