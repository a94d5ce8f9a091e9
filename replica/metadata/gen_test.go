package metadata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
	"pgregory.net/rapid"
)

// chooser abstracts the randomness source so one command generator serves
// rapid properties, seeded benchmarks and fuzz seeds.
type chooser interface{ intn(n int) int }

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(n int) int { return rapid.IntRange(0, n-1).Draw(c.t, "n") }

// step is one generated command with its envelope.
type step struct {
	meta Meta
	cmd  Command
}

func pick[T any](c chooser, xs ...T) T { return xs[c.intn(len(xs))] }

// genID names something from a small pool by id or by name so that hits,
// misses and collisions are all frequent.
func genID(c chooser, prefix string, n int) Identifier {
	if c.intn(2) == 0 {
		return wire.NumericID(uint32(c.intn(n)))
	}
	return wire.MustNamedID(fmt.Sprintf("%s%d", prefix, c.intn(n)))
}

func genOptions(c chooser) wire.Options {
	if c.intn(3) != 0 {
		return nil
	}
	pool := wire.Options{
		stringOption(wire.OptCompressionAlgorithm, "gzip"),
		u64Option(wire.OptMessageExpiry, uint64(1+c.intn(1000))*1_000_000),
		stringOption(wire.OptMaxTopicSize, "2GiB"),
		u64Option(wire.OptSegmentSize, uint64(1+c.intn(8))<<20),
		boolOption(wire.OptEnforceFsync, c.intn(2) == 0),
		stringOption(OptDurability, pick(c, "replicated", "persisted")),
		stringOption(OptConsumerOffsetDurability, "persisted"),
		stringOption("bogus", "1"),
		u64Option(wire.OptMessageExpiry, 0),
	}
	var out wire.Options
	for range 1 + c.intn(3) {
		e := pick(c, pool...)
		if _, dup := out.Get(string(e.Key.Value)); !dup {
			out = append(out, e)
		}
	}
	return out
}

func genPermissions(c chooser) *Permissions {
	switch c.intn(4) {
	case 0:
		return nil
	case 1:
		return &Permissions{Global: wire.GlobalPermissions{ManageStreams: c.intn(2) == 0, ReadTopics: true, ManageUsers: c.intn(3) == 0}}
	}
	p := &Permissions{}
	for range 1 + c.intn(3) {
		sp := wire.StreamPermissions{StreamID: uint32(c.intn(4)), ManageStream: c.intn(2) == 0, ReadTopics: c.intn(2) == 0}
		for range c.intn(3) {
			sp.Topics = append(sp.Topics, wire.TopicPermissions{TopicID: uint32(c.intn(3)), ManageTopic: c.intn(2) == 0, PollMessages: true})
		}
		p.Streams = append(p.Streams, sp)
	}
	return p
}

// existingGroup picks a live group of s (by id or name), if any, so that
// group commands hit often enough to build real memberships.
func existingGroup(c chooser, s *State) (Identifier, Identifier, Identifier, bool) {
	var refs []GroupRef
	for st := range s.streams.all {
		for tp := range st.topics.all {
			for _, g := range tp.groups {
				refs = append(refs, GroupRef{st.ID, tp.ID, g.ID})
			}
		}
	}
	if len(refs) == 0 || c.intn(4) == 0 {
		return Identifier{}, Identifier{}, Identifier{}, false
	}
	r := refs[c.intn(len(refs))]
	st := s.Stream(r.Stream)
	tp := st.Topic(r.Topic)
	gid := wire.NumericID(r.Group)
	if c.intn(2) == 0 {
		gid = wire.MustNamedID(tp.Group(r.Group).Name)
	}
	return wire.MustNamedID(st.Name), wire.NumericID(tp.ID), gid, true
}

