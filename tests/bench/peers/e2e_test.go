package peers

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
)

// The short forms of `make bench-peers` and `make bench-scaling`, end to
// end: nats-server and the nats CLI installed with go install at the
// pinned versions (cached in DefaultToolsDir between runs; the first run
// on a machine builds them, which needs the Go module proxy), iggo built
// from this checkout, tiny message counts. They check the tooling, not the
// figures: every row is there, every ratio a number, the chart a PNG.

var (
	iggoOnce sync.Once
	iggoDir  string
	iggoErr  error
)

// iggoBinaries builds iggo and iggo-server from this checkout into a
// temporary directory (`iggo cluster up` finds the server next to iggo).
func iggoBinaries(t *testing.T) Iggo {
	t.Helper()
	iggoOnce.Do(func() {
		root, err := harness.RepoRoot()
		if err != nil {
			iggoErr = err
			return
		}
		iggoDir, iggoErr = os.MkdirTemp("", "iggo-peers-bin-")
		if iggoErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags=-checklinkname=0", "-o", iggoDir+"/", "./cmd/iggo", "./cmd/iggo-server")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			iggoErr = fmt.Errorf("build iggo: %v\n%s", err, out)
		}
	})
	if iggoErr != nil {
		t.Fatal(iggoErr)
	}
	return Iggo{Dir: iggoDir}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if iggoDir != "" {
		os.RemoveAll(iggoDir)
	}
	os.Exit(code)
}

