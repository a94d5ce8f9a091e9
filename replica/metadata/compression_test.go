package metadata

import (
	"testing"

	"github.com/iggo/iggo/wire"
)

func TestCompressionOptions(t *testing.T) {
	d := DefaultTopicDefaults()
	alg := func(v string) wire.HeaderEntry { return stringOption(wire.OptCompressionAlgorithm, v) }
	codec := func(v string) wire.HeaderEntry { return stringOption(OptCompressionCodec, v) }
	create := []struct {
		name string
		opts wire.Options
		want Compression
		code wire.Code
	}{
		{"default", nil, CompressionNone, OK},
		{"iggy gzip", wire.Options{alg("gzip")}, CompressionGzip, OK},
		{"iggy none", wire.Options{alg("none")}, CompressionNone, OK},
		{"zstd", wire.Options{codec("zstd")}, CompressionZstd, OK},
		{"lz4 any case", wire.Options{codec("LZ4")}, CompressionLZ4, OK},
		{"both gzip", wire.Options{codec("gzip"), alg("gzip")}, CompressionGzip, OK},
		{"zstd reported none", wire.Options{alg("none"), codec("zstd")}, CompressionZstd, OK},
		{"gzip and zstd contradict", wire.Options{alg("gzip"), codec("zstd")}, 0, wire.CodeInvalidOptionValue},
		{"contradiction in either order", wire.Options{codec("zstd"), alg("gzip")}, 0, wire.CodeInvalidOptionValue},
		{"none and gzip contradict", wire.Options{codec("gzip"), alg("none")}, 0, wire.CodeInvalidOptionValue},
		{"unknown codec", wire.Options{codec("brotli")}, 0, wire.CodeInvalidOptionValue},
		{"codec as a number", wire.Options{kv(OptCompressionCodec, wire.KindUint8, []byte{3})}, 0, wire.CodeInvalidOptionValue},
	}
	for _, tc := range create {
		res, code := ResolveTopicCreate(tc.opts, 1, d)
		if code != tc.code {
			t.Fatalf("create %s: code %v, want %v", tc.name, code, tc.code)
		}
		if code != OK {
			continue
		}
		c := res.Config
		if c.Compression != tc.want || c.CompressionAlgorithm != tc.want.algorithm() || !validTopicConfig(c) {
			t.Fatalf("create %s: codec %v algorithm %d", tc.name, c.Compression, c.CompressionAlgorithm)
		}
		all := append(append(wire.Options{}, res.Explicit...), res.Derived...)
		if v, _ := all.Get(OptCompressionCodec); string(v.Value) != tc.want.String() {
			t.Fatalf("create %s: compression_codec reported %q", tc.name, v.Value)
		}
		wantAlg := "none"
		if tc.want == CompressionGzip {
			wantAlg = "gzip"
		}
		if v, _ := all.Get(wire.OptCompressionAlgorithm); string(v.Value) != wantAlg {
			t.Fatalf("create %s: compression_algorithm reported %q, want %q", tc.name, v.Value, wantAlg)
		}
	}

	topic := func(c Compression) *Topic {
		res, code := ResolveTopicCreate(wire.Options{codec(c.String())}, 1, d)
		if code != OK {
			t.Fatal(code)
		}
		return &Topic{Config: res.Config, Explicit: res.Explicit, Derived: res.Derived, Partitions: make([]Partition, 1)}
	}
	update := []struct {
		name string
		from Compression
		opts wire.Options
		want Compression
		code wire.Code
	}{
		// Iggy clients re-send what they read: none on a zstd topic keeps zstd.
		{"iggy none keeps zstd", CompressionZstd, wire.Options{alg("none")}, CompressionZstd, OK},
		{"iggy none keeps lz4", CompressionLZ4, wire.Options{alg("none")}, CompressionLZ4, OK},
		{"iggy none turns gzip off", CompressionGzip, wire.Options{alg("none")}, CompressionNone, OK},
		{"iggy gzip switches zstd to gzip", CompressionZstd, wire.Options{alg("gzip")}, CompressionGzip, OK},
		{"codec update", CompressionNone, wire.Options{codec("lz4")}, CompressionLZ4, OK},
		{"codec off", CompressionZstd, wire.Options{codec("none")}, CompressionNone, OK},
		{"other keys keep the codec", CompressionZstd, wire.Options{u64Option(wire.OptMessageExpiry, 9)}, CompressionZstd, OK},
		{"contradiction", CompressionNone, wire.Options{codec("lz4"), alg("gzip")}, 0, wire.CodeInvalidOptionValue},
	}
	for _, tc := range update {
		res, code := ResolveTopicUpdate(tc.opts, topic(tc.from), d)
		if code != tc.code {
			t.Fatalf("update %s: code %v, want %v", tc.name, code, tc.code)
		}
		if code != OK {
			continue
		}
		if res.Config.Compression != tc.want || res.Config.CompressionAlgorithm != tc.want.algorithm() {
			t.Fatalf("update %s: codec %v algorithm %d, want %v", tc.name, res.Config.Compression, res.Config.CompressionAlgorithm, tc.want)
		}
		if !validOptionBlocks(res.Config, res.Explicit, res.Derived) {
			t.Fatalf("update %s: blocks inconsistent with the config", tc.name)
		}
	}
}

// TestLegacyOptionBlocks: a snapshot written before compression_codec
// existed (blocks without the key, codec none or gzip) is accepted and
// re-rendered with the key; blocks missing it for a zstd topic are not.
func TestLegacyOptionBlocks(t *testing.T) {
	d := DefaultTopicDefaults()
	for _, opts := range []wire.Options{nil, {stringOption(wire.OptCompressionAlgorithm, "gzip")}} {
		res, _ := ResolveTopicCreate(opts, 1, d)
		var de wire.Options
		for _, e := range res.Derived {
			if string(e.Key.Value) != OptCompressionCodec {
				de = append(de, e)
			}
		}
		if validOptionBlocks(res.Config, res.Explicit, de) {
			t.Fatal("blocks without compression_codec pass as canonical")
		}
		if !legacyOptionBlocks(res.Config, res.Explicit, de) {
			t.Fatalf("legacy blocks of %v refused", res.Config.Compression)
		}
	}
	res, _ := ResolveTopicCreate(wire.Options{stringOption(OptCompressionCodec, "zstd")}, 1, d)
	var ex wire.Options
	for _, e := range res.Explicit {
		if string(e.Key.Value) != OptCompressionCodec {
			ex = append(ex, e)
		}
	}
	if legacyOptionBlocks(res.Config, ex, res.Derived) {
		t.Fatal("a zstd topic without compression_codec accepted as legacy")
	}
}
