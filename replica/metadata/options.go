package metadata

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
)

// HeaderKind is the value kind of an option entry (the user-header TLV
// kinds of the wire protocol).
type HeaderKind uint8

// Header kinds, numbered as on the wire.
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

// Option is one key/value entry of a resource options block. Keys are
// UTF-8 strings; values keep their wire kind and bytes (1..255 bytes).
type Option struct {
	Key   string
	Kind  HeaderKind
	Value []byte
}

// Equal reports whether two entries are identical.
func (o Option) Equal(p Option) bool {
	return o.Key == p.Key && o.Kind == p.Kind && bytes.Equal(o.Value, p.Value)
}

func stringOption(key, v string) Option {
	return Option{Key: key, Kind: KindString, Value: []byte(v)}
}

func boolOption(key string, v bool) Option {
	b := byte(0)
	if v {
		b = 1
	}
	return Option{Key: key, Kind: KindBool, Value: []byte{b}}
}

func u32Option(key string, v uint32) Option {
	return Option{Key: key, Kind: KindUint32, Value: binary.LittleEndian.AppendUint32(nil, v)}
}

func u64Option(key string, v uint64) Option {
	return Option{Key: key, Kind: KindUint64, Value: binary.LittleEndian.AppendUint64(nil, v)}
}

// sortOptions orders entries by key bytes, the stored and encoded order.
func sortOptions(opts []Option) {
	slices.SortFunc(opts, func(a, b Option) int { return strings.Compare(a.Key, b.Key) })
}

// FindOption returns the entry for key, if present.
func FindOption(opts []Option, key string) (Option, bool) {
	for _, o := range opts {
		if o.Key == key {
			return o, true
		}
	}
	return Option{}, false
}

// ValidateEmptyCatalog checks an options block against a catalog with no
// keys (streams and users): every key is refused by name.
func ValidateEmptyCatalog(opts []Option) Code {
	if len(opts) > 0 {
		return CodeUnsupportedOptionKey
	}
	return OK
}

// Topic option keys. The first eight are Iggy's catalog; the two durability
// keys are iggo's (0.9.0-final names) and coexist with enforce_fsync, which
// is kept as an alias: enforce_fsync = true means persisted.
const (
	OptCompressionAlgorithm         = "compression_algorithm"
	OptMessageExpiry                = "message_expiry"
	OptMaxTopicSize                 = "max_topic_size"
	OptSegmentSize                  = "segment_size"
	OptEnforceFsync                 = "enforce_fsync"
	OptMessagesRequiredToSave       = "messages_required_to_save"
	OptSizeOfMessagesRequiredToSave = "size_of_messages_required_to_save"
	OptPreallocateSegments          = "preallocate_segments"
	OptDurability                   = "durability"
	OptConsumerOffsetDurability     = "consumer_offset_durability"
)

const (
	maxHumanExpirySeconds        = math.MaxUint32
	microsPerSecond              = 1_000_000
	unlimited             uint64 = math.MaxUint64
)

// Bounds of the topic catalog.
const (
	MinTopicSegmentSize                 uint64 = 1 << 20
	MaxTopicSegmentSize                 uint64 = 1 << 30
	MaxMessagesRequiredToSave           uint32 = 16 << 20
	MaxSizeOfMessagesRequiredToSave     uint64 = 1 << 30
	MaxPreallocatedTopicBytes           uint64 = 64 << 30
	DefaultSegmentSize                  uint64 = 1 << 30
	DefaultMessagesRequiredToSave       uint32 = 1024
	DefaultSizeOfMessagesRequiredToSave uint64 = 1 << 20
)

// TopicOptionSpec describes one catalog entry, for DESCRIBE_OPTIONS.
type TopicOptionSpec struct {
	Key         string
	Kind        HeaderKind
	Updatable   bool
	Description string
}

