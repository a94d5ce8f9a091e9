package replica

import (
	"github.com/iggo/iggo/replica/consensus"
)

// openGroup opens a consensus group on this shard: spec names the group
// and its state machine; the shard fills in the node's parts (files,
// host, logger, metrics, cluster identity, forwarding).
func (sh *shardLoop) openGroup(spec consensus.Spec) (*consensus.Group, error) {
	n := sh.n
	spec.FS = sh.fs
	spec.Host = sh
	spec.Log = sh.log
	spec.Metrics = n.metrics
	spec.Cluster = n.cluster
	spec.ClusterName = n.cfg.Cluster.Name
	spec.Incarnation = n.incarnation
	spec.Sender = n.sender(spec.ID)
	spec.ForwardTimeoutTicks = n.forwardTimeoutTicks
	return consensus.Open(spec)
}
