package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// ProgressMode selects the live display.
type ProgressMode int

// Progress modes.
const (
	// ProgressLines prints one aggregate line per interval (for logs and
	// pipes).
	ProgressLines ProgressMode = iota
	// ProgressBars draws a bar per actor and an aggregate bar (terminals).
	ProgressBars
	// ProgressNone prints nothing while running.
	ProgressNone
)

// actorProgress is what an actor publishes while running.
type actorProgress struct {
	label string
	kind  ActorKind
	msgs  atomic.Uint64
	bytes atomic.Uint64
	// target is the expected message count (0 while unknown).
	target atomic.Uint64
	done   atomic.Bool
}

func (a *actorProgress) add(msgs, bytes uint64) {
	a.msgs.Add(msgs)
	a.bytes.Add(bytes)
}

// display renders progress until stopped.
type display interface {
	stop()
}

type noDisplay struct{}

func (noDisplay) stop() {}

// lineDisplay prints "[  2.0s] producers 1.23 MB/s 1234 msg/s 45% | ..."
// every interval.
type lineDisplay struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startLines(ctx context.Context, w io.Writer, actors []*actorProgress, interval time.Duration, start time.Time) *lineDisplay {
	ctx, cancel := context.WithCancel(ctx)
	d := &lineDisplay{cancel: cancel}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		prev := map[ActorKind][2]uint64{}
		last := start
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				fmt.Fprintln(w, progressLine(actors, prev, now.Sub(start), now.Sub(last)))
				last = now
			}
		}
	}()
	return d
}

func (d *lineDisplay) stop() {
	d.cancel()
	d.wg.Wait()
}

// progressLine aggregates actors by kind; prev holds the previous totals
// (updated) so rates cover the last interval.
func progressLine(actors []*actorProgress, prev map[ActorKind][2]uint64, elapsed, interval time.Duration) string {
	type agg struct{ msgs, bytes, target uint64 }
	var order []ActorKind
	sums := map[ActorKind]*agg{}
	for _, a := range actors {
		s, ok := sums[a.kind]
		if !ok {
			s = &agg{}
			sums[a.kind] = s
			order = append(order, a.kind)
		}
		s.msgs += a.msgs.Load()
		s.bytes += a.bytes.Load()
		s.target += a.target.Load()
	}
	var parts []string
	for _, k := range order {
		s := sums[k]
		p := prev[k]
		secs := max(interval.Seconds(), 1e-9)
		part := fmt.Sprintf("%ss %.2f MB/s %.0f msg/s, %d msgs", k, float64(s.bytes-p[1])/1e6/secs, float64(s.msgs-p[0])/secs, s.msgs)
		if s.target > 0 {
			part += fmt.Sprintf(" (%.0f%%)", 100*float64(s.msgs)/float64(s.target))
		}
		parts = append(parts, part)
		prev[k] = [2]uint64{s.msgs, s.bytes}
	}
	return fmt.Sprintf("[%6.1fs] ", elapsed.Seconds()) + strings.Join(parts, " | ")
}

// barDisplay draws one bar per actor plus an aggregate with mpb.
type barDisplay struct {
	p      *mpb.Progress
	cancel context.CancelFunc
	wg     sync.WaitGroup
	bars   []*mpb.Bar
	total  *mpb.Bar
	actors []*actorProgress
}

func startBars(ctx context.Context, w io.Writer, actors []*actorProgress, start time.Time) *barDisplay {
	ctx, cancel := context.WithCancel(ctx)
	d := &barDisplay{cancel: cancel, actors: actors, p: mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))}
	width := len("all actors")
	for _, a := range actors {
		width = max(width, len(a.label))
	}
	for _, a := range actors {
		bar := d.p.AddBar(0,
			mpb.PrependDecorators(decor.Name(a.label, decor.WC{W: width, C: decor.DindentRight | decor.DextraSpace})),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
				return fmt.Sprintf("%d msgs %s", a.msgs.Load(), rateText(a.bytes.Load(), time.Since(start)))
			})),
		)
		d.bars = append(d.bars, bar)
	}
	d.total = d.p.AddBar(0,
		mpb.PrependDecorators(decor.Name("all actors", decor.WC{W: width, C: decor.DindentRight | decor.DextraSpace})),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string {
			var m, b uint64
			for _, a := range actors {
				m += a.msgs.Load()
				b += a.bytes.Load()
			}
			return fmt.Sprintf("%d msgs %s", m, rateText(b, time.Since(start)))
		})),
	)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			var m, target uint64
			for i, a := range actors {
				cur, tg := a.msgs.Load(), a.target.Load()
				m += cur
				target += max(tg, cur)
				d.bars[i].SetTotal(int64(max(tg, cur, 1)), false)
				d.bars[i].SetCurrent(int64(cur))
				if a.done.Load() && !d.bars[i].Completed() {
					d.bars[i].SetTotal(int64(max(cur, 1)), true)
				}
			}
			d.total.SetTotal(int64(max(target, 1)), false)
			d.total.SetCurrent(int64(m))
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return d
}

func (d *barDisplay) stop() {
	d.cancel()
	d.wg.Wait()
	var all int64
	for i, b := range d.bars {
		cur := int64(d.actors[i].msgs.Load())
		all += cur
		b.SetCurrent(cur)
		b.SetTotal(max(cur, 1), true)
	}
	d.total.SetCurrent(all)
	d.total.SetTotal(max(all, 1), true)
	d.p.Wait()
}

func rateText(bytes uint64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "0.00 MB/s"
	}
	return fmt.Sprintf("%.2f MB/s", float64(bytes)/1e6/elapsed.Seconds())
}
