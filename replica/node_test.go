package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

func startNode(t *testing.T, dir string) *Node {
	t.Helper()
	cfg := config.Default()
	cfg.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	n, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func dial(t *testing.T, n *Node) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{n.Addr()}
	cfg.Username, cfg.Password = DefaultRootUsername, DefaultRootPassword
	cfg.HeartbeatInterval = 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestNodeConcurrentClients runs producers and consumers on several
// connections at once in one process (so the race detector sees the
// connection goroutines, the shard loops and the metadata view together),
// then restarts the node on the same directory and checks the data.
func TestNodeConcurrentClients(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := dial(t, n)
	if _, err := admin.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 4, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	const producers, batches, perBatch = 4, 30, 25
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for p := 0; p < producers; p++ {
		c := dial(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				msgs := make([]wire.Message, perBatch)
				for i := range msgs {
					pl := make([]byte, 64)
					binary.LittleEndian.PutUint64(pl, uint64(b*perBatch+i))
					msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(p<<32 | b*perBatch + i + 1)}, Payload: pl}
				}
				if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(uint32(p)), msgs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for r := 0; r < 2; r++ {
		c := dial(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := c.GetStream(ctx, wire.NumericID(0)); err != nil {
					errs <- err
					return
				}
				if _, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(uint32(r))),
					StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Partition: wire.SomePartition(uint32(i % 4)),
					Strategy: wire.PollFromNext(), Count: 10, AutoCommit: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(c *client.Client) {
		for p := uint32(0); p < producers; p++ {
			pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(9)),
				StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Partition: wire.SomePartition(p),
				Strategy: wire.PollFromFirst(), Count: 10000})
			if err != nil {
				t.Fatal(err)
			}
			msgs := pm.Messages()
			if len(msgs) != batches*perBatch {
				t.Fatalf("partition %d holds %d messages, want %d", p, len(msgs), batches*perBatch)
			}
			for i, m := range msgs {
				if m.Offset != uint64(i) || binary.LittleEndian.Uint64(m.Payload) != uint64(i) {
					t.Fatalf("partition %d message %d: offset %d payload %d", p, i, m.Offset, binary.LittleEndian.Uint64(m.Payload))
				}
			}
		}
	}
	check(admin)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, dir)
	check(dial(t, n2))
	st, err := dial(t, n2).GetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.MessagesCount != producers*batches*perBatch {
		t.Fatalf("stats after restart: %d messages", st.MessagesCount)
	}
}

