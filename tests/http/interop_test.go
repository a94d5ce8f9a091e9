package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// u128String is a wire id as the decimal string the JSON form carries.
func u128String(u wire.Uint128) string {
	v := new(big.Int).SetUint64(u.Hi)
	v.Lsh(v, 64)
	v.Or(v, new(big.Int).SetUint64(u.Lo))
	return v.String()
}

// crossTransport sends over HTTP on hc and polls over TCP on tc, then the
// other way round, checking that id, payload and user headers come back
// byte for byte (TCP returns the stored TLV block; HTTP's JSON renders it).
func crossTransport(t *testing.T, hc *httpclient.Client, tc *client.Client, stream, topic string, partition uint32) {
	t.Helper()
	ctx := ctxT(t)
	sid, _ := wire.NamedID(stream)
	tid, _ := wire.NamedID(topic)
	payload := make([]byte, 1000)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	hdr := []httpclient.Header{{Key: httpclient.HeaderField{Kind: "string", Value: []byte("trace")},
		Value: httpclient.HeaderField{Kind: "uint64", Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}}
	wantHdr, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("trace"),
		Value: wire.HeaderValue{Kind: wire.KindUint64, Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := wire.Uint128{Lo: 0x0102030405060708, Hi: 0x1112131415161718}

	// HTTP → TCP.
	conf, _, err := hc.Send(ctx, stream, topic, httpclient.PartitionID(partition),
		[]httpclient.Message{{ID: u128String(id), Payload: payload, UserHeaders: hdr}})
	if err != nil {
		t.Fatalf("http send: %v", err)
	}
	base := conf[0].BaseOffset
	var got []wire.PolledMessage
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := tc.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: sid, TopicID: tid,
			Partition: wire.SomePartition(partition), Strategy: wire.PollFromOffset(base), Count: 1})
		if err != nil {
			t.Fatalf("tcp poll: %v", err)
		}
		if got = p.Messages(); len(got) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != 1 || got[0].ID != id || !bytes.Equal(got[0].Payload, payload) || !bytes.Equal(got[0].UserHeaders, wantHdr) || got[0].Offset != base {
		t.Fatalf("HTTP→TCP: %+v (want id %v, %d payload bytes, headers %x)", got, id, len(payload), wantHdr)
	}

	// TCP → HTTP.
	id2 := wire.Uint128{Lo: 42, Hi: 7}
	p2 := bytes.Repeat([]byte{0xfe, 0x00, 0x7f}, 333)
	tconf, err := tc.SendMessages(ctx, sid, tid, wire.PartitionByID(partition), []wire.Message{{ID: id2, OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: p2, UserHeaders: wantHdr}})
	if err != nil {
		t.Fatalf("tcp send: %v", err)
	}
	var hp httpclient.Polled
	for {
		hp, err = hc.Poll(ctx, stream, topic, "1", partition, "offset", tconf[0].BaseOffset, 1, false)
		if err != nil {
			t.Fatalf("http poll: %v", err)
		}
		if len(hp.Messages) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(hp.Messages) != 1 {
		t.Fatalf("TCP→HTTP: %+v", hp)
	}
	m := hp.Messages[0]
	var hs []httpclient.Header
	_ = json.Unmarshal(m.UserHeaders, &hs)
	if m.Header.ID.String() != u128String(id2) || !bytes.Equal(m.Payload, p2) || m.Header.Offset != tconf[0].BaseOffset ||
		m.Header.PayloadLength != uint32(len(p2)) || len(hs) != 1 || string(hs[0].Key.Value) != "trace" || hs[0].Value.Kind != "uint64" ||
		!bytes.Equal(hs[0].Value.Value, []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("TCP→HTTP: %+v headers %s", m.Header, m.UserHeaders)
	}
}

func TestHTTPAndTCPInterop(t *testing.T) {
	s := start(t)
	hc := root(t, s)
	expect(t, hc, "POST", "/streams", obj{"name": "x"}, 200)
	expect(t, hc, "POST", "/streams/x/topics", obj{"name": "y", "partitions_count": 1, "compression_algorithm": "none", "message_expiry": 0, "max_topic_size": 0}, 200)
	crossTransport(t, hc, s.Root(t), "x", "y", 0)
}

// TestClusterThroughBackup: in a 3-node cluster every control-plane write
// and every send made over HTTP on a backup is forwarded and answered as if
// served there; messages cross between HTTP and TCP on different nodes; a
// token minted on one node works on every other (the JWT key derives from
// the cluster key); cluster metadata advertises each node's http port.
func TestClusterThroughBackup(t *testing.T) {
	cl := harness.StartCluster(t, harness.ClusterOptions{Nodes: 3})
	ctx := ctxT(t)
	leader, err := cl.Leader(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	backup := (leader + 1) % 3
	other := (leader + 2) % 3
	hb := root(t, cl.Nodes[backup].Server)

	expect(t, hb, "POST", "/streams", obj{"name": "cs"}, 200)
	expect(t, hb, "POST", "/streams/cs/topics", obj{"name": "ct", "partitions_count": 3, "compression_algorithm": "none", "message_expiry": 0, "max_topic_size": 0}, 200)
	expect(t, hb, "POST", "/users", obj{"username": "carol", "password": "secret1", "status": "active"}, 200)
	expect(t, hb, "POST", "/streams/cs/topics/ct/consumer-groups", obj{"name": "g"}, 200)
	if l := decode[[]obj](t, expect(t, hb, "GET", "/streams/cs/topics", nil, 200)); len(l) != 1 {
		t.Fatalf("topics on the backup right after create: %v", l)
	}
	// The backup's token on the third node.
	ho := httpclient.New(cl.Nodes[other].HTTPURL())
	ho.Token = hb.Token
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := expect(t, ho, "GET", "/streams", nil, 200)
		if l := decode[[]obj](t, r); len(l) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Sends through the backup to every partition (each led by some node),
	// polled back over TCP on the third node, and the reverse.
	for p := uint32(0); p < 3; p++ {
		crossTransport(t, hb, cl.Nodes[other].Root(t), "cs", "ct", p)
	}
	// Offsets through the backup.
	expect(t, hb, "PUT", "/streams/cs/topics/ct/consumer-offsets", obj{"consumer_id": 9, "partition_id": 2, "offset": 0}, 204)
	// Logout on the backup revokes the token on the other node too.
	expect(t, hb, "DELETE", "/users/logout", nil, 204)
	for {
		r, err := ho.Do(ctx, "GET", "/streams", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token still valid on node %d after logout on %d: %d", other, backup, r.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Cluster metadata names every node's http port.
	md := decode[obj](t, expect(t, root(t, cl.Nodes[backup].Server), "GET", "/cluster/metadata", nil, 200))
	nodes := md["nodes"].([]any)
	for i, n := range nodes {
		ep := n.(map[string]any)["endpoints"].(map[string]any)
		if ep["http"] != json.Number(fmt.Sprint(cl.Nodes[i].HTTPPort)) {
			t.Fatalf("node %d endpoints %v, http port %d", i, ep, cl.Nodes[i].HTTPPort)
		}
	}
	// Every node ready, and its metrics show the cluster: gossip members
	// up, partition groups in normal status, one metadata primary in all.
	primaries := 0
	for i := range cl.Nodes {
		expect(t, httpclient.New(cl.Nodes[i].HTTPURL()), "GET", "/readyz", nil, 200)
		m := string(expect(t, root(t, cl.Nodes[i].Server), "GET", "/metrics", nil, 200).Body)
		for _, want := range []string{`iggo_gossip_members{state="alive"} 3`, `iggo_vsr_groups{kind="partition",status="normal"} 3`,
			`iggo_vsr_groups{kind="metadata",status="normal"} 1`} {
			if !strings.Contains(m, want) {
				t.Fatalf("node %d metrics lack %q", i, want)
			}
		}
		if strings.Contains(m, `iggo_vsr_primaries{kind="metadata"} 1`) {
			primaries++
		}
		// The sends came over HTTP to the backup, and over TCP to the third node.
		if want := `iggo_request_duration_seconds_count{command="message.send",transport="http"}`; i == backup && !strings.Contains(m, want) {
			t.Fatalf("backup metrics lack %q", want)
		}
	}
	if primaries != 1 {
		t.Fatalf("%d nodes report leading the metadata group", primaries)
	}
}

// TestSendAck: Iggy-Durability follows the topic's durability; ?ack=none
// answers 202 at once (after the permission pre-check) and the messages
// land; an unknown ack value is a 400.
func TestSendAck(t *testing.T) {
	s := start(t)
	c := root(t, s)
	expect(t, c, "POST", "/streams", obj{"name": "a"}, 200)
	expect(t, c, "POST", "/streams/a/topics", obj{"name": "p", "partitions_count": 1, "compression_algorithm": "none",
		"message_expiry": 0, "max_topic_size": 0, "options": obj{"durability": "persisted"}}, 200)
	if _, dur, err := c.Send(ctxT(t), "a", "p", httpclient.PartitionID(0), []httpclient.Message{{Payload: []byte("x")}}); err != nil || dur != "persisted" {
		t.Fatalf("persisted send: %v %q", err, dur)
	}
	body := obj{"partitioning": obj{"kind": "balanced", "value": ""}, "messages": []obj{{"payload": "eQ=="}}}
	r := expect(t, c, "POST", "/streams/a/topics/p/messages?ack=none", body, 202)
	if r.Header.Get("Iggy-Durability") != "none" || len(r.Body) != 0 {
		t.Fatalf("ack=none: %v %q", r.Header, r.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		p, err := c.Poll(ctxT(t), "a", "p", "1", 0, "first", 0, 10, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) == 2 && string(p.Messages[1].Payload) == "y" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unacknowledged send never landed: %+v", p)
		}
		time.Sleep(50 * time.Millisecond)
	}
	expect(t, c, "POST", "/streams/a/topics/p/messages?ack=maybe", body, 400)
	errorOf(t, expect(t, c, "POST", "/streams/a/topics/nope/messages?ack=none", body, 404), 2010, "topic_id_not_found")
	// A client without send permission is refused before the 202.
	expect(t, c, "POST", "/users", obj{"username": "reader", "password": "secret1", "status": "active",
		"permissions": obj{"global": obj{"read_streams": true}}}, 200)
	rd := httpclient.New(s.HTTPURL())
	if _, err := rd.Login(ctxT(t), "reader", "secret1"); err != nil {
		t.Fatal(err)
	}
	errorOf(t, expect(t, rd, "POST", "/streams/a/topics/p/messages?ack=none", body, 403), 41, "unauthorized")
	errorOf(t, expect(t, rd, "POST", "/streams/a/topics/p/messages", body, 403), 41, "unauthorized")
}

// TestFrameLimit: a send whose binary frame would exceed
// message_bus.max_message_size is refused with 413 and the node serves on.
func TestFrameLimit(t *testing.T) {
	s := start(t, "IGGY_MESSAGE_BUS_MAX_MESSAGE_SIZE=1 MiB")
	c := root(t, s)
	expect(t, c, "POST", "/streams", obj{"name": "f"}, 200)
	expect(t, c, "POST", "/streams/f/topics", obj{"name": "t", "partitions_count": 1, "compression_algorithm": "none", "message_expiry": 0, "max_topic_size": 0}, 200)
	big := make([]byte, 1200<<10)
	errorOf(t, expect(t, c, "POST", "/streams/f/topics/t/messages", obj{"partitioning": obj{"kind": "balanced", "value": ""},
		"messages": []obj{{"payload": big}}}, 413), 413, "payload_too_large")
	if _, _, err := c.Send(ctxT(t), "f", "t", httpclient.Balanced(), []httpclient.Message{{Payload: []byte("small")}}); err != nil {
		t.Fatalf("small send after the refusal: %v", err)
	}
}
