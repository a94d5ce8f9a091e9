package cli

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/iggo/iggo/wire"
)

// ParseIdentifier turns a command-line id into a wire identifier the way
// Iggy's CLI does: a string of decimal digits that fits a u32 is a numeric
// id, anything else is a name (1..255 bytes of UTF-8).
func ParseIdentifier(s string) (wire.Identifier, error) {
	if s == "" {
		return wire.Identifier{}, fmt.Errorf("empty id: give a numeric id or a name")
	}
	if isDigits(s) {
		n, err := strconv.ParseUint(s, 10, 32)
		if err == nil {
			return wire.NumericID(uint32(n)), nil
		}
	}
	id, err := wire.NamedID(s)
	if err != nil {
		return wire.Identifier{}, fmt.Errorf("invalid id %q: names are 1..255 bytes of UTF-8", s)
	}
	return id, nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return len(s) > 0
}

// idText renders an identifier for messages: names quoted, numbers bare.
func idText(id wire.Identifier) string {
	if n, ok := id.Numeric(); ok {
		return strconv.FormatUint(uint64(n), 10)
	}
	name, _ := id.Name()
	return "'" + name + "'"
}

// parseU32 parses a non-negative count or id argument.
func parseU32(what, s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: want a number from 0 to %d", what, s, uint32(math.MaxUint32))
	}
	return uint32(n), nil
}

func parseU64(what, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid %s %q: want a non-negative number", what, s)
	}
	return n, nil
}

// headerKinds maps Iggy's header kind names to kinds.
var headerKinds = map[string]wire.HeaderKind{
	"raw": wire.KindRaw, "string": wire.KindString, "bool": wire.KindBool,
	"int8": wire.KindInt8, "int16": wire.KindInt16, "int32": wire.KindInt32, "int64": wire.KindInt64, "int128": wire.KindInt128,
	"uint8": wire.KindUint8, "uint16": wire.KindUint16, "uint32": wire.KindUint32, "uint64": wire.KindUint64, "uint128": wire.KindUint128,
	"float32": wire.KindFloat32, "float64": wire.KindFloat64,
}

// ParseHeader parses one "key:kind:value" message header. The value is
// everything after the second colon, so it may itself contain colons.
func ParseHeader(spec string) (wire.HeaderEntry, error) {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) != 3 {
		return wire.HeaderEntry{}, fmt.Errorf("invalid header %q: want key:kind:value, e.g. source:string:sensor-1", spec)
	}
	key, kindName, value := parts[0], strings.ToLower(parts[1]), parts[2]
	if key == "" || len(key) > wire.MaxHeaderFieldLength {
		return wire.HeaderEntry{}, fmt.Errorf("invalid header %q: the key must be 1..255 bytes", spec)
	}
	kind, ok := headerKinds[kindName]
	if !ok {
		return wire.HeaderEntry{}, fmt.Errorf("invalid header %q: unknown kind %q (one of raw, string, bool, int8..int128, uint8..uint128, float32, float64)", spec, parts[1])
	}
	v, err := headerValue(kind, value)
	if err != nil {
		return wire.HeaderEntry{}, fmt.Errorf("invalid header %q: %v", spec, err)
	}
	return wire.HeaderEntry{Key: wire.StringValue(key), Value: v}, nil
}

// ParseHeaders parses every spec; each may hold several comma-separated
// headers, as in Iggy's -H k1:string:a,k2:uint8:1.
func ParseHeaders(specs []string) ([]wire.HeaderEntry, error) {
	var out []wire.HeaderEntry
	seen := map[string]bool{}
	for _, s := range specs {
		for _, one := range strings.Split(s, ",") {
			if one == "" {
				continue
			}
			e, err := ParseHeader(one)
			if err != nil {
				return nil, err
			}
			k := string(e.Key.Value)
			if seen[k] {
				return nil, fmt.Errorf("header key %q given twice", k)
			}
			seen[k] = true
			out = append(out, e)
		}
	}
	return out, nil
}

