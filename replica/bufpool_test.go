package replica

import "testing"

func TestStampPoolReusesWithinBounds(t *testing.T) {
	sp := newStampPool(true, 3<<20, 2, 1) // 3 MiB idle, 2 buffers
	a := sp.get(1 << 20)
	if len(a) != 1<<20 {
		t.Fatalf("len %d", len(a))
	}
	a[0] = 7
	sp.put(a)
	b := sp.get(1000)
	if &b[:1][0] != &a[:1][0] || len(b) != 1000 {
		t.Fatal("a returned buffer large enough was not reused")
	}
	// Count bound: a third idle buffer is dropped.
	sp.put(make([]byte, 10))
	sp.put(make([]byte, 10))
	sp.put(make([]byte, 10))
	if len(sp.free) != 2 || sp.idleBytes != 20 {
		t.Fatalf("idle %d buffers, %d bytes; want 2, 20", len(sp.free), sp.idleBytes)
	}
	// A too small buffer is not handed out for a larger request.
	c := sp.get(100)
	if cap(c) < 100 || len(sp.free) != 0 || sp.idleBytes != 0 {
		t.Fatalf("cap %d, idle %d/%d", cap(c), len(sp.free), sp.idleBytes)
	}
	// Byte bound: 2 MiB + 2 MiB exceeds 3 MiB.
	sp.put(make([]byte, 2<<20))
	sp.put(make([]byte, 2<<20))
	if len(sp.free) != 1 || sp.idleBytes != 2<<20 {
		t.Fatalf("idle %d buffers, %d bytes after the byte bound", len(sp.free), sp.idleBytes)
	}
}

func TestStampPoolDisabled(t *testing.T) {
	for _, sp := range []stampPool{
		newStampPool(false, 4<<30, 8192, 2),
		newStampPool(true, 0, 8192, 2),
		newStampPool(true, 4<<30, 0, 2),
	} {
		sp.put(make([]byte, 64))
		if len(sp.free) != 0 {
			t.Fatalf("pool %+v kept a buffer", sp)
		}
		if b := sp.get(64); len(b) != 64 {
			t.Fatalf("get: len %d", len(b))
		}
	}
}
