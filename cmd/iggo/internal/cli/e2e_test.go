package cli

import (
	"archive/zip"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/wire"
)

func TestStreamAndTopicLifecycle(t *testing.T) {
	h := newHarness(t)
	out := h.ok("stream", "create", "prod")
	mustContain(t, out, "Stream with name: prod and ID: 0 created")
	h.ok("s", "c", "dev")
	list := h.ok("stream", "list", "-l", "list")
	lines := strings.Split(strings.TrimSpace(list), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "0|") || !strings.Contains(lines[0], "|prod|0|0|0") || !strings.Contains(lines[1], "|dev|") {
		t.Fatalf("stream list -l list:\n%s", list)
	}
	// Ids and names are interchangeable.
	mustContain(t, h.ok("stream", "get", "1"), "| Stream name ", "dev")
	h.ok("stream", "update", "dev", "staging")
	mustContain(t, h.ok("stream", "get", "staging"), "| Stream ID ", "| 1 ")

	h.ok("topic", "create", "prod", "orders", "3", "none", "15days", "-m", "2GB", "--durability", "persisted", "--set", "segment_size=128MiB")
	opts, ok := h.srv.TopicOptions("prod", "orders")
	if !ok {
		t.Fatal("topic not created")
	}
	for key, want := range map[string]string{"durability": "persisted", "compression_algorithm": "none"} {
		v, ok := opts.Get(key)
		if s, _ := v.AsString(); !ok || s != want {
			t.Errorf("topic option %s = %q, want %q", key, s, want)
		}
	}
	if v, ok := opts.Get(wire.OptMaxTopicSize); !ok {
		t.Error("max_topic_size not sent")
	} else if n, _ := v.AsUint64(); n != 2_000_000_000 {
		t.Errorf("max_topic_size = %d", n)
	}
	if v, ok := opts.Get(wire.OptMessageExpiry); !ok {
		t.Error("message_expiry not sent")
	} else if n, _ := v.AsUint64(); n != 15*86400*1_000_000 {
		t.Errorf("message_expiry = %d", n)
	}
	if v, ok := opts.Get(wire.OptSegmentSize); !ok {
		t.Error("segment_size not sent")
	} else if n, _ := v.AsUint64(); n != 128<<20 {
		t.Errorf("segment_size = %d", n)
	}
	topics := h.ok("topic", "list", "prod")
	mustContain(t, topics, "| orders ", "| 2000000000 ", "| 15days ", "| 3 ")
	get := h.ok("topic", "get", "0", "orders")
	mustContain(t, get, "| Partitions count    | 3 ", "durability=persisted", "| Partition |", "| 2         |")
	h.ok("partition", "create", "prod", "orders", "2")
	mustContain(t, h.ok("t", "get", "prod", "orders"), "| Partitions count    | 5 ")
	h.ok("p", "d", "prod", "orders", "4")
	mustContain(t, h.ok("t", "get", "prod", "orders"), "| Partitions count    | 1 ")
	h.ok("topic", "update", "prod", "orders", "orders-v2", "gzip", "unlimited")
	mustContain(t, h.ok("topic", "get", "prod", "orders-v2"), "| Compression         | gzip ", "| Message expiry      | unlimited ")
	h.ok("segment", "delete", "prod", "orders-v2", "0", "1")
	h.ok("topic", "purge", "prod", "orders-v2")
	h.ok("stream", "purge", "prod")
	h.ok("topic", "delete", "prod", "orders-v2")
	if out := h.runAs("-q", "topic", "list", "prod"); out.code != 0 || out.out != "" {
		t.Fatalf("quiet empty topic list: %v", out)
	}
	h.ok("stream", "delete", "prod")
	h.ok("stream", "delete", "1")
	if names := h.srv.StreamNames(); len(names) != 0 {
		t.Fatalf("streams left: %v", names)
	}
	mustContain(t, h.ok("stream", "list"), "No streams found!")
}

