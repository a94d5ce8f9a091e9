// Package operator runs real iggo-server processes (tests/harness) through
// the mistakes operators make and checks that none of them loses data or
// goes unnoticed: two servers on one data directory, a start that cannot
// bind its port, --fresh pointed at the wrong directory or run on a
// server's own, and the audit trail of a scripted client session.
package operator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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

// tree is every file and directory under a root: relative path → SHA-256
// of the content ("dir" for a directory).
type tree map[string]string

// hashTree hashes every entry under root whose relative path skip does
// not reject.
func hashTree(t testing.TB, root string, skip func(rel string) bool) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			out[rel] = "dir"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatalf("hashing %s: %v", root, err)
	}
	return out
}

// diff lists what differs between two trees ("" when they are equal).
func diff(a, b tree) string {
	var lines []string
	for k, v := range a {
		switch w, ok := b[k]; {
		case !ok:
			lines = append(lines, "removed "+k)
		case w != v:
			lines = append(lines, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, "added "+k)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// logsDir rejects the log directory (a running server keeps writing it).
func logsDir(rel string) bool {
	return rel == "logs" || strings.HasPrefix(rel, "logs"+string(filepath.Separator))
}

// logLine is one JSON line of <path>/logs/iggo-server.log.
type logLine map[string]any

func (l logLine) str(k string) string {
	s, _ := l[k].(string)
	return s
}

func (l logLine) num(k string) (float64, bool) {
	f, ok := l[k].(float64)
	return f, ok
}

// readLog parses the server's JSON log file.
func readLog(t testing.TB, dataDir string) []logLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "logs", replica.LogFileName))
	if err != nil {
		t.Fatalf("reading the log file: %v", err)
	}
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// send sends n messages of "tag-i" payloads to partition 0.
func send(t testing.TB, c *client.Client, stream, topic, tag string, n int) {
	t.Helper()
	msgs := make([]wire.Message, n)
	for i := range msgs {
		m, err := client.NewMessage([]byte(tag + "-" + strconv.Itoa(i)))
		must(t, err, "building a message")
		msgs[i] = m
	}
	_, err := c.SendMessages(ctxT(t), name(stream), name(topic), wire.PartitionByID(0), msgs)
	must(t, err, "send")
}

// payloads polls partition 0 of stream/topic from offset 0.
func payloads(t testing.TB, c *client.Client, stream, topic string) []string {
	t.Helper()
	pm, err := c.PollMessages(ctxT(t), wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: name(stream),
		TopicID: name(topic), Partition: wire.SomePartition(0), Strategy: wire.PollFromOffset(0), Count: 10000})
	must(t, err, "poll")
	var out []string
	for _, m := range pm.Messages() {
		out = append(out, string(m.Payload))
	}
	return out
}

// setup makes stream/topic (one partition) and sends n messages.
func setup(t testing.TB, s *harness.Server, stream string, n int) {
	t.Helper()
	c := s.Root(t)
	ctx := ctxT(t)
	_, err := c.CreateStream(ctx, stream, nil)
	must(t, err, "create stream")
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: name(stream), PartitionsCount: 1, Name: "t"})
	must(t, err, "create topic")
	send(t, c, stream, "t", "m", n)
}

func wantPayloads(t testing.TB, got []string, n int, what string) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s: %d messages, want %d", what, len(got), n)
	}
	for i, p := range got {
		if p != "m-"+strconv.Itoa(i) {
			t.Fatalf("%s: message %d is %q", what, i, p)
		}
	}
}
