package metadata

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"github.com/iggo/iggo/wire"
)

// RootUserID is the id of the root user, created by Bootstrap.
const RootUserID uint32 = 0

// UserStatus is a user's account status, numbered as on the wire.
type UserStatus uint8

// User statuses.
const (
	UserActive   UserStatus = 1
	UserInactive UserStatus = 2
)

// Limits bound the state. They are part of the replicated state (set by
// Bootstrap, changed by SetLimits) so that every replica enforces the
// same values whatever its local configuration says.
type Limits struct {
	// MaxStreams caps live streams; stream ids stay below it. At most
	// 1<<20, the namespace's stream field.
	MaxStreams uint32
	// MaxTopicsPerStream caps live topics of one stream; topic ids stay
	// below it. At most 4096, the namespace's topic field.
	MaxTopicsPerStream uint32
	// MaxPartitionsPerTopic caps a topic's partitions (ids stay below it).
	MaxPartitionsPerTopic uint32
	// MaxPartitionsPerRequest caps one create-topic / create-partitions /
	// delete-partitions request.
	MaxPartitionsPerRequest uint32
	// MaxTokensPerUser caps personal access tokens per user.
	MaxTokensPerUser uint32
	// MaxUsers caps user accounts (root included).
	MaxUsers uint32
}

// Namespace ceilings (the packed stream/topic/partition namespace).
const (
	NamespaceMaxStreams    uint32 = 1 << 20
	NamespaceMaxTopics     uint32 = 4096
	NamespaceMaxPartitions uint32 = 1_000_000
)

// DefaultLimits returns Iggy's limits.
func DefaultLimits() Limits {
	return Limits{
		MaxStreams:              NamespaceMaxStreams,
		MaxTopicsPerStream:      NamespaceMaxTopics,
		MaxPartitionsPerTopic:   NamespaceMaxPartitions,
		MaxPartitionsPerRequest: 1000,
		MaxTokensPerUser:        100,
		MaxUsers:                1 << 20,
	}
}

// Valid reports whether the limits fit the namespace and are usable.
func (l Limits) Valid() bool {
	return l.MaxStreams >= 1 && l.MaxStreams <= NamespaceMaxStreams &&
		l.MaxTopicsPerStream >= 1 && l.MaxTopicsPerStream <= NamespaceMaxTopics &&
		l.MaxPartitionsPerTopic >= 1 && l.MaxPartitionsPerTopic <= NamespaceMaxPartitions &&
		l.MaxPartitionsPerRequest >= 1 && l.MaxTokensPerUser >= 1 && l.MaxUsers >= 1
}

// State is one immutable version of the metadata. Apply never modifies a
// State it was given; it returns a new one sharing unchanged parts. Every
// value reachable from a State (streams, topics, groups, users, their
// slices and maps) is shared and must be treated as read-only.
type State struct {
	gen uint64

	lastApplied  uint64
	revision     uint64
	bootstrapped bool
	limits       Limits

	streams        table[Stream]
	streamNames    map[string]uint32
	streamNamesGen uint64

	users        []*User // ascending id
	usersGen     uint64
	userNames    map[string]uint32
	userNamesGen uint64
	nextUserID   uint32

	tokens    map[TokenHash]tokenRef
	tokensGen uint64

	// revoked lists logged-out HTTP access tokens until their expiry,
	// ascending by ID. Replaced, never written in place.
	revoked []RevokedToken
}

// RevokedToken is one logged-out access token: its ID and its expiry
// (unix seconds).
type RevokedToken struct {
	ID     [16]byte
	Expiry uint64
}

// AccessTokenRevoked reports whether the access token with this ID was
// logged out and has not expired at now (unix seconds; 0: any expiry).
func (s *State) AccessTokenRevoked(id [16]byte, now uint64) bool {
	i, found := slices.BinarySearchFunc(s.revoked, id, func(r RevokedToken, id [16]byte) int { return bytes.Compare(r.ID[:], id[:]) })
	return found && (now == 0 || s.revoked[i].Expiry > now)
}

