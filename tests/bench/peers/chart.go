package peers

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/iggo/iggo/internal/chart"
)

// Chart writes a PNG bar chart of the comparison: one group of bars per
// row (iggo, then each JetStream mode), thousands of messages per second,
// iggo's ratio over the best JetStream mode of the row above its bar. A failed
// measurement is a missing bar.
func (r *CompareResult) Chart(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("iggo vs JetStream, %d-byte messages, one run (%s); labels: iggo / best JetStream mode", r.MessageSize, r.Started.Format("2006-01-02"))
	p.Y.Label.Text = "thousand messages/s"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	names := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		d := "repl"
		if row.Durability == "persisted" {
			d = "pers"
		}
		s := "1 node"
		if row.Setup == SetupCluster {
			s = "3 nodes"
		}
		names[i] = fmt.Sprintf("%s\n%s, %dp", s, d, row.Producers)
	}
	series := 1 + len(r.Modes)
	width := vg.Points(60 / float64(series))
	top := 0.0
	value := func(f Figure) float64 {
		if f.Err != "" {
			return 0
		}
		top = max(top, f.MsgsPerSec/1000)
		return f.MsgsPerSec / 1000
	}
	for s := 0; s < series; s++ {
		vals := make(plotter.Values, len(r.Rows))
		for i, row := range r.Rows {
			if s == 0 {
				vals[i] = value(row.Iggo)
			} else if s-1 < len(row.JetStream) {
				vals[i] = value(row.JetStream[s-1])
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = vg.Length(0)
		bars.Color = plotutil.Color(s)
		bars.Offset = width * vg.Length(float64(s)-float64(series-1)/2)
		p.Add(bars)
		label := "iggo"
		if s > 0 {
			label = r.Modes[s-1].Label()
		}
		p.Legend.Add(label, bars)
	}
	var xys plotter.XYs
	var texts []string
	for i, row := range r.Rows {
		if v := row.BestRatio(); v == v {
			xys = append(xys, plotter.XY{X: float64(i), Y: row.Iggo.MsgsPerSec / 1000})
			texts = append(texts, ratio(v))
		}
	}
	if len(xys) > 0 {
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return err
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].XAlign = draw.XCenter
			labels.TextStyle[i].YAlign = draw.YBottom
		}
		labels.Offset = vg.Point{X: width * vg.Length(-float64(series-1)/2), Y: vg.Points(2)}
		p.Add(labels)
	}
	if top > 0 {
		p.Y.Max = top * 1.3
	}
	p.NominalX(names...)
	return chart.WritePNG(p, path)
}
