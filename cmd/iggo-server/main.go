// Command iggo-server runs an iggo node: it reads its command line (Iggy's
// flags), loads the configuration (embedded defaults, then --config or
// $IGGY_CONFIG_PATH, then IGGY_* variables), takes the data directory's
// lock, sets up logging and hands everything to package replica. It holds
// no logic beyond that wiring.
package main

import (
	"fmt"
	"io"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/version"
	"github.com/iggo/iggo/replica"
	"github.com/iggo/iggo/replica/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const about = `iggo-server: Apache Iggy's message-streaming server rebuilt in Go.

It speaks Iggy's binary protocol 0.11 over TCP, stores streams, topics and
partitions on per-core shards, and replicates every partition and the
metadata with Viewstamped Replication. One binary runs a single node or a
cluster node; the configuration decides which.

Usage:
  iggo-server [flags]

Flags:
`

const more = `
Configuration:
  The embedded defaults (replica/config/default.toml documents every key),
  then the file given by --config or IGGY_CONFIG_PATH (partial files are
  fine), then IGGY_* environment variables named after the key:
  IGGY_TCP_ADDRESS sets [tcp] address, IGGY_CLUSTER_AUTH_SHARED_SECRET sets
  [cluster.auth] shared_secret. A bad value refuses to start and names the key.

Environment variables:
  IGGY_CONFIG_PATH                  configuration file (when --config is not given)
  IGGY_PATH                         data directory (default local_data)
  IGGY_TCP_ADDRESS                  client TCP listener (default 127.0.0.1:8090; port 0 picks one)
  IGGY_LOGGING_LEVEL                log level: trace, debug, info, warn, error, off
  IGGY_ROOT_USERNAME                root user of a first start (default iggy)
  IGGY_ROOT_PASSWORD                root password of a first start (default: random, logged once)
  IGGY_CLUSTER_AUTH_SHARED_SECRET   the cluster's pre-shared key (32+ bytes)
  IGGY_NODE_ADVERTISED_ADDRESS      host clients are told to dial
  IGGY_SHARDING_CPU_ALLOCATION      CPUs for shards (all, a count, a range; see default.toml)
  GOGC                              the Go collector's target (wins over runtime.gc_percent)
  IGGO_PPROF                        host:port to serve Go's profiler on (development only)

Data directory:
  One server at a time: the server holds <path>/iggo.lock (flock) while it
  runs, and a second one on the same directory exits with "data directory
  <path> is in use by pid N". Logs go to stdout and to <path>/logs/.

Examples:
  iggo-server --with-default-root-credentials          # root logs in as iggy/iggy
  iggo-server --config my.toml                         # a configuration file
  IGGY_TCP_ADDRESS=0.0.0.0:8090 iggo-server            # listen on every interface
  iggo-server --config cluster.toml --replica-id 1     # node 1 of a cluster
  iggo-server --fresh                                  # start over on an empty data directory
`

func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("iggo-server", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	cfgPath := fs.String("config", "", "configuration file (default: $IGGY_CONFIG_PATH,\nelse the embedded defaults)")
	replicaID := fs.Int("replica-id", 0, "this node's replica_id in cluster.nodes\n(required with cluster.enabled = true;\n0 for a single node)")
	fresh := fs.BoolP("fresh", "f", false, "empty the data directory before starting\n"+
		"(WARNING: DELETES ALL DATA). Only a directory\n"+
		"that is empty or laid out like an iggo data\n"+
		"directory is emptied; its lock file and logs\n"+
		"stay. In a cluster this wipes this node only,\n"+
		"which refills from its peers")
	defaultRoot := fs.Bool("with-default-root-credentials", false, "on the first start create the root user as\n"+
		"iggy/iggy (IGGY_ROOT_USERNAME and\nIGGY_ROOT_PASSWORD win; INSECURE, development only)")
	showVersion := fs.BoolP("version", "V", false, "print the version, commit and build date")
	help := fs.BoolP("help", "h", false, "print this help")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "iggo-server: %v\nRun 'iggo-server --help' for usage.\n", err)
		return 2
	}
	switch {
	case *help:
		fmt.Fprint(stdout, about+fs.FlagUsages()+more)
		return 0
	case *showVersion:
		fmt.Fprintln(stdout, version.Line("iggo-server"))
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "iggo-server: unexpected arguments %v\nRun 'iggo-server --help' for usage.\n", fs.Args())
		return 2
	}
	refuse := func(err error) int {
		fmt.Fprintf(stderr, "iggo-server: refusing to start: %v\n", err)
		return 1
	}
	cfg, warnings, err := config.Load(*cfgPath)
	if err != nil {
		return refuse(err)
	}
	// --fresh on a directory that is not an iggo data directory is refused
	// before anything is created in it (the node checks again under the
	// lock before it wipes).
	if *fresh {
		if err := replica.CheckFresh(cfg); err != nil {
			return refuse(err)
		}
	}
	// Then the lock: the log file and everything else live under the data
	// directory, and a second server must not touch them.
	lock, err := replica.LockDataDir(cfg, *replicaID)
	if err != nil {
		return refuse(err)
	}
	root, closeLog, err := replica.NewLogger(cfg, stdout)
	if err != nil {
		_ = lock.Release()
		return refuse(err)
	}
	defer closeLog()
	log := root.Named("server")
	log.Info("iggo-server", zap.String("version", version.String()), zap.Int("pid", os.Getpid()),
		zap.String("path", cfg.Path), zap.String("lock", lock.File()))
	// IGGO_PPROF=host:port serves Go's profiler (development only; never
	// enabled by default).
	if addr := os.Getenv("IGGO_PPROF"); addr != "" {
		go func() { log.Warn("pprof listener stopped", zap.Error(http.ListenAndServe(addr, nil))) }()
		log.Warn("pprof enabled", zap.String("address", addr))
	}
	for _, w := range warnings {
		log.Warn("configuration", zap.String("warning", w))
	}
	// The collector target is process-wide, so it is set here rather than
	// in replica.New (tests run several nodes in one process).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cfg.Runtime.GCPercent)
	}
	n, err := replica.New(replica.Options{Config: cfg, ReplicaID: *replicaID, Fresh: *fresh,
		DefaultRootCredentials: *defaultRoot, Logger: root, DataDir: lock})
	if err != nil {
		_ = lock.Release()
		log.Error("refusing to start", zap.Error(err))
		return 1
	}
	if err := n.Start(); err != nil {
		log.Error("start failed", zap.Error(err))
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.Info("shutting down", zap.Stringer("signal", s))
	if err := n.Close(); err != nil {
		log.Error("shutdown incomplete", zap.Error(err))
		return 1
	}
	return 0
}
