package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iggo/iggo/cmd/iggo/internal/bench"
)

// benchFlags are the flags every benchmark kind takes.
type benchFlags struct {
	messageSize, messagesPerBatch string
	messageBatches                uint64
	totalData, rateLimit          string
	warmup, sampling, idle        time.Duration
	pollWait                      time.Duration
	window                        int
	producers, consumers          int
	streams, partitions, groups   int
	readAmplification             float64
	serverAddress                 string
	transport                     string
	username, password, token     string
	reuse, keep                   bool
	durability, offsetDurability  string
	maxTopicSize, messageExpiry   string
	outputDir                     string
	noOutput, noCharts            bool
	identifier, remark            string
	progress                      string
	progressInterval              time.Duration
}

func (env *Env) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench KIND",
		Short: "Benchmark a server with Iggy's workloads (pp, pc, ppc, bp, bcg, bpcg, e2e)",
		Long: `Run one of Iggy's benchmark kinds against a server. The benchmark creates its own
streams (bench-stream-1..N, topic "topic-1"), deletes them at the end unless
--keep-streams, prints throughput and latency percentiles per actor and in
total, and writes report.json plus throughput.png and latency.png into a new
directory under --output-dir.

Global connection options before "bench" apply (address, TLS, -u/-p/-t);
without credentials the benchmark logs in as iggy/iggy.`,
		Example: `  iggo bench pp -p 4 -b 200
  iggo bench pc -c 4 -b 200
  iggo bench ppc -p 2 -c 2 -m 512 -P 100 -b 500 --rate-limit 50MB
  iggo bench bcg -c 6 -g 2 -s 2 -a 12 -T 1GB
  iggo bench e2e -p 1 -m 1000 -P 10 -b 1000 --durability persisted`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	for _, k := range bench.Kinds {
		cmd.AddCommand(env.benchKindCmd(k.Kind, k.Alias, k.Short))
	}
	return cmd
}