func headerValue(kind wire.HeaderKind, s string) (wire.HeaderValue, error) {
	intRange := func(bits int) (int64, error) {
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("%q is not an int%d", s, bits)
		}
		return n, nil
	}
	uintRange := func(bits int) (uint64, error) {
		n, err := strconv.ParseUint(s, 10, bits)
		if err != nil {
			return 0, fmt.Errorf("%q is not a uint%d", s, bits)
		}
		return n, nil
	}
	switch kind {
	case wire.KindRaw, wire.KindString:
		if len(s) == 0 || len(s) > wire.MaxHeaderFieldLength {
			return wire.HeaderValue{}, fmt.Errorf("the value must be 1..255 bytes")
		}
		if kind == wire.KindString {
			if !utf8.ValidString(s) {
				return wire.HeaderValue{}, fmt.Errorf("the value is not UTF-8")
			}
			return wire.StringValue(s), nil
		}
		return wire.RawValue([]byte(s)), nil
	case wire.KindBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return wire.HeaderValue{}, fmt.Errorf("%q is not true or false", s)
		}
		return wire.BoolValue(b), nil
	case wire.KindInt8:
		n, err := intRange(8)
		return wire.Int8Value(int8(n)), err
	case wire.KindInt16:
		n, err := intRange(16)
		return wire.Int16Value(int16(n)), err
	case wire.KindInt32:
		n, err := intRange(32)
		return wire.Int32Value(int32(n)), err
	case wire.KindInt64:
		n, err := intRange(64)
		return wire.Int64Value(n), err
	case wire.KindUint8:
		n, err := uintRange(8)
		return wire.Uint8Value(uint8(n)), err
	case wire.KindUint16:
		n, err := uintRange(16)
		return wire.Uint16Value(uint16(n)), err
	case wire.KindUint32:
		n, err := uintRange(32)
		return wire.Uint32Value(uint32(n)), err
	case wire.KindUint64:
		n, err := uintRange(64)
		return wire.Uint64Value(n), err
	case wire.KindInt128, wire.KindUint128:
		return int128Value(kind, s)
	case wire.KindFloat32:
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return wire.HeaderValue{}, fmt.Errorf("%q is not a float32", s)
		}
		return wire.Float32Value(float32(f)), nil
	case wire.KindFloat64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return wire.HeaderValue{}, fmt.Errorf("%q is not a float64", s)
		}
		return wire.Float64Value(f), nil
	}
	return wire.HeaderValue{}, fmt.Errorf("unsupported kind %v", kind)
}

// int128Value encodes a decimal 128-bit integer little-endian, two's
// complement for the signed kind.
func int128Value(kind wire.HeaderKind, s string) (wire.HeaderValue, error) {
	n, ok := new(big.Int).SetString(s, 10)
	one := big.NewInt(1)
	var lo, hi *big.Int
	if kind == wire.KindUint128 {
		lo, hi = big.NewInt(0), new(big.Int).Sub(new(big.Int).Lsh(one, 128), one)
	} else {
		lo = new(big.Int).Neg(new(big.Int).Lsh(one, 127))
		hi = new(big.Int).Sub(new(big.Int).Lsh(one, 127), one)
	}
	if !ok || n.Cmp(lo) < 0 || n.Cmp(hi) > 0 {
		return wire.HeaderValue{}, fmt.Errorf("%q is not a %v", s, kind)
	}
	if n.Sign() < 0 {
		n.Add(n, new(big.Int).Lsh(one, 128))
	}
	be := n.FillBytes(make([]byte, 16))
	le := make([]byte, 16)
	for i := range be {
		le[i] = be[15-i]
	}
	return wire.HeaderValue{Kind: kind, Value: le}, nil
}

// HeaderValueText renders a header value for output.
func HeaderValueText(v wire.HeaderValue) string {
	switch v.Kind {
	case wire.KindString:
		return string(v.Value)
	case wire.KindRaw:
		return hex.EncodeToString(v.Value)
	case wire.KindBool:
		b, _ := v.AsBool()
		return strconv.FormatBool(b)
	case wire.KindInt8, wire.KindInt16, wire.KindInt32, wire.KindInt64:
		n, _ := v.AsInt64()
		return strconv.FormatInt(n, 10)
	case wire.KindUint8, wire.KindUint16, wire.KindUint32, wire.KindUint64:
		n, _ := v.AsUint64()
		return strconv.FormatUint(n, 10)
	case wire.KindFloat32, wire.KindFloat64:
		f, _ := v.AsFloat64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case wire.KindInt128, wire.KindUint128:
		if len(v.Value) != 16 {
			return hex.EncodeToString(v.Value)
		}
		be := make([]byte, 16)
		for i := range be {
			be[i] = v.Value[15-i]
		}
		n := new(big.Int).SetBytes(be)
		if v.Kind == wire.KindInt128 && v.Value[15]&0x80 != 0 {
			n.Sub(n, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return n.String()
	}
	return hex.EncodeToString(v.Value)
}

// ParseByteSize parses sizes such as "100MB", "1.5 GiB", "512KB" or "1000"
// (bytes). Decimal units (kB, MB, GB, TB) are powers of 1000 and binary
// units (KiB, MiB, GiB, TiB) powers of 1024, as in Iggy.
func ParseByteSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: want a number with an optional unit such as 100MB or 64KiB", s)
	}
	num, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %v", s, err)
	}
	unit := strings.ToLower(strings.TrimSpace(t[i:]))
	mul, ok := sizeUnits[unit]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown unit %q (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, t[i:])
	}
	v := num * mul
	if v > math.MaxUint64/2 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return uint64(math.Round(v)), nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// FormatBytes renders a byte count with decimal units ("1.50 MB").
