package replica

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/wire"
)

func startNodeWith(t *testing.T, tune func(*config.Config)) *Node {
	t.Helper()
	cfg := encryptedConfig(t.TempDir(), "")
	if tune != nil {
		tune(cfg)
	}
	n, err := startWith(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func setupStreamTopic(ctx context.Context, t *testing.T, c *client.Client, parts uint32) {
	t.Helper()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: parts, Name: "t"}); err != nil {
		t.Fatal(err)
	}
}

func waitPoll(p uint32, strat wire.PollingStrategy, wait time.Duration) wire.PollMessages {
	return wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: wire.NumericID(0), TopicID: wire.NumericID(0),
		Partition: wire.SomePartition(p), Strategy: strat, Count: 100, WaitMillis: uint32(wait / time.Millisecond)}
}

type pollOutcome struct {
	pm      wire.PolledMessages
	err     error
	elapsed time.Duration
}

func pollAsync(ctx context.Context, c *client.Client, req wire.PollMessages) <-chan pollOutcome {
	out := make(chan pollOutcome, 1)
	go func() {
		start := time.Now()
		pm, err := c.PollMessages(ctx, req)
		out <- pollOutcome{pm, err, time.Since(start)}
	}()
	return out
}

// waitingOn waits until n holds want waiting polls.
func waitingOn(t *testing.T, n *Node, want int64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("%d waiting polls", want), func() error {
		if s := n.waits.Stats(); s.Waiting != want {
			return fmt.Errorf("%d waiting", s.Waiting)
		}
		return nil
	})
}

// statsSettle checks n's long-poll stats until ok accepts them: the
// server records a delivery and releases its slot just after it wrote the
// reply the client already holds.
func statsSettle(t *testing.T, n *Node, ok func(s longpoll.Stats) bool) {
	t.Helper()
	eventually(t, 30*time.Second, "long-poll stats", func() error {
		if s := n.waits.Stats(); !ok(s) {
			return fmt.Errorf("stats %+v", s)
		}
		return nil
	})
}

func sendOne(ctx context.Context, t *testing.T, c *client.Client, p uint32, payload string) {
	t.Helper()
	if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(p),
		[]wire.Message{{ID: wire.Uint128{Lo: 1}, Payload: []byte(payload)}}); err != nil {
		t.Fatal(err)
	}
}

// TestLongPollWakesOnCommit: a poll past the end waits; messages below the
// offset it needs do not answer it; the commit of the message it needs
// does, before the wait ends.
func TestLongPollWakesOnCommit(t *testing.T) {
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, cons := dial(t, n), dial(t, n)
	setupStreamTopic(ctx, t, prod, 1)

	// An empty partition: the first message wakes it.
	out := pollAsync(ctx, cons, waitPoll(0, wire.PollFromOffset(0), time.Minute))
	waitingOn(t, n, 1)
	sendOne(ctx, t, prod, 0, "m0")
	r := <-out
	if r.err != nil || r.pm.MessagesCount != 1 || string(r.pm.Messages()[0].Payload) != "m0" {
		t.Fatalf("woken poll: %+v %v", r.pm, r.err)
	}
	if r.elapsed >= time.Minute {
		t.Fatalf("answered after %v: the wait ran out instead of the commit waking it", r.elapsed)
	}

	// Waiting for offset 3 while the log ends at 1: offsets 1 and 2 are
	// not enough.
	out = pollAsync(ctx, cons, waitPoll(0, wire.PollFromOffset(3), time.Minute))
	waitingOn(t, n, 1)
	sendOne(ctx, t, prod, 0, "m1")
	sendOne(ctx, t, prod, 0, "m2")
	select {
	case r := <-out:
		t.Fatalf("a poll for offset 3 answered after offsets 1 and 2: %+v %v", r.pm, r.err)
	case <-time.After(200 * time.Millisecond):
	}
	sendOne(ctx, t, prod, 0, "m3")
	r = <-out
	if r.err != nil || r.pm.MessagesCount != 1 || r.pm.Messages()[0].Offset != 3 {
		t.Fatalf("poll for offset 3: %+v %v", r.pm, r.err)
	}
	// With data there, a waiting poll answers at once and takes no slot.
	pm, err := cons.PollMessages(ctx, waitPoll(0, wire.PollFromFirst(), time.Minute))
	if err != nil || pm.MessagesCount != 4 {
		t.Fatalf("poll with data: %d messages, %v", pm.MessagesCount, err)
	}
	statsSettle(t, n, func(s longpoll.Stats) bool {
		return s.Waits == 2 && s.Woken >= 2 && s.Expired == 0 && s.Delivers == 2 && s.Waiting == 0
	})
}

