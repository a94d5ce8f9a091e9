package plane

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/iggo/iggo/vsr"
)

// HandshakeSize is the fixed size of every handshake message.
const HandshakeSize = 128

// handshakeVersion is the handshake format and transcript version. A peer
// speaking another version is refused, so a format change is a whole-cluster
// restart (like the frame protocol version).
const handshakeVersion = 1

var handshakeMagic = [8]byte{'I', 'G', 'G', 'O', 'R', 'E', 'P', 'L'}

// Step is a handshake message's position in the exchange.
type Step uint8

const (
	StepHello     Step = 1 // dialer → acceptor
	StepChallenge Step = 2 // acceptor → dialer
	StepFinish    Step = 3 // dialer → acceptor
)

// Flags of a handshake message.
const (
	FlagAuth uint8 = 1 << 0 // the sender authenticates with the cluster key
	FlagTLS  uint8 = 1 << 1 // the connection runs inside TLS
	flagMask       = FlagAuth | FlagTLS
)

// Byte offsets in a handshake message (see the package doc).
const (
	hsOffMagic    = 0
	hsOffVersion  = 8
	hsOffStep     = 9
	hsOffFlags    = 10
	hsOffSender   = 11
	hsOffReceiver = 12
	hsOffRoster   = 13
	hsOffReserved = 14
	hsOffCluster  = 16
	hsOffNonce    = 32
	hsOffKeyID    = 64
	hsOffKeyID2   = 72
	hsOffDataKey  = 80
	hsOffMAC      = 96
)

// KeyID names a link key without revealing it: the first 8 bytes of
// HMAC-SHA256(key, "iggo key id").
type KeyID [8]byte

// Handshake is one decoded handshake message.
type Handshake struct {
	Step       Step
	Flags      uint8
	Sender     uint8 // the sender's replica id (claimed; proven by MAC)
	Receiver   uint8 // the replica id the sender believes it talks to
	RosterSize uint8
	Cluster    vsr.Checksum
	Nonce      [32]byte // fresh per connection (hello, challenge); zero in finish
	KeyID      KeyID    // hello: the sender's current key; then the chosen key
	KeyID2     KeyID    // hello only: the sender's previous key, or zero
	MAC        [32]byte // challenge, finish: the transcript MAC; zero in hello
	// DataKeyID names the sender's encryption.key (Config.DataKeyID), zero
	// with encryption at rest off; peers must agree.
	DataKeyID [16]byte
}

// ErrHandshakeMalformed is wrapped by every DecodeHandshake error.
var ErrHandshakeMalformed = errors.New("plane: malformed handshake message")

// Encode writes h in its 128-byte wire form.
func (h *Handshake) Encode() [HandshakeSize]byte {
	var b [HandshakeSize]byte
	copy(b[hsOffMagic:], handshakeMagic[:])
	b[hsOffVersion] = handshakeVersion
	b[hsOffStep] = byte(h.Step)
	b[hsOffFlags] = h.Flags
	b[hsOffSender] = h.Sender
	b[hsOffReceiver] = h.Receiver
	b[hsOffRoster] = h.RosterSize
	copy(b[hsOffCluster:], h.Cluster[:])
	copy(b[hsOffNonce:], h.Nonce[:])
	copy(b[hsOffKeyID:], h.KeyID[:])
	copy(b[hsOffKeyID2:], h.KeyID2[:])
	copy(b[hsOffDataKey:], h.DataKeyID[:])
	copy(b[hsOffMAC:], h.MAC[:])
	return b
}

func isZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// DecodeHandshake parses and strictly checks one handshake message: magic,
// version, a known step, no unknown flag, zero reserved bytes, and the
// per-step shape (a nonce in hello and challenge and none in finish; a MAC in
// challenge and finish and none in hello; a second key id only in hello). It
// never panics. It does not check anything that depends on the receiver
// (cluster, ids, keys): the handshake state machines do.
func DecodeHandshake(b []byte) (Handshake, error) {
	bad := func(format string, args ...any) (Handshake, error) {
		return Handshake{}, fmt.Errorf("%w: %s", ErrHandshakeMalformed, fmt.Sprintf(format, args...))
	}
	if len(b) != HandshakeSize {
		return bad("%d bytes, want %d", len(b), HandshakeSize)
	}
	if [8]byte(b[hsOffMagic:hsOffMagic+8]) != handshakeMagic {
		return bad("bad magic %x", b[:8])
	}
	if b[hsOffVersion] != handshakeVersion {
		return bad("version %d, want %d", b[hsOffVersion], handshakeVersion)
	}
	h := Handshake{
		Step:       Step(b[hsOffStep]),
		Flags:      b[hsOffFlags],
		Sender:     b[hsOffSender],
		Receiver:   b[hsOffReceiver],
		RosterSize: b[hsOffRoster],
		Cluster:    vsr.Checksum(b[hsOffCluster : hsOffCluster+16]),
		Nonce:      [32]byte(b[hsOffNonce : hsOffNonce+32]),
		KeyID:      KeyID(b[hsOffKeyID : hsOffKeyID+8]),
		KeyID2:     KeyID(b[hsOffKeyID2 : hsOffKeyID2+8]),
		MAC:        [32]byte(b[hsOffMAC : hsOffMAC+32]),
		DataKeyID:  [16]byte(b[hsOffDataKey : hsOffDataKey+16]),
	}
	if h.Step < StepHello || h.Step > StepFinish {
		return bad("unknown step %d", h.Step)
	}
	if h.Flags&^flagMask != 0 {
		return bad("unknown flags %#x", h.Flags)
	}
	if !isZero(b[hsOffReserved:hsOffCluster]) {
		return bad("reserved bytes not zero")
	}
	if h.RosterSize == 0 || h.Sender == h.Receiver {
		return bad("sender %d, receiver %d, roster size %d", h.Sender, h.Receiver, h.RosterSize)
	}
	if h.KeyID == (KeyID{}) {
		return bad("zero key id")
	}
	nonceZero, macZero := isZero(h.Nonce[:]), isZero(h.MAC[:])
	switch h.Step {
	case StepHello:
		if nonceZero || !macZero {
			return bad("hello needs a nonce and no MAC")
		}
	case StepChallenge:
		if nonceZero || macZero || h.KeyID2 != (KeyID{}) {
			return bad("challenge needs a nonce, a MAC and one key id")
		}
	case StepFinish:
		if !nonceZero || macZero || h.KeyID2 != (KeyID{}) {
			return bad("finish needs a MAC, no nonce and one key id")
		}
	}
	return h, nil
}

// ClusterID derives the 128-bit cluster id from the cluster name: the first
// 16 bytes of SHA-256("iggo cluster id\x00" ‖ name). Every frame carries it
// and the handshake binds it, so nodes of two clusters never talk even with
// the same key; the node stamps the same value into vsr.Config.Cluster and
// its superblocks.
func ClusterID(name string) vsr.Checksum {
	h := sha256.New()
	h.Write([]byte("iggo cluster id\x00"))
	h.Write([]byte(name))
	return vsr.Checksum(h.Sum(nil)[:16])
}

// linkKey is a MAC key derived from one configured secret.
type linkKey struct {
	id  KeyID
	mac []byte
}

// unauthenticatedSecret stands in for the key when cluster.auth is off: the
// handshake then still checks cluster, ids and the transcript's integrity,
// but proves nothing, since anyone can compute this key.
const unauthenticatedSecret = "iggo replica plane: authentication disabled"

// deriveKey turns a configured secret into a MAC key bound to this cluster:
// HKDF-SHA256(secret, salt "iggo replica-plane v1", info cluster id), 32
// bytes. Binding the cluster id means a key shared by two clusters still
// yields different link keys.
func deriveKey(secret []byte, cluster vsr.Checksum) linkKey {
	k, err := hkdf.Key(sha256.New, secret, []byte("iggo replica-plane v1"), string(cluster[:]), 32)
	if err != nil {
		panic(fmt.Sprintf("plane: hkdf: %v", err)) // only for out-of-range lengths
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte("iggo key id"))
	return linkKey{id: KeyID(m.Sum(nil)[:8]), mac: k}
}

// Transcript labels keep a challenge MAC from ever verifying as a finish MAC
// (reflection) and tie both to this handshake version.
const (
	labelChallenge = "iggo-replica/1 challenge"
	labelFinish    = "iggo-replica/1 finish"
)

