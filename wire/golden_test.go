package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Golden bytes are written from the layouts in the reference, offset by
// offset, with literal numbers instead of this package's constants, so a
// mistake shared by an encoder and its decoder cannot hide.

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestGoldenRequestHeader(t *testing.T) {
	h := RequestHeader{
		Client:    Uint128{Lo: 0x0807060504030201, Hi: 0x100f0e0d0c0b0a09},
		Timestamp: 0x1122334455667788,
		Request:   7,
		Operation: OpNonReplicated,
		Session:   0x42,
		Code:      CmdGetStats,
	}
	h.Size = 300
	got := make([]byte, 256)
	h.Put(got)

	want := make([]byte, 256)
	copy(want[48:], []byte{0x2c, 0x01, 0x00, 0x00}) // size 300
	want[60] = 5                                    // command Request
	copy(want[128:], []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	copy(want[160:], []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11})
	want[168] = 7    // request
	want[176] = 2    // NonReplicated
	want[184] = 0x42 // session
	want[196] = 10   // command code GET_STATS
	if !bytes.Equal(got, want) {
		t.Fatalf("request header mismatch\n got %x\nwant %x", got, want)
	}

	back, err := DecodeRequestHeader(want, 0)
	if err != nil {
		t.Fatal(err)
	}
	h.Kind = FrameRequest
	if back != h {
		t.Fatalf("decoded %+v, want %+v", back, h)
	}
}

func TestGoldenReplicatedRequestHasNoCode(t *testing.T) {
	h := RequestHeader{Client: Uint128{Lo: 1}, Request: 3, Operation: OpCreateTopic, Session: 9, Code: CmdCreateTopic}
	h.Size = 256
	got := make([]byte, 256)
	h.Put(got)
	for i := 196; i < 256; i++ {
		if got[i] != 0 {
			t.Fatalf("reserved byte %d = %d, want 0 for a replicated op", i, got[i])
		}
	}
	back, err := DecodeRequestHeader(got, 0)
	if err != nil {
		t.Fatal(err)
	}
	if back.Code != CmdCreateTopic {
		t.Fatalf("code from operation = %v, want topic.create", back.Code)
	}
}

func TestGoldenReplyHeader(t *testing.T) {
	req := RequestHeader{
		Prefix:          Prefix{Cluster: Uint128{Lo: 0xAB}, View: 4},
		Client:          Uint128{Lo: 0x0102, Hi: 0x0304},
		RequestChecksum: Uint128{Lo: 0x55},
		Timestamp:       0x99,
		Request:         0x0A0B,
		Operation:       OpCreateStream,
		Session:         1,
	}
	frame := AppendReply(nil, &req, []byte{0xEE})
	want := make([]byte, 256+5)
	want[32] = 0xAB                                 // cluster echoed
	copy(want[48:], []byte{0x05, 0x01, 0x00, 0x00}) // size 261
	want[52] = 4                                    // view echoed
	want[60] = 8                                    // Reply
	want[128] = 0x55                                // request_checksum echoed
	copy(want[160:], []byte{0x02, 0x01, 0, 0, 0, 0, 0, 0, 0x04, 0x03})
	want[192] = 0x99                           // timestamp echoed
	copy(want[200:], []byte{0x0B, 0x0A})       // request echoed
	want[208] = 128                            // operation echoed
	copy(want[256:], []byte{0, 0, 0, 0, 0xEE}) // result section count 0, payload
	if !bytes.Equal(frame, want) {
		t.Fatalf("reply mismatch\n got %x\nwant %x", frame, want)
	}
	h, payload, err := DecodeReply(frame, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.Request != 0x0A0B || h.Operation != OpCreateStream || !bytes.Equal(payload, []byte{0xEE}) {
		t.Fatalf("decoded %+v payload %x", h, payload)
	}

	status := AppendStatusReply(nil, &req, CodeUnauthorized)
	if len(status) != 256 || status[216] != 41 || status[48] != 0 || status[49] != 1 {
		t.Fatalf("status reply bytes wrong: len %d status %d", len(status), status[216])
	}
	if _, _, err := DecodeReply(status, 0); !HasCode(err, CodeUnauthorized) {
		t.Fatalf("status reply decoded to %v, want code 41", err)
	}

	rej := AppendRejectionReply(nil, &req, CodeStreamNameAlreadyExists)
	wantBody := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0xF4, 0x03, 0, 0} // [1][0][1012]
	if !bytes.Equal(rej[256:], wantBody) || rej[216] != 0 {
		t.Fatalf("rejection body %x, want %x", rej[256:], wantBody)
	}
	if _, _, err := DecodeReply(rej, 0); !HasCode(err, CodeStreamNameAlreadyExists) {
		t.Fatalf("rejection decoded to %v", err)
	}
}

func TestGoldenEviction(t *testing.T) {
	frame := AppendEviction(nil, Prefix{}, Uint128{Lo: 0x77}, EvictIncompatibleProtocol, 0x2C00, 0x2FFF)
	want := make([]byte, 256)
	want[48], want[49] = 0x00, 0x01 // size 256
	want[60] = 13
	want[128] = 0x77
	copy(want[144:], []byte{0xFF, 0x2F, 0, 0}) // max
	copy(want[148:], []byte{0x00, 0x2C, 0, 0}) // min
	want[255] = 14
	if !bytes.Equal(frame, want) {
		t.Fatalf("eviction mismatch\n got %x\nwant %x", frame, want)
	}
	h, err := DecodeEvictionHeader(want)
	if err != nil {
		t.Fatal(err)
	}
	if h.Reason != EvictIncompatibleProtocol || h.VersionMin != 0x2C00 || h.VersionMax != 0x2FFF {
		t.Fatalf("decoded %+v", h)
	}
	_, _, err = DecodeReply(want, 0)
	var ev *EvictionError
	if !errors.As(err, &ev) || ev.IggyCode() != CodeIncompatibleProtocolVersion {
		t.Fatalf("reply decode of eviction = %v", err)
	}
}

