package check

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/iggo/iggo/internal/chaos/history"
)

func checkLiveness(r *Result, meta history.Meta, ops []history.Op, notes []history.Event) {
	need := meta.Checks.LivenessOps
	if need <= 0 {
		return
	}
	start := int64(-1)
	for _, n := range notes {
		if n.Value != nil && n.Value.Phase == history.PhaseLiveness {
			start = n.Time
			break
		}
	}
	if start < 0 {
		r.flag(Liveness, "the liveness phase never started (the run ended early)", nil)
		return
	}
	deadline := start + meta.Checks.LivenessDeadline
	for i := range ops {
		op := &ops[i]
		if op.Type == history.OK && op.Invoke >= start && op.Complete <= deadline && op.Kind != history.Fault && op.Kind != history.FinalRead {
			r.Stats.LivenessOK++
		}
	}
	if r.Stats.LivenessOK < need {
		r.flag(Liveness, "after healing, %d operations succeeded within %v; %d required",
			nil, r.Stats.LivenessOK, time.Duration(meta.Checks.LivenessDeadline), need)
	}
}

// Report writes a human-readable summary: operations by kind and outcome,
// faults, message accounting, violations and notes.
func (r *Result) Report(w io.Writer) {
	verdict := "VALID"
	if !r.Valid {
		verdict = "INVALID"
	}
	fmt.Fprintf(w, "verdict: %s\n", verdict)
	fmt.Fprintln(w, "operations (ok/fail/info):")
	kinds := make([]string, 0, len(r.Stats.Ops))
	for k := range r.Stats.Ops {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		m := r.Stats.Ops[history.Kind(k)]
		fmt.Fprintf(w, "  %-14s %6d / %6d / %6d\n", k, m[history.OK], m[history.Fail], m[history.Info])
	}
	if len(r.Stats.Faults) > 0 {
		var fs []string
		for _, k := range sortedKeys(r.Stats.Faults) {
			fs = append(fs, fmt.Sprintf("%s=%d", k, r.Stats.Faults[k]))
		}
		fmt.Fprintf(w, "faults injected: %s\n", strings.Join(fs, " "))
	} else {
		fmt.Fprintln(w, "faults injected: none")
	}
	fmt.Fprintf(w, "messages: %d acknowledged, %d failed, %d unknown (%d of them landed); %d sends retried with the same batch; %d logical messages landed more than once\n",
		r.Stats.MsgAcked, r.Stats.MsgFailed, r.Stats.MsgUnknown, r.Stats.UnknownPresent, r.Stats.RetriedSends, r.Stats.RetriedLogical)
	fmt.Fprintf(w, "observations: %d; liveness: %d operations ok\n", r.Stats.Observations, r.Stats.LivenessOK)
	for _, n := range sortedKeys(r.Stats.FinalLengths) {
		var ls []string
		for _, p := range sortedKeys(r.Stats.FinalLengths[n]) {
			ls = append(ls, fmt.Sprintf("p%d=%d", p, r.Stats.FinalLengths[n][p]))
		}
		fmt.Fprintf(w, "final read node %d: %s\n", n, strings.Join(ls, " "))
	}
	if len(r.Counts) > 0 {
		fmt.Fprintln(w, "violations:")
		for _, c := range sortedKeys(r.Counts) {
			fmt.Fprintf(w, "  %s: %d\n", c, r.Counts[c])
		}
		for _, v := range r.Violations {
			fmt.Fprintf(w, "  - %s\n", v)
		}
		shown := len(r.Violations)
		total := 0
		for _, n := range r.Counts {
			total += n
		}
		if total > shown {
			fmt.Fprintf(w, "  (%d more not shown)\n", total-shown)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// WriteVisualizations writes porcupine's HTML view of each failed
// linearizability check into dir and returns the files written.
func (r *Result) WriteVisualizations(dir string) ([]string, error) {
	var out []string
	for _, name := range sortedKeys(r.Illegal) {
		ev := r.Illegal[name]
		path := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "_", ":", "_").Replace(name)+".html")
		f, err := os.Create(path)
		if err != nil {
			return out, err
		}
		err = porcupine.Visualize(ev.Model, ev.Info, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return out, fmt.Errorf("check: visualize %s: %w", name, err)
		}
		out = append(out, path)
	}
	return out, nil
}
