package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/gossip"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

// TestMemberEvictorRule drives the death rule with hand-made gossip
// readings: only the metadata primary fires, only after the node was down
// for the whole timeout, once per death, with Before = when it was first
// seen down, and again after the node came back and died again.
func TestMemberEvictorRule(t *testing.T) {
	var got []metadata.EvictNodeMembers
	refuse := false
	e := newMemberEvictor(0, 10*time.Second, zap.NewNop(), func(c metadata.Command) error {
		if refuse {
			return errors.New("inbox full")
		}
		got = append(got, c.(metadata.EvictNodeMembers))
		return nil
	})
	t0 := time.Unix(1_700_000_000, 0)
	member := func(id uint8, l gossip.Liveness, since time.Time) gossip.Member {
		return gossip.Member{ReplicaID: id, Liveness: l, Since: since}
	}
	primary := leadership{known: true, primary: 0}
	backup := leadership{known: true, primary: 1}
	read := func(at time.Duration, lead leadership, ms ...gossip.Member) {
		e.observe(t0.Add(at), append([]gossip.Member{member(0, gossip.LivenessAlive, t0)}, ms...), lead)
	}
	alive := member(1, gossip.LivenessAlive, t0)
	dead := member(2, gossip.LivenessDead, t0.Add(time.Second))

	read(2*time.Second, primary, alive, dead)
	read(10*time.Second, primary, alive, dead) // 9 s down
	if len(got) != 0 {
		t.Fatalf("fired before the timeout: %+v", got)
	}
	read(12*time.Second, backup, alive, dead)
	if len(got) != 0 {
		t.Fatalf("a backup fired: %+v", got)
	}
	refuse = true
	read(12*time.Second, primary, alive, dead)
	refuse = false
	read(13*time.Second, primary, alive, member(2, gossip.LivenessLeft, t0.Add(12*time.Second)))
	want := metadata.EvictNodeMembers{Node: 2, Before: uint64(t0.Add(time.Second).UnixMicro())}
	if !slices.Equal(got, []metadata.EvictNodeMembers{want}) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	read(60*time.Second, primary, alive, dead)
	if len(got) != 1 {
		t.Fatalf("fired twice for one death: %+v", got)
	}
	// Back, then down again: re-armed.
	read(61*time.Second, primary, alive, member(2, gossip.LivenessSuspect, t0.Add(61*time.Second)))
	read(70*time.Second, primary, alive, member(2, gossip.LivenessDead, t0.Add(70*time.Second)))
	read(79*time.Second, primary, alive, member(2, gossip.LivenessDead, t0.Add(70*time.Second)))
	if len(got) != 1 {
		t.Fatalf("fired before the second timeout: %+v", got)
	}
	read(80*time.Second, primary, alive, member(2, gossip.LivenessDead, t0.Add(70*time.Second)))
	if len(got) != 2 || got[1] != (metadata.EvictNodeMembers{Node: 2, Before: uint64(t0.Add(70 * time.Second).UnixMicro())}) {
		t.Fatalf("second death: %+v", got)
	}
	// Never this node itself, never a node not heard from.
	read(200*time.Second, primary, member(1, gossip.LivenessUnknown, time.Time{}))
	if len(got) != 2 {
		t.Fatalf("fired for an unknown node: %+v", got)
	}
}

// groupMembers reads group 0 of topic 0/0 through c.
func groupMembers(ctx context.Context, c *client.Client) ([]wire.ConsumerGroupMember, error) {
	g, err := c.GetConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), wire.NumericID(0))
	if err != nil {
		return nil, err
	}
	return g.Members, nil
}

// onlyMember checks that c's view of the group is exactly member id, owning
// every one of parts partitions.
func onlyMember(ctx context.Context, c *client.Client, id uint32, parts uint32) error {
	ms, err := groupMembers(ctx, c)
	if err != nil {
		return err
	}
	if len(ms) != 1 || ms[0].ID != id || len(ms[0].Partitions) != int(parts) {
		return fmt.Errorf("members %+v, want only member %d owning %d partitions", ms, id, parts)
	}
	return nil
}

// joinThrough joins group 0 through node i and waits until the group
// (read at c) has want members.
func joinThrough(ctx context.Context, t *testing.T, tc *testCluster, i int, c *client.Client, want int) *client.Client {
	t.Helper()
	// A member that heartbeats (a silent one is evicted as stale after
	// 1.2 x heartbeat.interval) and does not reconnect elsewhere.
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{tc.nodes[i].Addr()}
	cfg.Username, cfg.Password = DefaultRootUsername, DefaultRootPassword
	cfg.HeartbeatInterval = time.Second
	cfg.MaxRedirects = 0
	cfg.Reconnect.Enabled = false
	m, err := client.Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("dialing node %d: %v", i, err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := m.JoinConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), wire.NumericID(0)); err != nil {
		t.Fatalf("join through node %d: %v", i, err)
	}
	eventually(t, 30*time.Second, fmt.Sprintf("%d members", want), func() error {
		ms, err := groupMembers(ctx, c)
		if err == nil && len(ms) != want {
			err = fmt.Errorf("%d members", len(ms))
		}
		return err
	})
	return m
}