// RevokedTokens is the revocation list, ascending by ID.
func (s *State) RevokedTokens() []RevokedToken { return s.revoked }

type tokenRef struct {
	user uint32
	name string
}

// Stream is one stream. Exported fields are read-only.
type Stream struct {
	ID        uint32
	Name      string
	CreatedAt uint64 // µs, the creating prepare's timestamp
	// Revision is the state revision at creation; a stream created later
	// under a reused id has a larger one.
	Revision uint64
	Options  wire.Options

	gen           uint64
	topics        table[Topic]
	topicNames    map[string]uint32
	topicNamesGen uint64
}

// Topic is one topic. Exported fields are read-only.
type Topic struct {
	StreamID  uint32
	ID        uint32
	Name      string
	CreatedAt uint64
	Revision  uint64
	Config    TopicConfig
	// Explicit and Derived are the canonical option blocks reported by
	// GET_TOPIC: keys the client sent, and keys filled from defaults.
	Explicit wire.Options
	Derived  wire.Options
	// Partitions are dense: Partitions[i].ID == i.
	Partitions []Partition
	// NextGroupID is the id the next consumer group gets; group ids are
	// never reused within a topic so a new group cannot inherit offsets.
	NextGroupID uint32

	gen           uint64
	partitionsGen uint64
	groups        []*ConsumerGroup // ascending id
	groupsGen     uint64
	groupNames    map[string]uint32
	groupNamesGen uint64
}

// Partition is one partition's metadata; its data and statistics live on
// the owning shard.
type Partition struct {
	ID        uint32
	CreatedAt uint64
	// Revision is the state revision that created it: a partition id
	// reused after delete + create (or under a reused stream/topic id) has
	// a larger revision, which is how storage tells incarnations apart.
	Revision uint64
	// PurgeGeneration counts committed purges of this partition.
	PurgeGeneration uint64
}

// ConsumerGroup is one consumer group. Exported fields are read-only.
type ConsumerGroup struct {
	ID         uint32
	Name       string
	Generation uint64 // bumped on every rebalance
	// NextMemberID is the id the next member gets (never reused).
	NextMemberID uint32
	// Members in member (join) order; partitions are dealt round-robin in
	// this order.
	Members []Member

	gen uint64
}

// Member is one consumer-group member, keyed by its client id.
type Member struct {
	ID     uint32
	Client ClientID
	// Node is the replica id of the node holding the member's connection
	// (0 on a single node) and Boot that node's incarnation (its start,
	// µs since the Unix epoch) when the member joined. EvictNodeMembers
	// removes the members of a node's earlier boots. Members restored from
	// a format that did not record them have Boot == BootUnknown and are
	// never evicted by node.
	Node       uint8
	Boot       uint64
	Partitions []uint32 // ascending
	// Revoking lists partitions of Partitions being handed to another
	// member cooperatively (ascending by partition): the member keeps them
	// for commits, no longer polls them, until CompleteRevocation moves
	// them (it committed what it polled, or consumer_group.
	// rebalancing_timeout passed).
	Revoking []Revocation
}

// Revocation is a pending cooperative hand-off of one partition.
type Revocation struct {
	Partition uint32
	// Target is the member id the partition goes to.
	Target uint32
	// Since is the timestamp of the op that created it (the primary's
	// clock, µs since the Unix epoch).
	Since uint64
}

// revoking reports whether partition is pending hand-off from m.
func (m Member) revoking(partition uint32) bool {
	return slices.ContainsFunc(m.Revoking, func(r Revocation) bool { return r.Partition == partition })
}

// Pollable is the member's partitions it may poll: those it owns and is
// not handing off.
func (m Member) Pollable() []uint32 {
	if len(m.Revoking) == 0 {
		return m.Partitions
	}
	out := make([]uint32, 0, len(m.Partitions))
	for _, p := range m.Partitions {
		if !m.revoking(p) {
			out = append(out, p)
		}
	}
	return out
}