// TopicOptionCatalog lists the topic keys in key order.
var TopicOptionCatalog = []TopicOptionSpec{
	{OptCompressionAlgorithm, KindString, true, "compression algorithm stored with the topic: none or gzip (never applied by the server)"},
	{OptConsumerOffsetDurability, KindString, false, "when a consumer offset store is acknowledged: replicated (quorum journal write) or persisted (quorum fdatasync)"},
	{OptDurability, KindString, false, "when a send is acknowledged: replicated (quorum journal write) or persisted (quorum fdatasync)"},
	{OptEnforceFsync, KindBool, false, "legacy alias: true means durability and consumer_offset_durability are persisted"},
	{OptMaxTopicSize, KindUint64, true, "cap on sealed bytes retained by the topic; u64::MAX = unlimited; not below segment_size"},
	{OptMessageExpiry, KindUint64, true, "message retention in microseconds (or a humantime string); u64::MAX = never"},
	{OptMessagesRequiredToSave, KindUint32, false, "flush threshold in messages, 1..16777216"},
	{OptPreallocateSegments, KindBool, false, "reserve segment bytes up front; segment_size x partitions must stay within 64 GiB"},
	{OptSegmentSize, KindUint64, false, "segment size in bytes, a 512-byte multiple within 1 MiB..1 GiB"},
	{OptSizeOfMessagesRequiredToSave, KindUint64, false, "flush threshold in bytes, at most 1 GiB"},
}

// Compression is the topic's stored compression algorithm (record byte).
type Compression uint8

// Compression algorithms as encoded in the topic record.
const (
	CompressionNone Compression = 1
	CompressionGzip Compression = 2
)

func (c Compression) String() string {
	if c == CompressionGzip {
		return "gzip"
	}
	return "none"
}

// Durability says when a write is acknowledged.
type Durability uint8

// Durability levels.
const (
	// DurabilityReplicated acks once a quorum has written the prepare to its
	// journal (the write reached the kernel).
	DurabilityReplicated Durability = 1
	// DurabilityPersisted acks once a quorum has fdatasync'ed it.
	DurabilityPersisted Durability = 2
)

func (d Durability) String() string {
	if d == DurabilityPersisted {
		return "persisted"
	}
	return "replicated"
}

// TopicConfig is a topic's resolved configuration: every catalog key has a
// concrete value (no server-default sentinels).
type TopicConfig struct {
	CompressionAlgorithm         Compression
	MessageExpiry                uint64 // µs; math.MaxUint64 = never
	MaxTopicSize                 uint64 // bytes; math.MaxUint64 = unlimited
	SegmentSize                  uint64
	EnforceFsync                 bool // always Durability == DurabilityPersisted
	MessagesRequiredToSave       uint32
	SizeOfMessagesRequiredToSave uint64
	PreallocateSegments          bool
	Durability                   Durability
	ConsumerOffsetDurability     Durability
}

// TopicDefaults are the values absent keys resolve to at topic creation.
// They come from the primary's configuration and are stamped into the
// CreateTopic prepare, so every replica resolves identically whatever its
// own configuration says.
type TopicDefaults struct {
	CompressionAlgorithm         Compression
	MessageExpiry                uint64
	MaxTopicSize                 uint64
	SegmentSize                  uint64
	MessagesRequiredToSave       uint32
	SizeOfMessagesRequiredToSave uint64
	PreallocateSegments          bool
	Durability                   Durability
	ConsumerOffsetDurability     Durability
	// SegmentSizeMax is the largest explicit segment_size admitted
	// (≤ MaxTopicSegmentSize).
	SegmentSizeMax uint64
}

// DefaultTopicDefaults returns Iggy's catalog defaults plus iggo's
// replicated durability.
func DefaultTopicDefaults() TopicDefaults {
	return TopicDefaults{
		CompressionAlgorithm:         CompressionNone,
		MessageExpiry:                unlimited,
		MaxTopicSize:                 unlimited,
		SegmentSize:                  DefaultSegmentSize,
		MessagesRequiredToSave:       DefaultMessagesRequiredToSave,
		SizeOfMessagesRequiredToSave: DefaultSizeOfMessagesRequiredToSave,
		PreallocateSegments:          false,
		Durability:                   DurabilityReplicated,
		ConsumerOffsetDurability:     DurabilityReplicated,
		SegmentSizeMax:               MaxTopicSegmentSize,
	}
}

