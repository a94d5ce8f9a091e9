package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestXXH32Vectors(t *testing.T) {
	// Expected values computed with the reference C implementation (libxxhash).
	cases := []struct {
		in   []byte
		seed uint32
		want uint32
	}{
		{[]byte(""), 0, 0x02cc5d05},
		{[]byte("a"), 0, 0x550d7456},
		{[]byte("abc"), 0, 0x32d153ff},
		{[]byte("Nobody inspects the spammish repetition"), 0, 0xe2293b2f},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0, 0xe85ea4de},
		{[]byte("0123456789abcdef"), 0, 0xc2c45b69},
		{[]byte("user-42"), 0, 0x61819a7e},
		{[]byte(""), 2654435761, 0x36b78ae7},
		{[]byte("abc"), 2654435761, 0xa1ae7709},
		{[]byte("The quick brown fox jumps over the lazy dog"), 2654435761, 0x98c7f3bf},
	}
	hundred := make([]byte, 100)
	for i := range hundred {
		hundred[i] = byte(i)
	}
	cases = append(cases, struct {
		in   []byte
		seed uint32
		want uint32
	}{hundred, 0, 0x7f89ba44}, struct {
		in   []byte
		seed uint32
		want uint32
	}{hundred, 2654435761, 0xfa996f24})
	for _, c := range cases {
		if got := xxh32Seed(c.in, c.seed); got != c.want {
			t.Errorf("XXH32(%q, %d) = %#x, want %#x", c.in, c.seed, got, c.want)
		}
	}
	if PartitionForKey([]byte("abc"), 7) != 0x32d153ff%7 {
		t.Error("PartitionForKey")
	}
	if ConsumerKey(MustNamedID("user-42")) != 0x61819a7e || ConsumerKey(NumericID(9)) != 9 {
		t.Error("ConsumerKey")
	}
}

func TestProtocolVersion(t *testing.T) {
	v, err := PackVersion(0, 11, 0)
	if err != nil || v != 0x2C00 || CurrentProtocol != 0x2C00 || v.String() != "0.11.0" {
		t.Fatalf("pack 0.11.0 = %#x %v", v, err)
	}
	if _, err := PackVersion(0, 1024, 0); err == nil {
		t.Fatal("minor 1024 accepted")
	}
	min, max := AcceptWindow(CurrentProtocol)
	if min != 0x2C00 || max != 0x2FFF {
		t.Fatalf("window [%#x, %#x]", min, max)
	}
	cases := []struct {
		client ProtocolVersion
		ok     bool
	}{
		{0x2C00, true}, {0x2C05, true}, {0x2FFF, true},
		{0x3000, false}, // 0.12.0
		{0x2BFF, false}, // 0.10.1023
		{0x0, false},
		{1 << 20, false}, // 1.0.0
	}
	for _, c := range cases {
		if got := Accepts(CurrentProtocol, min, c.client); got != c.ok {
			t.Errorf("Accepts(%s) = %v, want %v", c.client, got, c.ok)
		}
	}
}

func TestIdentifier(t *testing.T) {
	enc := func(id Identifier) []byte {
		b, err := id.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if got := enc(NumericID(0x01020304)); !bytes.Equal(got, []byte{1, 4, 4, 3, 2, 1}) {
		t.Fatalf("numeric %x", got)
	}
	if got := enc(MustNamedID("ab")); !bytes.Equal(got, []byte{2, 2, 'a', 'b'}) {
		t.Fatalf("named %x", got)
	}
	if got := enc(Identifier{}); !bytes.Equal(got, []byte{1, 4, 0, 0, 0, 0}) {
		t.Fatalf("zero value %x", got)
	}
	if _, err := NamedID(""); err == nil {
		t.Fatal("empty name accepted")
	}
	if _, err := NamedID(strings.Repeat("x", 256)); err == nil {
		t.Fatal("256-byte name accepted")
	}
	bad := []struct {
		in     []byte
		reason string
	}{
		{[]byte{1}, "needs 2"},
		{[]byte{1, 3, 1, 2, 3}, "length 4"},
		{[]byte{2, 0}, "empty"},
		{[]byte{2, 5, 'a'}, "overruns"},
		{[]byte{3, 1, 'a'}, "unknown identifier kind"},
		{[]byte{2, 1, 0xff}, "UTF-8"},
	}
	for _, c := range bad {
		_, _, err := DecodeIdentifier(c.in)
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), c.reason) {
			t.Errorf("DecodeIdentifier(%x) = %v, want FieldError mentioning %q", c.in, err, c.reason)
		}
	}
	id, n, err := DecodeIdentifier([]byte{2, 3, 'f', 'o', 'o', 9})
	if err != nil || n != 5 || id != MustNamedID("foo") {
		t.Fatalf("decode named: %v %d %v", id, n, err)
	}
}