func FormatBytes(n uint64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	f := float64(n)
	i := 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.2f %s", f, units[i])
}

// ParseExpiry parses a message-expiry or token-expiry argument into µs:
// "unlimited"/"none"/"never" → MaxUint64, "server_default"/"default" → 0,
// otherwise a humantime duration ("15days 2min", "1h").
func ParseExpiry(s string) (uint64, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "unlimited", "none", "never", "never_expire":
		return math.MaxUint64, nil
	case "server_default", "default", "":
		return 0, nil
	}
	us, ok := wire.ParseDuration(spaceUnits(s))
	if !ok || us == 0 {
		return 0, fmt.Errorf("invalid expiry %q: want a duration such as 15days, 1h 30m or 10s, or unlimited", s)
	}
	return us, nil
}

// spaceUnits accepts Iggy's run-together forms ("15days2min") by inserting
// a space before each number that follows a unit.
func spaceUnits(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && c >= '0' && c <= '9' {
			p := s[i-1]
			if !(p >= '0' && p <= '9') && p != ' ' {
				b.WriteByte(' ')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// FormatExpiry renders a µs expiry the way the user typed it.
func FormatExpiry(us uint64) string {
	switch us {
	case math.MaxUint64:
		return "unlimited"
	case 0:
		return "server_default"
	}
	return formatDurationUs(us)
}

func formatDurationUs(us uint64) string {
	units := []struct {
		name string
		us   uint64
	}{{"days", 86_400_000_000}, {"h", 3_600_000_000}, {"m", 60_000_000}, {"s", 1_000_000}, {"ms", 1000}, {"us", 1}}
	var parts []string
	for _, u := range units {
		if us >= u.us {
			parts = append(parts, fmt.Sprintf("%d%s", us/u.us, u.name))
			us %= u.us
		}
	}
	if len(parts) == 0 {
		return "0s"
	}
	return strings.Join(parts, " ")
}

// Permission names: Iggy's short and long spellings.
var globalPermNames = map[string]func(*wire.GlobalPermissions){
	"m_srv": func(g *wire.GlobalPermissions) { g.ManageServers = true }, "manage_servers": func(g *wire.GlobalPermissions) { g.ManageServers = true },
	"r_srv": func(g *wire.GlobalPermissions) { g.ReadServers = true }, "read_servers": func(g *wire.GlobalPermissions) { g.ReadServers = true },
	"m_usr": func(g *wire.GlobalPermissions) { g.ManageUsers = true }, "manage_users": func(g *wire.GlobalPermissions) { g.ManageUsers = true },
	"r_usr": func(g *wire.GlobalPermissions) { g.ReadUsers = true }, "read_users": func(g *wire.GlobalPermissions) { g.ReadUsers = true },
	"m_str": func(g *wire.GlobalPermissions) { g.ManageStreams = true }, "manage_streams": func(g *wire.GlobalPermissions) { g.ManageStreams = true },
	"r_str": func(g *wire.GlobalPermissions) { g.ReadStreams = true }, "read_streams": func(g *wire.GlobalPermissions) { g.ReadStreams = true },
	"m_top": func(g *wire.GlobalPermissions) { g.ManageTopics = true }, "manage_topics": func(g *wire.GlobalPermissions) { g.ManageTopics = true },
	"r_top": func(g *wire.GlobalPermissions) { g.ReadTopics = true }, "read_topics": func(g *wire.GlobalPermissions) { g.ReadTopics = true },
	"p_msg": func(g *wire.GlobalPermissions) { g.PollMessages = true }, "poll_messages": func(g *wire.GlobalPermissions) { g.PollMessages = true },
	"s_msg": func(g *wire.GlobalPermissions) { g.SendMessages = true }, "send_messages": func(g *wire.GlobalPermissions) { g.SendMessages = true },
}

var streamPermNames = map[string]func(*wire.StreamPermissions){
	"m_str": func(p *wire.StreamPermissions) { p.ManageStream = true }, "manage_stream": func(p *wire.StreamPermissions) { p.ManageStream = true },
	"r_str": func(p *wire.StreamPermissions) { p.ReadStream = true }, "read_stream": func(p *wire.StreamPermissions) { p.ReadStream = true },
	"m_top": func(p *wire.StreamPermissions) { p.ManageTopics = true }, "manage_topics": func(p *wire.StreamPermissions) { p.ManageTopics = true },
	"r_top": func(p *wire.StreamPermissions) { p.ReadTopics = true }, "read_topics": func(p *wire.StreamPermissions) { p.ReadTopics = true },
	"p_msg": func(p *wire.StreamPermissions) { p.PollMessages = true }, "poll_messages": func(p *wire.StreamPermissions) { p.PollMessages = true },
	"s_msg": func(p *wire.StreamPermissions) { p.SendMessages = true }, "send_messages": func(p *wire.StreamPermissions) { p.SendMessages = true },
}

var topicPermNames = map[string]func(*wire.TopicPermissions){
	"m_top": func(p *wire.TopicPermissions) { p.ManageTopic = true }, "manage_topic": func(p *wire.TopicPermissions) { p.ManageTopic = true },
	"r_top": func(p *wire.TopicPermissions) { p.ReadTopic = true }, "read_topic": func(p *wire.TopicPermissions) { p.ReadTopic = true },
	"p_msg": func(p *wire.TopicPermissions) { p.PollMessages = true }, "poll_messages": func(p *wire.TopicPermissions) { p.PollMessages = true },
	"s_msg": func(p *wire.TopicPermissions) { p.SendMessages = true }, "send_messages": func(p *wire.TopicPermissions) { p.SendMessages = true },
}

// ParseGlobalPermissions parses "m_srv,r_srv,p_msg" (short or long names).
func ParseGlobalPermissions(s string) (wire.GlobalPermissions, error) {
	var g wire.GlobalPermissions
	for _, tok := range splitList(s) {
		set, ok := globalPermNames[tok]
		if !ok {
			return g, fmt.Errorf("unknown global permission %q (m_srv, r_srv, m_usr, r_usr, m_str, r_str, m_top, r_top, p_msg, s_msg)", tok)
		}
		set(&g)
	}
	return g, nil
}

// ParseStreamPermissions parses Iggy's stream permission spec
// STREAM_ID[:perm,...][#TOPIC_ID[:perm,...]]... where ids are numeric.
func ParseStreamPermissions(s string) (wire.StreamPermissions, error) {
	parts := strings.Split(s, "#")
	var sp wire.StreamPermissions
	id, perms, err := splitPermPart(parts[0])
	if err != nil {
		return sp, fmt.Errorf("invalid stream permissions %q: %v", s, err)
	}
	sp.StreamID = id
	for _, tok := range perms {
		set, ok := streamPermNames[tok]
		if !ok {
			return sp, fmt.Errorf("invalid stream permissions %q: unknown permission %q (m_str, r_str, m_top, r_top, p_msg, s_msg)", s, tok)
		}
		set(&sp)
	}
	for _, tp := range parts[1:] {
		tid, tperms, err := splitPermPart(tp)
		if err != nil {
			return sp, fmt.Errorf("invalid topic permissions %q in %q: %v", tp, s, err)
		}
		t := wire.TopicPermissions{TopicID: tid}
		for _, tok := range tperms {
			set, ok := topicPermNames[tok]
			if !ok {
				return sp, fmt.Errorf("invalid topic permissions %q: unknown permission %q (m_top, r_top, p_msg, s_msg)", tp, tok)
			}
			set(&t)
		}
		sp.Topics = append(sp.Topics, t)
	}
	return sp, nil
}

func splitPermPart(p string) (uint32, []string, error) {
	idText, rest, _ := strings.Cut(p, ":")
	id, err := strconv.ParseUint(idText, 10, 32)
	if err != nil {
		return 0, nil, fmt.Errorf("%q is not a numeric id", idText)
	}
	return uint32(id), splitList(rest), nil
}

func splitList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, strings.ToLower(t))
		}
	}
	return out
}

// u128Text renders a message id as the decimal u128 Iggy's CLI prints.
func u128Text(u wire.Uint128) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], u.Hi)
	binary.BigEndian.PutUint64(b[8:], u.Lo)
	return new(big.Int).SetBytes(b[:]).String()
}
