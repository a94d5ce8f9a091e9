package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/wire"
)

func TestByteSize(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{
		{0, "0 B"}, {1, "1 B"}, {999, "999 B"}, {1000, "1 KB"}, {1024, "1 KiB"}, {1536, "1536 B"},
		{2048, "2 KiB"}, {1_000_000, "1 MB"}, {1 << 20, "1 MiB"}, {1 << 30, "1 GiB"}, {5e9, "5 GB"}, {1234567, "1234567 B"},
	} {
		if got := byteSize(c.n).String(); got != c.want {
			t.Errorf("byteSize(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	b, _ := json.Marshal(byteSize(2048))
	if string(b) != `"2 KiB"` {
		t.Fatalf("json %s", b)
	}
}

func TestSnakeName(t *testing.T) {
	for in, want := range map[string]string{
		"StreamIdNotFound": "stream_id_not_found", "Unauthenticated": "unauthenticated",
		"InvalidTlsDomain": "invalid_tls_domain", "AccessTokenMissing": "access_token_missing",
		"TcpError": "tcp_error", "InvalidJwtAlgorithm": "invalid_jwt_algorithm",
	} {
		if got := snakeName(in); got != want {
			t.Errorf("snakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStatusOf(t *testing.T) {
	for code, want := range map[wire.Code]int{
		wire.CodeStreamIdNotFound: 404, wire.CodeTopicIdNotFound: 404, wire.CodeConsumerOffsetNotFound: 404,
		wire.CodeUnauthenticated: 401, wire.CodeAccessTokenMissing: 401, wire.CodeInvalidPersonalAccessToken: 401,
		wire.CodeUnauthorized: 403, wire.CodeTransientNotAccepted: 503, wire.CodeTransientNotCommitted: 503,
		wire.CodeInvalidCredentials: 400, wire.CodeStreamNameAlreadyExists: 400,
	} {
		if got := statusOf(code); got != want {
			t.Errorf("statusOf(%v) = %d, want %d", code, got, want)
		}
	}
	e := codeError(wire.CodeStreamNameAlreadyExists)
	if e.body.ID != 1012 || e.body.Code != "stream_name_already_exists" || e.body.Field == nil || *e.body.Field != "name" || e.retry {
		t.Fatalf("%+v", e.body)
	}
	if !codeError(wire.CodeTransientNotAccepted).retry {
		t.Fatal("58 without Retry-After")
	}
}

func TestParseMessageID(t *testing.T) {
	for _, c := range []struct {
		in   string
		want wire.Uint128
		err  bool
	}{
		{"", wire.Uint128{}, false}, {"null", wire.Uint128{}, false}, {"42", wire.Uint128{Lo: 42}, false},
		{`"42"`, wire.Uint128{Lo: 42}, false},
		{`"340282366920938463463374607431768211455"`, wire.Uint128{Lo: ^uint64(0), Hi: ^uint64(0)}, false},
		{`"01020304-0506-0708-090a-0b0c0d0e0f10"`, wire.Uint128{Hi: 0x0102030405060708, Lo: 0x090a0b0c0d0e0f10}, false},
		{"-1", wire.Uint128{}, true}, {`"zz"`, wire.Uint128{}, true}, {"1.5", wire.Uint128{}, true},
		{"18446744073709551616", wire.Uint128{}, true},
	} {
		got, err := parseMessageID(json.RawMessage(c.in))
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("parseMessageID(%s) = %+v, %v", c.in, got, err)
		}
	}
}

func TestHeaderText(t *testing.T) {
	for _, c := range []struct {
		v    wire.HeaderValue
		want string
	}{
		{wire.StringValue("x"), "x"}, {wire.BoolValue(true), "true"}, {wire.Uint64Value(1 << 40), "1099511627776"},
		{wire.Int32Value(-5), "-5"}, {wire.Uint32Value(7), "7"}, {wire.RawValue([]byte{1, 2}), "[1, 2]"},
		{wire.Float64Value(1.5), "1.5"},
	} {
		if got := headerText(c.v); got != c.want {
			t.Errorf("headerText(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func jwtConfig() config.HTTPJWTConfig {
	return config.HTTPJWTConfig{Algorithm: "HS256", Issuer: "iggy.apache.org", Audience: "iggy.apache.org",
		ValidIssuers: []string{"iggy.apache.org"}, ValidAudiences: []string{"iggy.apache.org"},
		AccessTokenExpiry: config.D(time.Hour), ClockSkew: config.D(5 * time.Second),
		EncodingSecret: "0123456789abcdef0123456789abcdef", DecodingSecret: "0123456789abcdef0123456789abcdef"}
}

func TestJWT(t *testing.T) {
	m, err := newJWTManager(jwtConfig(), "", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	m.now = func() time.Time { return now }
	tok, err := m.generate(7)
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.decode(tok.token)
	if err != nil || v.user != 7 || v.expiry != uint64(now.Unix())+3600 || tok.expiry != v.expiry || len(v.jti) != 36 {
		t.Fatalf("decode: %+v %v", v, err)
	}
	// aud is a single string, as Iggy writes it.
	parts := strings.Split(tok.token, ".")
	var claims map[string]any
	b, _ := jwt.NewParser().DecodeSegment(parts[1])
	_ = json.Unmarshal(b, &claims)
	if claims["aud"] != "iggy.apache.org" || claims["sub"] != "7" || claims["nbf"] == nil {
		t.Fatalf("claims %v", claims)
	}
	// Expiry with clock skew: valid 4 s after exp, refused 6 s after.
	now = now.Add(time.Hour + 4*time.Second)
	if _, err := m.decode(tok.token); err != nil {
		t.Fatalf("within the clock skew: %v", err)
	}
	now = now.Add(2 * time.Second)
	if _, err := m.decode(tok.token); err == nil {
		t.Fatal("expired token accepted")
	}
	now = time.Unix(1_800_000_000, 0)
	// Tampered signature, another key, another issuer or audience, alg none.
	if _, err := m.decode(tok.token[:len(tok.token)-2] + "xx"); err == nil {
		t.Fatal("tampered token accepted")
	}
	other := jwtConfig()
	other.EncodingSecret, other.DecodingSecret = "another-secret-another-secret-12", "another-secret-another-secret-12"
	m2, _ := newJWTManager(other, "", zap.NewNop())
	m2.now = m.now
	if t2, _ := m2.generate(7); t2.token != "" {
		if _, err := m.decode(t2.token); err == nil {
			t.Fatal("token of another key accepted")
		}
	}
	iss := jwtConfig()
	iss.Issuer = "someone.else"
	m3, _ := newJWTManager(iss, "", zap.NewNop())
	m3.now = m.now
	if t3, _ := m3.generate(7); t3.token != "" {
		if _, err := m.decode(t3.token); err == nil {
			t.Fatal("token of another issuer accepted")
		}
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "0", "iss": "iggy.apache.org", "aud": "iggy.apache.org",
		"exp": now.Add(time.Hour).Unix(), "nbf": now.Unix(), "iat": now.Unix(), "jti": "x"}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if _, err := m.decode(none); err == nil {
		t.Fatal("alg none accepted")
	}
	// not_before beyond the skew: refused until then.
	nb := jwtConfig()
	nb.NotBefore = config.D(time.Minute)
	m4, _ := newJWTManager(nb, "", zap.NewNop())
	m4.now = m.now
	t4, _ := m4.generate(1)
	if _, err := m4.decode(t4.token); err == nil {
		t.Fatal("token before its nbf accepted")
	}
}

func TestJWTDerivedKey(t *testing.T) {
	c := jwtConfig()
	c.EncodingSecret, c.DecodingSecret = "", ""
	a, _ := newJWTManager(c, "cluster-psk-cluster-psk-cluster-psk", zap.NewNop())
	b, _ := newJWTManager(c, "cluster-psk-cluster-psk-cluster-psk", zap.NewNop())
	d, _ := newJWTManager(c, "another-psk-another-psk-another-ps", zap.NewNop())
	r1, _ := newJWTManager(c, "", zap.NewNop())
	r2, _ := newJWTManager(c, "", zap.NewNop())
	tok, _ := a.generate(3)
	if _, err := b.decode(tok.token); err != nil {
		t.Fatalf("nodes sharing the cluster key disagree: %v", err)
	}
	if _, err := d.decode(tok.token); err == nil {
		t.Fatal("another cluster key verified the token")
	}
	if string(a.key) == string(r1.key) || string(r1.key) == string(r2.key) || len(a.key) != 64 {
		t.Fatal("random keys repeat or equal the derived one")
	}
	c.EncodingSecret, c.DecodingSecret = "a-secret-of-enough-length-0123456", "another-secret-of-enough-len-0123"
	if _, err := newJWTManager(c, "", zap.NewNop()); err == nil {
		t.Fatal("different encoding and decoding secrets accepted")
	}
}

func TestBearer(t *testing.T) {
	r, _ := http.NewRequest("GET", "/", nil)
	if _, ok := bearer(r); ok {
		t.Fatal("bearer without header")
	}
	r.Header.Set("Authorization", "Basic abc")
	if _, ok := bearer(r); ok {
		t.Fatal("basic taken as bearer")
	}
	r.Header.Set("Authorization", "Bearer abc")
	if v, ok := bearer(r); !ok || v != "abc" {
		t.Fatalf("bearer %q %v", v, ok)
	}
}

type fakeSession struct{ closed bool }

func (f *fakeSession) Do(context.Context, wire.CommandCode, []byte, func([]byte) error) error {
	return nil
}
func (f *fakeSession) Close() { f.closed = true }

// TestSessionTable: one session per credential, expired ones dropped, a
// full table of live ones refuses (503) unless one has idled long enough.
func TestSessionTable(t *testing.T) {
	tb := newSessionTable(2)
	now := uint64(time.Now().Unix())
	open := func() Session { return &fakeSession{} }
	a, _ := tb.get(&identity{key: "a", expiry: now + 100}, open)
	if b, _ := tb.get(&identity{key: "a", expiry: now + 100}, open); b != a {
		t.Fatal("a second session for one credential")
	}
	tb.get(&identity{key: "b", expiry: now + 100}, open)
	if _, e := tb.get(&identity{key: "c", expiry: now + 100}, open); e == nil || e.status != 503 {
		t.Fatalf("a full table of live sessions took another: %v", e)
	}
	tb.m["a"].lastUse = time.Now().Add(-2 * sessionIdle)
	if _, e := tb.get(&identity{key: "c"}, open); e != nil || !a.(*fakeSession).closed || tb.len() != 2 {
		t.Fatalf("idle session not reclaimed: %v", e)
	}
	tb.m["b"].expiry = now - 1
	if _, e := tb.get(&identity{key: "d"}, open); e != nil || tb.len() != 2 {
		t.Fatalf("expired session not dropped: %v", e)
	}
	tb.drop("d", nil)
	if tb.len() != 1 {
		t.Fatal("drop")
	}
}
