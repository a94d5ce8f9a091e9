package codec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/iggo/iggo/wire"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustCodec(t testing.TB, key []byte) Codec {
	t.Helper()
	s, err := NewAESGCM(key)
	if err != nil {
		t.Fatal(err)
	}
	return Sections(s)
}

func headers(t testing.TB, kv ...string) []byte {
	t.Helper()
	var es []wire.HeaderEntry
	for i := 0; i+1 < len(kv); i += 2 {
		es = append(es, wire.HeaderEntry{Key: wire.StringValue(kv[i]), Value: wire.StringValue(kv[i+1])})
	}
	b, err := wire.AppendUserHeaders(nil, es)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func batch(t testing.TB, msgs []wire.Message) wire.BatchView {
	t.Helper()
	b, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := wire.VerifyBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// storedChecksumsHold checks what a segment read with validate_checksum
// checks: every frame checksum and the batch checksum of the stored bytes.
func storedChecksumsHold(t *testing.T, rec []byte) {
	t.Helper()
	v, err := wire.ParseBatch(rec)
	if err != nil {
		t.Fatalf("stored record layout: %v", err)
	}
	it := v.Frames()
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		if f.Checksum() != f.ComputeChecksum() {
			t.Fatalf("stored frame checksum %#x, computed %#x", f.Checksum(), f.ComputeChecksum())
		}
	}
	if got := v.ComputeChecksum(); got != v.Header().BatchChecksum {
		t.Fatalf("stored batch checksum %#x, computed %#x", v.Header().BatchChecksum, got)
	}
}

func TestRoundTrip(t *testing.T) {
	big := make([]byte, 1<<20)
	_, _ = rand.Read(big)
	cases := []struct {
		name string
		msgs []wire.Message
	}{
		{"one byte", []wire.Message{{ID: wire.Uint128{Lo: 1}, Payload: []byte{'x'}}}},
		{"headers on some", []wire.Message{
			{ID: wire.Uint128{Lo: 1}, OriginTimestamp: 10, Payload: []byte("secret-payload-one"), UserHeaders: headers(t, "k", "secret-header")},
			{ID: wire.Uint128{Lo: 2}, OriginTimestamp: 12, Payload: []byte("secret-payload-two")},
			{ID: wire.Uint128{Hi: 9, Lo: 3}, OriginTimestamp: 11, Payload: []byte("secret-payload-three"), UserHeaders: headers(t, "a", "b", "c", "d")},
		}},
		{"large", []wire.Message{{ID: wire.Uint128{Lo: 7}, Payload: big}, {Payload: big[:1000]}}},
	}
	c := mustCodec(t, testKey(1))
	for _, tc := range cases {
		plain := batch(t, tc.msgs)
		enc, err := c.Encode(nil, plain)
		if err != nil {
			t.Fatalf("%s: encode: %v", tc.name, err)
		}
		sections := 0
		for _, m := range tc.msgs {
			sections++
			if len(m.UserHeaders) > 0 {
				sections++
			}
			// (A 1-byte payload may occur in random ciphertext by chance.)
			if len(m.Payload) >= 8 && bytes.Contains(enc, m.Payload) || len(m.UserHeaders) > 0 && bytes.Contains(enc, m.UserHeaders) {
				t.Fatalf("%s: plaintext visible in the stored form", tc.name)
			}
		}
		if want := plain.Len() + sections*Overhead; len(enc) != want {
			t.Fatalf("%s: stored %d bytes, want %d (28 per sealed section)", tc.name, len(enc), want)
		}
		storedChecksumsHold(t, enc)
		ev, _ := wire.ParseBatch(enc)
		if ev.MessageCount() != plain.MessageCount() || ev.OriginTimestamp() != plain.OriginTimestamp() {
			t.Fatalf("%s: header fields changed", tc.name)
		}
		// Stamping (as Apply does) commutes with the codec.
		ev.Stamp(3, 1000, 5555)
		dec, err := c.Decode(nil, enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:])
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		want := bytes.Clone(plain.Bytes())
		wv, _ := wire.ParseBatch(want)
		wv.Stamp(3, 1000, 5555)
		if !bytes.Equal(dec, want) {
			t.Fatalf("%s: decode(encode(b)) differs from b", tc.name)
		}
		if _, err := wire.VerifyBatch(dec); err != nil {
			t.Fatalf("%s: decoded record does not verify: %v", tc.name, err)
		}
		// A poll slice of the stored record decodes to the same slice of
		// the plaintext record.
		for from := uint64(1000); from < 1000+uint64(len(tc.msgs)); from++ {
			for max := uint32(1); max <= uint32(len(tc.msgs)); max++ {
				es, _ := ev.SliceByOffset(from, max)
				ps, _ := wv.SliceByOffset(from, max)
				got, err := c.Decode(nil, es.Header[:], es.Frames)
				if err != nil {
					t.Fatalf("%s: decode slice: %v", tc.name, err)
				}
				if !bytes.Equal(got, ps.AppendTo(nil)) {
					t.Fatalf("%s: slice from %d max %d decodes differently", tc.name, from, max)
				}
			}
		}
	}
}

