package abuse

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/ratelog"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// guardRawRequest sends body as it is under code, whatever it holds.
type guardRawRequest struct {
	code wire.CommandCode
	body []byte
}

func (r *guardRawRequest) Code() wire.CommandCode { return r.code }
func (r *guardRawRequest) AppendBody(dst []byte) ([]byte, error) {
	return append(dst, r.body...), nil
}
func (r *guardRawRequest) DecodeBody(b []byte) error { r.body = b; return nil }

// guardBatch encodes one message the way a producer would, with any payload
// and user-headers lengths (even ones a producer SDK refuses): checksums
// are valid, so only the limits can refuse it.
func guardBatch(t testing.TB, payload, headers []byte) wire.BatchView {
	t.Helper()
	b := make([]byte, wire.BatchHeaderSize+wire.FrameHeaderSize+len(payload)+len(headers))
	f := b[wire.BatchHeaderSize:]
	binary.LittleEndian.PutUint32(f[32:], uint32(len(headers)))
	binary.LittleEndian.PutUint32(f[36:], uint32(len(payload)))
	copy(f[wire.FrameHeaderSize:], payload)
	copy(f[wire.FrameHeaderSize+len(payload):], headers)
	binary.LittleEndian.PutUint64(f, wire.Frame(f).ComputeChecksum())
	h := wire.BatchHeader{BatchLength: uint64(len(b)), MessageCount: 1}
	h.Put(b)
	v, err := wire.ParseBatch(b)
	guardMust(t, err, "parse the crafted batch")
	h.BatchChecksum = v.ComputeChecksum()
	h.Put(b)
	return v
}

// guardHeaders is a valid user-headers block of exactly n bytes (n >= 12):
// string entries of up to 255-byte keys and values.
func guardHeaders(t testing.TB, n int) []byte {
	t.Helper()
	var out []byte
	field := func(l int, c byte) {
		out = append(out, 2) // string
		out = binary.LittleEndian.AppendUint32(out, uint32(l))
		out = append(out, bytes.Repeat([]byte{c}, l)...)
	}
	for left := n; left > 0; left = n - len(out) {
		total := min(left, 520) // 10 bytes of kinds and lengths, 2 x 255
		if rest := left - total; rest > 0 && rest < 12 {
			total = left - 12
		}
		if total < 12 {
			t.Fatalf("cannot make a headers block of %d bytes", n)
		}
		kl := min(255, total-11)
		field(kl, 'k')
		field(total-10-kl, 'v')
	}
	return out
}