func TestServerErrorsAreFriendly(t *testing.T) {
	h := newHarness(t)
	h.fails(ExitServer, []string{"stream 'nope' not found (Iggy error 1009 StreamIdNotFound); list streams with `iggo stream list`"}, "stream", "get", "nope")
	h.fails(ExitServer, []string{"stream 'nope' not found"}, "topic", "list", "nope")
	h.ok("stream", "create", "prod")
	h.fails(ExitServer, []string{"stream 'prod' already exists", "1012 StreamNameAlreadyExists"}, "stream", "create", "prod")
	h.fails(ExitServer, []string{"topic 'x' not found in stream 'prod'", "`iggo topic list prod`"}, "topic", "get", "prod", "x")
	h.ok("topic", "create", "prod", "t", "1", "none")
	h.fails(ExitServer, []string{"partition 7 not found in topic 't' in stream 'prod'"}, "message", "send", "prod", "t", "-p", "7", "hi")
	h.fails(ExitServer, []string{"unsupported topic option key among compression_algorithm=none, bogus=1", "`iggo options topic`"}, "topic", "create", "prod", "u", "1", "none", "--set", "bogus=1")
	h.fails(ExitServer, []string{"consumer group 'g' not found in topic 't' in stream 'prod'"}, "consumer-group", "get", "prod", "t", "g")
	h.fails(ExitServer, []string{"user 'bob' not found", "`iggo user list`"}, "user", "delete", "bob")
	h.fails(ExitServer, []string{"the server does not flush on request", "Iggy error 5 FeatureUnavailable", "durability"}, "message", "flush", "prod", "t", "0")
	// Server denials injected by a hook map the same way.
	h.srv.SetHook(func(hd wire.RequestHeader, req wire.Request) ([]byte, bool) {
		if _, ok := req.(*wire.GetStreams); ok {
			return wire.AppendStatusReply(nil, &hd, wire.CodeUnauthorized), true
		}
		return nil, false
	})
	h.fails(ExitServer, []string{"permission denied (Iggy error 41 Unauthorized)"}, "stream", "list")
}

func TestUsageErrors(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		args  []string
		parts []string
	}{
		{[]string{"stream", "create"}, []string{"accepts 1 arg(s)", "Run 'iggo stream create --help'"}},
		{[]string{"stream", "list", "--bogus"}, []string{"unknown flag: --bogus"}},
		{[]string{"stream", "list", "-l", "json"}, []string{"invalid list mode"}},
		{[]string{"nosuch"}, []string{"unknown command"}},
		{[]string{"topic", "create", "s", "t", "x", "none"}, []string{"invalid partition count"}},
		{[]string{"topic", "create", "s", "t", "1", "brotli"}, []string{"invalid compression"}},
		{[]string{"topic", "create", "s", "t", "1", "none", "--durability", "eventually"}, []string{"invalid durability"}},
		{[]string{"message", "poll", "s", "t", "0"}, []string{"exactly one of --offset N, --first, --last or --next"}},
		{[]string{"message", "poll", "-f", "-l", "s", "t", "0"}, []string{"exactly one of"}},
		{[]string{"message", "send", "s", "t", "-p", "1", "-m", "k", "x"}, []string{"either -p/--partition-id or -m/--message-key"}},
		{[]string{"message", "send", "s", "t", "-H", "bad", "x"}, []string{"invalid header \"bad\"", "key:kind:value"}},
		{[]string{"user", "create", "a", "b", "-g", "fly"}, []string{"unknown global permission"}},
		{[]string{"user", "create", "a", "b", "-u", "sleepy"}, []string{"invalid user status"}},
		{[]string{"stats", "-o", "yaml"}, []string{"invalid output format"}},
		{[]string{"consumer-offset", "get", "c", "s", "t", "0", "-k", "team"}, []string{"invalid --kind"}},
		{[]string{"--timeout", "0s", "stream", "list"}, []string{"--timeout must be positive"}},
	}
	for _, c := range cases {
		r := h.runAs(c.args...)
		h.expectFailure(r, ExitUsage, c.parts...)
		if r.out != "" && !strings.HasPrefix(r.out, "Executing") {
			t.Errorf("%v: unexpected stdout %q", c.args, r.out)
		}
	}
}