func TestEncodeAppends(t *testing.T) {
	c := mustCodec(t, testKey(1))
	plain := batch(t, []wire.Message{{Payload: []byte("p")}})
	prefix := []byte("keep")
	out, err := c.Encode(bytes.Clone(prefix), plain)
	if err != nil || !bytes.HasPrefix(out, prefix) {
		t.Fatalf("Encode did not append: %v", err)
	}
	dec, err := c.Decode(bytes.Clone(prefix), out[4:4+wire.BatchHeaderSize], out[4+wire.BatchHeaderSize:])
	if err != nil || !bytes.Equal(dec[4:], plain.Bytes()) || !bytes.HasPrefix(dec, prefix) {
		t.Fatalf("Decode did not append: %v", err)
	}
}

func TestNoncesDiffer(t *testing.T) {
	c := mustCodec(t, testKey(1))
	plain := batch(t, []wire.Message{{Payload: []byte("same")}})
	a, _ := c.Encode(nil, plain)
	b, _ := c.Encode(nil, plain)
	if bytes.Equal(a, b) {
		t.Fatal("two encodings of one batch are identical: nonces repeat")
	}
}

func TestWrongKeyAndTamperingRefused(t *testing.T) {
	plain := batch(t, []wire.Message{{Payload: []byte("secret"), UserHeaders: headers(t, "k", "v")}})
	enc, err := mustCodec(t, testKey(1)).Encode(nil, plain)
	if err != nil {
		t.Fatal(err)
	}
	h, f := enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:]
	if _, err := mustCodec(t, testKey(2)).Decode(nil, h, f); !errors.Is(err, ErrOpen) {
		t.Fatalf("wrong key: %v, want ErrOpen", err)
	}
	right := mustCodec(t, testKey(1))
	for _, at := range []int{wire.FrameHeaderSize, wire.FrameHeaderSize + 12, wire.FrameHeaderSize + 20, len(f) - 1} {
		bad := bytes.Clone(f)
		bad[at] ^= 0x40
		if _, err := right.Decode(nil, h, bad); !errors.Is(err, ErrOpen) {
			t.Errorf("flipped byte %d: %v, want ErrOpen", at, err)
		}
	}
	if _, err := right.Decode(nil, h[:10], f); err == nil {
		t.Error("short header accepted")
	}
	if _, err := right.Decode(nil, h, f[:len(f)-1]); err == nil {
		t.Error("truncated frames accepted")
	}
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", true},
		{"", false},
		{"AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQ==", false}, // 31 bytes
		{"not base64!", false},
	} {
		k, err := ParseKey(c.in)
		if (err == nil) != c.ok || c.ok && !bytes.Equal(k, testKey(1)) {
			t.Errorf("ParseKey(%q) = %x, %v", c.in, k, err)
		}
	}
}

