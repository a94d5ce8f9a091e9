package operator

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestAuditSession: a scripted session — root creates a stream, a topic,
// partitions, a consumer group and a user; the user is denied a delete;
// root grants permissions, changes the user, and deletes what it created;
// the user creates and deletes a token and changes its password — leaves
// exactly these audit lines, with who, what and which resource, in the
// server's JSON log file, and none of the secrets. A client looping on a
// denied command is held to audit_client_lines_per_second, and what was
// dropped is counted on its next line.
func TestAuditSession(t *testing.T) {
	const perClient = 5
	s := harness.Start(t, harness.Options{DefaultRoot: true, Env: []string{
		fmt.Sprintf("IGGY_LOGGING_AUDIT_CLIENT_LINES_PER_SECOND=%d", perClient)}})
	ctx := ctxT(t)
	root := s.Root(t)
	_, err := root.CreateStream(ctx, "orders", nil)
	must(t, err, "create stream")
	_, err = root.CreateTopic(ctx, wire.CreateTopic{StreamID: name("orders"), PartitionsCount: 2, Name: "eu"})
	must(t, err, "create topic")
	must(t, root.CreatePartitions(ctx, name("orders"), name("eu"), 1), "create partitions")
	_, err = root.CreateConsumerGroup(ctx, name("orders"), name("eu"), "billing")
	must(t, err, "create group")
	const password, password2 = "bob-Secret-1", "bob-Secret-2"
	_, err = root.CreateUser(ctx, wire.CreateUser{Username: "bob", Password: password, Status: wire.UserActive})
	must(t, err, "create user")

	bob := s.Client(t, "bob", password)
	err = bob.DeleteStream(ctx, name("orders"))
	if !wire.HasCode(err, wire.CodeUnauthorized) {
		t.Fatalf("bob deleting the stream: %v, want Unauthorized", err)
	}
	must(t, root.UpdatePermissions(ctx, name("bob"), &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}}), "permissions")
	inactive := uint8(wire.UserInactive)
	renamed := "robert"
	must(t, root.UpdateUser(ctx, name("bob"), &renamed, nil), "rename")
	must(t, root.UpdateUser(ctx, name("robert"), nil, &inactive), "deactivate")
	active := uint8(wire.UserActive)
	must(t, root.UpdateUser(ctx, name("robert"), nil, &active), "activate")
	robert := s.Client(t, "robert", password)
	token, err := robert.CreatePersonalAccessToken(ctx, "ci", 0)
	must(t, err, "create token")
	must(t, robert.DeletePersonalAccessToken(ctx, "ci"), "delete token")
	must(t, robert.ChangePassword(ctx, name("robert"), password, password2), "change password")
	must(t, root.DeleteConsumerGroup(ctx, name("orders"), name("eu"), name("billing")), "delete group")
	must(t, root.DeletePartitions(ctx, name("orders"), name("eu"), 1), "delete partitions")
	must(t, root.DeleteTopic(ctx, name("orders"), name("eu")), "delete topic")
	must(t, root.DeleteStream(ctx, name("orders")), "delete stream")
	must(t, root.DeleteUser(ctx, name("robert")), "delete user")
	// A refused change: the stream is gone.
	if err := root.DeleteStream(ctx, name("orders")); !wire.HasCode(err, wire.CodeStreamIdNotFound) {
		t.Fatalf("deleting a missing stream: %v", err)
	}

	// A client looping on a denied command.
	_, err = root.CreateUser(ctx, wire.CreateUser{Username: "eve", Password: password, Status: wire.UserActive})
	must(t, err, "create eve")
	eve := s.Client(t, "eve", password)
	const loops = 200
	begin := time.Now()
	for range loops {
		if _, err := eve.GetStats(ctx); !wire.HasCode(err, wire.CodeUnauthorized) {
			t.Fatalf("eve's stats: %v, want Unauthorized", err)
		}
	}
	elapsed := time.Since(begin)
	time.Sleep(1100 * time.Millisecond) // the budget refills
	if _, err := eve.GetStats(ctx); !wire.HasCode(err, wire.CodeUnauthorized) {
		t.Fatalf("eve's stats: %v", err)
	}
	must(t, s.Stop(60*time.Second), "stop")

	var got []string
	var eveDenied []logLine
	for _, l := range readLog(t, s.DataDir()) {
		for _, secret := range []string{password, password2, token} {
			if strings.Contains(fmt.Sprint(l), secret) {
				t.Fatalf("a log line holds a secret: %v", l)
			}
		}
		if l.str("logger") != "replica.audit" {
			continue
		}
		if l.str("level") != "info" {
			t.Fatalf("audit line not at INFO: %v", l)
		}
		if _, ok := l.num("client"); !ok || l.str("addr") == "" {
			t.Fatalf("audit line without the connection: %v", l)
		}
		if l.str("user") == "eve" && l.str("msg") == "permission denied" {
			eveDenied = append(eveDenied, l)
			continue
		}
		got = append(got, render(l))
	}
	want := []string{
		"stream created by iggy: stream=orders stream_id=0",
		"topic created by iggy: partitions=2 stream=orders stream_id=0 topic=eu topic_id=0",
		"partitions created by iggy: count=1 stream=orders stream_id=0 topic=eu topic_id=0",
		"consumer group created by iggy: group=billing group_id=0 stream=orders stream_id=0 topic=eu topic_id=0",
		"user created by iggy: permissions=false status=active target_user=bob target_user_id=1",
		"permission denied by bob: command=stream.delete stream=orders stream_id=0",
		"permissions updated by iggy: global=[read_streams] streams=0 target_user=bob target_user_id=1",
		"user updated by iggy: target_user=bob target_user_id=1 username=robert",
		"user updated by iggy: status=inactive target_user=robert target_user_id=1",
		"user updated by iggy: status=active target_user=robert target_user_id=1",
		"personal access token created by robert: expiry_us=0 token=ci",
		"personal access token deleted by robert: token=ci",
		"password changed by robert: target_user=robert target_user_id=1",
		"consumer group deleted by iggy: group=billing group_id=0 stream=orders stream_id=0 topic=eu topic_id=0",
		"partitions deleted by iggy: count=1 stream=orders stream_id=0 topic=eu topic_id=0",
		"topic deleted by iggy: stream=orders stream_id=0 topic=eu topic_id=0",
		"stream deleted by iggy: stream=orders stream_id=0",
		"user deleted by iggy: target_user=robert target_user_id=1",
		"stream deleted refused by iggy: code=1009 StreamIdNotFound stream=orders",
		"user created by iggy: permissions=false status=active target_user=eve target_user_id=2",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("audit lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The loop: at most one burst plus what the budget refilled while it
	// ran, and the line after the pause counts the rest.
	limit := perClient + int(math.Ceil(elapsed.Seconds()*perClient))
	if n := len(eveDenied) - 1; n < perClient || n > limit || n >= loops {
		t.Fatalf("%d denial lines for %d denials in %v, want %d..%d", n, loops, elapsed, perClient, limit)
	}
	last := eveDenied[len(eveDenied)-1]
	if sup, _ := last.num("suppressed_client"); int(sup) != loops-(len(eveDenied)-1) || last.str("command") != "stats" {
		t.Fatalf("the line after the loop: %v, want suppressed_client=%d", last, loops-(len(eveDenied)-1))
	}
	t.Logf("%d denials in %v: %d lines, then one with suppressed_client=%v", loops, elapsed.Round(time.Millisecond),
		len(eveDenied)-1, last["suppressed_client"])
}

// render is "msg by user: k=v ..." over the resource fields of an audit
// line (connection, user and log-format keys left out), sorted by key.
func render(l logLine) string {
	var kv []string
	for k, v := range l {
		switch k {
		case "level", "ts", "logger", "msg", "client", "addr", "user", "user_id":
			continue
		}
		if f, ok := v.(float64); ok {
			v = int64(f)
		}
		if a, ok := v.([]any); ok {
			var s []string
			for _, x := range a {
				s = append(s, fmt.Sprint(x))
			}
			v = "[" + strings.Join(s, " ") + "]"
		}
		kv = append(kv, fmt.Sprintf("%s=%v", k, v))
	}
	slices.Sort(kv)
	return l.str("msg") + " by " + l.str("user") + ": " + strings.Join(kv, " ")
}
