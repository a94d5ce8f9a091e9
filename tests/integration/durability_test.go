package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func TestRestartKeepsEverything(t *testing.T) {
	s := start(t)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "keep", "t", 2, nil)
	for b := 0; b < 100; b++ {
		_, err := c.SendMessages(ctx, name("keep"), name("t"), wire.PartitionByID(uint32(b%2)), payloadMsgs(t, 0, b*5, 5, 64))
		must(t, err, "send")
	}
	must(t, c.StoreConsumerOffset(ctx, wire.SingleConsumer(id(3)), name("keep"), name("t"), wire.SomePartition(1), 77), "store offset")
	_, err := c.CreateUser(ctx, wire.CreateUser{Username: "bob", Password: "bob-pass", Status: 1})
	must(t, err, "create user")
	_, err = c.CreateConsumerGroup(ctx, name("keep"), name("t"), "g")
	must(t, err, "create group")
	_ = c.Close()

	must(t, s.Stop(30*time.Second), "graceful stop")
	s.Restart()
	c = s.Root(t)
	for p := uint32(0); p < 2; p++ {
		wantOffsets(t, poll(t, c, "keep", "t", p, wire.PollFromFirst(), 1000, wire.SingleConsumer(id(1)), false), 0, 250)
	}
	off, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(id(3)), name("keep"), name("t"), wire.SomePartition(1))
	must(t, err, "get offset")
	if off == nil || off.StoredOffset != 77 {
		t.Fatalf("offset after restart %+v", off)
	}
	_ = s.Client(t, "bob", "bob-pass")
	if _, err := c.GetConsumerGroup(ctx, name("keep"), name("t"), name("g")); err != nil {
		t.Fatalf("group after restart: %v", err)
	}
	conf, err := c.SendMessages(ctx, name("keep"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 1, 64))
	must(t, err, "send after restart")
	if conf[0].BaseOffset != 250 {
		t.Fatalf("offset after restart %d, want 250", conf[0].BaseOffset)
	}

	// --fresh starts over.
	must(t, s.Stop(30*time.Second), "stop")
	s.Restart("--fresh")
	c = s.Root(t)
	streams, err := c.GetStreams(ctx)
	must(t, err, "get streams")
	if len(streams) != 0 {
		t.Fatalf("--fresh kept %d streams", len(streams))
	}
}

// ack is one acknowledged send.
type ack struct {
	partition uint32
	base      uint64
	first     int // seq of the first message
	n         int
}

// TestKill9UnderLoad: producers send with acks to replicated and persisted
// topics while the server is killed with SIGKILL, three times. After each
// restart every acknowledged message is present exactly once, in order, at
// the offset it was acknowledged with; offsets stay dense and are never
// handed out twice; consumer offsets and metadata survive.
func TestKill9UnderLoad(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	c := s.Root(t)
	ctx := ctxT(t)
	topics := map[string]string{"rep": "replicated", "per": "persisted"}
	for tn, dur := range topics {
		createStreamTopic(t, c, "k9-"+tn, "t", 2, wire.Options{}.
			With("durability", wire.StringValue(dur)).With("consumer_offset_durability", wire.StringValue(dur)))
	}
	const batch = 20
	var mu sync.Mutex
	acked := map[string][]ack{}
	nextSeq := map[string]int{}
	type offKey struct {
		topic string
		round int
	}
	storedOffsets := map[offKey]uint64{}
	users := 0

	for round := 0; round < 3; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for tn := range topics {
			for p := uint32(0); p < 2; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cfg := s.ClientConfig("iggy", "iggy")
					cfg.Reconnect.Enabled = false
					cfg.RequestTimeout = 5 * time.Second
					pc, err := client.Dial(context.Background(), cfg)
					if err != nil {
						return
					}
					defer pc.Close()
					key := fmt.Sprintf("%s/%d", tn, p)
					for {
						select {
						case <-stop:
							return
						default:
						}
						mu.Lock()
						first := nextSeq[key]
						nextSeq[key] += batch
						mu.Unlock()
						conf, err := pc.SendMessages(context.Background(), name("k9-"+tn), name("t"), wire.PartitionByID(p),
							payloadMsgs(t, p, first, batch, 120))
						if err != nil {
							return
						}
						mu.Lock()
						acked[key] = append(acked[key], ack{partition: p, base: conf[0].BaseOffset, first: first, n: batch})
						mu.Unlock()
					}
				}()
			}
		}
		// Acknowledged offset stores and metadata changes while loaded.
		cons := wire.SingleConsumer(id(uint32(100 + round)))
		time.Sleep(300 * time.Millisecond)
		for tn := range topics {
			mu.Lock()
			a := acked[tn+"/1"]
			mu.Unlock()
			if len(a) == 0 {
				continue
			}
			o := a[len(a)-1].base
			if err := c.StoreConsumerOffset(ctx, cons, name("k9-"+tn), name("t"), wire.SomePartition(1), o); err == nil {
				storedOffsets[offKey{tn, round}] = o
			}
		}
		if _, err := c.CreateUser(ctx, wire.CreateUser{Username: fmt.Sprintf("user%d", round), Password: "pw-123456", Status: 1}); err == nil {
			users++
		}
		time.Sleep(time.Duration(400+200*round) * time.Millisecond)
		s.Kill()
		close(stop)
		wg.Wait()
		_ = c.Close()

		s.Restart()
		c = s.Root(t)
		mu.Lock()
		counts := map[string]int{}
		for k, v := range acked {
			counts[k] = len(v)
		}
		t.Logf("round %d: acknowledged batches per partition before the kill: %v", round, counts)
		verifyAcked(t, c, topics, acked, batch)
		mu.Unlock()
		for k, o := range storedOffsets {
			off, err := c.GetConsumerOffset(ctx, wire.SingleConsumer(id(uint32(100+k.round))), name("k9-"+k.topic), name("t"), wire.SomePartition(1))
			must(t, err, "get offset")
			if off == nil || off.StoredOffset != o {
				t.Fatalf("round %d: acknowledged consumer offset %+v = %d lost: %+v", round, k, o, off)
			}
		}
		got, err := c.GetUsers(ctx)
		must(t, err, "get users")
		if len(got) != users+1 {
			t.Fatalf("round %d: %d users after restart, want %d", round, len(got), users+1)
		}
	}
}

