package peers

import (
	"image/png"
	"os"
	"testing"
)

// checkPNG fails unless path is a PNG of a plausible chart size.
func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 200 {
		t.Fatalf("%s is %dx%d", path, b.Dx(), b.Dy())
	}
}