// TestClusterEvictsMembersOfStoppedNode: a consumer joined through node 2
// and one through node 0; node 2 stops (its connections are gone, nobody
// sends their disconnect). After cluster.member_eviction_timeout the
// metadata primary removes node 2's member and node 0's owns every
// partition.
func TestClusterEvictsMembersOfStoppedNode(t *testing.T) {
	tc := newTestCluster(t, 3)
	const timeout = 2 * time.Second
	tc.tune = func(_ int, cfg *config.Config) { cfg.Cluster.MemberEvictionTimeout = config.D(timeout) }
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(0)
	const parts = 3
	tc.setupTopic(ctx, c, parts)
	if _, err := c.CreateConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), "g"); err != nil {
		t.Fatal(err)
	}
	joinThrough(ctx, t, tc, 2, c, 1) // member 0
	joinThrough(ctx, t, tc, 0, c, 2) // member 1
	view := tc.nodes[0].Store().View().Stream(0).Topic(0).Group(0)
	if view.Members[0].Node != 2 || view.Members[1].Node != 0 || view.Members[0].Boot != tc.nodes[2].incarnation ||
		view.Members[1].Boot != tc.nodes[0].incarnation {
		t.Fatalf("members not stamped with their node: %+v", view.Members)
	}
	start := time.Now() // gossip sees node 2 leave during its Close
	tc.stop(2)
	eventually(t, 60*time.Second, "node 2's member evicted", func() error { return onlyMember(ctx, c, 1, parts) })
	t.Logf("evicted %v after the stop began", time.Since(start).Round(time.Millisecond))
	if d := time.Since(start); d < timeout {
		t.Fatalf("evicted after %v, before the %v timeout", d, timeout)
	}
}

// TestClusterRestartEvictsOwnMembers: a node that restarts removes the
// members its previous run registered, without waiting for the (here
// hour-long) eviction timeout; a member joined through another node stays.
func TestClusterRestartEvictsOwnMembers(t *testing.T) {
	tc := newTestCluster(t, 3)
	tc.tune = func(_ int, cfg *config.Config) { cfg.Cluster.MemberEvictionTimeout = config.D(time.Hour) }
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := tc.dial(0)
	const parts = 4
	tc.setupTopic(ctx, c, parts)
	if _, err := c.CreateConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), "g"); err != nil {
		t.Fatal(err)
	}
	joinThrough(ctx, t, tc, 1, c, 1) // member 0, through node 1
	joinThrough(ctx, t, tc, 0, c, 2) // member 1
	tc.stop(1)
	if err := tc.start(1, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "node 1's old member evicted", func() error { return onlyMember(ctx, c, 1, parts) })
	back := dialNode(t, tc, 1, 0)
	eventually(t, 60*time.Second, "the restarted node sees it", func() error { return onlyMember(ctx, back, 1, parts) })
	// A member joining through the restarted node stays.
	joinThrough(ctx, t, tc, 1, c, 2)
	time.Sleep(time.Second)
	if ms, err := groupMembers(ctx, c); err != nil || len(ms) != 2 {
		t.Fatalf("after a join through the restarted node: %+v (%v)", ms, err)
	}
}

// TestNodeRestartEvictsOwnMembers: on a single node a join records node 0
// and the node's incarnation, and the restarted node's groups have none of
// the previous run's members.
func TestNodeRestartEvictsOwnMembers(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(t, n)
	if _, err := c.CreateStream(ctx, "s", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(0), PartitionsCount: 2, Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), "g"); err != nil {
		t.Fatal(err)
	}
	if err := c.JoinConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), wire.NumericID(0)); err != nil {
		t.Fatal(err)
	}
	ms := n.Store().View().Stream(0).Topic(0).Group(0).Members
	if len(ms) != 1 || ms[0].Node != 0 || ms[0].Boot != n.incarnation {
		t.Fatalf("members %+v, want one of node 0 boot %d", ms, n.incarnation)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n2 := startNode(t, dir)
	if ms := n2.Store().View().Stream(0).Topic(0).Group(0).Members; len(ms) != 0 {
		t.Fatalf("the previous run's members are back: %+v", ms)
	}
}
