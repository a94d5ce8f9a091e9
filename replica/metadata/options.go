package metadata

import (
	"slices"
	"strings"

	"github.com/iggo/iggo/wire"
)

// iggo's topic option keys beyond Iggy's catalog (the 0.9.0-final names).
// They coexist with enforce_fsync, which stays as an alias: enforce_fsync =
// true means both are persisted.
const (
	OptDurability               = "durability"
	OptConsumerOffsetDurability = "consumer_offset_durability"
	// OptCompressionCodec is the codec a topic's batches are stored with
	// (none | gzip | zstd | lz4). compression_algorithm is Iggy's view of
	// it: gzip when the codec is gzip, none otherwise.
	OptCompressionCodec = "compression_codec"
)

// Compression is a topic's codec at rest. 1 and 2 are Iggy's
// compression_algorithm values; the snapshot's compression byte holds it.
type Compression uint8

// Codecs.
const (
	CompressionNone Compression = 1
	CompressionGzip Compression = 2
	CompressionZstd Compression = 3
	CompressionLZ4  Compression = 4
)

func (c Compression) String() string {
	switch c {
	case CompressionGzip:
		return "gzip"
	case CompressionZstd:
		return "zstd"
	case CompressionLZ4:
		return "lz4"
	}
	return "none"
}

func validCompression(c Compression) bool { return c >= CompressionNone && c <= CompressionLZ4 }

// algorithm is Iggy's compression_algorithm for codec c: gzip or none.
func (c Compression) algorithm() uint8 {
	if c == CompressionGzip {
		return wire.CompressionGzip
	}
	return wire.CompressionNone
}

