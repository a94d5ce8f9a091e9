package config

import (
	"bytes"
	_ "embed"
	"encoding"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

//go:embed default.toml
var defaultTOML []byte

// DefaultTOML returns the embedded reference configuration.
func DefaultTOML() []byte { return bytes.Clone(defaultTOML) }

// EnvPrefix starts every environment override.
const EnvPrefix = "IGGY_"

// EnvConfigPath names the config file when --config is not given.
const EnvConfigPath = "IGGY_CONFIG_PATH"

// nonSchemaEnv are IGGY_* variables with meanings outside the config schema;
// they are neither applied nor warned about.
var nonSchemaEnv = map[string]bool{
	EnvConfigPath:        true,
	"IGGY_ROOT_USERNAME": true,
	"IGGY_ROOT_PASSWORD": true,
	"IGGY_ENV_PATH":      true,
	// Read by Iggy's test harnesses and tools, never config keys.
	"IGGY_CI_BUILD":               true,
	"IGGY_TEST_CLUSTER_NODES":     true,
	"IGGY_TEST_CLEANUP_DISABLED":  true,
	"IGGY_TEST_VERBOSE":           true,
	"IGGY_CONNECTORS_CONFIG_PATH": true,
	"IGGY_MCP_CONFIG_PATH":        true,
}

// Default returns the embedded defaults, decoded and validated.
func Default() *Config {
	cfg := &Config{}
	if err := decodeTOML(defaultTOML, cfg); err != nil {
		panic("config: embedded default.toml does not decode: " + err.Error())
	}
	return cfg
}

// Load builds the configuration with the process environment; see LoadFrom.
func Load(path string) (*Config, []string, error) { return LoadFrom(path, os.Environ()) }

// LoadFrom builds the configuration in three layers and validates it:
//
//  1. the embedded defaults (default.toml);
//  2. the file at path, or at $IGGY_CONFIG_PATH when path is empty; a file
//     named either way must exist. Keys it sets replace the defaults; an
//     array it sets (such as [[cluster.nodes]]) replaces the default array
//     whole. With neither, the defaults stand alone;
//  3. IGGY_* variables from environ (KEY=value strings, as os.Environ).
//
// It returns warnings (unknown keys and variables) alongside the config;
// settings iggo cannot serve are refused by Validate (Refused). Any broken
// rule, removed key or malformed value refuses the whole load with an error
// naming each one.
func LoadFrom(path string, environ []string) (*Config, []string, error) {
	cfg := Default()
	env := envMap(environ)
	if path == "" {
		path = env[EnvConfigPath]
	}
	var warnings []string
	var problems []Problem
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil, fmt.Errorf("config: file %s does not exist (given by --config or %s)", path, EnvConfigPath)
			}
			return nil, nil, fmt.Errorf("config: reading %s: %w", path, err)
		}
		unknown, valueProblems, err := checkDocument(data)
		if err != nil {
			return nil, nil, fmt.Errorf("config: %s: %w", path, err)
		}
		problems = append(problems, valueProblems...)
		for _, key := range unknown {
			if p, ok := relocatedProblem(key); ok {
				problems = append(problems, p)
			} else {
				warnings = append(warnings, fmt.Sprintf("config: %s: unknown key %s ignored", path, key))
			}
		}
		if len(problems) == 0 {
			if err := decodeTOML(data, cfg); err != nil {
				return nil, nil, fmt.Errorf("config: %s: %w", path, err)
			}
		}
	}
	envWarnings, envProblems := applyEnv(cfg, env)
	warnings = append(warnings, envWarnings...)
	problems = append(problems, envProblems...)
	if len(problems) > 0 {
		return nil, warnings, &ValidationError{Problems: problems}
	}
	if err := cfg.Validate(); err != nil {
		return nil, warnings, err
	}
	return cfg, warnings, nil
}

// decodeTOML decodes data over cfg. Keys absent from data keep cfg's values;
// arrays present in data replace cfg's arrays.
func decodeTOML(data []byte, cfg *Config) error {
	err := toml.NewDecoder(bytes.NewReader(data)).EnableUnmarshalerInterface().Decode(cfg)
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("key %s (line %d, column %d): %w", strings.Join(de.Key(), "."), row, col, err)
	}
	return err
}