func TestCredentials(t *testing.T) {
	h := newHarness(t)
	// None at all.
	r := h.run("stream", "list")
	h.expectFailure(r, ExitUsage, "no credentials", "IGGY_USERNAME")
	// Wrong password: the server's eviction, mapped.
	r = h.run("-u", "iggy", "-p", "wrong", "stream", "list")
	h.expectFailure(r, ExitServer, "invalid username or password", "42 InvalidCredentials")
	// Environment variables.
	h.env["IGGY_USERNAME"], h.env["IGGY_PASSWORD"] = "iggy", "iggy"
	if r := h.run("stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("env credentials: %v", r)
	}
	delete(h.env, "IGGY_USERNAME")
	delete(h.env, "IGGY_PASSWORD")
	// Password read from stdin when -p is missing.
	if r := h.runIn("iggy\n", "--tcp-server-address", h.srv.Addr(), "-u", "iggy", "stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("password from stdin: %v", r)
	}
	r = h.runIn("", "--tcp-server-address", h.srv.Addr(), "-u", "iggy", "stream", "list")
	h.expectFailure(r, ExitUsage, "password missing")
	// Ping needs no login.
	r = h.run("ping", "-c", "2", "-i", "1ms")
	if r.code != 0 || strings.Count(r.out, "Ping time:") != 2 || !strings.Contains(r.out, "min/avg/max") {
		t.Fatalf("ping: %v", r)
	}
}

func TestConnectionRefused(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := h.runIn("", "--tcp-server-address", addr, "-u", "iggy", "-p", "iggy", "stream", "list")
	h.expectFailure(r, ExitConnection, "cannot connect to "+addr, "connection refused", "is the server running?")
}

