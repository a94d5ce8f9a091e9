package fdbudget

import "testing"

func TestSplit(t *testing.T) {
	intp := func(v int) *int { return &v }
	for _, tc := range []struct {
		name     string
		in       Inputs
		wantCap  uint64
		fromFDs  bool
		wantPart uint64
	}{
		{"single node, connections unset", Inputs{Limit: 1024}, (1024 - 512 - 64) / 5, true, 1024 - 512 - 64},
		{"connections capped", Inputs{Limit: 1024, ConnectionsMax: intp(100)}, (1024 - 100 - 64) / 5, true, 1024 - 100 - 64},
		{"connections uncapped still reserved", Inputs{Limit: 1024, ConnectionsMax: intp(0)}, (1024 - 512 - 64) / 5, true, 1024 - 512 - 64},
		{"cluster reserves the plane", Inputs{Limit: 1024, Peers: 2, HandshakesMax: 64, HandshakesPerAddress: 4}, (1024 - 512 - 64 - 76) / 5, true, 1024 - 512 - 64 - 76},
		{"config cap lower", Inputs{Limit: 1 << 20, PartitionsMax: 1000}, 1000, false, 1<<20 - 1<<19 - 64},
		{"config cap higher than descriptors allow", Inputs{Limit: 1024, PartitionsMax: 100000}, (1024 - 512 - 64) / 5, true, 1024 - 512 - 64},
		{"no room at all", Inputs{Limit: 100, ConnectionsMax: intp(90)}, 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Split(tc.in)
			if b.Cap != tc.wantCap || b.FromDescriptors != tc.fromFDs || b.Partitions != tc.wantPart {
				t.Fatalf("%s: cap %d (from descriptors %v), partitions %d; want %d (%v), %d", b, b.Cap, b.FromDescriptors, b.Partitions, tc.wantCap, tc.fromFDs, tc.wantPart)
			}
			if b.Partitions > 0 && b.Connections+b.Plane+b.Base+b.Cap*PerPartition > b.Limit && b.FromDescriptors {
				t.Fatalf("budget overruns the limit: %s", b)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	l, err := Limit()
	if err != nil || l == 0 {
		t.Fatalf("limit %d: %v", l, err)
	}
}