// existingTopic picks a live topic of s, if any.
func existingTopic(c chooser, s *State) (Identifier, Identifier, bool) {
	var refs [][2]uint32
	for st := range s.streams.all {
		for tp := range st.topics.all {
			refs = append(refs, [2]uint32{st.ID, tp.ID})
		}
	}
	if len(refs) == 0 || c.intn(3) == 0 {
		return Identifier{}, Identifier{}, false
	}
	r := refs[c.intn(len(refs))]
	return wire.NumericID(r[0]), wire.NumericID(r[1]), true
}

// genStep draws one command against s. Most commands come from root; some
// from other (possibly unknown) users so the permission gate is exercised.
func genStep(c chooser, s *State, op, ts uint64) step {
	m := Meta{Op: op, Timestamp: ts, Client: wire.Uint128{Lo: uint64(1 + c.intn(5))}}
	if c.intn(5) == 0 {
		m.UserID = uint32(c.intn(6))
	}
	d := DefaultTopicDefaults()
	var cmd Command
	switch c.intn(27) {
	case 0, 1, 2:
		cmd = CreateStream{Name: fmt.Sprintf("s%d", c.intn(6))}
	case 3:
		cmd = UpdateStream{Stream: genID(c, "s", 6), Name: fmt.Sprintf("s%d", c.intn(6))}
	case 4:
		cmd = DeleteStream{Stream: genID(c, "s", 6)}
	case 5:
		cmd = PurgeStream{Stream: genID(c, "s", 6)}
	case 6, 7, 8:
		cmd = CreateTopic{Stream: genID(c, "s", 6), Name: fmt.Sprintf("t%d", c.intn(4)), PartitionsCount: uint32(c.intn(5)), Options: genOptions(c), Defaults: d}
	case 9:
		cmd = UpdateTopic{Stream: genID(c, "s", 6), Topic: genID(c, "t", 4), Name: fmt.Sprintf("t%d", c.intn(4)), Options: genOptions(c), Defaults: d}
	case 10:
		cmd = DeleteTopic{Stream: genID(c, "s", 6), Topic: genID(c, "t", 4)}
	case 11:
		cmd = PurgeTopic{Stream: genID(c, "s", 6), Topic: genID(c, "t", 4)}
	case 12, 13, 14, 15, 16, 17, 18, 19, 20:
		sid, tid := genID(c, "s", 6), genID(c, "t", 4)
		if si, ti, ok := existingTopic(c, s); ok {
			sid, tid = si, ti
		}
		gid := genID(c, "g", 3)
		if si, ti, gi, ok := existingGroup(c, s); ok && c.intn(2) == 0 {
			sid, tid, gid = si, ti, gi
		}
		switch c.intn(9) {
		case 0:
			cmd = CreatePartitions{Stream: sid, Topic: tid, Count: uint32(c.intn(4))}
		case 1:
			cmd = DeletePartitions{Stream: sid, Topic: tid, Count: uint32(c.intn(4))}
		case 2, 3:
			cmd = CreateConsumerGroup{Stream: sid, Topic: tid, Name: fmt.Sprintf("g%d", c.intn(3))}
		case 4:
			cmd = DeleteConsumerGroup{Stream: sid, Topic: tid, Group: gid}
		case 5, 6, 7:
			cmd = JoinConsumerGroup{Stream: sid, Topic: tid, Group: gid, Node: uint8(c.intn(3)), Boot: uint64(1 + c.intn(4))}
		default:
			cmd = LeaveConsumerGroup{Stream: sid, Topic: tid, Group: gid}
		}
	case 21:
		m.System = true
		switch c.intn(6) {
		case 0:
			cmd = EvictNodeMembers{Node: uint8(c.intn(3)), Before: uint64(1 + c.intn(5))}
		case 1:
			cmd = ExpireMembers{Node: uint8(c.intn(3)), Boot: uint64(1 + c.intn(4)),
				Clients: []ClientID{{Lo: uint64(1 + c.intn(5))}, {Lo: uint64(1 + c.intn(5))}}}
		default:
			cmd = DisconnectClient{Client: wire.Uint128{Lo: uint64(1 + c.intn(5))}}
		}
	case 22:
		cmd = CreateUser{Username: fmt.Sprintf("user%d", c.intn(5)), PasswordHash: "h", Status: pick(c, UserActive, UserInactive), Permissions: genPermissions(c)}
	case 23:
		switch c.intn(3) {
		case 0:
			cmd = DeleteUser{User: genID(c, "user", 5)}
		case 1:
			cmd = UpdatePermissions{User: genID(c, "user", 5), Permissions: genPermissions(c)}
		default:
			st := pick(c, UserActive, UserInactive)
			name := fmt.Sprintf("user%d", c.intn(5))
			cmd = UpdateUser{User: genID(c, "user", 5), Status: &st, Username: pick(c, nil, &name)}
		}
	case 24:
		cmd = ChangePassword{User: genID(c, "user", 5), VerifiedHash: pick(c, "h", "", "root"), NewPasswordHash: "h"}
	case 25:
		cmd = CreatePersonalAccessToken{Name: fmt.Sprintf("pat%d", c.intn(3)), Expiry: uint64(c.intn(3)) * 5000, Hash: TokenHash{byte(c.intn(8)), byte(m.UserID)}}
	case 26:
		if c.intn(2) == 0 {
			m.System = true
			cmd = DeleteExpiredTokens{}
		} else {
			cmd = DeletePersonalAccessToken{Name: fmt.Sprintf("pat%d", c.intn(3))}
		}
	}
	return step{meta: m, cmd: cmd}
}

