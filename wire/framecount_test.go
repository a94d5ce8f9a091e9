package wire

import (
	"encoding/binary"
	"testing"
)

// TestFrameCounter: a frame fed in pieces ends where its size field says,
// bytes past it are not taken, and a size below the header counts as a
// header-only frame.
func TestFrameCounter(t *testing.T) {
	f := make([]byte, 1000)
	binary.LittleEndian.PutUint32(f[offSize:], 1000)
	var c FrameCounter
	for _, piece := range [][]byte{f[:10], f[10:300], f[300:999]} {
		if n := c.Take(piece); n != len(piece) || c.Done() {
			t.Fatalf("piece of %d: took %d, done %v", len(piece), n, c.Done())
		}
	}
	if n := c.Take(append(f[999:], 1, 2, 3)); n != 1 || !c.Done() || c.Got() != 1000 {
		t.Fatalf("last byte and 3 more: took %d, done %v, got %d", n, c.Done(), c.Got())
	}
	c.Reset()
	short := make([]byte, HeaderSize+5)
	binary.LittleEndian.PutUint32(short[offSize:], 7)
	if n := c.Take(short); n != HeaderSize || !c.Done() {
		t.Fatalf("size field 7: took %d, done %v", n, c.Done())
	}
}
