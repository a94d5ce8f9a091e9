package check

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/iggo/iggo/internal/chaos/history"
)

type loc struct {
	part uint32
	off  uint64
}

func (l loc) String() string { return fmt.Sprintf("p%d@%d", l.part, l.off) }

type sendStatus int

const (
	acked    sendStatus = iota // ok with placement
	unplaced                   // ok without placement
	failed
	unknown
)

// attempt is one message of one send operation.
type attempt struct {
	op     *history.Op
	k      int // position in the batch
	status sendStatus
	part   uint32 // requested (or acknowledged) partition
	want   loc    // acked only
}

// sighting is a message observed at a location.
type sighting struct {
	at      loc
	id      history.MsgID
	event   int64
	node    int
	corrupt bool
	ack     bool
}

func (a *attempt) event() int64 {
	if a.op.CompleteIndex != 0 {
		return a.op.CompleteIndex
	}
	return a.op.InvokeIndex
}

func onWorkload(meta history.Meta, v history.Value) bool {
	return meta.Stream == "" || (v.Stream == meta.Stream && v.Topic == meta.Topic)
}

// mergeRetries folds the send operations that carry the same batch (the
// same message ids, in order: a retry with the same producer identity) into
// one operation: invoked when the first was, acknowledged if any was (the
// acknowledgements must agree on the placement, or RetryMismatch), of
// unknown outcome if any was and none acknowledged, failed only if all
// failed. Other operations are returned as they are, in order.
func mergeRetries(r *Result, meta history.Meta, ops []history.Op) []*history.Op {
	type group struct {
		merged *history.Op
		n      int
	}
	byFirst := map[history.MsgID]*group{}
	var out []*history.Op
	for i := range ops {
		op := &ops[i]
		if op.Kind != history.Send || !onWorkload(meta, op.Args) || op.Args.Partition == nil || len(op.Args.Msgs) == 0 {
			out = append(out, op)
			continue
		}
		g := byFirst[op.Args.Msgs[0]]
		if g == nil || !slices.Equal(g.merged.Args.Msgs, op.Args.Msgs) || *g.merged.Args.Partition != *op.Args.Partition {
			if g == nil {
				c := *op
				byFirst[op.Args.Msgs[0]] = &group{merged: &c, n: 1}
				out = append(out, &c)
			} else {
				out = append(out, op) // an id reused in another batch: Malformed below
			}
			continue
		}
		g.n++
		if g.n == 2 {
			r.Stats.RetriedSends++
		}
		m := g.merged
		switch {
		case op.Type == history.OK && m.Type == history.OK:
			if !samePlace(m.Result, op.Result) {
				r.flag(RetryMismatch, "retried send confirmed at %s (event %d) and at %s (event %d)",
					[]int64{m.CompleteIndex, op.CompleteIndex}, placeOf(m.Result), m.CompleteIndex, placeOf(op.Result), op.CompleteIndex)
			}
		case op.Type == history.OK:
			m.Type, m.Result, m.Complete, m.CompleteIndex, m.Node, m.Err, m.Code = op.Type, op.Result, op.Complete, op.CompleteIndex, op.Node, op.Err, op.Code
		case m.Type == history.OK:
		case op.Type == history.Info || m.Type == history.Info:
			m.Type = history.Info
			m.Complete, m.CompleteIndex = max(m.Complete, op.Complete), max(m.CompleteIndex, op.CompleteIndex)
		default: // both failed
			m.Complete, m.CompleteIndex, m.Err, m.Code = op.Complete, op.CompleteIndex, op.Err, op.Code
		}
	}
	return out
}

func samePlace(a, b history.Value) bool {
	return (a.Partition == nil) == (b.Partition == nil) && (a.Base == nil) == (b.Base == nil) &&
		(a.Partition == nil || *a.Partition == *b.Partition) && (a.Base == nil || *a.Base == *b.Base)
}

func placeOf(v history.Value) string {
	if v.Partition == nil || v.Base == nil {
		return "(no placement)"
	}
	return loc{*v.Partition, *v.Base}.String()
}

