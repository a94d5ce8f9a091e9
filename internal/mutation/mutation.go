// Package mutation holds deliberate safety breakages of the node's storage
// stack (replica/consensus, replica/partition) that the real-stack
// simulator (tests/sim/stack) must catch: proof that its checks see what
// they claim to. They exist only in builds with the stackmutations tag; in
// every other build On is a constant false the compiler removes.
package mutation

// Kind names one breakage.
type Kind uint8

const (
	None Kind = iota
	// AckBeforeJournalSync: a group commit completes journal appends
	// (and so acknowledges persisted prepares) without their fdatasync.
	AckBeforeJournalSync
	// SkipCheckpointSegmentSync: a partition checkpoint names segment
	// data it did not fdatasync.
	SkipCheckpointSegmentSync
	// DropProducerTable: a partition checkpoint stores no producer table,
	// so retried sends are applied again after a restore.
	DropProducerTable
)

// Kinds lists every breakage.
var Kinds = []Kind{AckBeforeJournalSync, SkipCheckpointSegmentSync, DropProducerTable}

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case AckBeforeJournalSync:
		return "ack-before-journal-sync"
	case SkipCheckpointSegmentSync:
		return "skip-checkpoint-segment-sync"
	case DropProducerTable:
		return "drop-producer-table"
	}
	return "unknown"
}