func TestMessagesSendPollReplay(t *testing.T) {
	h := newHarness(t)
	h.ok("stream", "create", "s")
	h.ok("topic", "create", "s", "t", "2", "none")
	out := h.ok("message", "send", "s", "t", "-p", "0", "hello", "world")
	mustContain(t, out, "Sent 2 messages", "partition 0 offsets 0..1")
	out = h.okIn("line one\n\nline two\r\n", "message", "send", "s", "t", "-p", "0", "-H", "src:string:stdin,n:uint32:7")
	mustContain(t, out, "Sent 2 messages", "partition 0 offsets 2..3")
	// A key always lands on the same partition.
	h.ok("topic", "create", "s", "keyed", "4", "none")
	want := wire.PartitionForKey([]byte("user-42"), 4)
	for range 3 {
		h.ok("message", "send", "s", "keyed", "-m", "user-42", "k")
	}
	if n := h.srv.MessageCount("s", "keyed", want); n != 3 {
		t.Fatalf("partition %d holds %d messages for the key, want 3", want, n)
	}
	// Without -p or -m sends go round robin.
	for range 4 {
		h.ok("message", "send", "s", "keyed", "rr")
	}
	for p := uint32(0); p < 4; p++ {
		extra := uint64(0)
		if p == want {
			extra = 3
		}
		if n := h.srv.MessageCount("s", "keyed", p); n != 1+extra {
			t.Fatalf("round robin: partition %d holds %d", p, n)
		}
	}

	poll := h.ok("message", "poll", "-f", "-m", "10", "-s", "s", "t", "0")
	mustContain(t, poll, "Polled 4 messages", "| hello ", "| world ", "| line one ", "| line two ", "Header: src", "| stdin ", "| 7 ")
	poll = h.ok("-q", "message", "poll", "-o", "1", "-m", "2", "--format", "payload", "s", "t", "0")
	if poll != "world\nline one\n" {
		t.Fatalf("payload format = %q", poll)
	}
	poll = h.ok("-q", "message", "poll", "-l", "-m", "1", "--hex", "--format", "list", "s", "t", "0")
	if !strings.HasPrefix(poll, "3|") || !strings.HasSuffix(poll, "|8|6c696e652074776f\n") {
		t.Fatalf("hex list = %q", poll)
	}
	// Auto-commit then --next continues after the stored offset.
	h.ok("message", "poll", "-f", "-m", "2", "-a", "-c", "reader", "s", "t", "0")
	mustContain(t, h.ok("consumer-offset", "get", "reader", "s", "t", "0"), "| Stored offset   | 1 ", "| Left to process | 2 ")
	poll = h.ok("-q", "message", "poll", "-n", "-m", "10", "-c", "reader", "--format", "payload", "s", "t", "0")
	if poll != "line one\nline two\n" {
		t.Fatalf("next after commit = %q", poll)
	}

	// Replay into another topic through a file.
	file := filepath.Join(t.TempDir(), "msgs.bin")
	out = h.ok("message", "poll", "-f", "-m", "10", "--output-file", file, "s", "t", "0")
	mustContain(t, out, "Stored 4 messages", file)
	h.ok("topic", "create", "s", "copy", "1", "none")
	mustContain(t, h.ok("message", "send", "s", "copy", "--input-file", file), "Sent 4 messages")
	poll = h.ok("-q", "message", "poll", "-f", "-m", "10", "-s", "s", "copy", "0")
	mustContain(t, poll, "| hello ", "| line two ", "| stdin ")

	// Usage problems with input.
	r := h.runIn("", "--tcp-server-address", h.srv.Addr(), "-u", "iggy", "-p", "iggy", "message", "send", "s", "t")
	h.expectFailure(r, ExitUsage, "no messages to send")
	if err := os.WriteFile(file, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.fails(ExitLocal, []string{"is not a message file"}, "message", "send", "s", "copy", "--input-file", file)
	h.fails(ExitLocal, []string{"read --input-file"}, "message", "send", "s", "copy", "--input-file", file+".missing")
}

func TestGroupsOffsetsUsersTokens(t *testing.T) {
	h := newHarness(t)
	h.ok("stream", "create", "s")
	h.ok("topic", "create", "s", "t", "3", "none")
	mustContain(t, h.ok("consumer-group", "create", "s", "t", "billing"), "Consumer group with name: billing and ID: 0 created")
	mustContain(t, h.ok("g", "list", "s", "t"), "| billing ", "| 3 ")
	mustContain(t, h.ok("g", "get", "s", "t", "0"), "| Consumer group name | billing ")
	h.fails(ExitServer, []string{"consumer group 'billing' already exists"}, "g", "create", "s", "t", "billing")
	h.ok("g", "delete", "s", "t", "billing")

	h.ok("message", "send", "s", "t", "-p", "1", "a", "b", "c")
	h.ok("consumer-offset", "set", "c1", "s", "t", "1", "1")
	mustContain(t, h.ok("o", "get", "c1", "s", "t", "1"), "| Stored offset   | 1 ", "| Current offset  | 2 ")
	h.fails(ExitServer, []string{"offset 9 is beyond", "4100 InvalidOffset"}, "o", "set", "c1", "s", "t", "1", "9")
	mustContain(t, h.ok("o", "get", "nobody", "s", "t", "1"), "No offset stored for consumer 'nobody'")
	h.ok("o", "delete", "c1", "s", "t", "1")
	h.fails(ExitServer, []string{"no offset stored for consumer 'c1'"}, "o", "delete", "c1", "s", "t", "1")

	h.ok("user", "create", "alice", "pw", "-g", "r_srv,p_msg", "-s", "0:r_str#0:s_msg")
	get := h.ok("user", "get", "alice")
	mustContain(t, get, "| Username    | alice ", "global: r_srv,p_msg", "stream 0 topic 0: s_msg")
	h.ok("user", "name", "alice", "alicia")
	h.ok("user", "status", "alicia", "inactive")
	mustContain(t, h.ok("user", "list"), "| inactive | alicia ")
	r := h.runIn("", "--tcp-server-address", h.srv.Addr(), "-u", "alicia", "-p", "pw", "stream", "list")
	h.expectFailure(r, ExitServer, "the user is inactive")
	h.ok("user", "status", "alicia", "active")
	h.ok("user", "password", "alicia", "pw", "pw2")
	if r := h.runIn("", "--tcp-server-address", h.srv.Addr(), "-u", "alicia", "-p", "pw2", "stream", "list"); r.code != 0 {
		t.Fatalf("login with new password: %v", r)
	}
	h.okIn("pw2\npw3\n", "user", "password", "alicia")
	h.ok("permissions", "alicia", "-g", "m_srv")
	mustContain(t, h.ok("user", "get", "alicia"), "global: m_srv")
	h.ok("user", "permissions", "alicia")
	mustContain(t, h.ok("user", "get", "alicia"), "| Permissions | none ")
	h.ok("user", "delete", "alicia")

	out := h.ok("pat", "create", "ci", "30days")
	tok := strings.TrimSpace(out[strings.Index(out, "Token: ")+len("Token: "):])
	if len(tok) < 16 {
		t.Fatalf("token output: %q", out)
	}
	if r := h.run("-t", tok, "stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("login with token: %v", r)
	}
	mustContain(t, h.ok("pat", "list"), "| ci ")
	h.ok("pat", "delete", "ci")
	h.expectFailure(h.run("-t", tok, "stream", "list"), ExitServer, "personal access token is invalid or expired")
	out = h.ok("pat", "create", "laptop", "--store-token")
	mustContain(t, out, "stored; use it with -n laptop")
	if strings.Contains(out, "Token:") {
		t.Fatalf("stored token printed: %s", out)
	}
	if r := h.run("-n", "laptop", "stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("login with stored token: %v", r)
	}
	h.expectFailure(h.run("-n", "desktop", "stream", "list"), ExitUsage, "no token named \"desktop\"")
}

func TestSystemCommands(t *testing.T) {
	h := newHarness(t)
	h.ok("stream", "create", "s")
	var stats map[string]any
	if err := json.Unmarshal([]byte(h.ok("-q", "stats", "-o", "json")), &stats); err != nil {
		t.Fatal(err)
	}
	if stats["streams_count"] != float64(1) || stats["iggy_server_version"] != "fakeserver" {
		t.Fatalf("stats = %v", stats)
	}
	mustContain(t, h.ok("stats"), "| Streams Count ", "| OS Name ")
	mustContain(t, h.ok("stats", "-o", "toml"), "streams_count = 1")
	mustContain(t, h.ok("me"), "| Transport ", "| TCP ")
	mustContain(t, h.ok("client", "list"), "| Client ID ", "| TCP ")
	h.fails(ExitServer, []string{"client 99999 not found"}, "client", "get", "99999")
	mustContain(t, h.ok("cluster", "metadata"), "Cluster name: fake-cluster", "| leader ", "| healthy ")
	mustContain(t, h.ok("cl", "m", "-l", "list"), "fake-node-0|127.0.0.1|")
	mustContain(t, h.ok("options", "topic"), "| segment_size ", "| uint64 ", "| 1073741824 ", "| message_expiry ", "| unlimited ")
	mustContain(t, h.ok("options", "user"), "accepts no user options")
	dir := t.TempDir()
	mustContain(t, h.ok("snapshot", "-c", "stored", "-s", "server_logs,server_config", "-o", dir), "Snapshot stored in "+dir)
	files, _ := filepath.Glob(filepath.Join(dir, "snapshot_*.zip"))
	if len(files) != 1 {
		t.Fatalf("snapshot files: %v", files)
	}
	zr, err := zip.OpenReader(files[0])
	if err != nil {
		t.Fatalf("snapshot is not a zip: %v", err)
	}
	zr.Close()
	h.fails(ExitUsage, []string{"invalid snapshot type"}, "snapshot", "-s", "everything")

	// -d writes the client's debug log to a file, not to the terminal.
	logFile := filepath.Join(t.TempDir(), "debug.log")
	if r := h.runAs("-d", logFile, "stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("debug run: %v", r)
	}
	b, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(b), "logged in") {
		t.Fatalf("debug log: %q %v", b, err)
	}
}

