// Package chart writes the project's benchmark plots (gonum/plot) as PNG
// files of one size, on a white background, with a margin that keeps the
// title and the axes' end labels off the image edges.
package chart

import (
	"bufio"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Size of every chart.
const (
	Width  = 27 * vg.Centimeter
	Height = 15 * vg.Centimeter
)

// WritePNG draws p into a Width x Height PNG at path.
func WritePNG(p *plot.Plot, path string) error {
	c := vgimg.New(Width, Height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, vg.Points(4), -vg.Points(8), vg.Points(2), -vg.Points(6)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
