package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
	"github.com/zeebo/xxh3"
)

func TestSnapshotRoundTrip(t *testing.T) {
	for seed := range uint64(20) {
		s := richState(t, seed, 400)
		checkInvariants(t, s)
		b := EncodeSnapshot(s)
		r, err := DecodeSnapshot(b)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkInvariants(t, r)
		if b2 := EncodeSnapshot(r); !bytes.Equal(b, b2) {
			t.Fatalf("seed %d: re-encoding a restored state changed the bytes", seed)
		}
		if r.LastApplied() != s.LastApplied() || r.Revision() != s.Revision() || r.Limits() != s.Limits() || r.Counts() != s.Counts() {
			t.Fatalf("seed %d: header fields differ", seed)
		}
	}
}

func TestSnapshotOfHandBuiltState(t *testing.T) {
	m := newMachine(t)
	m.stream("orders")
	m.stream("gone")
	m.stream("billing")
	m.must(DeleteStream{Stream: NamedID("gone")})
	m.must(CreateTopic{Stream: NamedID("orders"), Name: "eu", PartitionsCount: 3, Defaults: DefaultTopicDefaults(),
		Options: wire.Options{stringOption(OptDurability, "persisted"), stringOption(wire.OptMessageExpiry, "1h")}})
	m.must(CreateConsumerGroup{Stream: NamedID("orders"), Topic: NamedID("eu"), Name: "workers"})
	m.client(cl(7), JoinConsumerGroup{Stream: NamedID("orders"), Topic: NamedID("eu"), Group: NamedID("workers")})
	m.client(cl(8), JoinConsumerGroup{Stream: NamedID("orders"), Topic: NamedID("eu"), Group: NamedID("workers")})
	u := m.user("alice", streamPerms(wire.StreamPermissions{StreamID: 0, Topics: []wire.TopicPermissions{{TopicID: 0, PollMessages: true}}}))
	m.as(u.ID, CreatePersonalAccessToken{Name: "ci", Expiry: 10, Hash: TokenHash{42}})
	m.must(PurgeTopic{Stream: NumericID(0), Topic: NumericID(0)})

	r, err := DecodeSnapshot(EncodeSnapshot(m.s))
	if err != nil {
		t.Fatal(err)
	}
	if r.StreamByName("orders").ID != 0 || r.StreamByName("billing").ID != 2 || r.Stream(1) != nil {
		t.Fatal("stream ids not restored")
	}
	// The restored state allocates the same next ids as the live one.
	next := func(s *State) uint32 {
		_, res := s.Apply(Meta{Op: 99, Timestamp: 1}, CreateStream{Name: "new"})
		return res.Stream.ID
	}
	if next(r) != 1 || next(m.s) != 1 {
		t.Fatal("restored state allocates a different stream id")
	}
	tp := r.StreamByName("orders").TopicByName("eu")
	if tp.Config.Durability != DurabilityPersisted || tp.Config.MessageExpiry != 3600_000_000 || tp.Partitions[2].PurgeGeneration != 1 {
		t.Fatalf("topic %+v", tp)
	}
	g := tp.GroupByName("workers")
	if gen, ps, ok := g.Assignment(cl(8)); !ok || gen != 2 || len(ps) != 1 || ps[0] != 2 {
		t.Fatalf("assignment %d %v %v", gen, ps, ok)
	}
	if ru, pat, ok := r.TokenByHash(TokenHash{42}); !ok || ru.ID != u.ID || pat.ExpiryAt == 0 {
		t.Fatal("token index not rebuilt")
	}
	if !r.Allowed(u.ID, ActionPollMessages, 0, 0) || r.Allowed(u.ID, ActionPollMessages, 0, 1) {
		t.Fatal("permissions not restored")
	}
}

func TestSnapshotRejectsDamage(t *testing.T) {
	s := richState(t, 7, 300)
	good := EncodeSnapshot(s)
	if _, err := DecodeSnapshot(good); err != nil {
		t.Fatal(err)
	}
	// Every single-byte flip is caught (by the checksum when not by the
	// framing checks).
	for i := 0; i < len(good); i += 1 + i/64 {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		if _, err := DecodeSnapshot(b); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("flip at byte %d not detected: %v", i, err)
		}
	}
	for _, n := range []int{0, 10, snapshotHeaderSize, len(good) - 1} {
		if _, err := DecodeSnapshot(good[:n]); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("truncation to %d not detected", n)
		}
	}
	if _, err := DecodeSnapshot(append(bytes.Clone(good), 0)); !errors.Is(err, ErrSnapshot) {
		t.Fatal("trailing byte not detected")
	}
	// A version from the future is refused even with a valid checksum.
	b := bytes.Clone(good)
	binary.LittleEndian.PutUint32(b[8:], SnapshotVersion+1)
	binary.LittleEndian.PutUint64(b[len(b)-8:], xxh3.Hash(b[:len(b)-8]))
	if _, err := DecodeSnapshot(b); !errors.Is(err, ErrSnapshot) {
		t.Fatal("unknown version accepted")
	}
}

// payloadOf strips the framing so tests can re-frame an edited payload.
func payloadOf(b []byte) []byte { return b[snapshotHeaderSize : len(b)-snapshotTrailerSize] }

