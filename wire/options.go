package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

func validUTF8(b []byte) bool { return utf8.Valid(b) }

// Options is an options block: TLV pairs like user headers, with UTF-8
// string keys, no duplicate keys, at most 1024 pairs and 100,000 bytes. In
// requests it runs to the end of the body; inside reply records it is
// prefixed with a u32 length.
type Options []HeaderEntry

// ValidateOptions checks an encoded options block without allocating more
// than the block size.
func ValidateOptions(b []byte) error {
	const what = "options"
	if len(b) > MaxOptionsBytes {
		return fieldErrCode(CodeOptionsBlockTooLarge, what, "block", 0, "%d bytes exceed %d", len(b), MaxOptionsBytes)
	}
	if err := validateTLV(what, b, true); err != nil {
		return err
	}
	entries := splitTLV(b)
	if len(entries) > MaxOptionPairs {
		return fieldErrCode(CodeOptionsBlockTooLarge, what, "pairs", 0, "%d pairs exceed %d", len(entries), MaxOptionPairs)
	}
	if dup, ok := firstDuplicateKey(entries); ok {
		return fieldErr(what, "key", -1, "duplicate option key %q", dup)
	}
	return nil
}

func firstDuplicateKey(entries []HeaderEntry) (string, bool) {
	if len(entries) <= 16 {
		for i := range entries {
			for j := i + 1; j < len(entries); j++ {
				if bytes.Equal(entries[i].Key.Value, entries[j].Key.Value) {
					return string(entries[i].Key.Value), true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		if _, ok := seen[string(e.Key.Value)]; ok {
			return string(e.Key.Value), true
		}
		seen[string(e.Key.Value)] = struct{}{}
	}
	return "", false
}

// DecodeOptions validates and splits a block; values alias b.
func DecodeOptions(b []byte) (Options, error) {
	if err := ValidateOptions(b); err != nil {
		return nil, err
	}
	return Options(splitTLV(b)), nil
}

// AppendTo encodes the block (no length prefix). It refuses what
// ValidateOptions would refuse.
func (o Options) AppendTo(dst []byte) ([]byte, error) {
	start := len(dst)
	dst, err := appendTLV(dst, "options", o)
	if err != nil {
		return dst[:start], err
	}
	if err := ValidateOptions(dst[start:]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// appendPrefixed encodes the block with its u32 length prefix.
func (o Options) appendPrefixed(dst []byte) ([]byte, error) {
	lenAt := len(dst)
	dst = appendU32(dst, 0)
	dst, err := o.AppendTo(dst)
	if err != nil {
		return dst[:lenAt], err
	}
	binary.LittleEndian.PutUint32(dst[lenAt:], uint32(len(dst)-lenAt-4))
	return dst, nil
}

// Get returns the value stored under key.
func (o Options) Get(key string) (HeaderValue, bool) {
	for _, e := range o {
		if string(e.Key.Value) == key {
			return e.Value, true
		}
	}
	return HeaderValue{}, false
}

// With returns a copy of o with key set to v (replacing an existing entry).
func (o Options) With(key string, v HeaderValue) Options {
	out := make(Options, 0, len(o)+1)
	replaced := false
	for _, e := range o {
		if string(e.Key.Value) == key {
			out = append(out, HeaderEntry{Key: e.Key, Value: v})
			replaced = true
			continue
		}
		out = append(out, e)
	}
	if !replaced {
		out = append(out, HeaderEntry{Key: StringValue(key), Value: v})
	}
	return out
}

// Topic option keys.
const (
	OptCompressionAlgorithm         = "compression_algorithm"
	OptMessageExpiry                = "message_expiry"
	OptMaxTopicSize                 = "max_topic_size"
	OptSegmentSize                  = "segment_size"
	OptEnforceFsync                 = "enforce_fsync"
	OptMessagesRequiredToSave       = "messages_required_to_save"
	OptSizeOfMessagesRequiredToSave = "size_of_messages_required_to_save"
	OptPreallocateSegments          = "preallocate_segments"
)

// Topic option defaults and bounds.
const (
	DefaultMessageExpiry                = math.MaxUint64 // never expire
	DefaultMaxTopicSize                 = math.MaxUint64 // unlimited
	DefaultSegmentSize                  = 1 << 30
	DefaultMessagesRequiredToSave       = 1024
	DefaultSizeOfMessagesRequiredToSave = 1 << 20
	MinSegmentSize                      = 1 << 20
	MaxSegmentSize                      = 1 << 30
	MaxMessagesRequiredToSave           = 16 << 20
	MaxSizeOfMessagesRequiredToSave     = 1 << 30
	MaxPreallocatedTopicBytes           = 64 << 30
	MaxExpirySeconds                    = math.MaxUint32
)

// Compression algorithm codes of the topic record.
const (
	CompressionNone uint8 = 1
	CompressionGzip uint8 = 2
)

// OptionSpec describes one catalog key.
type OptionSpec struct {
	Key         string
	Kind        HeaderKind // canonical kind: what the value is stored as
	Default     []byte     // default in the canonical kind's encoding
	Updatable   bool       // may UPDATE_TOPIC change it
	Description string
}

// TopicOptionCatalog is every key CREATE_TOPIC accepts, in catalog order.
var TopicOptionCatalog = []OptionSpec{
	{OptCompressionAlgorithm, KindString, []byte("none"), true,
		"Compression algorithm recorded for the topic: none or gzip"},
	{OptMessageExpiry, KindUint64, le64(DefaultMessageExpiry), true,
		"How long messages are kept, in microseconds or as a duration such as \"7 days\"; the maximum value means forever"},
	{OptMaxTopicSize, KindUint64, le64(DefaultMaxTopicSize), true,
		"Cap on the topic's stored bytes, as a number or a size such as \"1 GiB\"; at least the segment size; the maximum value means unlimited"},
	{OptSegmentSize, KindUint64, le64(DefaultSegmentSize), false,
		"Segment size in bytes or as a size such as \"128 MiB\": a multiple of 512 between 1048576 and 1073741824"},
	{OptEnforceFsync, KindBool, []byte{0}, false,
		"Whether appends to the topic's partitions are synced to disk"},
	{OptMessagesRequiredToSave, KindUint32, le32(DefaultMessagesRequiredToSave), false,
		"Flush once this many messages are buffered: 1 to 16777216"},
	{OptSizeOfMessagesRequiredToSave, KindUint64, le64(DefaultSizeOfMessagesRequiredToSave), false,
		"Flush once this many bytes are buffered, as a number or a size; at most 1073741824"},
	{OptPreallocateSegments, KindBool, []byte{0}, false,
		"Reserve each segment's bytes when it is created; segment_size times partitions may be at most 68719476736"},
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// TopicOptionSpec looks a key up in the catalog.
func TopicOptionSpec(key string) (OptionSpec, bool) {
	for _, s := range TopicOptionCatalog {
		if s.Key == key {
			return s, true
		}
	}
	return OptionSpec{}, false
}

// OptionsScope selects a catalog for DESCRIBE_OPTIONS.
type OptionsScope uint8

// Option scopes.
const (
	ScopeTopic  OptionsScope = 1
	ScopeStream OptionsScope = 2
	ScopeUser   OptionsScope = 3
)

// OptionDescriptor is one entry of a DESCRIBE_OPTIONS reply.
type OptionDescriptor struct {
	Key         string
	Kind        HeaderKind
	Default     []byte
	Description string
}

// DescribeScope returns the catalog of a scope (streams and users have none).
func DescribeScope(scope OptionsScope) ([]OptionDescriptor, error) {
	switch scope {
	case ScopeTopic:
		out := make([]OptionDescriptor, len(TopicOptionCatalog))
		for i, s := range TopicOptionCatalog {
			out[i] = OptionDescriptor{Key: s.Key, Kind: s.Kind, Default: s.Default, Description: s.Description}
		}
		return out, nil
	case ScopeStream, ScopeUser:
		return nil, nil
	}
	return nil, Errorf(CodeInvalidCommand, "unknown options scope %d", scope)
}

// TopicSettings are the resolved values of every topic option.
type TopicSettings struct {
	CompressionAlgorithm         uint8  // CompressionNone or CompressionGzip
	MessageExpiry                uint64 // µs; math.MaxUint64 = never
	MaxTopicSize                 uint64 // bytes; math.MaxUint64 = unlimited
	SegmentSize                  uint64
	EnforceFsync                 bool
	MessagesRequiredToSave       uint32
	SizeOfMessagesRequiredToSave uint64
	PreallocateSegments          bool
}

// DefaultTopicSettings are the catalog defaults.
func DefaultTopicSettings() TopicSettings {
	return TopicSettings{
		CompressionAlgorithm:         CompressionNone,
		MessageExpiry:                DefaultMessageExpiry,
		MaxTopicSize:                 DefaultMaxTopicSize,
		SegmentSize:                  DefaultSegmentSize,
		MessagesRequiredToSave:       DefaultMessagesRequiredToSave,
		SizeOfMessagesRequiredToSave: DefaultSizeOfMessagesRequiredToSave,
	}
}

func optErr(code Code, key, format string, args ...any) *FieldError {
	return fieldErrCode(code, "topic options", key, -1, format, args...)
}

// CanonicalTopicOption parses a value sent for key (in any accepted kind) and
// returns it in the key's canonical kind, or false when the value means
// "server default" (0 for expiry and sizes, or the strings "default" /
// "server_default"), which callers treat as absent. Errors carry 4041
// (unknown key) or 4042 (bad value).
func CanonicalTopicOption(key string, v HeaderValue) (HeaderValue, bool, error) {
	switch key {
	case OptCompressionAlgorithm:
		c, err := parseCompression(key, v)
		if err != nil {
			return HeaderValue{}, false, err
		}
		if c == CompressionGzip {
			return StringValue("gzip"), true, nil
		}
		return StringValue("none"), true, nil
	case OptMessageExpiry:
		us, err := parseU64Or(key, v, parseExpiry)
		if err != nil || us == 0 {
			return HeaderValue{}, false, err
		}
		return Uint64Value(us), true, nil
	case OptMaxTopicSize:
		n, err := parseU64Or(key, v, parseMaxTopicSize)
		if err != nil || n == 0 {
			return HeaderValue{}, false, err
		}
		return Uint64Value(n), true, nil
	case OptSegmentSize:
		n, err := parseU64Or(key, v, parseByteSize)
		if err != nil || n == 0 {
			return HeaderValue{}, false, err
		}
		if n < MinSegmentSize || n > MaxSegmentSize || n%512 != 0 {
			return HeaderValue{}, false, optErr(CodeInvalidOptionValue, key, "%d is not a multiple of 512 within [%d, %d]", n, MinSegmentSize, MaxSegmentSize)
		}
		return Uint64Value(n), true, nil
	case OptEnforceFsync, OptPreallocateSegments:
		b, err := parseBool(key, v)
		if err != nil {
			return HeaderValue{}, false, err
		}
		return BoolValue(b), true, nil
	case OptMessagesRequiredToSave:
		n, err := parseU32(key, v)
		if err != nil {
			return HeaderValue{}, false, err
		}
		if n == 0 || n > MaxMessagesRequiredToSave {
			return HeaderValue{}, false, optErr(CodeInvalidOptionValue, key, "%d outside [1, %d]", n, MaxMessagesRequiredToSave)
		}
		return Uint32Value(n), true, nil
	case OptSizeOfMessagesRequiredToSave:
		n, err := parseU64Or(key, v, parseByteSize)
		if err != nil || n == 0 {
			return HeaderValue{}, false, err
		}
		if n > MaxSizeOfMessagesRequiredToSave {
			return HeaderValue{}, false, optErr(CodeInvalidOptionValue, key, "%d exceeds %d", n, MaxSizeOfMessagesRequiredToSave)
		}
		return Uint64Value(n), true, nil
	}
	return HeaderValue{}, false, optErr(CodeUnsupportedOptionKey, key, "unknown topic option key")
}

// applySetting stores a canonical value into s.
func (s *TopicSettings) apply(key string, v HeaderValue) {
	switch key {
	case OptCompressionAlgorithm:
		if string(v.Value) == "gzip" {
			s.CompressionAlgorithm = CompressionGzip
		} else {
			s.CompressionAlgorithm = CompressionNone
		}
	case OptMessageExpiry:
		s.MessageExpiry, _ = v.AsUint64()
	case OptMaxTopicSize:
		s.MaxTopicSize, _ = v.AsUint64()
	case OptSegmentSize:
		s.SegmentSize, _ = v.AsUint64()
	case OptEnforceFsync:
		s.EnforceFsync, _ = v.AsBool()
	case OptMessagesRequiredToSave:
		n, _ := v.AsUint64()
		s.MessagesRequiredToSave = uint32(n)
	case OptSizeOfMessagesRequiredToSave:
		s.SizeOfMessagesRequiredToSave, _ = v.AsUint64()
	case OptPreallocateSegments:
		s.PreallocateSegments, _ = v.AsBool()
	}
}

func (s *TopicSettings) check(partitions uint32) error {
	if s.MaxTopicSize != DefaultMaxTopicSize && s.MaxTopicSize < s.SegmentSize {
		return optErr(CodeInvalidTopicSize, OptMaxTopicSize, "%d is below the segment size %d", s.MaxTopicSize, s.SegmentSize)
	}
	if s.PreallocateSegments {
		hi, lo := bitsMul64(s.SegmentSize, uint64(partitions))
		if hi != 0 || lo > MaxPreallocatedTopicBytes {
			return optErr(CodeInvalidOptionValue, OptPreallocateSegments, "segment_size x %d partitions exceeds %d bytes", partitions, uint64(MaxPreallocatedTopicBytes))
		}
	}
	return nil
}

func bitsMul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// ResolveTopicCreate is CREATE_TOPIC admission for the options block: every
// key must be in the catalog and its value is canonicalized to the key's
// kind (explicit); every key the client left out (or set to "server
// default") is filled from the catalog default (derived). Cross-key bounds
// are checked with the topic's partition count.
func ResolveTopicCreate(opts Options, partitions uint32) (explicit, derived Options, settings TopicSettings, err error) {
	settings = DefaultTopicSettings()
	set := make(map[string]bool, len(opts))
	for _, e := range opts {
		key := string(e.Key.Value)
		if e.Key.Kind != KindString {
			return nil, nil, TopicSettings{}, optErr(CodeUnsupportedOptionKey, key, "option key kind %s is not string", e.Key.Kind)
		}
		v, present, err := CanonicalTopicOption(key, e.Value)
		if err != nil {
			return nil, nil, TopicSettings{}, err
		}
		if !present {
			continue
		}
		if set[key] {
			return nil, nil, TopicSettings{}, optErr(CodeInvalidOptionValue, key, "duplicate option key")
		}
		set[key] = true
		explicit = append(explicit, HeaderEntry{Key: StringValue(key), Value: v})
		settings.apply(key, v)
	}
	for _, spec := range TopicOptionCatalog {
		if !set[spec.Key] {
			derived = append(derived, HeaderEntry{Key: StringValue(spec.Key), Value: HeaderValue{Kind: spec.Kind, Value: spec.Default}})
		}
	}
	if err := settings.check(partitions); err != nil {
		return nil, nil, TopicSettings{}, err
	}
	return explicit, derived, settings, nil
}

// ResolveTopicUpdate is UPDATE_TOPIC admission: only updatable keys
// (compression_algorithm, message_expiry, max_topic_size), values
// canonicalized; an updated key moves from derived to explicit, a key set to
// "server default" goes back to the catalog default as derived. Keys absent
// from the update keep their values.
func ResolveTopicUpdate(explicit, derived, update Options, partitions uint32) (newExplicit, newDerived Options, settings TopicSettings, err error) {
	settings = DefaultTopicSettings()
	cur := make(map[string]HeaderValue, len(explicit)+len(derived))
	isExplicit := make(map[string]bool, len(explicit))
	for _, e := range derived {
		cur[string(e.Key.Value)] = e.Value
	}
	for _, e := range explicit {
		cur[string(e.Key.Value)] = e.Value
		isExplicit[string(e.Key.Value)] = true
	}
	for _, e := range update {
		key := string(e.Key.Value)
		spec, ok := TopicOptionSpec(key)
		if !ok || e.Key.Kind != KindString {
			return nil, nil, TopicSettings{}, optErr(CodeUnsupportedOptionKey, key, "unknown topic option key")
		}
		if !spec.Updatable {
			return nil, nil, TopicSettings{}, optErr(CodeUnsupportedOptionKey, key, "option cannot be changed after creation")
		}
		v, present, err := CanonicalTopicOption(key, e.Value)
		if err != nil {
			return nil, nil, TopicSettings{}, err
		}
		if !present {
			cur[key] = HeaderValue{Kind: spec.Kind, Value: spec.Default}
			isExplicit[key] = false
			continue
		}
		cur[key] = v
		isExplicit[key] = true
	}
	for _, spec := range TopicOptionCatalog {
		v, ok := cur[spec.Key]
		if !ok {
			v = HeaderValue{Kind: spec.Kind, Value: spec.Default}
		}
		entry := HeaderEntry{Key: StringValue(spec.Key), Value: v}
		if isExplicit[spec.Key] {
			newExplicit = append(newExplicit, entry)
		} else {
			newDerived = append(newDerived, entry)
		}
		settings.apply(spec.Key, v)
	}
	if err := settings.check(partitions); err != nil {
		return nil, nil, TopicSettings{}, err
	}
	return newExplicit, newDerived, settings, nil
}

func parseCompression(key string, v HeaderValue) (uint8, error) {
	switch v.Kind {
	case KindUint8:
		if len(v.Value) == 1 && (v.Value[0] == CompressionNone || v.Value[0] == CompressionGzip) {
			return v.Value[0], nil
		}
	case KindString:
		switch strings.ToLower(string(v.Value)) {
		case "none":
			return CompressionNone, nil
		case "gzip":
			return CompressionGzip, nil
		}
	}
	return 0, optErr(CodeInvalidOptionValue, key, "want none or gzip (string) or code 1/2 (uint8)")
}

func parseBool(key string, v HeaderValue) (bool, error) {
	switch v.Kind {
	case KindBool:
		if len(v.Value) == 1 && v.Value[0] <= 1 {
			return v.Value[0] == 1, nil
		}
	case KindString:
		switch string(v.Value) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, optErr(CodeInvalidOptionValue, key, "want a bool (one byte 0/1) or the string true/false")
}

func parseU32(key string, v HeaderValue) (uint32, error) {
	switch v.Kind {
	case KindUint32:
		if len(v.Value) == 4 {
			return binary.LittleEndian.Uint32(v.Value), nil
		}
	case KindString:
		if n, err := strconv.ParseUint(string(v.Value), 10, 32); err == nil {
			return uint32(n), nil
		}
	}
	return 0, optErr(CodeInvalidOptionValue, key, "want a uint32 or a decimal string")
}

func parseU64Or(key string, v HeaderValue, fromString func(string) (uint64, bool)) (uint64, error) {
	switch v.Kind {
	case KindUint64:
		if len(v.Value) == 8 {
			return binary.LittleEndian.Uint64(v.Value), nil
		}
	case KindString:
		if n, ok := fromString(string(v.Value)); ok {
			return n, nil
		}
	}
	return 0, optErr(CodeInvalidOptionValue, key, "want a uint64 or a parsable string")
}

// parseExpiry accepts the expiry keywords and humantime-style durations and
// returns µs (0 = server default, MaxUint64 = never).
func parseExpiry(s string) (uint64, bool) {
	switch s {
	case "unlimited", "none", "None", "Unlimited", "never_expire":
		return math.MaxUint64, true
	case "default", "server_default", "Default", "Server_default":
		return 0, true
	}
	us, ok := ParseDuration(s)
	if !ok || us/1_000_000 > MaxExpirySeconds {
		return 0, false
	}
	return us, true
}

func parseMaxTopicSize(s string) (uint64, bool) {
	switch s {
	case "unlimited":
		return math.MaxUint64, true
	case "0", "server_default":
		return 0, true
	}
	return parseByteSize(s)
}

// ParseDuration parses a humantime-style duration ("7 days", "1h 30m",
// "250ms") into microseconds. Units: ns/nsec, us/usec/µs, ms/msec,
// s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s), w/week(s),
// M/month(s) (30.44 days), y/year(s) (365.25 days).
func ParseDuration(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var totalNs uint64
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(s[:i], 10, 64)
		if err != nil {
			return 0, false
		}
		s = strings.TrimLeft(s[i:], " ")
		j := 0
		for j < len(s) && !(s[j] >= '0' && s[j] <= '9') && s[j] != ' ' {
			j++
		}
		unit := s[:j]
		s = strings.TrimLeft(s[j:], " ")
		mul, ok := durationUnits[unit]
		if !ok {
			return 0, false
		}
		hi, lo := bitsMul64(n, mul)
		if hi != 0 || totalNs+lo < totalNs {
			return 0, false
		}
		totalNs += lo
	}
	return totalNs / 1000, true
}

var durationUnits = map[string]uint64{
	"ns": 1, "nsec": 1, "nanos": 1,
	"us": 1e3, "usec": 1e3, "µs": 1e3, "micros": 1e3,
	"ms": 1e6, "msec": 1e6, "millis": 1e6,
	"s": 1e9, "sec": 1e9, "secs": 1e9, "second": 1e9, "seconds": 1e9,
	"m": 60e9, "min": 60e9, "mins": 60e9, "minute": 60e9, "minutes": 60e9,
	"h": 3600e9, "hr": 3600e9, "hrs": 3600e9, "hour": 3600e9, "hours": 3600e9,
	"d": 86400e9, "day": 86400e9, "days": 86400e9,
	"w": 604800e9, "week": 604800e9, "weeks": 604800e9,
	"M": 2630016e9, "month": 2630016e9, "months": 2630016e9,
	"y": 31557600e9, "year": 31557600e9, "years": 31557600e9,
}

// parseByteSize parses "1048576", "128 MiB", "1GB", "1.5 GiB" into bytes.
// Decimal units (KB, MB, ...) are powers of 1000, binary ones (KiB, MiB,
// ...) powers of 1024; unit case is ignored.
func parseByteSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, false
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	mul, ok := sizeUnits[unit]
	if !ok {
		return 0, false
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, false
		}
		hi, lo := bitsMul64(n, mul)
		return lo, hi == 0
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, false
	}
	v := f * float64(mul)
	if v < 0 || v >= math.MaxUint64 {
		return 0, false
	}
	return uint64(v), true
}

var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12, "p": 1e15, "pb": 1e15, "e": 1e18, "eb": 1e18,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30,
	"ti": 1 << 40, "tib": 1 << 40, "pi": 1 << 50, "pib": 1 << 50, "ei": 1 << 60, "eib": 1 << 60,
}