// Valid reports whether the defaults themselves satisfy the catalog bounds.
func (d TopicDefaults) Valid() bool {
	return (d.CompressionAlgorithm == CompressionNone || d.CompressionAlgorithm == CompressionGzip) &&
		d.MessageExpiry != 0 && d.MaxTopicSize != 0 &&
		d.SegmentSizeMax >= MinTopicSegmentSize && d.SegmentSizeMax <= MaxTopicSegmentSize &&
		validSegmentSize(d.SegmentSize, d.SegmentSizeMax) &&
		d.MessagesRequiredToSave >= 1 && d.MessagesRequiredToSave <= MaxMessagesRequiredToSave &&
		d.SizeOfMessagesRequiredToSave >= 1 && d.SizeOfMessagesRequiredToSave <= MaxSizeOfMessagesRequiredToSave &&
		validDurability(d.Durability) && validDurability(d.ConsumerOffsetDurability)
}

func validDurability(d Durability) bool {
	return d == DurabilityReplicated || d == DurabilityPersisted
}

func validSegmentSize(v, ceiling uint64) bool {
	return v >= MinTopicSegmentSize && v <= ceiling && v%512 == 0
}

// TopicResolution is the outcome of admitting a CreateTopic options block.
type TopicResolution struct {
	Config TopicConfig
	// Explicit holds the keys the client sent, re-encoded in their
	// canonical kinds with their resolved values, sorted by key.
	Explicit []Option
	// Derived holds every other catalog key with the value it resolved to.
	Derived []Option
}

// parsedTopicOptions is the typed view of a client block; a nil pointer
// means the key was absent.
type parsedTopicOptions struct {
	compression  *Compression
	expiry       *uint64
	maxSize      *uint64
	segmentSize  *uint64
	enforceFsync *bool
	msgsToSave   *uint32
	sizeToSave   *uint64
	prealloc     *bool
	durability   *Durability
	offsetDur    *Durability
	seen         []string
}

func ptr[T any](v T) *T { return &v }

// parseTopicOptions folds a block into typed values. allowed restricts the
// accepted keys (nil = whole catalog).
func parseTopicOptions(opts []Option, allowed []string) (parsedTopicOptions, Code) {
	var p parsedTopicOptions
	for _, o := range opts {
		if slices.Contains(p.seen, o.Key) {
			return p, CodeInvalidOptionValue
		}
		p.seen = append(p.seen, o.Key)
		if allowed != nil && !slices.Contains(allowed, o.Key) {
			return p, CodeUnsupportedOptionKey
		}
		ok := true
		switch o.Key {
		case OptCompressionAlgorithm:
			var c Compression
			c, ok = parseCompression(o)
			p.compression = ptr(c)
		case OptMessageExpiry:
			var v uint64
			v, ok = parseU64Or(o, parseExpiryString)
			p.expiry = ptr(v)
		case OptMaxTopicSize:
			var v uint64
			v, ok = parseU64Or(o, parseMaxTopicSizeString)
			p.maxSize = ptr(v)
		case OptSegmentSize:
			var v uint64
			v, ok = parseU64Or(o, parseByteSizeOption)
			p.segmentSize = ptr(v)
		case OptEnforceFsync:
			var v bool
			v, ok = parseBool(o)
			p.enforceFsync = ptr(v)
		case OptMessagesRequiredToSave:
			var v uint32
			v, ok = parseU32(o)
			ok = ok && v >= 1 && v <= MaxMessagesRequiredToSave
			p.msgsToSave = ptr(v)
		case OptSizeOfMessagesRequiredToSave:
			var v uint64
			v, ok = parseU64Or(o, parseByteSizeOption)
			ok = ok && v <= MaxSizeOfMessagesRequiredToSave
			p.sizeToSave = ptr(v)
		case OptPreallocateSegments:
			var v bool
			v, ok = parseBool(o)
			p.prealloc = ptr(v)
		case OptDurability:
			var v Durability
			v, ok = parseDurability(o)
			p.durability = ptr(v)
		case OptConsumerOffsetDurability:
			var v Durability
			v, ok = parseDurability(o)
			p.offsetDur = ptr(v)
		default:
			return p, CodeUnsupportedOptionKey
		}
		if !ok {
			return p, CodeInvalidOptionValue
		}
	}
	return p, OK
}

