package fakenode

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// running is an in-process node that can be restarted on the same address
// and data directory (a graceful restart: every reply was written first,
// as after kill -9).
type running struct {
	t      *testing.T
	cfg    Config
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, dir string, bugs ...string) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := &running{t: t, cfg: Config{Addr: addr, DataDir: dir, Bugs: bugs}}
	r.boot()
	t.Cleanup(r.stop)
	return r
}

func (r *running) boot() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() {
		// After a restart the previous run's connections may still hold the
		// port for a moment (closed by the node, FIN_WAIT until the old
		// client closes its side), which SO_REUSEADDR does not cover: retry
		// the bind until boot's deadline.
		for {
			err := Run(ctx, r.cfg)
			if !errors.Is(err, syscall.EADDRINUSE) || ctx.Err() != nil {
				r.done <- err
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", r.cfg.Addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.t.Fatal("fake node did not start")
}

func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil {
		r.t.Errorf("fake node: %v", err)
	}
	r.cancel = nil
}

func (r *running) restart() {
	r.stop()
	r.boot()
}

func (r *running) dial() *client.Client {
	r.t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{r.cfg.Addr}
	cfg.Username, cfg.Password = "iggy", "iggy"
	cfg.HeartbeatInterval = 0
	cfg.RequestTimeout = 5 * time.Second
	c, err := client.Dial(context.Background(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

var (
	ctx = context.Background()
	sID = wire.MustNamedID("s")
	tID = wire.MustNamedID("t")
)

func setup(t *testing.T, c *client.Client) {
	t.Helper()
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	td, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: sID, PartitionsCount: 2, Name: "t"})
	if err != nil || td.PartitionsCount != 2 {
		t.Fatalf("create topic: %+v %v", td, err)
	}
}

func send(t *testing.T, c *client.Client, part uint32, payloads ...string) uint64 {
	t.Helper()
	var msgs []wire.Message
	for _, p := range payloads {
		m, err := client.NewMessage([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	conf, err := c.SendMessages(ctx, sID, tID, wire.PartitionByID(part), msgs)
	if err != nil || len(conf) != 1 || conf[0].PartitionID != part {
		t.Fatalf("send: %+v %v", conf, err)
	}
	return conf[0].BaseOffset
}

func poll(t *testing.T, c *client.Client, part uint32, strategy wire.PollingStrategy, consumer uint32, auto bool) []string {
	t.Helper()
	res, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(consumer)), StreamID: sID, TopicID: tID,
		Partition: wire.SomePartition(part), Strategy: strategy, Count: 100, AutoCommit: auto})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range res.Messages() {
		out = append(out, string(m.Payload)+"@"+strconv.FormatUint(m.Offset, 10))
	}
	return out
}

func TestServesAndSurvivesRestart(t *testing.T) {
	n := start(t, t.TempDir())
	c := n.dial()
	setup(t, c)
	if b := send(t, c, 0, "a", "b"); b != 0 {
		t.Fatalf("base %d", b)
	}
	if b := send(t, c, 0, "c"); b != 2 {
		t.Fatalf("base %d", b)
	}
	send(t, c, 1, "x")
	if got := strings.Join(poll(t, c, 0, wire.PollFromOffset(1), 1, false), " "); got != "b@1 c@2" {
		t.Fatalf("poll: %s", got)
	}
	if got := strings.Join(poll(t, c, 0, wire.PollFromNext(), 1, true), " "); got != "a@0 b@1 c@2" {
		t.Fatalf("next: %s", got)
	}
	if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(2)), sID, tID, wire.SomePartition(0), 1); err != nil {
		t.Fatal(err)
	}
	if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(2)), sID, tID, wire.SomePartition(0), 9); !wire.HasCode(err, wire.CodeInvalidOffset) {
		t.Fatalf("store beyond the end: %v", err)
	}

	n.restart()
	c = n.dial()
	if got := strings.Join(poll(t, c, 0, wire.PollFromFirst(), 1, false), " "); got != "a@0 b@1 c@2" {
		t.Fatalf("after restart: %s", got)
	}
	if len(poll(t, c, 0, wire.PollFromNext(), 1, false)) != 0 {
		t.Error("auto-committed offset lost")
	}
	o, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(2)), sID, tID, wire.SomePartition(0))
	if err != nil || o == nil || o.StoredOffset != 1 || o.CurrentOffset != 2 {
		t.Fatalf("offset after restart: %+v %v", o, err)
	}
	if b := send(t, c, 0, "d"); b != 3 {
		t.Fatalf("base after restart %d", b)
	}
	if _, err := c.CreateStream(ctx, "s", nil); !wire.HasCode(err, wire.CodeStreamNameAlreadyExists) {
		t.Fatalf("duplicate stream: %v", err)
	}
	if err := c.DeleteStream(ctx, wire.MustNamedID("nope")); !wire.HasCode(err, wire.CodeStreamIdNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
	if _, err := c.GetStream(ctx, wire.MustNamedID("nope")); !wire.HasCode(err, wire.CodeStreamIdNotFound) {
		t.Fatalf("get missing: %v", err)
	}
}