// transcriptMAC is HMAC-SHA256(key, label ‖ parts...), each part
// length-prefixed (u32 LE) so no two transcripts concatenate alike.
func transcriptMAC(k []byte, label string, parts ...[]byte) [32]byte {
	m := hmac.New(sha256.New, k)
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(label)))
	m.Write(n[:])
	m.Write([]byte(label))
	for _, p := range parts {
		binary.LittleEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return [32]byte(m.Sum(nil))
}

func macEqual(a, b [32]byte) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

func freshNonce() [32]byte {
	var n [32]byte
	if _, err := rand.Read(n[:]); err != nil {
		panic(fmt.Sprintf("plane: crypto/rand: %v", err))
	}
	return n
}

// refusal is a handshake or link failure with the reason it is counted
// under.
type refusal struct {
	reason Reason
	detail string
}

func (r *refusal) Error() string { return r.reason.String() + ": " + r.detail }

func refuse(reason Reason, format string, args ...any) error {
	return &refusal{reason: reason, detail: fmt.Sprintf(format, args...)}
}

// local is what one side knows about itself for a handshake.
type local struct {
	self    uint8
	roster  uint8
	cluster vsr.Checksum
	flags   uint8
	keys    []linkKey // preferred first: current, then previous
	dataKey [16]byte
}

func (l *local) keyByID(id KeyID) (linkKey, bool) {
	for _, k := range l.keys {
		if k.id == id {
			return k, true
		}
	}
	return linkKey{}, false
}

// checkCommon verifies the fields every message of a peer must agree on.
func (l *local) checkCommon(h *Handshake) error {
	if h.Cluster != l.cluster {
		return refuse(ReasonWrongCluster, "peer's cluster id %s, ours %s (different cluster.name)", h.Cluster, l.cluster)
	}
	if h.Flags&FlagAuth != l.flags&FlagAuth {
		return refuse(ReasonAuthMismatch, "peer auth flag %v, ours %v (cluster.auth.enabled differs)", h.Flags&FlagAuth != 0, l.flags&FlagAuth != 0)
	}
	if h.Flags&FlagTLS != l.flags&FlagTLS {
		return refuse(ReasonAuthMismatch, "peer tls flag %v, ours %v (cluster.tls.enabled differs)", h.Flags&FlagTLS != 0, l.flags&FlagTLS != 0)
	}
	if h.RosterSize != l.roster {
		return refuse(ReasonRosterMismatch, "peer roster has %d nodes, ours %d", h.RosterSize, l.roster)
	}
	if h.DataKeyID != l.dataKey {
		return refuse(ReasonDataKey, "peer's encryption key id %x, ours %x (encryption.enabled or encryption.key differs between nodes)", h.DataKeyID, l.dataKey)
	}
	if h.Receiver != l.self {
		return refuse(ReasonWrongTarget, "peer addressed replica %d, we are %d", h.Receiver, l.self)
	}
	if h.Sender >= l.roster {
		return refuse(ReasonUnknownReplica, "peer claims replica id %d, roster has %d members", h.Sender, l.roster)
	}
	return nil
}

// dialerHello builds the dialer's first message to replica target.
func (l *local) dialerHello(target uint8) (Handshake, [HandshakeSize]byte) {
	h := Handshake{Step: StepHello, Flags: l.flags, DataKeyID: l.dataKey, Sender: l.self, Receiver: target,
		RosterSize: l.roster, Cluster: l.cluster, Nonce: freshNonce(), KeyID: l.keys[0].id}
	if len(l.keys) > 1 {
		h.KeyID2 = l.keys[1].id
	}
	return h, h.Encode()
}