func bootstrapStep() step {
	return step{meta: Meta{Op: 1, Timestamp: 1000, System: true}, cmd: Bootstrap{RootUsername: "iggy", RootPasswordHash: "root", Limits: DefaultLimits()}}
}

// richState applies n random commands from seed to a bootstrapped state.
func richState(tb testing.TB, seed uint64, n int) *State {
	c := randChooser{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	b := bootstrapStep()
	s, _ := NewState().Apply(b.meta, b.cmd)
	for i := range n {
		st := genStep(c, s, uint64(i+2), uint64(2000+i*1000))
		s, _ = s.Apply(st.meta, st.cmd)
	}
	return s
}

// checkInvariants verifies every structural invariant of s.
func checkInvariants(t fataler, s *State) {
	t.Helper()
	checkTable(t, &s.streams, func(st *Stream) uint32 { return st.ID })
	for st := range s.streams.all {
		i := st.ID
		if s.streamNames[st.Name] != st.ID || st.Revision > s.revision {
			t.Fatalf("stream %d: name %q indexed as %d", i, st.Name, s.streamNames[st.Name])
		}
		checkTable(t, &st.topics, func(tp *Topic) uint32 { return tp.ID })
		for tp := range st.topics.all {
			j := tp.ID
			if tp.StreamID != st.ID || st.topicNames[tp.Name] != tp.ID {
				t.Fatalf("topic %d/%d misindexed", i, j)
			}
			if !validTopicConfig(tp.Config) || !validOptionBlocks(tp.Config, tp.Explicit, tp.Derived) {
				t.Fatalf("topic %d/%d config/options inconsistent: %+v", i, j, tp.Config)
			}
			for k, p := range tp.Partitions {
				if p.ID != uint32(k) || p.Revision > s.revision || p.Revision < tp.Revision {
					t.Fatalf("partition %d/%d/%d = %+v", i, j, k, p)
				}
			}
			if len(tp.groupNames) != len(tp.groups) {
				t.Fatalf("topic %d/%d: %d group names for %d groups", i, j, len(tp.groupNames), len(tp.groups))
			}
			for gi, g := range tp.groups {
				if g.ID >= tp.NextGroupID || (gi > 0 && tp.groups[gi-1].ID >= g.ID) || tp.groupNames[g.Name] != g.ID {
					t.Fatalf("group %d/%d/%d misindexed", i, j, g.ID)
				}
				checkAssignment(t, g, tp.PartitionsCount())
			}
		}
		if len(st.topicNames) != st.TopicsCount() {
			t.Fatalf("stream %d: %d topic names for %d topics", i, len(st.topicNames), st.TopicsCount())
		}
	}
	if len(s.streamNames) != s.StreamsCount() {
		t.Fatalf("%d stream names for %d streams", len(s.streamNames), s.StreamsCount())
	}
	tokens := 0
	for i, u := range s.users {
		if (i > 0 && s.users[i-1].ID >= u.ID) || u.ID >= s.nextUserID || s.userNames[u.Username] != u.ID {
			t.Fatalf("user %d misindexed", u.ID)
		}
		if !permissionsEqual(u.Permissions, NormalizePermissions(u.Permissions)) {
			t.Fatalf("user %d permissions not normalized", u.ID)
		}
		for k, p := range u.Tokens {
			if k > 0 && u.Tokens[k-1].Name >= p.Name {
				t.Fatalf("user %d tokens not sorted", u.ID)
			}
			if ref, ok := s.tokens[p.Hash]; !ok || ref != (tokenRef{u.ID, p.Name}) {
				t.Fatalf("token %d/%s not indexed", u.ID, p.Name)
			}
			tokens++
		}
	}
	if len(s.userNames) != len(s.users) || len(s.tokens) != tokens {
		t.Fatalf("%d usernames for %d users, %d token refs for %d tokens", len(s.userNames), len(s.users), len(s.tokens), tokens)
	}
	if s.bootstrapped != (s.User(RootUserID) != nil) {
		t.Fatalf("root presence disagrees with bootstrapped")
	}
}

// checkTable verifies a table's bookkeeping: every record sits under its
// own id, the live counts are right, size is the highest id + 1 and there
// is no empty trailing chunk (so live and restored tables have one shape).
func checkTable[T any](t fataler, tb *table[T], id func(*T) uint32) {
	t.Helper()
	var live, size uint32
	for ci, c := range tb.chunks {
		var n uint32
		for i, p := range c.items {
			if p == nil {
				continue
			}
			n++
			slot := uint32(ci)<<chunkBits | uint32(i)
			if id(p) != slot {
				t.Fatalf("record %d stored under id %d", id(p), slot)
			}
			size = slot + 1
		}
		if n != c.live {
			t.Fatalf("chunk %d counts %d live, holds %d", ci, c.live, n)
		}
		live += n
	}
	if live != tb.live || size != tb.size {
		t.Fatalf("table counts %d live / size %d, holds %d / %d", tb.live, tb.size, live, size)
	}
	if n := len(tb.chunks); n > 0 && tb.chunks[n-1].live == 0 {
		t.Fatalf("table keeps an empty trailing chunk")
	}
}

// checkAssignment is the consumer-group assignment property: with members,
// every partition has exactly one owner and owner counts differ by at most
// one; without members nothing is owned.
func checkAssignment(t fataler, g *ConsumerGroup, partitions uint32) {
	t.Helper()
	owner := make([]int, partitions)
	minN, maxN := int(partitions)+1, -1
	for mi, m := range g.Members {
		if m.Client.IsZero() || slices.ContainsFunc(g.Members[:mi], func(o Member) bool { return o.Client == m.Client || o.ID == m.ID }) {
			t.Fatalf("group %d: duplicate or zero member %+v", g.ID, m)
		}
		if !slices.IsSorted(m.Partitions) {
			t.Fatalf("group %d member %d partitions unsorted: %v", g.ID, m.ID, m.Partitions)
		}
		for _, p := range m.Partitions {
			if p >= partitions {
				t.Fatalf("group %d member %d owns missing partition %d", g.ID, m.ID, p)
			}
			owner[p]++
		}
		minN, maxN = min(minN, len(m.Partitions)), max(maxN, len(m.Partitions))
	}
	for p, n := range owner {
		if want := min(len(g.Members), 1); n != want {
			t.Fatalf("group %d partition %d has %d owners with %d members", g.ID, p, n, len(g.Members))
		}
	}
	if len(g.Members) > 0 && maxN-minN > 1 {
		t.Fatalf("group %d unbalanced: %d..%d partitions per member", g.ID, minN, maxN)
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, ^seed)) }