// checkDocument walks a TOML document against the schema. It returns the
// keys the schema does not have, as dotted paths with array indexes
// ("cluster.nodes[2].port"), and a problem for every duration, size or
// cpu_allocation value that does not parse, named by its key (the decoder
// itself cannot say which key a custom type's error came from).
func checkDocument(data []byte) (unknown []string, problems []Problem, err error) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, nil, fmt.Errorf("line %d, column %d: %w", row, col, err)
		}
		return nil, nil, err
	}
	walkDoc(doc, reflect.TypeFor[Config](), "", &unknown, &problems)
	sort.Strings(unknown)
	sort.Slice(problems, func(i, j int) bool { return problems[i].Key < problems[j].Key })
	return unknown, problems, nil
}

func walkDoc(doc map[string]any, t reflect.Type, prefix string, unknown *[]string, problems *[]Problem) {
	for key, val := range doc {
		path := joinKey(prefix, key)
		f, ok := fieldByKey(t, key)
		if !ok {
			flattenKeys(val, path, unknown)
			continue
		}
		ft := f.Type
		switch {
		case isLeaf(ft):
			if err := checkLeaf(ft, val); err != nil {
				*problems = append(*problems, Problem{Key: path, Rule: err.Error()})
			}
		case ft.Kind() == reflect.Struct:
			if m, ok := val.(map[string]any); ok {
				walkDoc(m, ft, path, unknown, problems)
			}
		case ft.Kind() == reflect.Slice:
			if items, ok := val.([]any); ok {
				for i, item := range items {
					if m, ok := item.(map[string]any); ok {
						walkDoc(m, ft.Elem(), fmt.Sprintf("%s[%d]", path, i), unknown, problems)
					}
				}
			}
		}
	}
}

// tomlUnmarshaler is go-toml's unstable.Unmarshaler, restated so the check
// needs no import of the unstable package.
type tomlUnmarshaler interface{ UnmarshalTOML([]byte) error }

// checkLeaf parses a custom-typed value the way the decoder will.
func checkLeaf(t reflect.Type, val any) error {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	target := reflect.New(t).Interface()
	switch v := val.(type) {
	case string:
		if tu, ok := target.(encoding.TextUnmarshaler); ok {
			return tu.UnmarshalText([]byte(v))
		}
	case int64:
		if tu, ok := target.(tomlUnmarshaler); ok {
			return tu.UnmarshalTOML([]byte(strconv.FormatInt(v, 10)))
		}
	}
	return nil
}

// flattenKeys records every leaf path under an unknown key, so that each
// removed key gets its own message.
func flattenKeys(val any, path string, out *[]string) {
	switch v := val.(type) {
	case map[string]any:
		if len(v) == 0 {
			*out = append(*out, path)
		}
		for k, child := range v {
			flattenKeys(child, joinKey(path, k), out)
		}
	case []any:
		tables := false
		for i, item := range v {
			if _, ok := item.(map[string]any); ok {
				tables = true
				flattenKeys(item, fmt.Sprintf("%s[%d]", path, i), out)
			}
		}
		if !tables {
			*out = append(*out, path)
		}
	default:
		*out = append(*out, path)
	}
}

func joinKey(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// isLeaf reports whether a field type holds a value rather than a table:
// scalars, pointers to scalars, TextUnmarshaler types (durations, sizes,
// cpu_allocation) and slices of scalars.
func isLeaf(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Struct
	}
	return true
}