func TestConsumerGroups(t *testing.T) {
	n := start(t, t.TempDir())
	a, b := n.dial(), n.dial()
	setup(t, a)
	send(t, a, 0, "p0")
	send(t, a, 1, "p1")
	g, err := a.CreateConsumerGroup(ctx, sID, tID, "g")
	if err != nil {
		t.Fatal(err)
	}
	gid := wire.NumericID(g.ID)
	for _, c := range []*client.Client{a, b} {
		if err := c.JoinConsumerGroup(ctx, sID, tID, gid); err != nil {
			t.Fatal(err)
		}
	}
	as, _ := a.SyncConsumerGroup(ctx, sID, tID, gid)
	bs, _ := b.SyncConsumerGroup(ctx, sID, tID, gid)
	if len(as.Partitions) != 1 || len(bs.Partitions) != 1 || as.Partitions[0] == bs.Partitions[0] {
		t.Fatalf("assignments %v %v", as, bs)
	}
	res, err := a.PollGroup(ctx, sID, tID, gid, wire.PollFromNext(), 10, true)
	if err != nil || res.MessagesCount != 1 || res.PartitionID != as.Partitions[0] {
		t.Fatalf("group poll: %+v %v", res, err)
	}
	// b may not store offsets for a's partition.
	err = b.StoreConsumerOffset(ctx, wire.GroupConsumer(gid), sID, tID, wire.SomePartition(as.Partitions[0]), 0)
	if !wire.HasCode(err, wire.CodeConsumerGroupPartitionNotOwned) {
		t.Fatalf("store on a partition not owned: %v", err)
	}
	if err := a.LeaveConsumerGroup(ctx, sID, tID, gid); err != nil {
		t.Fatal(err)
	}
	bs, _ = b.SyncConsumerGroup(ctx, sID, tID, gid)
	if len(bs.Partitions) != 2 {
		t.Fatalf("after leave: %v", bs)
	}
	b.Close() // a disconnect leaves too
	deadline := time.Now().Add(2 * time.Second)
	for {
		d, err := a.GetConsumerGroup(ctx, sID, tID, gid)
		if err == nil && d.MembersCount == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("member kept after disconnect: %+v %v", d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBugs(t *testing.T) {
	t.Run(BugLoseAcked, func(t *testing.T) {
		n := start(t, t.TempDir(), BugLoseAcked)
		c := n.dial()
		setup(t, c)
		send(t, c, 0, "a")
		send(t, c, 0, "b")
		n.restart()
		c = n.dial()
		if got := strings.Join(poll(t, c, 0, wire.PollFromFirst(), 1, false), " "); got != "a@0" {
			t.Fatalf("after restart: %s", got)
		}
		if b := send(t, c, 0, "c"); b != 2 {
			t.Errorf("offsets reused: base %d", b)
		}
	})
	t.Run(BugReuseOffsets, func(t *testing.T) {
		n := start(t, t.TempDir(), BugReuseOffsets)
		c := n.dial()
		setup(t, c)
		send(t, c, 0, "a", "b")
		n.restart()
		c = n.dial()
		if b := send(t, c, 0, "c"); b != 1 {
			t.Fatalf("base %d, the bug hands out 1 again", b)
		}
		if got := strings.Join(poll(t, c, 0, wire.PollFromFirst(), 1, false), " "); got != "a@0 b@1 c@1" {
			t.Fatalf("log: %s", got)
		}
	})
	t.Run(BugVolatileOffsets, func(t *testing.T) {
		n := start(t, t.TempDir(), BugVolatileOffsets)
		c := n.dial()
		setup(t, c)
		send(t, c, 0, "a")
		if err := c.StoreConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(1)), sID, tID, wire.SomePartition(0), 0); err != nil {
			t.Fatal(err)
		}
		n.restart()
		c = n.dial()
		if o, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(wire.NumericID(1)), sID, tID, wire.SomePartition(0)); err != nil || o != nil {
			t.Fatalf("offset survived: %+v %v", o, err)
		}
	})
	t.Run(BugForgetDeletes, func(t *testing.T) {
		n := start(t, t.TempDir(), BugForgetDeletes)
		c := n.dial()
		if _, err := c.CreateStream(ctx, "gone", nil); err != nil {
			t.Fatal(err)
		}
		if err := c.DeleteStream(ctx, wire.MustNamedID("gone")); err != nil {
			t.Fatal(err)
		}
		n.restart()
		c = n.dial()
		if _, err := c.GetStream(ctx, wire.MustNamedID("gone")); err != nil {
			t.Fatalf("deleted stream did not come back: %v", err)
		}
	})
}