// TestLongPollDeadline: nothing arrives, the poll answers empty when its
// wait ends, and a wait longer than long_poll.max_wait is cut to it.
func TestLongPollDeadline(t *testing.T) {
	n := startNodeWith(t, func(c *config.Config) { c.LongPoll.MaxWait = config.D(400 * time.Millisecond) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dial(t, n)
	setupStreamTopic(ctx, t, c, 1)
	start := time.Now()
	pm, err := c.PollMessages(ctx, waitPoll(0, wire.PollFromNext(), 250*time.Millisecond))
	if err != nil || pm.MessagesCount != 0 {
		t.Fatalf("%+v %v", pm, err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the 250 ms wait ended", d)
	}
	start = time.Now()
	pm, err = c.PollMessages(ctx, waitPoll(0, wire.PollFromNext(), 20*time.Second))
	if err != nil || pm.MessagesCount != 0 {
		t.Fatalf("%+v %v", pm, err)
	}
	// Cut to 400 ms: generous upper bound for a loaded machine, far below
	// the 20 s asked for.
	if d := time.Since(start); d < 400*time.Millisecond || d > 15*time.Second {
		t.Fatalf("a 20 s wait capped at 400 ms answered after %v", d)
	}
	// Each poll waited until its deadline (a loaded machine may spend a
	// short wait in the first round trip and not park at all).
	statsSettle(t, n, func(s longpoll.Stats) bool {
		return s.Waits >= 1 && s.Expired == s.Waits && s.Woken == 0 && s.Waiting == 0 && s.Delivers == 0
	})
}

// TestLongPollManyWaiters: many connections wait on one partition and
// others on a second; one commit on the first answers exactly its
// waiters, the second keeps its own until its commit.
func TestLongPollManyWaiters(t *testing.T) {
	const waiters = 24
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := dial(t, n)
	setupStreamTopic(ctx, t, prod, 2)
	outs := make([]<-chan pollOutcome, waiters)
	for i := range outs {
		outs[i] = pollAsync(ctx, dial(t, n), waitPoll(uint32(i%2), wire.PollFromOffset(0), time.Minute))
	}
	waitingOn(t, n, waiters)
	sendOne(ctx, t, prod, 0, "p0")
	for i := 0; i < waiters; i += 2 {
		r := <-outs[i]
		if r.err != nil || r.pm.MessagesCount != 1 || r.pm.PartitionID != 0 {
			t.Fatalf("waiter %d: %+v %v", i, r.pm, r.err)
		}
	}
	waitingOn(t, n, waiters/2)
	for i := 1; i < waiters; i += 2 {
		select {
		case r := <-outs[i]:
			t.Fatalf("waiter %d on partition 1 answered by a commit on partition 0: %+v %v", i, r.pm, r.err)
		default:
		}
	}
	sendOne(ctx, t, prod, 1, "p1")
	for i := 1; i < waiters; i += 2 {
		r := <-outs[i]
		if r.err != nil || r.pm.MessagesCount != 1 || r.pm.PartitionID != 1 {
			t.Fatalf("waiter %d: %+v %v", i, r.pm, r.err)
		}
	}
	statsSettle(t, n, func(s longpoll.Stats) bool { return s.Delivers == waiters && s.Waiting == 0 })
}

// TestLongPollConsumerGroup: a member owning several partitions waits on
// all of them; a message on any one answers it, from that partition, and
// auto-commit moves the group's offset.
func TestLongPollConsumerGroup(t *testing.T) {
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, member := dial(t, n), dial(t, n)
	setupStreamTopic(ctx, t, prod, 3)
	if _, err := prod.CreateConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), "g"); err != nil {
		t.Fatal(err)
	}
	req := wire.PollMessages{Consumer: wire.GroupConsumer(wire.MustNamedID("g")), StreamID: wire.NumericID(0), TopicID: wire.NumericID(0),
		Strategy: wire.PollFromNext(), Count: 10, AutoCommit: true, WaitMillis: 60_000}
	for round, p := range []uint32{2, 0, 1, 2} {
		out := pollAsync(ctx, member, req)
		waitingOn(t, n, 1)
		sendOne(ctx, t, prod, p, fmt.Sprintf("r%d", round))
		r := <-out
		if r.err != nil || r.pm.MessagesCount != 1 || r.pm.PartitionID != p || string(r.pm.Messages()[0].Payload) != fmt.Sprintf("r%d", round) {
			t.Fatalf("round %d: %+v %v, want the message sent to partition %d", round, r.pm, r.err, p)
		}
	}
}

// TestLongPollLimits: waits beyond long_poll.waiters_max are refused with
// TransientNotAccepted (58); waiters_max = 0 refuses every wait with
// FeatureUnavailable (5) and serves polls that find messages.
func TestLongPollLimits(t *testing.T) {
	n := startNodeWith(t, func(c *config.Config) { c.LongPoll.WaitersMax = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := dial(t, n)
	setupStreamTopic(ctx, t, prod, 1)
	a := pollAsync(ctx, dial(t, n), waitPoll(0, wire.PollFromOffset(0), time.Minute))
	b := pollAsync(ctx, dial(t, n), waitPoll(0, wire.PollFromOffset(0), time.Minute))
	waitingOn(t, n, 2)
	_, err := dial(t, n).PollMessages(ctx, waitPoll(0, wire.PollFromOffset(0), time.Minute))
	if !wire.HasCode(err, wire.CodeTransientNotAccepted) {
		t.Fatalf("third wait: %v, want TransientNotAccepted", err)
	}
	sendOne(ctx, t, prod, 0, "x")
	for _, out := range []<-chan pollOutcome{a, b} {
		if r := <-out; r.err != nil || r.pm.MessagesCount != 1 {
			t.Fatalf("%+v %v", r.pm, r.err)
		}
	}
	statsSettle(t, n, func(s longpoll.Stats) bool { return s.Refused == 1 && s.Waiting == 0 })

	off := startNodeWith(t, func(c *config.Config) { c.LongPoll.WaitersMax = 0 })
	c := dial(t, off)
	setupStreamTopic(ctx, t, c, 1)
	if _, err := c.PollMessages(ctx, waitPoll(0, wire.PollFromOffset(0), time.Second)); !wire.HasCode(err, wire.CodeFeatureUnavailable) {
		t.Fatalf("wait with long polling off: %v, want FeatureUnavailable", err)
	}
	sendOne(ctx, t, c, 0, "y")
	if pm, err := c.PollMessages(ctx, waitPoll(0, wire.PollFromOffset(0), time.Second)); err != nil || pm.MessagesCount != 1 {
		t.Fatalf("poll with a message and long polling off: %+v %v", pm, err)
	}
}

// TestLongPollPartitionDeleted: deleting the topic a poll waits on
// answers the poll at once with the topic's absence.
func TestLongPollPartitionDeleted(t *testing.T) {
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, cons := dial(t, n), dial(t, n)
	setupStreamTopic(ctx, t, admin, 1)
	out := pollAsync(ctx, cons, waitPoll(0, wire.PollFromOffset(0), time.Minute))
	waitingOn(t, n, 1)
	if err := admin.DeleteTopic(ctx, wire.NumericID(0), wire.NumericID(0)); err != nil {
		t.Fatal(err)
	}
	r := <-out
	if !wire.HasCode(r.err, wire.CodeTopicIdNotFound) {
		t.Fatalf("poll of a deleted topic: %+v %v, want TopicIdNotFound", r.pm, r.err)
	}
	if r.elapsed >= time.Minute {
		t.Fatalf("answered only when the wait ended (%v)", r.elapsed)
	}
}

// TestLongPollFollow: client.Follow delivers every message once, in order,
// as the producer sends them.
func TestLongPollFollow(t *testing.T) {
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod, cons := dial(t, n), dial(t, n)
	setupStreamTopic(ctx, t, prod, 1)
	const total = 50
	fctx, fcancel := context.WithCancel(ctx)
	defer fcancel()
	var mu sync.Mutex
	var got []uint64
	done := make(chan error, 1)
	go func() {
		done <- cons.Follow(fctx, waitPoll(0, wire.PollFromFirst(), 10*time.Second), func(pm wire.PolledMessages) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range pm.Messages() {
				got = append(got, m.Offset)
			}
			if len(got) >= total {
				fcancel()
			}
			return nil
		})
	}()
	for i := 0; i < total; i++ {
		sendOne(ctx, t, prod, 0, fmt.Sprintf("f%d", i))
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow ended with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != total {
		t.Fatalf("followed %d messages, want %d", len(got), total)
	}
	for i, o := range got {
		if o != uint64(i) {
			t.Fatalf("message %d has offset %d", i, o)
		}
	}
}

// TestLongPollClusterBackups: in a 3-node cluster, polls waiting on every
// node (the partition's primary and both backups) are each answered by
// their own node's commit of the message, and read it from that node.
func TestLongPollClusterBackups(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := tc.dial(0)
	tc.setupTopic(ctx, admin, 1)
	primary, _, ok := tc.nodes[0].PartitionPrimary(0, 0, 0)
	if !ok {
		t.Fatal("partition 0 not hosted on node 0")
	}
	outs := make([]<-chan pollOutcome, 3)
	for i := range outs {
		outs[i] = pollAsync(ctx, tc.dial(i), waitPoll(0, wire.PollFromOffset(0), 90*time.Second))
	}
	for i := range tc.nodes {
		waitingOn(t, tc.nodes[i], 1)
	}
	// Send through a backup: it forwards to the primary.
	backup := (primary + 1) % 3
	prod := tc.dial(backup)
	sendOne(ctx, t, prod, 0, "replicated")
	for i, out := range outs {
		r := <-out
		if r.err != nil || r.pm.MessagesCount != 1 || string(r.pm.Messages()[0].Payload) != "replicated" {
			t.Fatalf("node %d: %+v %v", i, r.pm, r.err)
		}
		if r.elapsed >= 90*time.Second {
			t.Fatalf("node %d answered when the wait ended", i)
		}
		// Its own commit woke its poll (not the deadline).
		statsSettle(t, tc.nodes[i], func(s longpoll.Stats) bool { return s.Woken == 1 && s.Expired == 0 && s.Delivers == 1 })
	}
}

// TestLongPollHTTP: the HTTP poll route's wait parameter holds an empty
// poll until a message is committed (sent over the binary protocol here),
// a bad wait is a 400, and a wait that ends answers empty.
func TestLongPollHTTP(t *testing.T) {
	n := startNodeWith(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := dial(t, n)
	setupStreamTopic(ctx, t, prod, 1)
	hc := httpclient.New("http://" + n.HTTPAddr())
	if _, err := hc.Login(ctx, DefaultRootUsername, DefaultRootPassword); err != nil {
		t.Fatal(err)
	}
	path := "/streams/s/topics/t/messages?consumer_id=1&partition_id=0&kind=offset&value=0&count=10"
	type got struct {
		r   httpclient.Response
		err error
	}
	out := make(chan got, 1)
	go func() {
		r, err := hc.Do(ctx, "GET", path+"&wait=60s", nil)
		out <- got{r, err}
	}()
	waitingOn(t, n, 1)
	sendOne(ctx, t, prod, 0, "over-http")
	g := <-out
	if g.err != nil || g.r.Status != 200 || !bytes.Contains(g.r.Body, []byte(base64.StdEncoding.EncodeToString([]byte("over-http")))) {
		t.Fatalf("waiting HTTP poll: %v %d %s", g.err, g.r.Status, g.r.Body)
	}
	r, err := hc.Do(ctx, "GET", path+"&wait=soon", nil)
	if err != nil || r.Status != 400 {
		t.Fatalf("wait=soon: %v %d %s", err, r.Status, r.Body)
	}
	start := time.Now()
	r, err = hc.Do(ctx, "GET", strings.Replace(path, "value=0", "value=1", 1)+"&wait=300", nil)
	if err != nil || r.Status != 200 || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("wait=300 (ms) past the end: %v %d after %v: %s", err, r.Status, time.Since(start), r.Body)
	}
}