// acceptHello checks a hello against this acceptor and picks the link key:
// the first of our keys (current, then previous) that the dialer also
// holds. With rotation (current=new, previous=old on one side, old alone on
// the other) the common key is found whichever side is ahead. It returns
// the challenge to send. Identity checks that need the connection (source
// address, certificate) are done by the caller with the hello's Sender.
func (l *local) acceptHello(raw []byte, exporter []byte) (hello Handshake, key linkKey, challenge [HandshakeSize]byte, err error) {
	hello, err = DecodeHandshake(raw)
	if err != nil {
		return hello, key, challenge, refuse(ReasonGarbage, "%v", err)
	}
	if hello.Step != StepHello {
		return hello, key, challenge, refuse(ReasonGarbage, "expected hello, got step %d", hello.Step)
	}
	if err := l.checkCommon(&hello); err != nil {
		return hello, key, challenge, err
	}
	if hello.Sender > l.self {
		return hello, key, challenge, refuse(ReasonWrongDirection, "replica %d dialed replica %d; only lower ids dial higher ones", hello.Sender, l.self)
	}
	found := false
	for _, k := range l.keys {
		if k.id == hello.KeyID || (hello.KeyID2 != (KeyID{}) && k.id == hello.KeyID2) {
			key, found = k, true
			break
		}
	}
	if !found {
		return hello, key, challenge, refuse(ReasonNoSharedKey, "replica %d holds no key we hold (wrong cluster.auth.shared_secret?)", hello.Sender)
	}
	c := Handshake{Step: StepChallenge, Flags: l.flags, DataKeyID: l.dataKey, Sender: l.self, Receiver: hello.Sender,
		RosterSize: l.roster, Cluster: l.cluster, Nonce: freshNonce(), KeyID: key.id}
	enc := c.Encode()
	c.MAC = transcriptMAC(key.mac, labelChallenge, raw, enc[:hsOffMAC], exporter)
	return hello, key, c.Encode(), nil
}

// dialerFinish checks the acceptor's challenge (it must be the replica we
// dialed, in our cluster, holding the key it names and proving it over our
// fresh nonce) and returns the finish message.
func (l *local) dialerFinish(target uint8, helloRaw, challengeRaw, exporter []byte) ([HandshakeSize]byte, error) {
	var out [HandshakeSize]byte
	c, err := DecodeHandshake(challengeRaw)
	if err != nil {
		return out, refuse(ReasonGarbage, "%v", err)
	}
	if c.Step != StepChallenge {
		return out, refuse(ReasonGarbage, "expected challenge, got step %d", c.Step)
	}
	if err := l.checkCommon(&c); err != nil {
		return out, err
	}
	if c.Sender != target {
		return out, refuse(ReasonWrongPeer, "dialed replica %d but the peer claims to be replica %d", target, c.Sender)
	}
	key, ok := l.keyByID(c.KeyID)
	if !ok {
		return out, refuse(ReasonNoSharedKey, "replica %d chose a key we do not hold", c.Sender)
	}
	if !macEqual(c.MAC, transcriptMAC(key.mac, labelChallenge, helloRaw, challengeRaw[:hsOffMAC], exporter)) {
		return out, refuse(ReasonBadMAC, "replica %d's challenge MAC does not verify", c.Sender)
	}
	f := Handshake{Step: StepFinish, Flags: l.flags, DataKeyID: l.dataKey, Sender: l.self, Receiver: target,
		RosterSize: l.roster, Cluster: l.cluster, KeyID: key.id}
	enc := f.Encode()
	f.MAC = transcriptMAC(key.mac, labelFinish, helloRaw, challengeRaw, enc[:hsOffMAC], exporter)
	return f.Encode(), nil
}

// acceptFinish verifies the dialer's finish: same claimed id, the chosen
// key, and a MAC over the whole transcript including our nonce.
func (l *local) acceptFinish(hello Handshake, key linkKey, helloRaw, challengeRaw, finishRaw, exporter []byte) error {
	f, err := DecodeHandshake(finishRaw)
	if err != nil {
		return refuse(ReasonGarbage, "%v", err)
	}
	if f.Step != StepFinish {
		return refuse(ReasonGarbage, "expected finish, got step %d", f.Step)
	}
	if err := l.checkCommon(&f); err != nil {
		return err
	}
	if f.Sender != hello.Sender || f.KeyID != key.id {
		return refuse(ReasonGarbage, "finish from replica %d with key %x does not match hello from %d with key %x", f.Sender, f.KeyID, hello.Sender, key.id)
	}
	if !macEqual(f.MAC, transcriptMAC(key.mac, labelFinish, helloRaw, challengeRaw, finishRaw[:hsOffMAC], exporter)) {
		return refuse(ReasonBadMAC, "replica %d's finish MAC does not verify", f.Sender)
	}
	return nil
}