// ResolveTopicCreate admits a CreateTopic options block: it refuses unknown
// keys (4041) and bad values (4042, or 1019 for a topic cap below one
// segment), resolves absent keys and zero sentinels from d, and returns the
// canonical explicit and derived blocks. It is a pure function, used both
// for the pre-commit status check and inside Apply.
func ResolveTopicCreate(opts []Option, partitionsCount uint32, d TopicDefaults) (TopicResolution, Code) {
	if !d.Valid() {
		return TopicResolution{}, CodeInvalidOptionValue
	}
	p, code := parseTopicOptions(opts, nil)
	if code != OK {
		return TopicResolution{}, code
	}
	cfg := TopicConfig{
		CompressionAlgorithm:         d.CompressionAlgorithm,
		MessageExpiry:                d.MessageExpiry,
		MaxTopicSize:                 d.MaxTopicSize,
		SegmentSize:                  d.SegmentSize,
		MessagesRequiredToSave:       d.MessagesRequiredToSave,
		SizeOfMessagesRequiredToSave: d.SizeOfMessagesRequiredToSave,
		PreallocateSegments:          d.PreallocateSegments,
		Durability:                   d.Durability,
		ConsumerOffsetDurability:     d.ConsumerOffsetDurability,
	}
	if p.compression != nil {
		cfg.CompressionAlgorithm = *p.compression
	}
	// Zero is the wire's "server default" sentinel for these keys: the key
	// stays explicit (the client named it) but takes the default value.
	if p.expiry != nil && *p.expiry != 0 {
		cfg.MessageExpiry = *p.expiry
	}
	if p.maxSize != nil && *p.maxSize != 0 {
		cfg.MaxTopicSize = *p.maxSize
	}
	if p.segmentSize != nil && *p.segmentSize != 0 {
		if !validSegmentSize(*p.segmentSize, d.SegmentSizeMax) {
			return TopicResolution{}, CodeInvalidOptionValue
		}
		cfg.SegmentSize = *p.segmentSize
	}
	if p.msgsToSave != nil {
		cfg.MessagesRequiredToSave = *p.msgsToSave
	}
	if p.sizeToSave != nil && *p.sizeToSave != 0 {
		cfg.SizeOfMessagesRequiredToSave = *p.sizeToSave
	}
	if p.prealloc != nil {
		cfg.PreallocateSegments = *p.prealloc
	}
	if p.durability != nil {
		cfg.Durability = *p.durability
	}
	if p.offsetDur != nil {
		cfg.ConsumerOffsetDurability = *p.offsetDur
	}
	if p.enforceFsync != nil {
		want := DurabilityReplicated
		if *p.enforceFsync {
			want = DurabilityPersisted
		}
		if (p.durability != nil && *p.durability != want) || (p.offsetDur != nil && *p.offsetDur != want) {
			return TopicResolution{}, CodeInvalidOptionValue
		}
		cfg.Durability = want
		cfg.ConsumerOffsetDurability = want
	}
	cfg.EnforceFsync = cfg.Durability == DurabilityPersisted
	if cfg.MaxTopicSize != unlimited && cfg.MaxTopicSize < cfg.SegmentSize {
		return TopicResolution{}, CodeInvalidTopicSize
	}
	if cfg.PreallocateSegments {
		hi, lo := mul64(cfg.SegmentSize, uint64(partitionsCount))
		if hi != 0 || lo > MaxPreallocatedTopicBytes {
			return TopicResolution{}, CodeInvalidOptionValue
		}
	}
	canon := canonicalTopicOptions(cfg)
	res := TopicResolution{Config: cfg}
	for _, o := range canon {
		if slices.Contains(p.seen, o.Key) {
			res.Explicit = append(res.Explicit, o)
		} else {
			res.Derived = append(res.Derived, o)
		}
	}
	return res, OK
}