func (env *Env) benchKindCmd(kind bench.Kind, alias, short string) *cobra.Command {
	var bf benchFlags
	d := bench.Defaults(kind)
	cmd := &cobra.Command{
		Use: string(kind), Aliases: []string{alias}, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := env.benchParams(cmd, kind, &bf)
			if err != nil {
				return err
			}
			mode := bench.ProgressLines
			switch bf.progress {
			case "auto":
				if env.IsTerminal(env.Out) && termColumns(env.Out) > 0 {
					mode = bench.ProgressBars
				}
				if env.Global.Quiet {
					mode = bench.ProgressNone
				}
			case "bars":
				mode = bench.ProgressBars
			case "lines":
			case "none":
				mode = bench.ProgressNone
			default:
				return Usagef("invalid --progress %q: want auto, bars, lines or none", bf.progress)
			}
			env.Statusf("Running %s against %s", kind, p.Server.Address)
			_, err = bench.Run(cmd.Context(), p, bench.Options{Out: env.Out, Progress: mode, ProgressInterval: bf.progressInterval})
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&bf.messageSize, "message-size", "m", d.MessageSize.String(), "payload bytes per message, or a range such as 200..500")
	f.StringVarP(&bf.messagesPerBatch, "messages-per-batch", "P", d.MessagesPerBatch.String(), "messages per batch, or a range")
	f.Uint64VarP(&bf.messageBatches, "message-batches", "b", d.MessageBatches, "batches each producing actor sends (each consumer reads its share)")
	f.StringVarP(&bf.totalData, "total-data", "T", "", "total payload bytes instead of --message-batches, e.g. 1GB")
	f.StringVarP(&bf.rateLimit, "rate-limit", "r", "", "aggregate rate limit per second, e.g. 100MB (split evenly over actors)")
	f.DurationVarP(&bf.warmup, "warmup-time", "w", 0, "run this long before measuring")
	f.DurationVarP(&bf.sampling, "sampling-time", "t", d.SamplingTime, "time-series bucket")
	f.IntVarP(&bf.window, "moving-average-window", "W", d.MovingAverageWindow, "samples averaged in the charts")
	f.DurationVar(&bf.idle, "idle-timeout", d.IdleTimeout, "fail when an actor makes no progress this long")
	if d.Consumers > 0 {
		f.DurationVar(&bf.pollWait, "poll-wait", 0, "consumers' polls wait on the server up to this long for messages (iggo long polling; a poll's latency then includes its wait; 0: poll with a client-side backoff)")
	}
	if d.Producers > 0 {
		f.IntVarP(&bf.producers, "producers", "p", d.Producers, "producing actors")
	}
	if d.Consumers > 0 {
		f.IntVarP(&bf.consumers, "consumers", "c", d.Consumers, "consumers")
	}
	f.IntVarP(&bf.streams, "streams", "s", d.Streams, "streams (pinned kinds: default one per actor)")
	f.IntVarP(&bf.partitions, "partitions", "a", d.Partitions, "partitions per topic")
	if d.ConsumerGroups > 0 {
		f.IntVarP(&bf.groups, "consumer-groups", "g", d.ConsumerGroups, "consumer groups (one per stream)")
	}
	if kind == bench.PinnedProducerAndConsumer || kind == bench.BalancedProducerAndConsumerGroup {
		f.Float64VarP(&bf.readAmplification, "read-amplification", "R", d.ReadAmplification, "consumer rate as a multiple of the producer rate (with --rate-limit)")
	}
	f.StringVar(&bf.serverAddress, "server-address", "", "server address (default: the global address of the transport)")
	f.StringVar(&bf.transport, "transport", "", "tcp, ws or quic (default: the global --transport); TLS comes from the global TLS flags")
	f.StringVar(&bf.username, "username", "", "username (default: global -u, else iggy)")
	f.StringVar(&bf.password, "password", "", "password (default: global -p, else iggy)")
	f.StringVar(&bf.token, "token", "", "personal access token instead of a username")
	f.BoolVar(&bf.reuse, "reuse-streams", false, "append to existing bench streams instead of recreating them (and keep them)")
	f.BoolVar(&bf.keep, "keep-streams", false, "do not delete the streams the benchmark created")
	f.StringVar(&bf.durability, "durability", "", "durability of the created topics: replicated or persisted (default: server default)")
	f.StringVar(&bf.offsetDurability, "consumer-offset-durability", "", "consumer offset durability of the created topics")
	f.StringVar(&bf.maxTopicSize, "max-topic-size", "", "max size of the created topics, e.g. 10GB")
	f.StringVar(&bf.messageExpiry, "message-expiry", "", "message expiry of the created topics, e.g. 1h")
	f.StringVarP(&bf.outputDir, "output-dir", "o", "performance_results", "directory for the run's report.json and charts")
	f.BoolVar(&bf.noOutput, "no-output", false, "write no report or charts")
	f.BoolVar(&bf.noCharts, "no-charts", false, "write the report but no charts")
	f.StringVar(&bf.identifier, "identifier", "", "machine identifier recorded in the report (default: hostname)")
	f.StringVar(&bf.remark, "remark", "", "free text recorded in the report")
	f.StringVar(&bf.progress, "progress", "auto", "auto (bars on a terminal, else lines), bars, lines or none")
	f.DurationVar(&bf.progressInterval, "progress-interval", time.Second, "period of progress lines")
	return cmd
}