func parseCompression(v wire.HeaderValue) (Compression, bool) {
	if v.Kind != wire.KindString {
		return 0, false
	}
	switch strings.ToLower(string(v.Value)) {
	case "none":
		return CompressionNone, true
	case "gzip":
		return CompressionGzip, true
	case "zstd":
		return CompressionZstd, true
	case "lz4":
		return CompressionLZ4, true
	}
	return 0, false
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

func validDurability(d Durability) bool {
	return d == DurabilityReplicated || d == DurabilityPersisted
}

// TopicOptionCatalog is every key CREATE_TOPIC accepts, in catalog order
// (the order of the option blocks): Iggy's catalog, then iggo's durability
// keys. Defaults here are the built-in ones; DescribeTopicOptions reports a
// node's actual defaults.
var TopicOptionCatalog = append(slices.Clone(wire.TopicOptionCatalog),
	wire.OptionSpec{Key: OptDurability, Kind: wire.KindString, Default: []byte("replicated"),
		Description: "When a send is acknowledged: replicated (a quorum wrote it to its journal) or persisted (a quorum fdatasync'ed it); enforce_fsync=true means persisted"},
	wire.OptionSpec{Key: OptConsumerOffsetDurability, Kind: wire.KindString, Default: []byte("replicated"),
		Description: "When a consumer offset store is acknowledged: replicated or persisted; enforce_fsync=true means persisted"},
	wire.OptionSpec{Key: OptCompressionCodec, Kind: wire.KindString, Default: []byte("none"), Updatable: true,
		Description: "Codec new batches are stored with: none, gzip, zstd or lz4 (polls return the bytes sent); compression_algorithm reports gzip for gzip and none otherwise"},
)

// sharedValues holds one copy of every catalog key and canonical string
// value. Stored options are read-only, so every topic can point at the
// same bytes instead of allocating its own ten keys.
var sharedValues = func() map[string]wire.HeaderValue {
	m := map[string]wire.HeaderValue{}
	for _, s := range TopicOptionCatalog {
		m[s.Key] = wire.StringValue(s.Key)
	}
	for _, v := range []string{"none", "gzip", "zstd", "lz4", DurabilityReplicated.String(), DurabilityPersisted.String()} {
		m[v] = wire.StringValue(v)
	}
	return m
}()

// sharedString returns the shared string value for s when there is one.
func sharedString(s string) wire.HeaderValue {
	if v, ok := sharedValues[s]; ok {
		return v
	}
	return wire.StringValue(s)
}

func topicOptionSpec(key string) (wire.OptionSpec, bool) {
	for _, s := range TopicOptionCatalog {
		if s.Key == key {
			return s, true
		}
	}
	return wire.OptionSpec{}, false
}

// DescribeTopicOptions answers DESCRIBE_OPTIONS for the topic scope with
// iggo's catalog and the defaults d (the node's configuration).
func DescribeTopicOptions(d TopicDefaults) []wire.OptionDescriptor {
	blocks := encodeTopicOptions(d.config(), nil)
	out := make([]wire.OptionDescriptor, len(TopicOptionCatalog))
	for i, s := range TopicOptionCatalog {
		v, _ := blocks.Get(s.Key)
		out[i] = wire.OptionDescriptor{Key: s.Key, Kind: s.Kind, Default: v.Value, Description: s.Description}
	}
	return out
}

// TopicConfig is a topic's resolved configuration: every catalog key has a
// concrete value (no server-default sentinels). EnforceFsync always equals
// Durability == DurabilityPersisted.
type TopicConfig struct {
	wire.TopicSettings
	Durability               Durability
	ConsumerOffsetDurability Durability
	// Compression is the codec at rest; TopicSettings.CompressionAlgorithm
	// always equals its Iggy projection (gzip or none).
	Compression Compression
}

// TopicDefaults are the values absent keys resolve to. They come from the
// primary's configuration and are stamped into the CreateTopic and
// UpdateTopic prepares, so every replica resolves identically whatever its
// own configuration says.
type TopicDefaults struct {
	// Settings holds the defaults of Iggy's keys; its EnforceFsync is
	// ignored (it follows Durability).
	Settings                 wire.TopicSettings
	Durability               Durability
	ConsumerOffsetDurability Durability
	// SegmentSizeMax is the largest explicit segment_size admitted (at
	// most wire.MaxSegmentSize).
	SegmentSizeMax uint64
}

// DefaultTopicDefaults returns Iggy's catalog defaults with replicated
// durability.
func DefaultTopicDefaults() TopicDefaults {
	return TopicDefaults{
		Settings:                 wire.DefaultTopicSettings(),
		Durability:               DurabilityReplicated,
		ConsumerOffsetDurability: DurabilityReplicated,
		SegmentSizeMax:           wire.MaxSegmentSize,
	}
}

func (d TopicDefaults) config() TopicConfig {
	c := TopicConfig{TopicSettings: d.Settings, Durability: d.Durability, ConsumerOffsetDurability: d.ConsumerOffsetDurability}
	c.EnforceFsync = c.Durability == DurabilityPersisted
	c.Compression = CompressionNone
	if d.Settings.CompressionAlgorithm == wire.CompressionGzip {
		c.Compression = CompressionGzip
	}
	return c
}

// Valid reports whether the defaults satisfy the catalog bounds.
func (d TopicDefaults) Valid() bool {
	return d.SegmentSizeMax >= wire.MinSegmentSize && d.SegmentSizeMax <= wire.MaxSegmentSize &&
		d.Settings.SegmentSize <= d.SegmentSizeMax && validTopicConfig(d.config())
}

func validSegmentSize(v uint64) bool {
	return v >= wire.MinSegmentSize && v <= wire.MaxSegmentSize && v%512 == 0
}

// validTopicConfig checks every per-key bound of a resolved configuration
// (cross-key bounds are checkTopicBounds).
func validTopicConfig(c TopicConfig) bool {
	return validCompression(c.Compression) && c.CompressionAlgorithm == c.Compression.algorithm() &&
		c.MessageExpiry != 0 && c.MaxTopicSize != 0 && validSegmentSize(c.SegmentSize) &&
		c.MessagesRequiredToSave >= 1 && c.MessagesRequiredToSave <= wire.MaxMessagesRequiredToSave &&
		c.SizeOfMessagesRequiredToSave >= 1 && c.SizeOfMessagesRequiredToSave <= wire.MaxSizeOfMessagesRequiredToSave &&
		validDurability(c.Durability) && validDurability(c.ConsumerOffsetDurability) &&
		c.EnforceFsync == (c.Durability == DurabilityPersisted)
}

// checkTopicBounds applies the cross-key rules: the topic cap is at least
// one segment (InvalidTopicSize) and a preallocating topic reserves at most
// wire.MaxPreallocatedTopicBytes.
func checkTopicBounds(c TopicConfig, partitions uint32) wire.Code {
	if c.MaxTopicSize != wire.DefaultMaxTopicSize && c.MaxTopicSize < c.SegmentSize {
		return wire.CodeInvalidTopicSize
	}
	if c.PreallocateSegments {
		hi, lo := mul64(c.SegmentSize, uint64(partitions))
		if hi != 0 || lo > wire.MaxPreallocatedTopicBytes {
			return wire.CodeInvalidOptionValue
		}
	}
	return OK
}

func mul64(a, b uint64) (hi, lo uint64) {
	lo = a * b
	if a != 0 && lo/a != b {
		return 1, lo
	}
	return 0, lo
}

// TopicResolution is a topic's resolved configuration and its two option
// blocks, both in catalog order and in canonical kinds.
type TopicResolution struct {
	Config TopicConfig
	// Explicit holds the keys the client set.
	Explicit wire.Options
	// Derived holds every other catalog key with the value it took from
	// the defaults.
	Derived wire.Options
}

// canonicalOption parses one client entry: unknown keys and non-string
// keys are refused with UnsupportedOptionKey, bad values with
// InvalidOptionValue. present is false when the value means "server
// default" (zero for expiry and sizes, the default keywords), which callers
// treat as if the key were absent.
func canonicalOption(e wire.HeaderEntry, d TopicDefaults) (key string, v wire.HeaderValue, present bool, code wire.Code) {
	key = string(e.Key.Value)
	if e.Key.Kind != wire.KindString {
		return key, v, false, wire.CodeUnsupportedOptionKey
	}
	switch key {
	case OptDurability, OptConsumerOffsetDurability:
		dur, ok := parseDurability(e.Value)
		if !ok {
			return key, v, false, wire.CodeInvalidOptionValue
		}
		return key, wire.StringValue(dur.String()), true, OK
	case OptCompressionCodec:
		c, ok := parseCompression(e.Value)
		if !ok {
			return key, v, false, wire.CodeInvalidOptionValue
		}
		return key, wire.StringValue(c.String()), true, OK
	}
	v, present, err := wire.CanonicalTopicOption(key, e.Value)
	if err != nil {
		if c, ok := wire.CodeOf(err); ok {
			return key, v, false, c
		}
		return key, v, false, wire.CodeInvalidOptionValue
	}
	if present && key == wire.OptSegmentSize {
		if n, _ := v.AsUint64(); n > d.SegmentSizeMax {
			return key, v, false, wire.CodeInvalidOptionValue
		}
	}
	return key, v, present, OK
}

func parseDurability(v wire.HeaderValue) (Durability, bool) {
	if v.Kind != wire.KindString {
		return 0, false
	}
	switch strings.ToLower(string(v.Value)) {
	case "replicated":
		return DurabilityReplicated, true
	case "persisted":
		return DurabilityPersisted, true
	}
	return 0, false
}

// setOption stores a canonical value into c.
func setOption(c *TopicConfig, key string, v wire.HeaderValue) {
	switch key {
	case wire.OptCompressionAlgorithm:
		// Iggy's projection of the codec: setting it to what it already
		// reports changes nothing (a zstd topic reports none).
		switch {
		case string(v.Value) == "gzip":
			c.Compression = CompressionGzip
		case c.Compression == CompressionGzip:
			c.Compression = CompressionNone
		}
		c.CompressionAlgorithm = c.Compression.algorithm()
	case OptCompressionCodec:
		c.Compression, _ = parseCompression(v)
		c.CompressionAlgorithm = c.Compression.algorithm()
	case wire.OptMessageExpiry:
		c.MessageExpiry, _ = v.AsUint64()
	case wire.OptMaxTopicSize:
		c.MaxTopicSize, _ = v.AsUint64()
	case wire.OptSegmentSize:
		c.SegmentSize, _ = v.AsUint64()
	case wire.OptEnforceFsync:
		c.EnforceFsync, _ = v.AsBool()
	case wire.OptMessagesRequiredToSave:
		n, _ := v.AsUint64()
		c.MessagesRequiredToSave = uint32(n)
	case wire.OptSizeOfMessagesRequiredToSave:
		c.SizeOfMessagesRequiredToSave, _ = v.AsUint64()
	case wire.OptPreallocateSegments:
		c.PreallocateSegments, _ = v.AsBool()
	case OptDurability:
		c.Durability, _ = parseDurability(v)
	case OptConsumerOffsetDurability:
		c.ConsumerOffsetDurability, _ = parseDurability(v)
	}
}

// encodeTopicOptions renders every catalog key of c canonically, in
// catalog order, and splits them by whether explicit names them.
func encodeTopicOptions(c TopicConfig, explicit map[string]bool) (all wire.Options) {
	ex, de := splitTopicOptions(c, explicit)
	return append(ex, de...)
}

func splitTopicOptions(c TopicConfig, explicit map[string]bool) (ex, de wire.Options) {
	for _, s := range TopicOptionCatalog {
		var v wire.HeaderValue
		switch s.Key {
		case wire.OptCompressionAlgorithm:
			v = sharedString("none")
			if c.CompressionAlgorithm == wire.CompressionGzip {
				v = sharedString("gzip")
			}
		case wire.OptMessageExpiry:
			v = wire.Uint64Value(c.MessageExpiry)
		case wire.OptMaxTopicSize:
			v = wire.Uint64Value(c.MaxTopicSize)
		case wire.OptSegmentSize:
			v = wire.Uint64Value(c.SegmentSize)
		case wire.OptEnforceFsync:
			v = wire.BoolValue(c.EnforceFsync)
		case wire.OptMessagesRequiredToSave:
			v = wire.Uint32Value(c.MessagesRequiredToSave)
		case wire.OptSizeOfMessagesRequiredToSave:
			v = wire.Uint64Value(c.SizeOfMessagesRequiredToSave)
		case wire.OptPreallocateSegments:
			v = wire.BoolValue(c.PreallocateSegments)
		case OptDurability:
			v = sharedString(c.Durability.String())
		case OptConsumerOffsetDurability:
			v = sharedString(c.ConsumerOffsetDurability.String())
		case OptCompressionCodec:
			v = sharedString(c.Compression.String())
		default:
			panic("metadata: topic option catalog key without an encoder: " + s.Key)
		}
		e := wire.HeaderEntry{Key: sharedString(s.Key), Value: v}
		if explicit[s.Key] {
			ex = append(ex, e)
		} else {
			de = append(de, e)
		}
	}
	return ex, de
}

// ResolveTopicCreate admits a CREATE_TOPIC options block: unknown keys are
// refused (4041), bad values too (4042, or 1019 for a topic cap below one
// segment); absent keys and server-default sentinels resolve from d. It is
// a pure function, used for the pre-commit status check and inside Apply.
func ResolveTopicCreate(opts wire.Options, partitions uint32, d TopicDefaults) (TopicResolution, wire.Code) {
	if !d.Valid() {
		return TopicResolution{}, wire.CodeInvalidOptionValue
	}
	cfg := d.config()
	explicit := make(map[string]bool, len(opts))
	seen := make(map[string]bool, len(opts))
	var comp compressionKeys
	for _, e := range opts {
		key, v, present, code := canonicalOption(e, d)
		if code != OK {
			return TopicResolution{}, code
		}
		if seen[key] {
			return TopicResolution{}, wire.CodeInvalidOptionValue
		}
		seen[key] = true
		if present {
			explicit[key] = true
			setOption(&cfg, key, v)
			comp.note(key, v)
		}
	}
	if code := comp.reconcile(&cfg); code != OK {
		return TopicResolution{}, code
	}
	if explicit[wire.OptEnforceFsync] {
		want := DurabilityReplicated
		if cfg.EnforceFsync {
			want = DurabilityPersisted
		}
		if (explicit[OptDurability] && cfg.Durability != want) ||
			(explicit[OptConsumerOffsetDurability] && cfg.ConsumerOffsetDurability != want) {
			return TopicResolution{}, wire.CodeInvalidOptionValue
		}
		cfg.Durability, cfg.ConsumerOffsetDurability = want, want
	}
	cfg.EnforceFsync = cfg.Durability == DurabilityPersisted
	if code := checkTopicBounds(cfg, partitions); code != OK {
		return TopicResolution{}, code
	}
	ex, de := splitTopicOptions(cfg, explicit)
	return TopicResolution{Config: cfg, Explicit: ex, Derived: de}, OK
}

// ResolveTopicUpdate admits an UPDATE_TOPIC options block against topic t:
// only compression_algorithm, message_expiry and max_topic_size may change
// (any other key, known or not, is refused by name with 4041). A key set
// to its server-default sentinel returns to d's value as a derived key;
// keys not in the block keep their value and provenance. d is read only
// for such a reset.
func ResolveTopicUpdate(opts wire.Options, t *Topic, d TopicDefaults) (TopicResolution, wire.Code) {
	cfg := t.Config
	explicit := make(map[string]bool, len(t.Explicit)+len(opts))
	for _, e := range t.Explicit {
		explicit[string(e.Key.Value)] = true
	}
	def := d.config()
	seen := make(map[string]bool, len(opts))
	var comp compressionKeys
	for _, e := range opts {
		key := string(e.Key.Value)
		if spec, ok := topicOptionSpec(key); !ok || !spec.Updatable || e.Key.Kind != wire.KindString {
			return TopicResolution{}, wire.CodeUnsupportedOptionKey
		}
		key, v, present, code := canonicalOption(e, d)
		if code != OK {
			return TopicResolution{}, code
		}
		if seen[key] {
			return TopicResolution{}, wire.CodeInvalidOptionValue
		}
		seen[key] = true
		if !present {
			// Only a reset reads the defaults, so only a reset needs them.
			if !d.Valid() {
				return TopicResolution{}, wire.CodeInvalidOptionValue
			}
			ex, _ := splitTopicOptions(def, map[string]bool{key: true})
			v, _ = ex.Get(key)
		}
		explicit[key] = present
		setOption(&cfg, key, v)
		comp.note(key, v)
	}
	if code := comp.reconcile(&cfg); code != OK {
		return TopicResolution{}, code
	}
	if code := checkTopicBounds(cfg, t.PartitionsCount()); code != OK {
		return TopicResolution{}, code
	}
	ex, de := splitTopicOptions(cfg, explicit)
	return TopicResolution{Config: cfg, Explicit: ex, Derived: de}, OK
}

// ValidateEmptyCatalog checks an options block against a catalog with no
// keys (streams and users): every key is refused by name.
func ValidateEmptyCatalog(opts wire.Options) wire.Code {
	if len(opts) > 0 {
		return wire.CodeUnsupportedOptionKey
	}
	return OK
}

func optionsEqual(a, b wire.Options) bool {
	return slices.EqualFunc(a, b, func(x, y wire.HeaderEntry) bool {
		return x.Key.Kind == y.Key.Kind && string(x.Key.Value) == string(y.Key.Value) &&
			x.Value.Kind == y.Value.Kind && string(x.Value.Value) == string(y.Value.Value)
	})
}

// compressionKeys are the compression keys one options block set.
// compression_codec decides; compression_algorithm, Iggy's projection of
// it, set in the same block must agree with it (gzip for gzip, none for
// the others), else the block is refused (4042), whatever the order of the
// keys.
type compressionKeys struct {
	alg, codec       wire.HeaderValue
	hasAlg, hasCodec bool
}

func (k *compressionKeys) note(key string, v wire.HeaderValue) {
	switch key {
	case wire.OptCompressionAlgorithm:
		k.alg, k.hasAlg = v, true
	case OptCompressionCodec:
		k.codec, k.hasCodec = v, true
	}
}

func (k *compressionKeys) reconcile(c *TopicConfig) wire.Code {
	if !k.hasCodec {
		return OK
	}
	codec, _ := parseCompression(k.codec)
	if k.hasAlg {
		want := "none"
		if codec == CompressionGzip {
			want = "gzip"
		}
		if string(k.alg.Value) != want {
			return wire.CodeInvalidOptionValue
		}
	}
	c.Compression, c.CompressionAlgorithm = codec, codec.algorithm()
	return OK
}