func mul64(a, b uint64) (hi, lo uint64) {
	if a == 0 || b == 0 {
		return 0, 0
	}
	lo = a * b
	if lo/b != a {
		return 1, lo
	}
	return 0, lo
}

// UpdatableTopicOptions are the keys an UpdateTopic block may carry; the
// others describe how storage was laid down and are create-only.
var UpdatableTopicOptions = []string{OptCompressionAlgorithm, OptMessageExpiry, OptMaxTopicSize}

// ResolveTopicUpdate admits an UpdateTopic options block against the
// topic's current configuration. It returns the new configuration and the
// canonical entries to patch into the explicit block. Keys outside the
// updatable set are refused by name (4041); a zero sentinel leaves its key
// unchanged.
func ResolveTopicUpdate(opts []Option, cur TopicConfig) (TopicConfig, []Option, Code) {
	p, code := parseTopicOptions(opts, UpdatableTopicOptions)
	if code != OK {
		return cur, nil, code
	}
	next := cur
	var patch []Option
	if p.compression != nil {
		next.CompressionAlgorithm = *p.compression
		patch = append(patch, stringOption(OptCompressionAlgorithm, next.CompressionAlgorithm.String()))
	}
	if p.expiry != nil && *p.expiry != 0 {
		next.MessageExpiry = *p.expiry
		patch = append(patch, u64Option(OptMessageExpiry, next.MessageExpiry))
	}
	if p.maxSize != nil && *p.maxSize != 0 {
		next.MaxTopicSize = *p.maxSize
		patch = append(patch, u64Option(OptMaxTopicSize, next.MaxTopicSize))
	}
	if next.MaxTopicSize != unlimited && next.MaxTopicSize < next.SegmentSize {
		return cur, nil, CodeInvalidTopicSize
	}
	sortOptions(patch)
	return next, patch, OK
}

// canonicalTopicOptions encodes every catalog key of cfg in its canonical
// kind, sorted by key.
func canonicalTopicOptions(cfg TopicConfig) []Option {
	out := []Option{
		stringOption(OptCompressionAlgorithm, cfg.CompressionAlgorithm.String()),
		stringOption(OptConsumerOffsetDurability, cfg.ConsumerOffsetDurability.String()),
		stringOption(OptDurability, cfg.Durability.String()),
		boolOption(OptEnforceFsync, cfg.EnforceFsync),
		u64Option(OptMaxTopicSize, cfg.MaxTopicSize),
		u64Option(OptMessageExpiry, cfg.MessageExpiry),
		u32Option(OptMessagesRequiredToSave, cfg.MessagesRequiredToSave),
		boolOption(OptPreallocateSegments, cfg.PreallocateSegments),
		u64Option(OptSegmentSize, cfg.SegmentSize),
		u64Option(OptSizeOfMessagesRequiredToSave, cfg.SizeOfMessagesRequiredToSave),
	}
	return out
}

