package replica

import (
	"time"

	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/wire"
)

// Long polling (package longpoll): a poll with the wait extension
// (wire.PollMessages.WaitMillis) that finds no message is held by its
// connection goroutine, never by a shard loop, until the partition it read
// publishes messages past the offset the poll needs, or the wait (cut to
// long_poll.max_wait) ends; then it is polled again like any poll.

// connWait is a connection's long-poll state.
type connWait struct {
	w       *longpoll.Waiter
	slots   *longpoll.Slots // shared by the conns of one local session
	targets []longpoll.Target
	// cancel ends a wait when the requester goes away (a local session's
	// request context); nil for sockets, whose wait ends at its deadline.
	cancel <-chan struct{}
}

// pollWaiting serves a poll that may wait. A consumer-group poll without a
// partition polls every partition the member owns (round robin, as without
// a wait) before it waits on all of them. A wait needs a slot of the node
// and of the connection (long_poll.waiters_max, waiters_per_connection):
// without one the poll is refused with TransientNotAccepted (58), and
// with long polling off (waiters_max = 0) with FeatureUnavailable (5). A
// poll that finds messages answers at once and needs no slot.
func (c *conn) pollWaiting(h *wire.RequestHeader, req *wire.PollMessages) bool {
	wait := min(time.Duration(req.WaitMillis)*time.Millisecond, c.n.waitMax)
	deadline := time.Now().Add(wait)
	lw := &c.lp
	if lw.w == nil {
		lw.w = c.n.waits.NewWaiter()
	}
	if lw.slots == nil {
		lw.slots = new(longpoll.Slots)
	}
	held := false
	defer func() {
		if held {
			c.n.waits.Release(lw.slots)
		}
	}()
	for {
		lw.targets = lw.targets[:0]
		var st pollStep
		for i := 0; ; i++ {
			if replied, ok := c.pollOnce(h, req, &st); replied {
				lw.w.Forget()
				return ok
			}
			r := &c.t.poll
			if r.Count > 0 || !r.Waitable {
				ok := c.pollFinish(h)
				lw.w.Delivered()
				return ok
			}
			lw.targets = append(lw.targets, longpoll.Target{NS: uint64(st.tg.ns), Rev: st.tg.rev, After: r.Need})
			if i+1 >= st.owned {
				break
			}
		}
		if !time.Now().Before(deadline) {
			lw.w.Forget()
			return c.pollFinish(h)
		}
		if !held {
			if !c.n.waits.Enabled() {
				return c.status(h, wire.CodeFeatureUnavailable)
			}
			if !c.n.waits.Acquire(lw.slots) {
				return c.status(h, wire.CodeTransientNotAccepted)
			}
			held = true
		}
		switch lw.w.Wait(lw.targets, deadline, c.n.stop, lw.cancel) {
		case longpoll.Stopped:
			return false
		case longpoll.Cancelled:
			lw.w.Forget()
			return c.pollFinish(h)
		}
	}
}
