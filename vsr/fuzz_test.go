package vsr_test

import (
	"bytes"
	"testing"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

// seedFrames runs a small cluster through normal operation and a view change
// and returns every frame it sent: valid frames of most commands.
func seedFrames(tb testing.TB) ([][]byte, [][]byte) {
	c := vsrtest.NewCluster(3, clusterConfig(3))
	var frames, states [][]byte
	for _, n := range c.Nodes {
		if err := n.Boot(false); err != nil {
			tb.Fatal(err)
		}
	}
	c.Filter = func(p vsrtest.Packet, _ vsr.Message) bool {
		frames = append(frames, p.Frame)
		return false
	}
	capture := func() {
		for _, n := range c.Nodes {
			if n.Disk.State != nil {
				states = append(states, n.Disk.State)
			}
		}
	}
	p := c.Primary()
	for i := 1; i <= 5; i++ {
		c.Nodes[p].Submit(vsr.Request{Token: uint64(i), Operation: vsrtest.OpPut, WallClock: uint64(i),
			Body: vsrtest.EncodePut(1, uint64(i))})
		capture()
		c.Deliver(nil, 100)
	}
	c.Nodes[p].Crash()
	for t := 0; t < 1500; t++ {
		capture()
		c.Deliver(nil, 100)
		c.Tick()
	}
	return frames, states
}

func FuzzDecode(f *testing.F) {
	frames, _ := seedFrames(f)
	for _, fr := range frames {
		f.Add(fr)
	}
	report := vsr.EncodeSessionReport(vsr.Sender{Group: vsr.MetadataGroup, Replica: 1, ReplicaCount: 3, Incarnation: 5},
		vsr.SessionReport{Sequence: 1, Chunks: 1, Clients: []vsr.Checksum{{1}, {2}}})
	f.Add(vsrtest.Encode(report))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := vsr.Decode(frame, 1<<20)
		if err != nil {
			return
		}
		if !bytes.Equal(vsrtest.Encode(m), frame) || !m.Header.SealValid() {
			t.Fatal("decoded frame does not re-encode to itself")
		}
		_ = vsrtest.Describe(m)
	})
}

func FuzzDecodeState(f *testing.F) {
	_, states := seedFrames(f)
	for _, s := range states {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := vsr.DecodeState(b)
		if err != nil {
			return
		}
		if !bytes.Equal(vsr.EncodeState(s), b) {
			t.Fatal("state record does not re-encode to itself")
		}
	})
}

// TestSeedFramesDecode checks the seed corpus itself: every frame a replica
// sent decodes, and every command of normal operation and view change occurs.
func TestSeedFramesDecode(t *testing.T) {
	frames, states := seedFrames(t)
	seen := map[vsr.Command]bool{}
	for _, fr := range frames {
		m, err := vsr.Decode(fr, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		seen[m.Header.Command()] = true
		// Any flipped bit must be caught by the seal.
		bad := append([]byte(nil), fr...)
		bad[len(bad)-1] ^= 1
		if _, err := vsr.Decode(bad, 1<<20); err == nil {
			t.Fatalf("%s: bit flip not detected", m.Header.Command())
		}
	}
	for _, c := range []vsr.Command{vsr.CmdPrepare, vsr.CmdPrepareOk, vsr.CmdCommit,
		vsr.CmdStartViewChange, vsr.CmdDoViewChange, vsr.CmdStartView} {
		if !seen[c] {
			t.Errorf("no %s frame in the seed run", c)
		}
	}
	if len(states) == 0 {
		t.Fatal("no state records")
	}
	for _, s := range states {
		if _, err := vsr.DecodeState(s); err != nil {
			t.Fatal(err)
		}
	}
}
