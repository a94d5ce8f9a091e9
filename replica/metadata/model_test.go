package metadata

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
	"pgregory.net/rapid"
)

// groupModel is the reference for one consumer group on one topic: the
// member order, the partition count and the expected generation.
type groupModel struct {
	members    []ClientID
	partitions uint32
	generation uint64
	// joined holds the assignment after a cooperative join (checked
	// against the one before it when the join applied); nil after a full
	// re-deal (leave, disconnect, partition change), which is round robin.
	joined map[ClientID][]uint32
}

func (gm *groupModel) expected(c ClientID) []uint32 {
	i := slices.Index(gm.members, c)
	if i < 0 {
		return nil
	}
	if gm.joined != nil {
		return gm.joined[c]
	}
	var out []uint32
	for p := uint32(0); p < gm.partitions; p++ {
		if int(p)%len(gm.members) == i {
			out = append(out, p)
		}
	}
	return out
}

// TestGroupAssignmentModel drives one group with joins, leaves,
// disconnects and partition changes and checks, after every step, the
// round-robin assignment against the model, that every partition has
// exactly one owner with counts within one, and that the generation moves
// exactly when membership or partitions change.
func TestGroupAssignmentModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newMachine(rt)
		initial := uint32(rapid.IntRange(0, 12).Draw(rt, "partitions"))
		m.stream("s")
		m.topic("s", "t", initial)
		m.must(CreateConsumerGroup{Stream: NamedID("s"), Topic: NamedID("t"), Name: "g"})
		// A second group on the same topic must track partition changes
		// too, without being disturbed by the first group's membership.
		m.must(CreateConsumerGroup{Stream: NamedID("s"), Topic: NamedID("t"), Name: "other"})
		gm := &groupModel{partitions: initial}
		ids := [3]Identifier{NamedID("s"), NamedID("t"), NamedID("g")}
		clients := rapid.SampledFrom([]ClientID{cl(1), cl(2), cl(3), cl(4), cl(5), cl(6)})

		rt.Repeat(map[string]func(*rapid.T){
			"join": func(rt *rapid.T) {
				c := clients.Draw(rt, "client")
				before := map[ClientID][]uint32{}
				for _, mem := range gm.members {
					before[mem] = gm.expected(mem)
				}
				r := m.client(c, JoinConsumerGroup{Stream: ids[0], Topic: ids[1], Group: ids[2]})
				if r.Code != OK {
					rt.Fatalf("join: %v", r.Code)
				}
				if slices.Contains(gm.members, c) {
					return
				}
				gm.members = append(gm.members, c)
				gm.generation++
				// Cooperative: the members keep a subset of what they
				// owned, the joiner gets exactly what they gave up (or
				// what nobody owned), nothing moves between old members.
				g := m.s.Stream(0).Topic(0).GroupByName("g")
				after := map[ClientID][]uint32{}
				var given []uint32
				for _, mem := range gm.members {
					_, ps, _ := g.Assignment(mem)
					after[mem] = slices.Clone(ps)
					if mem == c {
						continue
					}
					for _, p := range ps {
						if !slices.Contains(before[mem], p) {
							rt.Fatalf("join of %v moved partition %d to old member %v", c, p, mem)
						}
					}
					for _, p := range before[mem] {
						if !slices.Contains(ps, p) {
							given = append(given, p)
						}
					}
				}
				if len(before) == 0 {
					for p := uint32(0); p < gm.partitions; p++ {
						given = append(given, p)
					}
				}
				slices.Sort(given)
				if !slices.Equal(after[c], given) {
					rt.Fatalf("joiner %v got %v, the others gave up %v", c, after[c], given)
				}
				gm.joined = after
			},
			"leave": func(rt *rapid.T) {
				c := clients.Draw(rt, "client")
				r := m.client(c, LeaveConsumerGroup{Stream: ids[0], Topic: ids[1], Group: ids[2]})
				if i := slices.Index(gm.members, c); i >= 0 {
					if r.Code != OK {
						rt.Fatalf("leave of a member: %v", r.Code)
					}
					gm.members = slices.Delete(gm.members, i, i+1)
					gm.generation++
					gm.joined = nil
				} else if r.Code != wire.CodeConsumerGroupMemberNotFound {
					rt.Fatalf("leave of a non-member: %v", r.Code)
				}
			},
			"disconnect": func(rt *rapid.T) {
				c := clients.Draw(rt, "client")
				m.sys(DisconnectClient{Client: c})
				if i := slices.Index(gm.members, c); i >= 0 {
					gm.members = slices.Delete(gm.members, i, i+1)
					gm.generation++
					gm.joined = nil
				}
			},
			"add partitions": func(rt *rapid.T) {
				n := uint32(rapid.IntRange(1, 5).Draw(rt, "n"))
				m.must(CreatePartitions{Stream: ids[0], Topic: ids[1], Count: n})
				gm.partitions += n
				gm.generation++
				gm.joined = nil
			},
			"remove partitions": func(rt *rapid.T) {
				n := uint32(rapid.IntRange(1, 5).Draw(rt, "n"))
				r := m.root(DeletePartitions{Stream: ids[0], Topic: ids[1], Count: n})
				if n > gm.partitions {
					if r.Code != wire.CodeInvalidPartitionsCount {
						rt.Fatalf("over-delete: %v", r.Code)
					}
					return
				}
				gm.partitions -= n
				gm.generation++
				gm.joined = nil
			},
			"": func(rt *rapid.T) {
				tp := m.s.Stream(0).Topic(0)
				g := tp.GroupByName("g")
				if tp.PartitionsCount() != gm.partitions || g.Generation != gm.generation {
					rt.Fatalf("partitions %d generation %d, model %d %d", tp.PartitionsCount(), g.Generation, gm.partitions, gm.generation)
				}
				checkAssignment(rt, g, gm.partitions)
				checkAssignment(rt, tp.GroupByName("other"), gm.partitions)
				for _, c := range []ClientID{cl(1), cl(2), cl(3), cl(4), cl(5), cl(6)} {
					gen, ps, ok := g.Assignment(c)
					want := gm.expected(c)
					if ok != slices.Contains(gm.members, c) || (ok && (gen != gm.generation || !slices.Equal(ps, want))) {
						rt.Fatalf("client %v: %v gen %d %v, model %v", c, ok, gen, ps, want)
					}
					for p := uint32(0); p < gm.partitions; p++ {
						if g.Owns(c, p) != slices.Contains(want, p) {
							rt.Fatalf("Owns(%v, %d) disagrees", c, p)
						}
					}
				}
				order := make([]ClientID, len(g.Members))
				for i, mem := range g.Members {
					order[i] = mem.Client
				}
				if !slices.Equal(order, gm.members) {
					rt.Fatalf("member order %v, model %v", order, gm.members)
				}
			},
		})
	})
}

