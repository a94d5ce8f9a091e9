package cli

import (
	"archive/zip"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/wire"
)

// TestCLI drives every command group of the built iggo binary against one
// real server. Subtests use their own streams, users and config
// directories, so they do not depend on each other's leftovers.
func TestCLI(t *testing.T) {
	srv := startServer(t)
	e := newCLI(t, srv)

	t.Run("streams", func(t *testing.T) {
		mustContain(t, e.ok(t, "stream", "create", "cli-streams"), "Executing create stream with name: cli-streams\n", "Stream with name: cli-streams and ID: ")
		e.ok(t, "s", "c", "cli-streams-2")
		list := rows(e.ok(t, "stream", "list", "-l", "list"))
		var id string
		for _, r := range list {
			if len(r) == 6 && r[2] == "cli-streams" {
				id = r[0]
				if r[3] != "0" || r[4] != "0" || r[5] != "0" {
					t.Fatalf("new stream row %v: want size 0, 0 messages, 0 topics", r)
				}
			}
		}
		if id == "" {
			t.Fatalf("stream list -l list lacks cli-streams: %v", list)
		}
		mustContain(t, e.ok(t, "stream", "list"), "| ID ", "| Name ", "| cli-streams ")
		// Ids and names are interchangeable.
		byID := e.ok(t, "stream", "get", id)
		if cell(t, byID, "Stream name") != "cli-streams" || cell(t, byID, "Stream topics count") != "0" {
			t.Fatalf("stream get %s:\n%s", id, byID)
		}
		mustContain(t, e.ok(t, "stream", "update", "cli-streams", "cli-streams-renamed"),
			"Stream with ID: 'cli-streams' updated with name: cli-streams-renamed")
		if cell(t, e.ok(t, "stream", "get", "cli-streams-renamed"), "Stream ID") != id {
			t.Fatal("rename changed the stream id")
		}
		mustContain(t, e.ok(t, "stream", "purge", "cli-streams-renamed"), "Stream with ID: 'cli-streams-renamed' purged")
		e.fails(t, exitServer, []string{"stream 'cli-streams-2' already exists (Iggy error 1012 StreamNameAlreadyExists)"}, "stream", "create", "cli-streams-2")
		e.fails(t, exitServer, []string{"stream 'cli-streams-2' already exists"}, "stream", "update", "cli-streams-renamed", "cli-streams-2")
		mustContain(t, e.ok(t, "stream", "delete", "cli-streams-renamed"), "Stream with ID: 'cli-streams-renamed' deleted")
		e.ok(t, "stream", "delete", "cli-streams-2")
		e.fails(t, exitServer, []string{"stream 'cli-streams-2' not found (Iggy error 1009 StreamIdNotFound); list streams with `iggo stream list`"}, "stream", "get", "cli-streams-2")
		e.fails(t, exitServer, []string{"stream 4000000 not found"}, "stream", "delete", "4000000")
		e.fails(t, exitServer, []string{"stream 'nope' not found"}, "stream", "purge", "nope")
		e.fails(t, exitUsage, []string{"invalid name: name must be 1..255 bytes, got 0; the request was not sent"}, "stream", "create", "")
		e.fails(t, exitUsage, []string{"invalid name: name must be 1..255 bytes, got 256"}, "stream", "create", strings.Repeat("é", 128))
		e.fails(t, exitUsage, []string{"invalid name: not valid UTF-8; the request was not sent"}, "stream", "create", "bad\xff")
		e.fails(t, exitUsage, []string{"accepts 1 arg(s), received 0", "Run 'iggo stream create --help'"}, "stream", "create")
		e.fails(t, exitUsage, []string{"accepts 2 arg(s), received 1"}, "stream", "update", "x")
		e.fails(t, exitUsage, []string{"invalid list mode \"json\""}, "stream", "list", "-l", "json")
	})

	t.Run("topics", func(t *testing.T) {
		e.ok(t, "stream", "create", "cli-topics")
		out := e.ok(t, "topic", "create", "cli-topics", "orders", "3", "none", "15days", "-m", "2GB",
			"--durability", "persisted", "--consumer-offset-durability", "persisted", "--set", "segment_size=128MiB")
		mustContain(t, out, "Executing create topic with name: orders, partitions: 3 in stream with ID: 'cli-topics'",
			"Topic with name: orders, ID: 0 and 3 partitions created in stream with ID: 'cli-topics'")
		get := e.ok(t, "topic", "get", "cli-topics", "orders")
		for prop, want := range map[string]string{"Topic id": "0", "Topic name": "orders", "Compression": "none",
			"Message expiry": "15days", "Max topic size": "2000000000", "Partitions count": "3", "Topic message count": "0"} {
			if got := cell(t, get, prop); got != want {
				t.Errorf("topic get %s = %q, want %q", prop, got, want)
			}
		}
		// The server kept both durabilities and the segment size.
		mustContain(t, get, "durability=persisted", "consumer_offset_durability=persisted", "segment_size=134217728", "| Partition |", "| 2         |")
		e.ok(t, "topic", "create", "cli-topics", "plain", "1", "gzip")
		plain := e.ok(t, "topic", "get", "cli-topics", "plain")
		mustContain(t, plain, "durability=replicated", "consumer_offset_durability=replicated")
		if cell(t, plain, "Compression") != "gzip" {
			t.Fatalf("gzip topic:\n%s", plain)
		}
		list := rows(e.ok(t, "topic", "list", "cli-topics", "-l", "list"))
		if len(list) != 2 || strings.Join(list[0], "|") != list[0][0]+"|"+list[0][1]+"|orders|0|2000000000|none|15days|0|3" {
			t.Fatalf("topic list -l list: %v", list)
		}
		mustContain(t, e.ok(t, "topic", "list", "cli-topics"), "| Max Topic Size (B) ", "| orders ", "| plain ", "| unlimited ")
		mustContain(t, e.ok(t, "topic", "update", "cli-topics", "orders", "orders-v2", "gzip", "unlimited", "-m", "unlimited"),
			"Topic with ID: 'orders' in stream with ID: 'cli-topics' updated")
		get = e.ok(t, "t", "g", "cli-topics", "0")
		if cell(t, get, "Topic name") != "orders-v2" || cell(t, get, "Compression") != "gzip" || cell(t, get, "Message expiry") != "unlimited" || cell(t, get, "Max topic size") != "unlimited" {
			t.Fatalf("after update:\n%s", get)
		}
		mustContain(t, get, "durability=persisted") // create-only, kept by the update
		e.ok(t, "message", "send", "cli-topics", "orders-v2", "-p", "1", "a", "b")
		mustContain(t, e.ok(t, "topic", "purge", "cli-topics", "orders-v2"), "Topic with ID: 'orders-v2' in stream with ID: 'cli-topics' purged")
		if n := partitionCounts(t, e, "cli-topics", "orders-v2"); n[1] != 0 {
			t.Fatalf("purge left messages: %v", n)
		}
		mustContain(t, e.ok(t, "topic", "delete", "cli-topics", "plain"), "Topic with ID: 'plain' in stream with ID: 'cli-topics' deleted")

		e.fails(t, exitServer, []string{"topic 'nope' not found in stream 'cli-topics' (Iggy error 2010 TopicIdNotFound); list topics with `iggo topic list cli-topics`"}, "topic", "get", "cli-topics", "nope")
		e.fails(t, exitServer, []string{"stream 'nope' not found"}, "topic", "list", "nope")
		e.fails(t, exitServer, []string{"stream 'nope' not found"}, "topic", "create", "nope", "t", "1", "none")
		e.fails(t, exitServer, []string{"topic 'orders-v2' already exists in stream 'cli-topics' (Iggy error 2013 TopicNameAlreadyExists)"}, "topic", "create", "cli-topics", "orders-v2", "1", "none")
		e.fails(t, exitServer, []string{"unsupported topic option key among compression_algorithm=none, bogus=1 (Iggy error 4041 UnsupportedOptionKey)", "`iggo options topic`"},
			"topic", "create", "cli-topics", "x", "1", "none", "--set", "bogus=1")
		e.fails(t, exitServer, []string{"invalid topic option value among compression_algorithm=none, segment_size=abc (Iggy error 4042 InvalidOptionValue)"},
			"topic", "create", "cli-topics", "x", "1", "none", "--set", "segment_size=abc")
		e.fails(t, exitServer, []string{"invalid topic option value", "durability=eventually"}, "topic", "create", "cli-topics", "x", "1", "none", "--set", "durability=eventually")
		e.fails(t, exitUsage, []string{"invalid durability \"eventually\": want replicated or persisted"}, "topic", "create", "cli-topics", "x", "1", "none", "--durability", "eventually")
		e.fails(t, exitUsage, []string{"invalid partition count"}, "topic", "create", "cli-topics", "x", "many", "none")
		e.fails(t, exitUsage, []string{"invalid compression \"snappy\": want none, gzip, zstd or lz4"}, "topic", "create", "cli-topics", "x", "1", "snappy")
		e.fails(t, exitUsage, []string{"invalid --set \"segment_size\""}, "topic", "create", "cli-topics", "x", "1", "none", "--set", "segment_size")
		e.fails(t, exitUsage, []string{"requires at least 4 arg(s), only received 2"}, "topic", "create", "cli-topics", "x")
		if out := e.ok(t, "topic", "list", "cli-topics"); strings.Contains(out, "| x ") {
			t.Fatalf("a refused create left a topic:\n%s", out)
		}
	})

	t.Run("partitions and segments", func(t *testing.T) {
		e.ok(t, "stream", "create", "cli-parts")
		e.ok(t, "topic", "create", "cli-parts", "t", "2", "none", "--set", "segment_size=1MiB")
		mustContain(t, e.ok(t, "partition", "create", "cli-parts", "t", "3"), "Created 3 partitions for topic with ID: 't' and stream with ID: 'cli-parts'")
		if n := partitionCounts(t, e, "cli-parts", "t"); len(n) != 5 {
			t.Fatalf("after adding 3 to 2: %v", n)
		}
		mustContain(t, e.ok(t, "p", "d", "cli-parts", "t", "2"), "Deleted 2 partitions for topic with ID: 't' and stream with ID: 'cli-parts'")
		if n := partitionCounts(t, e, "cli-parts", "t"); len(n) != 3 || cell(t, e.ok(t, "topic", "get", "cli-parts", "t"), "Partitions count") != "3" {
			t.Fatalf("after deleting 2 of 5: %v", n)
		}
		e.fails(t, exitUsage, []string{"invalid partition count \"0\""}, "partition", "create", "cli-parts", "t", "0")
		e.fails(t, exitServer, []string{"invalid partition count (Iggy error 2015 TooManyPartitions)"}, "partition", "create", "cli-parts", "t", "5000")
		e.fails(t, exitServer, []string{"topic 'nope' not found in stream 'cli-parts'"}, "partition", "create", "cli-parts", "nope", "1")

		// Three ~840 KB sends into 1 MiB segments: the second crosses the
		// size and seals the first segment.
		line := strings.Repeat("0123456789", 100)
		input := strings.Repeat(line+"\n", 800)
		for range 3 {
			e.okIn(t, input, "-q", "message", "send", "cli-parts", "t", "-p", "0")
		}
		segments := func() string {
			for _, l := range strings.Split(e.ok(t, "topic", "get", "cli-parts", "t"), "\n") {
				if f := strings.Split(l, "|"); len(f) >= 7 && strings.TrimSpace(f[1]) == "0" {
					return strings.TrimSpace(f[3]) + " segments, " + strings.TrimSpace(f[6]) + " messages"
				}
			}
			return "?"
		}
		if got := segments(); got != "2 segments, 2400 messages" {
			t.Fatalf("before segment delete: %s", got)
		}
		mustContain(t, e.ok(t, "segment", "delete", "cli-parts", "t", "0", "1"), "Deleted 1 segments for partition 0 of topic with ID: 't' and stream with ID: 'cli-parts'")
		if got := segments(); got != "1 segments, 800 messages" {
			t.Fatalf("after deleting the sealed segment: %s", got)
		}
		// The first remaining offset is the first of the third send.
		first := rows(e.ok(t, "-q", "message", "poll", "-f", "-m", "1", "--format", "list", "cli-parts", "t", "0"))
		if len(first) != 1 || first[0][0] != "1600" {
			t.Fatalf("first message after segment delete: %v", first)
		}
		e.fails(t, exitServer, []string{"partition 7 not found in topic 't' in stream 'cli-parts' (Iggy error 3007 PartitionNotFound)"}, "segment", "delete", "cli-parts", "t", "7", "1")
		e.fails(t, exitUsage, []string{"accepts 4 arg(s), received 3"}, "segment", "delete", "cli-parts", "t", "0")
	})

	t.Run("messages", func(t *testing.T) {
		e.ok(t, "stream", "create", "cli-msgs")
		e.ok(t, "topic", "create", "cli-msgs", "t", "2", "none")
		out := e.ok(t, "message", "send", "cli-msgs", "t", "-p", "0", "hello", "world")
		mustContain(t, out, "Executing send messages to topic with ID: 't' and stream with ID: 'cli-msgs'",
			"Sent 2 messages to topic with ID: 't' and stream with ID: 'cli-msgs' (partition 0 offsets 0..1), it took ")
		out = e.okIn(t, "line one\n\nline two\r\n", "message", "send", "cli-msgs", "t", "-p", "0", "-H", "src:string:stdin,n:uint32:7")
		mustContain(t, out, "Sent 2 messages", "(partition 0 offsets 2..3)")

		poll := e.ok(t, "message", "poll", "-f", "-m", "10", "-s", "cli-msgs", "t", "0")
		mustContain(t, poll, "Polled messages from topic with ID: 't' and stream with ID: 'cli-msgs' (from partition with ID: 0)",
			"Polled 4 messages of total size ", "| hello ", "| world ", "| line one ", "| line two ", "Header: n", "uint32", "Header: src", "| stdin ", "| 7 ")
		if got := e.ok(t, "-q", "message", "poll", "-o", "1", "-m", "2", "--format", "payload", "cli-msgs", "t", "0"); got != "world\nline one\n" {
			t.Fatalf("payload format = %q", got)
		}
		last := e.ok(t, "-q", "message", "poll", "-l", "-m", "1", "--hex", "--format", "list", "cli-msgs", "t", "0")
		if !strings.HasPrefix(last, "3|") || !strings.HasSuffix(last, "|8|6c696e652074776f\n") {
			t.Fatalf("last message, hex list = %q", last)
		}
		// Auto-commit, then --next continues after the stored offset.
		e.ok(t, "message", "poll", "-f", "-m", "2", "-a", "-c", "reader", "cli-msgs", "t", "0")
		off := e.ok(t, "consumer-offset", "get", "reader", "cli-msgs", "t", "0")
		if cell(t, off, "Stored offset") != "1" || cell(t, off, "Current offset") != "3" || cell(t, off, "Left to process") != "2" {
			t.Fatalf("offset after auto-commit:\n%s", off)
		}
		if got := e.ok(t, "-q", "message", "poll", "-n", "-m", "10", "-a", "-c", "reader", "--format", "payload", "cli-msgs", "t", "0"); got != "line one\nline two\n" {
			t.Fatalf("--next after commit = %q", got)
		}
		if got := e.ok(t, "-q", "message", "poll", "-n", "-m", "10", "-c", "reader", "--format", "payload", "cli-msgs", "t", "0"); got != "" {
			t.Fatalf("--next at the end = %q", got)
		}
		mustContain(t, e.ok(t, "message", "poll", "-o", "100", "cli-msgs", "t", "0"), "Polled 0 messages")

		// Replay through a message file into another topic.
		file := filepath.Join(t.TempDir(), "msgs.bin")
		mustContain(t, e.ok(t, "message", "poll", "-f", "-m", "10", "--output-file", file, "cli-msgs", "t", "0"), "Stored 4 messages", file)
		e.ok(t, "topic", "create", "cli-msgs", "copy", "1", "none")
		mustContain(t, e.ok(t, "message", "send", "cli-msgs", "copy", "--input-file", file), "Sent 4 messages", "(partition 0 offsets 0..3)")
		mustContain(t, e.ok(t, "-q", "message", "poll", "-f", "-m", "10", "-s", "cli-msgs", "copy", "0"), "| hello ", "| line two ", "| stdin ")

		// A key always lands on XXH32(key) mod partitions.
		e.ok(t, "topic", "create", "cli-msgs", "keyed", "4", "none")
		want := int(wire.PartitionForKey([]byte("user-42"), 4))
		for range 3 {
			mustContain(t, e.ok(t, "message", "send", "cli-msgs", "keyed", "-m", "user-42", "k"), "(partition "+strconv.Itoa(want)+" offsets ")
		}
		if n := partitionCounts(t, e, "cli-msgs", "keyed"); n[want] != 3 {
			t.Fatalf("key user-42: want 3 messages on partition %d, counts %v", want, n)
		}
		// Without -p or -m the server balances: consecutive sends (each
		// its own process and connection) go round robin.
		e.ok(t, "topic", "create", "cli-msgs", "balanced", "3", "none")
		seen := map[string]bool{}
		for i := range 6 {
			out := e.ok(t, "message", "send", "cli-msgs", "balanced", "m"+strconv.Itoa(i))
			j := strings.Index(out, "(partition ")
			if j < 0 {
				t.Fatalf("send output without placement: %s", out)
			}
			seen[out[j:j+12]] = true
		}
		if n := partitionCounts(t, e, "cli-msgs", "balanced"); n[0] != 2 || n[1] != 2 || n[2] != 2 || len(seen) != 3 {
			t.Fatalf("balanced sends: counts %v, placements %v", n, seen)
		}

		// flush is refused by protocol 0.11 servers; the CLI explains it.
		e.fails(t, exitServer, []string{"the server does not flush on request (Iggy error 5 FeatureUnavailable)", "durability"}, "message", "flush", "cli-msgs", "t", "0")
		e.fails(t, exitServer, []string{"does not flush on request"}, "message", "flush", "-f", "cli-msgs", "t", "0")

		// Bad input.
		// A send to a missing partition is ResourceNotFound, as in Iggy 0.9.
		e.fails(t, exitServer, []string{"partition 9 not found in topic 't' in stream 'cli-msgs'", "(Iggy error 20 ResourceNotFound)"}, "message", "send", "cli-msgs", "t", "-p", "9", "x")
		e.fails(t, exitServer, []string{"partition 9 not found"}, "message", "poll", "-f", "cli-msgs", "t", "9")
		e.fails(t, exitServer, []string{"stream 'nope' or topic 't' not found (Iggy error 20 ResourceNotFound)"}, "message", "send", "nope", "t", "x")
		e.fails(t, exitServer, []string{"topic 'nope' not found in stream 'cli-msgs'"}, "message", "poll", "-f", "cli-msgs", "nope", "0")
		e.fails(t, exitUsage, []string{"give exactly one of --offset N, --first, --last or --next"}, "message", "poll", "cli-msgs", "t", "0")
		e.fails(t, exitUsage, []string{"give exactly one of"}, "message", "poll", "-f", "-l", "cli-msgs", "t", "0")
		e.fails(t, exitUsage, []string{"either -p/--partition-id or -m/--message-key"}, "message", "send", "cli-msgs", "t", "-p", "0", "-m", "k", "x")
		e.fails(t, exitUsage, []string{"invalid header \"bad\"", "key:kind:value"}, "message", "send", "cli-msgs", "t", "-H", "bad", "x")
		e.fails(t, exitUsage, []string{"invalid argument \"x\" for \"-p, --partition-id\""}, "message", "send", "cli-msgs", "t", "-p", "x", "y")
		e.fails(t, exitUsage, []string{"invalid --format \"yaml\""}, "message", "poll", "-f", "--format", "yaml", "cli-msgs", "t", "0")
		e.fails(t, exitUsage, []string{"accepts 3 arg(s), received 2"}, "message", "poll", "-f", "cli-msgs", "t")
		r := e.runIn(t, "", "-u", "iggy", "-p", "iggy", "message", "send", "cli-msgs", "t")
		expectFailure(t, r, exitUsage, "no messages to send")
		if err := os.WriteFile(file, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		e.fails(t, exitLocal, []string{"is not a message file"}, "message", "send", "cli-msgs", "copy", "--input-file", file)
		e.fails(t, exitLocal, []string{"read --input-file"}, "message", "send", "cli-msgs", "copy", "--input-file", file+".missing")
	})

	t.Run("consumer groups and offsets", func(t *testing.T) {
		e.ok(t, "stream", "create", "cli-groups")
		e.ok(t, "topic", "create", "cli-groups", "t", "3", "none")
		mustContain(t, e.ok(t, "consumer-group", "create", "cli-groups", "t", "billing"),
			"Consumer group with name: billing and ID: 0 created for topic with ID: 't' and stream with ID: 'cli-groups'")
		e.ok(t, "g", "c", "cli-groups", "t", "audit")
		groups := rows(e.ok(t, "g", "list", "cli-groups", "t", "-l", "list"))
		if len(groups) != 2 || strings.Join(groups[0], "|") != "0|billing|3|0" || strings.Join(groups[1], "|") != "1|audit|3|0" {
			t.Fatalf("group list: %v", groups)
		}
		get := e.ok(t, "g", "get", "cli-groups", "t", "0")
		if cell(t, get, "Consumer group name") != "billing" || cell(t, get, "Partitions count") != "3" || cell(t, get, "Members count") != "0" {
			t.Fatalf("group get:\n%s", get)
		}
		e.fails(t, exitServer, []string{"consumer group 'billing' already exists in topic 't' in stream 'cli-groups' (Iggy error 5004"}, "g", "create", "cli-groups", "t", "billing")
		mustContain(t, e.ok(t, "g", "delete", "cli-groups", "t", "audit"), "Consumer group with ID: 'audit' deleted")
		e.fails(t, exitServer, []string{"consumer group 'audit' not found in topic 't' in stream 'cli-groups'", "`iggo consumer-group list cli-groups t`"}, "g", "get", "cli-groups", "t", "audit")
		e.fails(t, exitServer, []string{"consumer group 'audit' not found"}, "g", "delete", "cli-groups", "t", "audit")
		e.fails(t, exitServer, []string{"stream 'nope' not found"}, "g", "list", "nope", "t")
		mustContain(t, e.ok(t, "g", "list", "cli-groups", "t"), "| billing ", "| Members Count ")

		e.ok(t, "message", "send", "cli-groups", "t", "-p", "1", "a", "b", "c")
		mustContain(t, e.ok(t, "consumer-offset", "set", "c1", "cli-groups", "t", "1", "1"), "Offset 1 stored for consumer 'c1' on partition 1")
		off := e.ok(t, "o", "get", "c1", "cli-groups", "t", "1")
		if cell(t, off, "Stored offset") != "1" || cell(t, off, "Current offset") != "2" || cell(t, off, "Left to process") != "1" || cell(t, off, "Consumer") != "'c1'" {
			t.Fatalf("offset get:\n%s", off)
		}
		e.fails(t, exitServer, []string{"offset 9 is beyond", "(Iggy error 4100 InvalidOffset)"}, "o", "set", "c1", "cli-groups", "t", "1", "9")
		mustContain(t, e.ok(t, "o", "get", "nobody", "cli-groups", "t", "1"), "No offset stored for consumer 'nobody' on partition 1")
		// A group's offset moves only by a member owning the partition: a
		// client joins (owning all three partitions) and commits; the CLI
		// reads it by kind and is refused when it tries to move it.
		mustContain(t, e.ok(t, "o", "get", "billing", "cli-groups", "t", "1", "-k", "consumer-group"), "No offset stored for consumer 'billing'")
		e.fails(t, exitServer, []string{"only a member of it that owns partition 1 may store or delete the group's offset there (Iggy error 20"},
			"o", "set", "billing", "cli-groups", "t", "1", "2", "-k", "consumer-group")
		member := srv.Root(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		sid, tid, gid := wire.MustNamedID("cli-groups"), wire.MustNamedID("t"), wire.MustNamedID("billing")
		if err := member.JoinConsumerGroup(ctx, sid, tid, gid); err != nil {
			t.Fatal(err)
		}
		if err := member.StoreConsumerOffset(ctx, wire.GroupConsumer(gid), sid, tid, wire.SomePartition(1), 2); err != nil {
			t.Fatal(err)
		}
		goff := e.ok(t, "o", "get", "billing", "cli-groups", "t", "1", "-k", "consumer-group")
		if cell(t, goff, "Stored offset") != "2" || cell(t, goff, "Left to process") != "0" {
			t.Fatalf("group offset:\n%s", goff)
		}
		get = e.ok(t, "g", "get", "cli-groups", "t", "billing")
		if cell(t, get, "Members count") != "1" || !strings.Contains(get, " partitions | 0, 1, 2 ") {
			t.Fatalf("group with one member:\n%s", get)
		}
		mustContain(t, e.ok(t, "o", "get", "billing", "cli-groups", "t", "1"), "No offset stored") // the consumer kind is separate
		mustContain(t, e.ok(t, "o", "delete", "c1", "cli-groups", "t", "1"), "Offset deleted for consumer 'c1' on partition 1")
		e.fails(t, exitServer, []string{"no offset stored for consumer 'c1' on partition 1 in topic 't' in stream 'cli-groups' (Iggy error 3021"}, "o", "delete", "c1", "cli-groups", "t", "1")
		e.fails(t, exitServer, []string{"partition 9 not found"}, "o", "set", "c1", "cli-groups", "t", "9", "0")
		e.fails(t, exitUsage, []string{"invalid --kind \"team\""}, "o", "get", "c1", "cli-groups", "t", "0", "-k", "team")
		e.fails(t, exitUsage, []string{"accepts 5 arg(s), received 4"}, "o", "set", "c1", "cli-groups", "t", "0")
	})

	t.Run("users and permissions", func(t *testing.T) {
		mustContain(t, e.ok(t, "user", "create", "alice", "secret1", "-g", "r_srv,p_msg", "-s", "0:r_str#0:s_msg"), "User with username: alice and ID: ")
		get := e.ok(t, "user", "get", "alice")
		if cell(t, get, "Username") != "alice" || cell(t, get, "Status") != "active" {
			t.Fatalf("user get:\n%s", get)
		}
		mustContain(t, get, "global: r_srv,p_msg", "stream 0: r_str", "stream 0 topic 0: s_msg")
		mustContain(t, e.ok(t, "user", "list"), "| Username ", "| iggy ", "| alice ")
		// alice may poll but not list streams: the server checks.
		r := e.run(t, "-u", "alice", "-p", "secret1", "stream", "list")
		expectFailure(t, r, exitServer, "permission denied (Iggy error 41 Unauthorized)", "`iggo user permissions`")
		mustContain(t, e.ok(t, "user", "name", "alice", "alicia"), "User with ID: 'alice' renamed to alicia")
		mustContain(t, e.ok(t, "user", "status", "alicia", "inactive"), "User with ID: 'alicia' is now inactive")
		mustContain(t, e.ok(t, "user", "list", "-l", "list"), "|inactive|alicia\n")
		expectFailure(t, e.run(t, "-u", "alicia", "-p", "secret1", "me"), exitServer, "the user is inactive", "[session ended: UserInactive]", "`iggo user status <user> active`")
		e.ok(t, "user", "status", "alicia", "active")
		mustContain(t, e.ok(t, "user", "password", "alicia", "secret1", "secret2"), "Password for user with ID: 'alicia' changed")
		expectFailure(t, e.run(t, "-u", "alicia", "-p", "secret1", "me"), exitServer, "invalid username or password (Iggy error 42 InvalidCredentials)")
		if r := e.run(t, "-u", "alicia", "-p", "secret2", "me"); r.code != exitOK || cell(t, r.out, "User ID") == "0" {
			t.Fatalf("me as alicia:\n%v", r)
		}
		// Current and new password from stdin.
		e.okIn(t, "secret2\nsecret3\n", "user", "password", "alicia")
		// The password is read from stdin when -p is missing.
		if r := e.runIn(t, "secret3\n", "-u", "alicia", "me"); r.code != exitOK {
			t.Fatalf("password on stdin:\n%v", r)
		}
		mustContain(t, e.ok(t, "permissions", "alicia", "-g", "m_srv,r_str"), "Permissions for user with ID: 'alicia' updated")
		mustContain(t, e.ok(t, "user", "get", "alicia"), "global: m_srv,r_str")
		if r := e.run(t, "-u", "alicia", "-p", "secret3", "stream", "list"); r.code != exitOK {
			t.Fatalf("stream list with r_str:\n%v", r)
		}
		e.ok(t, "user", "permissions", "alicia")
		if cell(t, e.ok(t, "user", "get", "alicia"), "Permissions") != "none" {
			t.Fatal("permissions not cleared")
		}
		mustContain(t, e.ok(t, "user", "delete", "alicia"), "User with ID: 'alicia' deleted")

		e.fails(t, exitServer, []string{"user 'alicia' not found (Iggy error 20 ResourceNotFound)", "`iggo user list`"}, "user", "get", "alicia")
		e.fails(t, exitServer, []string{"user 'alicia' not found"}, "user", "delete", "alicia")
		e.fails(t, exitServer, []string{"invalid password (Iggy error 44 InvalidPassword); passwords are 3..100 bytes"}, "user", "create", "bob", "pw")
		e.fails(t, exitServer, []string{"invalid username (Iggy error 43 InvalidUsername); usernames are 3..50 bytes"}, "user", "create", "bo", "secret")
		e.fails(t, exitServer, []string{"this user cannot be deleted (Iggy error 48 CannotDeleteUser)"}, "user", "delete", "iggy")
		e.ok(t, "user", "create", "bob", "secret")
		e.fails(t, exitServer, []string{"user 'bob' already exists (Iggy error 46 UserAlreadyExists)"}, "user", "create", "bob", "secret")
		e.ok(t, "user", "delete", "bob")
		e.fails(t, exitUsage, []string{"unknown global permission \"fly\""}, "user", "create", "carol", "secret", "-g", "fly")
		e.fails(t, exitUsage, []string{"invalid user status \"sleepy\""}, "user", "create", "carol", "secret", "-u", "sleepy")
		e.fails(t, exitUsage, []string{"accepts 2 arg(s), received 1"}, "user", "name", "carol")
	})

	t.Run("personal access tokens", func(t *testing.T) {
		h := e.withHome(t)
		out := h.ok(t, "pat", "create", "ci", "30days")
		mustContain(t, out, "Executing create personal access token with name: ci and expiry: 30days", "Personal access token with name: ci created\nToken: ")
		tok := strings.TrimSpace(out[strings.Index(out, "Token: ")+len("Token: "):])
		// Quiet: the token alone, for TOKEN=$(iggo -q pat create ...).
		quiet := strings.TrimSpace(h.ok(t, "-q", "pat", "create", "ci-quiet", "1h"))
		if strings.ContainsAny(quiet, " \n") || len(quiet) < 40 {
			t.Fatalf("quiet pat create = %q", quiet)
		}
		for _, tk := range []string{tok, quiet} {
			if r := h.run(t, "-t", tk, "me"); r.code != exitOK || cell(t, r.out, "User ID") != "0" {
				t.Fatalf("login with -t:\n%v", r)
			}
		}
		pats := rows(h.ok(t, "pat", "list", "-l", "list"))
		names := map[string]string{}
		for _, p := range pats {
			names[p[0]] = p[1]
		}
		if _, ok := names["ci"]; !ok || len(names) < 2 {
			t.Fatalf("pat list: %v", pats)
		}
		if exp, err := time.Parse("2006-01-02 15:04:05", names["ci"]); err != nil || exp.Before(time.Now().Add(29*24*time.Hour)) {
			t.Fatalf("ci expiry %q: want about 30 days from now", names["ci"])
		}
		mustContain(t, h.ok(t, "pat", "delete", "ci"), "Personal access token with name: ci deleted")
		expectFailure(t, h.run(t, "-t", tok, "me"), exitServer, "the personal access token is invalid or expired (Iggy error 53 InvalidPersonalAccessToken)")
		expectFailure(t, h.run(t, "-t", "garbage", "me"), exitServer, "the personal access token is invalid or expired")
		h.ok(t, "pat", "delete", "ci-quiet")

		out = h.ok(t, "pat", "create", "laptop", "--store-token")
		mustContain(t, out, "Personal access token with name: laptop created and stored; use it with -n laptop")
		mustNotContain(t, out, "Token:")
		if r := h.run(t, "-n", "laptop", "me"); r.code != exitOK || cell(t, r.out, "User ID") != "0" {
			t.Fatalf("login with -n:\n%v", r)
		}
		expectFailure(t, h.run(t, "-n", "desktop", "me"), exitUsage, "no token named \"desktop\" is stored for "+srv.Addr)
		h.fails(t, exitServer, []string{"personal access token 'laptop' already exists (Iggy error 51"}, "pat", "create", "laptop")
		h.fails(t, exitServer, []string{"personal access token 'nope' not found", "`iggo pat list`"}, "pat", "delete", "nope")
		h.ok(t, "pat", "delete", "laptop")
		// Deleting a stored token forgets it locally too.
		expectFailure(t, h.run(t, "-n", "laptop", "me"), exitUsage, "no token named \"laptop\" is stored")
		h.fails(t, exitUsage, []string{"requires at least 1 arg(s), only received 0"}, "pat", "create")
	})

	t.Run("clients and me", func(t *testing.T) {
		// A connection that stays open while the CLI looks at it.
		c := srv.Root(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		me, err := c.GetMe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatUint(uint64(me.ClientID), 10)
		list := rows(e.ok(t, "client", "list", "-l", "list"))
		found := false
		for _, r := range list {
			if r[0] == id {
				found = r[1] == "0" && r[3] == "TCP"
			}
		}
		if !found || len(list) < 2 {
			t.Fatalf("client list lacks client %s (user 0, TCP): %v", id, list)
		}
		get := e.ok(t, "client", "get", id)
		if cell(t, get, "Client ID") != id || cell(t, get, "Transport") != "TCP" || cell(t, get, "User ID") != "0" {
			t.Fatalf("client get %s:\n%s", id, get)
		}
		if host, _, err := net.SplitHostPort(cell(t, get, "Address")); err != nil || host != "127.0.0.1" {
			t.Fatalf("client address:\n%s", get)
		}
		e.fails(t, exitServer, []string{"client 4000000 not found (Iggy error 100 ClientNotFound)", "`iggo client list`"}, "client", "get", "4000000")
		e.fails(t, exitUsage, []string{"invalid client id \"abc\""}, "client", "get", "abc")
		out := e.ok(t, "me")
		if cell(t, out, "User ID") != "0" || cell(t, out, "Transport") != "TCP" || cell(t, out, "Client ID") == id {
			t.Fatalf("me:\n%s", out)
		}
	})

	t.Run("stats", func(t *testing.T) {
		e.ok(t, "stream", "create", "cli-stats")
		e.ok(t, "topic", "create", "cli-stats", "t", "2", "none")
		e.ok(t, "message", "send", "cli-stats", "t", "-p", "0", "x", "y")
		var s map[string]any
		raw := e.ok(t, "-q", "stats", "-o", "json")
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatalf("stats -o json: %v\n%s", err, raw)
		}
		num := func(k string) float64 {
			v, ok := s[k].(float64)
			if !ok {
				t.Fatalf("stats %s = %v", k, s[k])
			}
			return v
		}
		if s["iggy_server_version"] != "0.9.0-iggo" || s["os_name"] != "Linux" {
			t.Fatalf("stats identity: %v", s)
		}
		// The server has been busy (boot, logins, sends): its first reading
		// averages since start, so it is not zero.
		if num("cpu_usage") <= 0 || num("total_cpu_usage") <= 0 || num("total_cpu_usage") > 100 {
			t.Fatalf("CPU usage %v %%, total %v %%", s["cpu_usage"], s["total_cpu_usage"])
		}
		if num("streams_count") < 1 || num("partitions_count") < 2 || num("messages_count") < 2 || num("memory_usage") <= 0 ||
			num("total_memory") < num("available_memory") || num("threads_count") < 2 || num("process_id") <= 0 || num("run_time") < 0 {
			t.Fatalf("stats figures: %v", s)
		}
		table := e.ok(t, "stats")
		if cell(t, table, "Iggy Server Version") != "0.9.0-iggo" || !strings.HasSuffix(cell(t, table, "Iggy Server CPU Usage"), " %") {
			t.Fatalf("stats table:\n%s", table)
		}
		mustContain(t, table, "| Server property ", "| Streams Count ", "| Message Count ", "| Kernel Version ")
		mustContain(t, e.ok(t, "stats", "-o", "list"), "Iggy Server PID|", "Streams Count|")
		mustContain(t, e.ok(t, "stats", "-o", "toml"), "iggy_server_version = '0.9.0-iggo'", "streams_count = ")
		e.fails(t, exitUsage, []string{"invalid output format \"yaml\""}, "stats", "-o", "yaml")
	})

	t.Run("ping", func(t *testing.T) {
		// No credentials needed.
		r := e.run(t, "ping", "-c", "3", "-i", "10ms")
		if r.code != exitOK || r.err != "" || strings.Count(r.out, "Ping time: ") != 3 {
			t.Fatalf("ping:\n%v", r)
		}
		mustContain(t, r.out, "Ping statistics for "+srv.Addr+": 3 pings, min/avg/max = ")
	})

	t.Run("snapshot", func(t *testing.T) {
		dir := t.TempDir()
		out := e.ok(t, "snapshot", "-c", "stored", "-s", "server_config,resource_usage", "-o", dir)
		mustContain(t, out, "Executing snapshot with compression: stored", "Snapshot stored in "+dir)
		dir2 := t.TempDir()
		e.ok(t, "snapshot", "-o", dir2)
		for _, d := range []string{dir, dir2} {
			files, _ := filepath.Glob(filepath.Join(d, "snapshot_*.zip"))
			if len(files) != 1 {
				t.Fatalf("snapshot files in %s: %v", d, files)
			}
			zr, err := zip.OpenReader(files[0])
			if err != nil {
				t.Fatalf("snapshot is not a zip: %v", err)
			}
			if len(zr.File) == 0 {
				t.Fatal("empty snapshot")
			}
			zr.Close()
		}
		e.fails(t, exitUsage, []string{"invalid snapshot type \"everything\""}, "snapshot", "-s", "everything")
		e.fails(t, exitUsage, []string{"invalid compression \"rar\""}, "snapshot", "-c", "rar")
	})

	t.Run("cluster metadata", func(t *testing.T) {
		out := e.ok(t, "cluster", "metadata")
		mustContain(t, out, "Cluster name: ", "| Role ", "| leader ", "| healthy ")
		_, port, _ := net.SplitHostPort(srv.Addr)
		nodes := rows(e.ok(t, "-q", "cl", "m", "-l", "list"))
		if len(nodes) != 1 || nodes[0][1] != "127.0.0.1" || nodes[0][2] != port || nodes[0][6] != "leader" || nodes[0][7] != "healthy" {
			t.Fatalf("cluster metadata -l list: %v", nodes)
		}
	})

	t.Run("options", func(t *testing.T) {
		out := e.ok(t, "options", "topic")
		mustContain(t, out, "| durability ", "| replicated ", "| consumer_offset_durability ", "| segment_size ", "| 1073741824 ", "| message_expiry ", "| unlimited ")
		mustContain(t, e.ok(t, "options", "stream"), "The server accepts no stream options.")
		mustContain(t, e.ok(t, "options", "user"), "The server accepts no user options.")
		e.fails(t, exitUsage, []string{"invalid scope \"queue\": want topic, stream or user"}, "options", "queue")
	})

	t.Run("contexts", func(t *testing.T) {
		h := e.withHome(t)
		r := h.exec(t, "", "context", "create", "local", "--tcp-server-address", srv.Addr, "-u", "iggy", "-p", "iggy")
		mustContain(t, r.out, "Context local created")
		expectFailure(t, h.exec(t, "", "context", "create", "local"), exitUsage, "context \"local\" already exists")
		if r := h.exec(t, "", "--context", "local", "stream", "list"); r.code != exitOK || r.err != "" {
			t.Fatalf("--context:\n%v", r)
		}
		// Without the context the default address has no server here, or
		// a different one; either way this context is not used.
		mustContain(t, h.exec(t, "", "context", "use", "local").out, "Context local is now active")
		mustContain(t, h.exec(t, "", "context", "list", "-l", "list").out, "default||127.0.0.1:8090\n", "local|*|"+srv.Addr+"\n")
		if r := h.exec(t, "", "stream", "create", "cli-ctx"); r.code != exitOK || r.err != "" {
			t.Fatalf("command through the active context:\n%v", r)
		}
		e.ok(t, "stream", "get", "cli-ctx")
		show := h.exec(t, "", "context", "show").out
		mustContain(t, show, "| tcp_server_address ", srv.Addr, "| password           | ******** ")
		expectFailure(t, h.exec(t, "", "context", "use", "nope"), exitUsage, "context \"nope\" does not exist", "`iggo context create nope`")
		expectFailure(t, h.exec(t, "", "--context", "nope", "stream", "list"), exitUsage, "context \"nope\" does not exist")
		h.exec(t, "", "context", "use", "default")
		mustContain(t, h.exec(t, "", "context", "delete", "local").out, "Context local deleted")
		expectFailure(t, h.exec(t, "", "context", "delete", "local"), exitUsage, "context \"local\" does not exist")
		mustContain(t, h.exec(t, "", "context", "list", "-l", "list").out, "default|*|127.0.0.1:8090")
	})

	t.Run("login logout session", func(t *testing.T) {
		h := e.withHome(t)
		mustContain(t, h.run(t, "session", "status").out, "No active login session for iggo server "+srv.Addr)
		out := h.ok(t, "login", "1h")
		mustContain(t, out, "Successfully logged into iggo server "+srv.Addr+" (session expires: in 1h)")
		mustContain(t, h.run(t, "session", "status").out, "Active login session for iggo server "+srv.Addr)
		// Later commands need no credentials.
		if r := h.run(t, "me"); r.code != exitOK || r.err != "" || cell(t, r.out, "User ID") != "0" {
			t.Fatalf("command with the session:\n%v", r)
		}
		// The session is a PAT on the server.
		mustContain(t, h.run(t, "pat", "list", "-l", "list").out, "iggo-cli-session|")
		mustContain(t, h.run(t, "login").out, "Already logged into iggo server "+srv.Addr)
		mustContain(t, h.run(t, "logout").out, "Successfully logged out from iggo server "+srv.Addr)
		mustNotContain(t, e.ok(t, "pat", "list", "-l", "list"), "iggo-cli-session|")
		mustContain(t, h.run(t, "session", "status").out, "No active login session")
		expectFailure(t, h.run(t, "me"), exitUsage, "no credentials", "`iggo login`")
		mustContain(t, h.run(t, "logout").out, "Not logged into iggo server "+srv.Addr)
		expectFailure(t, h.run(t, "-u", "iggy", "-p", "wrong", "login"), exitServer, "invalid username or password (Iggy error 42 InvalidCredentials)")
		mustContain(t, h.run(t, "session", "status").out, "No active login session")
	})

	t.Run("credentials and connection errors", func(t *testing.T) {
		h := e.withHome(t)
		expectFailure(t, h.run(t, "stream", "list"), exitUsage, "no credentials; pass -u USER -p PASSWORD or -t TOKEN")
		expectFailure(t, h.run(t, "-u", "iggy", "-p", "wrong", "stream", "list"), exitServer,
			"invalid username or password (Iggy error 42 InvalidCredentials) [session ended: InvalidCredentials]")
		expectFailure(t, h.run(t, "-u", "nobody", "-p", "whatever", "stream", "list"), exitServer, "invalid username or password")
		expectFailure(t, h.runIn(t, "", "-u", "iggy", "stream", "list"), exitUsage, "password missing")
		h.env = []string{"IGGY_USERNAME=iggy", "IGGY_PASSWORD=iggy"}
		if r := h.run(t, "stream", "list"); r.code != exitOK || r.err != "" {
			t.Fatalf("IGGY_USERNAME/IGGY_PASSWORD:\n%v", r)
		}
		h.env = nil
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dead := ln.Addr().String()
		ln.Close()
		expectFailure(t, h.exec(t, "", "--tcp-server-address", dead, "-u", "iggy", "-p", "iggy", "stream", "list"), exitConnection,
			"cannot connect to "+dead+": connection refused; is the server running?")
		expectFailure(t, h.exec(t, "", "--tcp-server-address", dead, "ping"), exitConnection, "connection refused")
		expectFailure(t, h.run(t, "--timeout", "0s", "-u", "iggy", "-p", "iggy", "stream", "list"), exitUsage, "--timeout must be positive")
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, c := range []struct {
			args  []string
			parts []string
		}{
			{[]string{"nosuch"}, []string{"unknown command \"nosuch\" for \"iggo\""}},
			{[]string{"stream", "list", "--bogus"}, []string{"unknown flag: --bogus", "Run 'iggo stream list --help'"}},
			{[]string{"stream", "get"}, []string{"accepts 1 arg(s), received 0"}},
			{[]string{"topic", "get", "s"}, []string{"accepts 2 arg(s), received 1"}},
			{[]string{"message", "send", "s"}, []string{"requires at least 2 arg(s)"}},
			{[]string{"ping", "-c", "many"}, []string{"invalid argument \"many\""}},
			{[]string{"--bogus", "stream", "list"}, []string{"unknown flag: --bogus"}},
			{[]string{"stream", "create", "a", "b"}, []string{"accepts 1 arg(s), received 2"}},
		} {
			r := e.root(t, c.args...)
			expectFailure(t, r, exitUsage, c.parts...)
		}
	})

	t.Run("quiet and version", func(t *testing.T) {
		if r := e.root(t, "-q", "stream", "create", "cli-quiet"); r.code != exitOK || r.out != "" || r.err != "" {
			t.Fatalf("quiet create:\n%v", r)
		}
		if r := e.root(t, "-q", "stream", "get", "cli-quiet"); r.code != exitOK || !strings.Contains(r.out, "| cli-quiet ") || r.err != "" {
			t.Fatalf("quiet keeps data:\n%v", r)
		}
		r := e.exec(t, "", "--version")
		if r.code != exitOK || !strings.HasPrefix(r.out, "iggo 0.9.0-iggo (commit ") || !strings.HasSuffix(r.out, "; protocol 0.11)\n") {
			t.Fatalf("--version:\n%v", r)
		}
		r = e.exec(t, "", "--help")
		mustContain(t, r.out, "stream", "consumer-group", "bench", "login")
	})
}
