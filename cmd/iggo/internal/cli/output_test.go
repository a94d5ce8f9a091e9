package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

func TestTableRender(t *testing.T) {
	tb := Table{Header: []string{"ID", "Name"}}
	tb.Add("0", "prod")
	tb.Add("12", "ünï\nsecond")
	want := `+----+--------+
| ID | Name   |
+====+========+
| 0  | prod   |
+----+--------+
| 12 | ünï    |
|    | second |
+----+--------+
`
	var b bytes.Buffer
	if err := tb.Render(&b, ListTable); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := tb.Render(&b, ListList); err != nil {
		t.Fatal(err)
	}
	if b.String() != "0|prod\n12|ünï\nsecond\n" {
		t.Errorf("list = %q", b.String())
	}
}

func TestTableRaggedRows(t *testing.T) {
	tb := Table{Header: []string{"A"}}
	tb.Add("1", "extra")
	s := tb.String()
	mustContain(t, s, "| A | ", "| 1 | extra |")
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("ragged line %q in\n%s", l, s)
		}
	}
}

func TestParseModes(t *testing.T) {
	for _, s := range []string{"table", "LIST"} {
		if _, err := ParseListMode(s); err != nil {
			t.Errorf("ParseListMode(%q): %v", s, err)
		}
	}
	if _, err := ParseListMode("json"); err == nil {
		t.Error("list mode json accepted")
	}
	for _, s := range []string{"table", "list", "json", "TOML"} {
		if _, err := ParseOutputFormat(s); err != nil {
			t.Errorf("ParseOutputFormat(%q): %v", s, err)
		}
	}
	if _, err := ParseOutputFormat("yaml"); err == nil {
		t.Error("yaml accepted")
	}
}

func TestRenderPropertiesFormats(t *testing.T) {
	v := StatsView(wire.Stats{ProcessID: 7, StreamsCount: 2, MessagesCount: 99, Hostname: "h", StartTime: 1_000_000})
	var b bytes.Buffer
	if err := renderProperties(&b, OutJSON, [2]string{"k", "v"}, v.properties(), v); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(b.Bytes(), &j); err != nil {
		t.Fatalf("json output: %v\n%s", err, b.String())
	}
	if j["process_id"] != float64(7) || j["streams_count"] != float64(2) || j["messages_count"] != float64(99) || j["hostname"] != "h" {
		t.Errorf("json = %v", j)
	}
	b.Reset()
	if err := renderProperties(&b, OutTOML, [2]string{"k", "v"}, v.properties(), v); err != nil {
		t.Fatal(err)
	}
	var tm map[string]any
	if err := toml.Unmarshal(b.Bytes(), &tm); err != nil {
		t.Fatalf("toml output: %v\n%s", err, b.String())
	}
	if tm["messages_count"] != int64(99) || tm["start_time"] != "1970-01-01T00:00:01Z" {
		t.Errorf("toml = %v", tm)
	}
	b.Reset()
	if err := renderProperties(&b, OutList, [2]string{"k", "v"}, v.properties(), v); err != nil {
		t.Fatal(err)
	}
	mustContain(t, b.String(), "Iggy Server PID|7\n", "Streams Count|2\n", "Message Count|99\n")
	b.Reset()
	if err := renderProperties(&b, OutTable, [2]string{"Server property", "Value"}, v.properties(), v); err != nil {
		t.Fatal(err)
	}
	mustContain(t, b.String(), "| Server property ", "| Iggy Server PID ", "| 7 ")
}

