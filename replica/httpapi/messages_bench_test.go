package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/iggo/iggo/wire"
)

func sendBody(n, size int) []byte {
	var b strings.Builder
	b.WriteString(`{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[`)
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(i)
	}
	enc := base64.StdEncoding.EncodeToString(p)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":` + strconv.Itoa(i+1) + `,"payload":"` + enc + `"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkSendFrame: JSON send body (1,000 × 1 KB) to the binary frame.
func BenchmarkSendFrame(b *testing.B) {
	body := sendBody(1000, 1000)
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		if _, _, err := sendFrame(body, wire.NumericID(0), wire.NumericID(0)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPollJSON: a poll reply of 1,000 × 1 KB to Iggy's JSON.
func BenchmarkPollJSON(b *testing.B) {
	frame, _, err := sendFrame(sendBody(1000, 1000), wire.NumericID(0), wire.NumericID(0))
	if err != nil {
		b.Fatal(err)
	}
	req, err := wire.DecodeSendMessages(frame[wire.HeaderSize:])
	if err != nil {
		b.Fatal(err)
	}
	payload := wire.AppendPollReplyPrefix(nil, 0, 999, 1000)
	payload = append(payload, req.Batch.Bytes()...)
	b.SetBytes(int64(len(payload)))
	b.Run("direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := renderPoll(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p, _ := polledOf(payload)
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzSendBody: the fast send parser never panics, and whenever it accepts
// a body encoding/json decodes the same partitioning and messages.
func FuzzSendBody(f *testing.F) {
	f.Add(sendBody(2, 8))
	f.Add([]byte(`{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"aGk=","user_headers":[{"key":{"kind":"string","value":"aw=="},"value":{"kind":"bool","value":"AQ=="}}]}]}`))
	f.Add([]byte(`{"messages":[{"id":"0102030405060708090a0b0c0d0e0f10","payload":"eA=="}],"partitioning":{"kind":"messages_key","value":"a2V5"}}`))
	f.Add([]byte(`{"partitioning":{"kind":"partition_id","value":"AQAAAA=="},"messages":[{"id":null,"payload":"","user_headers":"AQ=="}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, _ = sendFrame(body, wire.NumericID(0), wire.NumericID(0))
		fb, ok := fastSend(body)
		if !ok {
			return
		}
		var j sendBodyJSON
		if err := json.Unmarshal(body, &j); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, body)
		}
		if (j.Partitioning != nil) != fb.hasPart || (j.Messages != nil) != fb.hasMsgs {
			t.Fatalf("presence differs: %q", body)
		}
		if j.Partitioning != nil && (j.Partitioning.Kind != fb.kind || !bytes.Equal(j.Partitioning.Value, fb.value)) {
			t.Fatalf("partitioning differs: %q", body)
		}
		if j.Messages == nil {
			return
		}
		if len(*j.Messages) != len(fb.messages) {
			t.Fatalf("%d messages, fast %d: %q", len(*j.Messages), len(fb.messages), body)
		}
		for i, m := range *j.Messages {
			fm := fb.messages[i]
			if (m.Payload != nil) != fm.hasPay || (m.Payload != nil && !bytes.Equal(*m.Payload, fm.payload)) ||
				!bytes.Equal(bytes.TrimSpace(m.ID), bytes.TrimSpace(fm.id)) || !bytes.Equal(bytes.TrimSpace(m.UserHeaders), bytes.TrimSpace(fm.headers)) {
				t.Fatalf("message %d differs: %q", i, body)
			}
		}
	})
}

// TestAppendPolled: the direct poll rendering is the document encoding/json
// makes of polledOf, for empty replies, headers of every shape and ids
// beyond 64 bits.
func TestAppendPolled(t *testing.T) {
	hdr, _ := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("k"), Value: wire.Uint64Value(7)}})
	msgs := []wire.Message{
		{ID: wire.Uint128{Lo: 1}, OriginTimestamp: 10, Payload: []byte("a")},
		{ID: wire.Uint128{Lo: 5, Hi: 9}, OriginTimestamp: 12, Payload: []byte("bb"), UserHeaders: hdr},
		{ID: wire.Uint128{Lo: 3}, OriginTimestamp: 11, Payload: []byte{0, 1, 2}, UserHeaders: []byte{0xff}},
	}
	batch, err := wire.AppendBatch(nil, msgs[:2])
	if err != nil {
		t.Fatal(err)
	}
	v, _ := wire.ParseBatch(batch)
	v.Stamp(0, 40, 99)
	for _, payload := range [][]byte{
		nil,
		wire.AppendPollReplyPrefix(nil, 4294967295, 0, 0),
		append(wire.AppendPollReplyPrefix(nil, 2, 41, 2), batch...),
		append(append(wire.AppendPollReplyPrefix(nil, 2, 41, 4), batch...), batch...),
	} {
		got, err := appendPolled(nil, payload)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := polledOf(payload)
		want, _ := json.Marshal(p)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("invalid JSON %s: %v", got, err)
		}
		_ = json.Unmarshal(want, &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) || !bytes.Contains(got, []byte(`"count":`)) {
			t.Fatalf("direct rendering\n%s\nencoding/json\n%s", got, want)
		}
		if bytes.Contains(got, []byte("0000000000")) {
			t.Fatalf("count slot left padded: %s", got)
		}
	}
	// Big ids keep all their digits (no float rounding).
	got, _ := appendPolled(nil, append(wire.AppendPollReplyPrefix(nil, 2, 41, 2), batch...))
	if !bytes.Contains(got, []byte(`"id":166020696663385964549`)) {
		t.Fatalf("u128 id rendering: %s", got)
	}
}