func TestCorruptLineStopsReplay(t *testing.T) {
	dir := t.TempDir()
	n := start(t, dir)
	c := n.dial()
	setup(t, c)
	send(t, c, 0, "a")
	send(t, c, 0, "b")
	send(t, c, 0, "c")
	n.stop()
	path := filepath.Join(dir, "messages.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	// Flip a byte in the second line's JSON.
	pos := len(lines[0]) + 20
	b[pos] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	n.boot()
	c = n.dial()
	if got := strings.Join(poll(t, c, 0, wire.PollFromFirst(), 1, false), " "); got != "a@0" {
		t.Fatalf("after corruption: %s", got)
	}
	if st, _ := os.Stat(path); st.Size() != int64(len(lines[0])) {
		t.Errorf("file not cut at the bad line: %d bytes, want %d", st.Size(), len(lines[0]))
	}
	// The watermark keeps acknowledged offsets from being handed out again.
	if base := send(t, c, 0, "d"); base != 3 {
		t.Errorf("base after losing the tail: %d, want 3", base)
	}
}

func TestMainFlags(t *testing.T) {
	if code := Main([]string{"--bug", "melt"}); code != 2 {
		t.Errorf("unknown bug: exit %d", code)
	}
	if code := Main([]string{"--nope"}); code != 2 {
		t.Errorf("unknown flag: exit %d", code)
	}
}

// FuzzRecover: whatever the state files hold, recovery neither panics nor
// leaves a file it cannot replay again.
func FuzzRecover(f *testing.F) {
	f.Add([]byte("00000000 {}\n"), []byte(""), []byte("garbage"))
	f.Add([]byte(`5e3c9a9c {"t":"stream","id":0,"name":"s","at":1}`+"\n"), []byte(`00000000 {"t":"batch"}`+"\n"), []byte("\n\n"))
	f.Fuzz(func(t *testing.T, meta, messages, offsets []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{"meta.log": meta, "messages.log": messages, "offsets.log": offsets, "next.log": messages} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 2; i++ {
			n := &node{cfg: Config{DataDir: dir}, streams: map[uint32]*stream{}, conns: map[*conn]bool{}}
			if err := n.recover(); err != nil {
				t.Fatalf("recover %d: %v", i, err)
			}
			n.closeFiles()
		}
	})
}
