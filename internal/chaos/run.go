package chaos

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/chaos/check"
	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/internal/chaos/schedule"
	"github.com/iggo/iggo/internal/chaos/workload"
)

// Summary is the outcome of one run.
type Summary struct {
	RunID    string
	Seed     int64
	Valid    bool
	Result   *check.Result
	Schedule schedule.Schedule
	// Network is the network actually used (netns, proxy or none).
	Network string
	// FaultErrors are injector failures and crashes, in order.
	FaultErrors []string
	// LivenessOK and FinalRounds describe the phases after healing.
	LivenessOK  int
	FinalRounds int
	// ClientRetriedSends counts sends the clients confirmed after losing
	// an attempt's outcome (a retry with the same producer identity, in
	// the same call or as the same batch sent again);
	// Result.Stats.RetriedSends counts batches retried as further recorded
	// operations.
	ClientRetriedSends uint64
	// WorkDir holds the history, node logs and data; it is removed after a
	// passing run without fault errors unless Options.Keep. HistoryPath is the history file in
	// it; Visualizations are porcupine's views of failed checks.
	WorkDir        string
	HistoryPath    string
	Visualizations []string
	Elapsed        time.Duration
}

// Print writes the summary: run identity, faults, the checker's report
// and where the evidence is.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "== chaos run %s (seed %d, network %s, %v)\n", s.RunID, s.Seed, s.Network, s.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "schedule: %d faults, %v of fault time\n", len(s.Schedule.Faults), s.Schedule.Downtime().Round(time.Millisecond))
	for _, e := range s.FaultErrors {
		fmt.Fprintf(w, "fault error: %s\n", firstLine(e))
	}
	fmt.Fprintf(w, "after healing: %d liveness operations ok, final reads in %d round(s)\n", s.LivenessOK, s.FinalRounds)
	fmt.Fprintf(w, "sends confirmed by a retry inside the client: %d\n", s.ClientRetriedSends)
	if s.Result != nil {
		s.Result.Report(w)
	}
	if s.HistoryPath != "" {
		fmt.Fprintf(w, "history: %s\n", s.HistoryPath)
		fmt.Fprintf(w, "re-check: iggo chaos check %s\n", s.HistoryPath)
		fmt.Fprintf(w, "replay:   iggo chaos run --seed %d (same options)\n", s.Seed)
	}
	for _, v := range s.Visualizations {
		fmt.Fprintf(w, "linearizability view: %s\n", v)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// Run performs one chaos run: start the cluster, set up the workload, run
// workload and fault schedule together for Duration, heal, require
// liveness, read everything back from every node, stop the cluster, and
// check the history. The error reports a run that could not be carried
// out (the cluster did not start, the work directory is unusable); a run
// that finds violations returns a Summary with Valid false and no error.
func Run(ctx context.Context, opts Options) (Summary, error) {
	o := opts.Defaults()
	if err := o.Validate(); err != nil {
		return Summary{}, err
	}
	if o.Server != "" {
		// Nodes run in their own directories.
		abs, err := filepath.Abs(o.Server)
		if err != nil {
			return Summary{}, err
		}
		o.Server = abs
	}
	started := time.Now()
	var raw [4]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Summary{}, err
	}
	runID := fmt.Sprintf("%d-%s", o.Seed, hex.EncodeToString(raw[:2]))
	s := Summary{RunID: runID, Seed: o.Seed}

	workDir := o.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "iggo-chaos-"+runID+"-")
		if err != nil {
			return s, err
		}
		workDir = d
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return s, err
	}
	s.WorkDir = workDir

	sched, err := schedule.Generate(schedule.Params{Seed: o.Seed, Duration: o.Duration, Nodes: o.Nodes, Kinds: o.Faults,
		Interval: o.Interval, Length: o.FaultLength, AllowTotal: *o.AllowTotal})
	if err != nil {
		return s, err
	}
	s.Schedule = sched

	c, err := newCluster(o, workDir)
	if err != nil {
		return s, err
	}
	s.Network = c.netKind
	defer c.close()
	fmt.Fprintf(o.Out, "chaos %s: %d node(s), network %s, %d faults scheduled over %v, work dir %s\n",
		runID, o.Nodes, c.netKind, len(sched.Faults), o.Duration, workDir)
	all := make([]int, len(c.nodes))
	for i := range all {
		all[i] = i
	}
	if err := c.startAll(ctx, all); err != nil {
		return s, err
	}

	tag := binary.LittleEndian.Uint32(raw[:])
	stream := "chaos-" + runID
	optsJSON, _ := json.Marshal(o)
	schedJSON, _ := json.Marshal(sched)
	meta := history.Meta{RunID: runID, Seed: o.Seed, Started: started.UTC().Format(time.RFC3339Nano), Nodes: o.Nodes, Tag: tag,
		Stream: stream, Topic: "events", Partitions: o.Partitions,
		Checks: history.CheckConfig{LivenessOps: o.LivenessOps, LivenessDeadline: int64(o.LivenessDeadline),
			StrictReads: *o.StrictReads, ReplicaCopies: o.Nodes, AtLeastOnce: o.AtLeastOnce},
		Options: optsJSON, Schedule: schedJSON}
	s.HistoryPath = filepath.Join(workDir, "history.jsonl")
	hf, err := os.Create(s.HistoryPath)
	if err != nil {
		return s, err
	}
	defer hf.Close()
	rec, err := history.NewRecorder(meta, hf)
	if err != nil {
		return s, err
	}

	wl, err := workload.New(workload.Config{Addrs: c.addrs, Username: o.Username, Password: o.Password,
		Stream: stream, Topic: meta.Topic, Partitions: o.Partitions, Tag: tag,
		Producers: o.Producers, Consumers: o.Consumers, GroupMembers: o.GroupMembers, MetadataWorkers: o.MetadataWorkers,
		BatchMax: o.BatchMax, MessageSize: o.MessageSize, OpTimeout: o.OpTimeout, Think: o.Think, MaxOps: o.MaxOps,
		AtLeastOnce: o.AtLeastOnce, Seed: o.Seed, Logger: o.Logger}, rec)
	if err != nil {
		return s, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = wl.Setup(sctx)
	cancel()
	if err != nil {
		return s, err
	}

	// Workload and faults.
	rec.Note(history.PhaseWorkload)
	nem := newNemesis(c, rec)
	nem.holds, nem.acked = wl.Holds, wl.Acked
	phase, cancel := context.WithTimeout(ctx, o.Duration)
	nemDone := make(chan struct{})
	go func() {
		defer close(nemDone)
		nem.run(ctx, phase, time.Now(), sched.Steps())
	}()
	wl.Run(phase)
	<-phase.Done()
	<-nemDone
	cancel()

	rec.Note(history.PhaseHeal)
	nem.healAll(ctx)
	o.Logger.Info("healed", zap.String("run", runID))

	rec.Note(history.PhaseLiveness)
	lctx, cancel := context.WithTimeout(ctx, o.LivenessDeadline)
	s.LivenessOK = wl.Liveness(lctx, o.LivenessOps)
	cancel()

	rec.Note(history.PhaseFinal)
	fctx, cancel := context.WithTimeout(ctx, o.ConvergeTimeout)
	s.FinalRounds = wl.FinalReads(fctx)
	cancel()
	s.ClientRetriedSends = wl.RetriedSends()
	nem.watch(ctx) // a crash during the last phases counts too
	s.FaultErrors = nem.errs
	rec.Note(history.PhaseDone)
	if err := rec.Flush(); err != nil {
		return s, err
	}
	if err := c.close(); err != nil {
		o.Logger.Warn("cluster shutdown", zap.Error(err))
	}

	// Check what was written, as `iggo chaos check` would.
	m, events, err := history.ReadFile(s.HistoryPath)
	if err != nil {
		return s, err
	}
	s.Result = check.Check(m, events, check.Options{})
	s.Valid = s.Result.Valid
	if !s.Valid {
		s.Visualizations, _ = s.Result.WriteVisualizations(workDir)
	}
	s.Elapsed = time.Since(started)
	// Fault errors (a heal that timed out, a refused boot) are evidence
	// even when the checks pass.
	if s.Valid && len(s.FaultErrors) == 0 && !o.Keep {
		os.RemoveAll(workDir)
		s.WorkDir, s.HistoryPath = "", ""
	}
	s.Print(o.Out)
	return s, nil
}

