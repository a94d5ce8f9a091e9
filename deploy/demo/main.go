// Command iggo-demo is the one-shot check shipped in the iggo image: it
// connects to a running server or cluster through package client, makes
// sure a stream and a topic exist (creating them only when missing, so it
// can run any number of times), produces a run of messages, reads them
// back and verifies them. It prints each step; the exit code says whether
// everything checked out.
//
// Every message of a run is tied to it: the id is (run, seq) and the
// payload is "iggo-demo run=<16 hex> seq=<8 digits> " followed by filler
// derived from (run, seq) up to --payload-size bytes. The run is spread over
// the topic's partitions batch by batch (batch b goes to partition
// b mod partitions), and the verification polls every partition from the
// base offset its first batch was confirmed at, then requires, for each
// partition, exactly the messages sent there, in send order, each at the
// offset its batch confirmation implies, with the exact id and payload.
// Messages of other runs met on the way are skipped and counted.
//
// Exit codes: 0 verified, 1 the data did not check out, 2 bad flags,
// 3 the servers could not be reached or refused a step.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

const (
	exitOK       = 0
	exitMismatch = 1
	exitUsage    = 2
	exitServer   = 3
)

// options is everything a run is told; flags default to IGGO_DEMO_*
// variables (the image has no shell to build a command line with).
type options struct {
	addresses   []string
	transport   string
	username    string
	password    string
	stream      string
	topic       string
	partitions  uint32
	messages    int
	batch       int
	payloadSize int
	wait        time.Duration
	timeout     time.Duration
	visibleWait time.Duration
	requestTime time.Duration
	// tlsCAFile, when set, connects with TLS trusting that CA.
	tlsCAFile string
}

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintf(stderr, "iggo-demo: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.wait+o.timeout)
	defer cancel()
	d := &demo{o: o, out: stdout}
	if err := d.run(ctx); err != nil {
		fmt.Fprintf(stderr, "iggo-demo: FAILED: %v\n", err)
		var m *mismatchError
		if errors.As(err, &m) {
			return exitMismatch
		}
		return exitServer
	}
	fmt.Fprintln(stdout, "iggo-demo: OK")
	return exitOK
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("iggo-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addrs := fs.String("addresses", env("IGGO_DEMO_ADDRESSES", "127.0.0.1:8090"),
		"comma-separated server addresses, tried in order ($IGGO_DEMO_ADDRESSES)")
	transport := fs.String("transport", env("IGGO_DEMO_TRANSPORT", "tcp"), "tcp, ws or quic; the addresses are that transport's ($IGGO_DEMO_TRANSPORT)")
	user := fs.String("username", env("IGGY_USERNAME", "iggy"), "user to log in as ($IGGY_USERNAME)")
	pass := fs.String("password", env("IGGY_PASSWORD", "iggy"), "password ($IGGY_PASSWORD)")
	stream := fs.String("stream", env("IGGO_DEMO_STREAM", "demo"), "stream name, created if missing ($IGGO_DEMO_STREAM)")
	topic := fs.String("topic", env("IGGO_DEMO_TOPIC", "events"), "topic name, created if missing ($IGGO_DEMO_TOPIC)")
	caFile := fs.String("tls-ca-file", env("IGGO_DEMO_TLS_CA_FILE", ""), "connect with TLS, trusting the CA in this PEM file ($IGGO_DEMO_TLS_CA_FILE)")
	var o options
	var partitions, messages, batch, payload int
	var wait, timeout, visibleWait, requestTime time.Duration
	intFlag := func(p *int, name, envName string, def int, usage string) error {
		v, err := strconv.Atoi(env(envName, strconv.Itoa(def)))
		if err != nil {
			return fmt.Errorf("$%s: %v", envName, err)
		}
		fs.IntVar(p, name, v, usage+" ($"+envName+")")
		return nil
	}
	durFlag := func(p *time.Duration, name, envName string, def time.Duration, usage string) error {
		v, err := time.ParseDuration(env(envName, def.String()))
		if err != nil {
			return fmt.Errorf("$%s: %v", envName, err)
		}
		fs.DurationVar(p, name, v, usage+" ($"+envName+")")
		return nil
	}
	for _, err := range []error{
		intFlag(&partitions, "partitions", "IGGO_DEMO_PARTITIONS", 3, "partitions of the topic when it is created"),
		intFlag(&messages, "messages", "IGGO_DEMO_MESSAGES", 1000, "messages to produce and read back"),
		intFlag(&batch, "batch", "IGGO_DEMO_BATCH", 100, "messages per send"),
		intFlag(&payload, "payload-size", "IGGO_DEMO_PAYLOAD_SIZE", 128, "payload bytes per message (at least 48)"),
		durFlag(&wait, "wait", "IGGO_DEMO_WAIT", 90*time.Second, "how long to keep trying to connect, log in and set up"),
		durFlag(&timeout, "timeout", "IGGO_DEMO_TIMEOUT", 2*time.Minute, "time allowed for producing and verifying"),
		durFlag(&visibleWait, "visible-wait", "IGGO_DEMO_VISIBLE_WAIT", 10*time.Second,
			"how long an acknowledged write may take to become readable on the connected node"),
		durFlag(&requestTime, "request-timeout", "IGGO_DEMO_REQUEST_TIMEOUT", time.Minute,
			"time one request may take, replays while a partition elects a new primary included"),
	} {
		if err != nil {
			return o, err
		}
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	o.tlsCAFile = *caFile
	for _, a := range strings.Split(*addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.addresses = append(o.addresses, a)
		}
	}
	switch {
	case len(o.addresses) == 0:
		return o, errors.New("--addresses is empty")
	case !slices.Contains(client.Transports(), *transport):
		return o, fmt.Errorf("--transport must be one of %v, got %q", client.Transports(), *transport)
	case partitions < 1 || partitions > 1000:
		return o, fmt.Errorf("--partitions must be 1..1000, got %d", partitions)
	case messages < 1 || messages > 1_000_000:
		return o, fmt.Errorf("--messages must be 1..1000000, got %d", messages)
	case batch < 1 || batch > 10_000:
		return o, fmt.Errorf("--batch must be 1..10000, got %d", batch)
	case payload < minPayload || payload > 1<<20:
		return o, fmt.Errorf("--payload-size must be %d..%d, got %d", minPayload, 1<<20, payload)
	case wait <= 0 || timeout <= 0 || visibleWait <= 0 || requestTime <= 0:
		return o, errors.New("--wait, --timeout, --visible-wait and --request-timeout must be positive")
	}
	o.username, o.password, o.transport = *user, *pass, *transport
	o.stream, o.topic = *stream, *topic
	o.partitions, o.messages, o.batch, o.payloadSize = uint32(partitions), messages, batch, payload
	o.wait, o.timeout, o.visibleWait, o.requestTime = wait, timeout, visibleWait, requestTime
	return o, nil
}