// nameModel is the reference for id allocation and name uniqueness.
type nameModel struct {
	streams   map[uint32]string
	topics    map[uint32]map[uint32]string
	nextGroup map[[2]uint32]uint32
	groups    map[[2]uint32]map[uint32]string
	users     map[uint32]string
	nextUser  uint32
}

func lowestFreeKey[V any](m map[uint32]V) uint32 {
	for i := uint32(0); ; i++ {
		if _, ok := m[i]; !ok {
			return i
		}
	}
}

func hasName[V comparable](m map[uint32]V, name V) bool {
	for _, v := range m {
		if v == name {
			return true
		}
	}
	return false
}

func keyOf(m map[uint32]string, id Identifier) (uint32, bool) {
	if n, ok := id.Numeric(); ok {
		_, found := m[n]
		return n, found
	}
	name, _ := id.Name()
	for k, v := range m {
		if v == name {
			return k, true
		}
	}
	return 0, false
}

// TestIDsAndNamesModel applies random create/delete/rename sequences and
// checks every outcome (code and assigned id) against a model: streams and
// topics take the lowest free id, groups and users take monotonic ids,
// names are unique per scope, and the structural invariants hold.
func TestIDsAndNamesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newMachine(rt)
		md := &nameModel{streams: map[uint32]string{}, topics: map[uint32]map[uint32]string{},
			nextGroup: map[[2]uint32]uint32{}, groups: map[[2]uint32]map[uint32]string{},
			users: map[uint32]string{0: "iggy"}, nextUser: 1}
		sname := rapid.SampledFrom([]string{"a", "b", "c", "d"})
		tname := rapid.SampledFrom([]string{"x", "y", "z"})
		gname := rapid.SampledFrom([]string{"g", "h"})
		uname := rapid.SampledFrom([]string{"iggy", "alice", "bob", "carol"})
		anyID := func(rt *rapid.T, names *rapid.Generator[string]) Identifier {
			if rapid.Bool().Draw(rt, "by name") {
				return NamedID(names.Draw(rt, "name"))
			}
			return NumericID(uint32(rapid.IntRange(0, 4).Draw(rt, "id")))
		}
		expect := func(rt *rapid.T, what string, got, want wire.Code) {
			if got != want {
				rt.Fatalf("%s: got %v, want %v", what, got, want)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"create stream": func(rt *rapid.T) {
				name := sname.Draw(rt, "name")
				r := m.root(CreateStream{Name: name})
				if hasName(md.streams, name) {
					expect(rt, "duplicate stream", r.Code, wire.CodeStreamNameAlreadyExists)
					return
				}
				want := lowestFreeKey(md.streams)
				if r.Code != OK || r.Stream.ID != want {
					rt.Fatalf("create stream %q: %v id %v, want id %d", name, r.Code, r.Stream, want)
				}
				md.streams[want] = name
				md.topics[want] = map[uint32]string{}
			},
			"rename stream": func(rt *rapid.T) {
				id, name := anyID(rt, sname), sname.Draw(rt, "new")
				r := m.root(UpdateStream{Stream: id, Name: name})
				k, found := keyOf(md.streams, id)
				switch {
				case !found:
					expect(rt, "rename missing", r.Code, wire.CodeStreamIdNotFound)
				case hasName(md.streams, name) && md.streams[k] != name:
					expect(rt, "rename to taken", r.Code, wire.CodeStreamNameAlreadyExists)
				default:
					expect(rt, "rename", r.Code, OK)
					md.streams[k] = name
				}
			},
			"delete stream": func(rt *rapid.T) {
				id := anyID(rt, sname)
				r := m.root(DeleteStream{Stream: id})
				k, found := keyOf(md.streams, id)
				if !found {
					expect(rt, "delete missing", r.Code, wire.CodeStreamIdNotFound)
					return
				}
				expect(rt, "delete", r.Code, OK)
				for tk := range md.topics[k] {
					delete(md.groups, [2]uint32{k, tk})
					delete(md.nextGroup, [2]uint32{k, tk})
				}
				delete(md.streams, k)
				delete(md.topics, k)
			},
			"create topic": func(rt *rapid.T) {
				sid, name := anyID(rt, sname), tname.Draw(rt, "name")
				r := m.root(CreateTopic{Stream: sid, Name: name, PartitionsCount: 1, Defaults: DefaultTopicDefaults()})
				k, found := keyOf(md.streams, sid)
				switch {
				case !found:
					expect(rt, "topic in missing stream", r.Code, wire.CodeStreamIdNotFound)
				case hasName(md.topics[k], name):
					expect(rt, "duplicate topic", r.Code, wire.CodeTopicNameAlreadyExists)
				default:
					want := lowestFreeKey(md.topics[k])
					if r.Code != OK || r.Topic.ID != want {
						rt.Fatalf("create topic: %v, want id %d", r.Code, want)
					}
					md.topics[k][want] = name
					md.groups[[2]uint32{k, want}] = map[uint32]string{}
					md.nextGroup[[2]uint32{k, want}] = 0
				}
			},
			"delete topic": func(rt *rapid.T) {
				sid, tid := anyID(rt, sname), anyID(rt, tname)
				r := m.root(DeleteTopic{Stream: sid, Topic: tid})
				k, found := keyOf(md.streams, sid)
				if !found {
					expect(rt, "missing stream", r.Code, wire.CodeStreamIdNotFound)
					return
				}
				tk, tfound := keyOf(md.topics[k], tid)
				if !tfound {
					expect(rt, "missing topic", r.Code, wire.CodeTopicIdNotFound)
					return
				}
				expect(rt, "delete topic", r.Code, OK)
				delete(md.topics[k], tk)
				delete(md.groups, [2]uint32{k, tk})
				delete(md.nextGroup, [2]uint32{k, tk})
			},
			"create group": func(rt *rapid.T) {
				sid, tid, name := anyID(rt, sname), anyID(rt, tname), gname.Draw(rt, "name")
				r := m.root(CreateConsumerGroup{Stream: sid, Topic: tid, Name: name})
				k, found := keyOf(md.streams, sid)
				if !found {
					expect(rt, "missing stream", r.Code, wire.CodeStreamIdNotFound)
					return
				}
				tk, tfound := keyOf(md.topics[k], tid)
				if !tfound {
					expect(rt, "missing topic", r.Code, wire.CodeTopicIdNotFound)
					return
				}
				key := [2]uint32{k, tk}
				if hasName(md.groups[key], name) {
					expect(rt, "duplicate group", r.Code, wire.CodeConsumerGroupNameAlreadyExists)
					return
				}
				if r.Code != OK || r.Group.ID != md.nextGroup[key] {
					rt.Fatalf("create group: %v, want id %d", r.Code, md.nextGroup[key])
				}
				md.groups[key][md.nextGroup[key]] = name
				md.nextGroup[key]++
			},
			"delete group": func(rt *rapid.T) {
				sid, tid, gid := anyID(rt, sname), anyID(rt, tname), anyID(rt, gname)
				r := m.root(DeleteConsumerGroup{Stream: sid, Topic: tid, Group: gid})
				k, found := keyOf(md.streams, sid)
				if !found {
					expect(rt, "missing stream", r.Code, wire.CodeStreamIdNotFound)
					return
				}
				tk, tfound := keyOf(md.topics[k], tid)
				if !tfound {
					expect(rt, "missing topic", r.Code, wire.CodeTopicIdNotFound)
					return
				}
				gk, gfound := keyOf(md.groups[[2]uint32{k, tk}], gid)
				if !gfound {
					expect(rt, "missing group", r.Code, wire.CodeConsumerGroupIdNotFound)
					return
				}
				expect(rt, "delete group", r.Code, OK)
				delete(md.groups[[2]uint32{k, tk}], gk)
			},
			"create user": func(rt *rapid.T) {
				name := uname.Draw(rt, "name")
				r := m.root(CreateUser{Username: name, PasswordHash: "h", Status: UserActive})
				if hasName(md.users, name) {
					expect(rt, "duplicate user", r.Code, wire.CodeUserAlreadyExists)
					return
				}
				if r.Code != OK || r.User.ID != md.nextUser {
					rt.Fatalf("create user: %v, want id %d", r.Code, md.nextUser)
				}
				md.users[md.nextUser] = name
				md.nextUser++
			},
			"delete user": func(rt *rapid.T) {
				id := anyID(rt, uname)
				r := m.root(DeleteUser{User: id})
				k, found := keyOf(md.users, id)
				switch {
				case !found:
					expect(rt, "missing user", r.Code, wire.CodeResourceNotFound)
				case k == RootUserID:
					expect(rt, "root", r.Code, wire.CodeCannotDeleteUser)
				default:
					expect(rt, "delete user", r.Code, OK)
					delete(md.users, k)
				}
			},
			"": func(rt *rapid.T) {
				checkInvariants(rt, m.s)
				if m.s.StreamsCount() != len(md.streams) || len(m.s.Users()) != len(md.users) {
					rt.Fatalf("counts: %d streams (model %d), %d users (model %d)", m.s.StreamsCount(), len(md.streams), len(m.s.Users()), len(md.users))
				}
				for k, name := range md.streams {
					st := m.s.Stream(k)
					if st == nil || st.Name != name || st.TopicsCount() != len(md.topics[k]) {
						rt.Fatalf("stream %d: %v, model %q", k, st, name)
					}
					for tk, tn := range md.topics[k] {
						if tp := st.Topic(tk); tp == nil || tp.Name != tn || len(tp.Groups()) != len(md.groups[[2]uint32{k, tk}]) {
							rt.Fatalf("topic %d/%d: model %q", k, tk, tn)
						}
					}
				}
			},
		})
	})
}

