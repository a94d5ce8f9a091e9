package history

import (
	"encoding/json"
	"fmt"
	"math"
)

// Type is an event's type.
type Type string

// Event types.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
	Note   Type = "note"
)

// Kind names an operation.
type Kind string

// Operation kinds.
const (
	// Send: args Stream, Topic, Partition, Msgs; ok result Partition and
	// Base (absent when the server confirmed without placement).
	Send Kind = "send"
	// Poll by an individual consumer: args Stream, Topic, Partition,
	// Consumer, Strategy, From, Count, AutoCommit; ok result Partition,
	// Read, Current.
	Poll Kind = "poll"
	// GroupPoll by a consumer-group member (partition chosen by the group):
	// args as Poll without Partition; ok result as Poll.
	GroupPoll Kind = "group_poll"
	// StoreOffset: args Stream, Topic, Partition, Consumer, Offset.
	StoreOffset Kind = "store_offset"
	// GetOffset: args Stream, Topic, Partition, Consumer; ok result Offset
	// (absent: nothing stored).
	GetOffset Kind = "get_offset"
	// JoinGroup and LeaveGroup: args Stream, Topic, Consumer ("g:name").
	JoinGroup  Kind = "join_group"
	LeaveGroup Kind = "leave_group"
	// Metadata: args Name (stream name; for topics the topic name within
	// the metadata stream given by Stream); ok result ID for create and get.
	CreateStream Kind = "create_stream"
	DeleteStream Kind = "delete_stream"
	GetStream    Kind = "get_stream"
	CreateTopic  Kind = "create_topic"
	DeleteTopic  Kind = "delete_topic"
	GetTopic     Kind = "get_topic"
	// FinalRead reads one whole partition from one node after healing:
	// args Stream, Topic, Partition, Node; ok result Read, Current.
	FinalRead Kind = "final_read"
	// Fault is a nemesis action: args Fault.
	Fault Kind = "fault"
)

// Phases named by note events.
const (
	PhaseWorkload = "workload"
	PhaseHeal     = "heal"
	PhaseLiveness = "liveness"
	PhaseFinal    = "final"
	PhaseDone     = "done"
)

// Value holds an operation's arguments or results. Fields that do not
// apply to a kind are left out.
type Value struct {
	Stream    string  `json:"stream,omitempty"`
	Topic     string  `json:"topic,omitempty"`
	Partition *uint32 `json:"part,omitempty"`
	// Consumer is "c:<id>" for an individual consumer, "g:<name>" for a
	// consumer group.
	Consumer string `json:"consumer,omitempty"`
	// Node is the node a final read is addressed to.
	Node *int `json:"node,omitempty"`

	Msgs []MsgID `json:"msgs,omitempty"`
	Base *uint64 `json:"base,omitempty"`

	Strategy   string  `json:"strategy,omitempty"`
	From       *uint64 `json:"from,omitempty"`
	Count      uint32  `json:"count,omitempty"`
	AutoCommit bool    `json:"auto,omitempty"`
	Read       []Obs   `json:"read,omitempty"`
	Current    *uint64 `json:"current,omitempty"`

	Offset *uint64 `json:"offset,omitempty"`

	Name string  `json:"name,omitempty"`
	ID   *uint32 `json:"id,omitempty"`

	Fault *FaultInfo `json:"fault,omitempty"`

	Phase string `json:"phase,omitempty"`
}

// Fault actions and the kind of an observed crash.
const (
	ActionStart    = "start"
	ActionHeal     = "heal"
	ActionObserved = "observed"
	// FaultCrash is observed when a node exits without being killed.
	FaultCrash = "crash"
	// MonitorProcess records observed faults, apart from the nemesis.
	MonitorProcess = -2
)

// FaultInfo describes a nemesis action.
type FaultInfo struct {
	// Kind is the schedule's fault kind (kill, pause, wipe, corrupt,
	// partition, ...).
	Kind string `json:"kind"`
	// Action is "start" (inject), "heal", or "observed" (something the
	// runner saw happen, such as a crash).
	Action string `json:"action"`
	Nodes  []int  `json:"nodes,omitempty"`
	// Destructive marks a fault that destroys data on its nodes (wipe,
	// corruption).
	Destructive bool   `json:"destructive,omitempty"`
	Detail      string `json:"detail,omitempty"`
}

// Event is one line of a history.
type Event struct {
	Index   int64  `json:"i"`
	Time    int64  `json:"t"`
	Type    Type   `json:"type"`
	Process int    `json:"p"`
	Kind    Kind   `json:"f,omitempty"`
	Node    *int   `json:"n,omitempty"`
	Value   *Value `json:"v,omitempty"`
	Err     string `json:"err,omitempty"`
	Code    int    `json:"code,omitempty"`
}

// NemesisProcess is the process id of fault events.
const NemesisProcess = -1

// Meta is the header line of a history.
type Meta struct {
	Type    string `json:"type"` // always "meta"
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	Seed    int64  `json:"seed"`
	// Started is the wall-clock start, RFC 3339.
	Started string `json:"started"`
	Nodes   int    `json:"nodes"`
	// Tag is the run tag stamped into every message id.
	Tag        uint32 `json:"tag"`
	Stream     string `json:"stream"`
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	// Checks configures the checker for this run.
	Checks CheckConfig `json:"checks"`
	// Options and Schedule are the runner's options and fault schedule,
	// kept for replay; the checker does not read them.
	Options  json.RawMessage `json:"options,omitempty"`
	Schedule json.RawMessage `json:"schedule,omitempty"`
}

