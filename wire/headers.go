package wire

import (
	"encoding/binary"
	"math"
	"strconv"
)

// HeaderKind is the kind byte of a TLV field (user headers and options).
type HeaderKind uint8

// Header kinds. Kinds above 15 are not rejected: they are carried through
// unchanged so that a newer producer's headers survive an older server.
const (
	KindRaw     HeaderKind = 1
	KindString  HeaderKind = 2
	KindBool    HeaderKind = 3
	KindInt8    HeaderKind = 4
	KindInt16   HeaderKind = 5
	KindInt32   HeaderKind = 6
	KindInt64   HeaderKind = 7
	KindInt128  HeaderKind = 8
	KindUint8   HeaderKind = 9
	KindUint16  HeaderKind = 10
	KindUint32  HeaderKind = 11
	KindUint64  HeaderKind = 12
	KindUint128 HeaderKind = 13
	KindFloat32 HeaderKind = 14
	KindFloat64 HeaderKind = 15
)

var kindNames = [...]string{"", "raw", "string", "bool", "int8", "int16", "int32", "int64", "int128",
	"uint8", "uint16", "uint32", "uint64", "uint128", "float32", "float64"}

func (k HeaderKind) String() string {
	if k >= 1 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Known reports kinds 1..15.
func (k HeaderKind) Known() bool { return k >= 1 && k <= 15 }

// FixedSize is the value size numeric kinds require, or -1 for kinds whose
// values are variable (raw, string, unknown).
func (k HeaderKind) FixedSize() int {
	switch k {
	case KindBool, KindInt8, KindUint8:
		return 1
	case KindInt16, KindUint16:
		return 2
	case KindInt32, KindUint32, KindFloat32:
		return 4
	case KindInt64, KindUint64, KindFloat64:
		return 8
	case KindInt128, KindUint128:
		return 16
	}
	return -1
}

// Limits of TLV blocks.
const (
	MaxHeaderFieldLength = 255
	MaxOptionsBytes      = 100_000
	MaxOptionPairs       = 1024
)

// HeaderValue is one TLV field: a kind and 1..255 value bytes.
type HeaderValue struct {
	Kind  HeaderKind
	Value []byte
}

// HeaderEntry is a key/value pair of TLV fields.
type HeaderEntry struct {
	Key   HeaderValue
	Value HeaderValue
}

// Typed constructors.

// StringValue is a KindString field.
func StringValue(s string) HeaderValue { return HeaderValue{Kind: KindString, Value: []byte(s)} }

// RawValue is a KindRaw field.
func RawValue(b []byte) HeaderValue { return HeaderValue{Kind: KindRaw, Value: b} }

// BoolValue is a KindBool field (one byte 0/1).
func BoolValue(v bool) HeaderValue {
	if v {
		return HeaderValue{Kind: KindBool, Value: []byte{1}}
	}
	return HeaderValue{Kind: KindBool, Value: []byte{0}}
}

// Uint8Value is a KindUint8 field.
func Uint8Value(v uint8) HeaderValue { return HeaderValue{Kind: KindUint8, Value: []byte{v}} }

// Uint16Value is a KindUint16 field.
func Uint16Value(v uint16) HeaderValue {
	return HeaderValue{Kind: KindUint16, Value: binary.LittleEndian.AppendUint16(nil, v)}
}

// Uint32Value is a KindUint32 field.
func Uint32Value(v uint32) HeaderValue {
	return HeaderValue{Kind: KindUint32, Value: binary.LittleEndian.AppendUint32(nil, v)}
}

// Uint64Value is a KindUint64 field.
func Uint64Value(v uint64) HeaderValue {
	return HeaderValue{Kind: KindUint64, Value: binary.LittleEndian.AppendUint64(nil, v)}
}

// Int8Value is a KindInt8 field.
func Int8Value(v int8) HeaderValue { return HeaderValue{Kind: KindInt8, Value: []byte{byte(v)}} }

// Int16Value is a KindInt16 field.
func Int16Value(v int16) HeaderValue {
	return HeaderValue{Kind: KindInt16, Value: binary.LittleEndian.AppendUint16(nil, uint16(v))}
}

// Int32Value is a KindInt32 field.
func Int32Value(v int32) HeaderValue {
	return HeaderValue{Kind: KindInt32, Value: binary.LittleEndian.AppendUint32(nil, uint32(v))}
}

// Int64Value is a KindInt64 field.
func Int64Value(v int64) HeaderValue {
	return HeaderValue{Kind: KindInt64, Value: binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

// Float32Value is a KindFloat32 field.
func Float32Value(v float32) HeaderValue {
	return HeaderValue{Kind: KindFloat32, Value: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

// Float64Value is a KindFloat64 field.
func Float64Value(v float64) HeaderValue {
	return HeaderValue{Kind: KindFloat64, Value: binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))}
}

// Accessors; each reports false when the kind or size does not match.

// AsString returns the value of a KindString field.
func (v HeaderValue) AsString() (string, bool) {
	if v.Kind != KindString {
		return "", false
	}
	return string(v.Value), true
}

// AsBool returns the value of a one-byte 0/1 KindBool field.
func (v HeaderValue) AsBool() (bool, bool) {
	if v.Kind != KindBool || len(v.Value) != 1 || v.Value[0] > 1 {
		return false, false
	}
	return v.Value[0] == 1, true
}

// AsUint64 returns an unsigned value of kind uint8/16/32/64 widened to u64.
func (v HeaderValue) AsUint64() (uint64, bool) {
	if v.Kind.FixedSize() != len(v.Value) {
		return 0, false
	}
	switch v.Kind {
	case KindUint8:
		return uint64(v.Value[0]), true
	case KindUint16:
		return uint64(binary.LittleEndian.Uint16(v.Value)), true
	case KindUint32:
		return uint64(binary.LittleEndian.Uint32(v.Value)), true
	case KindUint64:
		return binary.LittleEndian.Uint64(v.Value), true
	}
	return 0, false
}

// AsInt64 returns a signed value of kind int8/16/32/64 widened to i64.
func (v HeaderValue) AsInt64() (int64, bool) {
	if v.Kind.FixedSize() != len(v.Value) {
		return 0, false
	}
	switch v.Kind {
	case KindInt8:
		return int64(int8(v.Value[0])), true
	case KindInt16:
		return int64(int16(binary.LittleEndian.Uint16(v.Value))), true
	case KindInt32:
		return int64(int32(binary.LittleEndian.Uint32(v.Value))), true
	case KindInt64:
		return int64(binary.LittleEndian.Uint64(v.Value)), true
	}
	return 0, false
}

// AsFloat64 returns a float32/float64 value widened to float64.
func (v HeaderValue) AsFloat64() (float64, bool) {
	switch {
	case v.Kind == KindFloat32 && len(v.Value) == 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(v.Value))), true
	case v.Kind == KindFloat64 && len(v.Value) == 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(v.Value)), true
	}
	return 0, false
}

