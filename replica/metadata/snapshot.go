package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/iggo/iggo/wire"
	"github.com/zeebo/xxh3"
)

// Snapshot file framing; the byte layout is documented in doc.go.
const (
	snapshotMagic   = "IGGOMETA"
	SnapshotVersion = uint32(4)
	// snapshotVersionV3 is still decoded: its members have no pending
	// hand-offs (cooperative rebalancing came with version 4).
	snapshotVersionV3 = uint32(3)
	// snapshotVersionV1 is still decoded: its members carry no node and
	// boot (they decode with Node 0, Boot BootUnknown).
	snapshotVersionV1 = uint32(1)
	// snapshotVersionV2 is still decoded: it has no revoked access tokens.
	snapshotVersionV2   = uint32(2)
	snapshotHeaderSize  = 24
	snapshotTrailerSize = 8
)

// ErrSnapshot wraps every snapshot decoding failure.
var ErrSnapshot = errors.New("metadata snapshot")

// EncodeSnapshot serializes s deterministically: equal states give equal
// bytes on every replica.
func EncodeSnapshot(s *State) []byte { return encodeSnapshot(s, SnapshotVersion) }

// encodeSnapshot writes version (SnapshotVersion, or snapshotVersionV1
// for the tests of the previous format: members lose Node and Boot).
func encodeSnapshot(s *State, version uint32) []byte {
	w := &writer{buf: make([]byte, snapshotHeaderSize, 4096), v1: version == snapshotVersionV1, v4: version >= SnapshotVersion}
	copy(w.buf, snapshotMagic)
	binary.LittleEndian.PutUint32(w.buf[8:], version)
	w.u64(s.lastApplied)
	w.u64(s.revision)
	w.boolean(s.bootstrapped)
	w.u32(s.nextUserID)
	l := s.limits
	for _, v := range []uint32{l.MaxStreams, l.MaxTopicsPerStream, l.MaxPartitionsPerTopic, l.MaxPartitionsPerRequest, l.MaxTokensPerUser, l.MaxUsers} {
		w.u32(v)
	}
	w.u32(s.streams.live)
	for st := range s.streams.all {
		w.u32(st.ID)
		w.u64(st.CreatedAt)
		w.u64(st.Revision)
		w.str8(st.Name)
		w.options(st.Options)
		w.u32(st.topics.live)
		for t := range st.topics.all {
			w.topic(t)
		}
	}
	w.u32(uint32(len(s.users)))
	for _, u := range s.users {
		w.u32(u.ID)
		w.u64(u.CreatedAt)
		w.u8(uint8(u.Status))
		w.str8(u.Username)
		w.str16(u.PasswordHash)
		w.options(u.Options)
		w.permissions(u.Permissions)
		w.u32(uint32(len(u.Tokens)))
		for _, p := range u.Tokens {
			w.str8(p.Name)
			w.buf = append(w.buf, p.Hash[:]...)
			w.u64(p.CreatedAt)
			w.u64(p.ExpiryAt)
		}
	}
	if version >= snapshotVersionV3 {
		w.u32(uint32(len(s.revoked)))
		for _, r := range s.revoked {
			w.buf = append(w.buf, r.ID[:]...)
			w.u64(r.Expiry)
		}
	}
	binary.LittleEndian.PutUint64(w.buf[16:], uint64(len(w.buf)-snapshotHeaderSize))
	return binary.LittleEndian.AppendUint64(w.buf, xxh3.Hash(w.buf))
}

type writer struct {
	buf []byte
	v1  bool
	v4  bool
}

func (w *writer) u8(v uint8)   { w.buf = append(w.buf, v) }
func (w *writer) u16(v uint16) { w.buf = binary.LittleEndian.AppendUint16(w.buf, v) }
func (w *writer) u32(v uint32) { w.buf = binary.LittleEndian.AppendUint32(w.buf, v) }
func (w *writer) u64(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }
func (w *writer) boolean(v bool) {
	if v {
		w.u8(1)
	} else {
		w.u8(0)
	}
}
func (w *writer) str8(s string)  { w.u8(uint8(len(s))); w.buf = append(w.buf, s...) }
func (w *writer) str16(s string) { w.u16(uint16(len(s))); w.buf = append(w.buf, s...) }

func (w *writer) options(opts wire.Options) {
	w.u32(uint32(len(opts)))
	for _, o := range opts {
		w.str8(string(o.Key.Value))
		w.u8(uint8(o.Value.Kind))
		w.u8(uint8(len(o.Value.Value)))
		w.buf = append(w.buf, o.Value.Value...)
	}
}

