package history

import (
	"bytes"
	"io"
	"testing"
)

func BenchmarkRecorder(b *testing.B) {
	r, err := NewRecorder(Meta{}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	v := Value{Stream: "s", Topic: "t", Partition: U32(1), Msgs: []MsgID{{Producer: 1, Seq: 2, Attempt: 1}, {Producer: 1, Seq: 3, Attempt: 1}}}
	res := Value{Partition: U32(1), Base: U64(12345)}
	b.ReportAllocs()
	for b.Loop() {
		r.Invoke(1, Send, v).OK(0, res)
	}
}

func BenchmarkRead(b *testing.B) {
	var buf bytes.Buffer
	r, _ := NewRecorder(Meta{}, &buf)
	read := make([]Obs, 100)
	for i := range read {
		read[i] = Obs{Offset: uint64(i), ID: MsgID{Producer: 1, Seq: uint64(i), Attempt: 1}}
	}
	for i := 0; i < 1000; i++ {
		r.Invoke(i%8, Poll, Value{Partition: U32(0)}).OK(0, Value{Read: read})
	}
	r.Flush()
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
