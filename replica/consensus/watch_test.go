package consensus

import (
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// TestTickAwakeSkipsQuietGroups: between full passes a quiet single
// replica is not ticked, a full pass (TickTo) hands it every tick it
// missed, a request wakes it for the ticks that follow until it is quiet
// again, and a group with peers is never quiet.
func TestTickAwakeSkipsQuietGroups(t *testing.T) {
	fsys := vfs.NewFault(5)
	h := newTestHost(fsys)
	g, _ := openTestGroup(t, fsys, h, 1)
	defer g.CloseFiles()
	if !g.quiet() {
		t.Fatal("an idle single replica after boot is not quiet")
	}
	h.TickAwake(1)
	h.TickAwake(2)
	if g.ticks != 0 {
		t.Fatalf("a quiet group was ticked %d times between full passes", g.ticks)
	}
	g.TickTo(QuietTickEvery)
	if g.ticks != QuietTickEvery {
		t.Fatalf("the full pass ran %d ticks, want the %d missed", g.ticks, QuietTickEvery)
	}
	g.Submit(&testWaiter{}, vsr.Request{Operation: testOperation, WallClock: 1, Body: []byte("wake")})
	if g.quiet() {
		t.Fatal("a group with a request in flight is quiet")
	}
	h.TickAwake(QuietTickEvery + 1)
	if g.ticks != QuietTickEvery+1 {
		t.Fatalf("an awake group was not ticked: %d ticks", g.ticks)
	}
	h.Drive()
	if len(h.delivered) != 1 || h.delivered[0].code != 0 {
		t.Fatalf("the request was not answered: %+v", h.delivered)
	}
	h.Drive()
	h.TickAwake(QuietTickEvery + 2)
	h.TickAwake(QuietTickEvery + 3)
	if !g.quiet() || g.ticks != QuietTickEvery+1 {
		t.Fatalf("after the answer: quiet %v, %d ticks (want quiet at %d)", g.quiet(), g.ticks, QuietTickEvery+1)
	}

	n := newTestNet(t, vfs.NewFault(6), 0)
	c := n.groups[0]
	c.TickTo(1)
	for now := uint64(2); now < 6; now++ {
		n.drv.TickAwake(now)
		if c.quiet() || c.ticks != now {
			t.Fatalf("a replica with peers: quiet %v, %d ticks at %d", c.quiet(), c.ticks, now)
		}
	}
}
