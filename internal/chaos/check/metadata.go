package check

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

// Metadata register model: each stream name, and each topic name within
// the metadata stream, is a register holding whether it exists and, if so,
// the id of its current incarnation.

type mdVerb uint8

const (
	mdCreate mdVerb = iota + 1
	mdDelete
	mdGet
)

type mdStatus uint8

const (
	mdOK mdStatus = iota + 1
	mdExists
	mdMissing
	mdUnknown
)

type mdIn struct {
	key  string
	verb mdVerb
}

type mdOut struct {
	status mdStatus
	id     uint32
	hasID  bool
}

type mdState struct {
	exists  bool
	id      uint32
	idKnown bool
}

var metadataModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(mdIn).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		slices.Sort(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{mdState{}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(mdState), input.(mdIn), output.(mdOut)
		switch in.verb {
		case mdCreate:
			switch out.status {
			case mdOK:
				if st.exists {
					return nil
				}
				return []any{mdState{exists: true, id: out.id, idKnown: out.hasID}}
			case mdExists:
				if !st.exists {
					return nil
				}
				return []any{st}
			case mdUnknown:
				if st.exists {
					return []any{st}
				}
				return []any{st, mdState{exists: true}}
			}
		case mdDelete:
			switch out.status {
			case mdOK:
				if !st.exists {
					return nil
				}
				return []any{mdState{}}
			case mdMissing:
				if st.exists {
					return nil
				}
				return []any{st}
			case mdUnknown:
				if !st.exists {
					return []any{st}
				}
				return []any{st, mdState{}}
			}
		case mdGet:
			switch out.status {
			case mdOK:
				if !st.exists {
					return nil
				}
				if !st.idKnown || !out.hasID {
					if out.hasID {
						st.id, st.idKnown = out.id, true
					}
					return []any{st}
				}
				if st.id != out.id {
					return nil
				}
				return []any{st}
			case mdMissing:
				if st.exists {
					return nil
				}
				return []any{st}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(mdIn), output.(mdOut)
		verb := map[mdVerb]string{mdCreate: "create", mdDelete: "delete", mdGet: "get"}[in.verb]
		res := map[mdStatus]string{mdOK: "ok", mdExists: "exists", mdMissing: "missing", mdUnknown: "unknown"}[out.status]
		if out.hasID {
			res += fmt.Sprintf(" id %d", out.id)
		}
		return fmt.Sprintf("%s %s -> %s", verb, in.key, res)
	},
	DescribeState: func(state any) string {
		st := state.(mdState)
		switch {
		case !st.exists:
			return "absent"
		case st.idKnown:
			return fmt.Sprintf("id %d", st.id)
		}
		return "exists (id unknown)"
	},
}

// mdOp translates a metadata operation; ok is false for operations that
// prove nothing (failures other than exists/missing, unknown reads).
func mdOp(op *history.Op, end int64) (porcupine.Operation, bool) {
	in := mdIn{}
	var existsCode, missingCode wire.Code
	switch op.Kind {
	case history.CreateStream, history.DeleteStream, history.GetStream:
		in.key = "stream " + op.Args.Name
		existsCode, missingCode = wire.CodeStreamNameAlreadyExists, wire.CodeStreamIdNotFound
	case history.CreateTopic, history.DeleteTopic, history.GetTopic:
		in.key = "topic " + op.Args.Stream + "/" + op.Args.Name
		existsCode, missingCode = wire.CodeTopicNameAlreadyExists, wire.CodeTopicIdNotFound
	default:
		return porcupine.Operation{}, false
	}
	switch op.Kind {
	case history.CreateStream, history.CreateTopic:
		in.verb = mdCreate
	case history.DeleteStream, history.DeleteTopic:
		in.verb = mdDelete
	default:
		in.verb = mdGet
	}
	out := mdOut{}
	ret := op.Complete
	switch op.Type {
	case history.OK:
		out.status = mdOK
		if op.Result.ID != nil {
			out.id, out.hasID = *op.Result.ID, true
		}
	case history.Fail:
		switch wire.Code(op.Code) {
		case existsCode:
			if in.verb != mdCreate {
				return porcupine.Operation{}, false
			}
			out.status = mdExists
		case missingCode:
			if in.verb == mdCreate {
				return porcupine.Operation{}, false
			}
			out.status = mdMissing
		default:
			return porcupine.Operation{}, false
		}
	default:
		if in.verb == mdGet {
			return porcupine.Operation{}, false
		}
		out.status = mdUnknown
		ret = end + 1
	}
	return porcupine.Operation{ClientId: max(op.Process, 0), Input: in, Call: op.Invoke, Output: out, Return: ret, Metadata: op.InvokeIndex}, true
}

func checkMetadata(r *Result, ops []history.Op, opts Options) {
	var end int64
	for i := range ops {
		end = max(end, ops[i].Complete)
	}
	var hist []porcupine.Operation
	for i := range ops {
		if p, ok := mdOp(&ops[i], end); ok {
			hist = append(hist, p)
		}
	}
	if len(hist) == 0 {
		return
	}
	model := metadataModel.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, hist, opts.LinearizabilityTimeout)
	switch res {
	case porcupine.Illegal:
		var keys []string
		for _, part := range metadataModel.Partition(hist) {
			if porcupine.CheckOperationsTimeout(model, part, opts.LinearizabilityTimeout) == porcupine.Illegal {
				keys = append(keys, part[0].Input.(mdIn).key)
			}
		}
		r.flag(MetadataLinear, "metadata history of %d operations is not linearizable; offending names: %v", nil, len(hist), keys)
		r.keep(MetadataLinear, model, info)
	case porcupine.Unknown:
		r.note("metadata linearizability check timed out after %v", opts.LinearizabilityTimeout)
	}
}