func TestSnapshotRejectsBrokenInvariants(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 2)
	m.must(CreateConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Name: "g"})
	m.client(cl(1), JoinConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Group: NumericID(0)})
	good := payloadOf(EncodeSnapshot(m.s))
	if _, err := DecodeSnapshotPayload(good); err != nil {
		t.Fatal(err)
	}
	// The member's partition list is the last stream-side field before the
	// user count: corrupt the second owned partition id into a duplicate.
	idx := bytes.Index(good, []byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})
	if idx < 0 {
		t.Fatal("member partition list not found")
	}
	bad := bytes.Clone(good)
	bad[idx+8] = 0
	if _, err := DecodeSnapshotPayload(bad); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("duplicate ownership accepted: %v", err)
	}
	// Bootstrapped without a root user.
	s := NewState()
	s.bootstrapped = true
	if _, err := DecodeSnapshotPayload(payloadOf(EncodeSnapshot(s))); !errors.Is(err, ErrSnapshot) {
		t.Fatal("bootstrapped state without root accepted")
	}
}

func TestSnapshotOfEmptyState(t *testing.T) {
	b := EncodeSnapshot(NewState())
	s, err := DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Bootstrapped() || s.StreamsCount() != 0 || len(s.Users()) != 0 || s.Limits() != DefaultLimits() {
		t.Fatal("empty state not restored")
	}
	if len(b) != snapshotHeaderSize+8+8+1+4+24+4+4+4+snapshotTrailerSize {
		t.Fatalf("empty snapshot is %d bytes", len(b))
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(EncodeSnapshot(NewState()))
	// Small seeds: the fuzzer minimizes every new interesting input, and
	// large ones make that dominate a short run.
	for seed := range uint64(3) {
		f.Add(EncodeSnapshot(richState(f, seed, 25)))
		f.Add(payloadOf(EncodeSnapshot(richState(f, seed, 25))))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The framed decoder, then the payload decoder on the same bytes
		// (the checksum would otherwise shield almost all of it).
		for _, decode := range []func([]byte) (*State, error){DecodeSnapshot, DecodeSnapshotPayload} {
			s, err := decode(b)
			if err != nil {
				if !errors.Is(err, ErrSnapshot) {
					t.Fatalf("error does not wrap ErrSnapshot: %v", err)
				}
				continue
			}
			checkInvariants(t, s)
			// Accepted input is canonical: it re-encodes to itself.
			enc := EncodeSnapshot(s)
			if p := payloadOf(enc); !bytes.Equal(p, b) && !bytes.Equal(enc, b) {
				t.Fatalf("accepted input does not re-encode to itself")
			}
			// And the restored state keeps working.
			st := genStep(randChooser{newRand(uint64(len(b)))}, s, s.LastApplied()+1, 1)
			s.Apply(st.meta, st.cmd)
		}
	})
}

// TestSnapshotMemberNodeAndBoot: members keep the node and boot their
// join was stamped with across a snapshot.
func TestSnapshotMemberNodeAndBoot(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 3)
	m.must(CreateConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Name: "g"})
	m.client(cl(1), JoinConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Group: NumericID(0), Node: 2, Boot: 500})
	m.client(cl(2), JoinConsumerGroup{Stream: NumericID(0), Topic: NumericID(0), Group: NumericID(0), Node: 0, Boot: 900})
	r, err := DecodeSnapshot(EncodeSnapshot(m.s))
	if err != nil {
		t.Fatal(err)
	}
	g := r.Stream(0).Topic(0).Group(0)
	if a, b := g.Members[0], g.Members[1]; a.Node != 2 || a.Boot != 500 || b.Node != 0 || b.Boot != 900 {
		t.Fatalf("members %+v", g.Members)
	}
}

// TestSnapshotDecodesVersion1: a snapshot written before members recorded
// their node decodes; its members have an unknown boot, node eviction
// leaves them, and the state re-encodes in the current version.
func TestSnapshotDecodesVersion1(t *testing.T) {
	members := 0
	for seed := range uint64(10) {
		s := richState(t, seed, 400)
		old := encodeSnapshot(s, snapshotVersionV1)
		if v := binary.LittleEndian.Uint32(old[8:]); v != 1 {
			t.Fatalf("version %d", v)
		}
		r, err := DecodeSnapshot(old)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkInvariants(t, r)
		for _, st := range r.Streams() {
			for _, tp := range st.Topics() {
				for _, g := range tp.Groups() {
					for i, mem := range g.Members {
						members++
						if mem.Node != 0 || mem.Boot != BootUnknown {
							t.Fatalf("seed %d: version 1 member %+v", seed, mem)
						}
						orig := s.Stream(st.ID).Topic(tp.ID).Group(g.ID).Members[i]
						if orig.ID != mem.ID || orig.Client != mem.Client || !slices.Equal(orig.Partitions, mem.Partitions) {
							t.Fatalf("seed %d: member %+v, was %+v", seed, mem, orig)
						}
					}
				}
			}
		}
		cur := EncodeSnapshot(r)
		if binary.LittleEndian.Uint32(cur[8:]) != SnapshotVersion || bytes.Equal(cur, old) {
			t.Fatal("a restored version 1 state re-encodes in version 1")
		}
		for node := range uint8(3) {
			_, res := r.Apply(Meta{Op: r.LastApplied() + 1, System: true}, EvictNodeMembers{Node: node, Before: math.MaxUint64})
			if res.Code != OK || len(res.Effects) != 0 {
				t.Fatalf("seed %d: evicting node %d removed version 1 members (%v, %d effects)", seed, node, res.Code, len(res.Effects))
			}
		}
	}
	if members == 0 {
		t.Fatal("the generated states have no members")
	}
}