func TestErrorCodes(t *testing.T) {
	if len(codeNames) != 237 {
		t.Fatalf("code table has %d entries, Iggy lists 237", len(codeNames))
	}
	spot := map[Code]string{
		1: "Error", 3: "InvalidCommand", 40: "Unauthenticated", 57: "TransientNotCommitted",
		58: "TransientNotAccepted", 1009: "StreamIdNotFound", 2010: "TopicIdNotFound",
		3007: "PartitionNotFound", 4027: "InvalidMessageChecksum", 4039: "InvalidBatchChecksum",
		4100: "InvalidOffset", 5009: "ConsumerGroupPartitionNotOwned", 14003: "IncompatibleProtocolVersion",
	}
	for c, name := range spot {
		if c.Name() != name {
			t.Errorf("code %d name %q, want %q", c, c.Name(), name)
		}
	}
	err := Errorf(CodeTopicIdNotFound, "topic %d", 3)
	wrapped := errors.Join(errors.New("context"), err)
	if !errors.Is(wrapped, NewError(CodeTopicIdNotFound)) || errors.Is(wrapped, NewError(CodeStreamIdNotFound)) {
		t.Fatal("errors.Is by code")
	}
	if !IsNotFound(wrapped) || IsAlreadyExists(wrapped) || !strings.Contains(err.Error(), "2010 TopicIdNotFound") {
		t.Fatalf("helpers / message: %v", err)
	}
	if c, ok := CodeOf(fieldErr("x", "y", 0, "z")); !ok || c != CodeInvalidCommand {
		t.Fatal("FieldError code")
	}
	if !IsTransient(NewError(CodeTransientNotAccepted)) || IsTransient(NewError(CodeError)) {
		t.Fatal("IsTransient")
	}
}

func TestEvictionMapping(t *testing.T) {
	cases := []struct {
		r        EvictionReason
		min, max uint32
		want     Code
	}{
		{EvictReserved, 0, 0, CodeInvalidCommand},
		{EvictNoSession, 0, 0, CodeUnauthenticated},
		{EvictClientReleaseTooLow, 0, 0, CodeInvalidCommand},
		{EvictInvalidRequestBody, 0, 0, CodeInvalidCommand},
		{EvictSessionTooLow, 0, 0, CodeUnauthenticated},
		{EvictInvalidCredentials, 0, 0, CodeInvalidCredentials},
		{EvictInvalidToken, 0, 0, CodeInvalidPersonalAccessToken},
		{EvictUserInactive, 0, 0, CodeUnauthenticated},
		{EvictStaleClient, 0, 0, CodeStaleClient},
		{EvictIncompatibleProtocol, 0x2C00, 0x2FFF, CodeIncompatibleProtocolVersion},
		{EvictIncompatibleProtocol, 0, 0x2FFF, CodeUnauthenticated},
		{EvictIncompatibleProtocol, 0x3000, 0x2C00, CodeUnauthenticated},
		{EvictMalformedLogin, 0, 0, CodeInvalidFormat},
		{99, 0, 0, CodeInvalidCommand},
	}
	for _, c := range cases {
		if got := c.r.Code(c.min, c.max); got != c.want {
			t.Errorf("%v(%d,%d) -> %v, want %v", c.r, c.min, c.max, got, c.want)
		}
	}
}

func TestEvictionHeaderValidation(t *testing.T) {
	good := AppendEviction(nil, Prefix{}, Uint128{Lo: 1}, EvictStaleClient, 0, 0)
	if _, err := DecodeEvictionHeader(good); err != nil {
		t.Fatal(err)
	}
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	bad := map[string][]byte{
		"client":                  mut(func(b []byte) { b[128] = 0 }),
		"size":                    mut(func(b []byte) { b[48] = 1 }),
		"reserved_frame":          mut(func(b []byte) { b[100] = 1 }),
		"reserved":                mut(func(b []byte) { b[200] = 1 }),
		"reason":                  mut(func(b []byte) { b[255] = 0 }),
		"server_protocol_version": mut(func(b []byte) { b[144] = 1 }),
		"command":                 mut(func(b []byte) { b[60] = 8 }),
	}
	for field, b := range bad {
		_, err := DecodeEvictionHeader(b)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: got %v", field, err)
		}
	}
}

