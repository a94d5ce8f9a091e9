package abuse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// guardLimited is an iggo-server launcher that runs the server under the
// descriptor limit (soft and hard RLIMIT_NOFILE) written to its limit
// file, read at each start.
type guardLimited struct {
	path, limitFile string
}

func guardLimitedBinary(t testing.TB, limit int) *guardLimited {
	t.Helper()
	dir := t.TempDir()
	g := &guardLimited{path: filepath.Join(dir, "iggo-server-limited"), limitFile: filepath.Join(dir, "nofile")}
	g.set(t, limit)
	script := fmt.Sprintf("#!/bin/sh\nulimit -n \"$(cat %q)\" || exit 97\nexec %q \"$@\"\n", g.limitFile, harness.Binary(t))
	guardMust(t, os.WriteFile(g.path, []byte(script), 0o755), "write the launcher")
	return g
}

func (g *guardLimited) set(t testing.TB, limit int) {
	guardMust(t, os.WriteFile(g.limitFile, []byte(strconv.Itoa(limit)), 0o644), "write the limit")
}

// guardPartitionCap reads the cap the latest run of s logged.
func guardPartitionCap(t testing.TB, s *harness.Server) int {
	t.Helper()
	for _, f := range guardLogFields(guardSinceLastRun(s.Output()), "node-wide partition cap") {
		if v, ok := f["partitions_max"].(float64); ok {
			return int(v)
		}
	}
	t.Fatalf("the server logged no partition cap:\n%s", s.Tail(4096))
	return 0
}

// guardPollOne polls the one message of partition p of topic.
func guardPollOne(ctx *guardPollCtx, topic string, p uint32) (string, error) {
	pm, err := ctx.cl.PollMessages(ctx.ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: wire.MustNamedID("flood"),
		TopicID: wire.MustNamedID(topic), Partition: wire.SomePartition(p), Strategy: wire.PollFromFirst(), Count: 10})
	if err != nil {
		return "", err
	}
	msgs := pm.Messages()
	if len(msgs) != 1 {
		return "", fmt.Errorf("%s/%d holds %d messages, want 1", topic, p, len(msgs))
	}
	return string(msgs[0].Payload), nil
}

type guardPollCtx struct {
	ctx context.Context
	cl  *client.Client
}

