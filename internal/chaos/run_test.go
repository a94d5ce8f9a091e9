package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/internal/chaos/check"
	"github.com/iggo/iggo/internal/chaos/fakenode"
	"github.com/iggo/iggo/internal/chaos/fault"
	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/internal/chaos/schedule"
	"github.com/iggo/iggo/replica/config"
)

// fakeOptions is a short single-node run against the fake node with faults
// frequent enough that every run sees several.
func fakeOptions(t *testing.T, seed int64, kinds ...schedule.Kind) Options {
	return Options{Seed: seed, Duration: 3 * time.Second, Fake: true, Faults: kinds,
		Interval: 400 * time.Millisecond, FaultLength: 300 * time.Millisecond,
		Producers: 2, Consumers: 1, GroupMembers: 1, MetadataWorkers: 1, Partitions: 2,
		LivenessOps: 10, LivenessDeadline: 20 * time.Second, ConvergeTimeout: 20 * time.Second,
		OpTimeout: time.Second, WorkDir: filepath.Join(t.TempDir(), "run")}
}

func runOK(t *testing.T, o Options) Summary {
	t.Helper()
	var out bytes.Buffer
	o.Out = &out
	s, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run output:\n%s", out.String())
		}
	})
	return s
}

// mustHaveInjected fails unless the run injected at least one fault of
// each kind (anti-vacuity: a run without faults proves nothing).
func mustHaveInjected(t *testing.T, s Summary, kinds ...schedule.Kind) {
	t.Helper()
	for _, k := range kinds {
		if s.Result.Stats.Faults[string(k)] == 0 {
			t.Fatalf("no %s fault was injected (schedule %v, errors %v)", k, s.Schedule.Faults, s.FaultErrors)
		}
	}
	if s.Result.Stats.MsgAcked == 0 || s.Result.Stats.Observations == 0 {
		t.Fatalf("the workload did nothing: %+v", s.Result.Stats)
	}
}

func TestRunCorrectFakePasses(t *testing.T) {
	o := fakeOptions(t, 11, schedule.Kill, schedule.Pause)
	s := runOK(t, o)
	if !s.Valid {
		var sb strings.Builder
		s.Print(&sb)
		t.Fatalf("a correct node failed the checks:\n%s", sb.String())
	}
	mustHaveInjected(t, s, schedule.Kill, schedule.Pause)
	if len(s.FaultErrors) != 0 {
		t.Errorf("fault errors: %v", s.FaultErrors)
	}
	if s.LivenessOK < o.LivenessOps || s.Result.Stats.LivenessOK < o.LivenessOps {
		t.Errorf("liveness %d/%d", s.LivenessOK, s.Result.Stats.LivenessOK)
	}
	for _, k := range []string{"send", "poll", "group_poll", "store_offset", "get_offset", "create_stream", "get_topic", "join_group"} {
		if s.Result.Stats.Ops[history.Kind(k)][history.OK] == 0 {
			t.Errorf("no successful %s", k)
		}
	}
	if _, err := os.Stat(o.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work dir of a passing run kept: %v", err)
	}
}

// TestRunCatchesFakeBugs: every bug of the fake node is caught by the
// check it breaks.
func TestRunCatchesFakeBugs(t *testing.T) {
	cases := []struct {
		bug   string
		check string
	}{
		{fakenode.BugLoseAcked, check.Lost},
		{fakenode.BugReuseOffsets, check.OffsetReuse},
		{fakenode.BugVolatileOffsets, check.OffsetRegress},
		{fakenode.BugForgetDeletes, check.MetadataLinear},
	}
	for i, c := range cases {
		t.Run(c.bug, func(t *testing.T) {
			// Detection is probabilistic (a deleted stream must be read
			// after a kill, an offset read after a restart...): the runs
			// are made dense in faults and metadata traffic, and a bug
			// must be caught in one of two runs.
			var s Summary
			for attempt := 0; attempt < 2; attempt++ {
				o := fakeOptions(t, int64(100+10*i+attempt), schedule.Kill)
				o.FakeBugs = []string{c.bug}
				o.MetadataWorkers = 2
				s = runOK(t, o)
				mustHaveInjected(t, s, schedule.Kill)
				if !s.Valid && s.Result.Counts[c.check] > 0 {
					break
				}
			}
			if s.Valid || s.Result.Counts[c.check] == 0 {
				var sb strings.Builder
				s.Print(&sb)
				t.Fatalf("bug %s not caught as %s in two runs; the last:\n%s", c.bug, c.check, sb.String())
			}
			// The evidence stays for replay and re-checking.
			if s.HistoryPath == "" {
				t.Fatal("history of a failing run not kept")
			}
			var out bytes.Buffer
			r, err := CheckFile(s.HistoryPath, &out, t.TempDir())
			if err != nil || r.Valid || r.Counts[c.check] != s.Result.Counts[c.check] {
				t.Fatalf("re-check disagrees: %v, counts %v vs %v", err, r.Counts, s.Result.Counts)
			}
			if !strings.Contains(out.String(), "INVALID") {
				t.Errorf("re-check report:\n%s", out.String())
			}
		})
	}
}

