package consensus

import (
	"maps"
	"slices"

	"github.com/iggo/iggo/vsr"
)

// Forwarding (cluster mode): a request reaching a backup in normal status
// goes to the group's primary in a vsr Forward frame; the primary's
// ForwardReply answers the waiter. A forward that could not be sent (the
// frame never left this node) is answered TransientNotAccepted (58): the
// primary cannot have it. One the primary does not answer within the
// forward timeout is answered TransientNotCommitted (57, CodeInDoubt): the
// primary may have prepared it and may still commit it (only its reply
// may have been lost), so it must not read as refused. Clients replay
// both with the same request identity, which the session (or producer)
// table dedupes.

// forwardTarget returns the primary a request should be forwarded to: set
// when this replica is a backup in normal status (a replica in a view
// change refuses locally, and the client retries).
func (g *Group) forwardTarget() (uint8, bool) {
	info := g.r.Info()
	if info.IsPrimary || info.Status != "normal" || info.Primary == g.cfg.Replica {
		return 0, false
	}
	return info.Primary, true
}

// forward relays req (its Token already registered in waiting) to the
// primary.
func (g *Group) forward(to uint8, req vsr.Request) {
	if g.fwd == nil {
		g.fwd = map[uint64]uint64{}
	}
	g.fwd[req.Token] = g.ticks + g.fwdTimeout
	if err := g.host.SendPeer(to, vsr.EncodeForward(g.sender, req)); err != nil {
		g.forwardFailed(req.Token, vsr.StatusTransientNotAccepted) // never sent
	}
}

// forwardFailed answers a forwarded request the primary did not answer
// with a reply of status: TransientNotAccepted when the forward was never
// sent, CodeInDoubt's TransientNotCommitted when it timed out. It is a
// reply status (Waiter.SetReply), as vsr's own answer to a request it took
// but cannot finish is, not a code (SetCode): the node's own system
// commands replay a reply of either status with the same request number
// (a code would end them as refused).
func (g *Group) forwardFailed(token uint64, status vsr.Status) {
	delete(g.fwd, token)
	w, ok := g.waiting[token]
	if !ok {
		return
	}
	delete(g.waiting, token)
	w.SetReply(vsr.Reply{Status: status})
	g.host.Deliver(w)
}

// expireForwards answers the forwarded requests the primary did not
// answer in time, oldest token first, in doubt: the primary may have
// prepared one and may still commit it.
func (g *Group) expireForwards() {
	for _, tok := range slices.Sorted(maps.Keys(g.fwd)) {
		if g.ticks >= g.fwd[tok] {
			g.forwardFailed(tok, vsr.Status(CodeInDoubt))
		}
	}
}

// ForwardReplied completes a forwarded request with the primary's reply
// (a ForwardReply frame). A reply to a forward of an earlier boot of this
// node (its tokens restart from 1) is not this boot's and is dropped.
func (g *Group) ForwardReplied(m vsr.Message) {
	origin, rp, code := vsr.ForwardedReply(m)
	tok := origin.Token
	if origin.Incarnation != g.sender.Incarnation {
		return
	}
	if _, ok := g.fwd[tok]; !ok {
		return
	}
	delete(g.fwd, tok)
	w, ok := g.waiting[tok]
	if !ok {
		return
	}
	delete(g.waiting, tok)
	w.SetCode(code)
	w.SetReply(rp)
	if code == 0 && rp.Status == vsr.StatusOK && rp.Op > g.sm.AppliedOp() {
		// Answer once this node applied the op too: the client's next
		// request here must see what it just created or sent. Bounded by
		// the forward deadline.
		g.held = append(g.held, heldReply{op: rp.Op, deadline: g.ticks + g.fwdTimeout, w: w})
		return
	}
	g.host.Deliver(w)
}

// heldReply is a forwarded reply waiting for its op to apply here.
type heldReply struct {
	op, deadline uint64
	w            Waiter
}

// releaseHeld answers held replies whose op applied here (or whose
// deadline passed).
func (g *Group) releaseHeld() {
	if len(g.held) == 0 {
		return
	}
	applied := g.sm.AppliedOp()
	keep := g.held[:0]
	for _, h := range g.held {
		if h.op <= applied || g.ticks >= h.deadline || g.closed || g.failed != nil {
			g.host.Deliver(h.w)
			continue
		}
		keep = append(keep, h)
	}
	clear(g.held[len(keep):])
	g.held = keep
}