// mismatchError is a verification failure: the servers answered, but not
// with what was produced.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string { return e.msg }

func mismatchf(format string, args ...any) error {
	return &mismatchError{msg: fmt.Sprintf(format, args...)}
}

type demo struct {
	o     options
	out   io.Writer
	c     *client.Client
	runID uint64
	// partitions is the topic's actual partition count (it may predate
	// this run and differ from --partitions).
	partitions uint32
}

func (d *demo) printf(format string, args ...any) {
	fmt.Fprintf(d.out, "iggo-demo: "+format+"\n", args...)
}

func (d *demo) run(ctx context.Context) error {
	var rb [8]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return err
	}
	d.runID = binary.LittleEndian.Uint64(rb[:]) | 1 // never 0
	d.printf("run %016x: %d messages of %d bytes in batches of %d to %s/%s via %s",
		d.runID, d.o.messages, d.o.payloadSize, d.o.batch, d.o.stream, d.o.topic, strings.Join(d.o.addresses, ","))

	setupCtx, cancel := context.WithTimeout(ctx, d.o.wait)
	err := d.setup(setupCtx)
	cancel()
	if err != nil {
		return err
	}
	defer d.c.Close()

	workCtx, cancel := context.WithTimeout(ctx, d.o.timeout)
	defer cancel()
	start := time.Now()
	sent, err := d.produce(workCtx)
	if err != nil {
		return err
	}
	d.printf("produced %d messages in %d batches in %v", d.o.messages, (d.o.messages+d.o.batch-1)/d.o.batch, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := d.verify(workCtx, sent); err != nil {
		return err
	}
	d.printf("consumed %d messages back in %v: count, order, offsets, ids and payloads match", d.o.messages, time.Since(start).Round(time.Millisecond))
	return nil
}

