package stack

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/wire"
)

// checkAgreement: no two replicas ever commit different ops at the same
// position, and a replica's view never goes back while it runs.
func (w *world) checkAgreement() {
	for _, p := range w.procs {
		if !p.up {
			continue
		}
		for _, rp := range p.node.parts {
			r := rp.g.Replica()
			inf := r.Info()
			w.res.Views = max(w.res.Views, inf.View)
			w.res.Commits = max(w.res.Commits, inf.CommitMax)
			from := w.checked[rp.idx][p.id]
			if inf.CommitMin < from {
				// A restarted replica commits again from its checkpoint.
				from = inf.Checkpoint
			}
			for op := from + 1; op <= inf.CommitMin; op++ {
				id, ok := r.Identity(op)
				if !ok {
					continue
				}
				if seen, ok := w.committed[rp.idx][op]; !ok {
					w.committed[rp.idx][op] = id
				} else if seen != id {
					w.fail("g%d: p%d committed op %d as %x, another replica as %x", rp.idx, p.id, op, id[:4], seen[:4])
					return
				}
			}
			w.checked[rp.idx][p.id] = inf.CommitMin
		}
	}
}

// quiescent: every client request finished and every replica of every
// group is in normal status with every op any replica holds committed and
// applied. (Comparing with the highest commit alone ended a run right
// after a view change whose new primary had not yet committed the ops at
// its head again: an op committed and acknowledged in the old view was in
// no node's partition but the old primary's, seed 201420.)
func (w *world) quiescent() bool {
	for _, c := range w.clients {
		if c.inFlight {
			return false
		}
	}
	for _, cm := range w.committers {
		if cm.inFlight {
			return false
		}
	}
	for g := 0; g < w.groups; g++ {
		var top uint64
		for _, p := range w.procs {
			if !p.up {
				return false
			}
			inf := p.node.parts[g].g.Replica().Info()
			top = max(top, inf.CommitMax, inf.Op)
		}
		for _, p := range w.procs {
			rp := p.node.parts[g]
			inf := rp.g.Replica().Info()
			if inf.CommitMin != top || inf.Op != top || inf.Status != "normal" || rp.p.AppliedOp() != top {
				return false
			}
		}
	}
	// Every node can read back all it holds: a read that finds damage
	// stops the group, and the node is restarted to refill it.
	w.logs = make([][][]message, w.groups)
	for g := 0; g < w.groups; g++ {
		for _, p := range w.procs {
			log, err := readAll(p.node.parts[g].p)
			if err != nil {
				w.tracef("g%d p%d: read back: %v", g, p.id, err)
				return false
			}
			w.logs[g] = append(w.logs[g], log)
		}
	}
	return true
}

func (w *world) stuck() string {
	s := ""
	for _, c := range w.clients {
		if c.inFlight {
			s += fmt.Sprintf("client %d (g%d) waits for request %d (%d attempts); ", c.idx, c.group, c.request, c.attempts)
		}
	}
	for _, cm := range w.committers {
		if cm.inFlight {
			s += fmt.Sprintf("committer g%d waits to store %d; ", cm.group, cm.value)
		}
	}
	for _, p := range w.procs {
		if !p.up {
			s += fmt.Sprintf("p%d down; ", p.id)
			continue
		}
		for _, rp := range p.node.parts {
			inf := rp.g.Replica().Info()
			s += fmt.Sprintf("g%d p%d %s v%d/%d op=%d commit=%d/%d applied=%d ckpt=%d failed=%v; ", rp.idx, p.id, inf.Status,
				inf.View, inf.LogView, inf.Op, inf.CommitMin, inf.CommitMax, rp.p.AppliedOp(), inf.Checkpoint, rp.g.Failed())
		}
	}
	return s
}

// message is one message of a partition's log as a poll returns it.
type message struct {
	offset   uint64
	producer uint32
	seq      uint64
	payload  string
}

// finalChecks compares every node's partitions with the model the
// clients' acknowledgements make.
func (w *world) finalChecks() {
	for g := 0; g < w.groups; g++ {
		var ref []message
		for _, p := range w.procs {
			rp := p.node.parts[g]
			w.res.Installs += rp.installs
			log := w.logs[g][p.id]
			if p.id == 0 {
				ref = log
				w.res.Messages += len(log)
				if !w.checkModel(g, log) {
					return
				}
				continue
			}
			if !slices.Equal(log, ref) {
				w.fail("g%d: p%d holds %d messages, p0 %d, or they differ (first difference at %d)", g, p.id, len(log), len(ref), firstDiff(log, ref))
				return
			}
		}
		for _, p := range w.procs {
			if !w.checkOffsets(g, p.node.parts[g]) {
				return
			}
		}
		for _, ob := range w.observed[g] {
			if ob.msg.offset >= uint64(len(ref)) || ref[ob.msg.offset] != ob.msg {
				w.fail("g%d: a poll of p%d at tick %d returned producer %d message %d at offset %d, which the final log does not hold there",
					g, ob.node, ob.tick, ob.msg.producer, ob.msg.seq, ob.msg.offset)
				return
			}
		}
	}
}

