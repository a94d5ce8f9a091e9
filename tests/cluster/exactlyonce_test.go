package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestSendRetriedAcrossFailover: a send carries a producer identity; sent
// again with that identity — through a backup that forwards it, after the
// partition's primary was killed (a view change), through the new primary,
// and through the killed node once it is back — it is answered every time
// with the original confirmation and stored once. The next send of the
// producer follows it, and a send without an identity (Iggy's SDKs) is
// stored again when repeated.
func TestSendRetriedAcrossFailover(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	ts := &topicSpec{stream: "eo", topic: "t", durability: "replicated", partitions: 1}
	createTopics(t, c, 0, []*topicSpec{ts})
	group := ts.group(0)
	primary, view, err := c.WaitPrimary(group, 0, 30*time.Second)
	must(t, err, "partition primary")
	backup := (primary + 1) % c.Size()
	t.Logf("%s: primary node %d in view %d, first send through backup node %d", group, primary, view, backup)

	ctx := ctxT(t, 4*time.Minute)
	msgs := make([]wire.Message, 4)
	for i := range msgs {
		m, err := client.NewMessage(payload(1, uint64(i)))
		must(t, err, "message")
		msgs[i] = m
	}
	first, err := client.Dial(ctx, c.ClientConfig(backup, "iggy", "iggy"))
	must(t, err, "login on the backup")
	conf, err := first.SendMessages(ctx, name(ts.stream), name(ts.topic), wire.PartitionByID(0), msgs)
	must(t, err, "first send")
	base := conf[0].BaseOffset
	prod := first.Producer()
	first.Close()
	if prod.ID.IsZero() || prod.Request == 0 {
		t.Fatalf("no producer identity after a send: %+v", prod)
	}

	// resend sends the same batch through node i under the same identity
	// and request number (a Client continuing the producer right before it).
	resend := func(i int, what string) {
		t.Helper()
		cfg := c.ClientConfig(i, "iggy", "iggy")
		cfg.RequestTimeout = 30 * time.Second
		again := prod
		again.Request--
		cfg.Producer = &again
		var cl *client.Client
		var err error
		for attempt := 0; ; attempt++ {
			if cl, err = client.Dial(ctx, cfg); err == nil {
				break
			}
			if attempt > 50 {
				t.Fatalf("%s: login on node %d: %v", what, i, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		defer cl.Close()
		var got wire.SendConfirmations
		for attempt := 0; ; attempt++ {
			got, err = cl.SendMessages(ctx, name(ts.stream), name(ts.topic), wire.PartitionByID(0), msgs)
			if err == nil || attempt > 50 || !wire.HasCode(err, wire.CodeTransientNotAccepted) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		must(t, err, what)
		if got[0].BaseOffset != base {
			t.Fatalf("%s via node %d: confirmed at %d, the original was %d", what, i, got[0].BaseOffset, base)
		}
		if p := cl.Producer(); p.Request != prod.Request {
			t.Fatalf("%s: the retry used request %d, not %d", what, p.Request, prod.Request)
		}
	}
	for i := 0; i < c.Size(); i++ {
		resend(i, fmt.Sprintf("retry through node %d", i))
	}
	c.Kill(primary)
	newPrimary, newView, err := c.WaitPrimary(group, view+1, 60*time.Second)
	must(t, err, "view change")
	t.Logf("%s: node %d killed, primary node %d in view %d", group, primary, newPrimary, newView)
	for i := 0; i < c.Size(); i++ {
		if i != primary {
			resend(i, fmt.Sprintf("retry through node %d after the view change", i))
		}
	}
	c.Restart(primary, false)
	resend(primary, "retry through the restarted node")

	// Stored once on every node; the next send follows it.
	for i := 0; i < c.Size(); i++ {
		got := readAll(t, c, i, partKey{spec: ts, partition: 0}, base+uint64(len(msgs)), 60*time.Second)
		if uint64(len(got)) != base+uint64(len(msgs)) {
			t.Fatalf("node %d holds %d messages, want %d", i, len(got), base+uint64(len(msgs)))
		}
	}
	next := prod
	cfg := c.ClientConfig(backup, "iggy", "iggy")
	cfg.Producer = &next
	nc, err := client.Dial(ctx, cfg)
	must(t, err, "login")
	defer nc.Close()
	conf, err = nc.SendMessages(ctx, name(ts.stream), name(ts.topic), wire.PartitionByID(0), msgs)
	must(t, err, "next send")
	if want := base + uint64(len(msgs)); conf[0].BaseOffset != want {
		t.Fatalf("next send at %d, want %d", conf[0].BaseOffset, want)
	}
	// Without an identity, the same batch twice is stored twice.
	anon := c.ClientConfig(backup, "iggy", "iggy")
	anon.AtLeastOnceSends = true
	ac, err := client.Dial(ctx, anon)
	must(t, err, "login")
	defer ac.Close()
	var bases []uint64
	for k := 0; k < 2; k++ {
		conf, err = ac.SendMessages(ctx, name(ts.stream), name(ts.topic), wire.PartitionByID(0), msgs)
		must(t, err, "send without identity")
		bases = append(bases, conf[0].BaseOffset)
	}
	if bases[1] != bases[0]+uint64(len(msgs)) {
		t.Fatalf("sends without identity at %v", bases)
	}
}
