package replica

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

const (
	testKeyA = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=" // 32 × 0x01
	testKeyB = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=" // 32 × 0x02
)

func encryptedConfig(dir, key string) *config.Config {
	cfg := config.Default()
	cfg.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.HTTP.Address = "127.0.0.1:0" // loopback only, and no fixed port shared with other tests
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	if key != "" {
		cfg.Encryption.Enabled, cfg.Encryption.Key = true, key
	}
	return cfg
}

func startWith(t *testing.T, cfg *config.Config) (*Node, error) {
	t.Helper()
	n, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}})
	if err != nil {
		return nil, err
	}
	if err := n.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = n.Close() })
	return n, nil
}

// grepDir reports the files under dir holding needle.
func grepDir(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

// TestEncryptionAtRest (in one process): payloads and user headers are
// sealed in the journal and the segments, polls return the plaintext with
// checksums that verify, a restart reads it back, and the key check
// refuses a wrong key, a missing key, and a key on a plaintext directory.
func TestEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	n, err := startWith(t, encryptedConfig(dir, testKeyA))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, n)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	hdrs, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("tag"), Value: wire.StringValue("HEADER-PLAINTEXT-MARKER")}})
	if err != nil {
		t.Fatal(err)
	}
	const batches, per = 20, 50
	payload := func(i int) []byte { return []byte(fmt.Sprintf("PAYLOAD-PLAINTEXT-MARKER-%05d", i)) }
	for b := 0; b < batches; b++ {
		msgs := make([]wire.Message, per)
		for i := range msgs {
			msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(b*per + i + 1)}, Payload: payload(b*per + i)}
			if i%2 == 0 {
				msgs[i].UserHeaders = hdrs
			}
		}
		if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), msgs); err != nil {
			t.Fatal(err)
		}
	}
	check := func(n *Node) {
		t.Helper()
		c := dial(t, n)
		// Poll in odd-sized steps so that records are cut (sliced polls).
		var got []wire.PolledMessage
		for next := uint64(0); next < batches*per; {
			pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)),
				StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Partition: wire.SomePartition(0),
				Strategy: wire.PollFromOffset(next), Count: 37})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range pm.Records {
				if _, err := wire.VerifyBatch(r.Bytes()); err != nil {
					t.Fatalf("polled record does not verify (checksums must cover the plaintext): %v", err)
				}
			}
			ms := pm.Messages()
			if len(ms) == 0 {
				t.Fatalf("poll from %d returned nothing", next)
			}
			got = append(got, ms...)
			next = ms[len(ms)-1].Offset + 1
		}
		for i, m := range got {
			if m.Offset != uint64(i) || !bytes.Equal(m.Payload, payload(i)) {
				t.Fatalf("message %d: offset %d payload %q", i, m.Offset, m.Payload)
			}
			if want := i%per%2 == 0; want != bytes.Equal(m.UserHeaders, hdrs) || !want && len(m.UserHeaders) != 0 {
				t.Fatalf("message %d: user headers %q", i, m.UserHeaders)
			}
		}
	}
	check(n)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, marker := range []string{"PAYLOAD-PLAINTEXT-MARKER", "HEADER-PLAINTEXT-MARKER"} {
		if hits := grepDir(t, dir, []byte(marker)); len(hits) > 0 {
			t.Fatalf("%s in clear on disk: %v", marker, hits)
		}
	}
	var journals, segments int
	_ = filepath.WalkDir(filepath.Join(dir, "streams"), func(p string, d fs.DirEntry, err error) error {
		if st, e := os.Stat(p); e == nil && st.Size() > 0 {
			journals += map[bool]int{true: 1}[strings.HasSuffix(p, ".wal")]
			segments += map[bool]int{true: 1}[strings.HasSuffix(p, ".log")]
		}
		return nil
	})
	if journals == 0 || segments == 0 {
		t.Fatalf("the grep saw %d journal and %d segment files with data: nothing was checked", journals, segments)
	}

	n2, err := startWith(t, encryptedConfig(dir, testKeyA))
	if err != nil {
		t.Fatal(err)
	}
	check(n2)
	if err := n2.Close(); err != nil {
		t.Fatal(err)
	}

	for name, key := range map[string]string{"wrong key": testKeyB, "missing key": ""} {
		_, err := startWith(t, encryptedConfig(dir, key))
		if err == nil {
			t.Fatalf("%s: started", name)
		}
		t.Logf("%s: %v", name, err)
	}
	plain := t.TempDir()
	n3, err := startWith(t, encryptedConfig(plain, ""))
	if err != nil {
		t.Fatal(err)
	}
	// Anti-vacuity: without encryption the same grep finds the payload.
	c3 := dial(t, n3)
	if _, err := c3.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c3.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c3.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), []wire.Message{{Payload: payload(0)}}); err != nil {
		t.Fatal(err)
	}
	_ = n3.Close()
	if hits := grepDir(t, plain, payload(0)); len(hits) == 0 {
		t.Fatal("the grep does not find a plaintext payload in an unencrypted directory")
	}
	if _, err := startWith(t, encryptedConfig(plain, testKeyA)); err == nil || !strings.Contains(err.Error(), "written without encryption") {
		t.Fatalf("a key on a plaintext directory: %v", err)
	}
}

// TestEncryptionSealedBatchTooLarge: a batch that fits the frame limit as
// sent but not once sealed (28 bytes more per message) is refused with
// InvalidMessagesSize, not retried forever as a transient refusal; one
// that fits both is stored.
func TestEncryptionSealedBatchTooLarge(t *testing.T) {
	cfg := encryptedConfig(t.TempDir(), testKeyA)
	cfg.MessageBus.MaxMessageSize = config.MiB
	n, err := startWith(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, n)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 1, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	msgs := func(n int) []wire.Message {
		out := make([]wire.Message, n)
		for i := range out {
			out[i] = wire.Message{Payload: []byte("x")}
		}
		return out
	}
	// 20,000 × 49 B = 980,000 B as sent; 1,540,000 B sealed.
	_, err = c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), msgs(20000))
	if !wire.HasCode(err, wire.CodeInvalidMessagesSize) {
		t.Fatalf("oversized sealed batch: %v, want InvalidMessagesSize", err)
	}
	if _, err := c.SendMessages(ctx, wire.NumericID(0), wire.NumericID(0), wire.PartitionByID(0), msgs(10000)); err != nil {
		t.Fatalf("a batch that fits sealed: %v", err)
	}
}