// validateTLV checks a TLV run: every kind != 0, every length 1..255, fields
// inside the block, an even number of fields, numeric kinds at their fixed
// size. With stringKeys, every key must be a UTF-8 KindString (options).
// It does not allocate.
func validateTLV(what string, b []byte, stringKeys bool) error {
	off := 0
	fields := 0
	for off < len(b) {
		if b[off] == 0 {
			return fieldErr(what, "kind", off, "field %d has reserved kind 0", fields)
		}
		kind := HeaderKind(b[off])
		if len(b)-off < 5 {
			return fieldErr(what, "length", off+1, "field %d needs a 4-byte length, only %d bytes remain", fields, len(b)-off-1)
		}
		n := binary.LittleEndian.Uint32(b[off+1:])
		if n == 0 || n > MaxHeaderFieldLength {
			return fieldErr(what, "length", off+1, "field %d length %d outside 1..255", fields, n)
		}
		if uint64(n) > uint64(len(b)-off-5) {
			return fieldErr(what, "value", off+5, "field %d of %d bytes overruns the block", fields, n)
		}
		if fs := kind.FixedSize(); fs >= 0 && int(n) != fs {
			return fieldErr(what, "value", off+5, "field %d of kind %s must be %d bytes, got %d", fields, kind, fs, n)
		}
		if stringKeys && fields%2 == 0 {
			if kind != KindString {
				return fieldErrCode(CodeUnsupportedOptionKey, what, "key", off, "option key kind %s is not string", kind)
			}
			if !validUTF8(b[off+5 : off+5+int(n)]) {
				return fieldErrCode(CodeUnsupportedOptionKey, what, "key", off+5, "option key is not valid UTF-8")
			}
		}
		off += 5 + int(n)
		fields++
	}
	if fields%2 != 0 {
		return fieldErr(what, "fields", off, "odd number of fields (%d): keys and values must pair", fields)
	}
	return nil
}