// tomlKey is the TOML name of a struct field.
func tomlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.IsExported() && tomlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// relocated lists keys Iggy removed or moved, longest prefix first wins. A
// config that still sets one refuses to boot rather than silently losing the
// setting (a node that ignored an old data-path key would start empty).
var relocated = []struct{ prefix, moved string }{
	{"system.path", "moved to the top-level key path (IGGY_PATH)"},
	{"system.runtime", "moved to [runtime] (IGGY_RUNTIME_*)"},
	{"system.logging", "moved to [logging] (IGGY_LOGGING_*)"},
	{"system.sharding", "moved to [sharding] (IGGY_SHARDING_*)"},
	{"system.encryption", "moved to [encryption] (IGGY_ENCRYPTION_*)"},
	{"system.memory_pool", "moved to [memory_pool] (IGGY_MEMORY_POOL_*)"},
	{"system.partition.validate_checksum", "moved to partition.validate_checksum"},
	{"system.partition.enforce_fsync", enforceFsyncMoved},
	{"system.partition.messages_required_to_save", "is now a per-topic option (messages_required_to_save) set when the topic is created"},
	{"system.partition.size_of_messages_required_to_save", "is now a per-topic option (size_of_messages_required_to_save) set when the topic is created"},
	{"system.partition.path", "removed: the layout under path is fixed"},
	{"system.segment.size", "is now the per-topic option segment_size, set when the topic is created"},
	{"system.segment.preallocate", "is now the per-topic option preallocate_segments, set when the topic is created"},
	{"system.segment.archive_expired", "removed: archiving expired segments is not supported"},
	{"system.segment", "removed: segment settings are per-topic options (segment_size, preallocate_segments)"},
	{"system.topic.max_size", "is now the per-topic option max_topic_size"},
	{"system.topic.message_expiry", "is now the per-topic option message_expiry"},
	{"system.topic", "removed: retention is set per topic (max_topic_size, message_expiry)"},
	{"system.stream", "removed: the layout under path is fixed"},
	{"system.recovery", "removed: recreating missing state is not supported"},
	{"system.message_deduplication", "removed: duplicates are handled per partition (partition.dedup_clients_max)"},
	{"system", "the [system] table was removed in Iggy 0.9.0: path, [runtime], [logging], [sharding], [encryption], [memory_pool] and [partition] are top-level now"},
	{"partition.enforce_fsync", enforceFsyncMoved},
	{"partition.messages_required_to_save", "is a per-topic option set when the topic is created"},
	{"partition.size_of_messages_required_to_save", "is a per-topic option set when the topic is created"},
	{"partition.path", "removed: the layout under path is fixed"},
	{"segment", "removed: segment settings are per-topic options (segment_size, preallocate_segments)"},
	{"topic", "removed: retention is set per topic (max_topic_size, message_expiry)"},
	{"stream", "removed: the layout under path is fixed"},
	{"extra", "removed"},
}

const enforceFsyncMoved = `removed: durability is the per-topic option durability ("persisted" fdatasyncs on a quorum before acking, "replicated" does not), set when the topic is created`

func relocatedProblem(key string) (Problem, bool) {
	bare := stripIndexes(key)
	best := -1
	for i, r := range relocated {
		if bare == r.prefix || strings.HasPrefix(bare, r.prefix+".") {
			if best < 0 || len(r.prefix) > len(relocated[best].prefix) {
				best = i
			}
		}
	}
	if best < 0 {
		return Problem{}, false
	}
	return Problem{Key: key, Rule: relocated[best].moved}, true
}

func stripIndexes(key string) string {
	var b strings.Builder
	depth := 0
	for _, r := range key {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string)
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, EnvPrefix) {
			m[k] = v
		}
	}
	return m
}

// step is one move from a value to a child: a struct field or a slice index.
type step struct {
	field int
	index int // >= 0 for a slice element
	key   string
}

// resolveEnv maps the tokens of an environment name (after IGGY_, split on
// '_') onto a path through the schema. Key names contain underscores
// themselves, so each field whose upper-cased name is a token prefix is
// tried in turn, backtracking on failure.
func resolveEnv(t reflect.Type, tokens []string) ([]step, bool) {
	if len(tokens) == 0 {
		return nil, isLeaf(t)
	}
	if isLeaf(t) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key := tomlKey(f)
			if !f.IsExported() || key == "" {
				continue
			}
			name := strings.Split(strings.ToUpper(key), "_")
			if len(name) > len(tokens) || !equalTokens(name, tokens[:len(name)]) {
				continue
			}
			if rest, ok := resolveEnv(f.Type, tokens[len(name):]); ok {
				return append([]step{{field: i, index: -1, key: key}}, rest...), true
			}
		}
	case reflect.Slice:
		idx, err := strconv.Atoi(tokens[0])
		if err != nil || idx < 0 || strconv.Itoa(idx) != tokens[0] {
			return nil, false
		}
		if idx >= maxEnvIndex {
			return nil, false
		}
		if rest, ok := resolveEnv(t.Elem(), tokens[1:]); ok {
			return append([]step{{field: -1, index: idx}}, rest...), true
		}
	}
	return nil, false
}

// maxEnvIndex bounds array indexes in environment names, so a typo cannot
// allocate a million roster entries.
const maxEnvIndex = 1024