// DefaultOptionValue returns the canonical encoding of key's default under
// d, for DESCRIBE_OPTIONS.
func DefaultOptionValue(key string, d TopicDefaults) (Option, bool) {
	cfg := TopicConfig{
		CompressionAlgorithm:         d.CompressionAlgorithm,
		MessageExpiry:                d.MessageExpiry,
		MaxTopicSize:                 d.MaxTopicSize,
		SegmentSize:                  d.SegmentSize,
		EnforceFsync:                 d.Durability == DurabilityPersisted,
		MessagesRequiredToSave:       d.MessagesRequiredToSave,
		SizeOfMessagesRequiredToSave: d.SizeOfMessagesRequiredToSave,
		PreallocateSegments:          d.PreallocateSegments,
		Durability:                   d.Durability,
		ConsumerOffsetDurability:     d.ConsumerOffsetDurability,
	}
	return FindOption(canonicalTopicOptions(cfg), key)
}

func parseCompression(o Option) (Compression, bool) {
	switch o.Kind {
	case KindUint8:
		if len(o.Value) == 1 && (o.Value[0] == 1 || o.Value[0] == 2) {
			return Compression(o.Value[0]), true
		}
	case KindString:
		switch strings.ToLower(string(o.Value)) {
		case "none":
			return CompressionNone, true
		case "gzip":
			return CompressionGzip, true
		}
	}
	return 0, false
}

func parseDurability(o Option) (Durability, bool) {
	if o.Kind != KindString {
		return 0, false
	}
	switch strings.ToLower(string(o.Value)) {
	case "replicated":
		return DurabilityReplicated, true
	case "persisted":
		return DurabilityPersisted, true
	}
	return 0, false
}

