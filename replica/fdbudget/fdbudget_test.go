package fdbudget

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	intp := func(v int) *int { return &v }
	for _, tc := range []struct {
		name                string
		in                  Inputs
		wantFiles, perShard uint64
	}{
		{"single node, connections unset", Inputs{Limit: 1024, Shards: 2}, 1024 - 512 - 64, (1024 - 512 - 64) / 2},
		{"connections capped", Inputs{Limit: 1024, ConnectionsMax: intp(100), Shards: 1}, 1024 - 100 - 64, 1024 - 100 - 64},
		{"connections uncapped still reserved", Inputs{Limit: 1024, ConnectionsMax: intp(0)}, 1024 - 512 - 64, 1024 - 512 - 64},
		{"cluster reserves the plane", Inputs{Limit: 1024, Peers: 2, HandshakesMax: 64, HandshakesPerAddress: 4, Shards: 4}, 1024 - 512 - 64 - 76, (1024 - 512 - 64 - 76) / 4},
		{"open_files_max lower", Inputs{Limit: 1 << 20, OpenFilesMax: 1000, Shards: 2}, 1000, 500},
		{"open_files_max exactly what is left", Inputs{Limit: 1024, OpenFilesMax: 448, Shards: 2}, 448, 224},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Split(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if b.Files != tc.wantFiles || b.PerShard != tc.perShard {
				t.Fatalf("%s: files %d, per shard %d; want %d, %d", b, b.Files, b.PerShard, tc.wantFiles, tc.perShard)
			}
			if b.Connections+b.Plane+b.Base+b.PerShard*uint64(max(tc.in.Shards, 1)) > b.Limit {
				t.Fatalf("budget overruns the limit: %s", b)
			}
		})
	}
	for _, tc := range []struct {
		name string
		in   Inputs
		want string
	}{
		{"open_files_max beyond the limit", Inputs{Limit: 1024, OpenFilesMax: 449, Shards: 2}, "partition.open_files_max 449 does not fit"},
		{"too little per shard", Inputs{Limit: 1024, OpenFilesMax: 7, Shards: 2}, "partition.open_files_max 7 gives 2 shards fewer than 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Split(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Split(%+v): %v, want an error containing %q", tc.in, err, tc.want)
			}
		})
	}
}

// A limit the connections took nearly all of still gives each shard the
// minimum, and says so.
func TestSplitShort(t *testing.T) {
	conns := 240
	b, err := Split(Inputs{Limit: 256, ConnectionsMax: &conns, Shards: 2})
	if err != nil || !b.Short || b.PerShard != MinFilesPerShard || b.Left != 0 {
		t.Fatalf("%+v, %v: want a short budget of %d per shard", b, err, MinFilesPerShard)
	}
}

func TestLimit(t *testing.T) {
	l, err := Limit()
	if err != nil || l == 0 {
		t.Fatalf("limit %d: %v", l, err)
	}
}