func TestDescribe(t *testing.T) {
	refused := &client.ConnError{Addr: "127.0.0.1:1", Op: "dial", Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}
	tests := []struct {
		name  string
		err   error
		code  int
		parts []string
	}{
		{"usage", Usagef("bad %s", "thing"), ExitUsage, []string{"bad thing"}},
		{"usage hint", &UsageError{Msg: "no credentials", Hint: "pass -u"}, ExitUsage, []string{"no credentials; pass -u"}},
		{"local", localErr("write x: disk full"), ExitLocal, []string{"write x: disk full"}},
		{"stream missing", Subject{Stream: "'foo'"}.Wrap(wire.NewError(wire.CodeStreamIdNotFound)), ExitServer,
			[]string{"stream 'foo' not found (Iggy error 1009 StreamIdNotFound); list streams with `iggo stream list`"}},
		{"topic missing", Subject{Stream: "'s'", Topic: "'t'"}.Wrap(wire.NewError(wire.CodeTopicIdNotFound)), ExitServer,
			[]string{"topic 't' not found in stream 's'", "2010 TopicIdNotFound", "`iggo topic list s`"}},
		{"partition missing", Subject{Stream: "'s'", Topic: "0", Partition: "9"}.Wrap(wire.NewError(wire.CodePartitionNotFound)), ExitServer,
			[]string{"partition 9 not found in topic 0 in stream 's'", "`iggo topic get s 0`"}},
		{"group missing", Subject{Stream: "'s'", Topic: "'t'", Group: "'g'"}.Wrap(wire.NewError(wire.CodeConsumerGroupIdNotFound)), ExitServer,
			[]string{"consumer group 'g' not found", "`iggo consumer-group list s t`"}},
		{"user missing", Subject{User: "'bob'"}.Wrap(wire.NewError(wire.CodeResourceNotFound)), ExitServer, []string{"user 'bob' not found", "`iggo user list`"}},
		{"exists", Subject{Stream: "'prod'"}.Wrap(wire.NewError(wire.CodeStreamNameAlreadyExists)), ExitServer, []string{"stream 'prod' already exists", "1012"}},
		{"unauthenticated", wire.NewError(wire.CodeUnauthenticated), ExitServer, []string{"not authenticated", "IGGY_USERNAME", "`iggo login`"}},
		{"unauthorized", wire.NewError(wire.CodeUnauthorized), ExitServer, []string{"permission denied (Iggy error 41 Unauthorized)"}},
		{"bad password eviction", &wire.EvictionError{Reason: wire.EvictInvalidCredentials}, ExitServer, []string{"invalid username or password", "42 InvalidCredentials", "session ended"}},
		{"option", Subject{Option: "topic"}.Wrap(wire.NewError(wire.CodeUnsupportedOptionKey)), ExitServer, []string{"unsupported topic option key", "`iggo options topic`"}},
		{"field error", &wire.FieldError{Struct: "x", Field: "y", Offset: 3, Reason: "z"}, ExitServer, []string{"wire: x: y at offset 3: z", "Iggy error 3 InvalidCommand"}},
		{"request not encodable", &wire.FieldError{Struct: "create_stream request", Field: "name", Offset: -1, Reason: "name must be 1..255 bytes, got 0"}, ExitUsage,
			[]string{"invalid name: name must be 1..255 bytes, got 0; the request was not sent"}},
		{"bad option value", Subject{Option: "topic", Sent: "segment_size=abc"}.Wrap(wire.NewError(wire.CodeInvalidOptionValue)), ExitServer,
			[]string{"invalid topic option value among segment_size=abc (Iggy error 4042 InvalidOptionValue)"}},
		{"password bounds", wire.NewError(wire.CodeInvalidPassword), ExitServer, []string{"invalid password (Iggy error 44 InvalidPassword); passwords are 3..100 bytes"}},
		{"username bounds", wire.NewError(wire.CodeInvalidUsername), ExitServer, []string{"invalid username", "3..50 bytes"}},
		{"flush", Subject{Flush: true}.Wrap(wire.NewError(wire.CodeFeatureUnavailable)), ExitServer, []string{"does not flush on request", "durability"}},
		{"unsupported", wire.NewError(wire.CodeFeatureUnavailable), ExitServer, []string{"the server does not support this command (Iggy error 5 FeatureUnavailable)"}},
		{"unknown code", wire.NewError(wire.Code(31337)), ExitServer, []string{"Iggy error 31337 Unknown(31337)"}},
		{"refused", refused, ExitConnection, []string{"cannot connect to 127.0.0.1:1: connection refused; is the server running?", "--tcp-server-address"}},
		{"broken", &client.ConnError{Addr: "a:1", Op: "read", Err: syscall.ECONNRESET}, ExitConnection, []string{"connection to a:1 failed: connection reset", "may or may not have been applied"}},
		{"not connected", client.ErrNotConnected, ExitConnection, []string{"check that the server is running"}},
		{"plain", errors.New("boom"), ExitServer, []string{"boom"}},
	}
	for _, tc := range tests {
		msg, code := Describe(tc.err)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, code, tc.code, msg)
		}
		for _, p := range tc.parts {
			if !strings.Contains(msg, p) {
				t.Errorf("%s: %q lacks %q", tc.name, msg, p)
			}
		}
	}
}