// freeBase picks a base port below the ephemeral range whose every port a
// run uses can be bound now.
func freeBase(t *testing.T) int {
	t.Helper()
	var offsets []int
	for _, o := range []int{0, 1000, 2000, 3000, natsPortOffset, natsPortOffset + 100, natsPortOffset + 200} {
		offsets = append(offsets, o, o+1, o+2)
	}
	offsets = append(offsets, 10, 50)
	for range 200 {
		base := 12000 + rand.IntN(12000)
		ok := true
		for _, o := range offsets {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+o))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

// logWriter sends the run's progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func TestCompareShort(t *testing.T) {
	iggo := iggoBinaries(t)
	ctx := t.Context()
	tools, err := InstallTools(ctx, DefaultToolsDir(), NATSServerVersion, NATSCLIVersion, logWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	out, work := t.TempDir(), filepath.Join(t.TempDir(), "work")
	start := time.Now()
	res, err := Compare(ctx, CompareOptions{
		Iggo: iggo, Tools: tools, Work: work, Out: out, Batches: 4, PersistedBatches: 2, BatchSize: 1000, MessageSize: 1000,
		Producers: []int{1, 4}, Setups: []string{SetupSingle, SetupCluster}, Durabilities: []string{"replicated", "persisted"},
		JSModes: []JSMode{{"fast", 1000}, {"async", 500}}, BasePort: freeBase(t), DiskBytes: 32 << 20, DiskChunk: 16 << 20,
		NATSServerVersion: NATSServerVersion, NATSCLIVersion: NATSCLIVersion, Log: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compare took %s", time.Since(start).Round(time.Second))
	if len(res.Rows) != 8 {
		t.Fatalf("%d rows, want 8", len(res.Rows))
	}
	for _, r := range res.Rows {
		want := uint64(r.Producers) * 4000
		if r.Durability == "persisted" {
			want = uint64(r.Producers) * 2000
		}
		if r.Messages != want || r.Iggo.Messages != want {
			t.Errorf("%s %s %dp: %d messages (iggo %d), want %d", r.Setup, r.Durability, r.Producers, r.Messages, r.Iggo.Messages, want)
		}
		for i, f := range r.JetStream {
			if f.Messages != want {
				t.Errorf("%s %s %dp: JetStream mode %d published %d messages, want %d", r.Setup, r.Durability, r.Producers, i, f.Messages, want)
			}
			if v := r.Ratio(i); math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
				t.Errorf("%s %s %dp: ratio %v", r.Setup, r.Durability, r.Producers, v)
			}
		}
		if r.Iggo.Load < 0 || r.Iggo.P99Ms <= 0 {
			t.Errorf("%s %s %dp: iggo figure %+v", r.Setup, r.Durability, r.Producers, r.Iggo)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "peers.md"))
	if err != nil {
		t.Fatal(err)
	}
	// Every row has three ratio cells (two modes and the best), each a
	// number.
	row := regexp.MustCompile(`(?m)^\| (single node|3-node) \| (replicated|persisted) \|.*\| [0-9.]+x \|.*\| [0-9.]+x \| [0-9.]+x \| [0-9.]+; [0-9.]+, [0-9.]+ \|$`)
	if n := len(row.FindAll(md, -1)); n != 8 {
		t.Fatalf("%d complete rows in peers.md, want 8:\n%s", n, md)
	}
	if !strings.Contains(string(md), "of the disk's") {
		t.Fatalf("peers.md does not relate persisted to the disk:\n%s", md)
	}
	var back CompareResult
	b, err := os.ReadFile(filepath.Join(out, "peers.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Rows) != 8 || back.Disk == nil || back.Disk.MBps <= 0 {
		t.Fatalf("peers.json: %v, %+v", err, back)
	}
	checkPNG(t, filepath.Join(out, "peers.png"))
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Fatalf("work directory left behind: %v", err)
	}
}

func TestScalingShort(t *testing.T) {
	iggo := iggoBinaries(t)
	out, work := t.TempDir(), filepath.Join(t.TempDir(), "work")
	res, err := Scaling(t.Context(), ScalingOptions{
		Iggo: iggo, Work: work, Out: out, Producers: []int{1, 4}, Partitions: []int{1, 100}, CellData: 4e6, BootData: 8e6,
		MessageSize: 1000, BatchSize: 1000, Durability: "replicated", BasePort: freeBase(t), Log: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 4 || len(res.Boots) != 2 {
		t.Fatalf("%d cells and %d boot rows, want 4 and 2", len(res.Cells), len(res.Boots))
	}
	for _, c := range res.Cells {
		if c.Err != "" || c.Produce.MsgsPerSec <= 0 || c.Consume.Messages != c.Produce.Messages || c.RSSPeak == 0 {
			t.Errorf("cell %+v", c)
		}
	}
	for _, b := range res.Boots {
		if b.Err != "" || b.Messages != 8000 || b.ServingSecs <= 0 || b.CompleteSecs < b.ServingSecs || b.RSSAfterBoot == 0 || b.DiskBytes < 8e6 {
			t.Errorf("boot %+v", b)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "\n| 1 |") + strings.Count(string(md), "\n| 100 |"); n != 6 {
		t.Fatalf("%d table rows in scaling.md, want 6:\n%s", n, md)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Fatalf("work directory left behind: %v", err)
	}
}

// TestSoakShort: the soak's short form, a few seconds of rate-limited load
// with RSS windows of a second.
func TestSoakShort(t *testing.T) {
	iggo := iggoBinaries(t)
	out, work := t.TempDir(), filepath.Join(t.TempDir(), "work")
	res, err := Soak(t.Context(), SoakOptions{
		Iggo: iggo, Work: work, Out: out, Duration: 4 * time.Second, Rate: 2e6, Producers: 2, Partitions: 2,
		MessageSize: 1000, BatchSize: 100, Durability: "replicated", Window: time.Second, BasePort: freeBase(t), Log: logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Produce.Messages != 8000 || res.Consume.Messages != res.Produce.Messages {
		t.Fatalf("produced %d, consumed %d; want 8000 each", res.Produce.Messages, res.Consume.Messages)
	}
	// Rate-limited to 2 MB/s, 8 MB take about 4 s: at least three windows.
	if len(res.Windows) < 3 {
		t.Fatalf("%d RSS windows over %.1f s: %+v", len(res.Windows), res.Seconds, res.Windows)
	}
	for _, w := range res.Windows {
		if w.Samples == 0 || w.RSSMin == 0 || w.RSSMax < w.RSSMin {
			t.Fatalf("window %+v", w)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "soak.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "\n| "); n != len(res.Windows)+1 {
		t.Fatalf("%d table rows in soak.md for %d windows:\n%s", n, len(res.Windows), md)
	}
	if _, err := os.Stat(work); !os.IsNotExist(err) {
		t.Fatalf("work directory left behind: %v", err)
	}
}
