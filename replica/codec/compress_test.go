package codec

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"

	"github.com/iggo/iggo/wire"
)

var algorithms = []Algorithm{Gzip, Zstd, LZ4}

// jsonMessages are compressible messages: JSON events that differ in a few
// fields, some with user headers.
func jsonMessages(t testing.TB, n int) []wire.Message {
	msgs := make([]wire.Message, n)
	for i := range msgs {
		p := fmt.Sprintf(`{"order_id":%d,"customer":"customer-%04d","status":"shipped","items":[{"sku":"SKU-%05d","qty":%d,"price":19.99}],"warehouse":"eu-central-1"}`,
			100000+i, i%97, i*7%1000, i%5+1)
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: uint64(i + 1)}, OriginTimestamp: uint64(1000 + i), Payload: []byte(p)}
		if i%3 == 0 {
			msgs[i].UserHeaders = headers(t, "trace", fmt.Sprintf("t-%d", i))
		}
	}
	return msgs
}

func stacks(t testing.TB) map[string]*Stack {
	s, err := NewAESGCM(testKey(7))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]*Stack{"plain": NewStack(nil, 64<<20), "encrypted": NewStack(s, 64<<20)}
}

// stamped returns a copy of rec stamped as Apply stamps it.
func stamped(t testing.TB, rec []byte) []byte {
	rec = bytes.Clone(rec)
	v, err := wire.ParseBatch(rec)
	if err != nil {
		t.Fatalf("stored record layout: %v", err)
	}
	v.Stamp(3, 1000, 5555)
	return rec
}

// TestCompressedRoundTrip: for every codec, with and without encryption,
// the stored form is smaller, keeps a layout the segments verify without
// the key, stays recognisable as compressed, and decodes to the exact
// bytes the producer sent (stamped), whose checksums verify.
func TestCompressedRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	cases := map[string][]wire.Message{
		"json":     jsonMessages(t, 500),
		"one":      {{ID: wire.Uint128{Lo: 1}, Payload: bytes.Repeat([]byte("a"), 400)}},
		"large":    {{ID: wire.Uint128{Lo: 1}, Payload: big}, {ID: wire.Uint128{Lo: 2}, Payload: big[:3000], UserHeaders: headers(t, "k", "v")}},
		"headered": {{Payload: bytes.Repeat([]byte("xy"), 300), UserHeaders: headers(t, "a", "b", "c", "d")}, {Payload: bytes.Repeat([]byte("xy"), 300)}},
	}
	for sname, st := range stacks(t) {
		for _, alg := range algorithms {
			for cname, msgs := range cases {
				name := fmt.Sprintf("%s/%s/%s", sname, alg, cname)
				plain := batch(t, msgs)
				enc, changed, err := st.Encode(nil, plain, alg)
				if err != nil || !changed {
					t.Fatalf("%s: encode: changed %v, %v", name, changed, err)
				}
				if !Compressed(enc[wire.BatchHeaderSize:]) {
					t.Fatalf("%s: stored form not recognised as compressed", name)
				}
				if len(enc) >= plain.Len() {
					t.Fatalf("%s: stored %d bytes, sent %d", name, len(enc), plain.Len())
				}
				storedChecksumsHold(t, enc)
				if got, err := st.OriginalSize(enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:]); err != nil || got != uint64(plain.Len()) {
					t.Fatalf("%s: OriginalSize %d (%v), want %d", name, got, err, plain.Len())
				}
				if sname == "encrypted" && bytes.Contains(enc, msgs[0].Payload[:min(len(msgs[0].Payload), 64)]) {
					t.Fatalf("%s: plaintext visible", name)
				}
				rec := stamped(t, enc)
				dec, err := st.Decode(nil, rec[:wire.BatchHeaderSize], rec[wire.BatchHeaderSize:])
				if err != nil {
					t.Fatalf("%s: decode: %v", name, err)
				}
				if want := stamped(t, plain.Bytes()); !bytes.Equal(dec, want) {
					t.Fatalf("%s: decode(encode(b)) differs from b", name)
				}
				if _, err := wire.VerifyBatch(dec); err != nil {
					t.Fatalf("%s: decoded record does not verify: %v", name, err)
				}
			}
		}
	}
}

// TestIncompressibleStoredAsSent: random bytes do not shrink; the batch is
// stored uncompressed (as sent, or sealed by sections).
func TestIncompressibleStoredAsSent(t *testing.T) {
	p := make([]byte, 4000)
	_, _ = rand.Read(p)
	plain := batch(t, []wire.Message{{Payload: p}})
	for sname, st := range stacks(t) {
		for _, alg := range algorithms {
			enc, changed, err := st.Encode(nil, plain, alg)
			if err != nil {
				t.Fatal(err)
			}
			if Compressed(enc) || len(enc) > 0 && Compressed(enc[wire.BatchHeaderSize:]) {
				t.Fatalf("%s/%s: random payload stored compressed", sname, alg)
			}
			if sname == "encrypted" {
				if got, err := st.OriginalSize(enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:]); err != nil || got != uint64(plain.Len()) {
					t.Fatalf("%s/%s: OriginalSize of a sealed record %d (%v), want %d", sname, alg, got, err, plain.Len())
				}
			}
			switch sname {
			case "plain":
				if changed || len(enc) != 0 {
					t.Fatalf("%s/%s: changed %v, %d bytes: want the batch as sent", sname, alg, changed, len(enc))
				}
			case "encrypted":
				if !changed || len(enc) != plain.Len()+Overhead {
					t.Fatalf("%s/%s: %d bytes, want the sealed form", sname, alg, len(enc))
				}
			}
		}
		if _, changed, _ := st.Encode(nil, plain, None); changed != st.Sealed() {
			t.Fatalf("%s: None changed = %v", sname, changed)
		}
	}
}