func checkMessages(r *Result, meta history.Meta, all []history.Op, lossBefore int64) {
	attempts := map[history.MsgID]*attempt{}
	var sends []*history.Op
	ops := mergeRetries(r, meta, all)
	for _, op := range ops {
		if op.Kind != history.Send || !onWorkload(meta, op.Args) || op.Args.Partition == nil {
			continue
		}
		sends = append(sends, op)
		for k, id := range op.Args.Msgs {
			a := &attempt{op: op, k: k, part: *op.Args.Partition}
			switch {
			case op.Type == history.OK && op.Result.Base != nil && op.Result.Partition != nil:
				a.status = acked
				a.part = *op.Result.Partition
				a.want = loc{a.part, *op.Result.Base + uint64(k)}
				r.Stats.MsgAcked++
			case op.Type == history.OK:
				a.status = unplaced
				r.Stats.MsgAcked++
			case op.Type == history.Fail:
				a.status = failed
				r.Stats.MsgFailed++
			default:
				a.status = unknown
				r.Stats.MsgUnknown++
			}
			if prev, dup := attempts[id]; dup {
				r.flag(Malformed, "message id %s sent twice (events %d and %d): the workload must mint one id per attempt",
					[]int64{prev.op.InvokeIndex, op.InvokeIndex}, id, prev.op.InvokeIndex, op.InvokeIndex)
				continue
			}
			attempts[id] = a
		}
		if op.Type == history.OK && op.Result.Partition != nil && *op.Result.Partition != *op.Args.Partition {
			r.flag(Lost, "send to partition %d acknowledged on partition %d", []int64{op.CompleteIndex}, *op.Args.Partition, *op.Result.Partition)
		}
	}

	// Every place a message was seen: acknowledgements, reads during the
	// run, final reads, visited as they are found (a run can observe
	// millions). Acknowledgements take part in the reuse check only: an
	// acknowledged message read elsewhere is lost (misplaced), not
	// duplicated.
	byLoc := map[loc]sighting{}
	reported := map[loc]bool{}
	pl := places{first: map[history.MsgID]sighting{}, extra: map[history.MsgID][]sighting{}}
	visit := func(s sighting) {
		if prev, ok := byLoc[s.at]; ok {
			if prev.id != s.id && !reported[s.at] {
				reported[s.at] = true
				r.flag(OffsetReuse, "%v holds %s (event %d, node %d) and %s (event %d, node %d)",
					[]int64{prev.event, s.event}, s.at, prev.id, prev.event, prev.node, s.id, s.event, s.node)
			}
		} else {
			byLoc[s.at] = s
		}
		if s.ack {
			return
		}
		a := attempts[s.id]
		if s.corrupt || s.id.Foreign || a == nil {
			what := "payload does not belong to its id"
			switch {
			case s.id.Foreign:
				what = "id was not minted by this run's producers"
			case a == nil:
				what = "no send of this id was recorded"
			}
			r.flag(Corrupt, "message %s at %v on node %d: %s", []int64{s.event}, s.id, s.at, s.node, what)
		}
		if pl.add(s) && a != nil && a.status == failed {
			r.flag(FailedPresent, "message %s of a send that failed (%s) is at %v (event %d, node %d)",
				[]int64{a.event(), s.event}, s.id, a.op.Err, s.at, s.event, s.node)
		}
	}
	for _, id := range sortedIDs(attempts) {
		if a := attempts[id]; a.status == acked {
			visit(sighting{at: a.want, id: id, event: a.event(), node: a.op.Node, ack: true})
		}
	}
	// final[node][partition] is the last successful final read.
	final := map[int]map[uint32]*history.Op{}
	for _, op := range ops {
		if op.Type != history.OK || !onWorkload(meta, op.Args) {
			continue
		}
		var part uint32
		switch op.Kind {
		case history.Poll, history.GroupPoll:
			if op.Result.Partition == nil {
				continue
			}
			part = *op.Result.Partition
		case history.FinalRead:
			if op.Args.Partition == nil || op.Args.Node == nil {
				continue
			}
			part = *op.Args.Partition
			if final[*op.Args.Node] == nil {
				final[*op.Args.Node] = map[uint32]*history.Op{}
			}
			final[*op.Args.Node][part] = op
		default:
			continue
		}
		checkDense(r, op, part, lossBefore >= 0)
		for _, o := range op.Result.Read {
			visit(sighting{at: loc{part, o.Offset}, id: o.ID, event: op.CompleteIndex, node: op.Node, corrupt: o.Corrupt})
			r.Stats.Observations++
		}
	}
	for _, id := range sortedIDs(pl.extra) {
		ps := append([]sighting{pl.first[id]}, pl.extra[id]...)
		var evs []int64
		desc := ""
		for i, p := range ps {
			evs = append(evs, p.event)
			if i < 4 {
				desc += fmt.Sprintf(" %v(event %d)", p.at, p.event)
			}
		}
		r.flag(Duplicate, "message %s seen at %d places:%s", evs, id, len(ps), desc)
	}

	// Final reads: every acknowledged message at its place on every node.
	nodes := max(meta.Nodes, len(final))
	parts := uint32(max(meta.Partitions, 0))
	for n := 0; n < nodes; n++ {
		for p := uint32(0); p < parts; p++ {
			if final[n][p] == nil {
				r.flag(Unreadable, "node %d: partition %d was never read after healing", nil, n, p)
			}
		}
	}
	unplacedAcks := false
	for _, a := range attempts {
		unplacedAcks = unplacedAcks || a.status == unplaced
	}
	index := map[int]map[uint32][]history.Obs{}
	present := map[int]map[history.MsgID]bool{}
	for n, byPart := range final {
		index[n] = map[uint32][]history.Obs{}
		present[n] = map[history.MsgID]bool{}
		if r.Stats.FinalLengths[n] == nil {
			r.Stats.FinalLengths[n] = map[uint32]int{}
		}
		for p, op := range byPart {
			read := op.Result.Read
			if !slices.IsSortedFunc(read, byOffset) {
				read = slices.Clone(read)
				slices.SortStableFunc(read, byOffset)
			}
			index[n][p] = read
			if unplacedAcks {
				for _, o := range read {
					present[n][o.ID] = true
				}
			}
			r.Stats.FinalLengths[n][p] = len(op.Result.Read)
		}
	}
	for p := uint32(0); p < parts; p++ {
		lengths := map[int]int{}
		for n := range final {
			if op := final[n][p]; op != nil {
				lengths[n] = len(op.Result.Read)
			}
		}
		lo, hi := -1, -1
		for _, n := range sortedKeys(lengths) {
			if lo < 0 || lengths[n] < lengths[lo] {
				lo = n
			}
			if hi < 0 || lengths[n] > lengths[hi] {
				hi = n
			}
		}
		if lo >= 0 && lengths[lo] != lengths[hi] {
			r.flag(Diverged, "partition %d after healing: node %d has %d messages, node %d has %d",
				[]int64{final[lo][p].CompleteIndex, final[hi][p].CompleteIndex}, p, lo, lengths[lo], hi, lengths[hi])
		}
	}
	finalNodes := sortedKeys(final)
	for _, id := range sortedIDs(attempts) {
		a := attempts[id]
		if a.status != acked && a.status != unplaced {
			continue
		}
		for _, n := range finalNodes {
			read := index[n][a.part]
			if final[n][a.part] == nil {
				continue // reported as unreadable
			}
			var miss string
			if a.status == acked {
				if got, ok := at(read, a.want.off); !ok {
					miss = fmt.Sprintf("offset %d is absent (partition has %d messages)", a.want.off, len(read))
				} else if got != id {
					miss = fmt.Sprintf("offset %d holds %s", a.want.off, got)
				}
			} else if !present[n][id] {
				miss = "absent"
			}
			if miss == "" {
				continue
			}
			if a.op.Complete < lossBefore {
				r.Stats.ToleratedLoss++
				continue
			}
			where := "partition " + fmt.Sprint(a.part)
			if a.status == acked {
				where = a.want.String()
			}
			r.flag(Lost, "message %s acknowledged at %s (event %d) not in node %d's final read: %s",
				[]int64{a.event(), final[n][a.part].CompleteIndex}, id, where, a.event(), n, miss)
		}
	}
	if r.Stats.ToleratedLoss > 0 {
		r.note("%d acknowledged message reads were missing after destructive faults hit every copy (tolerated)", r.Stats.ToleratedLoss)
	}

	// Unknown outcomes that landed, and logical messages landed twice.
	landed := map[history.Logical]map[uint32]bool{}
	for _, id := range sortedIDs(pl.first) {
		a := attempts[id]
		if a == nil {
			continue
		}
		if a.status == unknown {
			r.Stats.UnknownPresent++
		}
		if a.status != failed {
			l := id.Logical()
			if landed[l] == nil {
				landed[l] = map[uint32]bool{}
			}
			landed[l][id.Attempt] = true
		}
	}
	for _, l := range sortedLogical(landed) {
		if atts := landed[l]; len(atts) > 1 {
			r.Stats.RetriedLogical++
			if !meta.Checks.AtLeastOnce {
				r.flag(Duplicate, "logical message %d/%d landed under %d attempts (exactly-once: retries must reuse the batch)",
					nil, l.Producer, l.Seq, len(atts))
			}
		}
	}

	checkRealTime(r, sends, &pl)
}