func TestRequestHeaderRules(t *testing.T) {
	base := RequestHeader{Client: Uint128{Lo: 1}, Operation: OpCreateStream, Session: 5, Request: 2}
	cases := []struct {
		mod   func(h *RequestHeader)
		field string
	}{
		{func(h *RequestHeader) { h.Client = Uint128{} }, "client"},
		{func(h *RequestHeader) { h.Operation = OpTruncatePartition }, "operation"},
		{func(h *RequestHeader) { h.Session = 0 }, "session"},
		{func(h *RequestHeader) { h.Request = 0 }, "request"},
		{func(h *RequestHeader) { h.Operation = OpRegister }, "session"},
		{func(h *RequestHeader) { h.Operation, h.Session = OpRegister, 0 }, "request"},
	}
	for i, c := range cases {
		h := base
		c.mod(&h)
		err := h.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("case %d: %v, want field %s", i, err, c.field)
		}
	}
	ok := []RequestHeader{
		base,
		{Client: Uint128{Hi: 1}, Operation: OpRegister},
		{Client: Uint128{Lo: 1}, Operation: OpNonReplicated, Code: CmdPing, Request: 1},
	}
	for _, h := range ok {
		if err := h.Validate(); err != nil {
			t.Errorf("%+v: %v", h, err)
		}
	}
	frame := AppendRequest(nil, base, nil)
	frame[176] = 77 // unknown operation
	if _, err := DecodeRequestHeader(frame, 0); err == nil || !strings.Contains(err.Error(), "operation") {
		t.Fatalf("unknown op: %v", err)
	}
	frame[176] = 128
	frame[56] = 1 // release
	if _, err := DecodeRequestHeader(frame, 0); err == nil || !strings.Contains(err.Error(), "release") {
		t.Fatalf("release: %v", err)
	}
	frame[56] = 0
	binary.LittleEndian.PutUint32(frame[48:], 255)
	if _, err := DecodeRequestHeader(frame, 0); err == nil || !strings.Contains(err.Error(), "size") {
		t.Fatalf("size: %v", err)
	}
}

func TestOperationClasses(t *testing.T) {
	framed := map[Operation]bool{}
	for op := range opNames {
		framed[op] = ResultFramed(op, 0)
	}
	for _, op := range []Operation{OpCreateStream, OpLeaveConsumerGroup, OpTruncatePartition, OpCreateTopicWithAssignments, OpStoreConsumerOffset, OpDeleteConsumerOffset} {
		if !framed[op] {
			t.Errorf("%v should be result-framed", op)
		}
	}
	for _, op := range []Operation{OpNonReplicated, OpLogout, OpDeleteSegments, OpSendMessages, OpRegister} {
		if framed[op] {
			t.Errorf("%v should not be result-framed (empty body)", op)
		}
	}
	if !ResultFramed(OpRegister, 1) {
		t.Error("non-empty Register reply is result-framed")
	}
	if !OpDeleteSegments.AdvancesRequest() || !OpLogout.AdvancesRequest() || OpSendMessages.AdvancesRequest() || OpNonReplicated.AdvancesRequest() {
		t.Error("AdvancesRequest")
	}
	if len(AllCommands) != 51 || len(commandTable) != 51 {
		t.Fatalf("%d commands listed, %d in table", len(AllCommands), len(commandTable))
	}
	replicated := 0
	for _, c := range AllCommands {
		op := c.Operation()
		if op != OpNonReplicated && op != OpRegister && op != OpLogout {
			replicated++
			if back, ok := CommandForOperation(op); !ok || back != c {
				t.Errorf("CommandForOperation(%v) = %v", op, back)
			}
		}
	}
	if replicated != 25 {
		t.Fatalf("%d replicated commands, want 25", replicated)
	}
	if CommandCode(999).Operation() != OpNonReplicated {
		t.Error("unknown code must go NonReplicated")
	}
}

