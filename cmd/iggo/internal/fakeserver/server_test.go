package fakeserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

func dial(t *testing.T, s *Server) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{s.Addr()}
	cfg.Username, cfg.Password = RootUsername, RootPassword
	cfg.HeartbeatInterval = 0
	cfg.RequestTimeout = 5 * time.Second
	c, err := client.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func payloads(p wire.PolledMessages) []string {
	var out []string
	for _, m := range p.Messages() {
		out = append(out, fmt.Sprintf("%d:%s", m.Offset, m.Payload))
	}
	return out
}

// The fake must poll like a server: offsets across batch boundaries, last,
// next with auto-commit, and group assignments.
func TestFakeServerPollSemantics(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := dial(t, s)
	ctx := context.Background()
	sid, tid := wire.MustNamedID("s"), wire.MustNamedID("t")
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, PartitionsCount: 2, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 3; b++ {
		var msgs []wire.Message
		for i := 0; i < 3; i++ {
			m, _ := client.NewMessage([]byte(fmt.Sprintf("m%d", b*3+i)))
			msgs = append(msgs, m)
		}
		conf, err := c.SendMessages(ctx, sid, tid, wire.PartitionByID(0), msgs)
		if err != nil || len(conf) != 1 || conf[0].BaseOffset != uint64(b*3) {
			t.Fatalf("send %d: %v %v", b, conf, err)
		}
	}
	poll := func(strat wire.PollingStrategy, count uint32, auto bool) []string {
		t.Helper()
		p, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: sid, TopicID: tid,
			Partition: wire.SomePartition(0), Strategy: strat, Count: count, AutoCommit: auto})
		if err != nil {
			t.Fatal(err)
		}
		if p.CurrentOffset != 8 {
			t.Fatalf("current offset %d", p.CurrentOffset)
		}
		return payloads(p)
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	check(poll(wire.PollFromOffset(2), 4, false), "2:m2", "3:m3", "4:m4", "5:m5")
	check(poll(wire.PollFromLast(), 2, false), "7:m7", "8:m8")
	check(poll(wire.PollFromOffset(9), 5, false))
	check(poll(wire.PollFromNext(), 4, true), "0:m0", "1:m1", "2:m2", "3:m3")
	check(poll(wire.PollFromNext(), 10, true), "4:m4", "5:m5", "6:m6", "7:m7", "8:m8")
	off, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(1)), sid, tid, wire.SomePartition(0))
	if err != nil || off == nil || off.StoredOffset != 8 {
		t.Fatalf("stored offset %+v %v", off, err)
	}

	if _, err := c.CreateConsumerGroup(ctx, sid, tid, "g"); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, s)
	gid := wire.MustNamedID("g")
	for _, cl := range []*client.Client{c, c2} {
		if err := cl.JoinConsumerGroup(ctx, sid, tid, gid); err != nil {
			t.Fatal(err)
		}
	}
	a1, err1 := c.SyncConsumerGroup(ctx, sid, tid, gid)
	a2, err2 := c2.SyncConsumerGroup(ctx, sid, tid, gid)
	if err1 != nil || err2 != nil || fmt.Sprint(a1.Partitions) != "[0]" || fmt.Sprint(a2.Partitions) != "[1]" {
		t.Fatalf("assignments %v %v (%v %v)", a1, a2, err1, err2)
	}
	g, err := c.GetConsumerGroup(ctx, sid, tid, gid)
	if err != nil || g.MembersCount != 2 {
		t.Fatalf("group %+v %v", g, err)
	}
	c2.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		g, err = c.GetConsumerGroup(ctx, sid, tid, gid)
		if err == nil && g.MembersCount == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member not removed on disconnect: %+v %v", g, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s.Requests(wire.CmdSendMessages) != 3 {
		t.Fatalf("send requests %d", s.Requests(wire.CmdSendMessages))
	}
}