// Campaign runs Run `runs` times with seeds opts.Seed, opts.Seed+1, ...
// and returns every summary; it stops early only if ctx ends or a run
// cannot be carried out.
func Campaign(ctx context.Context, opts Options, runs int) ([]Summary, error) {
	o := opts.Defaults()
	var out []Summary
	for i := 0; i < runs && ctx.Err() == nil; i++ {
		ro := opts
		ro.Seed = o.Seed + int64(i)
		if opts.WorkDir != "" {
			ro.WorkDir = filepath.Join(opts.WorkDir, fmt.Sprintf("run-%d", ro.Seed))
		}
		s, err := Run(ctx, ro)
		out = append(out, s)
		if err != nil {
			return out, fmt.Errorf("chaos: run %d (seed %d): %w", i+1, ro.Seed, err)
		}
	}
	return out, ctx.Err()
}

// Totals are a campaign's figures.
type Totals struct {
	Runs, Invalid int
	// Faults injected (start actions of the histories), by kind.
	Faults     map[string]int
	FaultTotal int
	// Sends by outcome (messages), retried sends (recorded retries of a
	// batch, and retries inside the client), and duplicates: Duplicate
	// and RetryMismatch violations.
	MsgAcked, MsgUnknown, MsgFailed  int
	RetriedSends                     int
	ClientRetriedSends               uint64
	UnknownLanded                    int
	Duplicates, RetryMismatch, Other int
	// LandedTwice counts logical messages stored under two attempts (a
	// Duplicate violation, except in AtLeastOnce runs where it is allowed).
	LandedTwice int
}

