package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/iggo/iggo/wire"
)

// Iggy's JSON message form. A send body is
//
//	{"partitioning": {"kind": "balanced" | "partition_id" | "messages_key",
//	                  "value": base64},
//	 "messages": [{"id": number | "decimal" | "uuid hex" (optional, 0 or
//	               absent: the server mints one),
//	               "payload": base64,
//	               "user_headers": base64 TLV | [{"key": {"kind", "value"},
//	                                             "value": {"kind", "value"}}]
//	               | null}]}
//
// partition_id's value is the u32 little-endian; header field values are
// base64 of their binary encoding. A poll answers
//
//	{"partition_id", "current_offset", "count", "messages": [{"header":
//	  {"checksum", "id", "offset", "timestamp", "origin_timestamp",
//	   "user_headers_length", "payload_length", "reserved"},
//	  "payload": base64, "user_headers": [...] | base64}]}

type partitioningJSON struct {
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

type headerFieldJSON struct {
	Kind  string `json:"kind"`
	Value []byte `json:"value"`
}

type headerEntryJSON struct {
	Key   headerFieldJSON `json:"key"`
	Value headerFieldJSON `json:"value"`
}

type sendMessageJSON struct {
	ID          json.RawMessage `json:"id"`
	Payload     *[]byte         `json:"payload"`
	UserHeaders json.RawMessage `json:"user_headers"`
}

type sendBodyJSON struct {
	Partitioning *partitioningJSON  `json:"partitioning"`
	Messages     *[]sendMessageJSON `json:"messages"`
}

func kindByName(name string) (wire.HeaderKind, bool) {
	for k := wire.KindRaw; k <= wire.KindFloat64; k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

func unprocessable(format string, args ...any) *apiError {
	return httpError(http.StatusUnprocessableEntity, "invalid_json", fmt.Sprintf(format, args...))
}

// parseMessageID reads Iggy's id forms: a number, a decimal string or 32 hex
// digits (dashes allowed).
func parseMessageID(raw json.RawMessage) (wire.Uint128, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return wire.Uint128{}, nil
	}
	if len(raw) <= 19 && raw[0] >= '0' && raw[0] <= '9' {
		if v, err := strconv.ParseUint(string(raw), 10, 64); err == nil {
			return wire.Uint128{Lo: v}, nil
		}
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return wire.Uint128{}, err
		}
		if v, ok := new(big.Int).SetString(s, 10); ok && v.Sign() >= 0 && v.BitLen() <= 128 {
			return bigToU128(v), nil
		}
		h := strings.ReplaceAll(s, "-", "")
		if len(h) == 32 {
			if b, err := hex.DecodeString(h); err == nil {
				return wire.Uint128{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}, nil
			}
		}
		return wire.Uint128{}, fmt.Errorf("invalid message id %q: must be a decimal number or UUID hex", s)
	}
	v, ok := new(big.Int).SetString(string(raw), 10)
	if !ok || v.Sign() < 0 || v.BitLen() > 64 {
		return wire.Uint128{}, fmt.Errorf("message id must be a positive integer")
	}
	return bigToU128(v), nil
}

func bigToU128(v *big.Int) wire.Uint128 {
	lo := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0))).Uint64()
	hi := new(big.Int).Rsh(v, 64).Uint64()
	return wire.Uint128{Lo: lo, Hi: hi}
}

func randomID() wire.Uint128 {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = 0x40 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return wire.Uint128{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}
}

// userHeadersTLV converts the JSON headers to the binary TLV block.
func userHeadersTLV(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("invalid base64 headers: %v", err)
		}
		return b, nil
	}
	var entries []headerEntryJSON
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, fmt.Errorf("invalid headers format: %v", err)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	out := make([]wire.HeaderEntry, 0, len(entries))
	for _, e := range entries {
		kk, ok1 := kindByName(e.Key.Kind)
		vk, ok2 := kindByName(e.Value.Kind)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("unknown header kind %q / %q", e.Key.Kind, e.Value.Kind)
		}
		out = append(out, wire.HeaderEntry{Key: wire.HeaderValue{Kind: kk, Value: e.Key.Value},
			Value: wire.HeaderValue{Kind: vk, Value: e.Value.Value}})
	}
	return wire.AppendUserHeaders(nil, out)
}