// TestDeterminism applies one random command sequence to two independent
// instances, one of which is restored from its own snapshot at random
// points, and requires byte-identical snapshots and identical results
// after every command.
func TestDeterminism(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := rapidChooser{rt}
		b := bootstrapStep()
		a, _ := NewState().Apply(b.meta, b.cmd)
		z, _ := NewState().Apply(b.meta, b.cmd)
		n := rapid.IntRange(1, 150).Draw(rt, "steps")
		for i := range n {
			st := genStep(c, a, uint64(i+2), uint64(10_000+i*777))
			var ra, rz Result
			a, ra = a.Apply(st.meta, st.cmd)
			z, rz = z.Apply(st.meta, st.cmd)
			if !sameResult(ra, rz) {
				rt.Fatalf("step %d %T: results differ: %+v vs %+v", i, st.cmd, ra, rz)
			}
			sa, sz := EncodeSnapshot(a), EncodeSnapshot(z)
			if !bytes.Equal(sa, sz) {
				rt.Fatalf("step %d %T: snapshots differ", i, st.cmd)
			}
			if rapid.IntRange(0, 9).Draw(rt, "restore") == 0 {
				restored, err := DecodeSnapshot(sz)
				if err != nil {
					rt.Fatalf("step %d: restore: %v", i, err)
				}
				z = restored
			}
		}
		checkInvariants(rt, a)
	})
}

// sameResult compares results by value (records through their snapshot
// bytes would be overkill; the exported fields suffice).
func sameResult(a, b Result) bool {
	if a.Code != b.Code || !reflect.DeepEqual(a.Effects, b.Effects) {
		return false
	}
	desc := func(r Result) string {
		s := ""
		if r.Stream != nil {
			s += fmt.Sprintf("S%d/%s/%d/%d;", r.Stream.ID, r.Stream.Name, r.Stream.CreatedAt, r.Stream.Revision)
		}
		if r.Topic != nil {
			s += fmt.Sprintf("T%d/%s/%+v/%v;", r.Topic.ID, r.Topic.Name, r.Topic.Config, r.Topic.Partitions)
		}
		if r.Group != nil {
			s += fmt.Sprintf("G%d/%s/%d/%v;", r.Group.ID, r.Group.Name, r.Group.Generation, r.Group.Members)
		}
		if r.User != nil {
			s += fmt.Sprintf("U%d/%s/%d/%v;", r.User.ID, r.User.Username, r.User.Status, r.User.Tokens)
		}
		if r.Token != nil {
			s += fmt.Sprintf("P%+v", *r.Token)
		}
		return s
	}
	return desc(a) == desc(b)
}