// Sum adds up a campaign's summaries.
func Sum(sums []Summary) Totals {
	t := Totals{Faults: map[string]int{}}
	for _, s := range sums {
		if s.Result == nil {
			continue
		}
		t.Runs++
		if !s.Valid {
			t.Invalid++
		}
		st := s.Result.Stats
		for k, n := range st.Faults {
			t.Faults[k] += n
			t.FaultTotal += n
		}
		t.MsgAcked += st.MsgAcked
		t.MsgUnknown += st.MsgUnknown
		t.MsgFailed += st.MsgFailed
		t.UnknownLanded += st.UnknownPresent
		t.RetriedSends += st.RetriedSends
		t.LandedTwice += st.RetriedLogical
		t.ClientRetriedSends += s.ClientRetriedSends
		for c, n := range s.Result.Counts {
			switch c {
			case check.Duplicate:
				t.Duplicates += n
			case check.RetryMismatch:
				t.RetryMismatch += n
			default:
				t.Other += n
			}
		}
	}
	return t
}

// Print writes the totals in one block.
func (t Totals) Print(w io.Writer) {
	var fs []string
	for _, k := range slices.Sorted(maps.Keys(t.Faults)) {
		fs = append(fs, fmt.Sprintf("%s=%d", k, t.Faults[k]))
	}
	fmt.Fprintf(w, "== campaign: %d schedules run, %d invalid\n", t.Runs, t.Invalid)
	fmt.Fprintf(w, "faults injected: %d (%s)\n", t.FaultTotal, strings.Join(fs, " "))
	fmt.Fprintf(w, "messages: %d acknowledged, %d unknown outcome (%d of them landed), %d failed\n", t.MsgAcked, t.MsgUnknown, t.UnknownLanded, t.MsgFailed)
	fmt.Fprintf(w, "retried sends: %d batches sent again with the same identity, %d sends confirmed by a retry\n", t.RetriedSends, t.ClientRetriedSends)
	fmt.Fprintf(w, "duplicates: %d; retry mismatches: %d; logical messages stored twice: %d; other violations: %d\n", t.Duplicates, t.RetryMismatch, t.LandedTwice, t.Other)
}

// CheckFile re-checks a saved history and writes the report to out.
func CheckFile(path string, out io.Writer, visualizeDir string) (*check.Result, error) {
	m, events, err := history.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := check.Check(m, events, check.Options{})
	fmt.Fprintf(out, "== history %s (run %s, seed %d, %d nodes, %d events)\n", path, m.RunID, m.Seed, m.Nodes, len(events))
	r.Report(out)
	if !r.Valid && visualizeDir != "" {
		files, err := r.WriteVisualizations(visualizeDir)
		for _, f := range files {
			fmt.Fprintf(out, "linearizability view: %s\n", f)
		}
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// ErrInvalid is returned by the command when a run or check finds
// violations.
var ErrInvalid = errors.New("chaos: violations found")

func invalidSeeds(ss []Summary) []int64 {
	var out []int64
	for _, s := range ss {
		if s.Result != nil && !s.Valid {
			out = append(out, s.Seed)
		}
	}
	return slices.Clip(out)
}