// TestGuardMessageLimits: sends over Iggy 0.9's limits (payload
// 1..64,000,000 bytes, user headers at most 100,000 bytes) are refused
// with Iggy's codes and store nothing; malformed poll and offset bodies
// are refused (InvalidCommand) instead of answered as empty polls; each
// limit is logged once with the client's address; other clients and the
// stored messages are untouched.
func TestGuardMessageLimits(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	cl := guardDial(t, s.Addr, "iggy", "iggy")
	ctx := guardCtx(t, 120*time.Second)
	stream, topic := wire.MustNamedID("limits"), wire.MustNamedID("t")
	_, err := cl.CreateStream(ctx, "limits", nil)
	guardMust(t, err, "create stream")
	_, err = cl.CreateTopic(ctx, wire.CreateTopic{StreamID: stream, PartitionsCount: 1, Name: "t"})
	guardMust(t, err, "create topic")
	send := func(v wire.BatchView) error {
		_, err := cl.Do(ctx, &wire.SendMessages{StreamID: stream, TopicID: topic, Partitioning: wire.PartitionByID(0), Batch: v})
		return err
	}

	// At the limits: accepted.
	guardMust(t, send(guardBatch(t, []byte("x"), guardHeaders(t, wire.MaxUserHeadersSize))), "send with 100,000 bytes of user headers")
	big := bytes.Repeat([]byte{7}, wire.MaxPayloadSize)
	guardMust(t, send(guardBatch(t, big, nil)), "send a 64,000,000-byte payload")
	// Over them: refused, three times each (one log line per limit).
	for range 3 {
		guardWantCode(t, send(guardBatch(t, nil, nil)), wire.CodeInvalidMessagePayloadLength, "empty payload")
		guardWantCode(t, send(guardBatch(t, append(big, 8), nil)), wire.CodeTooBigMessagePayload, "payload of 64,000,001 bytes")
		guardWantCode(t, send(guardBatch(t, []byte("x"), guardHeaders(t, wire.MaxUserHeadersSize+1))), wire.CodeTooBigUserHeaders, "user headers of 100,001 bytes")
	}
	big = nil

	// Malformed poll and offset bodies.
	good, err := (&wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: stream, TopicID: topic,
		Partition: wire.SomePartition(0), Strategy: wire.PollFromFirst(), Count: 10}).AppendBody(nil)
	guardMust(t, err, "encode poll")
	mutate := func(f func([]byte) []byte) []byte { return f(bytes.Clone(good)) }
	n := len(good)
	for name, body := range map[string][]byte{
		"trailing byte":         append(bytes.Clone(good), 0),
		"truncated":             good[:n-1],
		"unknown strategy kind": mutate(func(b []byte) []byte { b[n-14] = 9; return b }),
		"strategy kind 0":       mutate(func(b []byte) []byte { b[n-14] = 0; return b }),
		"auto_commit 2":         mutate(func(b []byte) []byte { b[n-1] = 2; return b }),
		"partition flag 2":      mutate(func(b []byte) []byte { b[n-19] = 2; return b }),
		"unknown consumer kind": mutate(func(b []byte) []byte { b[0] = 3; return b }),
		"empty body":            {},
		"absent partition id 5": mutate(func(b []byte) []byte { b[n-19] = 0; b[n-18] = 5; return b }),
	} {
		_, err := cl.Do(ctx, &guardRawRequest{code: wire.CmdPollMessages, body: body})
		guardWantCode(t, err, wire.CodeInvalidCommand, "poll with "+name)
	}
	goodOffset, _ := (&wire.StoreConsumerOffset{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: stream, TopicID: topic,
		Partition: wire.SomePartition(0), Offset: 0}).AppendBody(nil)
	for code, body := range map[wire.CommandCode][]byte{
		wire.CmdStoreConsumerOffset:  append(bytes.Clone(goodOffset), 1),
		wire.CmdGetConsumerOffset:    append(bytes.Clone(goodOffset[:len(goodOffset)-8]), 0),
		wire.CmdDeleteConsumerOffset: goodOffset[:len(goodOffset)-9],
	} {
		_, err := cl.Do(ctx, &guardRawRequest{code: code, body: body})
		guardWantCode(t, err, wire.CodeInvalidCommand, code.String()+" with a malformed body")
	}

	// Nothing refused was stored; what was accepted is intact; another
	// client is served.
	other := guardDial(t, s.Addr, "iggy", "iggy")
	_, err = other.SendMessages(ctx, stream, topic, wire.PartitionByID(0), []wire.Message{{Payload: []byte("after")}})
	guardMust(t, err, "send from another client")
	pm, err := other.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(2)), StreamID: stream, TopicID: topic,
		Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(2), Count: 10})
	guardMust(t, err, "poll")
	if msgs := pm.Messages(); len(msgs) != 1 || msgs[0].Offset != 2 || string(msgs[0].Payload) != "after" {
		t.Fatalf("after the refusals the partition holds %d messages from offset 2 (want exactly one, 'after', at offset 2)", len(msgs))
	}
	if pm.CurrentOffset != 2 {
		t.Fatalf("current offset %d, want 2: a refused send was stored", pm.CurrentOffset)
	}

	out := s.Output()
	for _, limit := range []string{
		"message payload_length >= 1",
		"message payload_length <= 64000000 (Iggy MAX_PAYLOAD_SIZE)",
		"message user_headers_length <= 100000 (Iggy MAX_USER_HEADERS_SIZE)",
		"poll_messages body",
	} {
		var lines []map[string]any
		for _, f := range guardLogFields(out, "refused a request over a limit") {
			if f["limit"] == limit {
				lines = append(lines, f)
			}
		}
		// Rate-limited: one line, or (on a slow machine, when the repeats
		// spread over more than one window) lines a window apart, each
		// later one counting what it suppressed.
		if len(lines) == 0 {
			t.Fatalf("no log line for limit %q", limit)
		}
		for i := 1; i < len(lines); i++ {
			prev, _ := lines[i-1]["ts"].(time.Time)
			at, _ := lines[i]["ts"].(time.Time)
			if at.Sub(prev) < ratelog.RefusalInterval || lines[i]["suppressed"] == nil {
				t.Fatalf("log lines for limit %q are not rate-limited (%v apart, want %v):\n%v", limit, at.Sub(prev), ratelog.RefusalInterval, lines)
			}
		}
		if addr, _ := lines[0]["addr"].(string); addr == "" {
			t.Fatalf("log line for %q names no client address: %v", limit, lines[0])
		}
	}
}
