package metadata

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
)

func groupCmds() (Identifier, Identifier) { return NamedID("s"), NamedID("t") }

func TestGroupIDsNeverReused(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 3)
	s, tp := groupCmds()
	for i, name := range []string{"a", "b", "c"} {
		r := m.must(CreateConsumerGroup{Stream: s, Topic: tp, Name: name})
		if r.Group.ID != uint32(i) || r.Topic.PartitionsCount() != 3 || len(r.Group.Members) != 0 {
			t.Fatalf("group %s: %+v", name, r.Group)
		}
	}
	m.must(DeleteConsumerGroup{Stream: s, Topic: tp, Group: NumericID(2)})
	m.must(DeleteConsumerGroup{Stream: s, Topic: tp, Group: NamedID("a")})
	if r := m.must(CreateConsumerGroup{Stream: s, Topic: tp, Name: "a"}); r.Group.ID != 3 {
		t.Fatalf("recreated group got id %d, want 3 (never reused)", r.Group.ID)
	}
	ids := []uint32{}
	for _, g := range m.s.Stream(0).Topic(0).Groups() {
		ids = append(ids, g.ID)
	}
	if !slices.Equal(ids, []uint32{1, 3}) {
		t.Fatalf("groups %v", ids)
	}
}

func TestGroupRules(t *testing.T) {
	s, tp := groupCmds()
	tests := []struct {
		name string
		cmd  Command
		want wire.Code
	}{
		{"duplicate name", CreateConsumerGroup{Stream: s, Topic: tp, Name: "g"}, wire.CodeConsumerGroupNameAlreadyExists},
		{"empty name", CreateConsumerGroup{Stream: s, Topic: tp, Name: ""}, wire.CodeInvalidConsumerGroupName},
		{"create missing topic", CreateConsumerGroup{Stream: s, Topic: NamedID("x"), Name: "h"}, wire.CodeTopicIdNotFound},
		{"create missing stream", CreateConsumerGroup{Stream: NamedID("x"), Topic: tp, Name: "h"}, wire.CodeStreamIdNotFound},
		{"delete missing", DeleteConsumerGroup{Stream: s, Topic: tp, Group: NumericID(9)}, wire.CodeConsumerGroupIdNotFound},
		{"join missing", JoinConsumerGroup{Stream: s, Topic: tp, Group: NamedID("zz")}, wire.CodeConsumerGroupIdNotFound},
		{"join missing topic", JoinConsumerGroup{Stream: s, Topic: NumericID(4), Group: NumericID(0)}, wire.CodeTopicIdNotFound},
		{"leave missing", LeaveConsumerGroup{Stream: s, Topic: tp, Group: NumericID(9)}, wire.CodeConsumerGroupIdNotFound},
		{"leave when not a member", LeaveConsumerGroup{Stream: s, Topic: tp, Group: NumericID(0)}, wire.CodeConsumerGroupMemberNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(t)
			m.stream("s")
			m.topic("s", "t", 2)
			m.must(CreateConsumerGroup{Stream: s, Topic: tp, Name: "g"})
			m.expect(tc.want, tc.cmd)
		})
	}
}

func assignment(t *testing.T, m *machine, c ClientID) (uint64, []uint32) {
	t.Helper()
	g := m.s.Stream(0).Topic(0).Group(0)
	gen, ps, ok := g.Assignment(c)
	if !ok {
		t.Fatalf("client %v is not a member", c)
	}
	return gen, ps
}

