package vsr

// orphanToken keeps the reply routing of a request this replica prepared as
// primary whose op it had to forget in a view change although the op may
// still commit (it could not yet check it against the new log). The reply
// goes out when that op applies — with the result if the same prepare
// committed, TransientNotCommitted if another op took its place.
type orphanToken struct {
	op        uint64
	id        Checksum
	token     uint64
	client    Checksum
	session   uint64
	request   uint64
	operation uint8
}

func (r *Replica) adoptOrphan(s *slot) {
	r.orphans = append(r.orphans, orphanToken{op: s.op, id: s.h.Identity(), token: s.token,
		client: s.h.Client(), session: s.h.Session(), request: s.h.Request(), operation: s.h.Operation()})
	s.hasToken = false
	for limit := r.cfg.RequestQueueDepth + PipelineMax; len(r.orphans) > limit; {
		r.replyOrphan(r.orphans[0], nil, StatusTransientNotCommitted, EvictNone, 0, 0)
		r.orphans = r.orphans[1:]
	}
}

func (r *Replica) replyOrphan(o orphanToken, body []byte, st Status, ev EvictionReason, ts, op uint64) {
	r.reply(Reply{Token: o.token, Client: o.client, Session: o.session, Request: o.request,
		Operation: o.operation, Op: op, Commit: r.commitMax, Timestamp: ts, Status: st, Eviction: ev, Body: body})
}

func (r *Replica) applyOrphans(h *Header, body []byte, st Status, ev EvictionReason, replyOp uint64) {
	if len(r.orphans) == 0 {
		return
	}
	keep := r.orphans[:0]
	for _, o := range r.orphans {
		switch {
		case o.op == h.Op() && o.id == h.Identity():
			r.replyOrphan(o, body, st, ev, h.Timestamp(), replyOp)
		case o.op <= h.Op():
			r.replyOrphan(o, nil, StatusTransientNotCommitted, EvictNone, 0, 0)
		default:
			keep = append(keep, o)
		}
	}
	r.orphans = keep
}

// expireOrphans answers the orphans of ops the replica will never apply
// itself (a state transfer skipped them).
func (r *Replica) expireOrphans(upTo uint64) {
	keep := r.orphans[:0]
	for _, o := range r.orphans {
		if o.op <= upTo {
			r.replyOrphan(o, nil, StatusTransientNotCommitted, EvictNone, 0, 0)
		} else {
			keep = append(keep, o)
		}
	}
	r.orphans = keep
}