// TestRunCorruptionOnTheOnlyCopy: a corrupted data file on a single node
// loses data, which is tolerated and reported; offsets must still never be
// reused, and the node must serve again.
func TestRunCorruptionOnTheOnlyCopy(t *testing.T) {
	o := fakeOptions(t, 21, schedule.Corrupt)
	s := runOK(t, o)
	mustHaveInjected(t, s, schedule.Corrupt)
	if !s.Valid {
		var sb strings.Builder
		s.Print(&sb)
		t.Fatalf("tolerated loss flagged:\n%s", sb.String())
	}
	if s.Result.Stats.ToleratedLoss == 0 {
		t.Errorf("corruption lost nothing: %+v", s.Result.Stats)
	}
}

// TestRunNetworkIsolation runs a node inside a network namespace (or, with
// no namespace support, behind the loopback proxy) and cuts it off.
func TestRunNetworkIsolation(t *testing.T) {
	nets := []string{NetworkProxy}
	if fault.NetnsAvailable() == nil {
		nets = append(nets, NetworkNetns)
	} else {
		o := fakeOptions(t, 31, schedule.Isolate)
		o.Network = NetworkNetns
		if _, err := Run(context.Background(), o); err == nil {
			t.Error("netns run succeeded without namespace support")
		}
	}
	for i, n := range nets {
		t.Run(n, func(t *testing.T) {
			o := fakeOptions(t, int64(40+i), schedule.Isolate, schedule.Kill)
			o.Network = n
			s := runOK(t, o)
			if s.Network != n {
				t.Fatalf("network %s used, %s asked", s.Network, n)
			}
			mustHaveInjected(t, s, schedule.Isolate)
			if !s.Valid {
				var sb strings.Builder
				s.Print(&sb)
				t.Fatalf("isolation of a correct node failed the checks:\n%s", sb.String())
			}
			if s.Result.Stats.Ops[history.Send][history.Info]+s.Result.Stats.Ops[history.Send][history.Fail] == 0 {
				t.Error("isolation did not disturb a single send")
			}
		})
	}
}

func TestNemesisRecordsCrashes(t *testing.T) {
	o := fakeOptions(t, 51).Defaults()
	c, err := newCluster(o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close() })
	ctx := context.Background()
	if err := c.start(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	rec, _ := history.NewRecorder(history.Meta{}, nil)
	nem := newNemesis(c, rec)
	// A kill the nemesis did not order is a crash.
	if err := c.procs[0].Kill(); err != nil {
		t.Fatal(err)
	}
	nem.watch(ctx)
	if !c.procs[0].Running() {
		t.Fatal("crashed node not restarted")
	}
	r := check.Check(history.Meta{}, rec.Events(), check.Options{})
	if r.Counts[check.Crash] != 1 || len(nem.errs) != 1 {
		t.Fatalf("crash counts %v, errors %v", r.Counts, nem.errs)
	}
	// A kill the nemesis ordered is not.
	nem.inject(ctx, schedule.Fault{ID: 1, Kind: schedule.Kill, Nodes: []int{0}, Start: 0, End: time.Second})
	nem.watch(ctx)
	nem.healAll(ctx)
	if !c.procs[0].Running() {
		t.Fatal("killed node not restarted by the heal")
	}
	r = check.Check(history.Meta{}, rec.Events(), check.Options{})
	if r.Counts[check.Crash] != 1 || r.Stats.Faults["kill"] != 1 || r.Stats.Ops[history.Fault][history.OK] != 3 {
		t.Fatalf("after an ordered kill: counts %v, stats %+v", r.Counts, r.Stats.Ops)
	}
	// A network fault without a network injector is recorded as failed.
	nem.inject(ctx, schedule.Fault{ID: 2, Kind: schedule.Partition, Nodes: []int{0}, Peers: []int{1}, Start: 0, End: time.Second})
	if !strings.Contains(strings.Join(nem.errs, "\n"), "no network injector") {
		t.Errorf("errors %v", nem.errs)
	}
}

