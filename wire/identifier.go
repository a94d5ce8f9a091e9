package wire

import (
	"strconv"
	"unicode/utf8"
)

// Identifier kinds on the wire.
const (
	IDKindNumeric uint8 = 1
	IDKindString  uint8 = 2
)

// Identifier names a stream, topic, group or user either by its numeric id
// (0-based) or by its name. The zero value is the numeric id 0. Identifier is
// comparable and can key maps.
//
// Wire form: [kind u8][len u8][value]; kind 1 numeric with len exactly 4 and a
// u32 LE value; kind 2 string with len 1..255 and UTF-8 bytes.
type Identifier struct {
	name    string
	num     uint32
	isNamed bool
}

// NumericID returns the identifier for numeric id v.
func NumericID(v uint32) Identifier { return Identifier{num: v} }

// NamedID returns the identifier for name s (1..255 bytes of UTF-8).
func NamedID(s string) (Identifier, error) {
	if len(s) < 1 || len(s) > MaxNameLength {
		return Identifier{}, fieldErrCode(CodeInvalidIdentifier, "identifier", "name", -1, "must be 1..255 bytes, got %d", len(s))
	}
	if !utf8.ValidString(s) {
		return Identifier{}, fieldErrCode(CodeInvalidIdentifier, "identifier", "name", -1, "not valid UTF-8")
	}
	return Identifier{name: s, isNamed: true}, nil
}

// MustNamedID is NamedID for names known to be valid; it panics otherwise.
func MustNamedID(s string) Identifier {
	id, err := NamedID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// IsNumeric reports whether the identifier is numeric.
func (id Identifier) IsNumeric() bool { return !id.isNamed }

// Numeric returns the numeric value and true for a numeric identifier.
func (id Identifier) Numeric() (uint32, bool) { return id.num, !id.isNamed }

// Name returns the name and true for a string identifier.
func (id Identifier) Name() (string, bool) { return id.name, id.isNamed }

// String renders the id ("7" or the name).
func (id Identifier) String() string {
	if id.isNamed {
		return id.name
	}
	return strconv.FormatUint(uint64(id.num), 10)
}

// EncodedLen is the number of wire bytes.
func (id Identifier) EncodedLen() int {
	if id.isNamed {
		return 2 + len(id.name)
	}
	return 6
}

// AppendTo appends the wire form.
func (id Identifier) AppendTo(dst []byte) ([]byte, error) {
	if !id.isNamed {
		return appendU32(append(dst, IDKindNumeric, 4), id.num), nil
	}
	if len(id.name) < 1 || len(id.name) > MaxNameLength {
		return dst, fieldErrCode(CodeInvalidIdentifier, "identifier", "name", -1, "must be 1..255 bytes, got %d", len(id.name))
	}
	dst = append(dst, IDKindString, byte(len(id.name)))
	return append(dst, id.name...), nil
}

// DecodeIdentifier decodes one identifier from the front of b and returns it
// with the number of bytes consumed.
func DecodeIdentifier(b []byte) (Identifier, int, error) {
	return decodeIdentifierAt("identifier", "identifier", b, 0)
}

func decodeIdentifierAt(what, field string, b []byte, off int) (Identifier, int, error) {
	if len(b)-off < 2 {
		return Identifier{}, 0, fieldErr(what, field, off, "needs 2 header bytes, only %d remain", len(b)-off)
	}
	kind, n := b[off], int(b[off+1])
	if len(b)-off-2 < n {
		return Identifier{}, 0, fieldErr(what, field, off, "value of %d bytes overruns the %d that remain", n, len(b)-off-2)
	}
	v := b[off+2 : off+2+n]
	switch kind {
	case IDKindNumeric:
		if n != 4 {
			return Identifier{}, 0, fieldErr(what, field, off, "numeric identifier must have length 4, got %d", n)
		}
		return Identifier{num: uint32(v[0]) | uint32(v[1])<<8 | uint32(v[2])<<16 | uint32(v[3])<<24}, 6, nil
	case IDKindString:
		if n == 0 {
			return Identifier{}, 0, fieldErr(what, field, off, "string identifier must not be empty")
		}
		if !utf8.Valid(v) {
			return Identifier{}, 0, fieldErr(what, field, off, "string identifier is not valid UTF-8")
		}
		return Identifier{name: string(v), isNamed: true}, 2 + n, nil
	default:
		return Identifier{}, 0, fieldErr(what, field, off, "unknown identifier kind %d (want 1 numeric or 2 string)", kind)
	}
}
