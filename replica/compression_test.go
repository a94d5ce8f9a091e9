package replica

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

func jsonPayload(i int) []byte {
	return []byte(fmt.Sprintf(`{"event":"order.shipped","order_id":%d,"customer":{"id":"c-%04d","tier":"gold"},"items":[{"sku":"SKU-%05d","qty":%d,"price":"19.99"}],"warehouse":"eu-central-1","note":"COMPRESSION-MARKER-%06d"}`,
		500000+i, i%97, i*7%1000, i%5+1, i))
}

// pollAll reads messages [0, total) of partition 0 in steps of step (odd
// steps cut records at both ends) and checks payloads, headers and that
// every record verifies with the producer's checksums.
func pollAll(ctx context.Context, t *testing.T, c *client.Client, topic wire.Identifier, total, step int, hdrs []byte) {
	t.Helper()
	var got []wire.PolledMessage
	for next := uint64(0); next < uint64(total); {
		pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)),
			StreamID: wire.NumericID(0), TopicID: topic, Partition: wire.SomePartition(0),
			Strategy: wire.PollFromOffset(next), Count: uint32(step)})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range pm.Records {
			if _, err := wire.VerifyBatch(r.Bytes()); err != nil {
				t.Fatalf("polled record does not verify: %v", err)
			}
		}
		ms := pm.Messages()
		if len(ms) == 0 || len(ms) > step {
			t.Fatalf("poll of %d from %d returned %d messages", step, next, len(ms))
		}
		got = append(got, ms...)
		next = ms[len(ms)-1].Offset + 1
	}
	if len(got) != total {
		t.Fatalf("%d messages, want %d", len(got), total)
	}
	for i, m := range got {
		if m.Offset != uint64(i) || !bytes.Equal(m.Payload, jsonPayload(i)) {
			t.Fatalf("message %d: offset %d payload %q", i, m.Offset, m.Payload)
		}
		if want := i%3 == 0; want != (len(m.UserHeaders) > 0) || want && !bytes.Equal(m.UserHeaders, hdrs) {
			t.Fatalf("message %d: user headers %x", i, m.UserHeaders)
		}
	}
}

// TestCompressionAtRest: per codec, with and without encryption, a topic
// stores its batches compressed (segments far smaller than what was sent,
// no payload in clear), polls at any offset and step return the bytes
// sent with verifying checksums, a restart reads them back, and a codec
// changed by UPDATE_TOPIC (records of several codecs in one partition)
// keeps every record readable. Iggy's own compression_algorithm = gzip
// turns gzip on.
func TestCompressionAtRest(t *testing.T) {
	for _, key := range []string{"", testKeyA} {
		for _, codecName := range []string{"gzip", "zstd", "lz4", "iggy-gzip"} {
			t.Run(fmt.Sprintf("%s/encrypted=%v", codecName, key != ""), func(t *testing.T) {
				testCompressionAtRest(t, codecName, key)
			})
		}
	}
}

func testCompressionAtRest(t *testing.T, codecName, key string) {
	dir := t.TempDir()
	n, err := startWith(t, encryptedConfig(dir, key))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := dial(t, n)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	opt := wire.Options{{Key: wire.StringValue(metadata.OptCompressionCodec), Value: wire.StringValue(codecName)}}
	if codecName == "iggy-gzip" {
		opt = wire.Options{{Key: wire.StringValue(wire.OptCompressionAlgorithm), Value: wire.StringValue("gzip")}}
	}
	td, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t", Options: opt})
	if err != nil {
		t.Fatal(err)
	}
	if codecName == "iggy-gzip" || codecName == "gzip" {
		if td.CompressionAlgorithm != wire.CompressionGzip {
			t.Fatalf("topic record compression_algorithm %d, want gzip", td.CompressionAlgorithm)
		}
	} else if td.CompressionAlgorithm != wire.CompressionNone {
		t.Fatalf("topic record compression_algorithm %d for %s, want none (Iggy knows gzip only)", td.CompressionAlgorithm, codecName)
	}
	hdrs, _ := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("trace"), Value: wire.StringValue("abc")}})
	const batches, per = 8, 250
	sent := 0
	send := func(topic wire.Identifier, from, count int) {
		for b := 0; b < count; b++ {
			msgs := make([]wire.Message, per)
			for i := range msgs {
				k := from + b*per + i
				msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(k + 1)}, OriginTimestamp: uint64(k), Payload: jsonPayload(k)}
				if k%3 == 0 {
					msgs[i].UserHeaders = hdrs
				}
				sent += len(msgs[i].Payload) + len(msgs[i].UserHeaders) + wire.FrameHeaderSize
			}
			sent += wire.BatchHeaderSize
			if _, err := c.SendMessages(ctx, wire.NumericID(0), topic, wire.PartitionByID(0), msgs); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(wire.NumericID(0), 0, batches)
	pollAll(ctx, t, c, wire.NumericID(0), batches*per, 37, hdrs)
	pollAll(ctx, t, c, wire.NumericID(0), batches*per, 1000, hdrs)

	stored, err := segmentBytes(dir, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored)*2 > sent {
		t.Fatalf("%s: segments hold %d bytes for %d sent: not compressed", codecName, len(stored), sent)
	}
	if bytes.Contains(stored, []byte("COMPRESSION-MARKER-000001")) {
		t.Fatalf("%s: a payload is stored in clear", codecName)
	}
	tp, err := c.GetTopic(ctx, wire.NumericID(0), wire.NumericID(0))
	if err != nil {
		t.Fatal(err)
	}
	if tp.SizeBytes != uint64(len(stored)) {
		t.Fatalf("topic size_bytes %d, segments hold %d: the stored size is what the topic reports", tp.SizeBytes, len(stored))
	}
	checkSizes := func(c *client.Client, wantOrig int) {
		t.Helper()
		st, err := c.GetStatsExtended(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Extended || st.MessagesOriginalSizeBytes != uint64(wantOrig) {
			t.Fatalf("stats: extended %v, original size %d, want %d (stored %d, %d messages, %d partitions)", st.Extended, st.MessagesOriginalSizeBytes, wantOrig, st.MessagesSizeBytes, st.MessagesCount, st.PartitionsCount)
		}
		plain, err := c.GetStats(ctx)
		if err != nil || plain.Extended || plain.MessagesSizeBytes != st.MessagesSizeBytes {
			t.Fatalf("Iggy's stats: %+v %v", plain, err)
		}
	}
	checkSizes(c, sent)

	// Another codec for the next batches, then off: one partition with
	// records of three stored forms.
	from := batches * per
	for _, next := range []string{"lz4", "none"} {
		if next == codecName {
			next = "zstd"
		}
		if err := c.UpdateTopic(ctx, wire.UpdateTopic{StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Name: "t",
			Options: wire.Options{{Key: wire.StringValue(metadata.OptCompressionCodec), Value: wire.StringValue(next)}}}); err != nil {
			t.Fatal(err)
		}
		send(wire.NumericID(0), from, 2)
		from += 2 * per
	}
	total := (batches + 4) * per
	pollAll(ctx, t, c, wire.NumericID(0), total, 113, hdrs)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2, err := startWith(t, encryptedConfig(dir, key))
	if err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, n2)
	pollAll(ctx, t, c2, wire.NumericID(0), total, 59, hdrs)
	// The original size survives the restart (read from the segments),
	// uncompressed sealed records counted without their nonces and tags.
	checkSizes(c2, sent)
}