// The worked example of the reference (§2.3): Go SDK login iggy/iggy.
func TestGoldenLoginRegister(t *testing.T) {
	req := LoginRegister{
		Version:  ClientVersionInfo{Protocol: CurrentProtocol, SDKName: "go-sdk", SDKVersion: "0.9.0-edge.4"},
		Username: "iggy",
		Password: "iggy",
	}
	body, err := req.AppendBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := hexBytes(t, "002c0000"+"06"+"676f2d73646b"+"0c"+"302e392e302d656467652e34"+"04"+"69676779"+"04"+"69676779"+"00000000")
	if len(want) != 38 || !bytes.Equal(body, want) {
		t.Fatalf("login body\n got %x\nwant %x", body, want)
	}
	frame := AppendRequest(nil, RequestHeader{Client: Uint128{Lo: 5}, Operation: OpRegister}, body)
	if len(frame) != 294 || frame[48] != 0x26 || frame[49] != 0x01 || frame[176] != 1 || frame[168] != 0 {
		t.Fatalf("login frame: len %d size bytes %x op %d", len(frame), frame[48:52], frame[176])
	}
	h, gotBody, err := DecodeRequest(frame, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := DecodeRegister(gotBody)
	if err != nil {
		t.Fatal(err)
	}
	if h.Operation != OpRegister || reg.Password == nil || reg.Password.Username != "iggy" || reg.Password.Password != "iggy" {
		t.Fatalf("register decode %+v %+v", h, reg)
	}
	if reg.Version != req.Version {
		t.Fatalf("version %+v", reg.Version)
	}
	// The PAT reading of this body does not parse: the trailing context
	// length would have to consume the rest exactly.
	if reg.Token != nil {
		t.Fatalf("password body also parsed as a token: %+v", reg.Token)
	}
}

// Golden batch: two messages; checksums computed independently with the C
// libxxhash (XXH3_64bits) and written here as literals.
const goldenBatchHex = "" +
	// header: partition 0, base offset 0, base ts 0, origin 1000, length 369, checksum, count 2
	"0000000000000000" + "0000000000000000" + "0000000000000000" + "e803000000000000" +
	"7101000000000000" + "bddf0b3e2e043f1a" + "02000000"
const goldenFrame0 = "dc8e00ca420b92a9" + "01000000000000000000000000000000" + "00000000" + "00000000" +
	"00000000" + "02000000" + "0000000000000000" + "6869"
const goldenFrame1 = "129bb23f0e5d9630" + "02000000000000000300000000000000" + "01000000" + "05000000" +
	"0c000000" + "03000000" + "0000000000000000" + "616263" + "02010000006b090100000007"

func goldenBatch(t *testing.T) []byte {
	t.Helper()
	hdr := hexBytes(t, goldenBatchHex)
	hdr = append(hdr, make([]byte, 256-len(hdr))...)
	b := append(hdr, hexBytes(t, goldenFrame0)...)
	return append(b, hexBytes(t, goldenFrame1)...)
}

func TestGoldenBatch(t *testing.T) {
	headers, err := AppendUserHeaders(nil, []HeaderEntry{{Key: StringValue("k"), Value: Uint8Value(7)}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{
		{ID: Uint128{Lo: 1}, OriginTimestamp: 1000, Payload: []byte("hi")},
		{ID: Uint128{Lo: 2, Hi: 3}, OriginTimestamp: 1005, Payload: []byte("abc"), UserHeaders: headers},
	}
	got, err := AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenBatch(t)
	if !bytes.Equal(got, want) {
		t.Fatalf("batch mismatch\n got %x\nwant %x", got, want)
	}
	v, err := VerifyBatch(want)
	if err != nil {
		t.Fatal(err)
	}
	if v.MessageCount() != 2 || v.OriginTimestamp() != 1000 {
		t.Fatalf("view header %+v", v.Header())
	}

	// Stamping: checksum recomputed over the new header fields.
	v.Stamp(3, 10, 5000)
	if got := v.Header().BatchChecksum; got != 0x24cfc75080c1d5de {
		t.Fatalf("stamped checksum %#x", got)
	}
	if err := v.VerifyChecksums(); err != nil {
		t.Fatal(err)
	}

	// Slice from offset 11 (the second message): new count, length, checksum.
	s, ok := v.SliceByOffset(11, 10)
	if !ok || s.Count != 1 {
		t.Fatalf("slice ok=%v count=%d", ok, s.Count)
	}
	rec := s.AppendTo(nil)
	if len(rec) != 319 {
		t.Fatalf("slice length %d", len(rec))
	}
	sv, err := VerifyBatch(rec)
	if err != nil {
		t.Fatal(err)
	}
	if h := sv.Header(); h.BatchChecksum != 0xc6a369466f14fdd7 || h.BaseOffset != 10 || h.BatchLength != 319 {
		t.Fatalf("slice header %+v", h)
	}
	it := sv.Frames()
	f, _ := it.Next()
	if f.OffsetDelta() != 1 || string(f.Payload()) != "abc" {
		t.Fatalf("slice frame delta %d payload %q", f.OffsetDelta(), f.Payload())
	}
	if &rec[0] == &s.Frames[0] {
		t.Fatal("AppendTo should copy into dst")
	}
	if &s.Frames[0] != &want[256+50] {
		t.Fatal("slice frames should alias the stored batch")
	}
}