func TestContextsAndSessions(t *testing.T) {
	h := newHarness(t)
	// A context supplies address and credentials.
	mustContain(t, h.runIn("", "context", "create", "fake", "--tcp-server-address", h.srv.Addr(), "-u", "iggy", "-p", "iggy").out, "Context fake created")
	h.expectFailure(h.runIn("", "context", "create", "fake"), ExitUsage, "already exists")
	if r := h.runIn("", "--context", "fake", "stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("--context: %v", r)
	}
	h.runIn("", "context", "use", "fake")
	list := h.runIn("", "context", "list", "-l", "list").out
	mustContain(t, list, "default||127.0.0.1:8090\n", "fake|*|"+h.srv.Addr()+"\n")
	if r := h.runIn("", "stream", "create", "via-context"); r.code != 0 || r.err != "" {
		t.Fatalf("active context: %v", r)
	}
	show := h.runIn("", "context", "show").out
	mustContain(t, show, "| tcp_server_address ", h.srv.Addr(), "| password           | ******** ")
	if strings.Contains(show, "| iggy ") && strings.Count(show, "iggy") > 1 {
		t.Fatalf("password shown: %s", show)
	}
	h.expectFailure(h.runIn("", "context", "use", "nope"), ExitUsage, "context \"nope\" does not exist")
	h.expectFailure(h.runIn("", "--context", "nope", "stream", "list"), ExitUsage, "context \"nope\" does not exist")
	h.runIn("", "context", "delete", "fake")
	mustContain(t, h.runIn("", "context", "list", "-l", "list").out, "default|*|")

	// Login keeps a session for the address; later commands need no credentials.
	out := h.ok("login", "1h")
	mustContain(t, out, "Successfully logged into iggo server "+h.srv.Addr(), "expires: in 1h")
	mustContain(t, h.run("session", "status").out, "Active login session")
	if r := h.run("stream", "list"); r.code != 0 || r.err != "" {
		t.Fatalf("session login: %v", r)
	}
	mustContain(t, h.run("login").out, "Already logged into iggo server")
	mustContain(t, h.run("logout").out, "Successfully logged out")
	mustContain(t, h.run("session", "status").out, "No active login session")
	h.expectFailure(h.run("stream", "list"), ExitUsage, "no credentials")
	mustContain(t, h.run("logout").out, "Not logged into")
}

