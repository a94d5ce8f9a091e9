package cluster

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestQUICLeaderRedirect: every node serves QUIC on its roster ports.quic;
// cluster metadata read over QUIC names those ports, and a QUIC client that
// starts on a follower is redirected to the leader's QUIC port, where it
// writes and reads.
func TestQUICLeaderRedirect(t *testing.T) {
	const nodes = 3
	ips := harness.NodeIPs(nodes)
	env := []string{"IGGY_QUIC_ENABLED=true", "IGGY_QUIC_ADDRESS=0.0.0.0:0"}
	qports := make([]int, nodes)
	for i := range qports {
		p, err := harness.FreePort(ips[i], true)
		must(t, err, "free udp port")
		qports[i] = p
		env = append(env, fmt.Sprintf("IGGY_CLUSTER_NODES_%d_PORTS_QUIC=%d", i, p))
	}
	c := startCluster(t, harness.ClusterOptions{Nodes: nodes, Env: env})
	leader, _, err := c.WaitPrimary("metadata", 0, 60*time.Second)
	must(t, err, "metadata primary")
	follower := (leader + 1) % nodes
	quicAddr := func(i int) string {
		host, _, _ := net.SplitHostPort(c.Addr(i))
		return net.JoinHostPort(host, strconv.Itoa(qports[i]))
	}

	// Pinned to the follower: its metadata over QUIC lists every QUIC port.
	cfg := c.ClientConfig(follower, "iggy", "iggy")
	cfg.Transport, cfg.Addresses = client.TransportQUIC, []string{quicAddr(follower)}
	ctx := ctxT(t, 2*time.Minute)
	pinned, err := client.Dial(ctx, cfg)
	must(t, err, "quic login on a follower")
	defer pinned.Close()
	md, err := pinned.GetClusterMetadata(ctx)
	must(t, err, "cluster metadata over quic")
	for _, n := range md.Nodes {
		i := c.NodeOf(n)
		if i < 0 || int(n.QUICPort) != qports[i] {
			t.Fatalf("metadata node %+v: quic port %d, want the roster's %v", n, n.QUICPort, qports)
		}
	}

	// Leader-aware over QUIC: starts on the follower, ends on the leader.
	cfg = c.ClusterClientConfig("iggy", "iggy")
	cfg.Transport, cfg.Addresses = client.TransportQUIC, []string{quicAddr(follower)}
	cl, err := client.Dial(ctx, cfg)
	must(t, err, "leader-aware quic client")
	defer cl.Close()
	if got := cl.Addr(); got != quicAddr(leader) {
		t.Fatalf("quic client settled on %s, want the leader's quic address %s (node %d)", got, quicAddr(leader), leader)
	}
	me, err := cl.GetMe(ctx)
	must(t, err, "get me")
	if me.Transport != wire.TransportQUIC {
		t.Fatalf("transport %d, want quic", me.Transport)
	}
	_, err = cl.CreateStream(ctx, "q", nil)
	must(t, err, "create stream over quic")
	_, err = cl.CreateTopic(ctx, wire.CreateTopic{StreamID: name("q"), PartitionsCount: 3, Name: "t"})
	must(t, err, "create topic over quic")
	for p := uint32(0); p < 3; p++ {
		msgs := make([]wire.Message, 20)
		for j := range msgs {
			m, err := client.NewMessage(payload(p, uint64(j)))
			must(t, err, "message")
			msgs[j] = m
		}
		_, err := cl.SendMessages(ctx, name("q"), name("t"), wire.PartitionByID(p), msgs)
		must(t, err, fmt.Sprintf("send to partition %d over quic", p))
		pm, err := cl.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: name("q"),
			TopicID: name("t"), Partition: wire.SomePartition(p), Strategy: wire.PollFromFirst(), Count: 100})
		must(t, err, "poll over quic")
		if len(pm.Messages()) != 20 {
			t.Fatalf("partition %d: polled %d messages over quic, want 20", p, len(pm.Messages()))
		}
	}
}
