package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// A send body is mostly base64: 1,000 messages of 1 KB are 1.4 MB of JSON,
// which encoding/json scans at about 85 MB/s. fastSend reads the common
// shape directly (strings without escapes, payloads base64-decoded into one
// arena) at memory speed. Anything it does not expect — an escape, a
// number where a string belongs, broken syntax — makes it give up
// (ok = false) and the caller parses the body with encoding/json, which is
// the authority on what is valid and renders the errors. Both paths build
// the same messages from the same valid body.

type fastMessage struct {
	id      json.RawMessage
	payload []byte
	headers json.RawMessage
	hasPay  bool
}

type fastBody struct {
	kind     string
	value    []byte
	hasPart  bool
	messages []fastMessage
	hasMsgs  bool
}

type scanner struct {
	b   []byte
	i   int
	bad bool
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) {
	if s.peek() != c {
		s.bad = true
		return
	}
	s.i++
}

// str reads a string without escapes and returns its bytes (aliasing b).
func (s *scanner) str() []byte {
	if s.peek() != '"' {
		s.bad = true
		return nil
	}
	s.i++
	end := bytes.IndexByte(s.b[s.i:], '"')
	if end < 0 {
		s.bad = true
		return nil
	}
	v := s.b[s.i : s.i+end]
	if bytes.IndexByte(v, '\\') >= 0 {
		s.bad = true
		return nil
	}
	s.i += end + 1
	return v
}

// text is str for short strings: valid UTF-8 without control characters,
// as encoding/json requires.
func (s *scanner) text() []byte {
	v := s.str()
	for _, c := range v {
		if c < 0x20 {
			s.bad = true
			return nil
		}
	}
	if !utf8.Valid(v) {
		s.bad = true
		return nil
	}
	return v
}

// b64 is str for base64 values: the decoder refuses every byte outside the
// alphabet except CR and LF, which JSON does not allow raw in a string.
func (s *scanner) b64() []byte {
	v := s.str()
	if bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
		s.bad = true
		return nil
	}
	return v
}

// skipString moves past a string (escapes allowed).
func (s *scanner) skipString() {
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '\\' {
			s.i += 2
			continue
		}
		s.i++
		if c == '"' {
			return
		}
	}
	s.bad = true
}

// value skips one JSON value and returns its bytes; its syntax is checked
// by whoever decodes them.
func (s *scanner) value() []byte {
	s.ws()
	start := s.i
	if s.i >= len(s.b) {
		s.bad = true
		return nil
	}
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return s.b[start:s.i]
				}
			}
			s.i++
		}
		s.bad = true
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.b[start:s.i]
			}
			s.i++
		}
	}
	if s.bad {
		return nil
	}
	return s.b[start:s.i]
}

// object calls field for every key of an object.
func (s *scanner) object(field func(key []byte)) {
	s.expect('{')
	if s.peek() == '}' {
		s.i++
		return
	}
	for !s.bad {
		k := s.text()
		s.expect(':')
		if s.bad {
			return
		}
		field(k)
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return
		default:
			s.bad = true
		}
	}
}

// fastSend parses the common shape of a send body.
func fastSend(b []byte) (fastBody, bool) {
	s := &scanner{b: b}
	var out fastBody
	// Payloads decode into one arena sized for the whole body.
	arena := make([]byte, 0, base64.StdEncoding.DecodedLen(len(b)))
	s.object(func(k []byte) {
		switch string(k) {
		case "partitioning":
			out.hasPart = true
			s.object(func(k []byte) {
				switch string(k) {
				case "kind":
					out.kind = string(s.text())
				case "value":
					v := s.b64()
					d := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
					n, err := base64.StdEncoding.Decode(d, v)
					if err != nil {
						s.bad = true
						return
					}
					out.value = d[:n]
				default:
					s.bad = true // unknown key: let encoding/json decide
				}
			})
		case "messages":
			out.hasMsgs = true
			s.expect('[')
			if s.peek() == ']' {
				s.i++
				return
			}
			for !s.bad {
				var m fastMessage
				s.object(func(k []byte) {
					switch string(k) {
					case "id":
						m.id = s.value()
						if !json.Valid(m.id) {
							s.bad = true
						}
					case "payload":
						v := s.b64()
						start := len(arena)
						n := base64.StdEncoding.DecodedLen(len(v))
						if cap(arena)-start < n {
							s.bad = true
							return
						}
						arena = arena[:start+n]
						w, err := base64.StdEncoding.Decode(arena[start:], v)
						if err != nil {
							s.bad = true
							return
						}
						arena = arena[:start+w]
						m.payload, m.hasPay = arena[start:start+w:start+w], true
					case "user_headers":
						m.headers = s.value()
						if !json.Valid(m.headers) {
							s.bad = true
						}
					default:
						s.bad = true
					}
				})
				out.messages = append(out.messages, m)
				switch s.peek() {
				case ',':
					s.i++
				case ']':
					s.i++
					return
				default:
					s.bad = true
				}
			}
		default:
			s.bad = true
		}
	})
	if s.bad {
		return fastBody{}, false
	}
	if s.ws(); s.i != len(b) {
		return fastBody{}, false
	}
	return out, true
}