func TestUserHeaders(t *testing.T) {
	entries := []HeaderEntry{
		{Key: StringValue("trace"), Value: RawValue([]byte{1, 2, 3})},
		{Key: StringValue("n"), Value: Uint64Value(42)},
		{Key: StringValue("f"), Value: Float64Value(1.5)},
		{Key: Int32Value(-1), Value: BoolValue(true)},
		{Key: StringValue("future"), Value: HeaderValue{Kind: 200, Value: []byte("kept")}},
	}
	b, err := AppendUserHeaders(nil, entries)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeUserHeaders(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, entries) {
		t.Fatalf("round trip\n got %+v\nwant %+v", back, entries)
	}
	if v, ok := back[1].Value.AsUint64(); !ok || v != 42 {
		t.Fatal("AsUint64")
	}
	if v, ok := back[2].Value.AsFloat64(); !ok || v != 1.5 {
		t.Fatal("AsFloat64")
	}
	if v, ok := back[3].Key.AsInt64(); !ok || v != -1 {
		t.Fatal("AsInt64")
	}
	bad := map[string][]byte{
		"kind 0":       {0, 1, 0, 0, 0, 'a', 2, 1, 0, 0, 0, 'b'},
		"length 0":     {2, 0, 0, 0, 0, 2, 1, 0, 0, 0, 'b'},
		"length 256":   append([]byte{2, 0, 1, 0, 0}, make([]byte, 256)...),
		"odd":          {2, 1, 0, 0, 0, 'a'},
		"overrun":      {2, 5, 0, 0, 0, 'a'},
		"short length": {2, 1, 0},
		"numeric size": {2, 1, 0, 0, 0, 'a', 12, 2, 0, 0, 0, 1, 2},
	}
	for name, b := range bad {
		if _, err := DecodeUserHeaders(b); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := AppendUserHeaders(nil, []HeaderEntry{{Key: StringValue(""), Value: BoolValue(true)}}); err == nil {
		t.Error("empty key encoded")
	}
}

func TestOptionsBlock(t *testing.T) {
	o := Options{{Key: StringValue("a"), Value: Uint32Value(1)}, {Key: StringValue("b"), Value: StringValue("x")}}
	b, err := o.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeOptions(b)
	if err != nil || !reflect.DeepEqual(back, o) {
		t.Fatalf("%v %+v", err, back)
	}
	dup := Options{{Key: StringValue("a"), Value: Uint32Value(1)}, {Key: StringValue("a"), Value: Uint32Value(2)}}
	if _, err := dup.AppendTo(nil); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate: %v", err)
	}
	raw, _ := AppendUserHeaders(nil, []HeaderEntry{{Key: RawValue([]byte("a")), Value: Uint32Value(1)}})
	if err := ValidateOptions(raw); !HasCode(err, CodeUnsupportedOptionKey) {
		t.Fatalf("raw key: %v", err)
	}
	many := make(Options, MaxOptionPairs+1)
	for i := range many {
		many[i] = HeaderEntry{Key: StringValue(strings.Repeat("k", 1+i%200) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))), Value: BoolValue(true)}
	}
	blob, _ := appendTLV(nil, "t", many)
	if err := ValidateOptions(blob); err == nil {
		t.Fatal("too many pairs or too large accepted")
	}
}