func (w *writer) topic(t *Topic) {
	w.u32(t.ID)
	w.u64(t.CreatedAt)
	w.u64(t.Revision)
	w.str8(t.Name)
	c := t.Config
	w.u8(uint8(c.Compression))
	w.u64(c.MessageExpiry)
	w.u64(c.MaxTopicSize)
	w.u64(c.SegmentSize)
	w.boolean(c.EnforceFsync)
	w.u32(c.MessagesRequiredToSave)
	w.u64(c.SizeOfMessagesRequiredToSave)
	w.boolean(c.PreallocateSegments)
	w.u8(uint8(c.Durability))
	w.u8(uint8(c.ConsumerOffsetDurability))
	w.options(t.Explicit)
	w.options(t.Derived)
	w.u32(uint32(len(t.Partitions)))
	for _, p := range t.Partitions {
		w.u64(p.CreatedAt)
		w.u64(p.Revision)
		w.u64(p.PurgeGeneration)
	}
	w.u32(t.NextGroupID)
	w.u32(uint32(len(t.groups)))
	for _, g := range t.groups {
		w.u32(g.ID)
		w.str8(g.Name)
		w.u64(g.Generation)
		w.u32(g.NextMemberID)
		w.u32(uint32(len(g.Members)))
		for _, m := range g.Members {
			w.u32(m.ID)
			w.u64(m.Client.Lo)
			w.u64(m.Client.Hi)
			if !w.v1 {
				w.u8(m.Node)
				w.u64(m.Boot)
			}
			w.u32(uint32(len(m.Partitions)))
			for _, p := range m.Partitions {
				w.u32(p)
			}
			if w.v4 {
				w.u32(uint32(len(m.Revoking)))
				for _, r := range m.Revoking {
					w.u32(r.Partition)
					w.u32(r.Target)
					w.u64(r.Since)
				}
			}
		}
	}
}

func (w *writer) permissions(p *Permissions) {
	if p == nil {
		w.u8(0)
		return
	}
	w.u8(1)
	g := p.Global
	for _, b := range []bool{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams,
		g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages} {
		w.boolean(b)
	}
	w.u32(uint32(len(p.Streams)))
	for _, sp := range p.Streams {
		w.u32(sp.StreamID)
		for _, b := range []bool{sp.ManageStream, sp.ReadStream, sp.ManageTopics, sp.ReadTopics, sp.PollMessages, sp.SendMessages} {
			w.boolean(b)
		}
		w.u32(uint32(len(sp.Topics)))
		for _, tp := range sp.Topics {
			w.u32(tp.TopicID)
			for _, b := range []bool{tp.ManageTopic, tp.ReadTopic, tp.PollMessages, tp.SendMessages} {
				w.boolean(b)
			}
		}
	}
}

// DecodeSnapshot verifies and decodes a snapshot. It accepts exactly the
// bytes EncodeSnapshot produces for some reachable state: anything else
// (bad framing or checksum, unknown version, non-canonical encodings,
// broken invariants, trailing bytes) is an error wrapping ErrSnapshot. It
// never panics.
func DecodeSnapshot(b []byte) (*State, error) {
	if len(b) < snapshotHeaderSize+snapshotTrailerSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the framing", ErrSnapshot, len(b))
	}
	if string(b[:8]) != snapshotMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrSnapshot)
	}
	v := binary.LittleEndian.Uint32(b[8:])
	if v != SnapshotVersion && v != snapshotVersionV3 && v != snapshotVersionV2 && v != snapshotVersionV1 {
		return nil, fmt.Errorf("%w: unsupported version %d", ErrSnapshot, v)
	}
	if binary.LittleEndian.Uint32(b[12:]) != 0 {
		return nil, fmt.Errorf("%w: reserved header bytes are not zero", ErrSnapshot)
	}
	body := len(b) - snapshotHeaderSize - snapshotTrailerSize
	if n := binary.LittleEndian.Uint64(b[16:]); n != uint64(body) {
		return nil, fmt.Errorf("%w: payload length %d, file holds %d", ErrSnapshot, n, body)
	}
	end := len(b) - snapshotTrailerSize
	if sum := binary.LittleEndian.Uint64(b[end:]); sum != xxh3.Hash(b[:end]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrSnapshot)
	}
	return decodePayload(b[snapshotHeaderSize:end], v)
}