func TestJoinLeaveRebalance(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 5)
	s, tp := groupCmds()
	g := NumericID(0)
	m.must(CreateConsumerGroup{Stream: s, Topic: tp, Name: "g"})

	a, b, c := cl(10), cl(20), cl(30)
	if r := m.client(a, JoinConsumerGroup{Stream: s, Topic: tp, Group: g}); r.Code != OK || r.Group.Generation != 1 {
		t.Fatalf("join a: %+v", r)
	}
	if _, ps := assignment(t, m, a); !slices.Equal(ps, []uint32{0, 1, 2, 3, 4}) {
		t.Fatalf("a owns %v", ps)
	}
	// Joining again is idempotent: no generation bump.
	if r := m.client(a, JoinConsumerGroup{Stream: s, Topic: tp, Group: g}); r.Code != OK || r.Group.Generation != 1 || len(r.Effects) != 0 {
		t.Fatalf("rejoin a: %+v", r)
	}
	m.client(b, JoinConsumerGroup{Stream: s, Topic: tp, Group: NamedID("g")})
	m.client(c, JoinConsumerGroup{Stream: s, Topic: tp, Group: g})
	gen, pa := assignment(t, m, a)
	_, pb := assignment(t, m, b)
	_, pc := assignment(t, m, c)
	// Joins rebalance cooperatively: each takes the excess of the members
	// over their fair share, their highest partitions first.
	if gen != 3 || !slices.Equal(pa, []uint32{0, 1}) || !slices.Equal(pb, []uint32{3, 4}) || !slices.Equal(pc, []uint32{2}) {
		t.Fatalf("gen %d a=%v b=%v c=%v", gen, pa, pb, pc)
	}
	grp := m.s.Stream(0).Topic(0).Group(0)
	if !grp.Owns(b, 4) || grp.Owns(b, 0) || grp.Owns(cl(99), 0) {
		t.Fatal("Owns disagrees with the assignment")
	}
	if ids := []uint32{grp.Members[0].ID, grp.Members[1].ID, grp.Members[2].ID}; !slices.Equal(ids, []uint32{0, 1, 2}) {
		t.Fatalf("member ids %v", ids)
	}

	if r := m.client(b, LeaveConsumerGroup{Stream: s, Topic: tp, Group: g}); r.Code != OK {
		t.Fatalf("leave b: %v", r.Code)
	}
	gen, pa = assignment(t, m, a)
	_, pc = assignment(t, m, c)
	if gen != 4 || !slices.Equal(pa, []uint32{0, 2, 4}) || !slices.Equal(pc, []uint32{1, 3}) {
		t.Fatalf("after leave gen %d a=%v c=%v", gen, pa, pc)
	}
	if _, _, ok := m.s.Stream(0).Topic(0).Group(0).Assignment(b); ok {
		t.Fatal("b still a member")
	}
	// A rejoining client gets a new member id.
	m.client(b, JoinConsumerGroup{Stream: s, Topic: tp, Group: g})
	if mb, _ := m.s.Stream(0).Topic(0).Group(0).Member(b); mb.ID != 3 {
		t.Fatalf("rejoined member id %d, want 3", mb.ID)
	}

	// Partition changes rebalance every group of the topic.
	r := m.must(CreatePartitions{Stream: s, Topic: tp, Count: 1})
	if len(r.Effects) != 2 || r.Effects[1].Kind != EffectGroupRebalanced || r.Effects[1].Generation != 6 {
		t.Fatalf("create partitions effects %+v", r.Effects)
	}
	_, pa = assignment(t, m, a)
	if !slices.Equal(pa, []uint32{0, 3}) {
		t.Fatalf("a after adding a partition: %v", pa)
	}
	m.must(DeletePartitions{Stream: s, Topic: tp, Count: 5})
	_, pa = assignment(t, m, a)
	_, pc = assignment(t, m, c)
	_, pb = assignment(t, m, b)
	if !slices.Equal(pa, []uint32{0}) || len(pc) != 0 || len(pb) != 0 {
		t.Fatalf("after shrinking to one partition a=%v c=%v b=%v", pa, pc, pb)
	}
}

func TestDisconnectLeavesAllGroups(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 2)
	m.topic("s", "u", 2)
	s := NamedID("s")
	for _, topic := range []string{"t", "u"} {
		for _, g := range []string{"g1", "g2"} {
			m.must(CreateConsumerGroup{Stream: s, Topic: NamedID(topic), Name: g})
		}
	}
	x, y := cl(1), cl(2)
	m.client(x, JoinConsumerGroup{Stream: s, Topic: NamedID("t"), Group: NamedID("g1")})
	m.client(x, JoinConsumerGroup{Stream: s, Topic: NamedID("u"), Group: NamedID("g2")})
	m.client(y, JoinConsumerGroup{Stream: s, Topic: NamedID("t"), Group: NamedID("g1")})
	if refs := m.s.Memberships(x); !slices.Equal(refs, []GroupRef{{0, 0, 0}, {0, 1, 1}}) {
		t.Fatalf("memberships %v", refs)
	}
	// Clients cannot issue the system command.
	if r := m.client(x, DisconnectClient{Client: x}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("client-issued disconnect: %v", r.Code)
	}
	r := m.sys(DisconnectClient{Client: x})
	if len(r.Effects) != 2 {
		t.Fatalf("effects %+v", r.Effects)
	}
	if refs := m.s.Memberships(x); len(refs) != 0 {
		t.Fatalf("still member of %v", refs)
	}
	if _, ps := assignment(t, m, y); !slices.Equal(ps, []uint32{0, 1}) {
		t.Fatalf("y owns %v after x left", ps)
	}
	if r := m.sys(DisconnectClient{Client: cl(77)}); r.Code != OK || len(r.Effects) != 0 {
		t.Fatalf("disconnect of a non-member: %+v", r)
	}
}

