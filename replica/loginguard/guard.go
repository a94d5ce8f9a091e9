package loginguard

import (
	"net/netip"
	"sync/atomic"
	"time"
)

// Config are a Guard's limits (the [login] keys).
type Config struct {
	// Verifications is how many costly checks run at once (>= 1).
	Verifications int
	// QueueMax is how many may wait for a slot; QueueTimeout how long.
	QueueMax     int
	QueueTimeout time.Duration

	// Throttle turns the failed-login buckets on.
	Throttle bool
	// AddressBurst tokens per address, one more every AddressInterval.
	AddressBurst    int
	AddressInterval time.Duration
	// UserBurst tokens per user name, one more every UserInterval.
	UserBurst    int
	UserInterval time.Duration
	// DelayMax is the longest an attempt waits for tokens.
	DelayMax time.Duration
	// EntriesMax bounds each bucket table.
	EntriesMax int
}

// Verdict is how an attempt ended.
type Verdict int

const (
	// Passed: the check ran and succeeded.
	Passed Verdict = iota
	// Failed: the check ran and failed.
	Failed
	// Throttled: the attempt waited DelayMax and was not checked.
	Throttled
	// Busy: no verification slot within the queue limits; not checked.
	Busy
	// Stopped: the node is stopping; not checked.
	Stopped
)

func (v Verdict) String() string {
	switch v {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	case Throttled:
		return "throttled"
	case Busy:
		return "busy"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// Guard admits login attempts. Safe for concurrent use.
type Guard struct {
	cfg   Config
	slots chan struct{}
	// suspect admits attempts from addresses with recent failures to at
	// most Verifications-1 slots (when there are two or more), so one
	// slot always stays for clients with a clean record.
	suspect chan struct{}
	waiting atomic.Int64
	addrs   *buckets[netip.Prefix]
	users   *buckets[string]

	// sleep waits d or until stop closes (false); tests replace it.
	sleep func(d time.Duration, stop <-chan struct{}) bool
	now   func() time.Time
}

// New returns a guard; Verifications < 1 is taken as 1.
func New(cfg Config) *Guard {
	cfg.Verifications = max(1, cfg.Verifications)
	g := &Guard{cfg: cfg, slots: make(chan struct{}, cfg.Verifications), suspect: make(chan struct{}, max(1, cfg.Verifications-1)),
		sleep: sleep, now: time.Now}
	if cfg.Throttle {
		g.addrs = newBuckets[netip.Prefix](cfg.AddressBurst, cfg.AddressInterval, max(1, cfg.EntriesMax))
		g.users = newBuckets[string](cfg.UserBurst, cfg.UserInterval, max(1, cfg.EntriesMax))
	}
	return g
}

// Config returns the guard's limits.
func (g *Guard) Config() Config { return g.cfg }

func sleep(d time.Duration, stop <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// Attempt describes one login attempt.
type Attempt struct {
	// Addr is the client's address key (intake.AddrKey).
	Addr netip.Prefix
	// User is the user name when it names an existing user, else "".
	User string
	// Costly: the check needs a verification slot (Argon2).
	Costly bool
}

// Check runs check for a once the throttle and the verification slots let
// it, and reports how the attempt ended and how long it waited. check
// returns true for credentials that are right. stop ends waits early.
func (g *Guard) Check(stop <-chan struct{}, a Attempt, check func() bool) (Verdict, time.Duration) {
	start := g.now()
	refund := func() {}
	suspect := false
	if g.addrs != nil {
		now := start
		suspect = g.addrs.depleted(a.Addr, now)
		wait := g.addrs.take(a.Addr, now)
		if a.User != "" {
			wait = max(wait, g.users.take(a.User, now))
		}
		refund = func() {
			now := g.now()
			g.addrs.give(a.Addr, now)
			if a.User != "" {
				g.users.give(a.User, now)
			}
		}
		if wait > g.cfg.DelayMax {
			refund()
			if !g.sleep(g.cfg.DelayMax, stop) {
				return Stopped, g.now().Sub(start)
			}
			return Throttled, g.now().Sub(start)
		}
		if !g.sleep(wait, stop) {
			refund()
			return Stopped, g.now().Sub(start)
		}
	}
	if a.Costly {
		release, v := g.acquire(stop, suspect)
		if release == nil {
			refund()
			return v, g.now().Sub(start)
		}
		defer release()
	}
	if check() {
		refund()
		return Passed, g.now().Sub(start)
	}
	return Failed, g.now().Sub(start)
}

// acquire takes a verification slot, waiting in the bounded queue; a
// suspect attempt first takes one of the suspect slots. It returns the
// release, or nil and why not.
func (g *Guard) acquire(stop <-chan struct{}, suspect bool) (func(), Verdict) {
	pools := []chan struct{}{g.slots}
	if suspect && cap(g.slots) > 1 {
		pools = []chan struct{}{g.suspect, g.slots}
	}
	var taken []chan struct{}
	release := func() {
		for _, p := range taken {
			<-p
		}
	}
	var timer *time.Timer
	for _, p := range pools {
		select {
		case p <- struct{}{}:
			taken = append(taken, p)
			continue
		default:
		}
		if timer == nil {
			if g.waiting.Add(1) > int64(g.cfg.QueueMax) {
				g.waiting.Add(-1)
				release()
				return nil, Busy
			}
			defer g.waiting.Add(-1)
			timer = time.NewTimer(g.cfg.QueueTimeout)
			defer timer.Stop()
		}
		select {
		case p <- struct{}{}:
			taken = append(taken, p)
		case <-timer.C:
			release()
			return nil, Busy
		case <-stop:
			release()
			return nil, Stopped
		}
	}
	return release, Passed
}

// InUse reports the verifications running and waiting now.
func (g *Guard) InUse() (running, waiting int) {
	return len(g.slots), int(g.waiting.Load())
}