// BootUnknown is the Boot of a member whose node boot was not recorded
// (joined under snapshot version 1 or prepare body version 1): no
// EvictNodeMembers.Before is above it.
const BootUnknown = math.MaxUint64

// User is one user account. Exported fields are read-only.
type User struct {
	ID           uint32
	Username     string
	PasswordHash string // Argon2id PHC string
	Status       UserStatus
	CreatedAt    uint64
	Permissions  *Permissions // nil = none
	Options      wire.Options
	// Tokens are the user's personal access tokens sorted by name.
	Tokens []PersonalAccessToken

	gen uint64
}

// PersonalAccessToken is a stored token: its hash, never the token.
type PersonalAccessToken struct {
	Name      string
	Hash      TokenHash
	CreatedAt uint64
	ExpiryAt  uint64 // µs; 0 = never expires
}

// Expired reports whether the token is expired at now (µs).
func (p PersonalAccessToken) Expired(now uint64) bool {
	return p.ExpiryAt != 0 && p.ExpiryAt <= now
}

// NewState returns the empty, not yet bootstrapped state.
func NewState() *State {
	return &State{
		limits:      DefaultLimits(),
		streamNames: map[string]uint32{},
		userNames:   map[string]uint32{},
		tokens:      map[TokenHash]tokenRef{},
	}
}

// LastApplied is the op number of the last applied command (Meta.Op).
func (s *State) LastApplied() uint64 { return s.lastApplied }

// Revision is bumped by every command that creates, deletes or purges
// partitions (and so by stream/topic creation and deletion).
func (s *State) Revision() uint64 { return s.revision }

// Bootstrapped reports whether the root user exists.
func (s *State) Bootstrapped() bool { return s.bootstrapped }

// Limits returns the replicated limits.
func (s *State) Limits() Limits { return s.limits }

// Stream returns the stream with id, or nil.
func (s *State) Stream(id uint32) *Stream { return s.streams.get(id) }

// StreamByName returns the stream named name, or nil.
func (s *State) StreamByName(name string) *Stream {
	id, ok := s.streamNames[name]
	if !ok {
		return nil
	}
	return s.streams.get(id)
}

// ResolveStream resolves an identifier to a stream, or nil.
func (s *State) ResolveStream(id Identifier) *Stream {
	if n, ok := id.Numeric(); ok {
		return s.Stream(n)
	}
	name, _ := id.Name()
	return s.StreamByName(name)
}

// Streams returns the live streams in ascending id order.
func (s *State) Streams() []*Stream {
	out := make([]*Stream, 0, s.streams.live)
	for st := range s.streams.all {
		out = append(out, st)
	}
	return out
}

// StreamsCount is the number of live streams.
func (s *State) StreamsCount() int { return int(s.streams.live) }

// ResolveTopic resolves (stream, topic) identifiers, returning
// StreamIDNotFound or TopicIDNotFound when either is missing.
func (s *State) ResolveTopic(stream, topic Identifier) (*Stream, *Topic, wire.Code) {
	st := s.ResolveStream(stream)
	if st == nil {
		return nil, nil, wire.CodeStreamIdNotFound
	}
	t := st.ResolveTopic(topic)
	if t == nil {
		return st, nil, wire.CodeTopicIdNotFound
	}
	return st, t, OK
}

// ResolveGroup resolves (stream, topic, group) identifiers, returning
// 1009, 2010 or 5000 for the first level missing.
func (s *State) ResolveGroup(stream, topic, group Identifier) (*Topic, *ConsumerGroup, wire.Code) {
	_, t, code := s.ResolveTopic(stream, topic)
	if code != OK {
		return nil, nil, code
	}
	g := t.ResolveGroup(group)
	if g == nil {
		return t, nil, wire.CodeConsumerGroupIdNotFound
	}
	return t, g, OK
}

// Topic returns the topic with id, or nil.
func (st *Stream) Topic(id uint32) *Topic { return st.topics.get(id) }

// TopicByName returns the topic named name, or nil.
func (st *Stream) TopicByName(name string) *Topic {
	id, ok := st.topicNames[name]
	if !ok {
		return nil
	}
	return st.topics.get(id)
}