// DecodeSnapshotPayload decodes a current-version payload without the
// framing (fuzzing reaches the decoder past the checksum through it).
func DecodeSnapshotPayload(p []byte) (*State, error) { return decodePayload(p, SnapshotVersion) }

type reader struct {
	b   []byte
	err error
	// v1: the payload is snapshot version 1 (members without node and
	// boot).
	v1 bool
	// v4: members carry their pending hand-offs.
	v4 bool
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrSnapshot}, args...)...)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("truncated: need %d bytes, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) boolean() bool {
	v := r.u8()
	if v > 1 {
		r.fail("boolean byte %d", v)
	}
	return v == 1
}

func (r *reader) str8() string  { return string(r.take(int(r.u8()))) }
func (r *reader) str16() string { return string(r.take(int(r.u16()))) }

func (r *reader) name(what string) string {
	s := r.str8()
	if r.err == nil && !ValidName(s) {
		r.fail("invalid %s name %q", what, s)
	}
	return s
}

// count reads a u32 element count and rejects counts that cannot fit in
// the remaining bytes, so a corrupt count cannot force a huge allocation.
func (r *reader) count(minSize int) int {
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(minSize) > uint64(len(r.b)) {
		r.fail("count %d exceeds the remaining %d bytes", n, len(r.b))
		return 0
	}
	return int(n)
}

// options reads a block; the decoded entries own their bytes.
func (r *reader) options() wire.Options {
	n := r.count(5)
	if n == 0 {
		return nil
	}
	out := make(wire.Options, 0, n)
	for range n {
		key := r.name("option key")
		kind := wire.HeaderKind(r.u8())
		val := r.take(int(r.u8()))
		if r.err != nil {
			return nil
		}
		if !kind.Known() || len(val) == 0 {
			r.fail("option %q: kind %d, %d value bytes", key, kind, len(val))
			return nil
		}
		value := wire.HeaderValue{Kind: kind, Value: slices.Clone(val)}
		if kind == wire.KindString {
			value = sharedString(string(val))
		}
		out = append(out, wire.HeaderEntry{Key: sharedString(key), Value: value})
	}
	return out
}

func decodePayload(p []byte, version uint32) (*State, error) {
	r := &reader{b: p, v1: version == snapshotVersionV1, v4: version >= SnapshotVersion}
	s := NewState()
	s.lastApplied = r.u64()
	s.revision = r.u64()
	s.bootstrapped = r.boolean()
	s.nextUserID = r.u32()
	s.limits = Limits{
		MaxStreams: r.u32(), MaxTopicsPerStream: r.u32(), MaxPartitionsPerTopic: r.u32(),
		MaxPartitionsPerRequest: r.u32(), MaxTokensPerUser: r.u32(), MaxUsers: r.u32(),
	}
	if r.err == nil && !s.limits.Valid() {
		r.fail("invalid limits %+v", s.limits)
	}
	n := r.count(29)
	for range n {
		st := r.stream(s)
		if r.err != nil {
			return nil, r.err
		}
		if s.streams.live > 0 && st.ID < s.streams.size {
			return nil, fmt.Errorf("%w: stream ids not ascending at %d", ErrSnapshot, st.ID)
		}
		if st.ID >= NamespaceMaxStreams {
			return nil, fmt.Errorf("%w: stream id %d outside the namespace", ErrSnapshot, st.ID)
		}
		if _, dup := s.streamNames[st.Name]; dup {
			return nil, fmt.Errorf("%w: duplicate stream name %q", ErrSnapshot, st.Name)
		}
		s.streams.set(0, st.ID, st)
		s.streamNames[st.Name] = st.ID
	}
	un := r.count(22)
	for range un {
		u := r.user()
		if r.err != nil {
			return nil, r.err
		}
		if len(s.users) > 0 && s.users[len(s.users)-1].ID >= u.ID {
			return nil, fmt.Errorf("%w: user ids not ascending at %d", ErrSnapshot, u.ID)
		}
		if u.ID >= s.nextUserID {
			return nil, fmt.Errorf("%w: user id %d not below next id %d", ErrSnapshot, u.ID, s.nextUserID)
		}
		if _, dup := s.userNames[u.Username]; dup {
			return nil, fmt.Errorf("%w: duplicate username %q", ErrSnapshot, u.Username)
		}
		s.users = append(s.users, u)
		s.userNames[u.Username] = u.ID
		for _, pat := range u.Tokens {
			if _, dup := s.tokens[pat.Hash]; dup {
				return nil, fmt.Errorf("%w: duplicate token hash (user %d)", ErrSnapshot, u.ID)
			}
			s.tokens[pat.Hash] = tokenRef{user: u.ID, name: pat.Name}
		}
	}
	if version >= snapshotVersionV3 {
		rn := r.count(24)
		for range rn {
			var e RevokedToken
			copy(e.ID[:], r.take(len(e.ID)))
			e.Expiry = r.u64()
			if r.err != nil {
				return nil, r.err
			}
			if len(s.revoked) > 0 && bytes.Compare(s.revoked[len(s.revoked)-1].ID[:], e.ID[:]) >= 0 {
				return nil, fmt.Errorf("%w: revoked token ids not ascending", ErrSnapshot)
			}
			s.revoked = append(s.revoked, e)
		}
		if len(s.revoked) > MaxRevokedAccessTokens {
			return nil, fmt.Errorf("%w: %d revoked tokens exceed %d", ErrSnapshot, len(s.revoked), MaxRevokedAccessTokens)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrSnapshot, len(r.b))
	}
	if root := s.User(RootUserID); s.bootstrapped != (root != nil) {
		return nil, fmt.Errorf("%w: bootstrapped=%v but root user present=%v", ErrSnapshot, s.bootstrapped, root != nil)
	}
	if !s.bootstrapped && (len(s.users) > 0 || s.nextUserID != 0) {
		return nil, fmt.Errorf("%w: users exist before bootstrap", ErrSnapshot)
	}
	return s, nil
}