func TestConfigDirResolution(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	d, _ := configDir(env(map[string]string{"IGGO_HOME": "/x", "XDG_CONFIG_HOME": "/y", "HOME": "/z"}))
	if d.Path != "/x" {
		t.Errorf("IGGO_HOME: %s", d.Path)
	}
	d, _ = configDir(env(map[string]string{"XDG_CONFIG_HOME": "/y", "HOME": "/z"}))
	if d.Path != "/y/iggo" {
		t.Errorf("XDG: %s", d.Path)
	}
	d, _ = configDir(env(map[string]string{"HOME": "/z"}))
	if d.Path != "/z/.iggo" {
		t.Errorf("HOME: %s", d.Path)
	}
}

func TestConfigFiles(t *testing.T) {
	d := ConfigDir{Path: filepath.Join(t.TempDir(), "cfg")}
	all, err := d.Contexts()
	if err != nil || len(all) != 1 || all[DefaultContext] != (ContextConfig{}) {
		t.Fatalf("fresh contexts = %v, %v", all, err)
	}
	if name, err := d.ActiveContext(); err != nil || name != DefaultContext {
		t.Fatalf("fresh active = %q, %v", name, err)
	}
	all["prod"] = ContextConfig{TCPServerAddress: "10.0.0.1:8090", Username: "u", Password: "p", TLSEnabled: true}
	if err := d.SaveContexts(all); err != nil {
		t.Fatal(err)
	}
	if err := d.SetActiveContext("prod"); err != nil {
		t.Fatal(err)
	}
	again, err := d.Contexts()
	if err != nil || again["prod"] != all["prod"] || len(again) != 2 {
		t.Fatalf("reloaded = %v, %v", again, err)
	}
	if name, _ := d.ActiveContext(); name != "prod" {
		t.Fatalf("active = %q", name)
	}
	if err := d.SetSession("a:1", "tok"); err != nil {
		t.Fatal(err)
	}
	if err := d.SetStoredToken("a:1", "ci", "t2"); err != nil {
		t.Fatal(err)
	}
	if tok, ok, _ := d.Session("a:1"); !ok || tok != "tok" {
		t.Fatalf("session = %q %v", tok, ok)
	}
	if tok, ok, _ := d.StoredToken("a:1", "ci"); !ok || tok != "t2" {
		t.Fatalf("stored token = %q %v", tok, ok)
	}
	if _, ok, _ := d.Session("b:2"); ok {
		t.Fatal("session for another address")
	}
	for _, f := range []string{"secrets.toml", "contexts.toml"} {
		st, err := os.Stat(filepath.Join(d.Path, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, %v", f, st.Mode(), err)
		}
	}
	if err := d.SetSession("a:1", ""); err != nil {
		t.Fatal(err)
	}
	if err := d.SetStoredToken("a:1", "ci", ""); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := d.Session("a:1"); ok {
		t.Fatal("session survived removal")
	}
	if _, ok, _ := d.StoredToken("a:1", "ci"); ok {
		t.Fatal("token survived removal")
	}
	if err := os.WriteFile(filepath.Join(d.Path, "contexts.toml"), []byte("[[[ not toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = d.Contexts()
	var le *LocalError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "fix or delete") {
		t.Fatalf("corrupt contexts: %v", err)
	}
}

func BenchmarkTableRender(b *testing.B) {
	tb := Table{Header: []string{"Offset", "Timestamp", "ID", "Length", "Payload"}}
	for i := range 1000 {
		tb.Add(fmt.Sprint(i), "2026-01-01 00:00:00.000000", "123456789012345678901234567890", "10", "payload-ü")
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = tb.String()
	}
}
