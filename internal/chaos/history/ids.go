package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/iggo/iggo/wire"
)

// MsgID names one send attempt of one logical message: producer, the
// producer's sequence number of the logical message, and the attempt
// (1, 2, ... for retries after a failed or unknown send). Foreign ids are
// message ids that no producer of the run could have minted; Raw keeps
// them.
type MsgID struct {
	Producer uint32
	Seq      uint64
	Attempt  uint32
	Foreign  bool
	Raw      wire.Uint128
}

// Logical identifies the logical message regardless of the attempt.
type Logical struct {
	Producer uint32
	Seq      uint64
}

// Logical drops the attempt.
func (m MsgID) Logical() Logical { return Logical{m.Producer, m.Seq} }

// String renders "producer.seq.attempt" or "x<32 hex digits>".
func (m MsgID) String() string {
	if m.Foreign {
		return fmt.Sprintf("x%016x%016x", m.Raw.Hi, m.Raw.Lo)
	}
	return fmt.Sprintf("%d.%d.%d", m.Producer, m.Seq, m.Attempt)
}

// ParseMsgID parses String's form.
func ParseMsgID(s string) (MsgID, error) {
	if strings.HasPrefix(s, "x") && len(s) == 33 {
		hi, err1 := strconv.ParseUint(s[1:17], 16, 64)
		lo, err2 := strconv.ParseUint(s[17:], 16, 64)
		if err1 != nil || err2 != nil {
			return MsgID{}, fmt.Errorf("history: bad foreign message id %q", s)
		}
		return MsgID{Foreign: true, Raw: wire.Uint128{Lo: lo, Hi: hi}}, nil
	}
	ps, rest, ok1 := strings.Cut(s, ".")
	qs, as, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return MsgID{}, fmt.Errorf("history: bad message id %q", s)
	}
	p, err1 := strconv.ParseUint(ps, 10, 16)
	q, err2 := strconv.ParseUint(qs, 10, 64)
	a, err3 := strconv.ParseUint(as, 10, 16)
	if err1 != nil || err2 != nil || err3 != nil {
		return MsgID{}, fmt.Errorf("history: bad message id %q", s)
	}
	return MsgID{Producer: uint32(p), Seq: q, Attempt: uint32(a)}, nil
}

// MarshalText implements encoding.TextMarshaler.
func (m MsgID) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *MsgID) UnmarshalText(b []byte) error {
	v, err := ParseMsgID(string(b))
	*m = v
	return err
}

// Wire is the 16-byte message id sent for m in a run tagged tag:
// Lo = seq, Hi = tag<<32 | producer<<16 | attempt. Producers and attempts
// are below 2^16 (the workload enforces it).
func (m MsgID) Wire(tag uint32) wire.Uint128 {
	if m.Foreign {
		return m.Raw
	}
	return wire.Uint128{Lo: m.Seq, Hi: uint64(tag)<<32 | uint64(m.Producer&0xffff)<<16 | uint64(m.Attempt&0xffff)}
}

// FromWire decodes a message id read back in a run tagged tag; any id
// without the tag is foreign.
func FromWire(u wire.Uint128, tag uint32) MsgID {
	if uint32(u.Hi>>32) != tag {
		return MsgID{Foreign: true, Raw: u}
	}
	return MsgID{Producer: uint32(u.Hi>>16) & 0xffff, Seq: u.Lo, Attempt: uint32(u.Hi) & 0xffff}
}

// Payload is the payload of message m in a run tagged tag, size bytes long
// (at least the textual prefix): a readable prefix naming the message, then
// filler derived from the id, so a reader can tell a payload that does not
// belong to its id.
func Payload(tag uint32, m MsgID, size int) []byte {
	prefix := fmt.Sprintf("iggo-chaos %08x %s|", tag, m)
	b := make([]byte, max(size, len(prefix)))
	copy(b, prefix)
	fill(b[len(prefix):], tag, m)
	return b
}

func fill(b []byte, tag uint32, m MsgID) {
	var seed [20]byte
	binary.LittleEndian.PutUint32(seed[0:], tag)
	binary.LittleEndian.PutUint32(seed[4:], m.Producer)
	binary.LittleEndian.PutUint64(seed[8:], m.Seq)
	binary.LittleEndian.PutUint32(seed[16:], m.Attempt)
	x := xxh3.Hash(seed[:])
	for i := range b {
		// xorshift: cheap, deterministic, not constant.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = 'a' + byte(x%26)
	}
}

// PayloadMatches reports whether payload is Payload(tag, m, len(payload)).
func PayloadMatches(tag uint32, m MsgID, payload []byte) bool {
	if m.Foreign {
		return false
	}
	return bytes.Equal(payload, Payload(tag, m, len(payload)))
}

// Obs is one message observed by a read: its offset and id. Corrupt marks
// a payload that does not belong to the id.
type Obs struct {
	Offset  uint64
	ID      MsgID
	Corrupt bool
}

// MarshalJSON renders [offset, "id"] ("id!" when corrupt).
func (o Obs) MarshalJSON() ([]byte, error) {
	s := o.ID.String()
	if o.Corrupt {
		s += "!"
	}
	return json.Marshal([2]any{o.Offset, s})
}

// UnmarshalJSON parses MarshalJSON's form. Histories hold millions of
// observations, so the common shape [digits,"id"] is parsed by hand.
func (o *Obs) UnmarshalJSON(b []byte) error {
	if inner, ok := bytes.CutPrefix(b, []byte("[")); ok {
		inner, ok = bytes.CutSuffix(inner, []byte("]"))
		num, str, found := bytes.Cut(inner, []byte(","))
		if ok && found && len(str) >= 2 && str[0] == '"' && str[len(str)-1] == '"' && bytes.IndexAny(str[1:len(str)-1], "\\\"") < 0 {
			if off, err := strconv.ParseUint(string(num), 10, 64); err == nil {
				s := string(str[1 : len(str)-1])
				o.Offset = off
				o.Corrupt = strings.HasSuffix(s, "!")
				id, err := ParseMsgID(strings.TrimSuffix(s, "!"))
				o.ID = id
				return err
			}
		}
	}
	var pair [2]json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("history: observation %s: %w", b, err)
	}
	if err := json.Unmarshal(pair[0], &o.Offset); err != nil {
		return fmt.Errorf("history: observation %s: %w", b, err)
	}
	var s string
	if err := json.Unmarshal(pair[1], &s); err != nil {
		return fmt.Errorf("history: observation %s: %w", b, err)
	}
	o.Corrupt = strings.HasSuffix(s, "!")
	id, err := ParseMsgID(strings.TrimSuffix(s, "!"))
	o.ID = id
	return err
}
