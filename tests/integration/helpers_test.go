// Package integration runs the real iggo-server binary (tests/harness) and
// drives it through the client package: every command, permissions,
// restarts, kill -9 recovery under load, consumer-group rebalancing and
// malformed input.
package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func start(t testing.TB, env ...string) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true, Env: env})
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantCode fails unless err carries Iggy code want.
func wantCode(t testing.TB, err error, want wire.Code, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want error %s", what, want)
	}
	if !wire.HasCode(err, want) {
		got, _ := wire.CodeOf(err)
		t.Fatalf("%s: error %v (code %d), want code %d (%s)", what, err, got, want, want)
	}
}

func id(n uint32) wire.Identifier { return wire.NumericID(n) }

func name(s string) wire.Identifier { return wire.MustNamedID(s) }

// payloadMsgs builds count messages whose payload encodes (tag, seq).
func payloadMsgs(t testing.TB, tag uint32, first, count, size int) []wire.Message {
	t.Helper()
	out := make([]wire.Message, count)
	for i := range out {
		p := make([]byte, max(size, 16))
		binary.LittleEndian.PutUint32(p, tag)
		binary.LittleEndian.PutUint64(p[4:], uint64(first+i))
		m, err := client.NewMessage(p)
		must(t, err, "building a message")
		out[i] = m
	}
	return out
}

func seqOf(p []byte) (tag uint32, seq uint64) {
	return binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint64(p[4:])
}

func createStreamTopic(t testing.TB, c *client.Client, stream, topic string, partitions uint32, opts wire.Options) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := c.CreateStream(ctx, stream, nil); err != nil {
		t.Fatalf("create stream %s: %v", stream, err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: name(stream), PartitionsCount: partitions, Name: topic, Options: opts}); err != nil {
		t.Fatalf("create topic %s/%s: %v", stream, topic, err)
	}
}

func poll(t testing.TB, c *client.Client, stream, topic string, partition uint32, strategy wire.PollingStrategy, count uint32, consumer wire.Consumer, auto bool) wire.PolledMessages {
	t.Helper()
	pm, err := c.PollMessages(ctxT(t), wire.PollMessages{Consumer: consumer, StreamID: name(stream), TopicID: name(topic),
		Partition: wire.SomePartition(partition), Strategy: strategy, Count: count, AutoCommit: auto})
	if err != nil {
		t.Fatalf("poll %s/%s/%d %+v: %v", stream, topic, partition, strategy, err)
	}
	return pm
}

// offsets returns the offsets of the polled messages.
func offsets(pm wire.PolledMessages) []uint64 {
	var out []uint64
	for _, m := range pm.Messages() {
		out = append(out, m.Offset)
	}
	return out
}

func wantOffsets(t testing.TB, pm wire.PolledMessages, first uint64, n int) {
	t.Helper()
	got := offsets(pm)
	if len(got) != n {
		t.Fatalf("polled %d messages (offsets %v), want %d from %d", len(got), trim(got), n, first)
	}
	for i, o := range got {
		if o != first+uint64(i) {
			t.Fatalf("message %d has offset %d, want %d (offsets %v)", i, o, first+uint64(i), trim(got))
		}
	}
}

func trim(v []uint64) string {
	if len(v) > 12 {
		return fmt.Sprintf("%v…%v (%d)", v[:6], v[len(v)-3:], len(v))
	}
	return fmt.Sprint(v)
}