// ValidateUserHeaders checks a user-headers block (see validateTLV) and its
// size limit, without allocating.
func ValidateUserHeaders(b []byte) error {
	if len(b) > MaxUserHeadersSize {
		return fieldErrCode(CodeTooBigUserHeaders, "user headers", "block", 0, "%d bytes exceed %d", len(b), MaxUserHeadersSize)
	}
	return validateTLV("user headers", b, false)
}

// AppendUserHeaders encodes entries as a TLV run: for each entry
// [key kind u8][key len u32][key][value kind u8][value len u32][value].
func AppendUserHeaders(dst []byte, entries []HeaderEntry) ([]byte, error) {
	return appendTLV(dst, "user headers", entries)
}

func appendTLV(dst []byte, what string, entries []HeaderEntry) ([]byte, error) {
	for i, e := range entries {
		for j, f := range [2]HeaderValue{e.Key, e.Value} {
			field := "key"
			if j == 1 {
				field = "value"
			}
			if f.Kind == 0 {
				return dst, fieldErr(what, field, -1, "entry %d has reserved kind 0", i)
			}
			if len(f.Value) < 1 || len(f.Value) > MaxHeaderFieldLength {
				return dst, fieldErr(what, field, -1, "entry %d length %d outside 1..255", i, len(f.Value))
			}
			if fs := f.Kind.FixedSize(); fs >= 0 && len(f.Value) != fs {
				return dst, fieldErr(what, field, -1, "entry %d of kind %s must be %d bytes, got %d", i, f.Kind, fs, len(f.Value))
			}
			dst = append(dst, byte(f.Kind))
			dst = appendU32(dst, uint32(len(f.Value)))
			dst = append(dst, f.Value...)
		}
	}
	return dst, nil
}

// DecodeUserHeaders validates and splits a user-headers block. The returned
// values alias b. Unknown kinds are preserved.
func DecodeUserHeaders(b []byte) ([]HeaderEntry, error) {
	if err := ValidateUserHeaders(b); err != nil {
		return nil, err
	}
	return splitTLV(b), nil
}

// splitTLV splits a validated TLV run; allocation is bounded by len(b)/10
// entries (each pair takes at least 12 bytes).
func splitTLV(b []byte) []HeaderEntry {
	if len(b) == 0 {
		return nil
	}
	out := make([]HeaderEntry, 0, len(b)/12)
	off := 0
	next := func() HeaderValue {
		k := HeaderKind(b[off])
		n := int(binary.LittleEndian.Uint32(b[off+1:]))
		v := b[off+5 : off+5+n : off+5+n]
		off += 5 + n
		return HeaderValue{Kind: k, Value: v}
	}
	for off < len(b) {
		key := next()
		val := next()
		out = append(out, HeaderEntry{Key: key, Value: val})
	}
	return out
}
