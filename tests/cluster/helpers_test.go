// Package cluster runs 3-node clusters of real iggo-server processes
// (tests/harness) and checks what the cluster promises under faults: kill -9
// of a partition's primary and of a backup while a producer sends with
// acknowledgements, a full-cluster kill -9, a node restarted with --fresh
// catching up from its peers, clients served by backups, and a replica
// plane that refuses bad peers while the cluster keeps serving. After each
// fault every acknowledged message must be present exactly once, in order,
// at its acknowledged offset on every node, and the nodes' segment files
// must be byte-identical. Topics of both durabilities (replicated and
// persisted) are covered.
package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

const (
	msgSize   = 1000 // payload bytes per message
	batchSize = 20   // messages per send
	// maxBatches bounds each producer's loop; sendGap paces it so a test
	// moves a few MB, not a few GB.
	maxBatches = 50000
	sendGap    = 15 * time.Millisecond
)

// offsetConsumer is the consumer whose offsets the workload stores.
var offsetConsumer = wire.SingleConsumer(wire.NumericID(42))

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func name(s string) wire.Identifier { return wire.MustNamedID(s) }

func startCluster(t *testing.T, opts harness.ClusterOptions) *harness.Cluster {
	t.Helper()
	c := harness.StartCluster(t, opts)
	t.Logf("cluster %s on %v", c.Options().Name, c.Addrs())
	return c
}

// topicSpec is one stream with one topic of the given durability.
type topicSpec struct {
	stream, topic string
	durability    string
	partitions    uint32
	// ids are the numeric stream and topic ids, learnt at creation.
	streamID, topicID uint32
}

func (ts topicSpec) group(p uint32) string {
	return fmt.Sprintf("%d/%d/%d", ts.streamID, ts.topicID, p)
}

// createTopics creates every spec through node 0.
func createTopics(t *testing.T, c *harness.Cluster, via int, specs []*topicSpec) {
	t.Helper()
	cl := c.Root(t, via)
	ctx := ctxT(t, time.Minute)
	for _, ts := range specs {
		st, err := cl.CreateStream(ctx, ts.stream, nil)
		must(t, err, "create stream "+ts.stream)
		opts := wire.Options{}.With("durability", wire.StringValue(ts.durability)).
			With("consumer_offset_durability", wire.StringValue(ts.durability))
		td, err := cl.CreateTopic(ctx, wire.CreateTopic{StreamID: name(ts.stream), PartitionsCount: ts.partitions, Name: ts.topic, Options: opts})
		must(t, err, "create topic "+ts.stream+"/"+ts.topic)
		ts.streamID, ts.topicID = st.ID, td.ID
	}
}

// ack is one acknowledged send.
type ack struct {
	base  uint64
	first uint64 // seq of its first message
	n     int
}

// partKey names one partition of one spec.
type partKey struct {
	spec      *topicSpec
	partition uint32
}

func (k partKey) String() string {
	return fmt.Sprintf("%s/%s/%d", k.spec.stream, k.spec.topic, k.partition)
}

// workload runs one producer per partition: batches of batchSize 1 KB
// messages whose payloads carry (partition tag, seq), sent with
// acknowledgements through a leader-aware client that knows every node.
// It records what was acknowledged; a send that failed may or may not have
// been applied (it is never resent), so its messages may appear at most
// once.
type workload struct {
	t     *testing.T
	c     *harness.Cluster
	specs []*topicSpec

	mu     sync.Mutex
	acked  map[partKey][]ack
	next   map[partKey]uint64
	failed map[partKey]int
	// offsetAcked is the last acknowledged consumer-offset store per
	// partition; offsetTried the stores attempted since then (their fate is
	// unknown when they failed).
	offsetAcked map[partKey]uint64
	offsetTried map[partKey][]uint64
	// offsetAhead counts stores refused as InvalidOffset before the
	// entry node applied the acknowledged batch.
	offsetAhead int

	// gap paces each producer (default sendGap); batch is the number of
	// messages per send (default batchSize).
	gap   time.Duration
	batch int
	stop  chan struct{}
	wg    sync.WaitGroup
}

func newWorkload(t *testing.T, c *harness.Cluster, specs []*topicSpec) *workload {
	return &workload{t: t, c: c, specs: specs, acked: map[partKey][]ack{}, next: map[partKey]uint64{}, failed: map[partKey]int{}, gap: sendGap, batch: batchSize,
		offsetAcked: map[partKey]uint64{}, offsetTried: map[partKey][]uint64{}}
}

func (w *workload) keys() []partKey {
	var out []partKey
	for _, ts := range w.specs {
		for p := uint32(0); p < ts.partitions; p++ {
			out = append(out, partKey{ts, p})
		}
	}
	return out
}

