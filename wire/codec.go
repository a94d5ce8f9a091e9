package wire

import (
	"encoding/binary"
	"math"
	"unicode/utf8"
)

// MaxNameLength is the longest Name (u8 length prefix).
const MaxNameLength = 255

// decoder is a bounds-checked cursor over one structure. The first failure is
// sticky: later reads return zero values, and err names the first bad field.
// Nothing here allocates except the string conversions the caller asks for,
// and those are bounded by the bytes actually present.
type decoder struct {
	b    []byte
	off  int
	err  error
	what string
}

func newDecoder(what string, b []byte) decoder { return decoder{b: b, what: what} }

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fieldErr(d.what, field, d.off, format, args...)
	}
}

func (d *decoder) failCode(code Code, field, format string, args ...any) {
	if d.err == nil {
		d.err = fieldErrCode(code, d.what, field, d.off, format, args...)
	}
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) need(field string, n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || d.remaining() < n {
		d.fail(field, "needs %d bytes, only %d remain", n, d.remaining())
		return false
	}
	return true
}

func (d *decoder) u8(field string) uint8 {
	if !d.need(field, 1) {
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) boolean(field string) bool { return d.u8(field) != 0 }

func (d *decoder) u16(field string) uint16 {
	if !d.need(field, 2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(d.b[d.off:])
	d.off += 2
	return v
}

func (d *decoder) u32(field string) uint32 {
	if !d.need(field, 4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b[d.off:])
	d.off += 4
	return v
}

func (d *decoder) u64(field string) uint64 {
	if !d.need(field, 8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

func (d *decoder) f32(field string) float32 { return math.Float32frombits(d.u32(field)) }

// raw returns the next n bytes as a sub-slice of the input (no copy).
func (d *decoder) raw(field string, n int) []byte {
	if !d.need(field, n) || n == 0 {
		return nil
	}
	v := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return v
}

// rest returns everything left (no copy).
func (d *decoder) rest() []byte {
	if d.err != nil {
		return nil
	}
	v := d.b[d.off:len(d.b):len(d.b)]
	d.off = len(d.b)
	return v
}

// name reads a Name: u8 length 1..255, UTF-8.
func (d *decoder) name(field string) string {
	start := d.off
	n := int(d.u8(field + " length"))
	if d.err != nil {
		return ""
	}
	if n == 0 {
		d.off = start
		d.fail(field, "name length must be 1..255, got 0")
		return ""
	}
	b := d.raw(field, n)
	if d.err != nil {
		return ""
	}
	if !utf8.Valid(b) {
		d.off -= n
		d.fail(field, "not valid UTF-8")
		return ""
	}
	return string(b)
}

// shortString reads u8 length 0..255 + UTF-8 bytes (passwords, tokens).
func (d *decoder) shortString(field string) string {
	n := int(d.u8(field + " length"))
	b := d.raw(field, n)
	if d.err != nil {
		return ""
	}
	if !utf8.Valid(b) {
		d.off -= n
		d.fail(field, "not valid UTF-8")
		return ""
	}
	return string(b)
}

// longBytes reads u32 length + bytes (no copy), bounded by the input.
func (d *decoder) longBytes(field string) []byte {
	n := d.u32(field + " length")
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(d.remaining()) {
		d.off -= 4
		d.fail(field, "declared length %d exceeds the %d bytes that remain", n, d.remaining()-4)
		return nil
	}
	return d.raw(field, int(n))
}

// longString reads u32 length + UTF-8 bytes.
func (d *decoder) longString(field string) string {
	b := d.longBytes(field)
	if d.err != nil {
		return ""
	}
	if !utf8.Valid(b) {
		d.fail(field, "not valid UTF-8")
		return ""
	}
	return string(b)
}

func (d *decoder) identifier(field string) Identifier {
	if d.err != nil {
		return Identifier{}
	}
	id, n, err := decodeIdentifierAt(d.what, field, d.b, d.off)
	if err != nil {
		d.err = err
		return Identifier{}
	}
	d.off += n
	return id
}

// done fails if bytes remain; every decoder must consume its input exactly.
func (d *decoder) done() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("end", "%d unexpected trailing bytes", len(d.b)-d.off)
	}
	return d.err
}

// boundedCap caps a declared element count by what the input can hold, so a
// hostile count cannot make a decoder allocate more than its input size.
func boundedCap(declared uint64, remaining, minElem int) int {
	if remaining <= 0 || minElem <= 0 {
		return 0
	}
	max := uint64(remaining / minElem)
	if declared < max {
		return int(declared)
	}
	return int(max)
}

// Encoding helpers. Encoders append to dst and return it; those that can fail
// (a Name out of range) return a *FieldError.

func appendU16(dst []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(dst, v) }
func appendU32(dst []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(dst, v) }
func appendU64(dst []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(dst, v) }
func appendF32(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func appendName(dst []byte, what, field, v string) ([]byte, error) {
	if len(v) < 1 || len(v) > MaxNameLength {
		return dst, fieldErr(what, field, -1, "name must be 1..255 bytes, got %d", len(v))
	}
	if !utf8.ValidString(v) {
		return dst, fieldErr(what, field, -1, "not valid UTF-8")
	}
	dst = append(dst, byte(len(v)))
	return append(dst, v...), nil
}

func appendShortString(dst []byte, what, field, v string) ([]byte, error) {
	if len(v) > MaxNameLength {
		return dst, fieldErr(what, field, -1, "must be at most 255 bytes, got %d", len(v))
	}
	if !utf8.ValidString(v) {
		return dst, fieldErr(what, field, -1, "not valid UTF-8")
	}
	dst = append(dst, byte(len(v)))
	return append(dst, v...), nil
}

func appendLongString(dst []byte, v string) []byte {
	dst = appendU32(dst, uint32(len(v)))
	return append(dst, v...)
}

func appendLongBytes(dst []byte, v []byte) []byte {
	dst = appendU32(dst, uint32(len(v)))
	return append(dst, v...)
}

// encoder threads the first error through a sequence of appends.
type encoder struct {
	b    []byte
	err  error
	what string
}

func (e *encoder) name(field, v string) {
	if e.err == nil {
		e.b, e.err = appendName(e.b, e.what, field, v)
	}
}

func (e *encoder) shortString(field, v string) {
	if e.err == nil {
		e.b, e.err = appendShortString(e.b, e.what, field, v)
	}
}

func (e *encoder) identifier(field string, id Identifier) {
	if e.err == nil {
		var err error
		e.b, err = id.AppendTo(e.b)
		if err != nil {
			e.err = fieldErr(e.what, field, -1, "%v", err)
		}
	}
}

func (e *encoder) u8(v uint8)          { e.b = append(e.b, v) }
func (e *encoder) boolean(v bool)      { e.b = appendBool(e.b, v) }
func (e *encoder) u16(v uint16)        { e.b = appendU16(e.b, v) }
func (e *encoder) u32(v uint32)        { e.b = appendU32(e.b, v) }
func (e *encoder) u64(v uint64)        { e.b = appendU64(e.b, v) }
func (e *encoder) f32(v float32)       { e.b = appendF32(e.b, v) }
func (e *encoder) raw(v []byte)        { e.b = append(e.b, v...) }
func (e *encoder) longString(v string) { e.b = appendLongString(e.b, v) }
func (e *encoder) longBytes(v []byte)  { e.b = appendLongBytes(e.b, v) }

func (e *encoder) result() ([]byte, error) { return e.b, e.err }
