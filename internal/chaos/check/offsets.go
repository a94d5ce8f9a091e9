package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/iggo/iggo/internal/chaos/history"
)

// noOffset is the register value "nothing stored".
const noOffset = int64(-1)

type offKey struct {
	consumer string
	part     uint32
}

func (k offKey) String() string { return fmt.Sprintf("%s/p%d", k.consumer, k.part) }

// offRead observes the stored offset; offWrite stores one. A wild write is
// an auto-commit poll of unknown outcome: it may have stored any offset.
type offRead struct {
	op *history.Op
	v  int64
}

type offWrite struct {
	op   *history.Op
	v    int64
	wild bool
}

type offHistory struct {
	reads  []offRead
	writes []offWrite
	ops    []porcupine.Operation
}

// Porcupine encoding of a consumer-offset register.
type offIn struct {
	read  bool  // observes the value first
	write bool  // then stores w
	wild  bool  // may store anything (unknown auto-commit)
	w     int64 //
}

type offOut struct {
	v       int64 // read value (read ops)
	unknown bool  // outcome unknown: may not have applied
}

type offState struct {
	v   int64
	unk bool // a wild write may have stored anything
}

func checkOffsets(r *Result, meta history.Meta, ops []history.Op, lossBefore int64, opts Options) {
	var end int64
	for i := range ops {
		end = max(end, ops[i].Complete)
	}
	hists := map[offKey]*offHistory{}
	get := func(k offKey) *offHistory {
		h := hists[k]
		if h == nil {
			h = &offHistory{}
			hists[k] = h
		}
		return h
	}
	for i := range ops {
		op := &ops[i]
		if !onWorkload(meta, op.Args) || op.Args.Consumer == "" {
			continue
		}
		ret := op.Complete
		if op.Type == history.Info {
			ret = end + 1
		}
		pop := func(in offIn, out offOut) porcupine.Operation {
			return porcupine.Operation{ClientId: max(op.Process, 0), Input: in, Call: op.Invoke, Output: out, Return: ret, Metadata: op.InvokeIndex}
		}
		switch op.Kind {
		case history.StoreOffset:
			if op.Type == history.Fail || op.Args.Partition == nil || op.Args.Offset == nil {
				continue
			}
			h := get(offKey{op.Args.Consumer, *op.Args.Partition})
			v := int64(*op.Args.Offset)
			h.writes = append(h.writes, offWrite{op: op, v: v})
			h.ops = append(h.ops, pop(offIn{write: true, w: v}, offOut{unknown: op.Type == history.Info}))
		case history.GetOffset:
			if op.Type != history.OK || op.Args.Partition == nil {
				continue
			}
			h := get(offKey{op.Args.Consumer, *op.Args.Partition})
			v := noOffset
			if op.Result.Offset != nil {
				v = int64(*op.Result.Offset)
			}
			h.reads = append(h.reads, offRead{op, v})
			h.ops = append(h.ops, pop(offIn{read: true}, offOut{v: v}))
		case history.Poll, history.GroupPoll:
			if op.Type == history.Fail {
				continue
			}
			if op.Type == history.Info {
				if !op.Args.AutoCommit {
					continue
				}
				// Outcome unknown: the server may have stored the last
				// offset it served, which nobody saw; a group poll may have
				// done so on any partition.
				parts := []uint32{}
				if op.Args.Partition != nil {
					parts = append(parts, *op.Args.Partition)
				} else {
					for p := 0; p < meta.Partitions; p++ {
						parts = append(parts, uint32(p))
					}
				}
				for _, p := range parts {
					h := get(offKey{op.Args.Consumer, p})
					h.writes = append(h.writes, offWrite{op: op, wild: true})
					h.ops = append(h.ops, pop(offIn{wild: true}, offOut{unknown: true}))
				}
				continue
			}
			if op.Result.Partition == nil {
				continue
			}
			k := offKey{op.Args.Consumer, *op.Result.Partition}
			read := op.Result.Read
			if len(read) == 0 {
				continue
			}
			h := get(k)
			in := offIn{}
			out := offOut{}
			// A next-strategy poll starts at stored + 1 (0 when nothing is
			// stored), which reveals the stored offset, unless destroyed
			// data left holes the poll skipped over.
			if op.Args.Strategy == "next" && (lossBefore < 0 || op.Invoke < lossBefore) {
				v := int64(read[0].Offset) - 1
				h.reads = append(h.reads, offRead{op, v})
				in.read, out.v = true, v
			}
			if op.Args.AutoCommit {
				w := int64(read[len(read)-1].Offset)
				h.writes = append(h.writes, offWrite{op: op, v: w})
				in.write, in.w = true, w
			}
			if in.read || in.write {
				h.ops = append(h.ops, pop(in, out))
			}
		}
	}
	keys := make([]offKey, 0, len(hists))
	for k := range hists {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b offKey) int { return strings.Compare(a.String(), b.String()) })
	for _, k := range keys {
		h := hists[k]
		checkRegress(r, k, h, lossBefore, meta.Checks.StrictReads)
		if meta.Checks.StrictReads && lossBefore < 0 {
			checkRegister(r, k, h, opts)
		}
	}
	if meta.Checks.StrictReads && lossBefore >= 0 {
		r.note("consumer-offset linearizability skipped: destructive faults hit every copy")
	}
}