// TestMixedRecordsDecode: a partition may hold records written before and
// after its topic's codec changed; Decode handles each by what it is.
func TestMixedRecordsDecode(t *testing.T) {
	plain := batch(t, jsonMessages(t, 50))
	st := NewStack(nil, 64<<20)
	if !bytes.Equal(mustDecode(t, st, plain.Bytes()), plain.Bytes()) {
		t.Fatal("a record as sent does not decode to itself")
	}
	for _, alg := range algorithms {
		enc, _, _ := st.Encode(nil, plain, alg)
		if !bytes.Equal(mustDecode(t, st, enc), plain.Bytes()) {
			t.Fatalf("%s record", alg)
		}
	}
	// An uncompressed record is never taken for a compressed one, even with
	// an empty first payload.
	for _, m := range [][]wire.Message{{{Payload: nil, UserHeaders: headers(t, "k", "v")}}, {{Payload: []byte{0}}}} {
		raw, err := wire.AppendBatch(nil, m)
		if err != nil {
			continue // the encoder refuses an empty payload
		}
		if Compressed(raw[wire.BatchHeaderSize:]) {
			t.Fatalf("client batch %x taken for a compressed record", raw[wire.BatchHeaderSize:])
		}
	}
}

func mustDecode(t *testing.T, st *Stack, rec []byte) []byte {
	t.Helper()
	out, err := st.Decode(nil, rec[:wire.BatchHeaderSize], rec[wire.BatchHeaderSize:])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCompressedDamageRefused: flipped bytes in the block, a wrong key, a
// size beyond the bound and stray frame bytes are errors, never a wrong
// record.
func TestCompressedDamageRefused(t *testing.T) {
	plain := batch(t, jsonMessages(t, 100))
	for sname, st := range stacks(t) {
		for _, alg := range algorithms {
			enc, _, _ := st.Encode(nil, plain, alg)
			h, f := enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:]
			blk := wire.FrameHeaderSize
			for _, at := range []int{blk + 1, blk + 2, blk + 3, blk + 4, blk + 9, blk + 17, blk + 40, len(f) - wire.FrameHeaderSize*99 - 1} {
				bad := bytes.Clone(f)
				bad[at] ^= 0x21
				if _, err := st.Decode(nil, h, bad); err == nil {
					t.Fatalf("%s/%s: flipped block byte %d accepted", sname, alg, at)
				}
			}
			small := &Stack{sealer: st.sealer, sections: st.sections, maxBody: 100}
			if _, err := small.Decode(nil, h, f); !errors.Is(err, ErrCompressed) {
				t.Fatalf("%s/%s: body over the bound: %v", sname, alg, err)
			}
			if sname == "encrypted" {
				other, _ := NewAESGCM(testKey(8))
				if _, err := NewStack(other, 64<<20).Decode(nil, h, f); !errors.Is(err, ErrOpen) {
					t.Fatalf("%s: wrong key: %v", alg, err)
				}
				if _, err := NewStack(nil, 64<<20).Decode(nil, h, f); !errors.Is(err, ErrOpen) {
					t.Fatalf("%s: sealed block without a key: %v", alg, err)
				}
			}
		}
	}
}

// FuzzDecodeCompressed: arbitrary frames with the compressed marker never
// panic and never decode into a record that does not verify.
func FuzzDecodeCompressed(f *testing.F) {
	plain := batch(f, jsonMessages(f, 20))
	for _, alg := range algorithms {
		enc, _, _ := NewStack(nil, 1<<20).Encode(nil, plain, alg)
		f.Add(enc[wire.BatchHeaderSize:])
	}
	f.Add(make([]byte, wire.FrameHeaderSize+blockHeaderSize))
	st := NewStack(nil, 1<<20)
	hdr := plain.Bytes()[:wire.BatchHeaderSize]
	f.Fuzz(func(t *testing.T, frames []byte) {
		out, err := st.Decode(nil, hdr, frames)
		if err != nil {
			return
		}
		if _, err := wire.VerifyBatch(out); err != nil && Compressed(frames) {
			// Decode rebuilt lengths and checksums: the layout must hold
			// (user headers are the producer's and are not re-validated).
			if _, perr := wire.ParseBatch(out); perr != nil {
				t.Fatalf("decoded record does not parse: %v", perr)
			}
		}
	})
}

func BenchmarkCompress(b *testing.B) {
	plain := batch(b, jsonMessages(b, 1000))
	for _, alg := range algorithms {
		st := NewStack(nil, 64<<20)
		enc, _, _ := st.Encode(nil, plain, alg)
		b.Run("encode/"+alg.String(), func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			var buf []byte
			for range b.N {
				buf, _, _ = st.Encode(buf[:0], plain, alg)
			}
			b.ReportMetric(float64(plain.Len())/float64(len(enc)), "ratio")
		})
		b.Run("decode/"+alg.String(), func(b *testing.B) {
			b.SetBytes(int64(plain.Len()))
			var buf []byte
			for range b.N {
				buf, _ = st.Decode(buf[:0], enc[:wire.BatchHeaderSize], enc[wire.BatchHeaderSize:])
			}
		})
	}
}