// ResolveTopic resolves an identifier to a topic of st, or nil.
func (st *Stream) ResolveTopic(id Identifier) *Topic {
	if n, ok := id.Numeric(); ok {
		return st.Topic(n)
	}
	name, _ := id.Name()
	return st.TopicByName(name)
}

// Topics returns the live topics in ascending id order.
func (st *Stream) Topics() []*Topic {
	out := make([]*Topic, 0, st.topics.live)
	for t := range st.topics.all {
		out = append(out, t)
	}
	return out
}

// TopicsCount is the number of live topics.
func (st *Stream) TopicsCount() int { return int(st.topics.live) }

// PartitionsCount is the number of partitions.
func (t *Topic) PartitionsCount() uint32 { return uint32(len(t.Partitions)) }

// Partition returns the partition with id, if present.
func (t *Topic) Partition(id uint32) (Partition, bool) {
	if uint64(id) >= uint64(len(t.Partitions)) {
		return Partition{}, false
	}
	return t.Partitions[id], true
}

// Groups returns the consumer groups in ascending id order (shared slice).
func (t *Topic) Groups() []*ConsumerGroup { return t.groups }

// Group returns the group with id, or nil.
func (t *Topic) Group(id uint32) *ConsumerGroup {
	i, ok := slices.BinarySearchFunc(t.groups, id, func(g *ConsumerGroup, id uint32) int {
		return cmpU32(g.ID, id)
	})
	if !ok {
		return nil
	}
	return t.groups[i]
}

// GroupByName returns the group named name, or nil.
func (t *Topic) GroupByName(name string) *ConsumerGroup {
	id, ok := t.groupNames[name]
	if !ok {
		return nil
	}
	return t.Group(id)
}

// ResolveGroup resolves an identifier to a group of t, or nil.
func (t *Topic) ResolveGroup(id Identifier) *ConsumerGroup {
	if n, ok := id.Numeric(); ok {
		return t.Group(n)
	}
	name, _ := id.Name()
	return t.GroupByName(name)
}

// Member returns the member registered by client, if any.
func (g *ConsumerGroup) Member(client ClientID) (Member, bool) {
	for _, m := range g.Members {
		if m.Client == client {
			return m, true
		}
	}
	return Member{}, false
}

// Assignment answers SYNC_CONSUMER_GROUP: the generation and the
// partitions client may poll (owned, not being handed off); ok is false
// when client is not a member.
func (g *ConsumerGroup) Assignment(client ClientID) (generation uint64, partitions []uint32, ok bool) {
	m, ok := g.Member(client)
	if !ok {
		return 0, nil, false
	}
	return g.Generation, m.Pollable(), true
}

// Owns reports whether client owns partition in g, a pending hand-off
// included (the offset-store fence: the old owner commits what it
// polled).
func (g *ConsumerGroup) Owns(client ClientID, partition uint32) bool {
	m, ok := g.Member(client)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(m.Partitions, partition)
	return found
}

// Pollable reports whether client owns partition in g and is not handing
// it off (the group poll fence).
func (g *ConsumerGroup) Pollable(client ClientID, partition uint32) bool {
	m, ok := g.Member(client)
	if !ok {
		return false
	}
	_, found := slices.BinarySearch(m.Partitions, partition)
	return found && !m.revoking(partition)
}

// PendingRevocation is one pending hand-off, with where its source member
// lives (PendingRevocations).
type PendingRevocation struct {
	Stream, Topic, Group uint32
	Source               Member
	Revocation
}

// PendingRevocations lists every pending hand-off, in stream, topic,
// group, member, partition order.
func (s *State) PendingRevocations() []PendingRevocation {
	var out []PendingRevocation
	for st := range s.streams.all {
		for t := range st.topics.all {
			for _, g := range t.groups {
				for _, m := range g.Members {
					for _, r := range m.Revoking {
						out = append(out, PendingRevocation{Stream: st.ID, Topic: t.ID, Group: g.ID, Source: m, Revocation: r})
					}
				}
			}
		}
	}
	return out
}

