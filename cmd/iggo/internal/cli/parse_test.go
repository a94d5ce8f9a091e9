package cli

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestParseIdentifier(t *testing.T) {
	long := strings.Repeat("x", 256)
	tests := []struct {
		in      string
		numeric bool
		num     uint32
		name    string
		err     bool
	}{
		{in: "0", numeric: true, num: 0},
		{in: "42", numeric: true, num: 42},
		{in: "4294967295", numeric: true, num: math.MaxUint32},
		{in: "4294967296", name: "4294967296"}, // too big for u32: a name, as in Iggy
		{in: "prod", name: "prod"},
		{in: "7days", name: "7days"},
		{in: "-1", name: "-1"},
		{in: "ünïcode", name: "ünïcode"},
		{in: "", err: true},
		{in: long, err: true},
		{in: strings.Repeat("y", 255), name: strings.Repeat("y", 255)},
	}
	for _, tc := range tests {
		id, err := ParseIdentifier(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ParseIdentifier(%q) = %v, want error", tc.in, id)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseIdentifier(%q): %v", tc.in, err)
			continue
		}
		if n, ok := id.Numeric(); ok != tc.numeric || (ok && n != tc.num) {
			t.Errorf("ParseIdentifier(%q) numeric = %d,%v want %d,%v", tc.in, n, ok, tc.num, tc.numeric)
		}
		if name, ok := id.Name(); !tc.numeric && (!ok || name != tc.name) {
			t.Errorf("ParseIdentifier(%q) name = %q,%v want %q", tc.in, name, ok, tc.name)
		}
	}
}

func TestIDText(t *testing.T) {
	if got := idText(wire.NumericID(3)); got != "3" {
		t.Errorf("idText(3) = %q", got)
	}
	if got := idText(wire.MustNamedID("prod")); got != "'prod'" {
		t.Errorf("idText(prod) = %q", got)
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		spec  string
		kind  wire.HeaderKind
		value []byte
		text  string
		err   string
	}{
		{spec: "src:string:web", kind: wire.KindString, value: []byte("web"), text: "web"},
		{spec: "url:string:http://x:80/a", kind: wire.KindString, value: []byte("http://x:80/a"), text: "http://x:80/a"},
		{spec: "blob:raw:ab", kind: wire.KindRaw, value: []byte("ab"), text: "6162"},
		{spec: "ok:bool:true", kind: wire.KindBool, value: []byte{1}, text: "true"},
		{spec: "n:int8:-128", kind: wire.KindInt8, value: []byte{0x80}, text: "-128"},
		{spec: "n:uint16:513", kind: wire.KindUint16, value: []byte{1, 2}, text: "513"},
		{spec: "n:int32:-2", kind: wire.KindInt32, value: []byte{0xfe, 0xff, 0xff, 0xff}, text: "-2"},
		{spec: "n:uint64:1", kind: wire.KindUint64, value: []byte{1, 0, 0, 0, 0, 0, 0, 0}, text: "1"},
		{spec: "n:UINT8:7", kind: wire.KindUint8, value: []byte{7}, text: "7"},
		{spec: "n:int128:-1", kind: wire.KindInt128, value: bytes.Repeat([]byte{0xff}, 16), text: "-1"},
		{spec: "n:uint128:340282366920938463463374607431768211455", kind: wire.KindUint128, value: bytes.Repeat([]byte{0xff}, 16), text: "340282366920938463463374607431768211455"},
		{spec: "n:uint128:256", kind: wire.KindUint128, value: []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, text: "256"},
		{spec: "f:float64:1.5", kind: wire.KindFloat64, value: []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, text: "1.5"},
		{spec: "f:float32:0.25", kind: wire.KindFloat32, value: []byte{0, 0, 0x80, 0x3e}, text: "0.25"},
		{spec: "k:v", err: "want key:kind:value"},
		{spec: ":string:v", err: "1..255"},
		{spec: "k:text:v", err: "unknown kind"},
		{spec: "k:uint8:256", err: "not a uint8"},
		{spec: "k:int16:x", err: "not an int16"},
		{spec: "k:bool:maybe", err: "true or false"},
		{spec: "k:string:", err: "1..255"},
		{spec: "k:uint128:-1", err: "not a uint128"},
		{spec: "k:int128:170141183460469231731687303715884105728", err: "not a int128"},
	}
	for _, tc := range tests {
		e, err := ParseHeader(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHeader(%q) error = %v, want containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHeader(%q): %v", tc.spec, err)
			continue
		}
		if e.Value.Kind != tc.kind || !bytes.Equal(e.Value.Value, tc.value) {
			t.Errorf("ParseHeader(%q) = %v %x, want %v %x", tc.spec, e.Value.Kind, e.Value.Value, tc.kind, tc.value)
		}
		if got := HeaderValueText(e.Value); got != tc.text {
			t.Errorf("HeaderValueText(%q) = %q, want %q", tc.spec, got, tc.text)
		}
	}
}