func TestTopicCatalog(t *testing.T) {
	if len(TopicOptionCatalog) != 8 {
		t.Fatalf("%d keys", len(TopicOptionCatalog))
	}
	explicit, derived, s, err := ResolveTopicCreate(Options{
		{Key: StringValue(OptEnforceFsync), Value: StringValue("true")},
		{Key: StringValue(OptSegmentSize), Value: StringValue("128 MiB")},
		{Key: StringValue(OptMessageExpiry), Value: StringValue("7 days")},
		{Key: StringValue(OptCompressionAlgorithm), Value: Uint8Value(CompressionGzip)},
		{Key: StringValue(OptMessagesRequiredToSave), Value: StringValue("10")},
	}, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		{Key: StringValue(OptEnforceFsync), Value: BoolValue(true)},
		{Key: StringValue(OptSegmentSize), Value: Uint64Value(128 << 20)},
		{Key: StringValue(OptMessageExpiry), Value: Uint64Value(7 * 86400 * 1_000_000)},
		{Key: StringValue(OptCompressionAlgorithm), Value: StringValue("gzip")},
		{Key: StringValue(OptMessagesRequiredToSave), Value: Uint32Value(10)},
	}
	if !reflect.DeepEqual(explicit, want) {
		t.Fatalf("explicit\n got %+v\nwant %+v", explicit, want)
	}
	if len(derived) != 3 {
		t.Fatalf("derived %+v", derived)
	}
	if v, ok := Options(derived).Get(OptMaxTopicSize); !ok || !bytes.Equal(v.Value, le64(math.MaxUint64)) {
		t.Fatal("derived max_topic_size")
	}
	if !s.EnforceFsync || s.SegmentSize != 128<<20 || s.CompressionAlgorithm != CompressionGzip || s.MessagesRequiredToSave != 10 || s.MaxTopicSize != math.MaxUint64 {
		t.Fatalf("settings %+v", s)
	}

	bad := []struct {
		o    Options
		code Code
	}{
		{Options{{Key: StringValue("nope"), Value: BoolValue(true)}}, CodeUnsupportedOptionKey},
		{Options{{Key: StringValue(OptSegmentSize), Value: Uint64Value(1000)}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptSegmentSize), Value: Uint64Value(2<<20 + 1)}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptEnforceFsync), Value: HeaderValue{Kind: KindBool, Value: []byte{2}}}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptMessagesRequiredToSave), Value: Uint32Value(0)}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptCompressionAlgorithm), Value: StringValue("zstd")}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptMessageExpiry), Value: StringValue("soon")}}, CodeInvalidOptionValue},
		{Options{{Key: StringValue(OptMaxTopicSize), Value: Uint64Value(1 << 20)}}, CodeInvalidTopicSize},
		{Options{{Key: StringValue(OptPreallocateSegments), Value: BoolValue(true)}}, CodeInvalidOptionValue}, // 1 GiB x 100 > 64 GiB
	}
	for i, c := range bad {
		_, _, _, err := ResolveTopicCreate(c.o, 100)
		if !HasCode(err, c.code) {
			t.Errorf("case %d: %v, want code %v", i, err, c.code)
		}
	}

	// Update: only updatable keys; updated keys become explicit.
	ne, nd, s2, err := ResolveTopicUpdate(explicit, derived, Options{{Key: StringValue(OptMaxTopicSize), Value: StringValue("10 GiB")}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if s2.MaxTopicSize != 10<<30 || !s2.EnforceFsync || len(ne) != 6 || len(nd) != 2 {
		t.Fatalf("update: %+v explicit %d derived %d", s2, len(ne), len(nd))
	}
	if _, _, _, err := ResolveTopicUpdate(explicit, derived, Options{{Key: StringValue(OptSegmentSize), Value: Uint64Value(1 << 20)}}, 3); !HasCode(err, CodeUnsupportedOptionKey) {
		t.Fatalf("non-updatable key: %v", err)
	}
	// "server default" resets a key to its derived default.
	_, nd, s3, err := ResolveTopicUpdate(ne, nd, Options{{Key: StringValue(OptMessageExpiry), Value: StringValue("server_default")}}, 3)
	if err != nil || s3.MessageExpiry != math.MaxUint64 || len(nd) != 3 {
		t.Fatalf("reset: %v %+v %d", err, s3, len(nd))
	}
	d, err := DescribeScope(ScopeTopic)
	if err != nil || len(d) != 8 || d[0].Key != OptCompressionAlgorithm || string(d[0].Default) != "none" {
		t.Fatalf("describe: %v %+v", err, d)
	}
	if d, err := DescribeScope(ScopeUser); err != nil || len(d) != 0 {
		t.Fatal("user scope")
	}
	if _, err := DescribeScope(9); !HasCode(err, CodeInvalidCommand) {
		t.Fatal("bad scope")
	}
}

func TestParseDurationAndSize(t *testing.T) {
	dur := map[string]uint64{"1s": 1e6, "7 days": 7 * 86400e6, "1h 30m": 5400e6, "250ms": 250e3, "2d12h": 216000e6, "15us": 15}
	for in, want := range dur {
		if got, ok := ParseDuration(in); !ok || got != want {
			t.Errorf("ParseDuration(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "s", "5 lightyears", "-1s", "99999999999999999999s"} {
		if _, ok := ParseDuration(in); ok {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
	size := map[string]uint64{"1048576": 1 << 20, "128 MiB": 128 << 20, "1GB": 1e9, "1.5 KiB": 1536, "2gib": 2 << 30}
	for in, want := range size {
		if got, ok := parseByteSize(in); !ok || got != want {
			t.Errorf("parseByteSize(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "MiB", "1 parsec", "99999999999 EiB"} {
		if _, ok := parseByteSize(in); ok {
			t.Errorf("parseByteSize(%q) accepted", in)
		}
	}
}

func TestPermissions(t *testing.T) {
	p := Permissions{
		Global: GlobalPermissions{ManageServers: true, ReadTopics: true, SendMessages: true},
		Streams: []StreamPermissions{
			{StreamID: 1, ReadStream: true, Topics: []TopicPermissions{{TopicID: 2, PollMessages: true}, {TopicID: 3, ManageTopic: true}}},
			{StreamID: 9, ManageTopics: true},
		},
	}
	b := p.AppendTo(nil)
	want := []byte{
		1, 0, 0, 0, 0, 0, 0, 1, 0, 1, // global
		1,          // has streams
		1, 0, 0, 0, // stream 1
		0, 1, 0, 0, 0, 0,
		1,                         // has topics
		2, 0, 0, 0, 0, 0, 1, 0, 1, // topic 2, has next
		3, 0, 0, 0, 1, 0, 0, 0, 0, // topic 3, last
		1,          // has next stream
		9, 0, 0, 0, // stream 9
		0, 0, 1, 0, 0, 0,
		0, // no topics
		0, // last stream
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("permissions\n got %v\nwant %v", b, want)
	}
	back, err := DecodePermissions(b)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("%v\n%+v", err, back)
	}
	if _, err := DecodePermissions(b[:len(b)-1]); err == nil {
		t.Fatal("truncated accepted")
	}
	if _, err := DecodePermissions(append(bytes.Clone(b), 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
}

func TestBatchRejections(t *testing.T) {
	good := goldenBatch(t)
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	cases := []struct {
		name  string
		b     []byte
		field string
		code  Code
	}{
		{"short", good[:100], "header", 0},
		{"length", mut(func(b []byte) { b[32]++ }), "batch_length", 0},
		{"length small", mut(func(b []byte) { binary.LittleEndian.PutUint64(b[32:], 10) }), "batch_length", 0},
		{"reserved", mut(func(b []byte) { b[100] = 1 }), "reserved", 0},
		{"count high", mut(func(b []byte) { b[48] = 3 }), "message_count", 0},
		{"count low", mut(func(b []byte) { b[48] = 1 }), "frames", 0},
		{"frame reserved", mut(func(b []byte) { b[256+40] = 1 }), "frame reserved", 0},
		{"frame overrun", mut(func(b []byte) { b[256+36] = 200 }), "frame length", 0},
		{"payload byte", mut(func(b []byte) { b[256+48] ^= 1 }), "frame checksum", CodeInvalidMessageChecksum},
		{"batch checksum", mut(func(b []byte) { b[40] ^= 1 }), "batch_checksum", CodeInvalidBatchChecksum},
		{"origin", mut(func(b []byte) { b[24] ^= 1 }), "batch_checksum", CodeInvalidBatchChecksum},
	}
	for _, c := range cases {
		_, err := VerifyBatch(c.b)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want field %q", c.name, err, c.field)
			continue
		}
		want := c.code
		if want == 0 {
			want = CodeInvalidCommand
		}
		if fe.IggyCode() != want {
			t.Errorf("%s: code %v, want %v", c.name, fe.IggyCode(), want)
		}
	}
	// Layout-only parsing ignores checksums.
	if _, err := ParseBatch(mut(func(b []byte) { b[40] ^= 1 })); err != nil {
		t.Fatal(err)
	}
	// Corrupt user headers in a correctly checksummed frame are rejected.
	bad := []Message{{Payload: []byte("x"), UserHeaders: []byte{0, 1, 0, 0, 0, 'a'}}}
	if _, err := AppendBatch(nil, bad); err == nil {
		t.Fatal("encoder accepted corrupt headers")
	}
	if err := (BatchView{b: good}).CheckDenseDeltas(); err != nil {
		t.Fatal(err)
	}
	if err := (BatchView{b: mut(func(b []byte) { b[256+24] = 5 })}).CheckDenseDeltas(); err == nil {
		t.Fatal("sparse deltas accepted")
	}
}

func TestAppendBatchLimits(t *testing.T) {
	if _, err := AppendBatch(nil, nil); !HasCode(err, CodeInvalidMessagesCount) {
		t.Fatal(err)
	}
	if _, err := AppendBatch(nil, []Message{{}}); !HasCode(err, CodeEmptyMessagePayload) {
		t.Fatal(err)
	}
	if _, err := AppendBatch(nil, []Message{{Payload: []byte("a"), OriginTimestamp: 0}, {Payload: []byte("b"), OriginTimestamp: 1 << 33}}); !HasCode(err, CodeInvalidMessageTimestampDelta) {
		t.Fatal(err)
	}
	b, err := AppendBatch([]byte("prefix"), []Message{{Payload: []byte("a"), OriginTimestamp: 50}, {Payload: []byte("b"), OriginTimestamp: 20}})
	if err != nil || string(b[:6]) != "prefix" {
		t.Fatal(err)
	}
	v, err := VerifyBatch(b[6:])
	if err != nil || v.OriginTimestamp() != 20 {
		t.Fatal(err)
	}
	it := v.Frames()
	f, _ := it.Next()
	if f.TimestampDelta() != 30 {
		t.Fatalf("delta %d", f.TimestampDelta())
	}
}

func TestBatchViewZeroAlloc(t *testing.T) {
	msgs := benchMessages(100, 1024)
	b, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(50, func() {
		v, err := VerifyBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		v.Stamp(1, 2, 3)
		it := v.Frames()
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			_ = f.Payload()
		}
		if _, ok := v.SliceByOffset(50, 10); !ok {
			t.Fatal("slice")
		}
	})
	if allocs != 0 {
		t.Fatalf("verify+stamp+iterate+slice allocated %.1f times per batch", allocs)
	}
	dst := make([]byte, 0, len(b))
	allocs = testing.AllocsPerRun(50, func() {
		if _, err := AppendBatch(dst[:0], msgs); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("encode into a large enough buffer allocated %.1f times", allocs)
	}
}

func benchMessages(n, size int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		p := make([]byte, size)
		for j := range p {
			p[j] = byte(i + j)
		}
		msgs[i] = Message{ID: Uint128{Lo: uint64(i + 1)}, OriginTimestamp: uint64(1_700_000_000_000_000 + i), Payload: p}
	}
	return msgs
}

func TestReadFrame(t *testing.T) {
	frame := AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated, Code: CmdPing}, []byte("body"))
	two := append(bytes.Clone(frame), frame...)
	r := bytes.NewReader(two)
	buf := make([]byte, 0, 8)
	for i := 0; i < 2; i++ {
		got, err := ReadFrame(r, buf, 0)
		if err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("frame %d: %v", i, err)
		}
		buf = got
	}
	if _, err := ReadFrame(r, buf, 0); err == nil {
		t.Fatal("EOF expected")
	}
	big := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(big[48:], 1000)
	var fse *FrameSizeError
	if _, err := ReadFrame(bytes.NewReader(big), nil, 512); !errors.As(err, &fse) {
		t.Fatalf("oversize: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame[:258]), nil, 0); err == nil {
		t.Fatal("truncated body accepted")
	}
}

func TestDecodeReplyPaths(t *testing.T) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 4, Operation: OpSendMessages, Session: 1}
	empty := AppendReply(nil, &req, nil)
	if _, _, err := DecodeReply(empty, 0); err == nil {
		t.Fatal("empty send reply accepted")
	}
	req.Operation = OpDeleteSegments
	r := AppendReply(nil, &req, nil)
	if len(r) != 256 {
		t.Fatal("DeleteSegments reply must not be result-framed")
	}
	req.Operation = OpStoreConsumerOffset
	r = AppendReply(nil, &req, nil)
	if !bytes.Equal(r[256:], []byte{0, 0, 0, 0}) {
		t.Fatalf("store offset reply body %x", r[256:])
	}
	truncated := bytes.Clone(r)
	binary.LittleEndian.PutUint32(truncated[48:], 258)
	if _, _, err := DecodeReply(truncated[:258], 0); err == nil {
		t.Fatal("truncated result section accepted")
	}
	req.Operation = OpRegister
	login := LoginReply{UserID: 0, Session: 77, ServerProtocol: CurrentProtocol, ServerVersion: "0.1.0"}
	payload, err := login.AppendTo(nil)
	if err != nil {
		t.Fatal(err)
	}
	r = AppendReply(nil, &req, payload)
	_, got, err := DecodeReply(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeLoginReply(got)
	if err != nil || back != login {
		t.Fatalf("%v %+v", err, back)
	}
	if _, err := DecodeLoginReply(make([]byte, 18)); err == nil {
		t.Fatal("zero session accepted")
	}
}

func TestDecodeReplyStatusBeforeOperation(t *testing.T) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 2, Operation: OpNonReplicated, Code: CmdGetStats}
	r := AppendStatusReply(nil, &req, CodeUnauthenticated)
	r[208] = 99 // unknown operation
	if _, _, err := DecodeReply(r, 0); !HasCode(err, CodeUnauthenticated) {
		t.Fatalf("status must win over an unknown operation: %v", err)
	}
	ok := AppendReply(nil, &req, nil)
	ok[208] = 99
	var fe *FieldError
	if _, _, err := DecodeReply(ok, 0); !errors.As(err, &fe) || fe.Field != "operation" {
		t.Fatalf("unknown operation on a status-0 reply: %v", err)
	}
}

// trickle hands out at most step bytes per Read.
type trickle struct {
	b    []byte
	step int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), t.step, len(t.b))
	copy(p, t.b[:n])
	t.b = t.b[n:]
	return n, nil
}

