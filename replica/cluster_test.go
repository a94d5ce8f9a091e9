package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/plane"
	"github.com/iggo/iggo/vsr"
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
	gossip []int
	nodes  []*Node
	logs   []*zap.Logger
	// tls runs the replica plane inside TLS (self-signed certificates).
	tls bool
	// onLog, when set before a node starts, sees every entry that node
	// logs at warn level or above.
	onLog func(node int, e zapcore.Entry)
	// tune, when set before a node starts, adjusts that node's
	// configuration.
	tune func(node int, cfg *config.Config)
}

const testClusterSecret = "0123456789abcdef0123456789abcdef-test"

func newTestCluster(t *testing.T, size int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: make([]*Node, size)}
	// A released port may be handed out again: draw until all differ.
	used := map[int]bool{}
	port := func() int {
		for {
			if p := freePort(t); !used[p] {
				used[p] = true
				return p
			}
		}
	}
	for i := 0; i < size; i++ {
		tc.dirs = append(tc.dirs, t.TempDir())
		tc.client = append(tc.client, port())
		tc.repl = append(tc.repl, port())
		// Explicit: the default (tcp_replica + 1000) may be another
		// node's random port.
		tc.gossip = append(tc.gossip, port())
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
	cfg.HTTP.Enabled = false // the roster below has no ports.http
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	// The smallest metadata journal, so that tests reach journal eviction
	// (and state transfer) quickly.
	cfg.Metadata.JournalSlots = 4 * max(64, cfg.Metadata.PrepareQueueDepth)
	cl := &cfg.Cluster
	cl.Enabled = true
	cl.Name = "iggo-test"
	cl.HeartbeatTimeout = config.D(2 * time.Second)
	cl.Auth.Enabled = true
	cl.Auth.SharedSecret = testClusterSecret
	if tc.tls {
		cl.TLS.Enabled, cl.TLS.SelfSigned = true, true
	}
	cl.Nodes = nil
	for j := range tc.dirs {
		cl.Nodes = append(cl.Nodes, config.ClusterNode{Name: fmt.Sprintf("node-%d", j), IP: "127.0.0.1", ReplicaID: j,
			Ports: config.NodePorts{TCP: config.Port(uint16(tc.client[j])), TCPReplica: config.Port(uint16(tc.repl[j])),
				Gossip: config.Port(uint16(tc.gossip[j]))}})
	}
	if tc.tune != nil {
		tc.tune(i, cfg)
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
	if on := tc.onLog; on != nil {
		log = log.WithOptions(zap.Hooks(func(e zapcore.Entry) error {
			if e.Level >= zap.WarnLevel {
				on(i, e)
			}
			return nil
		}))
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

func (tc *testCluster) startAll() { tc.startAllWith(false) }

// startAllWith starts every node at once, all with --fresh or none.
func (tc *testCluster) startAllWith(fresh bool) {
	tc.t.Helper()
	errs := make(chan error, len(tc.nodes))
	for i := range tc.nodes {
		go func() { errs <- tc.start(i, fresh) }()
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
	// Stay on node i: the tests choose the node they talk to (reads of a
	// backup, forwarding), so the leader check must not move the client
	// (cluster metadata names the metadata primary as leader).
	cfg.MaxRedirects = 0
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
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) { testClusterReplicates(t, tls) })
	}
}

func testClusterReplicates(t *testing.T, tls bool) {
	tc := newTestCluster(t, 3)
	tc.tls = tls
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
	// Read your writes: the node that took a partition's last send serves
	// every message of it at once, even where it is a backup.
	for p := uint32(0); p < parts; p++ {
		if err := checkPartition(ctx, clients[(int(p)+batches-1)%3], p, batches*per); err != nil {
			t.Fatalf("right after the last send: %v", err)
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
	return tc.sameTopicSegments(0, parts, nodes...)
}

// sameTopicSegments checks that partitions [0, parts) of stream 0 / topic
// hold the same segment files, byte for byte, on the nodes.
func (tc *testCluster) sameTopicSegments(topic, parts uint32, nodes ...int) error {
	for p := uint32(0); p < parts; p++ {
		refNames, err := segmentNames(tc.dirs[nodes[0]], 0, topic, p)
		if err != nil {
			return err
		}
		ref, err := segmentBytes(tc.dirs[nodes[0]], 0, topic, p)
		if err != nil {
			return err
		}
		for _, i := range nodes[1:] {
			names, err := segmentNames(tc.dirs[i], 0, topic, p)
			if err != nil {
				return err
			}
			if !slices.Equal(refNames, names) {
				return fmt.Errorf("topic %d partition %d: node %d has segments %v, node %d %v", topic, p, i, names, nodes[0], refNames)
			}
			b, err := segmentBytes(tc.dirs[i], 0, topic, p)
			if err != nil {
				return err
			}
			if !bytes.Equal(ref, b) {
				return fmt.Errorf("topic %d partition %d: node %d's segments (%d bytes) differ from node %d's (%d bytes)", topic, p, i, len(b), nodes[0], len(ref))
			}
		}
	}
	return nil
}

// segmentNames lists a partition's .log files, oldest first.
func segmentNames(dir string, stream, topic, p uint32) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(partitionDir(dir, stream, topic, p), "*.log"))
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	slices.Sort(files)
	return files, nil
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
		eventually(t, 30*time.Second, fmt.Sprintf("node %d: the stream created after the failover", survivors[k]), func() error {
			_, err := cl.GetStream(ctx, wire.MustNamedID("after-failover"))
			return err
		})
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

// TestClusterFreshRejoin wipes a node (--fresh): it rejoins without voting
// until it caught up and gets the metadata and every partition back from
// its peers.
func TestClusterFreshRejoin(t *testing.T) {
	tc := newTestCluster(t, 3)
	// A new cluster may start with --fresh everywhere: empty directories
	// mean new nodes, not rejoining ones.
	tc.startAllWith(true)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(0)
	const parts, per = 3, 5
	tc.setupTopic(ctx, c, parts)
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, c, p, 0, 4, per)
	}
	const wiped = 2
	tc.stop(wiped)
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, c, p, 4, 6, per)
	}
	if err := tc.start(wiped, true); err != nil {
		t.Fatal(err)
	}
	back := tc.dial(wiped)
	for p := uint32(0); p < parts; p++ {
		eventually(t, 60*time.Second, fmt.Sprintf("wiped node partition %d", p), func() error {
			return checkPartition(ctx, back, p, 6*per)
		})
	}
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(parts, 0, 1, 2) })
	// The rejoined node takes part again: with another node down, the
	// cluster still commits.
	tc.stop(0)
	c1 := tc.dial(1)
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, c1, p, 6, 7, per)
	}
	for p := uint32(0); p < parts; p++ {
		eventually(t, 30*time.Second, fmt.Sprintf("partition %d after node 0 stopped", p), func() error {
			return checkPartition(ctx, back, p, 7*per)
		})
	}
}