func (r *reader) stream(s *State) *Stream {
	st := &Stream{topicNames: map[string]uint32{}}
	st.ID = r.u32()
	st.CreatedAt = r.u64()
	st.Revision = r.u64()
	st.Name = r.name("stream")
	st.Options = r.options()
	if r.err == nil && len(st.Options) > 0 {
		r.fail("stream %d has options outside its (empty) catalog", st.ID)
	}
	if r.err == nil && st.Revision > s.revision {
		r.fail("stream %d revision %d above state revision %d", st.ID, st.Revision, s.revision)
	}
	n := r.count(83)
	for range n {
		t := r.topic(st, s)
		if r.err != nil {
			return nil
		}
		if st.topics.live > 0 && t.ID < st.topics.size {
			r.fail("topic ids not ascending at %d/%d", st.ID, t.ID)
			return nil
		}
		if t.ID >= NamespaceMaxTopics {
			r.fail("topic id %d/%d outside the namespace", st.ID, t.ID)
			return nil
		}
		if _, dup := st.topicNames[t.Name]; dup {
			r.fail("duplicate topic name %q in stream %d", t.Name, st.ID)
			return nil
		}
		st.topics.set(0, t.ID, t)
		st.topicNames[t.Name] = t.ID
	}
	return st
}

func (r *reader) topic(st *Stream, s *State) *Topic {
	t := &Topic{StreamID: st.ID, groupNames: map[string]uint32{}}
	t.ID = r.u32()
	t.CreatedAt = r.u64()
	t.Revision = r.u64()
	t.Name = r.name("topic")
	c := &t.Config
	c.Compression = Compression(r.u8())
	c.CompressionAlgorithm = c.Compression.algorithm()
	c.MessageExpiry = r.u64()
	c.MaxTopicSize = r.u64()
	c.SegmentSize = r.u64()
	c.EnforceFsync = r.boolean()
	c.MessagesRequiredToSave = r.u32()
	c.SizeOfMessagesRequiredToSave = r.u64()
	c.PreallocateSegments = r.boolean()
	c.Durability = Durability(r.u8())
	c.ConsumerOffsetDurability = Durability(r.u8())
	t.Explicit = r.options()
	t.Derived = r.options()
	if r.err != nil {
		return nil
	}
	if !validTopicConfig(*c) {
		r.fail("topic %d/%d has an invalid configuration %+v", st.ID, t.ID, *c)
		return nil
	}
	if !validOptionBlocks(*c, t.Explicit, t.Derived) {
		if !legacyOptionBlocks(*c, t.Explicit, t.Derived) {
			r.fail("topic %d/%d option blocks do not match its configuration", st.ID, t.ID)
			return nil
		}
		// Written before compression_codec existed: the same blocks
		// with the key added to the derived block.
		t.Explicit, t.Derived = splitTopicOptions(*c, optionKeys(t.Explicit))
	}
	if t.Revision > s.revision {
		r.fail("topic %d/%d revision above state revision", st.ID, t.ID)
		return nil
	}
	pn := r.count(24)
	if r.err == nil && uint32(pn) > NamespaceMaxPartitions {
		r.fail("topic %d/%d has %d partitions", st.ID, t.ID, pn)
	}
	if r.err != nil {
		return nil
	}
	t.Partitions = make([]Partition, pn)
	for i := range t.Partitions {
		t.Partitions[i] = Partition{ID: uint32(i), CreatedAt: r.u64(), Revision: r.u64(), PurgeGeneration: r.u64()}
		if r.err == nil && t.Partitions[i].Revision > s.revision {
			r.fail("partition %d/%d/%d revision above state revision", st.ID, t.ID, i)
		}
	}
	t.NextGroupID = r.u32()
	gn := r.count(21)
	for range gn {
		g := r.group(uint32(pn))
		if r.err != nil {
			return nil
		}
		if g.ID >= t.NextGroupID || (len(t.groups) > 0 && t.groups[len(t.groups)-1].ID >= g.ID) {
			r.fail("group ids of topic %d/%d not ascending below %d at %d", st.ID, t.ID, t.NextGroupID, g.ID)
			return nil
		}
		if _, dup := t.groupNames[g.Name]; dup {
			r.fail("duplicate group name %q in topic %d/%d", g.Name, st.ID, t.ID)
			return nil
		}
		t.groups = append(t.groups, g)
		t.groupNames[g.Name] = g.ID
	}
	return t
}

