package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/zeebo/blake3"
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
)

// jwtKeyContext is the BLAKE3 derive_key context Iggy uses to turn the
// cluster pre-shared key into the HS256 secret when no http.jwt secret is
// configured, so every node verifies every node's tokens. A frozen string:
// changing it changes the key.
const jwtKeyContext = "apache-iggy server http-jwt v1 psk->hs256-key"

// neverExpireSecs is the expiry stamped on a token that never expires, as
// Iggy does (fits u32, far in the future).
const neverExpireSecs = 1_000_000_000

func init() {
	// Iggy's aud claim is a single string, not a one-element array.
	jwt.MarshalSingleStringAsArray = false
}

// claims is Iggy's claim set.
type claims struct {
	jwt.RegisteredClaims
}

// issued is a minted access token.
type issued struct {
	token  string
	expiry uint64 // unix seconds
}

// jwtManager signs and verifies self-issued access tokens.
type jwtManager struct {
	method   jwt.SigningMethod
	key      []byte
	issuer   string
	audience string
	expiry   time.Duration
	nbf      time.Duration
	parser   *jwt.Parser
	now      func() time.Time

	validIssuers, validAudiences []string
}

// newJWTManager builds the manager from [http.jwt]. Secrets: both empty →
// derived from the cluster key when cluster.auth is on (psk non-empty),
// else random for this run; one empty → the other; both set → they must be
// equal (HS* signs and verifies with one key).
func newJWTManager(c config.HTTPJWTConfig, psk string, log *zap.Logger) (*jwtManager, error) {
	if len(c.TrustedIssuers) > 0 {
		// Refused at boot, before storage is touched (replica builds the
		// HTTP API with its other listeners).
		ti := c.TrustedIssuers[0]
		return nil, fmt.Errorf("http.jwt.trusted_issuers[0] (issuer %q, audience %q, jwks_url %q, user_id %d): tokens of external issuers (JWKS) are not accepted by this build; remove the entries",
			ti.Issuer, ti.Audience, ti.JWKSURL, ti.UserID)
	}
	var method jwt.SigningMethod
	switch c.Algorithm {
	case "HS256":
		method = jwt.SigningMethodHS256
	case "HS384":
		method = jwt.SigningMethodHS384
	case "HS512":
		method = jwt.SigningMethodHS512
	default:
		return nil, fmt.Errorf("http.jwt.algorithm: %q is not HS256, HS384 or HS512", c.Algorithm)
	}
	enc, dec := c.EncodingSecret, c.DecodingSecret
	switch {
	case enc == "" && dec == "" && psk != "":
		var k [32]byte
		blake3.DeriveKey(jwtKeyContext, []byte(psk), k[:])
		enc = hex.EncodeToString(k[:])
		dec = enc
		log.Info("http.jwt: no secret configured; tokens are signed with a key derived from cluster.auth.shared_secret and are valid on every node")
	case enc == "" && dec == "":
		var b [48]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		enc = base64.RawURLEncoding.EncodeToString(b[:])
		dec = enc
		log.Warn("http.jwt: no secret configured; generated a random one, so tokens are invalid after a restart (set http.jwt.encoding_secret and decoding_secret)")
	case enc == "":
		enc = dec
	case dec == "":
		dec = enc
	case enc != dec:
		return nil, errors.New("http.jwt.encoding_secret and http.jwt.decoding_secret differ, but HS256/384/512 tokens are signed and verified with one shared secret")
	}
	key := []byte(enc)
	if c.UseBase64Secret {
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, fmt.Errorf("http.jwt.use_base64_secret: the secret is not base64: %w", err)
		}
		key = b
	}
	m := &jwtManager{method: method, key: key, issuer: c.Issuer, audience: c.Audience,
		expiry: c.AccessTokenExpiry.Duration, nbf: c.NotBefore.Duration, now: time.Now}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{method.Alg()}),
		jwt.WithLeeway(c.ClockSkew.Duration),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(func() time.Time { return m.now() }),
	}
	m.parser = jwt.NewParser(opts...)
	m.validIssuers = c.ValidIssuers
	m.validAudiences = c.ValidAudiences
	return m, nil
}

// generate mints an access token for user.
func (m *jwtManager) generate(user uint32) (issued, error) {
	now := m.now()
	iat := now.Unix()
	exp := iat + int64(m.expiry/time.Second)
	if m.expiry <= 0 {
		exp = iat + neverExpireSecs
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return issued{}, err
	}
	// A version-7 UUID: 48-bit millisecond time, then random bits.
	ms := uint64(now.UnixMilli())
	for i := 0; i < 6; i++ {
		id[i] = byte(ms >> (40 - 8*i))
	}
	id[6] = 0x70 | id[6]&0x0f
	id[8] = 0x80 | id[8]&0x3f
	jti := fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	c := claims{RegisteredClaims: jwt.RegisteredClaims{
		ID:        jti,
		Subject:   strconv.FormatUint(uint64(user), 10),
		Audience:  jwt.ClaimStrings{m.audience},
		Issuer:    m.issuer,
		IssuedAt:  jwt.NewNumericDate(time.Unix(iat, 0)),
		ExpiresAt: jwt.NewNumericDate(time.Unix(exp, 0)),
		NotBefore: jwt.NewNumericDate(time.Unix(iat+int64(m.nbf/time.Second), 0)),
	}}
	s, err := jwt.NewWithClaims(m.method, c).SignedString(m.key)
	if err != nil {
		return issued{}, err
	}
	return issued{token: s, expiry: uint64(exp)}, nil
}

// verified is what a valid token says.
type verified struct {
	user   uint32
	jti    string
	expiry uint64 // unix seconds
}

// decode verifies signature, algorithm, expiry and not-before (with the
// clock skew), issuer and audience.
func (m *jwtManager) decode(token string) (verified, error) {
	var c claims
	t, err := m.parser.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return m.key, nil })
	if err != nil || !t.Valid {
		return verified{}, errors.New("invalid token")
	}
	if c.NotBefore == nil {
		return verified{}, errors.New("token has no nbf")
	}
	if !contains(m.validIssuers, c.Issuer) {
		return verified{}, errors.New("token issuer not accepted")
	}
	okAud := false
	for _, a := range c.Audience {
		if contains(m.validAudiences, a) {
			okAud = true
		}
	}
	if !okAud {
		return verified{}, errors.New("token audience not accepted")
	}
	u, err := strconv.ParseUint(c.Subject, 10, 32)
	if err != nil {
		return verified{}, errors.New("token subject is not a user id")
	}
	if c.ID == "" {
		return verified{}, errors.New("token has no jti")
	}
	return verified{user: uint32(u), jti: c.ID, expiry: uint64(c.ExpiresAt.Unix())}, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// tokenID is the revocation key of a token: the first 16 bytes of SHA-256
// of its jti.
func tokenID(jti string) [16]byte {
	sum := sha256.Sum256([]byte(jti))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}
