package metadata

import (
	"bytes"

	"github.com/iggo/iggo/wire"
)

// fataler is what the checks need from *testing.T, *testing.B and
// *rapid.T alike.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// machine drives a State through commands in tests, numbering ops and
// advancing a fake clock so every command has a distinct timestamp.
type machine struct {
	t  fataler
	s  *State
	op uint64
	ts uint64
}

func newMachine(t fataler) *machine {
	m := &machine{t: t, s: NewState(), ts: 1_700_000_000_000_000}
	if r := m.sys(Bootstrap{RootUsername: "iggy", RootPasswordHash: "root-hash", Limits: DefaultLimits()}); r.Code != OK {
		t.Fatalf("bootstrap: %v", r.Code)
	}
	return m
}

func (m *machine) meta(user uint32, client ClientID, system bool) Meta {
	m.op++
	m.ts += 1000
	return Meta{Op: m.op, Timestamp: m.ts, UserID: user, Client: client, System: system}
}

// apply runs c as user with client id, checking that the input state is
// left untouched (copy-on-write isolation).
func (m *machine) apply(user uint32, client ClientID, system bool, c Command) Result {
	m.t.Helper()
	before := EncodeSnapshot(m.s)
	next, r := m.s.Apply(m.meta(user, client, system), c)
	if after := EncodeSnapshot(m.s); !bytes.Equal(before, after) {
		m.t.Fatalf("Apply(%T) modified its input state", c)
	}
	if next.LastApplied() != m.op {
		m.t.Fatalf("LastApplied = %d, want %d", next.LastApplied(), m.op)
	}
	m.s = next
	return r
}

func (m *machine) root(c Command) Result {
	m.t.Helper()
	return m.apply(RootUserID, ClientID{Lo: 1}, false, c)
}

func (m *machine) as(user uint32, c Command) Result {
	m.t.Helper()
	return m.apply(user, ClientID{Lo: uint64(user) + 100}, false, c)
}

func (m *machine) client(client ClientID, c Command) Result {
	m.t.Helper()
	return m.apply(RootUserID, client, false, c)
}

func (m *machine) sys(c Command) Result {
	m.t.Helper()
	return m.apply(RootUserID, ClientID{}, true, c)
}

// must applies as root and fails the test on a rejection.
func (m *machine) must(c Command) Result {
	m.t.Helper()
	r := m.root(c)
	if r.Code != OK {
		m.t.Fatalf("%T %+v: %v", c, c, r.Code)
	}
	return r
}

// expect applies as root and checks the code.
func (m *machine) expect(want wire.Code, c Command) Result {
	m.t.Helper()
	r := m.root(c)
	if r.Code != want {
		m.t.Fatalf("%T %+v: got %v, want %v", c, c, r.Code, want)
	}
	return r
}

func (m *machine) stream(name string) *Stream {
	m.t.Helper()
	return m.must(CreateStream{Name: name}).Stream
}

func (m *machine) topic(stream, name string, partitions uint32) *Topic {
	m.t.Helper()
	return m.must(CreateTopic{Stream: NamedID(stream), Name: name, PartitionsCount: partitions, Defaults: DefaultTopicDefaults()}).Topic
}

func (m *machine) user(name string, perms *Permissions) *User {
	m.t.Helper()
	return m.must(CreateUser{Username: name, PasswordHash: "h-" + name, Status: UserActive, Permissions: perms}).User
}

func cl(n uint64) ClientID { return ClientID{Lo: n} }

// Test shorthands over wire's constructors.
func NumericID(v uint32) Identifier { return wire.NumericID(v) }
func NamedID(s string) Identifier   { return wire.MustNamedID(s) }

func stringOption(k, v string) wire.HeaderEntry {
	return wire.HeaderEntry{Key: wire.StringValue(k), Value: wire.StringValue(v)}
}
func u64Option(k string, v uint64) wire.HeaderEntry {
	return wire.HeaderEntry{Key: wire.StringValue(k), Value: wire.Uint64Value(v)}
}
func u32Option(k string, v uint32) wire.HeaderEntry {
	return wire.HeaderEntry{Key: wire.StringValue(k), Value: wire.Uint32Value(v)}
}
func boolOption(k string, v bool) wire.HeaderEntry {
	return wire.HeaderEntry{Key: wire.StringValue(k), Value: wire.BoolValue(v)}
}
func kv(k string, kind wire.HeaderKind, v []byte) wire.HeaderEntry {
	return wire.HeaderEntry{Key: wire.StringValue(k), Value: wire.HeaderValue{Kind: kind, Value: v}}
}

// streamPerms builds permissions with grants on streams (and topics).
func streamPerms(streams ...wire.StreamPermissions) *Permissions {
	return &Permissions{Streams: streams}
}

// groupMachine is a machine with stream "s", topic "t" of partitions
// partitions and consumer group "g" on it.
func groupMachine(t fataler, partitions uint32) *machine {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", partitions)
	m.must(CreateConsumerGroup{Stream: NamedID("s"), Topic: NamedID("t"), Name: "g"})
	return m
}