// validOptionBlocks checks that explicit and derived are exactly the
// canonical split of c for some set of explicit keys.
func validOptionBlocks(c TopicConfig, explicit, derived wire.Options) bool {
	ex, de := splitTopicOptions(c, optionKeys(explicit))
	return optionsEqual(ex, explicit) && optionsEqual(de, derived)
}

func optionKeys(o wire.Options) map[string]bool {
	set := make(map[string]bool, len(o))
	for _, e := range o {
		set[string(e.Key.Value)] = true
	}
	return set
}

// legacyOptionBlocks accepts the blocks a snapshot written before
// compression_codec existed holds: the canonical split without that key,
// for a topic compressed with none or gzip (the only codecs then).
func legacyOptionBlocks(c TopicConfig, explicit, derived wire.Options) bool {
	if c.Compression != CompressionNone && c.Compression != CompressionGzip {
		return false
	}
	set := optionKeys(explicit)
	if set[OptCompressionCodec] {
		return false
	}
	ex, de := splitTopicOptions(c, set)
	de = slices.DeleteFunc(de, func(e wire.HeaderEntry) bool { return string(e.Key.Value) == OptCompressionCodec })
	return optionsEqual(ex, explicit) && optionsEqual(de, derived)
}

func (r *reader) group(partitions uint32) *ConsumerGroup {
	g := &ConsumerGroup{}
	g.ID = r.u32()
	g.Name = r.name("consumer group")
	g.Generation = r.u64()
	g.NextMemberID = r.u32()
	memberSize := 33
	if r.v1 {
		memberSize = 24
	}
	n := r.count(memberSize)
	if r.err != nil {
		return nil
	}
	owned := 0
	g.Members = make([]Member, 0, n)
	for range n {
		m := Member{ID: r.u32(), Client: ClientID{Lo: r.u64(), Hi: r.u64()}, Boot: BootUnknown}
		if !r.v1 {
			m.Node, m.Boot = r.u8(), r.u64()
		}
		pn := r.count(4)
		if r.err != nil {
			return nil
		}
		if m.ID >= g.NextMemberID || m.Client.IsZero() {
			r.fail("group %d member id %d (next %d) or zero client", g.ID, m.ID, g.NextMemberID)
			return nil
		}
		for _, o := range g.Members {
			if o.ID == m.ID || o.Client == m.Client {
				r.fail("group %d has duplicate member %d / client %s", g.ID, m.ID, m.Client)
				return nil
			}
		}
		if pn > 0 {
			m.Partitions = make([]uint32, pn)
		}
		for i := range m.Partitions {
			m.Partitions[i] = r.u32()
			if r.err == nil && (m.Partitions[i] >= partitions || (i > 0 && m.Partitions[i-1] >= m.Partitions[i])) {
				r.fail("group %d member %d partitions not ascending below %d", g.ID, m.ID, partitions)
			}
		}
		if r.v4 {
			rn := r.count(16)
			for i := 0; i < rn && r.err == nil; i++ {
				rv := Revocation{Partition: r.u32(), Target: r.u32(), Since: r.u64()}
				if r.err == nil && (!slices.Contains(m.Partitions, rv.Partition) || rv.Target >= g.NextMemberID || rv.Target == m.ID ||
					(i > 0 && m.Revoking[i-1].Partition >= rv.Partition)) {
					r.fail("group %d member %d hand-off of partition %d to %d is not one of its partitions, ascending, to another member", g.ID, m.ID, rv.Partition, rv.Target)
				}
				m.Revoking = append(m.Revoking, rv)
			}
		}
		owned += pn
		g.Members = append(g.Members, m)
	}
	if r.err == nil && n > 0 && owned != int(partitions) {
		// With members, every partition has exactly one owner: ascending
		// per member and summing to the count leaves only duplicates
		// across members, which the full check below catches.
		r.fail("group %d owns %d of %d partitions", g.ID, owned, partitions)
	}
	if r.err == nil && n > 0 {
		seen := make([]bool, partitions)
		for _, m := range g.Members {
			for _, p := range m.Partitions {
				if seen[p] {
					r.fail("group %d partition %d has two owners", g.ID, p)
					return nil
				}
				seen[p] = true
			}
		}
	}
	if r.err == nil && n == 0 && owned != 0 {
		r.fail("group %d without members owns partitions", g.ID)
	}
	return g
}

