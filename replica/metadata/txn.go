package metadata

import (
	"maps"
	"slices"
	"sync/atomic"
)

// Copy-on-write bookkeeping. Every node that Apply may change carries the
// id of the transaction that made its private copy (gen, and one *Gen field
// per slice or map it owns). A node whose id differs from the running
// transaction is shared with published states and is copied before the
// first write; one whose id matches was copied by this transaction and is
// written in place. Transaction ids come from a process-wide counter, so a
// published node never matches a later transaction. The ids are not state:
// snapshots ignore them and they never influence a result.

var txnSeq atomic.Uint64

type txn struct {
	id   uint64
	s    *State // the new state, privatized along written paths
	base *State // the state the command started from, never written
}

func begin(s *State) *txn {
	ns := *s
	t := &txn{id: txnSeq.Add(1), s: &ns, base: s}
	ns.gen = t.id
	return t
}

func (t *txn) streamNamesMut() map[string]uint32 {
	if t.s.streamNamesGen != t.id {
		t.s.streamNames = maps.Clone(t.s.streamNames)
		t.s.streamNamesGen = t.id
	}
	return t.s.streamNames
}

// stream returns a private copy of live stream id.
func (t *txn) stream(id uint32) *Stream {
	st := t.s.streams.get(id)
	if st.gen != t.id {
		c := *st
		c.gen = t.id
		st = &c
		t.s.streams.set(t.id, id, st)
	}
	return st
}

func (t *txn) topicNamesMut(st *Stream) map[string]uint32 {
	if st.topicNamesGen != t.id {
		st.topicNames = maps.Clone(st.topicNames)
		st.topicNamesGen = t.id
	}
	return st.topicNames
}

// topic returns a private copy of live topic id of the private stream st.
func (t *txn) topic(st *Stream, id uint32) *Topic {
	tp := st.topics.get(id)
	if tp.gen != t.id {
		c := *tp
		c.gen = t.id
		tp = &c
		st.topics.set(t.id, id, tp)
	}
	return tp
}

// topicAt privatizes the path to (stream, topic).
func (t *txn) topicAt(stream, topic uint32) (*Stream, *Topic) {
	st := t.stream(stream)
	return st, t.topic(st, topic)
}

func (t *txn) partitionsMut(tp *Topic) []Partition {
	if tp.partitionsGen != t.id {
		tp.Partitions = slices.Clone(tp.Partitions)
		tp.partitionsGen = t.id
	}
	return tp.Partitions
}

func (t *txn) groupsMut(tp *Topic) []*ConsumerGroup {
	if tp.groupsGen != t.id {
		tp.groups = slices.Clone(tp.groups)
		tp.groupsGen = t.id
	}
	return tp.groups
}

func (t *txn) groupNamesMut(tp *Topic) map[string]uint32 {
	if tp.groupNamesGen != t.id {
		tp.groupNames = maps.Clone(tp.groupNames)
		tp.groupNamesGen = t.id
	}
	return tp.groupNames
}

// group returns a private copy of the group at index i of the private
// topic tp. Members are small, so they are copied with the group.
func (t *txn) group(tp *Topic, i int) *ConsumerGroup {
	gs := t.groupsMut(tp)
	g := gs[i]
	if g.gen != t.id {
		c := *g
		c.gen = t.id
		c.Members = make([]Member, len(g.Members))
		for j, m := range g.Members {
			m.Partitions = slices.Clone(m.Partitions)
			c.Members[j] = m
		}
		g = &c
		gs[i] = g
	}
	return g
}

func (t *txn) usersMut() []*User {
	if t.s.usersGen != t.id {
		t.s.users = slices.Clone(t.s.users)
		t.s.usersGen = t.id
	}
	return t.s.users
}

func (t *txn) userNamesMut() map[string]uint32 {
	if t.s.userNamesGen != t.id {
		t.s.userNames = maps.Clone(t.s.userNames)
		t.s.userNamesGen = t.id
	}
	return t.s.userNames
}

// user returns a private copy of the user at index i (tokens included).
func (t *txn) user(i int) *User {
	us := t.usersMut()
	u := us[i]
	if u.gen != t.id {
		c := *u
		c.gen = t.id
		c.Tokens = slices.Clone(u.Tokens)
		u = &c
		us[i] = u
	}
	return u
}

func (t *txn) tokensMut() map[TokenHash]tokenRef {
	if t.s.tokensGen != t.id {
		t.s.tokens = maps.Clone(t.s.tokens)
		t.s.tokensGen = t.id
	}
	return t.s.tokens
}

func (t *txn) bumpRevision() uint64 {
	t.s.revision++
	return t.s.revision
}