// places records where each message id was read: the first place, and any
// further distinct ones (duplicates).
type places struct {
	first map[history.MsgID]sighting
	extra map[history.MsgID][]sighting
}

// add records s and reports whether it is the id's first sighting.
func (p *places) add(s sighting) bool {
	f, ok := p.first[s.id]
	if !ok {
		p.first[s.id] = s
		return true
	}
	if f.at == s.at || slices.ContainsFunc(p.extra[s.id], func(x sighting) bool { return x.at == s.at }) {
		return false
	}
	p.extra[s.id] = append(p.extra[s.id], s)
	return false
}

// only returns the id's place if it was read at exactly one.
func (p *places) only(id history.MsgID) (sighting, bool) {
	f, ok := p.first[id]
	return f, ok && len(p.extra[id]) == 0
}

func byOffset(a, b history.Obs) int { return cmp.Compare(a.Offset, b.Offset) }

// at finds the message at offset off of a read sorted by offset.
func at(read []history.Obs, off uint64) (history.MsgID, bool) {
	i, ok := slices.BinarySearchFunc(read, off, func(o history.Obs, off uint64) int { return cmp.Compare(o.Offset, off) })
	if !ok {
		return history.MsgID{}, false
	}
	return read[i].ID, true
}

// checkDense: a read's offsets are consecutive; a final read starts at 0;
// a read from an explicit offset starts there. After destructive faults
// hit every copy (tolerant) a read may skip lost offsets, but never go
// back or repeat one.
func checkDense(r *Result, op *history.Op, part uint32, tolerant bool) {
	read := op.Result.Read
	if len(read) == 0 {
		return
	}
	if tolerant {
		for i := 1; i < len(read); i++ {
			if read[i].Offset <= read[i-1].Offset {
				r.flag(Order, "%s of partition %d on node %d: offset %d follows %d", []int64{op.CompleteIndex}, op.Kind, part, op.Node, read[i].Offset, read[i-1].Offset)
				return
			}
		}
		return
	}
	if op.Kind == history.FinalRead && read[0].Offset != 0 {
		r.flag(Order, "final read of partition %d on node %d starts at offset %d, not 0", []int64{op.CompleteIndex}, part, op.Node, read[0].Offset)
	}
	if (op.Args.Strategy == "offset" || op.Args.Strategy == "first") && op.Args.From != nil && read[0].Offset != *op.Args.From {
		r.flag(Order, "poll of partition %d from offset %d returned offset %d first", []int64{op.CompleteIndex}, part, *op.Args.From, read[0].Offset)
	}
	for i := 1; i < len(read); i++ {
		if read[i].Offset != read[i-1].Offset+1 {
			r.flag(Order, "%s of partition %d on node %d: offset %d follows %d", []int64{op.CompleteIndex}, op.Kind, part, op.Node, read[i].Offset, read[i-1].Offset)
			return
		}
	}
}

