package wire

import "testing"

// The benchmark batch: 1,000 messages of 1 KiB, as in the brief.
const benchCount, benchSize = 1000, 1024

func BenchmarkBatchEncode(b *testing.B) {
	msgs := benchMessages(benchCount, benchSize)
	dst := make([]byte, 0, BatchSize(msgs))
	b.SetBytes(int64(BatchSize(msgs)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AppendBatch(dst[:0], msgs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchCount), "ns/msg")
}

// BenchmarkBatchDecodeVerify is the server read path of a send: layout,
// every frame checksum, user headers and the batch checksum, then a walk
// over every frame as the append path does.
func BenchmarkBatchDecodeVerify(b *testing.B) {
	raw, err := AppendBatch(nil, benchMessages(benchCount, benchSize))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		v, err := VerifyBatch(raw)
		if err != nil {
			b.Fatal(err)
		}
		it := v.Frames()
		n := 0
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			n += len(f.Payload())
		}
		if n != benchCount*benchSize {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchCount), "ns/msg")
}

// BenchmarkSendRequestDecode decodes a whole SEND_MESSAGES body (routing
// metadata + verified batch).
func BenchmarkSendRequestDecode(b *testing.B) {
	req := SendMessages{StreamID: NumericID(1), TopicID: NumericID(2), Partitioning: PartitionByID(0), Messages: benchMessages(benchCount, benchSize)}
	body, err := req.AppendBody(nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSendMessages(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBatchStamp(b *testing.B) {
	raw, err := AppendBatch(nil, benchMessages(benchCount, benchSize))
	if err != nil {
		b.Fatal(err)
	}
	v, _ := ParseBatch(raw)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v.Stamp(1, uint64(i), 42)
	}
}

func BenchmarkBatchSlice(b *testing.B) {
	raw, err := AppendBatch(nil, benchMessages(benchCount, benchSize))
	if err != nil {
		b.Fatal(err)
	}
	v, _ := ParseBatch(raw)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := v.SliceByOffset(500, 100); !ok {
			b.Fatal("slice")
		}
	}
}

func BenchmarkXXH32Key(b *testing.B) {
	key := []byte("customer-000123456")
	b.SetBytes(int64(len(key)))
	for b.Loop() {
		_ = XXH32(key)
	}
}
