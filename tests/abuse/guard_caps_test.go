package abuse

import (
	"context"
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

// guardStorageBudget reads the partition cap and the storage descriptors
// per shard the latest run of s logged.
func guardStorageBudget(t testing.TB, s *harness.Server) (capN, perShard int) {
	t.Helper()
	for _, f := range guardLogFields(guardSinceLastRun(s.Output()), "descriptors for storage files") {
		c, ok1 := f["partitions_max"].(float64)
		p, ok2 := f["per_shard"].(float64)
		if ok1 && ok2 {
			return int(c), int(p)
		}
	}
	t.Fatalf("the server logged no storage budget:\n%s", s.Tail(4096))
	return 0, 0
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

// TestGuardPartitionFloodLowDescriptors: under a descriptor limit of 400,
// a user with topic rights creates partitions until refused. Partitions
// hold no descriptors of their own, so the node holds more of them than
// the limit has descriptors for five files each (metadata.partitions_max
// 150 against 400 / 5 = 80): the creates beyond the cap are refused
// (TooManyPartitions) before they commit, every partition takes and serves
// a message, nothing runs out of descriptors, and after restarts under the
// same limit and under half of it every acknowledged message is there.
func TestGuardPartitionFloodLowDescriptors(t *testing.T) {
	const partitionsMax = 150
	bin := guardLimitedBinary(t, 400)
	s := harness.Start(t, harness.Options{DefaultRoot: true, Binary: bin.path,
		Env: []string{fmt.Sprintf("IGGY_METADATA_PARTITIONS_MAX=%d", partitionsMax)}})
	capN, perShard := guardStorageBudget(t, s)
	t.Logf("under a descriptor limit of 400: partition cap %d, %d storage descriptors per shard", capN, perShard)
	if capN != partitionsMax || perShard < 4 || perShard > 400/2 {
		t.Fatalf("cap %d, %d descriptors per shard: not metadata.partitions_max and a share of 400", capN, perShard)
	}
	ctx := guardCtx(t, 240*time.Second)
	root := guardDial(t, s.Addr, "iggy", "iggy")
	_, err := root.CreateUser(ctx, wire.CreateUser{Username: "flooder", Password: "flooder-pw", Status: 1,
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{ManageStreams: true, ManageTopics: true, ReadTopics: true, SendMessages: true, PollMessages: true}}})
	guardMust(t, err, "create the flooding user")
	fl := guardDial(t, s.Addr, "flooder", "flooder-pw")
	_, err = fl.CreateStream(ctx, "flood", nil)
	guardMust(t, err, "create stream")

	// The flood: topics of 4 partitions, then single partitions, until
	// refused; bounded at 200 attempts.
	type part struct {
		topic string
		id    uint32
	}
	var parts []part
	refused := 0
	for i := 0; i < 200 && refused < 3; i++ {
		name := fmt.Sprintf("t%03d", i)
		_, err := fl.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID("flood"), Name: name, PartitionsCount: 4})
		if err != nil {
			guardWantCode(t, err, wire.CodeTooManyPartitions, "topic create over the cap")
			refused++
			continue
		}
		for p := uint32(0); p < 4; p++ {
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
		for _, bad := range []string{"too many open files", "consensus group stopped", "for lack of descriptors or memory"} {
			if n := guardCountLines(s.Output(), bad); n != 0 {
				t.Fatalf("%s: the server logged %q %d times", what, bad, n)
			}
		}
	}
	check("before the restart")
	guardMust(t, s.Stop(30*time.Second), "stop")
	s.Restart()
	check("after a restart under the same limit")
	root = guardDial(t, s.Addr, "iggy", "iggy")
	guardWantCode(t, root.CreatePartitions(ctx, wire.MustNamedID("flood"), wire.MustNamedID(parts[0].topic), 1), wire.CodeTooManyPartitions, "create after the restart")

	// Half the limit: fewer storage descriptors, the same partitions.
	guardMust(t, s.Stop(30*time.Second), "stop")
	bin.set(t, 200)
	s.Restart()
	_, lowShare := guardStorageBudget(t, s)
	if lowShare >= perShard {
		t.Fatalf("under half the limit each shard has %d storage descriptors, under the first %d", lowShare, perShard)
	}
	check("after a restart under half the limit")
}
