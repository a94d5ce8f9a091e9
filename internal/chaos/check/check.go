// Package check decides whether a chaos history (package history) shows
// the behaviour iggo promises its clients. It is a pure function of the
// history: the runner calls it at the end of a run and `iggo chaos check`
// calls it on a saved history.
//
// # Checks
//
// Message plane (the workload's stream and topic), from sends, polls during
// the run and the final reads of every partition from every node:
//
//   - lost: a message whose send was acknowledged with (partition, base
//     offset) is not at base+k of that partition in a node's final read
//     (k is its position in the batch); an acknowledged send without
//     placement must still appear in its partition;
//   - duplicate: a message id seen at more than one place: twice in one
//     read, at two offsets, or in two partitions; or (unless the run is
//     AtLeastOnce) one logical message landed under two attempts. Send
//     operations that carry the same batch (a retry with the same message
//     ids and producer identity) are one send: invoked when the first was,
//     acknowledged if any was;
//   - retry-mismatch: two acknowledgements of one retried batch that place
//     it differently (a retry must get the original confirmation);
//   - failed-present: a message of a send that definitely failed was read;
//   - order: a read whose offsets are not dense and increasing from where
//     it started (final reads start at 0), or two sends in one partition
//     whose offsets contradict real time (B was acknowledged before A was
//     invoked, yet A has the lower offset), which includes each producer's
//     own order;
//   - offset-reuse: two different messages observed at one (partition,
//     offset), by any reads on any nodes, during or after the run, or by
//     acknowledgements;
//   - corrupt: a read message whose payload does not belong to its id, or
//     an id no producer of the run minted;
//   - diverged / unreadable: after healing, nodes disagree on a partition's
//     length, or a node could not be read at all.
//
// Consumer offsets (individual consumers and groups, per partition), from
// stores, reads of the stored offset, and polls with the next strategy
// (which reveal the stored offset) or auto-commit (which store one):
//
//   - offset-regress: a read observes a lower stored offset than an earlier
//     read (one that completed before it was invoked), and no store of that
//     lower value could have taken effect in between. Without StrictReads
//     only reads served by the same node are compared (followers may lag);
//   - offset-linearizable (StrictReads): every key's history is a
//     linearizable register under porcupine.
//
// Metadata: stream and topic create/delete/get are checked for
// linearizability with porcupine, partitioned by name; each name is a
// register of (exists, id). Failures that prove nothing (a transient
// rejection) are dropped, unknown outcomes may apply or not.
//
// Liveness: the liveness phase must complete LivenessOps successful
// operations within LivenessDeadline of its start, and no node may exit on
// its own (crash: the runner records such exits as observed faults).
//
// Data loss after destructive faults (wipe, corruption) that hit every copy
// the cluster keeps (ReplicaCopies) at once is reported as tolerated, not
// as a violation.
package check

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/iggo/iggo/internal/chaos/history"
)

// Check names.
const (
	Lost               = "lost"
	Duplicate          = "duplicate"
	RetryMismatch      = "retry-mismatch"
	FailedPresent      = "failed-present"
	Order              = "order"
	OffsetReuse        = "offset-reuse"
	Corrupt            = "corrupt"
	Diverged           = "diverged"
	Unreadable         = "unreadable"
	OffsetRegress      = "offset-regress"
	OffsetLinearizable = "offset-linearizable"
	MetadataLinear     = "metadata-linearizable"
	Liveness           = "liveness"
	Crash              = "crash"
	Malformed          = "malformed-history"
)

// Limits on a history header: the checker walks every (node, partition).
const (
	maxNodes      = 1024
	maxPartitions = 1 << 16
)

// Violation is one broken promise.
type Violation struct {
	Check  string
	Detail string
	// Events are the indexes of the events that show it.
	Events []int64
}

func (v Violation) String() string {
	s := v.Check + ": " + v.Detail
	if len(v.Events) > 0 {
		s += fmt.Sprintf(" (events %v)", v.Events)
	}
	return s
}

// Stats summarises a history.
type Stats struct {
	// Ops counts operations by kind and outcome.
	Ops map[history.Kind]map[history.Type]int
	// Faults counts injected faults (start actions) by kind.
	Faults map[string]int
	// Messages by send outcome: acknowledged, definitely failed, unknown.
	MsgAcked, MsgFailed, MsgUnknown int
	// UnknownPresent is how many unknown-outcome messages were found.
	UnknownPresent int
	// RetriedLogical counts logical messages present under more than one
	// attempt (a Duplicate violation unless the run is AtLeastOnce).
	RetriedLogical int
	// RetriedSends counts sends recorded as more than one operation (the
	// same batch retried with the same producer identity).
	RetriedSends int
	// Observations is the number of (offset, message) pairs read.
	Observations int
	// FinalLengths is the length of each partition per node after healing.
	FinalLengths map[int]map[uint32]int
	// LivenessOK is the number of successful liveness-phase operations.
	LivenessOK int
	// ToleratedLoss counts acknowledged messages lost after destructive
	// faults hit every copy.
	ToleratedLoss int
}

