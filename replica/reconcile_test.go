package replica

import (
	"testing"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/wire"
)

// TestFreshReconcileRejoinsEveryPartition: a node started with --fresh
// that installs a metadata checkpoint newer than the commit point it
// learned on its return (freshTarget) opens every partition of the
// checkpoint as rejoining. Every one may be older than the wipe and hold
// ops this node acknowledged then. Before, the checkpoint's op decided,
// and a checkpoint just past freshTarget opened all its partitions as
// ordinary empty replicas, which then voted empty logs in view changes
// (chaos seed 1001).
func TestFreshReconcileRejoinsEveryPartition(t *testing.T) {
	sh := testShard(t, vfs.NewFault(1))
	n := sh.n
	n.fresh, n.freshTarget = true, 10
	st := metadata.NewState()
	st, res := st.Apply(metadata.Meta{Op: 1, Timestamp: 1, System: true},
		metadata.Bootstrap{RootUsername: "iggy", RootPasswordHash: "hash", Limits: metadata.DefaultLimits()})
	if res.Code != 0 {
		t.Fatalf("bootstrap: %+v", res)
	}
	root := func(op uint64) metadata.Meta {
		return metadata.Meta{Op: op, Timestamp: op, UserID: metadata.RootUserID, Client: metadata.ClientID{Lo: 1}}
	}
	st, res = st.Apply(root(2), metadata.CreateStream{Name: "s"})
	if res.Code != 0 {
		t.Fatalf("create stream: %+v", res)
	}
	st, res = st.Apply(root(3), metadata.CreateTopic{Stream: wire.NumericID(0), Name: "t",
		PartitionsCount: 3, Defaults: metadata.DefaultTopicDefaults()})
	if res.Code != 0 {
		t.Fatalf("create topic: %+v", res)
	}
	// The checkpoint was taken at op 20 > freshTarget; the partitions were
	// created at op 3, before the wipe for all this node knows.
	st, _ = st.Apply(root(20), metadata.CreateStream{Name: "later"})
	// Tasks for other shards queue in the outbox once it holds anything:
	// seed it so that nothing is sent and the specs can be read back.
	sh.outbox = []outTask{{}}
	n.reconcilePartitions(sh, st)
	opened := 0
	for _, o := range sh.outbox[1:] {
		r, ok := o.t.req.(*openPartitionReq)
		if !ok {
			continue
		}
		opened++
		if !r.spec.rejoin {
			t.Errorf("partition %d of the installed checkpoint opens without rejoin on a fresh node", r.spec.id)
		}
	}
	if opened != 3 {
		t.Fatalf("%d partitions opened, want 3", opened)
	}
}