func parseBool(o Option) (bool, bool) {
	switch o.Kind {
	case KindBool:
		if len(o.Value) == 1 && o.Value[0] <= 1 {
			return o.Value[0] == 1, true
		}
	case KindString:
		switch string(o.Value) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func parseU32(o Option) (uint32, bool) {
	switch o.Kind {
	case KindUint32:
		if len(o.Value) == 4 {
			return binary.LittleEndian.Uint32(o.Value), true
		}
	case KindString:
		v, err := strconv.ParseUint(string(o.Value), 10, 32)
		return uint32(v), err == nil
	}
	return 0, false
}

// parseU64Or reads a Uint64 verbatim or routes a String through str.
func parseU64Or(o Option, str func(string) (uint64, bool)) (uint64, bool) {
	switch o.Kind {
	case KindUint64:
		if len(o.Value) == 8 {
			return binary.LittleEndian.Uint64(o.Value), true
		}
	case KindString:
		return str(string(o.Value))
	}
	return 0, false
}

// parseExpiryString accepts Iggy's expiry spellings: never-expire words,
// server-default words, or a humantime duration of at most u32::MAX
// seconds. Returns µs, 0 for server default, math.MaxUint64 for never.
func parseExpiryString(s string) (uint64, bool) {
	switch s {
	case "unlimited", "none", "None", "Unlimited", "never_expire":
		return unlimited, true
	case "default", "server_default", "Default", "Server_default":
		return 0, true
	}
	secs, micros, ok := ParseHumanDuration(s)
	if !ok || secs > maxHumanExpirySeconds {
		return 0, false
	}
	return secs*microsPerSecond + micros, true
}

// parseMaxTopicSizeString accepts "unlimited", the server-default words,
// or a byte size.
func parseMaxTopicSizeString(s string) (uint64, bool) {
	switch s {
	case "unlimited":
		return unlimited, true
	case "0", "server_default":
		return 0, true
	}
	return parseByteSizeOption(s)
}

// parseByteSizeOption parses a byte size; Iggy's "zero" words mean 0.
func parseByteSizeOption(s string) (uint64, bool) {
	switch s {
	case "0", "unlimited", "Unlimited", "none", "None":
		return 0, true
	}
	return ParseByteSize(s)
}

// ParseHumanDuration parses a humantime-style duration such as "7 days",
// "1h 30m" or "15days2min2s": integer amounts each followed by a unit,
// optionally separated by whitespace. It returns whole seconds plus the
// sub-second remainder in µs.
func ParseHumanDuration(s string) (secs, micros uint64, ok bool) {
	type unit struct {
		names []string
		secs  uint64
		nanos uint64
	}
	units := []unit{
		{[]string{"nanoseconds", "nanosecond", "nsec", "ns"}, 0, 1},
		{[]string{"microseconds", "microsecond", "usec", "us", "µs"}, 0, 1_000},
		{[]string{"milliseconds", "millisecond", "msec", "ms"}, 0, 1_000_000},
		{[]string{"seconds", "second", "secs", "sec", "s"}, 1, 0},
		{[]string{"minutes", "minute", "mins", "min", "m"}, 60, 0},
		{[]string{"hours", "hour", "hrs", "hr", "h"}, 3600, 0},
		{[]string{"days", "day", "d"}, 86400, 0},
		{[]string{"weeks", "week", "w"}, 604800, 0},
		{[]string{"months", "month", "M"}, 2_630_016, 0},
		{[]string{"years", "year", "y"}, 31_557_600, 0},
	}
	var totalNanos uint64
	i, items := 0, 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return 0, 0, false
		}
		n, err := strconv.ParseUint(s[start:i], 10, 64)
		if err != nil {
			return 0, 0, false
		}
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		ustart := i
		for i < len(s) && !isSpace(s[i]) && (s[i] < '0' || s[i] > '9') {
			i++
		}
		name := s[ustart:i]
		found := false
		for _, u := range units {
			if !slices.Contains(u.names, name) {
				continue
			}
			found = true
			if u.secs > 0 {
				if n > math.MaxUint64/u.secs || secs+n*u.secs < secs {
					return 0, 0, false
				}
				secs += n * u.secs
			} else {
				if n > math.MaxUint64/u.nanos || totalNanos+n*u.nanos < totalNanos {
					return 0, 0, false
				}
				totalNanos += n * u.nanos
			}
		}
		if !found {
			return 0, 0, false
		}
		items++
	}
	if items == 0 {
		return 0, 0, false
	}
	extra := totalNanos / 1_000_000_000
	if secs+extra < secs {
		return 0, 0, false
	}
	return secs + extra, (totalNanos % 1_000_000_000) / 1_000, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// ParseByteSize parses sizes such as "128MiB", "1 GB", "1.5 GiB" or a bare
// byte count. Units are case-insensitive; K/M/G/T/P/E and their "B" forms
// are powers of 1000, the "i"/"iB" forms powers of 1024.
func ParseByteSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	intPart := s[:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		frac = s[i+1 : j]
		if frac == "" || len(frac) > 9 {
			return 0, false
		}
		i = j
	}
	unitStr := strings.ToLower(strings.TrimSpace(s[i:]))
	var mult uint64
	switch unitStr {
	case "", "b":
		mult = 1
	default:
		prefix := unitStr[0]
		rest := unitStr[1:]
		var base uint64
		switch rest {
		case "", "b":
			base = 1000
		case "i", "ib":
			base = 1024
		default:
			return 0, false
		}
		pow := strings.IndexByte("kmgtpe", prefix) + 1
		if pow == 0 {
			return 0, false
		}
		mult = 1
		for range pow {
			mult *= base
		}
	}
	n, err := strconv.ParseUint(intPart, 10, 64)
	if err != nil {
		return 0, false
	}
	hi, v := mul64(n, mult)
	if hi != 0 {
		return 0, false
	}
	if frac != "" {
		f, _ := strconv.ParseUint(frac, 10, 64)
		den := uint64(1)
		for range len(frac) {
			den *= 10
		}
		// mult ≤ 1024^6 < 2^60 and f < 10^9 < 2^30 could overflow, so
		// divide first where it is exact enough and fall back per digit.
		var add uint64
		if fh, fl := mul64(f, mult); fh == 0 {
			add = fl / den
		} else {
			add = mult / den * f
		}
		if v+add < v {
			return 0, false
		}
		v += add
	}
	return v, true
}