// checkRealTime: within a partition, a send invoked after another send was
// acknowledged must land at higher offsets; a batch lands contiguously and
// in order.
func checkRealTime(r *Result, sends []*history.Op, pl *places) {
	type placed struct {
		op  *history.Op
		off uint64
	}
	byPart := map[uint32][]placed{}
	for _, op := range sends {
		if op.Type == history.Fail || len(op.Args.Msgs) == 0 {
			continue
		}
		var first loc
		found := false
		if op.Type == history.OK && op.Result.Base != nil && op.Result.Partition != nil {
			first, found = loc{*op.Result.Partition, *op.Result.Base}, true
		} else if s, ok := pl.only(op.Args.Msgs[0]); ok {
			first, found = s.at, true
		}
		if !found {
			continue
		}
		// The rest of the batch must follow the first message.
		for k, id := range op.Args.Msgs[1:] {
			if s, ok := pl.only(id); ok && s.at != (loc{first.part, first.off + uint64(k+1)}) {
				r.flag(Order, "send (event %d): message %d of the batch (%s) is at %v, the batch starts at %v",
					[]int64{op.InvokeIndex, s.event}, op.InvokeIndex, k+1, id, s.at, first)
				break
			}
		}
		byPart[first.part] = append(byPart[first.part], placed{op, first.off})
	}
	for _, p := range sortedKeys(byPart) {
		list := byPart[p]
		slices.SortFunc(list, func(a, b placed) int { return cmp.Compare(a.off, b.off) })
		var latest *placed // the lower-offset send invoked last
		for i := range list {
			y := &list[i]
			if latest != nil && latest.off != y.off && latest.op.Invoke > y.op.End() {
				r.flag(Order, "partition %d: send at offset %d (event %d) was invoked after the send at offset %d (event %d) was acknowledged",
					[]int64{latest.op.InvokeIndex, y.op.CompleteIndex}, p, latest.off, latest.op.InvokeIndex, y.off, y.op.InvokeIndex)
			}
			if latest == nil || y.op.Invoke > latest.op.Invoke {
				latest = y
			}
		}
	}
}

func sortedIDs[V any](m map[history.MsgID]V) []history.MsgID {
	out := make([]history.MsgID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b history.MsgID) int {
		return cmp.Or(cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Attempt, b.Attempt),
			cmp.Compare(a.Raw.Hi, b.Raw.Hi), cmp.Compare(a.Raw.Lo, b.Raw.Lo))
	})
	return out
}

func sortedLogical[V any](m map[history.Logical]V) []history.Logical {
	out := make([]history.Logical, 0, len(m))
	for l := range m {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b history.Logical) int {
		return cmp.Or(cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Seq, b.Seq))
	})
	return out
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