func equalTokens(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func stepsKey(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

// applyEnv applies every IGGY_* variable that names a config key. Slices
// grow as needed, so the environment can add roster entries past those in
// the file. Variables are applied in name order, which makes the result
// independent of the environment's order.
func applyEnv(cfg *Config, env map[string]string) (warnings []string, problems []Problem) {
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	sort.Strings(names)
	root := reflect.ValueOf(cfg).Elem()
	for _, name := range names {
		if nonSchemaEnv[name] {
			continue
		}
		tokens := strings.Split(strings.TrimPrefix(name, EnvPrefix), "_")
		steps, ok := resolveEnv(root.Type(), tokens)
		if !ok {
			if p, moved := relocatedEnv(name, tokens, root.Type()); moved {
				problems = append(problems, p)
			} else if looksLikeConfig(root.Type(), tokens) {
				warnings = append(warnings, fmt.Sprintf("config: environment variable %s matches no config key; ignored", name))
			}
			continue
		}
		v := root
		for _, s := range steps {
			if s.index >= 0 {
				if s.index >= v.Len() {
					grown := reflect.MakeSlice(v.Type(), s.index+1, s.index+1)
					reflect.Copy(grown, v)
					v.Set(grown)
				}
				v = v.Index(s.index)
			} else {
				v = v.Field(s.field)
			}
		}
		if err := setFromString(v, env[name]); err != nil {
			problems = append(problems, Problem{Key: stepsKey(steps), Rule: fmt.Sprintf("%s=%q: %v", name, env[name], err)})
		}
	}
	return warnings, problems
}

// relocatedEnv recognises the pre-0.9.0 IGGY_SYSTEM_* names and says what
// replaced them.
func relocatedEnv(name string, tokens []string, t reflect.Type) (Problem, bool) {
	if len(tokens) < 2 || tokens[0] != "SYSTEM" {
		return Problem{}, false
	}
	if steps, ok := resolveEnv(t, tokens[1:]); ok {
		return Problem{Key: name, Rule: fmt.Sprintf("the SYSTEM_ segment was dropped in Iggy 0.9.0; use %s%s (key %s)",
			EnvPrefix, strings.Join(tokens[1:], "_"), stepsKey(steps))}, true
	}
	return Problem{Key: name, Rule: "the [system] table was removed in Iggy 0.9.0 and this setting has no environment name now"}, true
}

// looksLikeConfig reports whether a variable's leading tokens name a
// top-level table or key, so that a typo like IGGY_TCP_ADRESS is reported
// while unrelated IGGY_* variables (a CLI's credentials) are not.
func looksLikeConfig(t reflect.Type, tokens []string) bool {
	for i := 0; i < t.NumField(); i++ {
		name := strings.Split(strings.ToUpper(tomlKey(t.Field(i))), "_")
		if len(name) <= len(tokens) && equalTokens(name, tokens[:len(name)]) {
			return true
		}
	}
	return false
}

// setFromString stores an environment value into a leaf of any schema type.
func setFromString(v reflect.Value, s string) error {
	if v.Kind() == reflect.Pointer {
		if strings.TrimSpace(s) == "" {
			// An empty value unsets an optional key.
			v.SetZero()
			return nil
		}
		fresh := reflect.New(v.Type().Elem())
		if err := setFromString(fresh.Elem(), s); err != nil {
			return err
		}
		v.Set(fresh)
		return nil
	}
	if tu, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		return tu.UnmarshalText([]byte(strings.TrimSpace(s)))
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("not a boolean (true or false)")
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("not an integer that fits %s", v.Type())
		}
		v.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("not a non-negative integer that fits %s", v.Type())
		}
		v.SetUint(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported list type %s", v.Type())
		}
		v.Set(reflect.ValueOf(splitEnvList(s)))
	default:
		return fmt.Errorf("unsupported type %s", v.Type())
	}
	return nil
}

// splitEnvList reads a list from an environment value: comma-separated
// ("a, b"), or in Iggy's bracketed form ("[a, b]" or "[\"a\", \"b\"]").
// Empty (or "[]") is the empty list. Commas inside double quotes do not
// split.
func splitEnvList(s string) []string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
		t = strings.TrimSpace(t[1 : len(t)-1])
	}
	if t == "" {
		return []string{}
	}
	var items []string
	start, quoted := 0, false
	for i := 0; i <= len(t); i++ {
		if i < len(t) && t[i] == '"' {
			quoted = !quoted
		}
		if i == len(t) || t[i] == ',' && !quoted {
			item := strings.TrimSpace(t[start:i])
			if len(item) >= 2 && (item[0] == '"' && item[len(item)-1] == '"' || item[0] == '\'' && item[len(item)-1] == '\'') {
				item = item[1 : len(item)-1]
			}
			items = append(items, item)
			start = i + 1
		}
	}
	return items
}