// TestClusterRefusesBadPeers sends garbage and impostor handshakes to a
// node's replica port, and starts a node of another cluster on its data:
// the node refuses them and keeps replicating.
func TestClusterRefusesBadPeers(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tc.dial(1)
	tc.setupTopic(ctx, c, 1)
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(tc.repl[0]))
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		bytes.Repeat([]byte{0xff}, 512),
		append([]byte("IGGOREPL\x01\x01\x01\x02\x00\x03"), make([]byte, 114)...), // hello: bad cluster id, no MAC
	} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write(junk)
		_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		buf := make([]byte, 256)
		if n, err := conn.Read(buf); err == nil {
			t.Fatalf("the replica port answered %d bytes to garbage", n)
		}
		_ = conn.Close()
	}
	eventually(t, 20*time.Second, "garbage refusals counted", func() error {
		if g := tc.nodes[0].plane.Stats().Refused(plane.ReasonGarbage); g < 2 {
			return fmt.Errorf("%d garbage refusals", g)
		}
		return nil
	})
	// An impostor with the wrong key claiming replica id 1 dials node 2.
	pc, err := plane.FromConfig(tc.config(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	pc.Secret = []byte("a-wrong-key-that-is-long-enough-to-pass-checks")
	imp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc.Listener = imp
	pc.Deliver = func(uint8, uint64, vsr.Message) error { return nil }
	impostor, err := plane.New(pc)
	if err != nil {
		t.Fatal(err)
	}
	if err := impostor.Start(); err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	eventually(t, 20*time.Second, "impostor refused", func() error {
		if g := tc.nodes[2].plane.Stats().Refused(plane.ReasonNoSharedKey); g == 0 {
			return errors.New("no refusal for the wrong key yet")
		}
		return nil
	})
	if impostor.Connected(2) {
		t.Fatal("the impostor got a link")
	}
	_ = impostor.Close()
	sendAll(ctx, t, c, 0, 0, 3, 4)
	for i := range tc.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d", i), func() error {
			return checkPartition(ctx, tc.dial(i), 0, 12)
		})
	}
	// Another cluster's node refuses this cluster's data directory.
	tc.stop(2)
	cfg := tc.config(2)
	cfg.Cluster.Name = "another-cluster"
	n, err := New(Options{Config: cfg, ReplicaID: 2, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	err = n.Start()
	if err == nil {
		_ = n.Close()
		t.Fatal("a node of another cluster booted on this cluster's data")
	}
	if !strings.Contains(err.Error(), "belongs to another cluster") {
		t.Fatalf("refusal does not say why: %v", err)
	}
}

// TestClusterRepairsCorruptJournal flips a byte inside a prepare in the
// middle of a stopped node's partition journal: in a cluster the node
// boots anyway, fetches the prepare from a peer and rewrites it.
func TestClusterRepairsCorruptJournal(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tc.dial(0)
	tc.setupTopic(ctx, c, 1)
	sendAll(ctx, t, c, 0, 0, 12, 4)
	const victim = 1
	eventually(t, 30*time.Second, "victim caught up", func() error {
		return checkPartition(ctx, tc.dial(victim), 0, 48)
	})
	tc.stop(victim)
	files, err := filepath.Glob(filepath.Join(partitionDir(tc.dirs[victim], 0, 0, 0), "journal", "[0-9]*.wal"))
	if err != nil || len(files) == 0 {
		t.Fatalf("journal files: %v %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	pos := len(b) * 4 / 10
	b[pos] ^= 0x5a
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The metadata journal is fdatasync'ed at every append: damage in its
	// middle is provably corruption of acknowledged prepares (faulty
	// entries), not a torn tail.
	metaJournal := filepath.Join(tc.dirs[victim], "metadata", "journal.wal")
	mb, err := os.ReadFile(metaJournal)
	if err != nil {
		t.Fatal(err)
	}
	mpos := len(mb) / 2
	mb[mpos] ^= 0x5a
	if err := os.WriteFile(metaJournal, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tc.start(victim, false); err != nil {
		t.Fatalf("a cluster node refused to boot over a corrupt journal entry: %v", err)
	}
	eventually(t, 30*time.Second, "metadata journal repaired", func() error {
		nb, err := os.ReadFile(metaJournal)
		if err != nil {
			return err
		}
		// Repaired in place, or truncated at the damage and appended again.
		if len(nb) <= mpos || nb[mpos] == mb[mpos] {
			return fmt.Errorf("byte %d of %s (%d bytes) not repaired yet", mpos, metaJournal, len(nb))
		}
		return nil
	})
	sendAll(ctx, t, c, 0, 12, 14, 4)
	back := tc.dial(victim)
	eventually(t, 60*time.Second, "repaired node serves every message", func() error {
		return checkPartition(ctx, back, 0, 56)
	})
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
	eventually(t, 30*time.Second, "journal repaired", func() error {
		nb, err := os.ReadFile(files[0])
		if err != nil {
			return err
		}
		if len(nb) <= pos || nb[pos] == b[pos] {
			return fmt.Errorf("byte %d of %s still corrupt", pos, files[0])
		}
		return nil
	})
}

// TestClusterStateTransfer wipes a node after its peers' journals dropped
// the first ops of the metadata group and of a partition: the node gets
// both back by state transfer (checkpoint, segments, session table) and
// then by journal repair above the checkpoint.
func TestClusterStateTransfer(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(0)
	tc.setupTopic(ctx, c, 1)
	// Metadata journals keep journal_slots/2 = 128 ops below a checkpoint
	// taken every 64; partition journals the same with 256 slots.
	const streams, sends, per = 230, 300, 2
	for i := 0; i < streams; i++ {
		if _, err := c.CreateStream(ctx, fmt.Sprintf("extra-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	sendAll(ctx, t, c, 0, 0, sends, per)
	const wiped = 2
	tc.stop(wiped)
	sendAll(ctx, t, c, 0, sends, sends+5, per)
	if err := tc.start(wiped, true); err != nil {
		t.Fatal(err)
	}
	back := tc.dial(wiped)
	eventually(t, 90*time.Second, "wiped node serves every message", func() error {
		return checkPartition(ctx, back, 0, (sends+5)*per)
	})
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
	ss, err := back.GetStreams(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != streams+1 {
		t.Fatalf("wiped node lists %d streams, want %d", len(ss), streams+1)
	}
	if got := tc.nodes[wiped].installs.Load(); got < 2 {
		t.Fatalf("%d checkpoints installed by state transfer, want the metadata's and the partition's", got)
	}
}

// TestClusterQuarantinesUnknownStorage restarts a node with partition
// storage its metadata does not name: storage older than the metadata is
// moved to quarantine/ (never deleted), storage newer than it is kept for
// the metadata to catch up with.
func TestClusterQuarantinesUnknownStorage(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tc.dial(0)
	tc.setupTopic(ctx, c, 1)
	sendAll(ctx, t, c, 0, 0, 2, 3)
	// Enough metadata ops for a checkpoint (every 64 ops with the test's
	// journal), so the restarted node recovers metadata with a revision.
	for i := 0; i < 70; i++ {
		if _, err := c.CreateStream(ctx, fmt.Sprintf("extra-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "node 2 caught up", func() error {
		if _, err := tc.dial(2).GetStream(ctx, wire.MustNamedID("extra-69")); err != nil {
			return err
		}
		return nil
	})
	tc.stop(2)
	stale := partitionDir(tc.dirs[2], 9, 9, 9)
	newer := partitionDir(tc.dirs[2], 8, 8, 8)
	for dir, rev := range map[string]string{stale: "1", newer: "999999"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, incarnationFile), []byte(rev+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := tc.start(2, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stale partition storage still in place: %v", err)
	}
	q, err := filepath.Glob(filepath.Join(tc.dirs[2], quarantineDir, "9-9-9-*", "00000000000000000000.log"))
	if err != nil || len(q) != 1 {
		t.Fatalf("quarantined storage: %v %v", q, err)
	}
	if _, err := os.Stat(filepath.Join(newer, "00000000000000000000.log")); err != nil {
		t.Fatalf("storage newer than the metadata was not kept: %v", err)
	}
	eventually(t, 30*time.Second, "restarted node", func() error { return checkPartition(ctx, tc.dial(2), 0, 6) })
}

// TestClusterDeleteSegments deletes sealed segments through a node: every
// replica deletes the same ones (a replicated op), on a persisted topic.
func TestClusterDeleteSegments(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tc.dial(0)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	opts := wire.Options{}.With("segment_size", wire.Uint64Value(1<<20)).With("durability", wire.StringValue("persisted"))
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t", Options: opts}); err != nil {
		t.Fatal(err)
	}
	const batches, per, size = 40, 8, 10 << 10
	for b := 0; b < batches; b++ {
		msgs := make([]wire.Message, per)
		for i := range msgs {
			pl := make([]byte, size)
			binary.LittleEndian.PutUint64(pl, uint64(b*per+i))
			msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(b*per + i + 1)}, Payload: pl}
		}
		if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), msgs); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
	segs := func(i int) int {
		files, _ := filepath.Glob(filepath.Join(partitionDir(tc.dirs[i], 0, 0, 0), "*.log"))
		return len(files)
	}
	before := segs(0)
	if before < 3 {
		t.Fatalf("%d segments, want at least 3", before)
	}
	if err := tc.dial(2).DeleteSegments(ctx, wire.NumericID(0), wire.NumericID(0), 0, 1); err != nil {
		t.Fatal(err)
	}
	for i := range tc.nodes {
		eventually(t, 30*time.Second, fmt.Sprintf("node %d deleted a segment", i), func() error {
			if n := segs(i); n != before-1 {
				return fmt.Errorf("%d segments, want %d", n, before-1)
			}
			return nil
		})
	}
	eventually(t, 30*time.Second, "identical segments after the deletion", func() error { return tc.sameSegments(1, 0, 1, 2) })
}

// TestClusterFullRestart stops every node and starts them again: the
// groups elect primaries again, every node holds its data, and writes
// resume.
func TestClusterFullRestart(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(1)
	const parts, per = 2, 4
	tc.setupTopic(ctx, c, parts)
	for p := uint32(0); p < parts; p++ {
		sendAll(ctx, t, c, p, 0, 5, per)
	}
	for i := range tc.nodes {
		tc.stop(i)
	}
	tc.startAll()
	for i := range tc.nodes {
		ci := tc.dial(i)
		for p := uint32(0); p < parts; p++ {
			sendAll(ctx, t, ci, p, 5+i, 6+i, per)
		}
	}
	for i := range tc.nodes {
		ci := tc.dial(i)
		for p := uint32(0); p < parts; p++ {
			eventually(t, 60*time.Second, fmt.Sprintf("node %d partition %d", i, p), func() error {
				return checkPartition(ctx, ci, p, 8*per)
			})
		}
	}
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(parts, 0, 1, 2) })
}

// TestClusterRefillsDamagedPartition removes a sealed segment from a
// stopped node (a hole in its log): in a cluster the node boots anyway,
// quarantines the damaged partition and refills it from its peers.
func TestClusterRefillsDamagedPartition(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := tc.dial(0)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	opts := wire.Options{}.With("segment_size", wire.Uint64Value(1<<20))
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t", Options: opts}); err != nil {
		t.Fatal(err)
	}
	const batches, per, size = 40, 8, 10 << 10
	send := func(from, to int) {
		for b := from; b < to; b++ {
			msgs := make([]wire.Message, per)
			for i := range msgs {
				pl := make([]byte, size)
				binary.LittleEndian.PutUint64(pl, uint64(b*per+i))
				msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(b*per + i + 1)}, Payload: pl}
			}
			if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), msgs); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(0, batches)
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
	const victim = 2
	tc.stop(victim)
	logs, _ := filepath.Glob(filepath.Join(partitionDir(tc.dirs[victim], 0, 0, 0), "*.log"))
	if len(logs) < 3 {
		t.Fatalf("%d segments, want at least 3", len(logs))
	}
	if err := os.Remove(logs[1]); err != nil {
		t.Fatal(err)
	}
	if err := tc.start(victim, false); err != nil {
		t.Fatalf("a cluster node refused to boot over a damaged partition: %v", err)
	}
	// The partition opens once the node's metadata caught up.
	eventually(t, 30*time.Second, "damaged partition quarantined", func() error {
		if q, _ := filepath.Glob(filepath.Join(tc.dirs[victim], quarantineDir, "0-0-0-*")); len(q) != 1 {
			return fmt.Errorf("quarantined partitions: %v", q)
		}
		return nil
	})
	send(batches, batches+2)
	back := tc.dial(victim)
	eventually(t, 60*time.Second, "refilled partition", func() error { return checkPartition(ctx, back, 0, (batches+2)*per) })
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
}

// TestClusterLoginWaitsForQuorum logs in to the first node of a new
// cluster before its peers run: the login is replayed (58), not refused
// as bad credentials, and succeeds once a quorum created root.
func TestClusterLoginWaitsForQuorum(t *testing.T) {
	tc := newTestCluster(t, 3)
	if err := tc.start(0, false); err != nil {
		t.Fatal(err)
	}
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{tc.nodes[0].Addr()}
	cfg.Username, cfg.Password = DefaultRootUsername, DefaultRootPassword
	cfg.HeartbeatInterval = 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		c   *client.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := client.Dial(ctx, cfg)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("login finished without a quorum: %v", r.err)
	case <-time.After(time.Second):
	}
	for i := 1; i < 3; i++ {
		if err := tc.start(i, false); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("login once the cluster formed: %v", r.err)
	}
	defer r.c.Close()
	if err := r.c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClusterRefillsCorruptPartition truncates, or flips a bit in, a
// stopped node's partition log below its checkpoint (chaos seed 100, `--nodes 3 --faults corrupt`,
// refused to boot with "segments end at offset 8, checkpoint 64 needs
// 90"): the node boots, moves the damaged storage to quarantine/, and the
// partition rejoins and refills from its peers with every acknowledged
// message, then keeps taking writes.
func TestClusterRefillsCorruptPartition(t *testing.T) {
	t.Run("truncated", func(t *testing.T) {
		testClusterRefillsDamagedPartition(t, func(f string) error { return os.Truncate(f, 100) })
	})
	// A flipped bit in the middle of the log (chaos seed 1001 left the
	// node failing every poll of that partition).
	t.Run("flipped", func(t *testing.T) {
		testClusterRefillsDamagedPartition(t, func(f string) error {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0x10
			return os.WriteFile(f, b, 0o644)
		})
	})
}

func testClusterRefillsDamagedPartition(t *testing.T, damage func(log string) error) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(0)
	tc.setupTopic(ctx, c, 1)
	const sends, per = 100, 2
	sendAll(ctx, t, c, 0, 0, sends, per)
	const victim = 2
	pdir := partitionDir(tc.dirs[victim], 0, 0, 0)
	eventually(t, 30*time.Second, "victim caught up and checkpointed", func() error {
		if err := checkPartition(ctx, tc.dial(victim), 0, sends*per); err != nil {
			return err
		}
		ck, _ := filepath.Glob(filepath.Join(pdir, "checkpoint-*"))
		for _, f := range ck {
			if !strings.HasSuffix(f, "checkpoint-00000000000000000000") {
				return nil
			}
		}
		return fmt.Errorf("no checkpoint above op 0 in %s: %v", pdir, ck)
	})
	tc.stop(victim)
	logs, err := filepath.Glob(filepath.Join(pdir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("segment logs: %v %v", logs, err)
	}
	for _, f := range logs {
		if err := damage(f); err != nil {
			t.Fatal(err)
		}
	}
	sendAll(ctx, t, c, 0, sends, sends+5, per)
	if err := tc.start(victim, false); err != nil {
		t.Fatalf("a cluster node refused to boot over a partition its peers can refill: %v", err)
	}
	// The partition may open after Start returned (its metadata op
	// applies then).
	eventually(t, 30*time.Second, "damaged storage quarantined", func() error {
		q, _ := filepath.Glob(filepath.Join(tc.dirs[victim], quarantineDir, "0-0-0-*"))
		if len(q) != 1 {
			return fmt.Errorf("quarantined damaged storage: %v", q)
		}
		return nil
	})
	back := tc.dial(victim)
	eventually(t, 90*time.Second, "refilled node serves every message", func() error {
		return checkPartition(ctx, back, 0, (sends+5)*per)
	})
	sendAll(ctx, t, back, 0, sends+5, sends+8, per)
	eventually(t, 30*time.Second, "every node holds the later messages", func() error {
		for i := range tc.nodes {
			if err := checkPartition(ctx, tc.dial(i), 0, (sends+8)*per); err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
		}
		return nil
	})
	eventually(t, 30*time.Second, "identical segments", func() error { return tc.sameSegments(1, 0, 1, 2) })
}