// Options tune checking.
type Options struct {
	// LinearizabilityTimeout bounds each porcupine check (0: 60 s). A
	// timeout is reported as a note, not a violation.
	LinearizabilityTimeout time.Duration
	// MaxExamples bounds the violations kept per check (0: 20); the rest
	// are counted.
	MaxExamples int
}

// Result is the verdict on a history.
type Result struct {
	Valid      bool
	Stats      Stats
	Violations []Violation
	// Counts is the number of violations per check, including those past
	// MaxExamples.
	Counts map[string]int
	// Notes are remarks that are not violations (tolerated loss, checks
	// that timed out or were skipped).
	Notes []string
	// Illegal holds porcupine's evidence for a failed linearizability
	// check, by check name, for visualisation (WriteVisualization).
	Illegal map[string]*Evidence

	max int
}

// Evidence is a porcupine model and its linearization info.
type Evidence struct {
	Model porcupine.Model
	Info  porcupine.LinearizationInfo
}

func (r *Result) flag(check, format string, events []int64, args ...any) {
	if r.Counts == nil {
		r.Counts = map[string]int{}
	}
	r.Counts[check]++
	if r.Counts[check] <= r.max {
		r.Violations = append(r.Violations, Violation{Check: check, Detail: fmt.Sprintf(format, args...), Events: events})
	}
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Check runs every check on a history.
func Check(meta history.Meta, events []history.Event, opts Options) *Result {
	if opts.LinearizabilityTimeout <= 0 {
		opts.LinearizabilityTimeout = 60 * time.Second
	}
	if opts.MaxExamples <= 0 {
		opts.MaxExamples = 20
	}
	r := &Result{max: opts.MaxExamples, Counts: map[string]int{}}
	if meta.Nodes < 0 || meta.Nodes > maxNodes || meta.Partitions < 0 || meta.Partitions > maxPartitions {
		r.flag(Malformed, "header declares %d nodes and %d partitions (limits %d and %d)", nil, meta.Nodes, meta.Partitions, maxNodes, maxPartitions)
		return r
	}
	ops, notes, err := history.Pair(events)
	if err != nil {
		r.flag(Malformed, "%v", nil, err)
		return r
	}
	slices.SortStableFunc(ops, func(a, b history.Op) int { return cmp.Compare(a.InvokeIndex, b.InvokeIndex) })
	r.Stats = Stats{Ops: map[history.Kind]map[history.Type]int{}, Faults: map[string]int{}, FinalLengths: map[int]map[uint32]int{}}
	for _, op := range ops {
		m := r.Stats.Ops[op.Kind]
		if m == nil {
			m = map[history.Type]int{}
			r.Stats.Ops[op.Kind] = m
		}
		m[op.Type]++
		if op.Kind == history.Fault && op.Args.Fault != nil {
			switch f := op.Args.Fault; f.Action {
			case "start":
				r.Stats.Faults[f.Kind]++
			case history.ActionObserved:
				if f.Kind == history.FaultCrash {
					r.flag(Crash, "node(s) %v exited on their own: %s", []int64{op.InvokeIndex}, f.Nodes, f.Detail)
				}
			}
		}
	}
	lossBefore := lossHorizon(meta, ops)
	checkMessages(r, meta, ops, lossBefore)
	checkOffsets(r, meta, ops, lossBefore, opts)
	checkMetadata(r, ops, opts)
	checkLiveness(r, meta, ops, notes)
	r.Valid = len(r.Counts) == 0
	for _, n := range r.Counts {
		if n > 0 {
			r.Valid = false
		}
	}
	return r
}

// lossHorizon is the time before which acknowledged data may be lost
// because destructive faults covered every copy at once (-1: never); an
// injection of unknown outcome counts until the end of the history.
func lossHorizon(meta history.Meta, ops []history.Op) int64 {
	copies := max(meta.Checks.ReplicaCopies, 1)
	destroyed := map[int]bool{}
	horizon := int64(-1)
	for _, op := range ops { // in invocation order
		f := op.Args.Fault
		if op.Kind != history.Fault || f == nil || op.Type == history.Fail {
			continue
		}
		switch {
		case f.Action == "start" && f.Destructive:
			for _, n := range f.Nodes {
				destroyed[n] = true
			}
			if len(destroyed) >= copies {
				// Writes acknowledged until the destruction was complete
				// (the node is stopped inside the fault) may be gone.
				horizon = op.End()
			}
		case f.Action == "heal":
			for _, n := range f.Nodes {
				delete(destroyed, n)
			}
		}
	}
	return horizon
}
