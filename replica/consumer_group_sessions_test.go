package replica

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
	"github.com/iggo/iggo/wire"
)

// TestSessionTrackerExpiry drives the primary's session clocks by hand:
// sessions start at the view start (or when a member first appears),
// reports renew the members they name, a member a reporting node stops
// naming expires by ExpireMembers after the timeout and not before, a
// silent node loses all its members by one EvictNodeMembers, nothing is
// proposed twice within a timeout, a backup proposes nothing, and a new
// view starts every clock afresh.
func TestSessionTrackerExpiry(t *testing.T) {
	const timeout = 10 * time.Second
	var tr sessionTracker
	tr.init(0, timeout, zap.NewNop())
	t0 := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	primary := leadership{known: true, primary: 0, view: 4}
	roster := []uint8{0, 1, 2}
	c := func(i uint64) metadata.ClientID { return wire.Uint128{Lo: i} }
	const boot1, boot2 = 100, 200
	members := []metadata.NodeMember{
		{Node: 1, Boot: boot1, Client: c(1)},
		{Node: 1, Boot: boot1, Client: c(2)},
		{Node: 2, Boot: boot2, Client: c(3)},
		{Node: 2, Boot: boot2, Client: c(4)},
	}
	poll := func(d time.Duration, lead leadership, ms []metadata.NodeMember) []metadata.Command {
		t.Helper()
		return tr.poll(at(d), lead, roster, ms)
	}
	none := func(d time.Duration, got []metadata.Command) {
		t.Helper()
		if len(got) != 0 {
			t.Fatalf("at %v: proposed %+v, want nothing", d, got)
		}
	}

	// A backup tracks nothing; a report to it is dropped.
	none(0, poll(0, leadership{known: true, primary: 1, view: 3}, members))
	tr.report(at(time.Second), 1, boot1, []metadata.ClientID{c(1), c(2)})

	// Primary of view 4 from 2 s: every clock starts there.
	none(2*time.Second, poll(2*time.Second, primary, members))
	for _, d := range []time.Duration{4, 6, 8, 10} {
		// Node 1 names only client 1; node 2 names both of its own (and
		// a client of another boot, which renews nothing).
		tr.report(at(d*time.Second), 1, boot1, []metadata.ClientID{c(1)})
		tr.report(at(d*time.Second), 2, boot2, []metadata.ClientID{c(3), c(4)})
		none(d*time.Second, poll(d*time.Second, primary, members))
	}
	none(11*time.Second, poll(11*time.Second, primary, members)) // 9 s since the view start
	got := poll(12*time.Second, primary, members)
	want := []metadata.Command{metadata.ExpireMembers{Node: 1, Boot: boot1, Clients: []metadata.ClientID{c(2)}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("at 12 s: %+v, want %+v", got, want)
	}
	// Proposed once: not again while the op commits.
	none(13*time.Second, poll(13*time.Second, primary, members))
	members = members[0:1:1]
	members = append(members, metadata.NodeMember{Node: 2, Boot: boot2, Client: c(3)}, metadata.NodeMember{Node: 2, Boot: boot2, Client: c(4)})

	// Node 2 falls silent after its report at 10 s: at 20 s all its
	// members go in one EvictNodeMembers; node 1 keeps reporting.
	for _, d := range []time.Duration{14, 16, 18} {
		tr.report(at(d*time.Second), 1, boot1, []metadata.ClientID{c(1)})
		none(d*time.Second, poll(d*time.Second, primary, members))
	}
	tr.report(at(19*time.Second), 1, boot1, []metadata.ClientID{c(1)})
	none(19*time.Second+999*time.Millisecond, poll(19*time.Second+999*time.Millisecond, primary, members))
	got = poll(20*time.Second, primary, members)
	want = []metadata.Command{metadata.EvictNodeMembers{Node: 2, Before: boot2 + 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("at 20 s: %+v, want %+v", got, want)
	}
	tr.report(at(25*time.Second), 1, boot1, []metadata.ClientID{c(1)})
	none(25*time.Second, poll(25*time.Second, primary, members))
	// Still there a timeout later (the op was lost): proposed again.
	got = poll(30*time.Second, primary, members)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("at 30 s: %+v, want the eviction again", got)
	}

	// A member that first appears starts its session then.
	late := metadata.NodeMember{Node: 1, Boot: boot1, Client: c(9)}
	members = []metadata.NodeMember{members[0], late}
	tr.report(at(31*time.Second), 1, boot1, []metadata.ClientID{c(1)})
	none(31*time.Second, poll(31*time.Second, primary, members))
	tr.report(at(40*time.Second), 1, boot1, []metadata.ClientID{c(1)})
	none(40*time.Second, poll(40*time.Second, primary, members))

	// A new view (this node primary again after a failover): clocks start
	// afresh at 50 s, so nothing expires before 60 s although the member
	// of client 9 was never named.
	next := leadership{known: true, primary: 0, view: 6}
	none(50*time.Second, poll(50*time.Second, next, members))
	tr.report(at(55*time.Second), 1, boot1, []metadata.ClientID{c(1)})
	none(59*time.Second, poll(59*time.Second, next, members))
	got = poll(60*time.Second, next, members)
	want = []metadata.Command{metadata.ExpireMembers{Node: 1, Boot: boot1, Clients: []metadata.ClientID{c(9)}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("at 60 s: %+v, want %+v", got, want)
	}
	// Members of an unknown node (not in the roster) are nobody's to expire.
	none(200*time.Second, poll(200*time.Second, next, []metadata.NodeMember{{Node: 7, Boot: 1, Client: c(5)}}))
}

// TestSessionReportFrames: a report is cut into frames of at most the
// chunk size, numbered, each decodable, together naming every client once;
// no clients is one empty frame.
func TestSessionReportFrames(t *testing.T) {
	s := vsr.Sender{Group: vsr.MetadataGroup, Replica: 1, ReplicaCount: 3, Incarnation: 42}
	var ids []vsr.Checksum
	for i := range 10 {
		ids = append(ids, vsr.Checksum{byte(i + 1)})
	}
	frames := sessionReportFrames(s, 7, ids, 4)
	if len(frames) != 3 {
		t.Fatalf("%d frames, want 3", len(frames))
	}
	var got []vsr.Checksum
	for i, m := range frames {
		d, err := vsr.Decode(vsrtest.Encode(m), 1<<20)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		r := vsr.DecodedSessionReport(d)
		if r.Sequence != 7 || r.Chunk != uint16(i) || r.Chunks != 3 || len(r.Clients) > 4 || d.Header.Incarnation() != 42 {
			t.Fatalf("frame %d: %+v", i, r)
		}
		got = append(got, r.Clients...)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("clients %v, want %v", got, ids)
	}
	if frames := sessionReportFrames(s, 8, nil, 4); len(frames) != 1 || len(vsr.DecodedSessionReport(frames[0]).Clients) != 0 {
		t.Fatalf("an empty report: %d frames", len(frames))
	}
}

// sessionCluster starts a 3-node cluster with short consumer sessions and
// gossip eviction out of the way, a topic of parts partitions and group 0.
func sessionCluster(t *testing.T, parts uint32) (*testCluster, *client.Client, context.Context) {
	t.Helper()
	tc := newTestCluster(t, 3)
	tc.tune = func(_ int, cfg *config.Config) {
		cfg.ConsumerGroup.HeartbeatInterval = config.D(sessionTestHeartbeat)
		cfg.ConsumerGroup.SessionTimeout = config.D(sessionTestTimeout)
		cfg.Cluster.MemberEvictionTimeout = config.D(time.Hour) // only the reports act
	}
	tc.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := tc.dial(0)
	tc.setupTopic(ctx, c, parts)
	if _, err := c.CreateConsumerGroup(ctx, wire.NumericID(0), wire.NumericID(0), "g"); err != nil {
		t.Fatal(err)
	}
	return tc, c, ctx
}

const (
	sessionTestHeartbeat = 200 * time.Millisecond
	sessionTestTimeout   = 2 * time.Second
)

// TestClusterSessionExpiresSilentNode: node 2 stops (nobody sends its
// member's leave, and gossip eviction is an hour away): once node 2's
// reports are missing for consumer_group.session_timeout the primary
// removes its member, never sooner than that after node 2's last report;
// node 0's member, reported all along, stays and owns every partition.
func TestClusterSessionExpiresSilentNode(t *testing.T) {
	const parts = 3
	tc, c, ctx := sessionCluster(t, parts)
	joinThrough(ctx, t, tc, 2, c, 1) // member 0
	joinThrough(ctx, t, tc, 0, c, 2) // member 1
	// Both stay for several timeouts while their nodes report.
	time.Sleep(2 * sessionTestTimeout)
	if ms, err := groupMembers(ctx, c); err != nil || len(ms) != 2 {
		t.Fatalf("members while both nodes report: %+v (%v)", ms, err)
	}
	stopped := tc.nodes[2]
	tc.stop(2)
	last := stopped.sessions.lastReportSent()
	if last.IsZero() {
		t.Fatal("node 2 never sent a session report")
	}
	eventually(t, 60*time.Second, "node 2's member expired", func() error { return onlyMember(ctx, c, 1, parts) })
	if d := time.Since(last); d < sessionTestTimeout {
		t.Fatalf("expired %v after node 2's last report, before the %v session timeout", d, sessionTestTimeout)
	}
}

// TestClusterSessionExpiresUnreportedMember: a member stamped with node 2
// and its current boot for which node 2 holds no connection (its leave
// was lost) is missing from node 2's reports and expires after
// consumer_group.session_timeout, not before; node 2's member with a live
// connection is named by every report and stays.
func TestClusterSessionExpiresUnreportedMember(t *testing.T) {
	const parts = 4
	tc, c, ctx := sessionCluster(t, parts)
	joinThrough(ctx, t, tc, 2, c, 1) // member 0, connected through node 2
	n2 := tc.nodes[2]
	start := time.Now()
	// The lost member: joined through node 2 by a session that holds no
	// connection there (as a client whose socket closed and whose leave
	// was lost), so node 2's reports never name it.
	lost := n2.OpenLocalSession(wire.TransportHTTP, "127.0.0.1:1", metadata.RootUserID)
	defer lost.Close()
	frame, err := (&wire.JoinConsumerGroup{StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), GroupID: wire.NumericID(0)}).
		AppendBody(make([]byte, wire.HeaderSize))
	if err != nil {
		t.Fatal(err)
	}
	if err := lost.Do(ctx, wire.CmdJoinConsumerGroup, frame, nil); err != nil {
		t.Fatalf("the join through node 2: %v", err)
	}
	eventually(t, 30*time.Second, "the unreported member joined", func() error {
		ms, err := groupMembers(ctx, c)
		if err == nil && len(ms) != 2 {
			err = fmt.Errorf("%d members", len(ms))
		}
		return err
	})
	eventually(t, 60*time.Second, "the unreported member expired", func() error { return onlyMember(ctx, c, 0, parts) })
	if d := time.Since(start); d < sessionTestTimeout {
		t.Fatalf("expired %v after its join, before the %v session timeout", d, sessionTestTimeout)
	}
	// The reported member stays.
	time.Sleep(2 * sessionTestTimeout)
	if err := onlyMember(ctx, c, 0, parts); err != nil {
		t.Fatalf("the reported member of node 2: %v", err)
	}
}