// setup connects, logs in and makes sure the stream and topic exist,
// starting over after any failure until ctx ends: the servers may still be
// booting or electing a leader.
func (d *demo) setup(ctx context.Context) error {
	attempt := 0
	for {
		attempt++
		err := d.trySetup(ctx)
		if err == nil {
			return nil
		}
		if d.c != nil {
			_ = d.c.Close()
			d.c = nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("setup did not succeed within --wait (%v, %d attempts); last error: %w", d.o.wait, attempt, err)
		}
		d.printf("setup attempt %d: %v (retrying)", attempt, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("setup did not succeed within --wait (%v, %d attempts); last error: %w", d.o.wait, attempt, err)
		case <-time.After(time.Second):
		}
	}
}

func (d *demo) trySetup(ctx context.Context) error {
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Transport = d.o.addresses, d.o.transport
	cfg.Username, cfg.Password = d.o.username, d.o.password
	cfg.SDKName = "iggo-demo"
	cfg.RequestTimeout = d.o.requestTime
	if d.o.tlsCAFile != "" {
		tc, err := client.TLSOptions{CAFile: d.o.tlsCAFile}.Config()
		if err != nil {
			return err
		}
		cfg.TLS = tc
	}
	c, err := client.Dial(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect and log in: %w", err)
	}
	d.c = c
	md, err := c.GetClusterMetadata(ctx)
	if err != nil {
		return fmt.Errorf("read cluster metadata: %w", err)
	}
	d.printf("connected to %s; cluster %q: %s", c.Addr(), md.Name, describeNodes(md.Nodes))

	sid, tid := wire.MustNamedID(d.o.stream), wire.MustNamedID(d.o.topic)
	if _, err := c.GetStream(ctx, sid); err == nil {
		d.printf("stream %q exists", d.o.stream)
	} else if !wire.IsNotFound(err) {
		return fmt.Errorf("get stream %q: %w", d.o.stream, err)
	} else if _, err := c.CreateStream(ctx, d.o.stream, nil); err == nil {
		d.printf("stream %q created", d.o.stream)
	} else if wire.IsAlreadyExists(err) {
		d.printf("stream %q exists (created concurrently)", d.o.stream)
	} else {
		return fmt.Errorf("create stream %q: %w", d.o.stream, err)
	}

	td, err := c.GetTopic(ctx, sid, tid)
	switch {
	case err == nil:
		d.printf("topic %q exists with %d partitions", d.o.topic, len(td.Partitions))
	case !wire.IsNotFound(err):
		return fmt.Errorf("get topic %q: %w", d.o.topic, err)
	default:
		td, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: sid, PartitionsCount: d.o.partitions, Name: d.o.topic})
		switch {
		case err == nil:
			d.printf("topic %q created with %d partitions", d.o.topic, len(td.Partitions))
		case wire.IsAlreadyExists(err):
			if td, err = c.GetTopic(ctx, sid, tid); err != nil {
				return fmt.Errorf("get topic %q: %w", d.o.topic, err)
			}
			d.printf("topic %q exists with %d partitions (created concurrently)", d.o.topic, len(td.Partitions))
		default:
			return fmt.Errorf("create topic %q: %w", d.o.topic, err)
		}
	}
	// The create was acknowledged, but the node this client is connected
	// to may apply it a moment later than the one that led it.
	waitStart := time.Now()
	for {
		td, err = c.GetTopic(ctx, sid, tid)
		if err == nil {
			break
		}
		if !wire.IsNotFound(err) || time.Since(waitStart) > d.o.visibleWait {
			return fmt.Errorf("topic %q not readable on %s: %w", d.o.topic, c.Addr(), err)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	if waited := time.Since(waitStart); waited > 50*time.Millisecond {
		d.printf("topic %q readable on %s after %v", d.o.topic, c.Addr(), waited.Round(time.Millisecond))
	}
	if len(td.Partitions) == 0 {
		return fmt.Errorf("topic %q has no partitions", d.o.topic)
	}
	d.partitions = uint32(len(td.Partitions))
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func describeNodes(nodes []wire.ClusterNode) string {
	parts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		role := "follower"
		if n.Role == wire.RoleLeader {
			role = "leader"
		}
		status := fmt.Sprintf("status %d", n.Status)
		switch n.Status {
		case wire.NodeHealthy:
			status = "healthy"
		case wire.NodeStarting:
			status = "starting"
		case wire.NodeStopping:
			status = "stopping"
		case wire.NodeUnreachable:
			status = "unreachable"
		case wire.NodeMaintenance:
			status = "maintenance"
		}
		parts = append(parts, fmt.Sprintf("%s %s:%d %s %s", n.Name, n.IP, n.TCPPort, role, status))
	}
	return fmt.Sprintf("%d node(s) [%s]", len(nodes), strings.Join(parts, "; "))
}

// sentBatch is one confirmed send: seqs first..first+count-1 at offsets
// base..base+count-1 of partition.
type sentBatch struct {
	partition uint32
	first     int
	count     int
	base      uint64
}

func (d *demo) produce(ctx context.Context) ([]sentBatch, error) {
	sid, tid := wire.MustNamedID(d.o.stream), wire.MustNamedID(d.o.topic)
	var sent []sentBatch
	for b, first := 0, 0; first < d.o.messages; b, first = b+1, first+d.o.batch {
		count := min(d.o.batch, d.o.messages-first)
		p := uint32(b) % d.partitions
		msgs := make([]wire.Message, count)
		for i := range msgs {
			seq := first + i
			m, err := client.NewMessage(payloadFor(d.runID, seq, d.o.payloadSize), client.WithID(idFor(d.runID, seq)))
			if err != nil {
				return nil, err
			}
			msgs[i] = m
		}
		conf, err := d.c.SendMessages(ctx, sid, tid, wire.PartitionByID(p), msgs)
		if err != nil {
			return nil, fmt.Errorf("send batch %d (%d messages) to partition %d: %w", b, count, p, err)
		}
		if len(conf) != 1 || conf[0].PartitionID != p {
			return nil, mismatchf("send batch %d to partition %d: confirmation %+v names another partition", b, p, conf)
		}
		sent = append(sent, sentBatch{partition: p, first: first, count: count, base: conf[0].BaseOffset})
	}
	return sent, nil
}

// expected is one message the verification must find.
type expected struct {
	seq    int
	offset uint64
}

func (d *demo) verify(ctx context.Context, sent []sentBatch) error {
	tid := wire.MustNamedID(d.o.topic)
	per := map[uint32][]expected{}
	for _, b := range sent {
		for i := 0; i < b.count; i++ {
			per[b.partition] = append(per[b.partition], expected{seq: b.first + i, offset: b.base + uint64(i)})
		}
	}
	consumer := wire.SingleConsumer(wire.MustNamedID("iggo-demo"))
	total := 0
	for p := uint32(0); p < d.partitions; p++ {
		want := per[p]
		if len(want) == 0 {
			continue
		}
		next, foreign := 0, 0
		offset := want[0].offset
		var waited time.Duration // longest wait for acknowledged messages to become readable
		var emptySince time.Time
		// Each non-empty poll advances offset, so their number is bounded
		// by the partition's messages from want[0] on; the cap guards
		// against a server that keeps answering the same offset. Empty
		// polls are bounded by --visible-wait.
		for polls := 0; next < len(want); {
			if polls > 2*len(want)+16 {
				return mismatchf("partition %d: gave up after %d polls with %d of %d messages found", p, polls, next, len(want))
			}
			pm, err := d.c.PollMessages(ctx, wire.PollMessages{Consumer: consumer, StreamID: wire.MustNamedID(d.o.stream), TopicID: tid,
				Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(offset), Count: uint32(min(d.o.batch, len(want)-next))})
			if err != nil {
				return fmt.Errorf("poll partition %d from offset %d: %w", p, offset, err)
			}
			got := pm.Messages()
			if len(got) == 0 {
				// Acknowledged means committed by a quorum; the connected
				// node may apply the commit a moment later.
				if emptySince.IsZero() {
					emptySince = time.Now()
				}
				if w := time.Since(emptySince); w > d.o.visibleWait {
					return mismatchf("partition %d: nothing at offset %d for %v (current offset %d); %d of %d messages of this run missing",
						p, offset, w.Round(time.Millisecond), pm.CurrentOffset, len(want)-next, len(want))
				}
				if err := sleep(ctx, 50*time.Millisecond); err != nil {
					return err
				}
				continue
			}
			if !emptySince.IsZero() {
				waited = max(waited, time.Since(emptySince))
				emptySince = time.Time{}
			}
			polls++
			for _, m := range got {
				if m.Offset < offset {
					return mismatchf("partition %d: asked from offset %d, got offset %d", p, offset, m.Offset)
				}
				offset = m.Offset + 1
				run, seq, ok := parsePayload(m.Payload)
				if !ok || run != d.runID {
					foreign++
					continue
				}
				if next >= len(want) {
					return mismatchf("partition %d: seq %d at offset %d after all %d expected messages", p, seq, m.Offset, len(want))
				}
				w := want[next]
				if seq != w.seq {
					return mismatchf("partition %d: offset %d holds seq %d, want seq %d (order or loss)", p, m.Offset, seq, w.seq)
				}
				if m.Offset != w.offset {
					return mismatchf("partition %d: seq %d is at offset %d, its batch confirmation implies %d", p, seq, m.Offset, w.offset)
				}
				if m.ID != idFor(d.runID, seq) {
					return mismatchf("partition %d: seq %d has id %v, want %v", p, seq, m.ID, idFor(d.runID, seq))
				}
				if string(m.Payload) != string(payloadFor(d.runID, seq, d.o.payloadSize)) {
					return mismatchf("partition %d: seq %d payload differs from what was sent", p, seq)
				}
				next++
			}
		}
		extra := ""
		if foreign > 0 {
			extra = fmt.Sprintf(" (%d messages of other runs skipped)", foreign)
		}
		if waited > 0 {
			extra += fmt.Sprintf(" (waited up to %v for acknowledged messages to become readable on %s)", waited.Round(time.Millisecond), d.c.Addr())
		}
		d.printf("partition %d: %d messages at offsets %d..%d verified%s", p, len(want), want[0].offset, want[len(want)-1].offset, extra)
		total += len(want)
	}
	if total != d.o.messages {
		return mismatchf("verified %d messages, produced %d", total, d.o.messages)
	}
	return nil
}

// minPayload holds the fixed prefix "iggo-demo run=<16> seq=<8> ".
const minPayload = 48

const payloadPrefix = "iggo-demo run="

// payloadFor is the exact payload of message seq of run: the prefix, then
// filler bytes from a xorshift sequence seeded by (run, seq), printable so
// a poll from the CLI shows something readable.
func payloadFor(run uint64, seq, size int) []byte {
	p := make([]byte, 0, size)
	p = fmt.Appendf(p, "%s%016x seq=%08d ", payloadPrefix, run, seq)
	x := run ^ uint64(seq)*0x9e3779b97f4a7c15 | 1
	for len(p) < size {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p = append(p, 'a'+byte(x%26))
	}
	return p[:size]
}

// parsePayload reads run and seq back from a payload made by payloadFor.
func parsePayload(p []byte) (run uint64, seq int, ok bool) {
	s := string(p)
	if !strings.HasPrefix(s, payloadPrefix) || len(s) < len(payloadPrefix)+16+5+8 {
		return 0, 0, false
	}
	s = s[len(payloadPrefix):]
	run, err := strconv.ParseUint(s[:16], 16, 64)
	if err != nil || s[16:21] != " seq=" {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[21:29])
	if err != nil {
		return 0, 0, false
	}
	return run, n, true
}

// idFor is the message id of seq in run.
func idFor(run uint64, seq int) wire.Uint128 { return wire.Uint128{Hi: run, Lo: uint64(seq)} }