func TestQuietAndNoStderrOnSuccess(t *testing.T) {
	h := newHarness(t)
	r := h.runAs("-q", "stream", "create", "s")
	if r.code != 0 || r.out != "" || r.err != "" {
		t.Fatalf("quiet create: %v", r)
	}
	r = h.runAs("-q", "stream", "list")
	if r.code != 0 || !strings.Contains(r.out, "| s ") || r.err != "" {
		t.Fatalf("quiet list keeps data: %v", r)
	}
}

func TestExtensions(t *testing.T) {
	h := newHarness(t)
	var sawAddr string
	h.exts = []Extension{
		{Parent: "cluster", New: func(env *Env) *cobra.Command {
			return &cobra.Command{Use: "status", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, args []string) error {
				cfg, err := env.ClientConfig(false)
				if err != nil {
					return err
				}
				sawAddr = cfg.Addresses[0]
				env.Statusf("cluster is fine")
				return nil
			}}
		}},
		{New: func(env *Env) *cobra.Command {
			return &cobra.Command{Use: "chaos", Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, args []string) error {
				return Usagef("chaos needs a scenario")
			}}
		}},
	}
	r := h.run("cluster", "status")
	if r.code != 0 || !strings.Contains(r.out, "cluster is fine") || sawAddr != h.srv.Addr() {
		t.Fatalf("cluster extension: %v (addr %q)", r, sawAddr)
	}
	mustContain(t, h.ok("cluster", "m"), "fake-node-0") // the built-in stays next to the extension
	h.expectFailure(h.run("chaos"), ExitUsage, "chaos needs a scenario")
	r = h.run("cluster", "--help")
	mustContain(t, r.out, "metadata", "status")
}

