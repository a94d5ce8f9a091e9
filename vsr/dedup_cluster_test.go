package vsr_test

import (
	"bytes"
	"testing"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

// TestProducerTableSurvivesStateTransfer: a replica of a producer-table
// group that fell behind fetches the primary's checkpoint (state transfer),
// then becomes primary; a retry of a request applied before that checkpoint
// (and of no op after it) is answered from the table it received — same op,
// same reply — and is not executed again.
func TestProducerTableSurvivesStateTransfer(t *testing.T) {
	c := vsrtest.NewCluster(3, func(i int) vsr.Config {
		cfg := clusterConfig(3)(i)
		cfg.JournalSlots = 256
		cfg.CheckpointInterval = 16
		cfg.Dedup = true
		cfg.ClientsMax = 8
		return cfg
	})
	bootAll(t, c)
	c.Settle(10)
	a, b := vsr.Checksum{0xaa}, vsr.Checksum{0xbb}
	producer := a
	var token, request uint64
	send := func(to int, req uint64) []vsr.Reply {
		token++
		c.Nodes[to].Submit(vsr.Request{Token: token, Client: producer, Session: 3, Request: req,
			Operation: vsrtest.OpPut, WallClock: token, Body: vsrtest.EncodePut(uint8(req%5), req)})
		c.Run(20)
		var out []vsr.Reply
		for _, n := range c.Nodes {
			if n.Up {
				out = append(out, n.TakeReplies()...)
			}
		}
		return out
	}
	load := func(n int) {
		for i := 0; i < n; i++ {
			request++
			send(c.Primary(), request)
		}
	}
	load(5)
	c.Nodes[2].Crash()
	load(20)
	last := request
	// Another producer's traffic carries the log past several checkpoints:
	// producer a's entry exists only in the checkpointed table.
	producer = b
	load(300)
	producer = a
	var first vsr.Reply
	for _, rp := range send(c.Primary(), last) { // a retry: cached at the primary
		first = rp
	}
	if first.Status != vsr.StatusOK || first.Op == 0 {
		t.Fatalf("retry before the transfer: %+v", first)
	}
	if err := c.Nodes[2].Boot(false); err != nil {
		t.Fatal(err)
	}
	c.Run(500)
	if c.Nodes[2].Installs == 0 {
		t.Fatalf("r2 caught up without a state transfer: %+v", c.Nodes[2].R.Info())
	}
	// Move the primary role to r2.
	for i := 0; i < 6 && c.Primary() != 2; i++ {
		p := c.Primary()
		if p < 0 {
			c.Run(200)
			continue
		}
		c.Nodes[p].Crash()
		c.Run(400)
		if err := c.Nodes[p].Boot(false); err != nil {
			t.Fatal(err)
		}
		c.Run(400)
	}
	if c.Primary() != 2 {
		t.Fatalf("r2 never became primary (primary %d)", c.Primary())
	}
	before := c.Nodes[2].R.Info().CommitMin
	var again vsr.Reply
	n := 0
	for _, rp := range send(2, last) {
		again = rp
		n++
	}
	if n != 1 || again.Status != vsr.StatusOK || again.Op != first.Op || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("retry at the transferred replica: %d replies, %+v; first answer %+v", n, again, first)
	}
	if after := c.Nodes[2].R.Info().CommitMin; after != before {
		t.Fatalf("the retry was executed again: commit %d → %d", before, after)
	}
	// The next request is new and is executed.
	if rps := send(2, last+1); len(rps) != 1 || rps[0].Status != vsr.StatusOK || rps[0].Op <= first.Op {
		t.Fatalf("next request: %+v", rps)
	}
}