// verifyAcked checks each partition: offsets dense from 0, every message
// at most once, every acknowledged batch at its acknowledged offset, and a
// new send lands right after the last stored message.
func verifyAcked(t *testing.T, c *client.Client, topics map[string]string, acked map[string][]ack, batch int) {
	t.Helper()
	ctx := ctxT(t)
	for tn := range topics {
		for p := uint32(0); p < 2; p++ {
			key := fmt.Sprintf("%s/%d", tn, p)
			seqAt := map[uint64]uint64{}
			seen := map[uint64]bool{}
			var next uint64
			for {
				pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(id(1)), StreamID: name("k9-" + tn),
					TopicID: name("t"), Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(next), Count: 5000})
				must(t, err, "poll "+key)
				msgs := pm.Messages()
				if len(msgs) == 0 {
					break
				}
				for _, m := range msgs {
					if m.Offset != next {
						t.Fatalf("%s: offset %d where %d was expected: offsets are not dense", key, m.Offset, next)
					}
					tag, seq := seqOf(m.Payload)
					if tag != p {
						t.Fatalf("%s: offset %d holds a message of partition %d", key, m.Offset, tag)
					}
					if seen[seq] {
						t.Fatalf("%s: message seq %d stored twice (offset %d)", key, seq, m.Offset)
					}
					seen[seq] = true
					seqAt[m.Offset] = seq
					next++
				}
			}
			for _, a := range acked[key] {
				for i := 0; i < a.n; i++ {
					seq, ok := seqAt[a.base+uint64(i)]
					if !ok {
						t.Fatalf("%s: acknowledged message seq %d (offset %d) lost", key, a.first+i, a.base+uint64(i))
					}
					if seq != uint64(a.first+i) {
						t.Fatalf("%s: offset %d acknowledged for seq %d holds seq %d", key, a.base+uint64(i), a.first+i, seq)
					}
				}
			}
			probe := 1<<40 + len(acked[key])
			conf, err := c.SendMessages(ctx, name("k9-"+tn), name("t"), wire.PartitionByID(p), payloadMsgs(t, p, probe, 1, 16))
			must(t, err, "probe send")
			if conf[0].BaseOffset != next {
				t.Fatalf("%s: after restart the next offset is %d, but the partition holds %d messages", key, conf[0].BaseOffset, next)
			}
			// The probe is not a producer message; record it so the next
			// round's checks skip it.
			acked[key] = append(acked[key], ack{partition: p, base: next, first: probe, n: 1})
		}
	}
}

// TestMetadataCheckpointsAndReplay pushes the metadata group through
// several checkpoints (snapshot.bin, superblock, view state, journal
// compaction) and kills the server between them: the streams created before
// each kill are all there after the restart, and nothing else is.
func TestMetadataCheckpointsAndReplay(t *testing.T) {
	s := start(t)
	ctx := ctxT(t)
	want := map[string]bool{}
	next := 0
	for round := 0; round < 3; round++ {
		c := s.Root(t)
		// 300 metadata ops per round: more than a checkpoint interval (256).
		for i := 0; i < 150; i++ {
			n := fmt.Sprintf("s-%d", next)
			next++
			if _, err := c.CreateStream(ctx, n, nil); err != nil {
				t.Fatalf("round %d: create %s: %v", round, n, err)
			}
			want[n] = true
			if i%3 == 0 {
				must(t, c.DeleteStream(ctx, name(n)), "delete "+n)
				delete(want, n)
			} else {
				must(t, c.UpdateStream(ctx, name(n), n+"-x", nil), "rename "+n)
				delete(want, n)
				want[n+"-x"] = true
			}
		}
		_ = c.Close()
		s.Kill()
		s.Restart()
		c = s.Root(t)
		streams, err := c.GetStreams(ctx)
		must(t, err, "get streams")
		got := map[string]bool{}
		for _, st := range streams {
			got[st.Name] = true
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d streams after restart, want %d", round, len(got), len(want))
		}
		for n := range want {
			if !got[n] {
				t.Fatalf("round %d: stream %s lost", round, n)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(s.DataDir(), "metadata", "snapshot.bin")); err != nil {
		t.Fatalf("no metadata checkpoint was written: %v", err)
	}
}

// TestPausedServerResumes stops the process with SIGSTOP while a client
// waits for an answer, then resumes it: the request completes and nothing
// is lost.
func TestPausedServerResumes(t *testing.T) {
	s := start(t)
	c := s.Root(t)
	ctx := ctxT(t)
	createStreamTopic(t, c, "p", "t", 1, nil)
	must(t, s.Pause(), "SIGSTOP")
	done := make(chan error, 1)
	go func() {
		_, err := c.SendMessages(ctx, name("p"), name("t"), wire.PartitionByID(0), payloadMsgs(t, 0, 0, 5, 32))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a stopped server answered: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	must(t, s.Resume(), "SIGCONT")
	select {
	case err := <-done:
		must(t, err, "send across the pause")
	case <-time.After(20 * time.Second):
		t.Fatal("no answer after SIGCONT")
	}
	wantOffsets(t, poll(t, c, "p", "t", 0, wire.PollFromFirst(), 10, wire.SingleConsumer(id(1)), false), 0, 5)
}
