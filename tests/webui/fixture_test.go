package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// demo is the data the screenshots show: two streams, topics of both
// durabilities, JSON messages with headers, a consumer group part way
// through its topic, and a user with read access to one stream.
type demo struct {
	Orders, Metrics uint32 // stream ids
	Events          uint32 // topic id of orders/events
	Group           uint32
	Partitions      []uint32 // partition ids of orders/events
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func strOpt(o wire.Options, k, v string) wire.Options { return o.With(k, wire.StringValue(v)) }

// populate creates the demo data through c (a root binary client).
func populate(t testing.TB, c *client.Client) demo {
	t.Helper()
	ctx := ctxT(t)
	var d demo
	orders, err := c.CreateStream(ctx, "orders", nil)
	must(t, err, "create stream orders")
	metricsStream, err := c.CreateStream(ctx, "metrics", nil)
	must(t, err, "create stream metrics")
	d.Orders, d.Metrics = orders.ID, metricsStream.ID
	so, sm := wire.NumericID(d.Orders), wire.NumericID(d.Metrics)
	ev, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: so, Name: "events", PartitionsCount: 3,
		Options: strOpt(nil, "durability", "persisted")})
	must(t, err, "create topic events")
	d.Events = ev.ID
	for _, p := range ev.Partitions {
		d.Partitions = append(d.Partitions, p.ID)
	}
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: so, Name: "audit", PartitionsCount: 1,
		Options: strOpt(strOpt(nil, wire.OptMessageExpiry, "7 days"), wire.OptMaxTopicSize, "10 GiB")})
	must(t, err, "create topic audit")
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: sm, Name: "cpu", PartitionsCount: 2})
	must(t, err, "create topic cpu")

	items := []string{"keyboard", "monitor", "cable", "desk", "lamp", "chair"}
	for batch := 0; batch < 6; batch++ {
		for _, p := range d.Partitions {
			var msgs []wire.Message
			for i := 0; i < 20; i++ {
				n := batch*20 + i
				body, _ := json.Marshal(map[string]any{"order": 1000 + n, "item": items[n%len(items)], "qty": 1 + n%4,
					"customer": fmt.Sprintf("c-%03d", n%37), "partition": p})
				hdr, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{
					{Key: wire.StringValue("source"), Value: wire.StringValue("checkout")},
					{Key: wire.StringValue("attempt"), Value: wire.Uint32Value(uint32(1 + n%2))},
				})
				must(t, err, "headers")
				msgs = append(msgs, wire.Message{ID: wire.Uint128{Lo: uint64(p)*1_000_000 + uint64(n) + 1}, Payload: body, UserHeaders: hdr})
			}
			_, err := c.SendMessages(ctx, so, wire.NumericID(d.Events), wire.PartitionByID(p), msgs)
			must(t, err, "send")
		}
	}
	g, err := c.CreateConsumerGroup(ctx, so, wire.NumericID(d.Events), "billing")
	must(t, err, "create group billing")
	d.Group = g.ID
	_, err = c.CreateUser(ctx, wire.CreateUser{Username: "analyst", Password: "analyst-pass", Status: wire.UserActive,
		Permissions: &wire.Permissions{Streams: []wire.StreamPermissions{{StreamID: d.Orders, ReadStream: true, ReadTopics: true, PollMessages: true}}}})
	must(t, err, "create user analyst")
	_, err = c.CreatePersonalAccessToken(ctx, "ci-deploy", 0)
	must(t, err, "create token")
	return d
}

// consume joins the group on c (its own connection) and commits a part of
// each partition: lag stays on every one.
func consume(t testing.TB, c *client.Client, d demo) {
	t.Helper()
	ctx := ctxT(t)
	so, tp, g := wire.NumericID(d.Orders), wire.NumericID(d.Events), wire.NumericID(d.Group)
	must(t, c.JoinConsumerGroup(ctx, so, tp, g), "join billing")
	for i, p := range d.Partitions {
		must(t, c.StoreConsumerOffset(ctx, wire.GroupConsumer(g), so, tp, wire.SomePartition(p), uint64(30*(i+1))), "commit")
	}
}

// traffic sends and polls on orders/events for d, every 100 ms, so the
// charts have something to draw; it stops itself after d or when ctx ends.
func traffic(ctx context.Context, t testing.TB, c *client.Client, dm demo, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		so, tp := wire.NumericID(dm.Orders), wire.NumericID(dm.Events)
		end := time.Now().Add(d)
		for i := 0; time.Now().Before(end) && ctx.Err() == nil && i < 10_000; i++ {
			n := 5 + (i*7)%25
			msgs := make([]wire.Message, n)
			for j := range msgs {
				msgs[j] = wire.Message{Payload: []byte(fmt.Sprintf(`{"tick":%d,"n":%d}`, i, j))}
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			p := dm.Partitions[i%len(dm.Partitions)]
			_, _ = c.SendMessages(cctx, so, tp, wire.PartitionByID(p), msgs)
			_, _ = c.PollMessages(cctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(7)), StreamID: so, TopicID: tp,
				Partition: wire.SomePartition(p), Strategy: wire.PollingStrategy{Kind: wire.PollLast}, Count: uint32(2 * n)})
			cancel()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return done
}

// named is a name identifier.
func named(t testing.TB, name string) wire.Identifier {
	t.Helper()
	id, err := wire.NamedID(name)
	must(t, err, "name "+name)
	return id
}
