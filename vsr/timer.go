package vsr

// timer counts ticks down. Retried timers back off: the n-th retry waits
// base × 2^min(n, 4) plus a jitter in [0, base) drawn from the replica's
// seeded PRNG, so replicas that time out together do not retry in lockstep.
type timer struct {
	left     int
	base     int
	attempts int
	armed    bool
}

// start arms the timer for base ticks plus jitter and resets the backoff.
func (t *timer) start(r *Replica, base int) {
	t.base = base
	t.attempts = 0
	t.left = base + r.jitter(base)
	t.armed = true
}

// startExact arms the timer for exactly base ticks (periodic timers whose
// period is a promise, such as the commit heartbeat).
func (t *timer) startExact(base int) {
	t.base = base
	t.attempts = 0
	t.left = base
	t.armed = true
}

// startBackoff arms the timer for its next retry.
func (t *timer) startBackoff(r *Replica, base int) {
	if !t.armed || t.base != base {
		t.base = base
	}
	shift := min(t.attempts, 4)
	t.attempts++
	t.left = t.base<<shift + r.jitter(t.base)
	t.armed = true
}

func (t *timer) stop() {
	t.armed = false
	t.attempts = 0
}

// tick advances the timer and reports whether it fired; a fired timer is
// disarmed until started again.
func (t *timer) tick() bool {
	if !t.armed {
		return false
	}
	t.left--
	if t.left > 0 {
		return false
	}
	t.armed = false
	return true
}

func (r *Replica) jitter(base int) int {
	if base <= 1 {
		return 0
	}
	return r.rng.Intn(base/2 + 1)
}

// tickCounts holds the configured intervals in ticks.
type tickCounts struct {
	heartbeat, commit, prepare, vcRetransmit, vcStatus, rsv, repair int
}

func (r *Replica) initTimers() {
	c := &r.cfg
	r.tk = tickCounts{
		heartbeat:    Ticks(c.HeartbeatTimeout),
		commit:       Ticks(c.CommitBroadcastInterval),
		prepare:      Ticks(c.PrepareRetransmitInterval),
		vcRetransmit: Ticks(c.ViewChangeRetransmitInterval),
		vcStatus:     Ticks(c.ViewChangeStatusTimeout),
		rsv:          Ticks(c.RequestStartViewRetransmitInterval),
		repair:       Ticks(c.RepairRetryInterval),
	}
}
