package wire

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// Every decoder has a fuzz target. Each target checks, beyond "no panic",
// that errors are *FieldError-style values with a code and that whatever
// decodes re-encodes to the same bytes (so the decoders cannot silently
// accept something they would never produce).

func requireCoded(t *testing.T, err error) {
	t.Helper()
	if _, ok := CodeOf(err); !ok {
		t.Fatalf("error without an Iggy code: %T %v", err, err)
	}
}

func FuzzRequestHeader(f *testing.F) {
	f.Add(AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated, Code: CmdPing}, nil))
	f.Add(AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpCreateStream, Session: 2, Request: 3}, []byte{1, 'a'}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := DecodeRequest(b, 1<<20)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again := AppendRequest(nil, h, body)
		h2, body2, err := DecodeRequest(again, 1<<20)
		if err != nil || h2 != h || !bytes.Equal(body, body2) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}

func FuzzReplyFrame(f *testing.F) {
	req := RequestHeader{Client: Uint128{Lo: 1}, Request: 1, Operation: OpCreateTopic, Session: 1}
	f.Add(AppendReply(nil, &req, []byte("payload")))
	f.Add(AppendRejectionReply(nil, &req, CodeTopicNameAlreadyExists))
	f.Add(AppendStatusReply(nil, &req, CodeUnauthorized))
	f.Add(AppendEviction(nil, Prefix{}, Uint128{Lo: 1}, EvictStaleClient, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, err := DecodeReply(b, 1<<20)
		if err != nil {
			requireCoded(t, err)
		}
		if _, err := DecodeEvictionHeader(b); err != nil {
			requireCoded(t, err)
		}
	})
}

func FuzzBatch(f *testing.F) {
	good, _ := AppendBatch(nil, []Message{{Payload: []byte("a")}, {Payload: []byte("bc"), UserHeaders: []byte{2, 1, 0, 0, 0, 'k', 9, 1, 0, 0, 0, 7}}})
	f.Add(good, uint64(0), uint32(5))
	f.Add(good[:300], uint64(1), uint32(1))
	// Producer limits: an empty payload, a payload and a user-headers block
	// declared one byte over Iggy's limits.
	for _, fld := range []struct {
		off int
		v   uint32
	}{{fhPayloadLen, 0}, {fhPayloadLen, MaxPayloadSize + 1}, {fhUserHeadersLen, MaxUserHeadersSize + 1}} {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[BatchHeaderSize+fld.off:], fld.v)
		f.Add(b, uint64(0), uint32(5))
	}
	f.Fuzz(func(t *testing.T, b []byte, from uint64, max uint32) {
		pv, perr := ParseBatch(b)
		v, err := VerifyBatch(b)
		if err != nil {
			requireCoded(t, err)
		} else {
			it := v.Frames()
			for fr, ok := it.Next(); ok; fr, ok = it.Next() {
				if fr.PayloadLen() == 0 || fr.PayloadLen() > MaxPayloadSize || fr.UserHeadersLen() > MaxUserHeadersSize {
					t.Fatalf("verified a frame with payload %d, headers %d", fr.PayloadLen(), fr.UserHeadersLen())
				}
			}
		}
		if perr != nil {
			requireCoded(t, perr)
			if err == nil {
				t.Fatal("verify accepted what parse refused")
			}
			return
		}
		n := uint32(0)
		it := pv.Frames()
		for _, ok := it.Next(); ok; _, ok = it.Next() {
			n++
		}
		if n != pv.MessageCount() {
			t.Fatalf("iterated %d frames, header says %d", n, pv.MessageCount())
		}
		if s, ok := pv.SliceByOffset(from, max); ok {
			rec := s.AppendTo(nil)
			sv, serr := ParseBatch(rec)
			if serr != nil || sv.MessageCount() != s.Count {
				t.Fatalf("slice does not parse: %v", serr)
			}
			// A slice of an intact batch is itself intact.
			if err == nil {
				if serr := sv.VerifyChecksums(); serr != nil {
					t.Fatalf("slice of a verified batch fails verification: %v", serr)
				}
			}
		}
		if err == nil {
			c := bytes.Clone(b)
			cv, _ := ParseBatch(c)
			cv.Stamp(1, 2, 3)
			if err := cv.VerifyChecksums(); err != nil {
				t.Fatalf("stamped batch fails verification: %v", err)
			}
			if v.Len() != len(b) {
				t.Fatal("view length")
			}
		}
	})
}

