// Command iggo-server runs an iggo node: it loads the configuration
// (embedded defaults, then --config or $IGGY_CONFIG_PATH, then IGGY_*
// variables), sets up logging and hands everything to package replica.
// It holds no logic beyond that wiring.
package main

import (
	"flag"
	"fmt"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica"
	"github.com/iggo/iggo/replica/config"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("iggo-server", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "configuration file (default: $IGGY_CONFIG_PATH, else the embedded defaults)")
	replicaID := fs.Int("replica-id", 0, "this node's replica id in the cluster roster (0 for a single node)")
	fresh := fs.Bool("fresh", false, "wipe the data directory before starting")
	fs.BoolVar(fresh, "f", false, "shorthand for --fresh")
	defaultRoot := fs.Bool("with-default-root-credentials", false,
		"on first start create the root user as iggy/iggy (unless IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD are set)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "iggo-server: unexpected arguments %v\n", fs.Args())
		return 2
	}
	cfg, warnings, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iggo-server: refusing to start: %v\n", err)
		return 1
	}
	root, closeLog, err := replica.NewLogger(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "iggo-server: refusing to start: %v\n", err)
		return 1
	}
	defer closeLog()
	log := root.Named("server")
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
		DefaultRootCredentials: *defaultRoot, Logger: root})
	if err != nil {
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
