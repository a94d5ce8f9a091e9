package bench

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/iggo/iggo/internal/chart"
)

// Chart geometry (the size is package chart's).
const (
	// maxActorLines bounds the thin per-actor lines drawn under the group
	// lines; beyond it only groups are drawn.
	maxActorLines = 16
)

// ThroughputChart writes a PNG of throughput (MB/s, moving average) over
// time: a thick line per group, thin lines per actor.
func (r *Report) ThroughputChart(path string, window int) error {
	return r.chart(path, "Throughput", "MB/s", window, func(s Series) []Point { return s.ThroughputMBps })
}

// LatencyChart writes a PNG of per-batch latency (ms, moving average of the
// batches completing in each sampling interval) over time.
func (r *Report) LatencyChart(path string, window int) error {
	return r.chart(path, "Latency", "latency (ms)", window, func(s Series) []Point { return s.LatencyMs })
}

func (r *Report) chart(path, what, unit string, window int, pick func(Series) []Point) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s, %d producers, %d consumers, %s B × %s msgs/batch%s", what, r.Params.Kind,
		r.Params.Producers, r.Params.Consumers, r.Params.MessageSize, r.Params.MessagesPerBatch, r.Params.durabilityText())
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	// Headroom above the highest line keeps the legend off the data.
	top, entries := 0.0, 0
	track := func(pts []Point) []Point {
		for _, pt := range pts {
			top = max(top, pt.Value)
		}
		return pts
	}
	if len(r.Actors) <= maxActorLines {
		for i, a := range r.Actors {
			pts := track(MovingAverage(pick(a.Series), window))
			if len(pts) < 1 {
				continue
			}
			l, err := line(pts)
			if err != nil {
				return err
			}
			c := plotutil.Color(i)
			rr, gg, bb, _ := c.RGBA()
			l.Color = color.RGBA{uint8(rr >> 8), uint8(gg >> 8), uint8(bb >> 8), 110}
			l.Width = vg.Points(0.8)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s #%d", actorTitle(a.Kind), a.ID), l)
			entries++
		}
	}
	groups := append([]GroupMetrics(nil), r.Groups...)
	if r.Aggregate != nil && what == "Throughput" {
		groups = append(groups, *r.Aggregate)
	}
	for i, g := range groups {
		pts := track(MovingAverage(pick(g.Series), window))
		if len(pts) < 1 {
			continue
		}
		l, err := line(pts)
		if err != nil {
			return err
		}
		l.Color = plotutil.DarkColors[i%len(plotutil.DarkColors)]
		l.Width = vg.Points(2.5)
		p.Add(l)
		label := groupTitle(g.Kind)
		if what == "Throughput" {
			label += " (total)"
		} else {
			label += fmt.Sprintf(" (p99 %.3f ms)", g.Summary.Latency.P99)
		}
		p.Legend.Add(label, l)
		entries++
	}
	if top > 0 {
		p.Y.Max = top * (1.15 + 0.07*float64(entries))
	}
	return chart.WritePNG(p, path)
}

func line(pts []Point) (*plotter.Line, error) {
	xys := make(plotter.XYs, len(pts))
	for i, p := range pts {
		xys[i].X, xys[i].Y = p.TimeS, p.Value
	}
	if len(xys) == 1 {
		// A single sample still shows as a short flat segment.
		xys = append(xys, plotter.XY{X: xys[0].X + 0.001, Y: xys[0].Y})
	}
	return plotter.NewLine(xys)
}