func payload(tag uint32, seq uint64) []byte {
	p := make([]byte, msgSize)
	binary.LittleEndian.PutUint32(p, tag)
	binary.LittleEndian.PutUint64(p[4:], seq)
	for i := 12; i < len(p); i++ {
		p[i] = byte(seq) + byte(i)
	}
	return p
}

func tagOf(k partKey) uint32 { return k.spec.streamID<<16 | k.partition }

// start launches the producers; connectTo rotates the first address each
// producer dials so that requests enter through every node.
func (w *workload) start() {
	w.stop = make(chan struct{})
	for i, k := range w.keys() {
		w.wg.Add(1)
		go w.produce(i, k)
	}
}

func (w *workload) produce(i int, k partKey) {
	defer w.wg.Done()
	addrs := w.c.Addrs()
	var cl *client.Client
	defer func() {
		if cl != nil {
			_ = cl.Close()
		}
	}()
	for b := 0; b < maxBatches; b++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if cl == nil {
			cfg := w.c.ClusterClientConfig("iggy", "iggy")
			// Enter through a different node per producer and per retry.
			cfg.Addresses = append(append([]string(nil), addrs[(i+b)%len(addrs):]...), addrs[:(i+b)%len(addrs)]...)
			cfg.RequestTimeout = 10 * time.Second
			cfg.DialTimeout = time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c, err := client.Dial(ctx, cfg)
			cancel()
			if err != nil {
				w.pause()
				continue
			}
			cl = c
		}
		w.mu.Lock()
		first := w.next[k]
		w.next[k] += uint64(w.batch)
		w.mu.Unlock()
		msgs := make([]wire.Message, w.batch)
		for j := range msgs {
			m, err := client.NewMessage(payload(tagOf(k), first+uint64(j)))
			if err != nil {
				panic(err)
			}
			msgs[j] = m
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conf, err := cl.SendMessages(ctx, name(k.spec.stream), name(k.spec.topic), wire.PartitionByID(k.partition), msgs)
		cancel()
		if err != nil || len(conf) != 1 || conf[0].PartitionID != k.partition {
			w.mu.Lock()
			w.failed[k]++
			w.mu.Unlock()
			if _, server := wire.CodeOf(err); !server {
				// A broken or unresponsive node (killed, paused): enter
				// through the next one.
				_ = cl.Close()
				cl = nil
			}
			w.pause()
			continue
		}
		w.mu.Lock()
		w.acked[k] = append(w.acked[k], ack{base: conf[0].BaseOffset, first: first, n: w.batch})
		storeOffset := len(w.acked[k])%5 == 0
		w.mu.Unlock()
		if storeOffset {
			// The consumer offset goes through the same faults, with the
			// topic's consumer_offset_durability.
			v := conf[0].BaseOffset
			w.mu.Lock()
			w.offsetTried[k] = append(w.offsetTried[k], v)
			w.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			var err error
			for attempt := 0; attempt < 40; attempt++ {
				err = cl.StoreConsumerOffset(ctx, offsetConsumer, name(k.spec.stream), name(k.spec.topic), wire.SomePartition(k.partition), v)
				// A node that has not applied the acknowledged batch yet
				// (a backup learns commits a heartbeat later) refuses an
				// offset beyond its own head; it catches up shortly.
				if !wire.HasCode(err, wire.CodeInvalidOffset) {
					break
				}
				w.mu.Lock()
				w.offsetAhead++
				w.mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
			cancel()
			if err == nil {
				w.mu.Lock()
				w.offsetAcked[k], w.offsetTried[k] = v, nil
				w.mu.Unlock()
			} else {
				w.t.Logf("partition %s: storing consumer offset %d failed: %v", k, v, err)
				if _, server := wire.CodeOf(err); !server {
					_ = cl.Close()
					cl = nil
				}
			}
		}
		select {
		case <-w.stop:
			return
		case <-time.After(w.gap):
		}
	}
}

func (w *workload) pause() {
	select {
	case <-w.stop:
	case <-time.After(100 * time.Millisecond):
	}
}

// halt stops the producers and waits for them.
func (w *workload) halt() {
	close(w.stop)
	w.wg.Wait()
}

// run produces for d (in the background) and then returns.
func (w *workload) runFor(d time.Duration) {
	w.start()
	time.Sleep(d)
	w.halt()
}

// ackedCount returns the number of acknowledged batches per partition.
func (w *workload) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := ""
	for _, k := range w.keys() {
		s += fmt.Sprintf(" %s: %d acked, %d failed;", k, len(w.acked[k]), w.failed[k])
	}
	return s + fmt.Sprintf(" offset stores refused as ahead of the entry node: %d", w.offsetAhead)
}

