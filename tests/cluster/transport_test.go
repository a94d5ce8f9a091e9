package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestClientTransportsTLS runs a three-node cluster with TLS on its client
// transport (tcp-tls, wss, then quic): cluster metadata reports each node's port
// of that transport, a client given a follower only is redirected to the
// leader over it, keeps sending across a kill of the leader (reconnecting
// over the same transport to the new one), polls every acknowledged
// message back byte-identical, and a plaintext client is refused.
func TestClientTransportsTLS(t *testing.T) {
	for _, tr := range []harness.Transport{harness.TCPTLS, harness.WSS, harness.QUIC} {
		t.Run(tr.Name, func(t *testing.T) { clientTransportTLS(t, tr) })
	}
}

func clientTransportTLS(t *testing.T, tr harness.Transport) {
	c := startCluster(t, harness.ClusterOptions{Transport: tr})
	ctx := ctxT(t, 3*time.Minute)
	leader, _, err := c.WaitPrimary("metadata", 0, 60*time.Second)
	must(t, err, "metadata primary")

	md, err := c.Metadata(ctx, leader)
	must(t, err, "cluster metadata")
	for _, m := range md.Nodes {
		i := c.NodeOf(m)
		if i < 0 {
			t.Fatalf("metadata names unknown node %+v", m)
		}
		want := c.Nodes[i].TCPPort
		got := int(m.TCPPort)
		if tr.WS {
			want, got = c.Nodes[i].WSPort, int(m.WSPort)
		}
		if tr.QUIC {
			want, got = c.Nodes[i].QUICPort, int(m.QUICPort)
		}
		if got != want {
			t.Fatalf("metadata gives node %d %s port %d, roster %d (%+v)", i, tr.Name, got, want, m)
		}
	}

	follower := (leader + 1) % c.Size()
	cfg := c.ClusterClientConfig("iggy", "iggy")
	cfg.Addresses = []string{c.Addr(follower)}
	cfg.RequestTimeout = 20 * time.Second
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	cl, err := client.Dial(dctx, cfg)
	cancel()
	must(t, err, "dial a follower")
	defer cl.Close()
	if cl.Addr() != c.Addr(leader) {
		t.Fatalf("client on %s, want it redirected to the leader %s", cl.Addr(), c.Addr(leader))
	}
	_, err = cl.CreateStream(ctx, "tls", nil)
	must(t, err, "create stream")
	_, err = cl.CreateTopic(ctx, wire.CreateTopic{StreamID: name("tls"), PartitionsCount: 1, Name: "t"})
	must(t, err, "create topic")

	var sent [][]byte
	send := func(from, n int) {
		msgs := make([]wire.Message, n)
		for i := range msgs {
			p := []byte(fmt.Sprintf("%s message %05d %x", tr.Name, from+i, bytes.Repeat([]byte{byte(from + i)}, 64)))
			m, err := client.NewMessage(p)
			must(t, err, "message")
			msgs[i] = m
			sent = append(sent, p)
		}
		var err error
		for attempt := 0; attempt < 20; attempt++ {
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			_, err = cl.SendMessages(sctx, name("tls"), name("t"), wire.PartitionByID(0), msgs)
			cancel()
			if err == nil {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Fatalf("send %d..%d: %v", from, from+n, err)
	}
	send(0, 100)
	c.Kill(leader)
	t.Logf("killed the leader, node %d", leader)
	send(100, 100)
	if cl.Addr() == c.Addr(leader) {
		t.Fatalf("still on the killed node %s", cl.Addr())
	}

	pm, err := cl.PollMessages(ctx, wire.PollMessages{Consumer: offsetConsumer, StreamID: name("tls"), TopicID: name("t"),
		Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(0), Count: 1000})
	must(t, err, "poll")
	got := pm.Messages()
	// A send replayed across the kill may have been appended twice
	// (partition.dedup_clients_max is not implemented): compare the
	// distinct payloads in order.
	var distinct [][]byte
	for _, m := range got {
		if len(distinct) > 0 && bytes.Equal(distinct[len(distinct)-1], m.Payload) {
			continue
		}
		if i := len(distinct); i < len(sent) && !bytes.Equal(m.Payload, sent[i]) && i > 0 && bytes.Equal(m.Payload, sent[i-1]) {
			continue
		}
		distinct = append(distinct, m.Payload)
	}
	if len(distinct) < len(sent) {
		t.Fatalf("polled %d messages (%d distinct), sent %d", len(got), len(distinct), len(sent))
	}
	for i := range sent {
		if !bytes.Equal(distinct[i], sent[i]) {
			t.Fatalf("message %d differs: %q, sent %q", i, distinct[i], sent[i])
		}
	}

	plain := c.ClientConfig(follower, "iggy", "iggy")
	plain.TLS = nil
	if tr.QUIC {
		// QUIC has no plaintext (nil TLS skips verification): a client that
		// verifies against the system roots, not the test CA, is refused.
		plain.TLS = &tls.Config{MinVersion: tls.VersionTLS13}
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if pc, err := client.Dial(pctx, plain); err == nil {
		pc.Close()
		t.Fatal("a plaintext (or untrusting) client was served by a TLS node")
	}
}
