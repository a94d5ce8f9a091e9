package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/zeebo/xxh3"
)

// KeySize is the AES-256 key length.
const KeySize = 32

// Overhead is what sealing adds to a section: nonce and tag.
const Overhead = nonceSize + 16

const nonceSize = 12

// ParseKey decodes encryption.key: standard base64 of exactly 32 bytes.
func ParseKey(b64 string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("codec: encryption key is not base64: %w", err)
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("codec: encryption key is %d bytes, want %d", len(key), KeySize)
	}
	return key, nil
}

// AESGCM seals sections with AES-256-GCM and a random 96-bit nonce per
// section (the layout is in the package doc). Safe for concurrent use.
//
// Nonces come from crypto/rand, read NonceBlock bytes at a time into
// buffers of a sync.Pool: each buffer is held by one Seal at a time and
// each of its bytes is used once, so nonces stay independent random values
// while a 100-byte message no longer pays a getrandom call (~300 ns here)
// per section.
type AESGCM struct {
	aead   cipher.AEAD
	nonces sync.Pool // *nonceBuf
}

// NonceBlock is how many random bytes one refill reads.
const NonceBlock = 4096

type nonceBuf struct {
	b   [NonceBlock]byte
	off int
}

func (a *AESGCM) nonce(dst []byte) error {
	nb, _ := a.nonces.Get().(*nonceBuf)
	if nb == nil {
		nb = &nonceBuf{off: NonceBlock}
	}
	if nb.off+len(dst) > NonceBlock {
		if _, err := rand.Read(nb.b[:]); err != nil {
			return fmt.Errorf("codec: reading random nonces: %w", err)
		}
		nb.off = 0
	}
	copy(dst, nb.b[nb.off:])
	clear(nb.b[nb.off : nb.off+len(dst)])
	nb.off += len(dst)
	a.nonces.Put(nb)
	return nil
}

// NewAESGCM builds the sealer for a 32-byte key.
func NewAESGCM(key []byte) (*AESGCM, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("codec: AES-256 key is %d bytes, want %d", len(key), KeySize)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	return &AESGCM{aead: a}, nil
}

// Seal appends nonce ‖ ciphertext ‖ tag.
func (a *AESGCM) Seal(dst, plain []byte) ([]byte, error) {
	at := len(dst)
	dst = append(dst, make([]byte, nonceSize)...)
	if err := a.nonce(dst[at:]); err != nil {
		return dst[:at], err
	}
	return a.aead.Seal(dst, dst[at:], plain, nil), nil
}

// Open appends the plaintext of nonce ‖ ciphertext ‖ tag.
func (a *AESGCM) Open(dst, sealed []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return dst, fmt.Errorf("%w: %d bytes, shorter than nonce and tag", ErrOpen, len(sealed))
	}
	out, err := a.aead.Open(dst, sealed[:nonceSize], sealed[nonceSize:], nil)
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrOpen, err)
	}
	return out, nil
}

// KeyID names a key without revealing it: the first 16 bytes of
// HMAC-SHA256(key, "iggo encryption key id v1"). Cluster nodes compare
// theirs in the replica-plane handshake.
func KeyID(key []byte) [16]byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("iggo encryption key id v1"))
	return [16]byte(m.Sum(nil)[:16])
}

// Key check file: proves at boot that encryption.key is the key a data
// directory was written with, without storing the key. 56 bytes,
// little-endian:
//
//	0..8    magic "IGGOKEYC"
//	8..12   version u32 = 1
//	12..16  algorithm u32 = 1 (AES-256-GCM, the layout of this package)
//	16..48  HMAC-SHA256(key, "iggo encryption key check v1")
//	48..56  XXH3-64 of bytes 0..48
//
// The MAC reveals nothing about the key beyond letting a holder of a
// candidate key test it, which the stored ciphertext allows anyway.
const KeyCheckSize = 56

const (
	keyCheckMagic   = "IGGOKEYC"
	keyCheckVersion = 1
	keyCheckAESGCM  = 1
	keyCheckLabel   = "iggo encryption key check v1"
)

// ErrWrongKey: the key check file was written under another key.
var ErrWrongKey = errors.New("codec: the encryption key is not the one this data was written with")

// KeyCheck returns the key check file's bytes for key.
func KeyCheck(key []byte) []byte {
	b := make([]byte, KeyCheckSize)
	copy(b, keyCheckMagic)
	binary.LittleEndian.PutUint32(b[8:], keyCheckVersion)
	binary.LittleEndian.PutUint32(b[12:], keyCheckAESGCM)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(keyCheckLabel))
	copy(b[16:48], m.Sum(nil))
	binary.LittleEndian.PutUint64(b[48:], xxh3.Hash(b[:48]))
	return b
}

// VerifyKeyCheck checks a key check file against key: nil, ErrWrongKey,
// or an error saying how the file is damaged.
func VerifyKeyCheck(file, key []byte) error {
	if len(file) != KeyCheckSize || string(file[:8]) != keyCheckMagic || xxh3.Hash(file[:48]) != binary.LittleEndian.Uint64(file[48:]) {
		return fmt.Errorf("codec: key check file is damaged (%d bytes, want %d with magic %q and a valid checksum)", len(file), KeyCheckSize, keyCheckMagic)
	}
	if v := binary.LittleEndian.Uint32(file[8:]); v != keyCheckVersion {
		return fmt.Errorf("codec: key check file version %d, this build reads %d", v, keyCheckVersion)
	}
	if a := binary.LittleEndian.Uint32(file[12:]); a != keyCheckAESGCM {
		return fmt.Errorf("codec: key check file names algorithm %d, this build has 1 (AES-256-GCM)", a)
	}
	if !hmac.Equal(file[16:48], KeyCheck(key)[16:48]) {
		return ErrWrongKey
	}
	return nil
}