func firstDiff(a, b []message) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// checkModel: offsets dense from 0; every producer's messages at most once
// and in its order; every acknowledged send where its reply said.
func (w *world) checkModel(g int, log []message) bool {
	next := map[uint32]uint64{}
	at := map[[2]uint64]uint64{}
	for i, m := range log {
		if m.offset != uint64(i) {
			w.fail("g%d: message %d has offset %d", g, i, m.offset)
			return false
		}
		if want, ok := next[m.producer]; ok && m.seq < want {
			w.fail("g%d: producer %d message %d at offset %d again or out of order (expected %d or later)", g, m.producer, m.seq, m.offset, want)
			return false
		}
		next[m.producer] = m.seq + 1
		at[[2]uint64{uint64(m.producer), m.seq}] = m.offset
	}
	for _, c := range w.clients {
		if c.group != g {
			continue
		}
		for _, a := range c.acks {
			for i := 0; i < a.count; i++ {
				off, ok := at[[2]uint64{uint64(c.idx), a.first + uint64(i)}]
				if !ok {
					w.fail("g%d: client %d request %d acknowledged at %d, message %d lost", g, c.idx, a.request, a.base, a.first+uint64(i))
					return false
				}
				if off != a.base+uint64(i) {
					w.fail("g%d: client %d message %d acknowledged at offset %d, stored at %d", g, c.idx, a.first+uint64(i), a.base+uint64(i), off)
					return false
				}
			}
		}
	}
	return true
}

// checkOffsets: the node holds at least the last acknowledged value of
// each consumer offset (or an older value an unacknowledged attempt
// stored after it), and never one that was not stored.
func (w *world) checkOffsets(g int, rp *replicated) bool {
	for _, cm := range w.committers {
		if cm.group != g || !cm.hasAcked {
			continue
		}
		v, ok := rp.p.StoredOffset(cm.key)
		if ok && v < cm.acked && (v == cm.lastVal || cm.mayLand(v)) {
			continue // an older store's late attempt committed last
		}
		if !ok || v < cm.acked || v > cm.next {
			w.fail("g%d p%d: consumer offset %v is %d (present %v), acknowledged %d, largest stored %d", g, rp.n.id, cm.key, v, ok, cm.acked, cm.next)
			return false
		}
	}
	return true
}

// readAll polls a partition from offset 0 to its end.
func readAll(p *partition.Partition) ([]message, error) {
	var out []message
	for {
		msgs, err := readRange(p, uint64(len(out)), 1000)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			return out, nil
		}
		for i, m := range msgs {
			if m.offset != uint64(len(out)) {
				return nil, fmt.Errorf("poll from %d: message %d at offset %d", len(out)-i, i, m.offset)
			}
			out = append(out, m)
		}
	}
}

// readRange polls up to count messages of a partition from offset from.
func readRange(p *partition.Partition, from uint64, count uint32) ([]message, error) {
	var out []message
	var res partition.PollResult
	_, code := p.Poll(partition.PollRequest{Strategy: wire.PollFromOffset(from), Count: count}, &res)
	if code != 0 {
		return nil, fmt.Errorf("poll from %d: code %d", from, code)
	}
	if res.Count == 0 {
		return nil, nil
	}
	var rec []byte
	for _, part := range res.Parts {
		rec = append(rec, part...)
	}
	for len(rec) > 0 {
		if len(rec) < 40 {
			return nil, fmt.Errorf("short record of %d bytes", len(rec))
		}
		v, err := wire.ParseBatch(rec[:binary.LittleEndian.Uint64(rec[32:])])
		if err != nil {
			return nil, err
		}
		it := v.Frames()
		for f, ok := it.Next(); ok; f, ok = it.Next() {
			pl := f.Payload()
			if len(pl) < 12 {
				return nil, fmt.Errorf("payload of %d bytes", len(pl))
			}
			off := v.BaseOffset() + uint64(f.OffsetDelta())
			if off < from || len(out) >= int(count) {
				continue
			}
			out = append(out, message{offset: off, producer: binary.LittleEndian.Uint32(pl), seq: binary.LittleEndian.Uint64(pl[4:]), payload: string(pl)})
		}
		rec = rec[v.Len():]
	}
	if len(out) != int(res.Count) {
		return nil, fmt.Errorf("poll from %d counted %d messages and returned %d", from, res.Count, len(out))
	}
	return out, nil
}

// mayLand reports whether an attempt of value v no acknowledgement
// answered may have committed after the acknowledged value.
func (cm *committer) mayLand(v uint64) bool {
	for _, x := range cm.open {
		if x == v {
			return true
		}
	}
	return false
}
