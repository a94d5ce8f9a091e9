package plane

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/vsr"
)

// BenchmarkLink measures one link's throughput: node 0 sends b.N frames to
// node 1, which decodes and delivers each (counting, no copy). A full peer
// queue is retried, as a load generator would; the shard inbox on the far
// side is not part of this measurement.
func BenchmarkLink(b *testing.B) {
	for _, bc := range []struct {
		name string
		body int
		tls  TLSMode
	}{
		{"256B", 0, TLSOff},
		{"4KiB", 4096 - vsr.HeaderSize, TLSOff},
		{"1MiB", 1<<20 - vsr.HeaderSize, TLSOff},
		{"256B-tls", 0, TLSSelfSigned},
		{"1MiB-tls", 1<<20 - vsr.HeaderSize, TLSSelfSigned},
	} {
		b.Run(bc.name, func(b *testing.B) { benchLink(b, bc.body, bc.tls) })
	}
}

func benchLink(b *testing.B, bodyLen int, mode TLSMode) {
	var roster []Member
	var lns []net.Listener
	for i := 0; i < 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns = append(lns, ln)
		roster = append(roster, Member{ID: uint8(i), Addr: addrOf(ln)})
	}
	var got atomic.Int64
	done := make(chan struct{})
	var want atomic.Int64
	want.Store(-1)
	trs := make([]*Transport, 2)
	for i := range trs {
		cfg := baseConfig(uint8(i), roster)
		cfg.TLS = TLS{Mode: mode}
		cfg.Listener = lns[i]
		cfg.MaxMessageSize = 2 << 20
		cfg.PeerQueueCapacity = 4096
		cfg.Logger = zap.NewNop()
		cfg.Deliver = func(uint8, uint64, vsr.Message) error {
			if got.Add(1) == want.Load() {
				close(done)
			}
			return nil
		}
		tr, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := tr.Start(); err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		trs[i] = tr
	}
	deadline := time.Now().Add(10 * time.Second)
	for !trs[0].Connected(1) || !trs[1].Connected(0) {
		if time.Now().After(deadline) {
			b.Fatal("no link")
		}
		time.Sleep(time.Millisecond)
	}
	var body []byte
	if bodyLen > 0 {
		body = make([]byte, bodyLen)
	}
	m, err := vsr.Decode(testFrame(trs[0].ClusterID(), 0, 2, 1, body), 2<<20)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(vsr.HeaderSize + bodyLen))
	b.ReportAllocs()
	want.Store(int64(b.N))
	b.ResetTimer()
	for i := 0; i < b.N; {
		err := trs[0].Send(1, m)
		switch {
		case err == nil:
			i++
		case errors.Is(err, ErrQueueFull):
			// Back off like a paced producer; spinning would steal the
			// CPU the writer and reader need on a small machine.
			time.Sleep(20 * time.Microsecond)
		default:
			b.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatalf("delivered %d of %d", got.Load(), b.N)
	}
	b.StopTimer()
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/el, "frames/s")
	s := peerStats(trs[0].Stats(), 1)
	b.ReportMetric(float64(s.FramesOut)/float64(max(s.WriteBatches, 1)), "frames/write")
}