func TestParseHeadersCommaAndDuplicates(t *testing.T) {
	hs, err := ParseHeaders([]string{"a:string:x,b:uint8:1", "c:bool:false"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, h := range hs {
		keys = append(keys, string(h.Key.Value))
	}
	if strings.Join(keys, ",") != "a,b,c" {
		t.Errorf("keys = %v", keys)
	}
	if _, err := ParseHeaders([]string{"a:string:x", "a:uint8:1"}); err == nil {
		t.Error("duplicate header key accepted")
	}
	// The encoded block must be what the server validates.
	b, err := wire.AppendUserHeaders(nil, hs)
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.ValidateUserHeaders(b); err != nil {
		t.Fatalf("encoded headers invalid: %v", err)
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		err  bool
	}{
		{"1000", 1000, false},
		{"100MB", 100_000_000, false},
		{"100mb", 100_000_000, false},
		{"1.5 GB", 1_500_000_000, false},
		{"64KiB", 65536, false},
		{"1 GiB", 1 << 30, false},
		{"2TB", 2_000_000_000_000, false},
		{"12 B", 12, false},
		{"MB", 0, true},
		{"10XB", 0, true},
		{"", 0, true},
		{"1e30", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseByteSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for in, want := range map[uint64]string{0: "0 B", 999: "999 B", 1000: "1.00 kB", 1_500_000: "1.50 MB", 3_000_000_000: "3.00 GB"} {
		if got := FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	const s = 1_000_000
	tests := []struct {
		in   string
		want uint64
		err  bool
	}{
		{"unlimited", math.MaxUint64, false},
		{"none", math.MaxUint64, false},
		{"server_default", 0, false},
		{"1s", s, false},
		{"15days", 15 * 86400 * s, false},
		{"1h 30m", 5400 * s, false},
		{"1day1hour1min1sec", (86400 + 3600 + 60 + 1) * s, false},
		{"250ms", 250_000, false},
		{"soon", 0, true},
		{"0s", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseExpiry(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseExpiry(%q) = %d, %v; want %d, err %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for in, want := range map[uint64]string{math.MaxUint64: "unlimited", 0: "server_default", 90 * s: "1m 30s", 86400*s + 5: "1days 5us"} {
		if got := FormatExpiry(in); got != want {
			t.Errorf("FormatExpiry(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePermissions(t *testing.T) {
	g, err := ParseGlobalPermissions("m_srv, read_servers,P_MSG")
	if err != nil {
		t.Fatal(err)
	}
	if !g.ManageServers || !g.ReadServers || !g.PollMessages || g.SendMessages || g.ManageUsers {
		t.Errorf("global = %+v", g)
	}
	if _, err := ParseGlobalPermissions("m_srv,fly"); err == nil || !strings.Contains(err.Error(), "fly") {
		t.Errorf("unknown global permission: %v", err)
	}
	sp, err := ParseStreamPermissions("4:manage_stream,r_top#1:s_msg,p_msg#2:manage_topic")
	if err != nil {
		t.Fatal(err)
	}
	want := wire.StreamPermissions{StreamID: 4, ManageStream: true, ReadTopics: true, Topics: []wire.TopicPermissions{
		{TopicID: 1, SendMessages: true, PollMessages: true}, {TopicID: 2, ManageTopic: true}}}
	if sp.StreamID != want.StreamID || sp.ManageStream != want.ManageStream || sp.ReadTopics != want.ReadTopics || len(sp.Topics) != 2 ||
		sp.Topics[0] != want.Topics[0] || sp.Topics[1] != want.Topics[1] {
		t.Errorf("stream permissions = %+v, want %+v", sp, want)
	}
	bare, err := ParseStreamPermissions("7")
	if err != nil || bare.StreamID != 7 || bare.ReadStream {
		t.Errorf("bare stream = %+v, %v", bare, err)
	}
	for _, bad := range []string{"x:m_str", "1:m_srv", "1#y:s_msg", "1#2:m_str"} {
		if _, err := ParseStreamPermissions(bad); err == nil {
			t.Errorf("ParseStreamPermissions(%q) accepted", bad)
		}
	}
	// What we build must encode.
	p := wire.Permissions{Global: g, Streams: []wire.StreamPermissions{sp}}
	if _, err := wire.DecodePermissions(p.AppendTo(nil)); err != nil {
		t.Fatalf("permissions do not round-trip: %v", err)
	}
	txt := permissionsText(&p)
	mustContain(t, txt, "global: m_srv,r_srv,p_msg", "stream 4: m_str,r_top", "stream 4 topic 1: p_msg,s_msg", "stream 4 topic 2: m_top")
}

func TestU128Text(t *testing.T) {
	if got := u128Text(wire.Uint128{Lo: 5}); got != "5" {
		t.Errorf("u128Text = %s", got)
	}
	if got := u128Text(wire.Uint128{Hi: 1}); got != "18446744073709551616" {
		t.Errorf("u128Text = %s", got)
	}
}

func TestSplitBatches(t *testing.T) {
	mk := func(n, size int) []wire.Message {
		out := make([]wire.Message, n)
		for i := range out {
			out[i].Payload = make([]byte, size)
		}
		return out
	}
	tests := []struct {
		msgs  []wire.Message
		sizes []int
	}{
		{mk(1, 1), []int{1}},
		{mk(2500, 10), []int{1000, 1000, 500}},
		{mk(5, sendBatchBytes/2), []int{2, 2, 1}},
		{mk(2, sendBatchBytes+1), []int{1, 1}},
	}
	for i, tc := range tests {
		var got []int
		total := 0
		for _, b := range splitBatches(tc.msgs) {
			got = append(got, len(b))
			total += len(b)
		}
		if total != len(tc.msgs) || len(got) != len(tc.sizes) {
			t.Errorf("case %d: batches %v, want %v", i, got, tc.sizes)
			continue
		}
		for j := range got {
			if got[j] != tc.sizes[j] {
				t.Errorf("case %d: batches %v, want %v", i, got, tc.sizes)
			}
		}
	}
}

func TestMessageRecordsRoundTrip(t *testing.T) {
	hdrs, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("k"), Value: wire.Uint8Value(3)}})
	if err != nil {
		t.Fatal(err)
	}
	in := []wire.PolledMessage{
		{Offset: 7, Timestamp: 100, OriginTimestamp: 90, ID: wire.Uint128{Lo: 1, Hi: 2}, Checksum: 99, Payload: []byte("hello")},
		{Offset: 8, Timestamp: 101, OriginTimestamp: 91, ID: wire.Uint128{Lo: 3}, Payload: []byte("x"), UserHeaders: hdrs},
	}
	var b []byte
	for _, m := range in {
		b = appendMessageRecord(b, m)
	}
	if len(b) != 2*msgRecordHeader+5+1+len(hdrs) {
		t.Fatalf("file is %d bytes", len(b))
	}
	// Iggy's layout: id little-endian at 8, payload length at 52.
	if b[8] != 1 || b[16] != 2 || b[52] != 5 {
		t.Fatalf("layout: % x", b[:64])
	}
	out, err := decodeMessageRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("decoded %d records", len(out))
	}
	for i := range in {
		a, z := in[i], out[i]
		if a.Offset != z.Offset || a.Timestamp != z.Timestamp || a.OriginTimestamp != z.OriginTimestamp || a.ID != z.ID ||
			a.Checksum != z.Checksum || !bytes.Equal(a.Payload, z.Payload) || !bytes.Equal(a.UserHeaders, z.UserHeaders) {
			t.Errorf("record %d: %+v != %+v", i, z, a)
		}
	}
	for _, cut := range []int{1, msgRecordHeader - 1, msgRecordHeader + 2, len(b) - 1} {
		if _, err := decodeMessageRecords(b[:cut]); err == nil {
			t.Errorf("truncated to %d bytes: decoded", cut)
		}
	}
	bad := append([]byte(nil), b...)
	bad[52] = 0 // empty payload
	if _, err := decodeMessageRecords(bad); err == nil {
		t.Error("empty payload accepted")
	}
}

func FuzzDecodeMessageRecords(f *testing.F) {
	f.Add(appendMessageRecord(nil, wire.PolledMessage{Payload: []byte("seed")}))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 80))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := decodeMessageRecords(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes, except the reserved
		// field, which is not kept.
		var again []byte
		for _, m := range msgs {
			again = appendMessageRecord(again, m)
		}
		if len(again) != len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(again), len(b))
		}
		for off := 0; off < len(b); {
			if !bytes.Equal(again[off:off+56], b[off:off+56]) {
				t.Fatalf("record at %d differs", off)
			}
			pl := int(b[off+52]) | int(b[off+53])<<8 | int(b[off+54])<<16 | int(b[off+55])<<24
			hl := int(b[off+48]) | int(b[off+49])<<8 | int(b[off+50])<<16 | int(b[off+51])<<24
			off += msgRecordHeader + pl + hl
		}
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{"a:string:b", "n:uint128:5", "x:int128:-9", "f:float32:1e3", "::", "k:raw:\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		e, err := ParseHeader(spec)
		if err != nil {
			return
		}
		b, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{e})
		if err != nil {
			t.Fatalf("parsed header %q does not encode: %v", spec, err)
		}
		if err := wire.ValidateUserHeaders(b); err != nil {
			t.Fatalf("parsed header %q is invalid on the wire: %v", spec, err)
		}
		_ = HeaderValueText(e.Value)
	})
}

func TestRedactArgs(t *testing.T) {
	env := &Env{IO: IO{Getenv: func(string) string { return "" }}}
	root := env.newRoot(nil)
	pp, _, err := root.Find([]string{"bench", "pp"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ in, want string }{
		{"-u iggy -p secret bench pp -p 4 -t 10ms", "-u iggy -p ****** bench pp -p 4 -t 10ms"},
		{"--password=secret --token tok -q bench pp", "--password=****** --token ****** -q bench pp"},
		{"-psecret -tTOK bench pp", "-p****** -t****** bench pp"},
		{"bench pp --password secret --token=tok --username bob -p 2", "bench pp --password ****** --token=****** --username bob -p 2"},
		{"-q -u iggy bench pp -m 1000", "-q -u iggy bench pp -m 1000"},
		{"--tcp-tls-enabled -p x bench pp", "--tcp-tls-enabled -p ****** bench pp"},
	}
	for _, c := range cases {
		got := strings.Join(redactArgs(strings.Fields(c.in), root.Flags(), pp.Flags()), " ")
		if got != c.want {
			t.Errorf("redactArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
