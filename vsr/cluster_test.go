package vsr_test

import (
	"fmt"
	"testing"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

func clusterConfig(n int) func(i int) vsr.Config {
	return func(i int) vsr.Config {
		cfg := vsr.DefaultConfig()
		cfg.Cluster = vsr.Checksum{7}
		cfg.Group = 3
		cfg.Replica = uint8(i)
		cfg.ReplicaCount = uint8(n)
		cfg.Durability = vsr.Persisted
		cfg.Seed = uint64(i)
		return cfg
	}
}

func bootAll(t *testing.T, c *vsrtest.Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		if err := n.Boot(false); err != nil {
			t.Fatal(err)
		}
	}
}

func TestClusterNormalOperation(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := vsrtest.NewCluster(n, clusterConfig(n))
			bootAll(t, c)
			c.Settle(10)
			p := c.Primary()
			if p < 0 {
				t.Fatal("no primary")
			}
			for i := 1; i <= 50; i++ {
				c.Nodes[p].Submit(vsr.Request{Token: uint64(i), Operation: vsrtest.OpPut, WallClock: uint64(i),
					Body: vsrtest.EncodePut(uint8(i%3), uint64(i))})
			}
			c.Run(100)
			if got := len(c.Nodes[p].TakeReplies()); got != 50 {
				t.Fatalf("%d replies", got)
			}
			for i, node := range c.Nodes {
				inf := node.R.Info()
				if inf.CommitMin != 50 || !node.SM.Equal(c.Nodes[p].SM) {
					t.Fatalf("replica %d: %+v %v", i, inf, node.SM)
				}
			}
		})
	}
}

// TestCommitNow: a backup learns a commit from CommitNow without waiting
// for the next commit heartbeat; on a backup CommitNow does nothing.
func TestCommitNow(t *testing.T) {
	c := vsrtest.NewCluster(3, clusterConfig(3))
	bootAll(t, c)
	c.Settle(10)
	p := c.Primary()
	if p < 0 {
		t.Fatal("no primary")
	}
	c.Nodes[p].Submit(vsr.Request{Token: 1, Operation: vsrtest.OpPut, WallClock: 1, Body: vsrtest.EncodePut(1, 1)})
	c.Deliver(nil, 1<<20) // no ticks: no heartbeat
	if got := len(c.Nodes[p].TakeReplies()); got != 1 {
		t.Fatalf("%d replies", got)
	}
	backup := (p + 1) % 3
	if inf := c.Nodes[backup].R.Info(); inf.CommitMin != 0 {
		t.Fatalf("backup applied op %d before any commit message", inf.CommitMin)
	}
	c.Nodes[backup].R.CommitNow()
	c.Nodes[backup].Drain()
	c.Collect()
	if len(c.Queue) != 0 {
		t.Fatalf("CommitNow on a backup sent %d messages", len(c.Queue))
	}
	c.Nodes[p].R.CommitNow()
	c.Nodes[p].Drain()
	c.Deliver(nil, 1<<20)
	for i, n := range c.Nodes {
		if inf := n.R.Info(); inf.CommitMin != 1 {
			t.Fatalf("replica %d applied op %d after CommitNow", i, inf.CommitMin)
		}
	}
}