// checkRegress: a read that follows another read in real time sees a value
// at least as high, unless a store of the lower value could have landed in
// between.
func checkRegress(r *Result, k offKey, h *offHistory, lossBefore int64, strict bool) {
	reads := slices.Clone(h.reads)
	slices.SortStableFunc(reads, func(a, b offRead) int { return cmpInt64(a.op.Complete, b.op.Complete) })
	for _, r2 := range reads {
		for _, r1 := range reads {
			if r1.op.Complete >= r2.op.Invoke {
				break // sorted by completion: no later read precedes r2
			}
			if r1.v <= r2.v || r1.op == r2.op {
				continue
			}
			if !strict && (r1.op.Node != r2.op.Node || r1.op.Node < 0) {
				continue
			}
			if lossBefore >= 0 && r1.op.Complete < lossBefore {
				continue // destroyed with every copy: tolerated
			}
			if explained(h.writes, r1, r2) {
				continue
			}
			r.flag(OffsetRegress, "%v: read %d (event %d, node %d) after read %d (event %d, node %d), and no store of %d could land in between",
				[]int64{r1.op.InvokeIndex, r2.op.InvokeIndex}, k, r2.v, r2.op.InvokeIndex, r2.op.Node, r1.v, r1.op.InvokeIndex, r1.op.Node, r2.v)
			break
		}
	}
}

func explained(writes []offWrite, r1, r2 offRead) bool {
	for _, w := range writes {
		if w.op == r2.op {
			continue // a poll stores after it reads
		}
		if !(w.wild && r2.v != noOffset) && w.v != r2.v {
			continue
		}
		if w.op.Invoke < r2.op.Complete && w.op.End() > r1.op.Invoke {
			return true
		}
	}
	return false
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

var offsetModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{offState{v: noOffset}} },
	Step: func(state, input, output any) []any {
		st, in, out := state.(offState), input.(offIn), output.(offOut)
		if in.read {
			switch {
			case st.unk:
				st = offState{v: out.v}
			case st.v != out.v:
				return nil
			}
		}
		switch {
		case in.wild:
			return []any{st, offState{unk: true}}
		case in.write && out.unknown:
			return []any{st, offState{v: in.w}}
		case in.write:
			return []any{offState{v: in.w}}
		}
		return []any{st}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(offIn), output.(offOut)
		var s []string
		if in.read {
			s = append(s, fmt.Sprintf("read -> %d", out.v))
		}
		if in.write {
			s = append(s, fmt.Sprintf("store %d", in.w))
		}
		if in.wild {
			s = append(s, "store ?")
		}
		if out.unknown {
			s = append(s, "(unknown)")
		}
		return strings.Join(s, ", ")
	},
	DescribeState: func(state any) string {
		st := state.(offState)
		if st.unk {
			return "?"
		}
		return fmt.Sprint(st.v)
	},
}

func checkRegister(r *Result, k offKey, h *offHistory, opts Options) {
	if len(h.ops) == 0 {
		return
	}
	model := offsetModel.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, h.ops, opts.LinearizabilityTimeout)
	switch res {
	case porcupine.Illegal:
		r.flag(OffsetLinearizable, "%v: the stored-offset history of %d operations is not linearizable", nil, k, len(h.ops))
		r.keep(OffsetLinearizable+" "+k.String(), model, info)
	case porcupine.Unknown:
		r.note("consumer offsets %v: linearizability check timed out", k)
	}
}

func (r *Result) keep(name string, m porcupine.Model, info porcupine.LinearizationInfo) {
	if r.Illegal == nil {
		r.Illegal = map[string]*Evidence{}
	}
	r.Illegal[name] = &Evidence{Model: m, Info: info}
}
