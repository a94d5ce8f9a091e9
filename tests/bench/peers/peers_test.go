package peers

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A CSV as nats CLI v0.5.0 writes it (two clients, 1,000-byte messages).
const natsCSV = `#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs,MinLatencyMicroSecs,AvgLatencyMicroSecs,MaxLatencyMicroSecs,P50LatencyMicroSecs,P90LatencyMicroSecs,P99LatencyMicroSecs,P99.9LatencyMicroSecs,StdDevLatencyMicroSecs
uQB93HsG0UwLYofKZlv6CP,P0,100000,50000000,8324,8524613.873781,5.0,26345.221000,119935.303320,391597.164000,78664.998000,204612.404000,391597.164000,391597.164000,148829.261214
uQB93HsG0UwLYofKZlv6CP,P1,100000,50000000,8221,8419258.062569,6.25,22799.188000,121483.372320,460370.550000,88131.108000,221784.538000,460370.550000,460370.550000,152191.355672
`

func TestParseNATSCSV(t *testing.T) {
	f, err := parseNATSCSV(strings.NewReader(natsCSV), 1000)
	if err != nil {
		t.Fatal(err)
	}
	// 2 × 50,000 messages over the longer client's 6.25 s.
	if f.Messages != 100_000 || math.Abs(f.MsgsPerSec-16_000) > 1e-6 {
		t.Fatalf("messages %d, rate %f; want 100000 and 16000", f.Messages, f.MsgsPerSec)
	}
	if math.Abs(f.P50Ms-88.131108) > 1e-6 || math.Abs(f.P99Ms-460.37055) > 1e-6 {
		t.Fatalf("p50 %f p99 %f: want the worst client's", f.P50Ms, f.P99Ms)
	}
	for _, bad := range []string{
		"",
		strings.SplitN(natsCSV, "\n", 2)[0] + "\n",
		"#RunID,ClientID,MsgBytes\nx,P0,10\n",
		strings.Replace(natsCSV, ",5.0,", ",five,", 1),
		strings.Replace(natsCSV, ",P1,", ",P1,7,", 1),
	} {
		if _, err := parseNATSCSV(strings.NewReader(bad), 1000); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	zero := strings.Replace(strings.Replace(natsCSV, ",6.25,", ",0,", 1), ",5.0,", ",0,", 1)
	if _, err := parseNATSCSV(strings.NewReader(zero), 1000); err == nil {
		t.Error("accepted clients without a duration")
	}
}

func TestParseHelpers(t *testing.T) {
	for in, want := range map[string]uint64{"0": 0, "512": 512, "10GB": 10e9, "16MiB": 16 << 20, "1 GiB": 1 << 30, "1.5KB": 1500, "64mb": 64e6} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GB", "-1", "10XB", "1e30TB"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
	if got, err := ParseInts(" 1, 4,16 "); err != nil || len(got) != 3 || got[2] != 16 {
		t.Errorf("ParseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "1,x", "0", "1,-4"} {
		if _, err := ParseInts(bad); err == nil {
			t.Errorf("ParseInts(%q) accepted", bad)
		}
	}
	modes, err := ParseJSModes("fast:1000, async:500,sync")
	if err != nil || len(modes) != 3 || modes[0] != (JSMode{"fast", 1000}) || modes[1].Label() != "JetStream async 500" || modes[2].Batch != 1 {
		t.Errorf("ParseJSModes = %v, %v", modes, err)
	}
	for _, bad := range []string{"", "turbo:5", "async", "fast:0", "fast:x"} {
		if _, err := ParseJSModes(bad); err == nil {
			t.Errorf("ParseJSModes(%q) accepted", bad)
		}
	}
	for in, want := range map[string]string{"nats-server: v2.15.2\n": "v2.15.2", "v0.5.0\n": "v0.5.0", "version unknown": ""} {
		if got := parseVersion(in); got != want {
			t.Errorf("parseVersion(%q) = %q, want %q", in, got, want)
		}
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands = %q", got)
	}
	if got := thousands(999); got != "999" {
		t.Errorf("thousands = %q", got)
	}
}

func TestNATSConfig(t *testing.T) {
	single := natsConfig(0, 1, 30000, "/s", false)
	if strings.Contains(single, "cluster") || strings.Contains(single, "sync_interval") || !strings.Contains(single, `listen: "127.0.0.1:30000"`) {
		t.Errorf("single node config:\n%s", single)
	}
	c := natsConfig(1, 3, 30000, "/s2", true)
	for _, want := range []string{`server_name: "peers-2"`, `listen: "127.0.0.1:30001"`, `http: "127.0.0.1:30201"`, "sync_interval: always",
		`listen: "127.0.0.1:30101"`, `"nats-route://127.0.0.1:30100"`, `"nats-route://127.0.0.1:30102"`, `store_dir: "/s2"`} {
		if !strings.Contains(c, want) {
			t.Errorf("node 2 config lacks %s:\n%s", want, c)
		}
	}
	if strings.Contains(c, "nats-route://127.0.0.1:30101") {
		t.Errorf("node 2 routes to itself:\n%s", c)
	}
}

func TestIggoReportFigure(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "pp_2p_0c_1000b_1000mpb_20261202T000000Z")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := `{"group_metrics":[{"actor_kind":"producer","summary":{"latency":{"p50_ms":1.5,"p99_ms":9.25}}}],
	"individual_metrics":[
	 {"actor_kind":"producer","summary":{"total_time_secs":2,"total_messages":100000}},
	 {"actor_kind":"producer","summary":{"total_time_secs":4,"total_messages":100000}},
	 {"actor_kind":"consumer","summary":{"total_time_secs":1,"total_messages":7}}]}`
	if err := os.WriteFile(filepath.Join(run, "report.json"), []byte(rep), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := readIggoReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := r.figureOf("producer")
	if err != nil {
		t.Fatal(err)
	}
	// 200,000 messages over the slower producer's 4 s, not the sum of rates.
	if f.Messages != 200_000 || f.MsgsPerSec != 50_000 || f.P50Ms != 1.5 || f.P99Ms != 9.25 {
		t.Fatalf("figure %+v", f)
	}
	if _, err := r.figureOf("producing_consumer"); err == nil {
		t.Fatal("a kind without actors gave a figure")
	}
}

func TestCompareMarkdownAndChart(t *testing.T) {
	res := &CompareResult{Started: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Host: "h", Cores: 2, MessageSize: 1000, BatchSize: 1000,
		NATSServerVersion: "v2.15.2", NATSCLIVersion: "v0.5.0", Modes: []JSMode{{"fast", 1000}, {"async", 500}},
		Disk: &Disk{Bytes: 1 << 30, Chunk: 16 << 20, MBps: 300, ReleasedMBps: 600, Load: 3}}
	res.Rows = []Row{
		{Setup: SetupSingle, Durability: "persisted", Producers: 1, Messages: 50_000, Iggo: Figure{MsgsPerSec: 150_000, P50Ms: 2, P99Ms: 4, Load: 1},
			JetStream: []Figure{{MsgsPerSec: 3_000, Load: 2}, {MsgsPerSec: 5_000, Load: 2.5}}},
		{Setup: SetupCluster, Durability: "replicated", Producers: 4, Messages: 2_000_000, Iggo: Figure{Err: "boom"},
			JetStream: []Figure{{MsgsPerSec: 40_000}, {Err: "not measured: x"}}},
		{Setup: SetupCluster, Durability: "persisted", Producers: 1, Messages: 50_000, Iggo: Figure{MsgsPerSec: 60_000},
			JetStream: []Figure{{MsgsPerSec: 2_000}, {MsgsPerSec: 6_000}}},
	}
	if v := res.Rows[0].Ratio(0); v != 50 {
		t.Errorf("ratio %v", v)
	}
	if v := res.Rows[0].BestRatio(); v != 30 {
		t.Errorf("best ratio %v", v)
	}
	if v := res.Rows[1].BestRatio(); !math.IsNaN(v) {
		t.Errorf("best ratio of a failed row %v", v)
	}
	md := res.Markdown()
	for _, want := range []string{
		"| single node | persisted | R1 file store, sync always | 1 | 50,000 | 150,000 | 2.0 / 4.0 | 3,000 | 0.0 / 0.0 | 50.0x | 5,000 | 0.0 / 0.0 | 30.0x | 30.0x | 1.0; 2.0, 2.5 |",
		"| 3-node | replicated | R3 file store, default sync | 4 | 2,000,000 | failed | – | 40,000 |",
		"150.0 MB/s of payload, 50% of the disk's 300.0 MB/s (25% of its 600.0 MB/s with pages released).",
		"- 3-node, replicated, 4 producer(s), iggo: boom",
		"Disk: 1,024 MiB in 16 MiB writes",
		"iggo 3-node throughput as a share of the single node's: persisted 1p 40%.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	dir := t.TempDir()
	if err := res.write(dir); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, filepath.Join(dir, "peers.png"))
}

func TestScalingMarkdown(t *testing.T) {
	r := &ScalingResult{Started: time.Now(), Host: "h", Cores: 2, NoFile: 20000, Durability: "replicated", MessageSize: 1000,
		BatchSize: 1000, CellData: 1e9, BootData: 10e9,
		Cells: []ScalingCell{{Partitions: 100, Producers: 4, Consumers: 4, Produce: Figure{MsgsPerSec: 1234.4, P50Ms: 1, P99Ms: 2},
			Consume: Figure{MsgsPerSec: 1000, P50Ms: 3, P99Ms: 4}, RSSPeak: 300 << 20, Load: 12.34},
			{Partitions: 10000, Producers: 1, Consumers: 1, Err: "refused by the node: TooManyPartitions"}},
		Boots: []BootRow{{Partitions: 100, Messages: 10_000_000, DiskBytes: 11e9, FillRate: 2e5, ServingSecs: 1.5, CompleteSecs: 2.25, RSSAfterBoot: 100 << 20, Load: 9}},
	}
	md := r.Markdown()
	for _, want := range []string{
		"| 100 | 4 | 4 | 1,234 | 1.0 / 2.0 | 1,000 | 3.0 / 4.0 | 300 | 12.3 |",
		"| 10,000 | 1 | 1 | refused by the node: TooManyPartitions |",
		"| 100 | 10,000,000 | 11,000 | 200,000 | 1.50 | 2.25 | 100 | 9.0 |",
		"RLIMIT_NOFILE 20000", "1,000 MB in all", "filled with 10,000 MB",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	for in, want := range map[string]string{
		"iggo-bench: exit status 1\nerror: invalid partition count (Iggy error 2015 TooManyPartitions); a request may": "invalid partition count (Iggy error 2015 TooManyPartitions)",
	} {
		if got := refusedText(errString(in)); got != want {
			t.Errorf("refusedText = %q, want %q", got, want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestDiskBandwidth(t *testing.T) {
	d, err := DiskBandwidth(t.Context(), t.TempDir(), 3<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if d.Bytes != 3<<20 || d.MBps <= 0 || d.Seconds <= 0 || d.ReleasedMBps <= 0 {
		t.Fatalf("%+v", d)
	}
	if _, err := DiskBandwidth(t.Context(), t.TempDir(), 1<<20, 2<<20); err == nil {
		t.Fatal("a chunk larger than the total was accepted")
	}
}

// The soak's windows keep each span's smallest and largest sample, and the
// growth compares the last window's peak with the second's.
func TestSoakWindows(t *testing.T) {
	s := &rssSeries{}
	for i, v := range []uint64{10, 30, 20, 40, 25, 35, 50} {
		s.at = append(s.at, time.Duration(i)*500*time.Millisecond)
		s.rss = append(s.rss, v<<20)
	}
	got := s.windows(time.Second)
	want := [][2]uint64{{10, 30}, {20, 40}, {25, 35}, {50, 50}}
	if len(got) != len(want) {
		t.Fatalf("%d windows, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].RSSMin != w[0]<<20 || got[i].RSSMax != w[1]<<20 || got[i].FromSecs != float64(i) {
			t.Fatalf("window %d: %+v, want %v MiB from %d s", i, got[i], w, i)
		}
	}
	r := &SoakResult{Started: time.Now(), Windows: got, Growth: float64(50)/40 - 1}
	if md := r.Markdown(); !strings.Contains(md, "| 3 | 4 | 50 | 50 |") || !strings.Contains(md, "+25.0%") {
		t.Fatalf("markdown:\n%s", md)
	}
}
