package client

import (
	"context"
	"testing"

	"github.com/iggo/iggo/wire"
)

// BenchmarkSendLoopback measures one send of 1,000 messages of 1 KiB through
// the client to a loopback fake server that decodes and verifies the batch:
// encode, write, server verify, reply, decode.
func BenchmarkSendLoopback(b *testing.B) {
	t := &testing.T{}
	s := newFakeServer(t)
	s.noRecord = true
	b.Cleanup(s.close)
	cfg := testConfig(s.addr)
	c, err := Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	msgs := make([]wire.Message, 1000)
	size := 0
	for i := range msgs {
		msgs[i], _ = NewMessage(make([]byte, 1024))
		size += wire.FrameHeaderSize + 1024
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.SendMessages(ctx, sID, tID, wire.PartitionByID(0), msgs); err != nil {
			b.Fatal(err)
		}
	}
}
