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