// TestNodeCheckpointAfterRegister logs in often enough that metadata
// checkpoints fall on session registrations (ops the metadata state
// machine does not interpret); the checkpoints must name those ops and a
// restart must restore them.
func TestNodeCheckpointAfterRegister(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	cfg.Metadata.JournalSlots = 4 * max(64, cfg.Metadata.PrepareQueueDepth)
	start := func() *Node {
		n, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	n := start()
	for i := 0; i < 2*cfg.Metadata.JournalSlots/4+5; i++ {
		c := dial(t, n)
		_ = c.Close()
	}
	if op := n.Store().View().LastApplied(); op < uint64(cfg.Metadata.JournalSlots/2) {
		t.Fatalf("metadata at op %d after the logins", op)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dial(t, n2).Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestSmallFrameLimitServes: a node whose frame limit (48 KiB) is below the default
// state-transfer chunk (256 KiB) boots and serves sends and polls; the
// chunk shrinks to fit the frame instead of the consensus config refusing.
func TestSmallFrameLimitServes(t *testing.T) {
	n := startNodeWith(t, func(c *config.Config) { c.MessageBus.MaxMessageSize = 48 * config.KiB })
	if got := n.baseVSRConfig(0).TransferChunkBytes; got != 48<<10-256 {
		t.Fatalf("transfer chunk %d, want %d", got, 48<<10-256)
	}
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	setupStreamTopic(ctx, t, c, 1)
	sendOne(ctx, t, c, 0, "fits in 48 KiB")
	pm, err := c.PollMessages(ctx, waitPoll(0, wire.PollFromOffset(0), 0))
	if err != nil || len(pm.Messages()) != 1 || string(pm.Messages()[0].Payload) != "fits in 48 KiB" {
		t.Fatalf("poll: %+v %v", pm, err)
	}
}

// TestFrameFloorIsConsensusFloor: the smallest message_bus.max_message_size
// the config accepts is the smallest frame the consensus core accepts, so a
// too-small value is refused naming the key, never by vsr at boot.
func TestFrameFloorIsConsensusFloor(t *testing.T) {
	if want := 4*vsr.HeaderSize + vsr.HeaderSize*vsr.PipelineMax; config.MessageSizeFloor != want {
		t.Fatalf("config.MessageSizeFloor %d, vsr floor %d", config.MessageSizeFloor, want)
	}
}

// TestPasswordChangeIsThrottledLikeLogin: wrong current passwords in a
// password change count against the login throttle, so once the address
// has spent its burst even the right current password is refused and the
// password stays as it was.
func TestPasswordChangeIsThrottledLikeLogin(t *testing.T) {
	n := startNodeWith(t, func(c *config.Config) {
		c.Login.Throttle.AddressBurst = 2
		c.Login.Throttle.AddressInterval = config.D(time.Hour)
		c.Login.Throttle.DelayMax = config.D(50 * time.Millisecond)
	})
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := wire.NumericID(0)
	for i := range 3 {
		if err := c.ChangePassword(ctx, root, "wrong", "newsecret"); !wire.HasCode(err, wire.CodeInvalidCredentials) {
			t.Fatalf("wrong current password %d: %v, want InvalidCredentials", i, err)
		}
	}
	if err := c.ChangePassword(ctx, root, DefaultRootPassword, "newsecret"); !wire.HasCode(err, wire.CodeInvalidCredentials) {
		t.Fatalf("right current password after the burst: %v, want InvalidCredentials (throttled)", err)
	}
	if u := n.store.View().UserByName(DefaultRootUsername); u == nil || !metadata.VerifyPassword(u.PasswordHash, DefaultRootPassword) {
		t.Fatal("root's password changed while throttled")
	}
}

// TestPollAfterPurgeSeesNothing: a poll that follows an acknowledged purge
// on the same connection never sees the purged messages, nor does a topic
// get count them, although the
// partitions apply the purge as their own operation after the metadata
// commit; a send after the purge survives it.
func TestPollAfterPurgeSeesNothing(t *testing.T) {
	n := startNodeWith(t, nil)
	c := dial(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	setupStreamTopic(ctx, t, c, 2)
	for round := range 20 {
		for p := range uint32(2) {
			sendOne(ctx, t, c, p, fmt.Sprintf("before purge %d", round))
		}
		if err := c.PurgeTopic(ctx, wire.NumericID(0), wire.NumericID(0)); err != nil {
			t.Fatal(err)
		}
		td, err := c.GetTopic(ctx, wire.NumericID(0), wire.NumericID(0))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range td.Partitions {
			if p.MessagesCount != 0 || p.SizeBytes != 0 {
				t.Fatalf("round %d partition %d: topic get right after the purge: %+v", round, p.ID, p)
			}
		}
		for p := range uint32(2) {
			pm, err := c.PollMessages(ctx, waitPoll(p, wire.PollFromOffset(0), 0))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(pm.Messages()); got != 0 {
				t.Fatalf("round %d partition %d: %d messages right after the purge", round, p, got)
			}
		}
	}
	sendOne(ctx, t, c, 0, "after purge")
	eventually(t, 30*time.Second, "the send after the purge", func() error {
		pm, err := c.PollMessages(ctx, waitPoll(0, wire.PollFromOffset(0), 0))
		if err != nil {
			return err
		}
		if len(pm.Messages()) != 1 || string(pm.Messages()[0].Payload) != "after purge" {
			return fmt.Errorf("%d messages", len(pm.Messages()))
		}
		return nil
	})
}

// TestHTTPConnectionsCountAgainstConnectionsMax: open HTTP connections
// hold message_bus.connections_max slots like binary ones, so sockets
// opened on the HTTP port cannot take the node past its descriptor budget;
// closing them gives the slots back.
func TestHTTPConnectionsCountAgainstConnectionsMax(t *testing.T) {
	limit := 2
	n := startNodeWith(t, func(c *config.Config) {
		c.MessageBus.ConnectionsMax = &limit
		c.HTTP.Enabled = true
		c.HTTP.Address = "127.0.0.1:0"
	})
	var held []net.Conn
	for range limit {
		hc, err := net.Dial("tcp", n.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, hc)
		defer hc.Close()
	}
	eventually(t, 30*time.Second, "HTTP connections admitted", func() error {
		if total, per, _ := n.admission.Counts(); total != limit || per["http"] != limit {
			return fmt.Errorf("admitted %d (%v)", total, per)
		}
		return nil
	})
	bc, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bc.Close()
	_ = bc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if k, err := bc.Read(make([]byte, 1)); k != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("binary connection past the cap: read %d %v, want it closed", k, err)
	}
	for _, hc := range held {
		hc.Close()
	}
	eventually(t, 30*time.Second, "slots given back", func() error {
		if total, _, _ := n.admission.Counts(); total != 0 {
			return fmt.Errorf("%d still admitted", total)
		}
		return nil
	})
	dial(t, n) // a binary client gets in again
}