func TestJoinNeedsClientID(t *testing.T) {
	m := groupMachine(t, 1)
	if r := m.client(ClientID{}, JoinConsumerGroup{Stream: NamedID("s"), Topic: NamedID("t"), Group: NumericID(0)}); r.Code != wire.CodeInvalidCommand {
		t.Fatalf("zero client id: %v", r.Code)
	}
}

// TestJoinRecordsNodeAndBoot: Admit stamps the admitting node's id and
// boot into the join, and the member keeps them.
func TestJoinRecordsNodeAndBoot(t *testing.T) {
	m := groupMachine(t, 2)
	cfg := DefaultAdmitConfig()
	cfg.Node, cfg.Boot = 2, 1_700_000_000_000_042
	adm, code := Admit(m.s, RootUserID, &wire.JoinConsumerGroup{StreamID: NamedID("s"), TopicID: NamedID("t"), GroupID: NumericID(0)}, cfg)
	if code != OK {
		t.Fatal(code)
	}
	join, ok := adm.Command.(JoinConsumerGroup)
	if !ok || join.Node != 2 || join.Boot != cfg.Boot {
		t.Fatalf("admitted %+v", adm.Command)
	}
	m.client(cl(5), join)
	mem, ok := m.s.Stream(0).Topic(0).Group(0).Member(cl(5))
	if !ok || mem.Node != 2 || mem.Boot != cfg.Boot {
		t.Fatalf("member %+v (%v)", mem, ok)
	}
}

// TestEvictNodeMembers: the members an earlier boot of a node registered
// leave every group, which rebalance over the members that stay; members
// of the node's current boot, of other nodes and of unknown boot stay.
func TestEvictNodeMembers(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 4)
	m.topic("s", "u", 3)
	s := NamedID("s")
	for _, topic := range []string{"t", "u"} {
		m.must(CreateConsumerGroup{Stream: s, Topic: NamedID(topic), Name: "g"})
	}
	join := func(c ClientID, topic string, node uint8, boot uint64) {
		t.Helper()
		if r := m.client(c, JoinConsumerGroup{Stream: s, Topic: NamedID(topic), Group: NamedID("g"), Node: node, Boot: boot}); r.Code != OK {
			t.Fatal(r.Code)
		}
	}
	old, fresh, other, unknown := cl(1), cl(2), cl(3), cl(4)
	join(old, "t", 2, 100)   // node 2, boot before the restart
	join(other, "t", 0, 100) // node 0
	join(old, "u", 2, 100)   // node 2's old boot, second group
	join(fresh, "u", 2, 200) // node 2, boot after the restart
	join(unknown, "u", 2, BootUnknown)
	g := func(topic uint32) *ConsumerGroup { return m.s.Stream(0).Topic(topic).Group(0) }
	genT, genU := g(0).Generation, g(1).Generation

	// Clients cannot issue it.
	if r := m.client(old, EvictNodeMembers{Node: 2, Before: 200}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("client-issued eviction: %v", r.Code)
	}
	r := m.sys(EvictNodeMembers{Node: 2, Before: 200})
	if r.Code != OK || len(r.Effects) != 2 {
		t.Fatalf("result %+v", r)
	}
	for i, e := range r.Effects {
		if e.Kind != EffectGroupRebalanced || e.Topic != uint32(i) || e.Generation != g(uint32(i)).Generation {
			t.Fatalf("effect %d: %+v", i, e)
		}
	}
	if refs := m.s.Memberships(old); len(refs) != 0 {
		t.Fatalf("evicted client still in %v", refs)
	}
	if g(0).Generation != genT+1 || g(1).Generation != genU+1 {
		t.Fatal("generations not bumped once")
	}
	// Group t: node 0's member owns everything.
	if len(g(0).Members) != 1 || !slices.Equal(g(0).Members[0].Partitions, []uint32{0, 1, 2, 3}) || g(0).Members[0].Client != other {
		t.Fatalf("group t %+v", g(0).Members)
	}
	// Group u: the current boot's member and the unknown one share it in
	// join order.
	if _, ps, _ := g(1).Assignment(fresh); !slices.Equal(ps, []uint32{0, 2}) {
		t.Fatalf("fresh owns %v", ps)
	}
	if _, ps, _ := g(1).Assignment(unknown); !slices.Equal(ps, []uint32{1}) {
		t.Fatalf("unknown-boot member owns %v", ps)
	}
	// Nothing more to evict: no effects, no generation bump.
	gen := g(1).Generation
	if r := m.sys(EvictNodeMembers{Node: 2, Before: 200}); r.Code != OK || len(r.Effects) != 0 || g(1).Generation != gen {
		t.Fatalf("second eviction: %+v", r)
	}
	if r := m.sys(EvictNodeMembers{Node: 1, Before: math.MaxUint64}); len(r.Effects) != 0 {
		t.Fatalf("evicting a node without members: %+v", r)
	}
}