// MetaVersion is the history format version this package writes. Version
// 2 added Checks.AtLeastOnce and retried sends (one send's message ids in
// several send operations); a version 1 history is read with AtLeastOnce
// set, the semantics it was recorded under.
const MetaVersion = 2

// CheckConfig is what the checker needs to know about the run beyond the
// events.
type CheckConfig struct {
	// LivenessOps is how many operations must succeed in the liveness
	// phase, within LivenessDeadline nanoseconds of its start.
	LivenessOps      int   `json:"liveness_ops"`
	LivenessDeadline int64 `json:"liveness_deadline_ns"`
	// StrictReads asks for linearizable reads: consumer offsets are
	// checked as linearizable registers and offset reads across nodes must
	// not go back. Off, reads are only required not to go back on the same
	// node (followers may serve stale reads).
	StrictReads bool `json:"strict_reads"`
	// ReplicaCopies is how many copies of each acknowledged write the
	// cluster keeps (the node count). Losing data after destructive faults
	// on that many nodes at once is tolerated and reported, not flagged.
	ReplicaCopies int `json:"replica_copies"`
	// AtLeastOnce allows a logical message to land under more than one
	// attempt (a workload whose retries are new sends, as with Iggy's
	// SDKs). Off (the default since format version 2), every logical
	// message lands at most once: retries reuse the message ids and the
	// producer identity, and the server applies them once.
	AtLeastOnce bool `json:"at_least_once,omitempty"`
}

// Never is the completion time of an operation whose outcome is unknown:
// its effect may land at any time after its invocation.
const Never = int64(math.MaxInt64)

// Op is an invocation paired with its completion.
type Op struct {
	Process int
	Kind    Kind
	// Type is OK, Fail or Info.
	Type Type
	// Invoke and Complete are the event times in ns. Complete is the time
	// the client gave up for Info operations (see End).
	Invoke, Complete int64
	// InvokeIndex and CompleteIndex are the event indexes (CompleteIndex
	// is 0 for an invocation that never completed).
	InvokeIndex, CompleteIndex int64
	// Node served the operation, -1 when unknown.
	Node   int
	Args   Value
	Result Value
	Err    string
	Code   int
}

// End is the latest time the operation can take effect: Complete, or Never
// when the outcome is unknown.
func (o *Op) End() int64 {
	if o.Type == Info {
		return Never
	}
	return o.Complete
}

func (o *Op) String() string {
	s := fmt.Sprintf("#%d p%d %s %s", o.InvokeIndex, o.Process, o.Kind, o.Type)
	if o.Node >= 0 {
		s += fmt.Sprintf(" node %d", o.Node)
	}
	if o.Err != "" {
		s += " (" + o.Err + ")"
	}
	return s
}

// Pair matches each process's invocation with its completion. Fault and
// note events are returned separately: faults as ops like any other (their
// process is NemesisProcess), notes as they are. Invocations left open at
// the end become Info ops completing at the last event's time. A
// completion without an open invocation, or a second invocation while one
// is open, is an error: the history is malformed.
func Pair(events []Event) (ops []Op, notes []Event, err error) {
	open := map[int]int{} // process -> index into ops
	var last int64
	for _, e := range events {
		last = max(last, e.Time)
		switch e.Type {
		case Note:
			notes = append(notes, e)
		case Invoke:
			if i, ok := open[e.Process]; ok {
				return nil, nil, fmt.Errorf("history: event %d: process %d invokes %s while %s (event %d) is open",
					e.Index, e.Process, e.Kind, ops[i].Kind, ops[i].InvokeIndex)
			}
			op := Op{Process: e.Process, Kind: e.Kind, Invoke: e.Time, InvokeIndex: e.Index, Node: -1}
			if e.Value != nil {
				op.Args = *e.Value
			}
			open[e.Process] = len(ops)
			ops = append(ops, op)
		case OK, Fail, Info:
			i, ok := open[e.Process]
			if !ok {
				return nil, nil, fmt.Errorf("history: event %d: %s completion of process %d without an invocation", e.Index, e.Type, e.Process)
			}
			if ops[i].Kind != e.Kind {
				return nil, nil, fmt.Errorf("history: event %d: %s completion of process %d does not match its open %s", e.Index, e.Kind, e.Process, ops[i].Kind)
			}
			delete(open, e.Process)
			op := &ops[i]
			op.Type = e.Type
			op.Complete = e.Time
			op.CompleteIndex = e.Index
			if e.Node != nil {
				op.Node = *e.Node
			}
			if e.Value != nil {
				op.Result = *e.Value
			}
			op.Err, op.Code = e.Err, e.Code
		default:
			return nil, nil, fmt.Errorf("history: event %d: unknown type %q", e.Index, e.Type)
		}
	}
	for _, i := range open {
		ops[i].Type = Info
		ops[i].Complete = last
		ops[i].Err = "no completion recorded"
	}
	return ops, notes, nil
}

// U32 and U64 return pointers, for building Values.
func U32(v uint32) *uint32 { return &v }

// U64 returns a pointer to v.
func U64(v uint64) *uint64 { return &v }

// Int returns a pointer to v.
func Int(v int) *int { return &v }