func TestReadBodyGrowsWithArrival(t *testing.T) {
	body := make([]byte, 1<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	frame := AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpSendMessages}, body)
	cases := []struct {
		name    string
		arrived int // bytes the peer sends before stopping
		step    int
	}{
		{"whole frame, small reads", len(frame), 1000},
		{"whole frame, large reads", len(frame), 1 << 20},
		{"header only", HeaderSize, 1000},
		{"one byte of body", HeaderSize + 1, 1000},
		{"a tenth", len(frame) / 10, 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &trickle{b: frame[HeaderSize:tc.arrived], step: tc.step}
			buf := append(make([]byte, 0, HeaderSize), frame[:HeaderSize]...)
			charged := 0
			out, got, err := ReadBody(r, buf, len(frame), func(n int) error { charged += n; return nil })
			if got != tc.arrived {
				t.Fatalf("got %d bytes, %d arrived", got, tc.arrived)
			}
			if bound := 2*tc.arrived + BodyGrowthMin; cap(out) > bound || charged > bound {
				t.Fatalf("%d bytes arrived: buffer cap %d, charged %d, bound %d", tc.arrived, cap(out), charged, bound)
			}
			if charged+HeaderSize != len(out) {
				t.Fatalf("charged %d for a room of %d", charged, len(out))
			}
			if tc.arrived == len(frame) {
				if err != nil || !bytes.Equal(out, frame) {
					t.Fatalf("complete frame: %v", err)
				}
			} else if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("partial frame: %v", err)
			}
		})
	}
}