// TestRejoinThroughAnotherNodeRestamps: a member that joins again through
// another node is re-stamped (no rebalance), so evicting its old node
// leaves it; a join with an unknown boot (version 1 body) changes nothing.
func TestRejoinThroughAnotherNodeRestamps(t *testing.T) {
	m := groupMachine(t, 2)
	join := JoinConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Group: NumericID(0), Node: 2, Boot: 10}
	m.client(cl(1), join)
	gen := m.s.Stream(0).Topic(0).Group(0).Generation
	join.Node, join.Boot = 0, 20
	if r := m.client(cl(1), join); r.Code != OK || len(r.Effects) != 0 {
		t.Fatalf("rejoin: %+v", r)
	}
	unknown := join
	unknown.Node, unknown.Boot = 1, BootUnknown
	m.client(cl(1), unknown)
	g := m.s.Stream(0).Topic(0).Group(0)
	if g.Generation != gen || len(g.Members) != 1 || g.Members[0].Node != 0 || g.Members[0].Boot != 20 {
		t.Fatalf("after rejoining: generation %d (was %d), members %+v", g.Generation, gen, g.Members)
	}
	if r := m.sys(EvictNodeMembers{Node: 2, Before: 100}); len(r.Effects) != 0 {
		t.Fatal("evicting the old node removed the member that moved")
	}
	if r := m.sys(EvictNodeMembers{Node: 0, Before: 21}); len(r.Effects) != 1 {
		t.Fatal("evicting the new node left the member")
	}
}