// benchParams turns flags into validated parameters.
func (env *Env) benchParams(cmd *cobra.Command, kind bench.Kind, bf *benchFlags) (bench.Params, error) {
	p := bench.Defaults(kind)
	var err error
	usage := func(err error) error { return &UsageError{Msg: err.Error()} }
	if p.MessageSize, err = bench.ParseRange(bf.messageSize); err != nil {
		return p, Usagef("--message-size: %v", err)
	}
	if p.MessagesPerBatch, err = bench.ParseRange(bf.messagesPerBatch); err != nil {
		return p, Usagef("--messages-per-batch: %v", err)
	}
	p.MessageBatches = bf.messageBatches
	if bf.totalData != "" {
		if p.TotalData, err = ParseByteSize(bf.totalData); err != nil {
			return p, Usagef("--total-data: %v", err)
		}
		if !cmd.Flags().Changed("message-batches") {
			p.MessageBatches = 0
		}
	}
	if bf.rateLimit != "" {
		if p.RateLimit, err = ParseByteSize(strings.TrimSuffix(bf.rateLimit, "/s")); err != nil {
			return p, Usagef("--rate-limit: %v", err)
		}
	}
	if bf.maxTopicSize != "" {
		if p.MaxTopicSize, err = ParseByteSize(bf.maxTopicSize); err != nil {
			return p, Usagef("--max-topic-size: %v", err)
		}
	}
	if bf.messageExpiry != "" {
		if p.MessageExpiry, err = ParseExpiry(bf.messageExpiry); err != nil {
			return p, Usagef("--message-expiry: %v", err)
		}
	}
	p.WarmupTime, p.SamplingTime, p.IdleTimeout, p.MovingAverageWindow = bf.warmup, bf.sampling, bf.idle, bf.window
	p.PollWait = bf.pollWait
	f := cmd.Flags()
	if f.Lookup("producers") != nil {
		p.Producers = bf.producers
	}
	if f.Lookup("consumers") != nil {
		p.Consumers = bf.consumers
	}
	if f.Lookup("consumer-groups") != nil {
		p.ConsumerGroups = bf.groups
	}
	if f.Lookup("read-amplification") != nil {
		p.ReadAmplification = bf.readAmplification
	}
	p.Partitions = bf.partitions
	if f.Changed("streams") {
		p.Streams = bf.streams
	} else {
		p.FollowActors()
	}
	p.ReuseStreams, p.KeepStreams = bf.reuse, bf.keep || bf.reuse
	p.Durability, p.ConsumerOffsetDurability = bf.durability, bf.offsetDurability
	if !bf.noOutput {
		p.OutputDir = bf.outputDir
	}
	p.NoCharts, p.Identifier, p.Remark = bf.noCharts, bf.identifier, bf.remark
	p.Command = "iggo " + strings.Join(redactArgs(env.args, env.root.Flags(), cmd.Flags()), " ")

	if bf.transport != "" {
		env.Global.Transport = bf.transport
	}
	cfg, err := env.ClientConfig(false)
	if err != nil {
		return p, err
	}
	p.Server.Address, p.Server.TLS, p.Server.Transport = cfg.Addresses[0], cfg.TLS, cfg.Transport
	if bf.serverAddress != "" {
		p.Server.Address = bf.serverAddress
	}
	switch {
	case bf.token != "":
		p.Server.Token, p.Server.Username, p.Server.Password = bf.token, "", ""
	case bf.username != "":
		p.Server.Username, p.Server.Password = bf.username, bf.password
	default:
		// The CLI's own credentials (flags, login session, context,
		// IGGY_USERNAME); without any the defaults (iggy/iggy) stay.
		cr, err := env.credentials()
		var ue *UsageError
		switch {
		case errors.As(err, &ue) && ue.Msg == "no credentials":
		case err != nil:
			return p, err
		case cr.token != "":
			p.Server.Token, p.Server.Username, p.Server.Password = cr.token, "", ""
		default:
			p.Server.Username, p.Server.Password = cr.user, cr.pass
		}
	}
	if err := p.Validate(); err != nil {
		return p, usage(fmt.Errorf("%s: %w", kind, err))
	}
	return p, nil
}

// secretFlags are the flags whose values a report must not record.
var secretFlags = map[string]bool{"password": true, "token": true}

// redactArgs returns args with the values of password and token flags
// replaced by "******". Flags before the first positional argument are
// the global ones (root); later ones belong to the command (cmd), where
// -p and -t mean producers and sampling time.
func redactArgs(args []string, root, cmd *pflag.FlagSet) []string {
	out := append([]string(nil), args...)
	fs := root
	for i := 0; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			fs = cmd
			continue
		}
		var f *pflag.Flag
		inline := false
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, inline = strings.Cut(name, "=")
			f = fs.Lookup(name)
		} else {
			f = fs.ShorthandLookup(a[1:2])
			inline = len(a) > 2
		}
		if f == nil || f.NoOptDefVal != "" {
			continue // unknown or boolean: no separate value
		}
		switch {
		case secretFlags[f.Name] && inline && strings.HasPrefix(a, "--"):
			out[i] = a[:strings.Index(a, "=")+1] + "******"
		case secretFlags[f.Name] && inline:
			out[i] = a[:2] + "******"
		case inline:
		case i+1 < len(out):
			if secretFlags[f.Name] {
				out[i+1] = "******"
			}
			i++
		}
	}
	return out
}