func TestCompletionScripts(t *testing.T) {
	h := newHarness(t)
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		r := h.runIn("", "completion", sh)
		if r.code != 0 || len(r.out) < 500 || !strings.Contains(r.out, "iggo") {
			t.Fatalf("completion %s: exit %d, %d bytes", sh, r.code, len(r.out))
		}
	}
}

func TestBenchCommand(t *testing.T) {
	h := newHarness(t)
	out := t.TempDir()
	r := h.run("bench", "pp", "-p", "2", "-b", "5", "-P", "10", "-m", "100", "-o", out, "--progress", "lines", "--progress-interval", "1ms", "-t", "1ms")
	if r.code != 0 || r.err != "" {
		t.Fatalf("bench pp: %v", r)
	}
	mustContain(t, r.out, "Running pinned-producer against "+h.srv.Addr(), "Benchmark: pinned-producer, 2 producers, 2 streams",
		"Producer #1 (bench-stream-1)", "Producers total:", "p99.9", "report.json", "throughput.png", "latency.png")
	reports, _ := filepath.Glob(filepath.Join(out, "pp_2p_0c_100b_10mpb_*", "report.json"))
	if len(reports) != 1 {
		t.Fatalf("reports: %v", reports)
	}
	b, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	cmd := rep["params"].(map[string]any)["bench_command"].(string)
	if !strings.HasPrefix(cmd, "iggo --tcp-server-address "+h.srv.Addr()+" bench pp -p 2") {
		t.Fatalf("recorded command %q", cmd)
	}
	if names := h.srv.StreamNames(); len(names) != 0 {
		t.Fatalf("bench left streams %v", names)
	}
	// Quiet: no progress and no status line, only the results.
	r = h.run("-q", "bench", "e2e", "-p", "1", "-b", "3", "-P", "5", "-m", "50", "--no-output")
	if r.code != 0 || strings.Contains(r.out, "Running") || strings.Contains(r.out, "[") || !strings.Contains(r.out, "Producing consumers total:") {
		t.Fatalf("quiet bench: %v", r)
	}
	// Parameter problems are usage errors.
	for _, c := range []struct {
		args []string
		part string
	}{
		{[]string{"bench", "pp", "-p", "3", "-s", "2", "--no-output"}, "needs a stream per producer"},
		{[]string{"bench", "pp", "-m", "0"}, "--message-size"},
		{[]string{"bench", "bp", "-T", "1GB", "-b", "10"}, "not both"},
		{[]string{"bench", "bcg", "-g", "3"}, "--consumer-groups must be"},
		{[]string{"bench", "pp", "--rate-limit", "fast"}, "--rate-limit"},
		{[]string{"bench", "pp", "--progress", "loud"}, "invalid --progress"},
		{[]string{"bench", "pp", "--consumers", "2"}, "unknown flag"},
	} {
		h.expectFailure(h.run(c.args...), ExitUsage, c.part)
	}
	// A server that refuses the login is a server error.
	h.expectFailure(h.run("-u", "iggy", "-p", "bad", "bench", "pp", "-p", "1", "-b", "1", "--no-output"), ExitServer, "invalid username or password")
}
