package client

import (
	"bytes"
	"testing"
)

func TestMask(t *testing.T) {
	key := [4]byte{0x11, 0x22, 0x33, 0x44}
	for _, n := range []int{0, 1, 3, 7, 8, 9, 17, 1000} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * 7)
		}
		want := make([]byte, n)
		for i := range src {
			want[i] = src[i] ^ key[i%4]
		}
		got := make([]byte, n)
		mask(got, src, key)
		if !bytes.Equal(got, want) {
			t.Fatalf("n=%d: mask differs", n)
		}
	}
}
