package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/iggo/iggo/wire"
)

// TestOpRoundTrip encodes generated commands, decodes them, re-encodes
// the result and applies both forms: bytes, envelope and outcome agree.
func TestOpRoundTrip(t *testing.T) {
	c := randChooser{newRand(42)}
	s := richState(t, 3, 100)
	steps := []step{bootstrapStep(), {meta: Meta{System: true}, cmd: SetLimits{Limits: DefaultLimits()}},
		{meta: Meta{System: true, Timestamp: 9}, cmd: DisconnectClient{Client: wire.Uint128{Lo: 5, Hi: 6}}}}
	for i := range 2000 {
		steps = append(steps, genStep(c, s, uint64(i), uint64(1e6+i)))
	}
	for i, st := range steps {
		b, err := EncodeOp(st.meta, st.cmd)
		if err != nil {
			t.Fatalf("step %d %T: %v", i, st.cmd, err)
		}
		if wire.Operation(b[1]) != OperationOf(st.cmd) {
			t.Fatalf("step %d: operation byte %d", i, b[1])
		}
		m, cmd, err := DecodeOp(b)
		if err != nil {
			t.Fatalf("step %d %T: decode: %v", i, st.cmd, err)
		}
		want := st.meta
		want.Op = 0
		if m != want {
			t.Fatalf("step %d: meta %+v, want %+v", i, m, want)
		}
		b2, err := EncodeOp(m, cmd)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("step %d %T: re-encoding differs (%v)", i, st.cmd, err)
		}
		m.Op = st.meta.Op
		s1, r1 := s.Apply(st.meta, st.cmd)
		s2, r2 := s.Apply(m, cmd)
		if !sameResult(r1, r2) || !bytes.Equal(EncodeSnapshot(s1), EncodeSnapshot(s2)) {
			t.Fatalf("step %d %T: decoded command applies differently", i, st.cmd)
		}
	}
}

func TestOpCarriesNoPasswords(t *testing.T) {
	b, err := EncodeOp(Meta{}, CreateUser{Username: "alice", PasswordHash: "$argon2id$HASH", Status: UserActive})
	if err != nil {
		t.Fatal(err)
	}
	// The body is a create_user request whose password field is empty;
	// the hash rides the stamp.
	body := wire.CreateUser{}
	stamp := int(b[32]) | int(b[33])<<8
	if err := body.DecodeBody(b[opHeaderSize+stamp:]); err != nil || body.Password != "" || body.Username != "alice" {
		t.Fatalf("body %+v (%v)", body, err)
	}
	// A body smuggling a password is refused.
	req := &wire.CreateUser{Username: "alice", Password: "plaintext", Status: 1}
	evil, _ := req.AppendBody(bytes.Clone(b[:opHeaderSize+stamp]))
	if _, _, err := DecodeOp(evil); !errors.Is(err, ErrOp) {
		t.Fatalf("password in body accepted: %v", err)
	}
	cp := &wire.ChangePassword{UserID: wire.NumericID(1), NewPassword: "x"}
	hdr, _ := EncodeOp(Meta{}, ChangePassword{User: wire.NumericID(1)})
	evil, _ = cp.AppendBody(hdr[:opHeaderSize+4])
	if _, _, err := DecodeOp(evil); !errors.Is(err, ErrOp) {
		t.Fatalf("password in change_password body accepted: %v", err)
	}
}