func FuzzUserHeaders(f *testing.F) {
	good, _ := AppendUserHeaders(nil, []HeaderEntry{{Key: StringValue("k"), Value: Uint64Value(1)}})
	f.Add(good)
	f.Add([]byte{200, 1, 0, 0, 0, 'x', 201, 2, 0, 0, 0, 'y', 'z'})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := DecodeUserHeaders(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again, err := AppendUserHeaders(nil, entries)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzOptions(f *testing.F) {
	good, _ := Options{{Key: StringValue(OptSegmentSize), Value: StringValue("16 MiB")}}.AppendTo(nil)
	f.Add(good, uint32(1))
	f.Fuzz(func(t *testing.T, b []byte, partitions uint32) {
		o, err := DecodeOptions(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again, err := o.AppendTo(nil)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip: %v", err)
		}
		explicit, derived, _, err := ResolveTopicCreate(o, partitions)
		if err != nil {
			requireCoded(t, err)
			return
		}
		if len(explicit)+len(derived) != len(TopicOptionCatalog) {
			t.Fatalf("%d explicit + %d derived keys", len(explicit), len(derived))
		}
		ne, nd, _, err := ResolveTopicUpdate(explicit, derived, o, partitions)
		if err != nil {
			requireCoded(t, err)
		} else if len(ne)+len(nd) != len(TopicOptionCatalog) {
			t.Fatalf("update: %d explicit + %d derived keys", len(ne), len(nd))
		}
		// Canonical values are fixed points of canonicalization.
		for _, e := range explicit {
			v, present, err := CanonicalTopicOption(string(e.Key.Value), e.Value)
			if err != nil || !present || !reflect.DeepEqual(v, e.Value) {
				t.Fatalf("canonical value of %s is not stable: %v", e.Key.Value, err)
			}
		}
	})
}

func FuzzPermissions(f *testing.F) {
	p := Permissions{Streams: []StreamPermissions{{StreamID: 1, Topics: []TopicPermissions{{TopicID: 2}}}}}
	f.Add(p.AppendTo(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePermissions(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		back, err := DecodePermissions(p.AppendTo(nil))
		if err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzIdentifier(f *testing.F) {
	f.Add([]byte{1, 4, 1, 0, 0, 0})
	f.Add([]byte{2, 3, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, n, err := DecodeIdentifier(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again, err := id.AppendTo(nil)
		if err != nil || !bytes.Equal(again, b[:n]) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzRegister(f *testing.F) {
	body, _ := (&LoginRegister{Version: ClientVersionInfo{CurrentProtocol, "go-sdk", "1"}, Username: "u", Password: "p"}).AppendBody(nil)
	f.Add(body)
	tok, _ := (&LoginRegisterWithPAT{Version: ClientVersionInfo{CurrentProtocol, "go-sdk", "1"}, Token: "t"}).AppendBody(nil)
	f.Add(tok)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRegister(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		if r.Password != nil {
			again, err := (&LoginRegister{Version: r.Version, Username: r.Password.Username, Password: r.Password.Password, Context: r.Password.Context}).AppendBody(nil)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("password form round trip: %v", err)
			}
		}
		if r.Token != nil {
			again, err := (&LoginRegisterWithPAT{Version: r.Version, Token: r.Token.Token, Context: r.Token.Context}).AppendBody(nil)
			if err != nil || !bytes.Equal(again, b) {
				t.Fatalf("token form round trip: %v", err)
			}
		}
	})
}

func FuzzSendMessages(f *testing.F) {
	body, _ := (&SendMessages{StreamID: NumericID(1), TopicID: MustNamedID("t"), Partitioning: PartitionByKey([]byte("k")),
		Messages: []Message{{Payload: []byte("x")}}}).AppendBody(nil)
	f.Add(body)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeSendMessages(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again, err := r.AppendBody(nil)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzPollReply(f *testing.F) {
	batch, _ := AppendBatch(nil, []Message{{Payload: []byte("x")}, {Payload: []byte("y")}})
	f.Add(append(AppendPollReplyPrefix(nil, 1, 5, 2), batch...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePollReply(b)
		if err != nil {
			requireCoded(t, err)
			return
		}
		if len(b) == 0 {
			return
		}
		if got := len(p.Messages()); uint32(got) != p.MessagesCount {
			t.Fatalf("%d messages, declared %d", got, p.MessagesCount)
		}
		again, _ := p.AppendTo(nil)
		if !bytes.Equal(again, b) {
			t.Fatal("round trip")
		}
	})
}

// FuzzPollOffsetBody: the poll and consumer-offset decoders are strict, so
// whatever they accept is the canonical encoding of what they decoded.
func FuzzPollOffsetBody(f *testing.F) {
	codes := []CommandCode{CmdPollMessages, CmdGetConsumerOffset, CmdStoreConsumerOffset, CmdDeleteConsumerOffset}
	for _, r := range sampleRequests() {
		for i, c := range codes {
			if c != r.Code() {
				continue
			}
			body, _ := r.AppendBody(nil)
			f.Add(byte(i), body)
			f.Add(byte(i), append(bytes.Clone(body), 0))   // trailing byte
			f.Add(byte(i), body[:len(body)-1])             // truncated
			f.Add(byte(i), append([]byte{3}, body[1:]...)) // unknown consumer kind
			if c == CmdPollMessages && len(body) > 15 {
				bad := bytes.Clone(body)
				bad[len(bad)-14] = 9 // unknown strategy kind
				f.Add(byte(i), bad)
				bad = bytes.Clone(body)
				bad[len(bad)-1] = 2 // auto_commit 2
				f.Add(byte(i), bad)
			}
		}
	}
	f.Fuzz(func(t *testing.T, pick byte, body []byte) {
		code := codes[int(pick)%len(codes)]
		r, err := DecodeRequestBody(code, body)
		if err != nil {
			requireCoded(t, err)
			return
		}
		again, err := r.AppendBody(nil)
		if err != nil || !bytes.Equal(again, body) {
			t.Fatalf("%v: accepted a non-canonical body (%v)\n got %x\nwant %x", code, err, body, again)
		}
	})
}

// FuzzRequestBody drives every request decoder: the first byte picks the
// command, the rest is the body.
func FuzzRequestBody(f *testing.F) {
	for _, r := range sampleRequests() {
		body, _ := r.AppendBody(nil)
		for i, c := range AllCommands {
			if c == r.Code() {
				f.Add(append([]byte{byte(i)}, body...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		code := AllCommands[int(in[0])%len(AllCommands)]
		body := in[1:]
		r, err := DecodeRequestBody(code, body)
		if err != nil {
			requireCoded(t, err)
			return
		}
		// Booleans decode any non-zero byte as true (as the server does)
		// and encode as 1, so the first re-encoding may differ from the
		// input; from then on the encoding must be stable.
		again, err := r.AppendBody(nil)
		if err != nil {
			t.Fatalf("%v: re-encode: %v", code, err)
		}
		r2, err := DecodeRequestBody(code, again)
		if err != nil {
			t.Fatalf("%v: re-encoded body does not decode: %v", code, err)
		}
		again2, err := r2.AppendBody(nil)
		if err != nil || !bytes.Equal(again, again2) {
			t.Fatalf("%v: encoding is not stable (%v)\n got %x\nwant %x", code, err, again2, again)
		}
	})
}

// FuzzReplyPayload drives every reply decoder the same way.
func FuzzReplyPayload(f *testing.F) {
	t := &testing.T{}
	for _, s := range sampleReplies(t) {
		p := reflect.New(reflect.TypeOf(s.v))
		p.Elem().Set(reflect.ValueOf(s.v))
		b, _ := p.Interface().(ReplyPayload).AppendTo(nil)
		for i, c := range AllCommands {
			if c == s.code {
				f.Add(append([]byte{byte(i)}, b...))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		code := AllCommands[int(in[0])%len(AllCommands)]
		body := in[1:]
		v, err := DecodeReplyPayload(code, body)
		if err != nil {
			requireCoded(t, err)
			return
		}
		if v == nil || (code == CmdPollMessages && len(body) == 0) {
			return
		}
		p := reflect.New(reflect.TypeOf(v))
		p.Elem().Set(reflect.ValueOf(v))
		again, err := p.Interface().(ReplyPayload).AppendTo(nil)
		if err != nil {
			t.Fatalf("%v: re-encode: %v", code, err)
		}
		v2, err := DecodeReplyPayload(code, again)
		if err != nil {
			t.Fatalf("%v: re-encoded payload does not decode: %v", code, err)
		}
		// Compare encodings, not values: floats may be NaN and booleans
		// normalise, but the encoding of a decoded value must be stable.
		p2 := reflect.New(reflect.TypeOf(v2))
		p2.Elem().Set(reflect.ValueOf(v2))
		again2, err := p2.Interface().(ReplyPayload).AppendTo(nil)
		if err != nil || !bytes.Equal(again, again2) {
			t.Fatalf("%v: encoding is not stable (%v)", code, err)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	f.Add(AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 1}, Operation: OpNonReplicated, Code: CmdPing}, []byte("abc")), uint16(600))
	f.Fuzz(func(t *testing.T, b []byte, max uint16) {
		limit := uint32(max) + HeaderSize
		frame, err := ReadFrame(bytes.NewReader(b), nil, limit)
		if err != nil {
			return
		}
		if uint32(len(frame)) != FrameSizeOf(frame) || uint32(len(frame)) > limit || !bytes.Equal(frame, b[:len(frame)]) {
			t.Fatalf("frame of %d bytes, size field %d, limit %d", len(frame), FrameSizeOf(frame), limit)
		}
	})
}