// headersJSON renders a stored TLV block: entries when it parses, base64
// otherwise, an empty list when there is none.
func headersJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("[]")
	}
	entries, err := wire.DecodeUserHeaders(b)
	if err != nil {
		s, _ := json.Marshal(base64.StdEncoding.EncodeToString(b))
		return s
	}
	out := make([]headerEntryJSON, 0, len(entries))
	for _, e := range entries {
		out = append(out, headerEntryJSON{Key: headerFieldJSON{e.Key.Kind.String(), e.Key.Value},
			Value: headerFieldJSON{e.Value.Kind.String(), e.Value.Value}})
	}
	s, _ := json.Marshal(out)
	return s
}

// sendFrame parses a send body and encodes the binary SEND_MESSAGES request
// into a frame (wire.HeaderSize bytes left for the header).
func sendFrame(body []byte, stream, topic wire.Identifier) ([]byte, int, error) {
	req, ok := fastSend(body)
	if !ok {
		var j sendBodyJSON
		if err := decodeJSON(body, &j); err != nil {
			return nil, 0, err
		}
		req = fastBody{hasPart: j.Partitioning != nil, hasMsgs: j.Messages != nil}
		if j.Partitioning != nil {
			req.kind, req.value = j.Partitioning.Kind, j.Partitioning.Value
		}
		if j.Messages != nil {
			for _, m := range *j.Messages {
				fm := fastMessage{id: m.ID, headers: m.UserHeaders}
				if m.Payload != nil {
					fm.payload, fm.hasPay = *m.Payload, true
				}
				req.messages = append(req.messages, fm)
			}
		}
	}
	if !req.hasPart {
		return nil, 0, unprocessable("missing field `partitioning`")
	}
	if !req.hasMsgs {
		return nil, 0, unprocessable("missing field `messages`")
	}
	var p wire.Partitioning
	v := req.value
	if len(v) > 255 || (req.kind != "balanced" && len(v) == 0) {
		return nil, 0, codeError(wire.CodeInvalidKeyValueLength)
	}
	switch req.kind {
	case "balanced":
		p = wire.Balanced()
	case "partition_id":
		if len(v) < 4 {
			return nil, 0, codeError(wire.CodeInvalidCommand)
		}
		p = wire.PartitionByID(binary.LittleEndian.Uint32(v))
	case "messages_key":
		p = wire.PartitionByKey(v)
	default:
		return nil, 0, unprocessable("partitioning.kind: unknown variant %q, expected `balanced`, `partition_id` or `messages_key`", req.kind)
	}
	msgs := make([]wire.Message, 0, len(req.messages))
	now := uint64(time.Now().UnixMicro())
	for i, m := range req.messages {
		if !m.hasPay {
			return nil, 0, unprocessable("messages[%d]: missing field `payload`", i)
		}
		id, err := parseMessageID(m.id)
		if err != nil {
			return nil, 0, unprocessable("messages[%d]: %v", i, err)
		}
		if id.IsZero() {
			id = randomID()
		}
		hdrs, err := userHeadersTLV(m.headers)
		if err != nil {
			return nil, 0, unprocessable("messages[%d]: %v", i, err)
		}
		msgs = append(msgs, wire.Message{ID: id, OriginTimestamp: now, Payload: m.payload, UserHeaders: hdrs})
	}
	if len(msgs) == 0 {
		return nil, 0, codeError(wire.CodeInvalidMessagesCount)
	}
	r := wire.SendMessages{StreamID: stream, TopicID: topic, Partitioning: p, Messages: msgs}
	frame := make([]byte, wire.HeaderSize, wire.HeaderSize+wire.BatchSize(msgs)+64)
	frame, err := r.AppendBody(frame)
	if err != nil {
		return nil, 0, fromError(err)
	}
	return frame, len(msgs), nil
}

type messageHeaderJSON struct {
	Checksum          uint64 `json:"checksum"`
	ID                u128   `json:"id"`
	Offset            uint64 `json:"offset"`
	Timestamp         uint64 `json:"timestamp"`
	OriginTimestamp   uint64 `json:"origin_timestamp"`
	UserHeadersLength uint32 `json:"user_headers_length"`
	PayloadLength     uint32 `json:"payload_length"`
	Reserved          uint64 `json:"reserved"`
}