func TestOpRejects(t *testing.T) {
	good, _ := EncodeOp(Meta{UserID: 3}, CreateStream{Name: "s"})
	tests := map[string][]byte{
		"short":                 good[:10],
		"version":               append([]byte{5}, good[1:]...),
		"flags":                 append(append([]byte{}, good[:2]...), append([]byte{4}, good[3:]...)...),
		"unknown operation":     append([]byte{opVersion, 200}, good[2:]...),
		"delete segments":       append([]byte{opVersion, byte(wire.OpDeleteSegments)}, good[2:]...),
		"send messages":         append([]byte{opVersion, byte(wire.OpSendMessages)}, good[2:]...),
		"stamp overrun":         append(append(bytes.Clone(good[:32]), 0xff, 0xff), good[34:]...),
		"truncated body":        good[:len(good)-1],
		"trailing body":         append(bytes.Clone(good), 0),
		"internal with body":    append(mustEncode(t, Meta{}, DeleteExpiredTokens{}), 1),
		"short disconnect":      mustEncode(t, Meta{}, DisconnectClient{})[:opHeaderSize+8],
		"stamp on create":       append(append(bytes.Clone(good[:32]), 1, 0, 9), good[34:]...),
		"bad defaults boolean":  corruptDefaults(t),
		"create topic no stamp": append(append(bytes.Clone(good[:1]), byte(wire.OpCreateTopic)), good[2:]...),
		"short evict":           mustEncode(t, Meta{}, EvictNodeMembers{Node: 1, Before: 2})[:opHeaderSize+5],
		"evict in version 1":    append([]byte{opVersionV1}, mustEncode(t, Meta{}, EvictNodeMembers{Node: 1, Before: 2})[1:]...),
		"short expire":          mustEncode(t, Meta{}, ExpireMembers{Node: 1, Boot: 2, Clients: []ClientID{cl(1)}})[:opHeaderSize+1+8+2+8],
		"expire in version 3":   append([]byte{opVersionV3}, mustEncode(t, Meta{}, ExpireMembers{Node: 1, Boot: 2})[1:]...),
		"join in version 1 with a stamp": append([]byte{opVersionV1},
			mustEncode(t, Meta{}, JoinConsumerGroup{Stream: wire.NumericID(0), Topic: wire.NumericID(0), Group: wire.NumericID(0), Node: 1, Boot: 2})[1:]...),
	}
	for name, b := range tests {
		if _, _, err := DecodeOp(b); !errors.Is(err, ErrOp) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

// TestOpJoinStamp: the join carries the admitting node's id and boot and
// (version 4) the partitions that may hold polled, uncommitted messages; a
// version 3 body decodes with Redeal (its join re-deals every partition);
// a version 1 body (written before members recorded node and boot)
// decodes with the boot unknown, which node eviction never removes.
func TestOpJoinStamp(t *testing.T) {
	join := JoinConsumerGroup{Stream: wire.NumericID(0), Topic: wire.NumericID(1), Group: wire.NumericID(2), Node: 2, Boot: 1_700_000_000_123_456,
		InFlight: []uint32{3, 5}}
	b := mustEncode(t, Meta{Client: cl(9)}, join)
	if b[0] != opVersion {
		t.Fatalf("version %d", b[0])
	}
	if _, c, err := DecodeOp(b); err != nil || !reflect.DeepEqual(c, join) {
		t.Fatalf("decoded %+v (%v), want %+v", c, err, join)
	}
	stampLen := int(binary.LittleEndian.Uint16(b[32:]))
	if stampLen != 9+2+8 {
		t.Fatalf("join stamp of %d bytes", stampLen)
	}
	body := b[opHeaderSize+stampLen:]
	// Version 3: the 9-byte node and boot stamp, no in-flight list.
	v3 := append([]byte{opVersionV3}, b[1:32]...)
	v3 = append(v3, 9, 0)
	v3 = append(v3, b[opHeaderSize:opHeaderSize+9]...)
	v3 = append(v3, body...)
	m, c, err := DecodeOp(v3)
	if err != nil {
		t.Fatal(err)
	}
	want := join
	want.InFlight, want.Redeal = nil, true
	if !reflect.DeepEqual(c, want) || m.Legacy {
		t.Fatalf("version 3 join decoded %+v (legacy %v), want %+v", c, m.Legacy, want)
	}
	// Version 1: the same body without a stamp.
	old := append([]byte{opVersionV1}, b[1:32]...)
	old = append(old, 0, 0)
	old = append(old, body...)
	_, c, err = DecodeOp(old)
	if err != nil {
		t.Fatal(err)
	}
	want.Node, want.Boot = 0, BootUnknown
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("version 1 join decoded %+v, want %+v", c, want)
	}
	cr := CompleteRevocation{Stream: 1, Topic: 2, Group: 3, Client: cl(4), Partition: 5, HasCommitted: true, Committed: 9}
	if _, c, err := DecodeOp(mustEncode(t, Meta{System: true}, cr)); err != nil || c != cr {
		t.Fatalf("complete revocation decoded %+v (%v)", c, err)
	}
	ev := EvictNodeMembers{Node: 2, Before: 77}
	if _, c, err := DecodeOp(mustEncode(t, Meta{System: true}, ev)); err != nil || c != ev {
		t.Fatalf("evict decoded %+v (%v)", c, err)
	}
	ex := ExpireMembers{Node: 1, Boot: 99, Clients: []ClientID{cl(3), {Lo: 1, Hi: 2}}}
	if _, c, err := DecodeOp(mustEncode(t, Meta{System: true}, ex)); err != nil || !reflect.DeepEqual(c, ex) {
		t.Fatalf("expire decoded %+v (%v)", c, err)
	}
	none := ExpireMembers{Node: 1, Boot: 99, Clients: []ClientID{}}
	if _, c, err := DecodeOp(mustEncode(t, Meta{System: true}, none)); err != nil || !reflect.DeepEqual(c, none) {
		t.Fatalf("empty expire decoded %+v (%v)", c, err)
	}
	if _, err := EncodeOp(Meta{System: true}, ExpireMembers{Clients: make([]ClientID, ExpireMembersMax+1)}); !errors.Is(err, ErrOp) {
		t.Fatalf("expiring more than ExpireMembersMax encoded: %v", err)
	}
}

func mustEncode(t *testing.T, m Meta, c Command) []byte {
	t.Helper()
	b, err := EncodeOp(m, c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func corruptDefaults(t *testing.T) []byte {
	b := mustEncode(t, Meta{}, CreateTopic{Stream: wire.NumericID(0), Name: "t", Defaults: DefaultTopicDefaults()})
	b[opHeaderSize+1+8+8+8+4+8] = 7 // preallocate flag
	return b
}

func FuzzDecodeOp(f *testing.F) {
	c := randChooser{newRand(7)}
	s := richState(f, 1, 50)
	for i := range 40 {
		st := genStep(c, s, uint64(i), uint64(i))
		if b, err := EncodeOp(st.meta, st.cmd); err == nil {
			f.Add(b)
		}
	}
	f.Add(mustEncodeF(f, bootstrapStep().meta, bootstrapStep().cmd))
	f.Add(mustEncodeF(f, Meta{System: true}, ExpireMembers{Node: 1, Boot: 2, Clients: []ClientID{cl(1), cl(2)}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, cmd, err := DecodeOp(b)
		if err != nil {
			if !errors.Is(err, ErrOp) {
				t.Fatalf("error does not wrap ErrOp: %v", err)
			}
			return
		}
		// Whatever decodes re-encodes and applies without panicking.
		if _, err := EncodeOp(m, cmd); err != nil {
			t.Fatalf("decoded command does not re-encode: %v", err)
		}
		s.Apply(m, cmd)
	})
}

func mustEncodeF(f *testing.F, m Meta, c Command) []byte {
	b, err := EncodeOp(m, c)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

func TestAdmit(t *testing.T) {
	m := newMachine(t)
	m.stream("s")
	m.topic("s", "t", 1)
	cfg := DefaultAdmitConfig()
	cfg.Argon2 = cheapArgon
	pw, _ := HashPassword("old-pw", cheapArgon)
	alice := m.must(CreateUser{Username: "alice", PasswordHash: pw, Status: UserActive}).User.ID
	s := m.s

	tests := []struct {
		name string
		user uint32
		req  wire.Request
		want wire.Code
	}{
		{"create stream", RootUserID, &wire.CreateStream{Name: "x"}, OK},
		{"create stream unauthorized", alice, &wire.CreateStream{Name: "x"}, wire.CodeUnauthorized},
		{"stream option", RootUserID, &wire.CreateStream{Name: "x", Options: wire.Options{stringOption("a", "b")}}, wire.CodeUnsupportedOptionKey},
		{"topic option", RootUserID, &wire.CreateTopic{StreamID: wire.NumericID(0), Name: "u", Options: wire.Options{stringOption("a", "b")}}, wire.CodeUnsupportedOptionKey},
		{"topic bad value", RootUserID, &wire.CreateTopic{StreamID: wire.NumericID(0), Name: "u", Options: wire.Options{stringOption(wire.OptSegmentSize, "1KiB")}}, wire.CodeInvalidOptionValue},
		{"topic 1001 partitions", RootUserID, &wire.CreateTopic{StreamID: wire.NumericID(0), Name: "u", PartitionsCount: 1001}, wire.CodeTooManyPartitions},
		{"topic in missing stream passes to apply", RootUserID, &wire.CreateTopic{StreamID: wire.NumericID(9), Name: "u"}, OK},
		{"update create-only key", RootUserID, &wire.UpdateTopic{StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), Name: "t", Options: wire.Options{boolOption(wire.OptEnforceFsync, true)}}, wire.CodeUnsupportedOptionKey},
		{"zero partitions", RootUserID, &wire.CreatePartitions{StreamID: wire.NumericID(0), TopicID: wire.NumericID(0)}, wire.CodeTooManyPartitions},
		{"delete partitions unauthorized", alice, &wire.DeletePartitions{StreamID: wire.NumericID(0), TopicID: wire.NumericID(0), PartitionsCount: 1}, wire.CodeUnauthorized},
		{"short password", RootUserID, &wire.CreateUser{Username: "bob", Password: "ab", Status: 1}, wire.CodeInvalidPassword},
		{"own password", alice, &wire.ChangePassword{UserID: wire.NumericID(alice), CurrentPassword: "old-pw", NewPassword: "new-pw"}, OK},
		{"someone else's password", alice, &wire.ChangePassword{UserID: wire.NumericID(RootUserID), CurrentPassword: "x", NewPassword: "new-pw"}, wire.CodeUnauthorized},
		{"own token", alice, &wire.CreatePersonalAccessToken{Name: "ci"}, OK},
		{"read request", RootUserID, &wire.GetStreams{}, wire.CodeInvalidCommand},
		{"delete segments is partition-side", RootUserID, &wire.DeleteSegments{}, wire.CodeInvalidCommand},
		{"unknown user", 77, &wire.CreateStream{Name: "x"}, wire.CodeUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, code := Admit(s, tc.user, tc.req, cfg)
			if code != tc.want {
				t.Fatalf("code %v, want %v", code, tc.want)
			}
			if code == OK {
				if a.Command == nil {
					t.Fatal("no command")
				}
				if _, err := EncodeOp(Meta{UserID: tc.user}, a.Command); err != nil {
					t.Fatalf("admitted command does not encode: %v", err)
				}
			}
		})
	}

	a, code := Admit(s, RootUserID, &wire.CreateUser{Username: "bob", Password: "bob-pw", Status: 1}, cfg)
	if code != OK || !VerifyPassword(a.Command.(CreateUser).PasswordHash, "bob-pw") {
		t.Fatalf("create user: %v", code)
	}
	a, _ = Admit(s, alice, &wire.ChangePassword{UserID: wire.NumericID(alice), CurrentPassword: "old-pw", NewPassword: "new-pw"}, cfg)
	cp := a.Command.(ChangePassword)
	if cp.VerifiedHash != pw || !VerifyPassword(cp.NewPasswordHash, "new-pw") {
		t.Fatal("change password stamps")
	}
	if r := m.as(alice, cp); r.Code != OK || !VerifyPassword(m.s.User(alice).PasswordHash, "new-pw") {
		t.Fatalf("apply change password: %v", r.Code)
	}
	// A wrong current password is replicated and rejected by Apply.
	a, _ = Admit(m.s, alice, &wire.ChangePassword{UserID: wire.NumericID(alice), CurrentPassword: "wrong", NewPassword: "x-pw"}, cfg)
	if r := m.as(alice, a.Command); r.Code != wire.CodeInvalidCredentials {
		t.Fatalf("wrong current password: %v", r.Code)
	}
	a, _ = Admit(m.s, alice, &wire.CreatePersonalAccessToken{Name: "ci", Expiry: 0}, cfg)
	if a.Token == "" || a.Command.(CreatePersonalAccessToken).Hash != HashToken(a.Token) {
		t.Fatal("token and hash disagree")
	}
	m.as(alice, a.Command)
	if u, code := m.s.AuthenticateToken(a.Token, m.ts); code != OK || u.ID != alice {
		t.Fatalf("token login after admission: %v", code)
	}
	l := DefaultLimits()
	l.MaxTokensPerUser = 1
	m.sys(SetLimits{Limits: l})
	if _, code := Admit(m.s, alice, &wire.CreatePersonalAccessToken{Name: "ci2"}, cfg); code != wire.CodePersonalAccessTokensLimitReached {
		t.Fatalf("token cap: %v", code)
	}
}
