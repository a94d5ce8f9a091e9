package audit

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

func named(s string) wire.Identifier {
	id, err := wire.NamedID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// state is a metadata state with root, a user "bob" (id 1), stream
// "orders" (id 0) with topic "eu" (id 0) and group "billing" (id 0).
func state(t *testing.T) *metadata.State {
	t.Helper()
	s := metadata.NewState()
	op := uint64(0)
	apply := func(c metadata.Command) metadata.Result {
		op++
		var r metadata.Result
		s, r = s.Apply(metadata.Meta{Op: op, Timestamp: 1_700_000_000_000_000 + op, System: op == 1}, c)
		if r.Code != 0 {
			t.Fatalf("%T: %v", c, r.Code)
		}
		return r
	}
	apply(metadata.Bootstrap{RootUsername: "iggy", RootPasswordHash: "h", Limits: metadata.DefaultLimits()})
	apply(metadata.CreateUser{Username: "bob", PasswordHash: "h", Status: metadata.UserActive})
	apply(metadata.CreateStream{Name: "orders"})
	apply(metadata.CreateTopic{Stream: wire.NumericID(0), Name: "eu", PartitionsCount: 2, Defaults: metadata.DefaultTopicDefaults()})
	apply(metadata.CreateConsumerGroup{Stream: named("orders"), Topic: named("eu"), Name: "billing"})
	return s
}

// line renders an entry as "message k=v k=v" with sorted keys.
func line(e observer.LoggedEntry) string {
	var kv []string
	for k, v := range e.ContextMap() {
		kv = append(kv, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(kv)
	return e.LoggerName + ": " + e.Message + " " + strings.Join(kv, " ")
}

func newClient(cfg Config) (*Client, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return New(cfg, zap.New(core).Named("audit")).Client(zap.Uint32("client", 7)), logs
}

func TestChangedRefusedDenied(t *testing.T) {
	view := state(t)
	c, logs := newClient(Config{PerSecond: 1000, ClientPerSecond: 1000})
	rec := binary.LittleEndian.AppendUint32(nil, 5)
	secret := "s3cr3t-password"
	c.Changed(view, 0, metadata.CreateStream{Name: "payments"}, rec)
	c.Changed(view, 0, metadata.DeleteStream{Stream: named("orders")}, nil)
	c.Changed(view, 0, metadata.CreateTopic{Stream: wire.NumericID(0), Name: "us", PartitionsCount: 3}, binary.LittleEndian.AppendUint32(nil, 1))
	c.Changed(view, 0, metadata.DeleteTopic{Stream: wire.NumericID(0), Topic: named("eu")}, nil)
	c.Changed(view, 0, metadata.CreatePartitions{Stream: wire.NumericID(0), Topic: wire.NumericID(0), Count: 2}, nil)
	c.Changed(view, 0, metadata.DeleteConsumerGroup{Stream: wire.NumericID(0), Topic: wire.NumericID(0), Group: named("billing")}, nil)
	c.Changed(view, 0, metadata.CreateUser{Username: "carol", PasswordHash: secret, Status: metadata.UserInactive}, binary.LittleEndian.AppendUint32(nil, 2))
	name := "robert"
	st := metadata.UserActive
	c.Changed(view, 0, metadata.UpdateUser{User: wire.NumericID(1), Username: &name, Status: &st}, nil)
	c.Changed(view, 1, metadata.ChangePassword{User: wire.NumericID(1), VerifiedHash: secret, NewPasswordHash: secret}, nil)
	c.Changed(view, 0, metadata.UpdatePermissions{User: named("bob"), Permissions: &wire.Permissions{
		Global: wire.GlobalPermissions{ReadStreams: true, SendMessages: true}, Streams: []wire.StreamPermissions{{StreamID: 0}}}}, nil)
	c.Changed(view, 1, metadata.CreatePersonalAccessToken{Name: "ci", Expiry: 60_000_000}, nil)
	c.Changed(view, 1, metadata.JoinConsumerGroup{Stream: wire.NumericID(0), Topic: wire.NumericID(0), Group: wire.NumericID(0)}, nil)
	c.Refused(view, 0, metadata.CreateStream{Name: "orders"}, wire.CodeStreamNameAlreadyExists)
	c.Denied(view, 1, wire.CmdDeleteTopic, func() any {
		return &wire.DeleteTopic{StreamID: named("orders"), TopicID: wire.NumericID(0)}
	})
	c.Denied(view, 1, wire.CmdPollMessages, func() any {
		return &wire.PollMessages{StreamID: wire.NumericID(0), TopicID: named("eu"), Partition: wire.OptionalPartition{Set: true, ID: 1}}
	})
	c.Denied(view, 1, wire.CmdDeleteUser, func() any { return &wire.DeleteUser{UserID: named("nobody")} })
	c.Denied(view, 1, wire.CmdGetStats, func() any { return nil })

	want := []string{
		"audit: stream created client=7 stream=payments stream_id=5 user=iggy user_id=0",
		"audit: stream deleted client=7 stream=orders stream_id=0 user=iggy user_id=0",
		"audit: topic created client=7 partitions=3 stream=orders stream_id=0 topic=us topic_id=1 user=iggy user_id=0",
		"audit: topic deleted client=7 stream=orders stream_id=0 topic=eu topic_id=0 user=iggy user_id=0",
		"audit: partitions created client=7 count=2 stream=orders stream_id=0 topic=eu topic_id=0 user=iggy user_id=0",
		"audit: consumer group deleted client=7 group=billing group_id=0 stream=orders stream_id=0 topic=eu topic_id=0 user=iggy user_id=0",
		"audit: user created client=7 permissions=false status=inactive target_user=carol target_user_id=2 user=iggy user_id=0",
		"audit: user updated client=7 status=active target_user=bob target_user_id=1 user=iggy user_id=0 username=robert",
		"audit: password changed client=7 target_user=bob target_user_id=1 user=bob user_id=1",
		"audit: permissions updated client=7 global=[read_streams send_messages] streams=1 target_user=bob target_user_id=1 user=iggy user_id=0",
		"audit: personal access token created client=7 expiry_us=60000000 token=ci user=bob user_id=1",
		"audit: stream created refused client=7 code=1012 StreamNameAlreadyExists stream=orders user=iggy user_id=0",
		"audit: permission denied client=7 command=topic.delete stream=orders stream_id=0 topic=eu topic_id=0 user=bob user_id=1",
		"audit: permission denied client=7 command=message.poll partition_id=1 stream=orders stream_id=0 topic=eu topic_id=0 user=bob user_id=1",
		"audit: permission denied client=7 command=user.delete target_user=nobody user=bob user_id=1",
		"audit: permission denied client=7 command=stats user=bob user_id=1",
	}
	got := logs.All()
	if len(got) != len(want) {
		for _, e := range got {
			t.Log(line(e))
		}
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Level != zapcore.InfoLevel {
			t.Errorf("line %d at %v", i, e.Level)
		}
		if l := line(e); l != want[i] {
			t.Errorf("line %d:\n got  %s\n want %s", i, l, want[i])
		}
		if strings.Contains(line(e), secret) {
			t.Errorf("line %d logs a secret: %s", i, line(e))
		}
	}
}

// TestBudgets: a client looping on denials is held to its own budget, the
// node to the node-wide one, what was dropped is counted on the next line
// written, and committed changes are never dropped.
func TestBudgets(t *testing.T) {
	view := state(t)
	core, logs := observer.New(zapcore.DebugLevel)
	a := New(Config{PerSecond: 5, ClientPerSecond: 3}, zap.New(core))
	now := time.Unix(1_700_000_000, 0)
	a.now = func() time.Time { return now }
	c1 := a.Client()
	c2 := a.Client()
	deny := func(c *Client) { c.Denied(view, 1, wire.CmdGetStats, nil) }
	for range 100 {
		deny(c1)
	}
	if n := logs.Len(); n != 3 {
		t.Fatalf("a looping client wrote %d lines, want its budget of 3", n)
	}
	for range 100 {
		deny(c2)
	}
	// The node-wide budget (5) leaves the second client 2 of its 3.
	if n := logs.Len(); n != 5 {
		t.Fatalf("two clients wrote %d lines, want the node's budget of 5", n)
	}
	if c1.dropped != 97 || c2.dropped != 97 || a.dropped.Load() != 1 {
		t.Fatalf("dropped: c1 %d, c2 %d, node %d; want 97, 97, 1", c1.dropped, c2.dropped, a.dropped.Load())
	}
	// A second later both budgets have refilled; c1's next line carries
	// what it and the node dropped.
	now = now.Add(time.Second)
	deny(c1)
	if n := logs.Len(); n != 6 {
		t.Fatalf("%d lines after the refill, want 6", n)
	}
	last := logs.All()[logs.Len()-1].ContextMap()
	if last["suppressed_client"] != uint64(97) || last["suppressed_node"] != uint64(1) {
		t.Fatalf("next line carries %v, want suppressed_client=97 suppressed_node=1", last)
	}
	if c1.dropped != 0 || a.dropped.Load() != 0 {
		t.Fatal("counts not reset after being reported")
	}
	// Committed changes are never budgeted.
	for range 50 {
		c1.Changed(view, 0, metadata.CreateStream{Name: "x"}, nil)
	}
	if n := logs.Len(); n != 56 {
		t.Fatalf("%d lines after 50 changes, want 56: committed changes must not be dropped", n)
	}
	deny(c2)
	if last := logs.All()[logs.Len()-1].ContextMap(); last["suppressed_client"] != uint64(97) || last["suppressed_node"] != nil {
		t.Fatalf("c2's next line carries %v, want suppressed_client=97 only", last)
	}
}