// GroupRef names one consumer group.
type GroupRef struct {
	Stream, Topic, Group uint32
}

// Memberships lists the groups client is a member of, in stream, topic,
// group id order (GET_CLIENT / GET_ME).
func (s *State) Memberships(client ClientID) []GroupRef {
	var out []GroupRef
	for st := range s.streams.all {
		for t := range st.topics.all {
			for _, g := range t.groups {
				if _, ok := g.Member(client); ok {
					out = append(out, GroupRef{st.ID, t.ID, g.ID})
				}
			}
		}
	}
	return out
}

// PartitionsTotal is the number of partitions across all topics.
func (s *State) PartitionsTotal() int {
	n := 0
	for st := range s.streams.all {
		for t := range st.topics.all {
			n += len(t.Partitions)
		}
	}
	return n
}

// PartitionsFit says whether adding n partitions keeps the node-wide total
// within max (0: no cap): OK, or TooManyPartitions.
func (s *State) PartitionsFit(n, max uint32) wire.Code {
	if max != 0 && uint64(s.PartitionsTotal())+uint64(n) > uint64(max) {
		return wire.CodeTooManyPartitions
	}
	return OK
}

// Counts are totals for GET_STATS.
type Counts struct {
	Streams, Topics, Partitions, ConsumerGroups, Users int
}

// Counts walks the state once.
func (s *State) Counts() Counts {
	c := Counts{Streams: int(s.streams.live), Users: len(s.users)}
	for st := range s.streams.all {
		c.Topics += int(st.topics.live)
		for t := range st.topics.all {
			c.Partitions += len(t.Partitions)
			c.ConsumerGroups += len(t.groups)
		}
	}
	return c
}

// User returns the user with id, or nil.
func (s *State) User(id uint32) *User {
	i, ok := slices.BinarySearchFunc(s.users, id, func(u *User, id uint32) int { return cmpU32(u.ID, id) })
	if !ok {
		return nil
	}
	return s.users[i]
}

// UserByName returns the user named name, or nil.
func (s *State) UserByName(name string) *User {
	id, ok := s.userNames[name]
	if !ok {
		return nil
	}
	return s.User(id)
}

// ResolveUser resolves an identifier to a user, or nil.
func (s *State) ResolveUser(id Identifier) *User {
	if n, ok := id.Numeric(); ok {
		return s.User(n)
	}
	name, _ := id.Name()
	return s.UserByName(name)
}

// Users returns the users in ascending id order (shared slice).
func (s *State) Users() []*User { return s.users }

// Token returns the user's token named name, if any.
func (u *User) Token(name string) (PersonalAccessToken, bool) {
	i, ok := findToken(u.Tokens, name)
	if !ok {
		return PersonalAccessToken{}, false
	}
	return u.Tokens[i], true
}

func findToken(tokens []PersonalAccessToken, name string) (int, bool) {
	return slices.BinarySearchFunc(tokens, name, func(p PersonalAccessToken, n string) int {
		return strings.Compare(p.Name, n)
	})
}

// TokenByHash finds a stored token by its hash (PAT login).
func (s *State) TokenByHash(h TokenHash) (*User, PersonalAccessToken, bool) {
	ref, ok := s.tokens[h]
	if !ok {
		return nil, PersonalAccessToken{}, false
	}
	u := s.User(ref.user)
	if u == nil {
		return nil, PersonalAccessToken{}, false
	}
	pat, ok := u.Token(ref.name)
	return u, pat, ok
}

// ExpiredTokens lists (user, name) of tokens expired at now, in user id
// then name order; the node feeds them to a DeleteExpiredTokens command.
func (s *State) ExpiredTokens(now uint64) []TokenRef {
	var out []TokenRef
	for _, u := range s.users {
		for _, p := range u.Tokens {
			if p.Expired(now) {
				out = append(out, TokenRef{User: u.ID, Name: p.Name})
			}
		}
	}
	return out
}

// TokenRef names one personal access token.
type TokenRef struct {
	User uint32
	Name string
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