func TestReadBodyChargeRefusal(t *testing.T) {
	frame := AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpSendMessages}, make([]byte, 100_000))
	stop := errors.New("budget")
	allowed := 3 * BodyGrowthMin
	r := &trickle{b: frame[HeaderSize:], step: 1 << 20}
	buf := append([]byte(nil), frame[:HeaderSize]...)
	total := 0
	out, got, err := ReadBody(r, buf, len(frame), func(n int) error {
		if total+n > allowed {
			return stop
		}
		total += n
		return nil
	})
	if !errors.Is(err, stop) || got > allowed+HeaderSize || cap(out) > 2*(allowed+HeaderSize) {
		t.Fatalf("err %v, got %d, cap %d", err, got, cap(out))
	}
	// A buffer that is already large enough is reused: no allocation.
	big := make([]byte, HeaderSize, len(frame))
	copy(big, frame)
	out, _, err = ReadBody(&trickle{b: frame[HeaderSize:], step: 5000}, big, len(frame), nil)
	if err != nil || &out[0] != &big[0] || !bytes.Equal(out, frame) {
		t.Fatalf("reuse: %v", err)
	}
}

// The producer identity of a send survives Put/Decode, is not written for
// other operations, and Validate refuses a half-set one.
func TestRequestHeaderProducerIdentity(t *testing.T) {
	b := make([]byte, HeaderSize)
	h := RequestHeader{Prefix: Prefix{Size: HeaderSize}, Client: Uint128{Lo: 1}, Operation: OpSendMessages, Session: 3, Request: 4,
		Producer: Uint128{Lo: 7, Hi: 8}, ProducerSession: 9, ProducerRequest: 10}
	h.Put(b)
	got, err := DecodeRequestHeader(b, 0)
	if err != nil || got.Producer != h.Producer || got.ProducerSession != 9 || got.ProducerRequest != 10 {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	got.ProducerRequest = 0
	if err := got.Validate(); err == nil {
		t.Fatal("a producer identity without a request number validated")
	}
	h.Operation = OpStoreConsumerOffset
	h.Put(b)
	for _, x := range b[200:232] {
		if x != 0 {
			t.Fatal("producer identity written for a non-send operation")
		}
	}
}

// StampHeader on a copy of the header, the frames left where they are,
// gives the record Stamp gives in place, and it verifies; the frames are
// not written.
func TestStampHeaderMatchesStamp(t *testing.T) {
	b, err := AppendBatch(nil, benchMessages(17, 300))
	if err != nil {
		t.Fatal(err)
	}
	frames := bytes.Clone(b[BatchHeaderSize:])
	head := bytes.Clone(b[:BatchHeaderSize])
	StampHeader(head, frames, 4, 1000, 77)
	if !bytes.Equal(frames, b[BatchHeaderSize:]) {
		t.Fatal("StampHeader wrote into the frames")
	}
	v, err := VerifyBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	v.Stamp(4, 1000, 77)
	if !bytes.Equal(head, b[:BatchHeaderSize]) {
		t.Fatalf("split stamp header differs from the in-place stamp:\n%x\n%x", head, b[:BatchHeaderSize])
	}
	joined := append(head, frames...)
	jv, err := VerifyBatch(joined)
	if err != nil {
		t.Fatalf("split-stamped record does not verify: %v", err)
	}
	if h := jv.Header(); h.BaseOffset != 1000 || h.PartitionID != 4 || h.BaseTimestamp != 77 {
		t.Fatalf("stamps: %+v", h)
	}
	// A different stamp changes the checksum: it covers the stamped fields.
	other := bytes.Clone(head)
	StampHeader(other, frames, 4, 1001, 77)
	if bytes.Equal(other[bhBatchChecksum:bhBatchChecksum+8], head[bhBatchChecksum:bhBatchChecksum+8]) {
		t.Fatal("batch checksum did not change with base_offset")
	}
}