// waitAcks waits until every partition has at least n more acknowledged
// batches than before (bounded by d), proving the cluster makes progress.
func (w *workload) waitProgress(t *testing.T, n int, d time.Duration) {
	t.Helper()
	w.mu.Lock()
	base := map[partKey]int{}
	for _, k := range w.keys() {
		base[k] = len(w.acked[k])
	}
	w.mu.Unlock()
	deadline := time.Now().Add(d)
	for {
		w.mu.Lock()
		done := true
		for _, k := range w.keys() {
			if len(w.acked[k]) < base[k]+n {
				done = false
			}
		}
		w.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress: fewer than %d new acknowledged batches per partition within %v;%s", n, d, w.summary())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readAll polls partition k from node i, from offset 0, until it holds at
// least want messages (the node may still be applying commits) or d
// passes; it returns the (offset, seq, tag) of every message.
type polled struct {
	offset uint64
	tag    uint32
	seq    uint64
	sum    uint64
}

func readAll(t *testing.T, c *harness.Cluster, i int, k partKey, want uint64, d time.Duration) []polled {
	t.Helper()
	deadline := time.Now().Add(d)
	var last []polled
	var lastErr error
	for {
		got, err := readOnce(c, i, k)
		if err == nil {
			last = got
			if uint64(len(got)) >= want {
				return got
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("node %d partition %s: %d messages after %v, want at least %d (last error %v)", i, k, len(last), d, want, lastErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func readOnce(c *harness.Cluster, i int, k partKey) ([]polled, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, c.ClientConfig(i, "iggy", "iggy"))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []polled
	for round := 0; round < 10000; round++ {
		pm, err := cl.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: name(k.spec.stream),
			TopicID: name(k.spec.topic), Partition: wire.SomePartition(k.partition), Strategy: wire.PollFromOffset(uint64(len(out))), Count: 500})
		if err != nil {
			return nil, err
		}
		msgs := pm.Messages()
		if len(msgs) == 0 {
			return out, nil
		}
		for _, m := range msgs {
			if len(m.Payload) < 12 {
				return nil, fmt.Errorf("offset %d: %d-byte payload", m.Offset, len(m.Payload))
			}
			out = append(out, polled{offset: m.Offset, tag: binary.LittleEndian.Uint32(m.Payload), seq: binary.LittleEndian.Uint64(m.Payload[4:]), sum: m.Checksum})
			if m.Offset != uint64(len(out)-1) {
				return nil, fmt.Errorf("message at position %d has offset %d: offsets not dense", len(out)-1, m.Offset)
			}
		}
	}
	return nil, errors.New("partition too long for the bounded read")
}

// verify checks every node against the acknowledgements: each partition's
// offsets are dense from 0, every message appears at most once and in the
// order it was sent, every acknowledged batch sits at its acknowledged
// offset, and all nodes hold the same messages. Then it waits for the
// nodes' segment files to be byte-identical.
func (w *workload) verify(t *testing.T, phase string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.keys() {
		acks := w.acked[k]
		var want uint64
		ackedSeq := map[uint64]bool{}
		for j, a := range acks {
			want = max(want, a.base+uint64(a.n))
			if j > 0 && a.base <= acks[j-1].base {
				t.Fatalf("%s: partition %s: acknowledged base offsets go backwards: %d after %d", phase, k, a.base, acks[j-1].base)
			}
			for x := 0; x < a.n; x++ {
				ackedSeq[a.first+uint64(x)] = true
			}
		}
		// Nodes apply commits at their own pace, and a send whose
		// acknowledgement was lost may commit late: every node must reach
		// the longest node's length.
		for i := range w.c.Nodes {
			if w.c.Nodes[i].Running() {
				want = max(want, uint64(len(readAll(t, w.c, i, k, want, 60*time.Second))))
			}
		}
		var ref []polled
		for i := range w.c.Nodes {
			if !w.c.Nodes[i].Running() {
				continue
			}
			got := readAll(t, w.c, i, k, want, 60*time.Second)
			seen := map[uint64]bool{}
			var prevAcked, maxSeq uint64
			late := 0
			for j, m := range got {
				if m.tag != tagOf(k) {
					t.Fatalf("%s: node %d partition %s offset %d holds a message of tag %#x", phase, i, k, m.offset, m.tag)
				}
				if seen[m.seq] {
					t.Fatalf("%s: node %d partition %s: message seq %d stored twice (again at offset %d)", phase, i, k, m.seq, m.offset)
				}
				seen[m.seq] = true
				// Acknowledged messages keep the order they were sent in.
				// A send whose acknowledgement never came (timeout while a
				// node was paused or killed) may still be applied later,
				// after newer messages: at most once, but late.
				if ackedSeq[m.seq] {
					if prevAcked > 0 && m.seq <= prevAcked {
						t.Fatalf("%s: node %d partition %s: acknowledged seq %d at offset %d after acknowledged seq %d: out of order", phase, i, k, m.seq, m.offset, prevAcked)
					}
					prevAcked = m.seq
				} else if j > 0 && m.seq < maxSeq {
					late++
				}
				maxSeq = max(maxSeq, m.seq)
			}
			if late > 0 && i == 0 {
				t.Logf("%s: partition %s: %d unacknowledged messages were applied after newer ones", phase, k, late)
			}
			for _, a := range acks {
				for j := 0; j < a.n; j++ {
					o := a.base + uint64(j)
					if o >= uint64(len(got)) || got[o].seq != a.first+uint64(j) {
						have := "nothing"
						if o < uint64(len(got)) {
							have = fmt.Sprintf("seq %d", got[o].seq)
						}
						t.Fatalf("%s: node %d partition %s: acknowledged seq %d at offset %d is missing (found %s)", phase, i, k, a.first+uint64(j), o, have)
					}
				}
			}
			if ref == nil {
				ref = got
				continue
			}
			if len(got) != len(ref) {
				t.Fatalf("%s: partition %s: node %d holds %d messages, the first node %d", phase, k, i, len(got), len(ref))
			}
			for j := range got {
				if got[j] != ref[j] {
					t.Fatalf("%s: partition %s offset %d differs between nodes: %+v vs %+v", phase, k, j, got[j], ref[j])
				}
			}
		}
		t.Logf("%s: partition %s: %d acknowledged batches, %d failed sends, %d messages on every node", phase, k, len(acks), w.failed[k], len(ref))
		w.verifyOffset(t, phase, k)
	}
	waitSegmentsEqual(t, w.c, phase)
}

// waitSegmentsEqual waits until every node's segment files are
// byte-identical (the nodes apply and write asynchronously).
func waitSegmentsEqual(t *testing.T, c *harness.Cluster, phase string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := c.CompareSegments()
		must(t, err, "reading segment files")
		if d == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: segment files differ after 30 s: %s", phase, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nextOffsetCheck sends one more batch to every partition and checks it
// lands right after the last stored message: no offset is handed out
// twice after the faults.
func (w *workload) nextOffsetCheck(t *testing.T, via int, phase string) {
	t.Helper()
	cl := w.c.Root(t, via)
	ctx := ctxT(t, time.Minute)
	for _, k := range w.keys() {
		got := readAll(t, w.c, via, k, 0, 10*time.Second)
		w.mu.Lock()
		first := w.next[k]
		w.next[k] += uint64(w.batch)
		w.mu.Unlock()
		msgs := make([]wire.Message, w.batch)
		for j := range msgs {
			m, err := client.NewMessage(payload(tagOf(k), first+uint64(j)))
			must(t, err, "message")
			msgs[j] = m
		}
		conf, err := cl.SendMessages(ctx, name(k.spec.stream), name(k.spec.topic), wire.PartitionByID(k.partition), msgs)
		must(t, err, phase+": send after the faults")
		if conf[0].BaseOffset != uint64(len(got)) {
			t.Fatalf("%s: partition %s: next send got offset %d, want %d (right after the stored messages)", phase, k, conf[0].BaseOffset, len(got))
		}
		w.mu.Lock()
		w.acked[k] = append(w.acked[k], ack{base: conf[0].BaseOffset, first: first, n: w.batch})
		w.mu.Unlock()
	}
}

// verifyOffset checks that every running node holds the partition's last
// acknowledged consumer offset, or a store attempted after it whose
// acknowledgement was lost (waiting for backups to apply it).
func (w *workload) verifyOffset(t *testing.T, phase string, k partKey) {
	t.Helper()
	acked, hasAck := w.offsetAcked[k]
	if !hasAck && len(w.offsetTried[k]) == 0 {
		return
	}
	allowed := map[uint64]bool{}
	if hasAck {
		allowed[acked] = true
	}
	for _, v := range w.offsetTried[k] {
		allowed[v] = true
	}
	for i, n := range w.c.Nodes {
		if !n.Running() {
			continue
		}
		var got string
		for end := time.Now().Add(30 * time.Second); ; {
			cl, err := client.Dial(context.Background(), w.c.ClientConfig(i, "iggy", "iggy"))
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				off, err := cl.GetConsumerOffset(ctx, offsetConsumer, name(k.spec.stream), name(k.spec.topic), wire.SomePartition(k.partition))
				cancel()
				_ = cl.Close()
				switch {
				case err != nil:
					got = err.Error()
				case off == nil && !hasAck:
					got = "" // no store was acknowledged; none may have applied
				case off == nil:
					got = "no stored offset"
				case allowed[off.StoredOffset]:
					got = ""
				default:
					got = fmt.Sprintf("stored offset %d", off.StoredOffset)
				}
			} else {
				got = err.Error()
			}
			if got == "" {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("%s: node %d partition %s: consumer offset: %s, want the acknowledged %d (or a later attempt %v)", phase, i, k, got, acked, w.offsetTried[k])
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
