package bench

import (
	"context"
	"time"
)

// RateLimiter paces one actor at a byte rate. Each Wait(n) reserves the
// next n/rate seconds of the schedule and sleeps until its slot starts. An
// actor that falls behind (a slow request) is not allowed to burst to catch
// up: the schedule restarts from now, so the offered load never exceeds
// the rate. The pause a batch should have had is ExpectedInterval, which
// the latency histograms use to correct coordinated omission.
type RateLimiter struct {
	bytesPerSec float64
	next        time.Time
	now         func() time.Time
	sleep       func(ctx context.Context, d time.Duration) error
}

// NewRateLimiter paces at bytesPerSec (> 0).
func NewRateLimiter(bytesPerSec float64) *RateLimiter {
	if bytesPerSec <= 0 {
		panic("bench: rate limiter needs a positive rate")
	}
	return &RateLimiter{bytesPerSec: bytesPerSec, now: time.Now, sleep: sleepCtx}
}

// ExpectedInterval is how long a batch of n bytes occupies the schedule.
func (r *RateLimiter) ExpectedInterval(n uint64) time.Duration {
	return time.Duration(float64(n) / r.bytesPerSec * float64(time.Second))
}

// Wait blocks until a batch of n bytes may go out (or ctx ends).
func (r *RateLimiter) Wait(ctx context.Context, n uint64) error {
	now := r.now()
	if r.next.Before(now) {
		r.next = now
	}
	start := r.next
	r.next = start.Add(r.ExpectedInterval(n))
	if d := start.Sub(now); d > 0 {
		return r.sleep(ctx, d)
	}
	return ctx.Err()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