func TestKeyCheck(t *testing.T) {
	kc := KeyCheck(testKey(1))
	if len(kc) != KeyCheckSize || bytes.Contains(kc, testKey(1)) {
		t.Fatal("key check file has the wrong size or holds the key")
	}
	if err := VerifyKeyCheck(kc, testKey(1)); err != nil {
		t.Fatalf("own key: %v", err)
	}
	if err := VerifyKeyCheck(kc, testKey(2)); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("other key: %v, want ErrWrongKey", err)
	}
	for i := 0; i < KeyCheckSize; i++ {
		bad := bytes.Clone(kc)
		bad[i] ^= 1
		err := VerifyKeyCheck(bad, testKey(1))
		if err == nil || errors.Is(err, ErrWrongKey) {
			t.Errorf("byte %d damaged: %v, want a damage error", i, err)
		}
	}
	if err := VerifyKeyCheck(kc[:20], testKey(1)); err == nil {
		t.Error("truncated file accepted")
	}
}

// FuzzDecode: stored bytes that are not a sealed record never panic the
// decoder; what opens is a valid record.
func FuzzDecode(f *testing.F) {
	c := mustCodec(f, testKey(1))
	plain := batch(f, []wire.Message{{Payload: []byte("seed"), UserHeaders: headers(f, "k", "v")}, {Payload: []byte("two")}})
	enc, _ := c.Encode(nil, plain)
	f.Add(enc)
	f.Add(enc[:300])
	f.Add(make([]byte, wire.BatchHeaderSize+wire.FrameHeaderSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < wire.BatchHeaderSize {
			return
		}
		out, err := c.Decode(nil, b[:wire.BatchHeaderSize], b[wire.BatchHeaderSize:])
		if err != nil {
			return
		}
		if _, err := wire.ParseBatch(out); err != nil {
			t.Fatalf("decoded record does not parse: %v", err)
		}
	})
}

func benchBatch(b *testing.B, n, size int) wire.BatchView {
	msgs := make([]wire.Message, n)
	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	for i := range msgs {
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(i + 1)}, Payload: payload}
	}
	return batch(b, msgs)
}

// BenchmarkCodec measures the ingest (Encode) and poll (Decode) cost of
// encryption at rest per batch; bytes/s are plaintext bytes. Plain copy is
// the floor every path pays to move a batch once.
func BenchmarkCodec(b *testing.B) {
	c := mustCodec(b, testKey(1))
	for _, shape := range []struct{ n, size int }{{1000, 100}, {1000, 1000}, {100, 10000}} {
		plain := benchBatch(b, shape.n, shape.size)
		name := fmt.Sprintf("%dx%dB", shape.n, shape.size)
		enc, _ := c.Encode(nil, plain)
		b.Run("copy/"+name, func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			var dst []byte
			for b.Loop() {
				dst = append(dst[:0], plain.Bytes()...)
			}
		})
		b.Run("encode/"+name, func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			var dst []byte
			var err error
			for b.Loop() {
				if dst, err = c.Encode(dst[:0], plain); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decode/"+name, func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			var dst []byte
			var err error
			for b.Loop() {
				if dst, err = c.Decode(dst[:0], enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSealSection compares one 100-byte section sealed by AESGCM
// (nonces from a pooled crypto/rand buffer) with the standard library's
// random-nonce GCM, which reads crypto/rand for every section.
func BenchmarkSealSection(b *testing.B) {
	key := testKey(1)
	plain := make([]byte, 100)
	a, _ := NewAESGCM(key)
	blk, _ := aes.NewCipher(key)
	std, _ := cipher.NewGCMWithRandomNonce(blk)
	dst := make([]byte, 0, 256)
	b.Run("pooled", func(b *testing.B) {
		for b.Loop() {
			dst, _ = a.Seal(dst[:0], plain)
		}
	})
	b.Run("stdlib-random-nonce", func(b *testing.B) {
		for b.Loop() {
			dst = std.Seal(dst[:0], nil, plain, nil)
		}
	})
}