// TestServerConfigRoster: the generated configurations load and validate
// with the server's own loader, every node's file carries the same roster
// (client, replica and gossip ports), the pre-shared key and cluster mode,
// and each binds its own client address; one node runs without cluster
// mode.
func TestServerConfigRoster(t *testing.T) {
	c := &cluster{listen: []string{"10.1.1.1:8090", "10.1.1.2:8090", "10.1.1.3:8090"},
		replica: []string{"10.1.1.1:9090", "10.1.1.2:9090", "10.1.1.3:9090"},
		gossip:  []string{"10.1.1.1:10090", "10.1.1.2:10090", "10.1.1.3:10090"}}
	dir := t.TempDir()
	for i := range c.listen {
		got := c.serverConfig(i, "/d")
		path := filepath.Join(dir, fmt.Sprintf("n%d.toml", i))
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, warnings, err := config.LoadFrom(path, nil)
		if err != nil || len(warnings) != 0 {
			t.Fatalf("node %d config does not load: %v %v\n%s", i, err, warnings, got)
		}
		if !cfg.Cluster.Enabled || cfg.Cluster.Name != "iggo-chaos" || !cfg.Cluster.Auth.Enabled || len(cfg.Cluster.Auth.SharedSecret) < config.SharedSecretMinBytes ||
			cfg.Path != "/d" || cfg.TCP.Address != c.listen[i] || len(cfg.Cluster.Nodes) != 3 {
			t.Fatalf("node %d config %+v", i, cfg)
		}
		for j, n := range cfg.Cluster.Nodes {
			g, _ := n.GossipPort()
			if n.ReplicaID != j || n.IP != fmt.Sprintf("10.1.1.%d", j+1) || *n.Ports.TCP != 8090 || *n.Ports.TCPReplica != 9090 || g != 10090 {
				t.Errorf("node %d roster entry %d: %+v", i, j, n)
			}
		}
	}
	one := &cluster{listen: []string{"127.0.0.1:5000"}, replica: []string{"127.0.0.1:5001"}, gossip: []string{"127.0.0.1:5002"}}
	if got := one.serverConfig(0, "/d"); !strings.Contains(got, `address = "127.0.0.1:5000"`) || strings.Contains(got, "[cluster") {
		t.Errorf("single-node config:\n%s", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{},                                // no server
		{Server: "x", Fake: true},         // both
		{Fake: true, Nodes: 3},            // fake cluster
		{Server: "x", Network: "carrier"}, // unknown network
		{Server: "x", Nodes: 3, Network: NetworkProxy},
	}
	for i, o := range bad {
		o = o.Defaults()
		if err := o.Validate(); err == nil {
			t.Errorf("case %d accepted: %+v", i, o)
		}
	}
	o := Options{Fake: true}.Defaults()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if !*o.AllowTotal || !*o.StrictReads || len(o.Faults) != 2 || o.CorruptFiles[0] != "messages.log" {
		t.Errorf("single-node defaults %+v", o)
	}
	three := Options{Server: "x", Nodes: 3}.Defaults()
	if *three.AllowTotal || *three.StrictReads || len(three.Faults) != 6 {
		t.Errorf("cluster defaults %+v", three)
	}
}

func TestCommand(t *testing.T) {
	cmd := Command()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	dir := t.TempDir()
	cmd.SetArgs([]string{"run", "--fake", "--seed", "61", "--duration", "2s", "--faults", "kill", "--interval", "500ms",
		"--fault-length", "300ms", "--producers", "1", "--consumers", "1", "--group-members", "1", "--liveness-ops", "5",
		"--bug", fakenode.BugLoseAcked, "--workdir", dir})
	err := cmd.Execute()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("buggy run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "1 invalid (seeds [61])") {
		t.Errorf("campaign line missing:\n%s", out.String())
	}
	hist, _ := filepath.Glob(filepath.Join(dir, "run-61", "history.jsonl"))
	if len(hist) != 1 {
		t.Fatalf("history not kept under the work dir: %v", hist)
	}
	cmd = Command()
	out.Reset()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"check", hist[0]})
	if err := cmd.Execute(); !errors.Is(err, ErrInvalid) || !strings.Contains(out.String(), "lost") {
		t.Fatalf("check: %v\n%s", err, out.String())
	}
	cmd = Command()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"run", "--fake", "--allow-total", "maybe"})
	if err := cmd.Execute(); err == nil {
		t.Error("bad --allow-total accepted")
	}
}
