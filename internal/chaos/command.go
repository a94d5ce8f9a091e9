package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/chaos/fakenode"
	"github.com/iggo/iggo/internal/chaos/schedule"
)

// Command returns the `chaos` command: `chaos run` runs one or more
// campaigns against local processes, `chaos check` re-checks a saved
// history. cmd/iggo registers it with root.AddCommand(chaos.Command()).
func Command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Jepsen-style fault injection runs against local iggo processes",
		Long: `chaos starts a local cluster, runs a recorded client workload while a seeded
schedule kills, pauses, wipes, corrupts and partitions nodes, heals, requires
the cluster to serve again, reads every partition back from every node, and
checks the history: no acknowledged message lost, no duplicates, order kept,
offsets never reused, consumer offsets monotonic, metadata linearizable.`,
		SilenceUsage: true,
	}
	cmd.AddCommand(runCommand(), checkCommand())
	return cmd
}

func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func runCommand() *cobra.Command {
	var (
		o          Options
		runs       int
		faults     string
		bugs       string
		network    string
		allowTotal string
		strict     string
		verbose    bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run chaos campaigns",
		Example: `  iggo chaos run --fake --duration 20s
  iggo chaos run --server bin/iggo-server --nodes 1 --faults kill,pause,corrupt --runs 10 --duration 2m
  iggo chaos run --server bin/iggo-server --nodes 3 --faults all --allow-total=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if faults != "" {
				if o.Faults, err = schedule.ParseKinds(faults); err != nil {
					return err
				}
			}
			for _, b := range strings.Split(bugs, ",") {
				if b = strings.TrimSpace(b); b != "" {
					o.FakeBugs = append(o.FakeBugs, b)
				}
			}
			o.Network = network
			if o.AllowTotal, err = optionalBool("allow-total", allowTotal); err != nil {
				return err
			}
			if o.StrictReads, err = optionalBool("strict-reads", strict); err != nil {
				return err
			}
			if o.Server == "" && !o.Fake {
				if _, err := os.Stat(filepath.Join("bin", "iggo-server")); err == nil {
					o.Server = filepath.Join("bin", "iggo-server")
				} else {
					return errors.New("chaos: no server: pass --server PATH (or build bin/iggo-server), or --fake")
				}
			}
			if verbose {
				o.Logger, _ = zap.NewDevelopment()
			}
			o.Out = cmd.OutOrStdout()
			ctx, cancel := signalContext(cmd.Context())
			defer cancel()
			sums, err := Campaign(ctx, o, runs)
			if runs > 1 {
				Sum(sums).Print(o.Out)
			}
			bad := invalidSeeds(sums)
			fmt.Fprintf(o.Out, "== %d run(s), %d invalid", len(sums), len(bad))
			if len(bad) > 0 {
				fmt.Fprintf(o.Out, " (seeds %v)", bad)
			}
			fmt.Fprintln(o.Out)
			if err != nil {
				for _, s := range sums[max(len(sums)-1, 0):] {
					if s.WorkDir != "" {
						fmt.Fprintf(o.Out, "work dir kept: %s\n", s.WorkDir)
					}
				}
				return err
			}
			if len(bad) > 0 {
				return ErrInvalid
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.Seed, "seed", 0, "seed of the first run (0: the clock); run i uses seed+i")
	f.IntVar(&runs, "runs", 1, "number of runs")
	f.DurationVar(&o.Duration, "duration", 0, "workload-and-faults phase of each run (default 30s)")
	f.IntVar(&o.Nodes, "nodes", 0, "cluster size (default 1)")
	f.StringVar(&o.Server, "server", "", "iggo-server binary (default bin/iggo-server when it exists)")
	f.StringArrayVar(&o.ServerArgs, "server-arg", nil, "extra server argument (repeatable)")
	f.BoolVar(&o.Fake, "fake", false, "run against the built-in fake node (single node, no replication)")
	f.StringVar(&bugs, "bug", "", "fake-node bugs to switch on: "+strings.Join(fakenode.Bugs, ", "))
	f.StringVar(&o.Username, "username", "", "login user (default iggy)")
	f.StringVar(&o.Password, "password", "", "login password (default iggy)")
	f.StringVar(&network, "network", NetworkAuto, "network: auto, netns, proxy or none")
	f.StringVar(&faults, "faults", "", fmt.Sprintf("comma-separated fault kinds or \"all\" (%v)", schedule.Kinds))
	f.DurationVar(&o.Interval, "interval", 0, "mean quiet time before each fault (default 3s)")
	f.DurationVar(&o.FaultLength, "fault-length", 0, "mean fault length (default 2s)")
	f.StringVar(&allowTotal, "allow-total", "", "allow faults beyond what the cluster tolerates: true/false (default: true for 1 node)")
	f.StringSliceVar(&o.CorruptFiles, "corrupt-files", nil, "file patterns corruption picks from (default *.log,*.index,*.wal)")
	f.IntVar(&o.Partitions, "partitions", 0, "partitions of the workload topic (default 3)")
	f.IntVar(&o.Producers, "producers", 0, "producers (default 2)")
	f.IntVar(&o.Consumers, "consumers", 0, "consumers (default 2)")
	f.IntVar(&o.GroupMembers, "group-members", 0, "consumer-group members (default 2)")
	f.IntVar(&o.MetadataWorkers, "metadata-workers", 0, "metadata workers (default 1)")
	f.IntVar(&o.BatchMax, "batch-max", 0, "largest send batch (default 5)")
	f.IntVar(&o.MessageSize, "message-size", 0, "payload bytes (default 64)")
	f.DurationVar(&o.OpTimeout, "op-timeout", 0, "timeout of one client operation (default 2s)")
	f.IntVar(&o.LivenessOps, "liveness-ops", 0, "operations that must succeed after healing (default 20)")
	f.DurationVar(&o.LivenessDeadline, "liveness-deadline", 0, "deadline for them (default 30s)")
	f.DurationVar(&o.ConvergeTimeout, "converge-timeout", 0, "how long final reads wait for nodes to converge (default 60s)")
	f.StringVar(&strict, "strict-reads", "", "check reads as linearizable: true/false (default: true for 1 node)")
	f.BoolVar(&o.AtLeastOnce, "at-least-once", false, "producers send as Iggy's SDKs do (no producer identity, a failed batch resent with new ids) and logical duplicates are allowed; default: exactly-once, no duplicate at all")
	f.StringVar(&o.WorkDir, "workdir", "", "directory for data, logs and histories (default: a temporary directory per run)")
	f.BoolVar(&o.Keep, "keep", false, "keep the work directory of passing runs too")
	f.BoolVarP(&verbose, "verbose", "v", false, "log client and runner events")
	return cmd
}

func optionalBool(name, v string) (*bool, error) {
	switch strings.ToLower(v) {
	case "":
		return nil, nil
	case "true", "1", "yes":
		b := true
		return &b, nil
	case "false", "0", "no":
		b := false
		return &b, nil
	}
	return nil, fmt.Errorf("chaos: --%s wants true or false, not %q", name, v)
}

func checkCommand() *cobra.Command {
	var visualize string
	cmd := &cobra.Command{
		Use:   "check HISTORY...",
		Short: "Re-check saved chaos histories",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				r, err := CheckFile(path, cmd.OutOrStdout(), visualize)
				if err != nil {
					return err
				}
				if !r.Valid {
					bad++
				}
			}
			if bad > 0 {
				return ErrInvalid
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&visualize, "visualize", "", "write porcupine views of failed linearizability checks into this directory")
	return cmd
}
