package stack

import (
	"encoding/binary"

	"github.com/iggo/iggo/replica/partition"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// call is one attempt of a client request on one node: the waiter the
// node's group answers.
type call struct {
	owner   any    // *client or *committer
	request uint64 // client: the request number; committer: the value stored
	node    int    // the node it was submitted to
	rp      vsr.Reply
	code    uint32
}

func (c *call) SetReply(r vsr.Reply) { c.rp = r }
func (c *call) SetCode(code uint32)  { c.code = code }

// client is a producer with an identity (exactly-once sends): one send in
// flight, retried with the same request number until a node acknowledges
// it.
type client struct {
	idx      int
	group    int
	producer vsr.Checksum
	session  uint64
	request  uint64 // the request in flight (or the last one acknowledged)
	seq      uint64 // sequence of the next message
	// In flight: the batch, its first message's sequence, when the current
	// attempt times out, and the attempt number.
	inFlight bool
	body     []byte
	first    uint64
	count    int
	deadline uint64
	attempts int
	acks     []ackedSend
}

// ackedSend is an acknowledged send: messages first..first+count-1 of
// its producer start at offset base.
type ackedSend struct {
	request uint64
	first   uint64
	count   int
	base    uint64
}

// committer stores consumer offsets of one consumer on one partition,
// one store in flight, each value larger than the last.
type committer struct {
	group    int
	key      partition.OffsetKey
	next     uint64
	inFlight bool
	value    uint64
	deadline uint64
	// submitted: some attempt of value reached a group.
	submitted bool
	acked     uint64 // the largest value acknowledged
	hasAcked  bool
	// open: attempts no acknowledgement answered. A store is not
	// idempotent: an attempt that timed out (stuck in a queue through a
	// partition or a view change, or forwarded and answered by the forward
	// timeout) may still commit after a later value was acknowledged, and
	// the offset then goes back to its value, as it would for a real
	// client retrying a store (seed 501910).
	open map[*call]uint64
	// lastOp, lastVal: the acknowledged store the latest op committed (an
	// older value's late attempt may commit after a newer value's).
	lastOp, lastVal uint64
}

const (
	clientsPerGroup = 3
	attemptTicks    = 400
)

func (w *world) setupClients() {
	for g := 0; g < w.groups; g++ {
		for i := 0; i < clientsPerGroup; i++ {
			c := &client{idx: len(w.clients), group: g, session: 1}
			binary.LittleEndian.PutUint64(c.producer[:], w.rng.Uint64()|1)
			binary.LittleEndian.PutUint64(c.producer[8:], uint64(c.idx))
			w.clients = append(w.clients, c)
		}
		w.committers = append(w.committers, &committer{group: g, key: partition.OffsetKey{Kind: 1, ID: uint32(g + 1)}})
	}
}

// target picks a running node for a request: clients know every node and
// the nodes forward to their primary.
func (w *world) target() *node {
	start := w.rng.Intn(w.n)
	for i := 0; i < w.n; i++ {
		if p := w.procs[(start+i)%w.n]; p.up {
			return p.node
		}
	}
	return nil
}

func (w *world) actClients() {
	for _, c := range w.clients {
		switch {
		case c.inFlight && w.tick >= c.deadline:
			w.attemptSend(c) // no answer: the node crashed or the frame was lost
		case !c.inFlight && w.faults && w.chance(w.sendRate):
			w.newSend(c)
		}
	}
	if w.faults {
		for g := 0; g < w.groups; g++ {
			if w.chance(40) {
				w.pollSomewhere(g)
			}
		}
	}
	for _, cm := range w.committers {
		switch {
		case cm.inFlight && w.tick >= cm.deadline:
			w.attemptStore(cm)
		case !cm.inFlight && w.faults && w.chance(15):
			cm.next++
			cm.value, cm.inFlight, cm.submitted = cm.next, true, false
			w.attemptStore(cm)
		}
	}
}

func (w *world) newSend(c *client) {
	n := 1 + w.rng.Intn(3)
	msgs := make([]wire.Message, n)
	for i := range msgs {
		p := make([]byte, 16+w.rng.Intn(200))
		binary.LittleEndian.PutUint32(p, uint32(c.idx))
		binary.LittleEndian.PutUint64(p[4:], c.seq+uint64(i))
		msgs[i] = wire.Message{ID: wire.Uint128{Lo: c.seq + uint64(i) + 1, Hi: uint64(c.idx)}, OriginTimestamp: w.clock(), Payload: p}
	}
	body, err := wire.AppendBatch(nil, msgs)
	if err != nil {
		w.fail("client %d: batch: %v", c.idx, err)
		return
	}
	c.request++
	c.body, c.first, c.count = body, c.seq, n
	c.seq += uint64(n)
	c.inFlight, c.attempts = true, 0
	w.res.Sends++
	w.attemptSend(c)
}

func (w *world) attemptSend(c *client) {
	c.attempts++
	c.deadline = w.tick + attemptTicks
	nd := w.target()
	if nd == nil {
		return
	}
	rp := nd.parts[c.group]
	if !rp.g.Usable() {
		return
	}
	req := partition.SendRequest(c.producer, c.session, c.request, 1, w.clock(), c.body)
	w.tracef("client %d request %d attempt %d to p%d", c.idx, c.request, c.attempts, nd.id)
	rp.g.Submit(&call{owner: c, request: c.request, node: nd.id}, req)
}

func (w *world) attemptStore(cm *committer) {
	cm.deadline = w.tick + attemptTicks
	nd := w.target()
	if nd == nil {
		return
	}
	rp := nd.parts[cm.group]
	if !rp.g.Usable() {
		return
	}
	req, code := rp.p.StoreOffsetRequest(cm.key, cm.value, 1, w.clock())
	if code != 0 {
		// Beyond the partition's current offset on this node (Iggy refuses
		// those). A value never submitted is given up; one an earlier
		// attempt submitted may have been stored and is retried.
		if !cm.submitted {
			cm.inFlight = false
			cm.next--
			return
		}
		cm.deadline = w.tick + w.between(5, 30)
		return
	}
	cm.submitted = true
	c := &call{owner: cm, request: cm.value, node: nd.id}
	if cm.open == nil {
		cm.open = map[*call]uint64{}
	}
	cm.open[c] = cm.value
	rp.g.Submit(c, req)
}

// answer takes a node's answer to a client request. An answer of an
// older attempt counts as well (its outcome is as good as the current
// one's); a refusal leaves the request to its retry.
func (w *world) answer(x *call) {
	ok := x.code == 0 && x.rp.Status == vsr.StatusOK
	switch o := x.owner.(type) {
	case *client:
		if !ok {
			if o.inFlight && x.request == o.request {
				o.deadline = min(o.deadline, w.tick+w.between(5, 30)) // refused: retry soon
			}
			return
		}
		if !o.inFlight || x.request != o.request {
			w.checkLateAck(o, x)
			return
		}
		if len(x.rp.Body) != 8 {
			w.fail("client %d: send reply of %d bytes", o.idx, len(x.rp.Body))
			return
		}
		base := binary.LittleEndian.Uint64(x.rp.Body)
		o.acks = append(o.acks, ackedSend{request: o.request, first: o.first, count: o.count, base: base})
		o.inFlight = false
		w.res.Acked++
		if o.attempts > 1 {
			w.res.Retried++
		}
		w.tracef("client %d request %d acked at offset %d (attempt %d, p%d, op %d)", o.idx, o.request, base, o.attempts, x.node, x.rp.Op)
	case *committer:
		if !ok {
			if o.inFlight && x.request == o.value {
				o.deadline = min(o.deadline, w.tick+w.between(5, 30))
			}
			return
		}
		if code, isCode := partition.ReplyCode(x.rp.Body); !isCode || code != 0 {
			w.fail("committer g%d: store reply %v", o.group, x.rp.Body)
			return
		}
		delete(o.open, x)
		if x.rp.Op > o.lastOp {
			o.lastOp, o.lastVal = x.rp.Op, x.request
		}
		if o.inFlight && x.request == o.value {
			o.inFlight = false
		}
		if !o.hasAcked || x.request > o.acked {
			o.acked, o.hasAcked = x.request, true
		}
		w.res.Offsets++
	}
}

// checkLateAck: an acknowledgement of a request already acknowledged (a
// retry's duplicate answer) must name the same offset.
func (w *world) checkLateAck(c *client, x *call) {
	if len(x.rp.Body) != 8 {
		return
	}
	for _, a := range c.acks {
		if a.request == x.request {
			if base := binary.LittleEndian.Uint64(x.rp.Body); base != a.base {
				w.fail("client %d: request %d acknowledged at offset %d and again at %d", c.idx, a.request, a.base, base)
			}
			return
		}
	}
}

// observation is a message a poll returned during the run: at the end it
// must be the message the final log holds at that offset (a poll never
// serves what was not committed, and committed messages never change).
type observation struct {
	tick uint64
	node int
	msg  message
}

// pollSomewhere polls partition g on a running node from a random offset
// up to its end, and records what came back.
func (w *world) pollSomewhere(g int) {
	nd := w.target()
	if nd == nil || !nd.parts[g].g.Usable() {
		return
	}
	p := nd.parts[g].p
	end := p.NextOffset()
	if end == 0 {
		return
	}
	from := uint64(w.rng.Intn(int(end)))
	msgs, err := readRange(p, from, uint32(1+w.rng.Intn(50)))
	if err != nil {
		// A read that finds damage stops the group (the node restarts);
		// nothing was served.
		w.tracef("p%d g%d poll from %d: %v", nd.id, g, from, err)
		return
	}
	w.res.Polled += len(msgs)
	for _, m := range msgs {
		w.observed[g] = append(w.observed[g], observation{tick: w.tick, node: nd.id, msg: m})
	}
}