type polledMessageJSON struct {
	Header      messageHeaderJSON `json:"header"`
	Payload     []byte            `json:"payload"`
	UserHeaders json.RawMessage   `json:"user_headers"`
}

type polledJSON struct {
	PartitionID   uint32              `json:"partition_id"`
	CurrentOffset uint64              `json:"current_offset"`
	Count         uint32              `json:"count"`
	Messages      []polledMessageJSON `json:"messages"`
}

// renderPoll renders a poll reply payload as JSON.
func renderPoll(payload []byte) ([]byte, error) { return appendPolled(nil, payload) }

// polledOf renders a poll reply payload.
func polledOf(payload []byte) (polledJSON, error) {
	p, err := wire.DecodePollReply(payload)
	if err != nil {
		return polledJSON{}, err
	}
	out := polledJSON{PartitionID: p.PartitionID, CurrentOffset: p.CurrentOffset}
	msgs := p.Messages()
	out.Messages = make([]polledMessageJSON, 0, len(msgs))
	for _, m := range msgs {
		out.Messages = append(out.Messages, polledMessageJSON{
			Header: messageHeaderJSON{Checksum: m.Checksum, ID: u128(m.ID), Offset: m.Offset, Timestamp: m.Timestamp,
				OriginTimestamp: m.OriginTimestamp, UserHeadersLength: uint32(len(m.UserHeaders)), PayloadLength: uint32(len(m.Payload))},
			Payload:     m.Payload,
			UserHeaders: headersJSON(m.UserHeaders),
		})
	}
	out.Count = uint32(len(out.Messages))
	return out, nil
}

// appendPolled writes the poll JSON straight from the reply payload: the
// same document json.Marshal(polledOf(payload)) produces, without building
// it first (payloads base64-encoded into the output, no per-message
// allocation).
func appendPolled(dst []byte, payload []byte) ([]byte, error) {
	p, err := wire.DecodePollReply(payload)
	if err != nil {
		return dst, err
	}
	n := 0
	size := 64
	for _, r := range p.Records {
		size += r.Len()*4/3 + int(r.MessageCount())*320
	}
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, `{"partition_id":`...)
	dst = strconv.AppendUint(dst, uint64(p.PartitionID), 10)
	dst = append(dst, `,"current_offset":`...)
	dst = strconv.AppendUint(dst, p.CurrentOffset, 10)
	// DecodePollReply checked that the records hold MessagesCount frames.
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendUint(dst, uint64(p.MessagesCount), 10)
	dst = append(dst, `,"messages":[`...)
	for _, r := range p.Records {
		base, ts, origin := r.BaseOffset(), r.BaseTimestamp(), r.OriginTimestamp()
		it := r.Frames()
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			if n > 0 {
				dst = append(dst, ',')
			}
			n++
			pl, uh := f.Payload(), f.UserHeaders()
			dst = append(dst, `{"header":{"checksum":`...)
			dst = strconv.AppendUint(dst, f.Checksum(), 10)
			dst = append(dst, `,"id":`...)
			if id := f.ID(); id.Hi == 0 {
				dst = strconv.AppendUint(dst, id.Lo, 10)
			} else {
				b, _ := u128(id).MarshalJSON()
				dst = append(dst, b...)
			}
			dst = append(dst, `,"offset":`...)
			dst = strconv.AppendUint(dst, base+uint64(f.OffsetDelta()), 10)
			dst = append(dst, `,"timestamp":`...)
			dst = strconv.AppendUint(dst, ts, 10)
			dst = append(dst, `,"origin_timestamp":`...)
			dst = strconv.AppendUint(dst, origin+uint64(f.TimestampDelta()), 10)
			dst = append(dst, `,"user_headers_length":`...)
			dst = strconv.AppendUint(dst, uint64(len(uh)), 10)
			dst = append(dst, `,"payload_length":`...)
			dst = strconv.AppendUint(dst, uint64(len(pl)), 10)
			dst = append(dst, `,"reserved":0},"payload":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, pl)
			dst = append(dst, `","user_headers":`...)
			if len(uh) == 0 {
				dst = append(dst, "[]}"...)
				continue
			}
			dst = append(dst, headersJSON(uh)...)
			dst = append(dst, '}')
		}
	}
	return append(dst, "]}"...), nil
}
