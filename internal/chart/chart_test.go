package chart

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"
)

// TestWritePNG: the file is a PNG of the chart size (at vgimg's 96 dpi).
func TestWritePNG(t *testing.T) {
	p := plot.New()
	p.Title.Text = "t"
	path := filepath.Join(t.TempDir(), "c.png")
	if err := WritePNG(p, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != int(Width.Dots(96)+0.5) || h != int(Height.Dots(96)+0.5) {
		t.Fatalf("%dx%d pixels", w, h)
	}
	if err := WritePNG(p, filepath.Join(t.TempDir(), "missing", "c.png")); err == nil {
		t.Fatal("no error for a directory that does not exist")
	}
}
