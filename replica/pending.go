package replica

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"go.uber.org/zap"

	"github.com/iggo/iggo/shard"
)

// Partitions a shard must host but could not open for lack of a resource:
// out of descriptors (EMFILE, ENFILE, or the open-partition cap a test
// sets) or memory (ENOMEM). Such a failure says nothing
// about the partition's data, so instead of refusing to boot or giving the
// partition up, the shard keeps serving its other partitions, answers
// requests to this one with a retryable status (58, TransientNotAccepted), and retries the open
// with a backoff (1 s doubling to 30 s) until it succeeds or the partition
// is deleted. Every other open failure keeps its old meaning (a damaged
// partition still refuses the boot of a single node).
//
// Partitions hold no descriptors of their own (each shard's files go
// through a vfs.Bounded sized by package fdbudget), so on a running node an
// open fails this way only when the process runs out of descriptors or
// memory regardless; Node.partSlots lets a test stand for that.

// errDescriptorBudget: the open-partition cap (Node.partSlots) is reached.
var errDescriptorBudget = fmt.Errorf("replica: the cap on open partitions is reached: %w", syscall.EMFILE)

// reservePartitionSlot takes one open partition out of the budget, or
// reports that none is left.
func (n *Node) reservePartitionSlot() bool {
	limit := n.partSlots.Load()
	if limit == 0 {
		return true // no budget set (tests building shards by hand)
	}
	if n.openParts.Add(1) > limit {
		n.openParts.Add(-1)
		return false
	}
	return true
}

// releasePartitionSlot returns the slot of a closed partition.
func (n *Node) releasePartitionSlot() {
	if n.partSlots.Load() != 0 {
		n.openParts.Add(-1)
	}
}

const (
	reopenFirstTicks = 100  // 1 s at the 10 ms tick
	reopenMaxTicks   = 3000 // 30 s
)

// pendingOpen is one partition waiting for its next open attempt.
type pendingOpen struct {
	spec     partitionSpec
	attempts int
	due      uint64 // shard tick of the next attempt
	// bootPurge: opened at boot behind its recorded purge generation.
	bootPurge bool
}

// openShortOfResources reports whether an open failed only because the
// process ran out of descriptors or memory.
func openShortOfResources(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOMEM)
}

// deferOpen records spec for a later attempt after err.
func (sh *shardLoop) deferOpen(spec partitionSpec, err error, bootPurge bool) {
	ns := shard.MustNamespace(spec.stream, spec.topic, spec.id)
	if sh.pending == nil {
		sh.pending = map[shard.Namespace]*pendingOpen{}
	}
	po := sh.pending[ns]
	if po == nil || po.spec.revision != spec.revision {
		po = &pendingOpen{spec: spec, bootPurge: bootPurge}
		sh.pending[ns] = po
	}
	delay := uint64(reopenFirstTicks) << min(po.attempts, 5)
	delay = min(delay, reopenMaxTicks)
	po.attempts++
	po.due = sh.ticks + delay
	if len(sh.pending) == 1 || po.due < sh.pendingDue {
		sh.pendingDue = po.due
	}
	if po.attempts == 1 || po.attempts%10 == 0 {
		sh.log.Warn("cannot open a partition for lack of descriptors or memory; serving the others and retrying",
			zap.Stringer("partition", ns), zap.Int("attempts", po.attempts), zap.Uint64("retry_in_ticks", delay), zap.Error(err))
	}
}

// pendingRevision is the revision ns waits at (0: none).
func (sh *shardLoop) pendingRevision(ns shard.Namespace) uint64 {
	if po := sh.pending[ns]; po != nil {
		return po.spec.revision
	}
	return 0
}

// pendingFor reports whether ns at revision rev waits for a retry.
func (sh *shardLoop) pendingFor(ns shard.Namespace, rev uint64) bool {
	po := sh.pending[ns]
	return po != nil && po.spec.revision == rev
}

// dropPending forgets a pending partition (it was deleted or replaced).
func (sh *shardLoop) dropPending(ns shard.Namespace, rev uint64) {
	if sh.pendingFor(ns, rev) {
		delete(sh.pending, ns)
	}
}

// retryOpens retries the pending partitions that are due, in namespace
// order, stopping at the first that still cannot be opened (the others
// would fail alike; they wait for their own due tick).
func (sh *shardLoop) retryOpens() {
	if len(sh.pending) == 0 || sh.ticks < sh.pendingDue {
		return
	}
	due := make([]shard.Namespace, 0, len(sh.pending))
	next := ^uint64(0)
	for ns, po := range sh.pending {
		if po.due <= sh.ticks {
			due = append(due, ns)
		} else {
			next = min(next, po.due)
		}
	}
	// Attempts below may push it further; deferOpen lowers it again.
	sh.pendingDue = next
	slices.Sort(due)
	for _, ns := range due {
		po := sh.pending[ns]
		p, err := sh.openPartition(po.spec)
		if err != nil {
			if openShortOfResources(err) {
				sh.deferOpen(po.spec, err, po.bootPurge)
				return
			}
			delete(sh.pending, ns)
			sh.log.Error("opening partition failed", zap.Stringer("partition", ns), zap.Error(err))
			continue
		}
		delete(sh.pending, ns)
		sh.log.Info("partition opened after waiting for descriptors", zap.Stringer("partition", ns), zap.Int("attempts", po.attempts))
		if po.bootPurge && po.spec.purgeGen > p.PurgeGen() {
			p.submitPurge(po.spec.purgeGen)
		}
		sh.n.registerPartition(p)
	}
}