// TestCooperativeJoin: a join hands over a partition listed in flight only
// once CompleteRevocation runs (its old owner keeps it for commits but no
// longer polls it, and the joiner does not get it); other partitions move
// at once. A completion that is not pending is a no-op; a leave re-deals
// everything and drops pending hand-offs; pending hand-offs survive a
// snapshot round trip.
func TestCooperativeJoin(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 4)
	s, tp := groupCmds()
	g := NumericID(0)
	m.must(CreateConsumerGroup{Stream: s, Topic: tp, Name: "g"})
	a, b, c := cl(10), cl(20), cl(30)
	m.client(a, JoinConsumerGroup{Stream: s, Topic: tp, Group: g})
	// a polled partitions 2 and 3 without committing.
	r := m.client(b, JoinConsumerGroup{Stream: s, Topic: tp, Group: g, InFlight: []uint32{3}})
	if r.Code != OK {
		t.Fatal(r.Code)
	}
	grp := m.s.Stream(0).Topic(0).Group(0)
	_, pa := assignment(t, m, a)
	_, pb := assignment(t, m, b)
	if !slices.Equal(pa, []uint32{0, 1}) || !slices.Equal(pb, []uint32{2}) {
		t.Fatalf("after the join a polls %v, b %v", pa, pb)
	}
	if !grp.Owns(a, 3) || grp.Pollable(a, 3) || grp.Owns(b, 3) || grp.Pollable(b, 3) {
		t.Fatal("partition 3 must stay a's for commits, pollable by nobody")
	}
	pend := m.s.PendingRevocations()
	if len(pend) != 1 || pend[0].Source.Client != a || pend[0].Partition != 3 || pend[0].Target != 1 || pend[0].Since != m.ts-1000*0 {
		t.Fatalf("pending %+v (ts %d)", pend, m.ts)
	}
	// Snapshots keep the hand-off.
	back, err := DecodeSnapshot(EncodeSnapshot(m.s))
	if err != nil {
		t.Fatal(err)
	}
	if got := back.PendingRevocations(); !reflect.DeepEqual(got, pend) {
		t.Fatalf("restored pending %+v, want %+v", got, pend)
	}
	// Not pending: no-op.
	if r := m.sys(CompleteRevocation{Stream: 0, Topic: 0, Group: 0, Client: b, Partition: 2}); r.Code != OK || r.Group != nil {
		t.Fatalf("completing nothing: %+v", r)
	}
	if r := m.client(a, CompleteRevocation{Stream: 0, Topic: 0, Group: 0, Client: a, Partition: 3}); r.Code != wire.CodeUnauthorized {
		t.Fatalf("a client completed a hand-off: %v", r.Code)
	}
	gen := m.s.Stream(0).Topic(0).Group(0).Generation
	if r := m.sys(CompleteRevocation{Stream: 0, Topic: 0, Group: 0, Client: a, Partition: 3}); r.Code != OK || r.Group == nil || r.Group.Generation != gen+1 {
		t.Fatalf("complete: %+v", r)
	}
	_, pa = assignment(t, m, a)
	_, pb = assignment(t, m, b)
	if !slices.Equal(pa, []uint32{0, 1}) || !slices.Equal(pb, []uint32{2, 3}) || len(m.s.PendingRevocations()) != 0 {
		t.Fatalf("after completion a %v, b %v", pa, pb)
	}
	checkAssignment(t, m.s.Stream(0).Topic(0).Group(0), 4)
	// A leave re-deals and drops pending hand-offs.
	m.client(c, JoinConsumerGroup{Stream: s, Topic: tp, Group: g, InFlight: []uint32{0, 1, 2, 3}})
	if len(m.s.PendingRevocations()) != 1 {
		t.Fatalf("pending after c joined: %+v", m.s.PendingRevocations())
	}
	m.client(b, LeaveConsumerGroup{Stream: s, Topic: tp, Group: g})
	if len(m.s.PendingRevocations()) != 0 {
		t.Fatalf("pending after b left: %+v", m.s.PendingRevocations())
	}
	checkAssignment(t, m.s.Stream(0).Topic(0).Group(0), 4)
	// A member leaving (or disconnecting) re-deals everything, so a
	// hand-off's target never disappears while the hand-off is pending.
	d := cl(40)
	m.client(d, JoinConsumerGroup{Stream: s, Topic: tp, Group: g, InFlight: []uint32{0, 1, 2, 3}})
	if len(m.s.PendingRevocations()) != 1 {
		t.Fatalf("pending after d joined: %+v", m.s.PendingRevocations())
	}
	m.sys(DisconnectClient{Client: d})
	if len(m.s.PendingRevocations()) != 0 {
		t.Fatalf("pending after d disconnected: %+v", m.s.PendingRevocations())
	}
	checkAssignment(t, m.s.Stream(0).Topic(0).Group(0), 4)
}

// TestExpireMembers: only the listed members still stamped with the node
// and boot leave (and their groups rebalance once); a listed member that
// moved to another node or boot stays, and clients cannot issue it.
func TestExpireMembers(t *testing.T) {
	m := groupMachine(t, 4)
	join := func(c ClientID, node uint8, boot uint64) {
		t.Helper()
		j := JoinConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Group: NumericID(0), Node: node, Boot: boot}
		if r := m.client(c, j); r.Code != OK {
			t.Fatal(r.Code)
		}
	}
	lost, kept, moved, otherBoot := cl(1), cl(2), cl(3), cl(4)
	join(lost, 2, 10)
	join(kept, 2, 10)
	join(moved, 0, 30)     // reconnected through node 0
	join(otherBoot, 2, 20) // node 2's next boot
	g := func() *ConsumerGroup { return m.s.Stream(0).Topic(0).Group(0) }
	gen := g().Generation
	exp := ExpireMembers{Node: 2, Boot: 10, Clients: []ClientID{lost, moved, otherBoot}}
	if r := m.client(lost, exp); r.Code != wire.CodeUnauthorized {
		t.Fatalf("client-issued expiry: %v", r.Code)
	}
	r := m.sys(exp)
	if r.Code != OK || len(r.Effects) != 1 || r.Effects[0].Kind != EffectGroupRebalanced {
		t.Fatalf("result %+v", r)
	}
	var left []ClientID
	for _, mem := range g().Members {
		left = append(left, mem.Client)
	}
	if !slices.Equal(left, []ClientID{kept, moved, otherBoot}) || g().Generation != gen+1 {
		t.Fatalf("members %v generation %d (was %d)", left, g().Generation, gen)
	}
	owned := 0
	for _, mem := range g().Members {
		owned += len(mem.Partitions)
	}
	if owned != 4 {
		t.Fatalf("%d partitions owned after the rebalance, want 4", owned)
	}
	if r := m.sys(exp); r.Code != OK || len(r.Effects) != 0 || g().Generation != gen+1 {
		t.Fatalf("expiring again: %+v", r)
	}
}