// TestGuardPartitionFloodLowDescriptors: under a descriptor limit of 400, a
// user with topic rights creates partitions until refused: the creates
// beyond the node-wide cap are refused (TooManyPartitions) before they
// commit, every message acknowledged in the partitions that exist survives
// a restart, and the node restarts under the same limit. Restarted under a
// limit too low for the partitions it has, it starts anyway, serves those
// it could open, answers the others with a retryable status and opens them
// once deleting a topic frees descriptors.
func TestGuardPartitionFloodLowDescriptors(t *testing.T) {
	bin := guardLimitedBinary(t, 400)
	s := harness.Start(t, harness.Options{DefaultRoot: true, Binary: bin.path})
	capN := guardPartitionCap(t, s)
	t.Logf("partition cap under a descriptor limit of 400: %d", capN)
	if capN < 3 || capN > 400/5 {
		t.Fatalf("cap %d is not what 400 descriptors hold", capN)
	}
	ctx := guardCtx(t, 240*time.Second)
	root := guardDial(t, s.Addr, "iggy", "iggy")
	_, err := root.CreateUser(ctx, wire.CreateUser{Username: "flooder", Password: "flooder-pw", Status: 1,
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{ManageStreams: true, ManageTopics: true, ReadTopics: true, SendMessages: true, PollMessages: true}}})
	guardMust(t, err, "create the flooding user")
	fl := guardDial(t, s.Addr, "flooder", "flooder-pw")
	_, err = fl.CreateStream(ctx, "flood", nil)
	guardMust(t, err, "create stream")

	// The flood: topics of 3 partitions, then single partitions, until
	// refused; bounded at 200 attempts.
	type part struct {
		topic string
		id    uint32
	}
	var parts []part
	refused := 0
	for i := 0; i < 200 && refused < 3; i++ {
		name := fmt.Sprintf("t%03d", i)
		_, err := fl.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID("flood"), Name: name, PartitionsCount: 3})
		if err != nil {
			guardWantCode(t, err, wire.CodeTooManyPartitions, "topic create over the cap")
			refused++
			continue
		}
		for p := uint32(0); p < 3; p++ {
			parts = append(parts, part{name, p})
		}
	}
	for len(parts) < capN && refused < 10 {
		last := parts[len(parts)-1]
		if err := fl.CreatePartitions(ctx, wire.MustNamedID("flood"), wire.MustNamedID(last.topic), 1); err != nil {
			guardWantCode(t, err, wire.CodeTooManyPartitions, "partition create over the cap")
			refused++
			break
		}
		parts = append(parts, part{last.topic, last.id + 1})
	}
	guardWantCode(t, fl.CreatePartitions(ctx, wire.MustNamedID("flood"), wire.MustNamedID(parts[0].topic), 1), wire.CodeTooManyPartitions, "one more partition")
	if len(parts) != capN {
		t.Fatalf("%d partitions exist, the cap is %d", len(parts), capN)
	}
	t.Logf("created %d partitions, refused %d creates with TooManyPartitions", len(parts), refused+1)
	for _, p := range parts {
		_, err := fl.SendMessages(ctx, wire.MustNamedID("flood"), wire.MustNamedID(p.topic), wire.PartitionByID(p.id),
			[]wire.Message{{Payload: []byte(fmt.Sprintf("%s/%d", p.topic, p.id))}})
		guardMust(t, err, fmt.Sprintf("send to %s/%d", p.topic, p.id))
	}
	check := func(what string) {
		t.Helper()
		cl := guardDial(t, s.Addr, "iggy", "iggy")
		pc := &guardPollCtx{ctx: ctx, cl: cl}
		for _, p := range parts {
			got, err := guardPollOne(pc, p.topic, p.id)
			if err != nil || got != fmt.Sprintf("%s/%d", p.topic, p.id) {
				t.Fatalf("%s: %s/%d: %q, %v", what, p.topic, p.id, got, err)
			}
		}
	}
	check("before the restart")
	guardMust(t, s.Stop(30*time.Second), "stop")
	s.Restart()
	check("after a restart under the same limit")
	root = guardDial(t, s.Addr, "iggy", "iggy")
	guardWantCode(t, root.CreatePartitions(ctx, wire.MustNamedID("flood"), wire.MustNamedID(parts[0].topic), 1), wire.CodeTooManyPartitions, "create after the restart")
	for _, bad := range []string{"too many open files", "consensus group stopped"} {
		if n := guardCountLines(s.Output(), bad); n != 0 {
			t.Fatalf("the server logged %q %d times", bad, n)
		}
	}

	// A limit too low for what exists: the node starts anyway.
	guardMust(t, s.Stop(30*time.Second), "stop")
	bin.set(t, 200)
	s.Restart()
	slots := guardPartitionCap(t, s) // with metadata.partitions_max unset, the cap is the open budget
	// The partitions the node could not open are named in its log.
	nsOf := func(f map[string]any) (part, bool) {
		var st, tp, id int
		if ns, _ := f["partition"].(string); ns != "" {
			if _, err := fmt.Sscanf(ns, "%d/%d/%d", &st, &tp, &id); err == nil {
				return part{fmt.Sprintf("t%03d", tp), uint32(id)}, true
			}
		}
		return part{}, false
	}
	isWaiting := map[part]bool{}
	for _, f := range guardLogFields(guardSinceLastRun(s.Output()), "cannot open a partition for lack of descriptors or memory; serving the others and retrying") {
		if p, ok := nsOf(f); ok {
			isWaiting[p] = true
		}
	}
	var served, waiting []part
	for _, p := range parts {
		if isWaiting[p] {
			waiting = append(waiting, p)
		} else {
			served = append(served, p)
		}
	}
	t.Logf("restarted under a limit of 200: %d partitions open (budget %d), %d waiting", len(served), slots, len(waiting))
	if len(served) == 0 || len(waiting) == 0 || len(served) > slots {
		t.Fatalf("%d served, %d waiting, budget %d", len(served), len(waiting), slots)
	}
	cl := guardDial(t, s.Addr, "iggy", "iggy")
	pc := &guardPollCtx{ctx: ctx, cl: cl}
	for _, p := range served {
		if got, err := guardPollOne(pc, p.topic, p.id); err != nil || got != fmt.Sprintf("%s/%d", p.topic, p.id) {
			t.Fatalf("served partition %s/%d: %q, %v", p.topic, p.id, got, err)
		}
	}
	// A waiting partition answers the retryable TransientNotAccepted (the
	// client replays it until its deadline).
	_, err = guardPollOne(&guardPollCtx{ctx: guardCtx(t, 2*time.Second), cl: guardDial(t, s.Addr, "iggy", "iggy")}, waiting[0].topic, waiting[0].id)
	if c := guardCode(err); c != wire.CodeTransientNotAccepted && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiting partition answered %v", err)
	}
	// Deleting the topic of a served partition frees its descriptors; a
	// waiting partition is opened by the retry.
	victim := served[0].topic
	guardMust(t, cl.DeleteTopic(ctx, wire.MustNamedID("flood"), wire.MustNamedID(victim)), "delete "+victim)
	deadline := time.Now().Add(90 * time.Second)
	var opened []part
	for len(opened) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting partition was opened within 90 s of freeing descriptors:\n%s", s.Tail(4096))
		}
		time.Sleep(200 * time.Millisecond)
		for _, f := range guardLogFields(guardSinceLastRun(s.Output()), "partition opened after waiting for descriptors") {
			if p, ok := nsOf(f); ok && p.topic != victim {
				opened = append(opened, p)
			}
		}
	}
	for _, p := range opened {
		if got, err := guardPollOne(pc, p.topic, p.id); err != nil || got != fmt.Sprintf("%s/%d", p.topic, p.id) {
			t.Fatalf("reopened partition %s/%d: %q, %v", p.topic, p.id, got, err)
		}
	}
	t.Logf("after deleting %s, %d waiting partitions opened (%v)", victim, len(opened), opened)
	if n := guardCountLines(guardSinceLastRun(s.Output()), "consensus group stopped"); n != 0 {
		t.Fatalf("a group stopped %d times", n)
	}

	// Back under the first limit everything but the deleted topic is there.
	guardMust(t, s.Stop(30*time.Second), "stop")
	bin.set(t, 400)
	s.Restart()
	var left []part
	for _, p := range parts {
		if p.topic != victim {
			left = append(left, p)
		}
	}
	parts = left
	check("after a restart under the first limit")
}