func (r *reader) user() *User {
	u := &User{}
	u.ID = r.u32()
	u.CreatedAt = r.u64()
	u.Status = UserStatus(r.u8())
	u.Username = r.str8()
	u.PasswordHash = r.str16()
	u.Options = r.options()
	if r.err != nil {
		return nil
	}
	if u.Status != UserActive && u.Status != UserInactive {
		r.fail("user %d status %d", u.ID, u.Status)
		return nil
	}
	if ValidateUsername(u.Username) != OK || u.PasswordHash == "" || len(u.Options) > 0 {
		r.fail("user %d has an invalid name, empty hash or options", u.ID)
		return nil
	}
	u.Permissions = r.permissions()
	if r.err == nil && u.ID == RootUserID && !permissionsEqual(u.Permissions, AllPermissions()) {
		r.fail("root user without all permissions")
	}
	n := r.count(50)
	for range n {
		p := PersonalAccessToken{Name: r.name("token")}
		copy(p.Hash[:], r.take(32))
		p.CreatedAt = r.u64()
		p.ExpiryAt = r.u64()
		if r.err != nil {
			return nil
		}
		if len(u.Tokens) > 0 && u.Tokens[len(u.Tokens)-1].Name >= p.Name {
			r.fail("user %d token names not ascending at %q", u.ID, p.Name)
			return nil
		}
		u.Tokens = append(u.Tokens, p)
	}
	return u
}

func (r *reader) permissions() *Permissions {
	if !r.boolean() || r.err != nil {
		return nil
	}
	b := func() bool { return r.boolean() }
	p := &Permissions{Global: wire.GlobalPermissions{
		ManageServers: b(), ReadServers: b(), ManageUsers: b(), ReadUsers: b(), ManageStreams: b(),
		ReadStreams: b(), ManageTopics: b(), ReadTopics: b(), PollMessages: b(), SendMessages: b(),
	}}
	n := r.count(14)
	for range n {
		sp := wire.StreamPermissions{StreamID: r.u32(), ManageStream: b(), ReadStream: b(), ManageTopics: b(),
			ReadTopics: b(), PollMessages: b(), SendMessages: b()}
		if r.err == nil && len(p.Streams) > 0 && p.Streams[len(p.Streams)-1].StreamID >= sp.StreamID {
			r.fail("permission stream ids not ascending at %d", sp.StreamID)
		}
		tn := r.count(8)
		for range tn {
			tp := wire.TopicPermissions{TopicID: r.u32(), ManageTopic: b(), ReadTopic: b(), PollMessages: b(), SendMessages: b()}
			if r.err == nil && len(sp.Topics) > 0 && sp.Topics[len(sp.Topics)-1].TopicID >= tp.TopicID {
				r.fail("permission topic ids not ascending at %d", tp.TopicID)
			}
			sp.Topics = append(sp.Topics, tp)
		}
		if r.err != nil {
			return nil
		}
		p.Streams = append(p.Streams, sp)
	}
	return p
}
