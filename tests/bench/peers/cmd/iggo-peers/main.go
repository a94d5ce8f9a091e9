// Command iggo-peers measures iggo beside NATS JetStream (compare), a
// scaling table of one node (scaling), one node's memory under a steady
// load (soak) and the disk's sequential write bandwidth (disk); see
// package tests/bench/peers. `make bench-peers`, `make bench-scaling` and
// `make bench-soak` run it.
//
//	iggo-peers compare  -bin bin -out peers_results [-batches 200 ...]
//	iggo-peers scaling  -bin bin -out peers_results [-boot-data 10GB ...]
//	iggo-peers soak     -bin bin -out peers_results [-duration 10m -rate 50MB ...]
//	iggo-peers disk     [-dir /tmp] [-bytes 1GiB] [-chunk 16MiB]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/iggo/iggo/tests/bench/peers"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "compare":
		err = compare(ctx, os.Args[2:])
	case "scaling":
		err = scaling(ctx, os.Args[2:])
	case "soak":
		err = soak(ctx, os.Args[2:])
	case "disk":
		err = disk(ctx, os.Args[2:])
	case "install":
		err = installOnly(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iggo-peers:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: iggo-peers compare|scaling|soak|disk|install [flags]  (-h after the subcommand lists its flags)")
	os.Exit(2)
}

func sizeFlag(fs *flag.FlagSet, name, def, usage string) *uint64 {
	v, err := peers.ParseBytes(def)
	if err != nil {
		panic(err)
	}
	p := &v
	fs.Func(name, usage+" (default "+def+")", func(s string) error {
		n, err := peers.ParseBytes(s)
		*p = n
		return err
	})
	return p
}

func intsFlag(fs *flag.FlagSet, name, def, usage string) *[]int {
	v, err := peers.ParseInts(def)
	if err != nil {
		panic(err)
	}
	p := &v
	fs.Func(name, usage+" (default "+def+")", func(s string) error {
		n, err := peers.ParseInts(s)
		*p = n
		return err
	})
	return p
}

type toolFlags struct{ dir, serverVersion, cliVersion *string }

func addToolFlags(fs *flag.FlagSet) toolFlags {
	return toolFlags{
		dir:           fs.String("tools", peers.DefaultToolsDir(), "where nats-server and nats are installed (one directory per version)"),
		serverVersion: fs.String("nats-server-version", peers.NATSServerVersion, "nats-server version to go install"),
		cliVersion:    fs.String("nats-version", peers.NATSCLIVersion, "nats CLI (natscli) version to go install"),
	}
}

func (t toolFlags) install(ctx context.Context) (peers.Tools, error) {
	return peers.InstallTools(ctx, *t.dir, *t.serverVersion, *t.cliVersion, os.Stdout)
}

func installOnly(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("install", flag.ExitOnError)
	tf := addToolFlags(fs)
	_ = fs.Parse(args)
	_, err := tf.install(ctx)
	return err
}

func compare(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory with iggo and iggo-server")
	out := fs.String("out", "peers_results", "directory for peers.md, peers.json and peers.png")
	work := fs.String("work", filepath.Join(os.TempDir(), "iggo-peers-compare"), "work directory (servers' data and logs; removed afterwards)")
	keep := fs.Bool("keep-work", false, "keep the work directory")
	batches := fs.Uint64("batches", 500, "batches each iggo producer sends on replicated rows; JetStream publishes the same total")
	pbatches := fs.Uint64("persisted-batches", 50, "batches per producer on persisted rows (0: -batches); JetStream with sync always is slow")
	batch := fs.Int("batch-size", 1000, "iggo messages per batch")
	size := fs.Int("message-size", 1000, "message payload bytes (both sides)")
	producers := intsFlag(fs, "producers", "1,4", "producer counts")
	setups := fs.String("setups", "single,cluster", "setups: single, cluster")
	durs := fs.String("durabilities", "replicated,persisted", "iggo durabilities (persisted runs JetStream with sync_interval: always)")
	modes := fs.String("js-modes", "fast:1000,async:500", "JetStream publish modes name:batch (sync, async, atomic, fast); ratios are given for each")
	node := fs.Int("cluster-node", 0, "iggo node the producers connect to in the 3-node setup")
	port := fs.Int("base-port", 27290, "first port (iggo cluster base..base+2 and +1000/+2000, single node base+10, HTTP base+3000.., JetStream base+4000..)")
	diskBytes := sizeFlag(fs, "disk-bytes", "1GiB", "bytes the disk measurement writes first (0: skip)")
	diskChunk := sizeFlag(fs, "disk-chunk", "16MiB", "bytes per write+fdatasync of the disk measurement")
	tf := addToolFlags(fs)
	_ = fs.Parse(args)
	jsModes, err := peers.ParseJSModes(*modes)
	if err != nil {
		return err
	}
	tools, err := tf.install(ctx)
	if err != nil {
		return err
	}
	binDir, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	_, err = peers.Compare(ctx, peers.CompareOptions{
		Iggo: peers.Iggo{Dir: binDir}, Tools: tools, Work: *work, Out: *out, KeepWork: *keep,
		Batches: *batches, PersistedBatches: *pbatches, BatchSize: *batch, MessageSize: *size, Producers: *producers,
		Setups: peers.SplitList(*setups), Durabilities: peers.SplitList(*durs), JSModes: jsModes,
		ClusterNode: *node, BasePort: *port, DiskBytes: *diskBytes, DiskChunk: *diskChunk,
		NATSServerVersion: *tf.serverVersion, NATSCLIVersion: *tf.cliVersion, Log: os.Stdout,
	})
	return err
}

func scaling(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scaling", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory with iggo and iggo-server")
	out := fs.String("out", "peers_results", "directory for scaling.md and scaling.json")
	work := fs.String("work", filepath.Join(os.TempDir(), "iggo-peers-scaling"), "work directory (the node's data and logs; removed afterwards)")
	keep := fs.Bool("keep-work", false, "keep the work directory")
	producers := intsFlag(fs, "producers", "1,4,16", "producer counts (as many consumers, one group)")
	partitions := intsFlag(fs, "partitions", "1,100,10000", "partition counts of the topic")
	cell := sizeFlag(fs, "cell-data", "1GB", "bytes the producers of one cell send in all")
	boot := sizeFlag(fs, "boot-data", "10GB", "bytes the node holds when its boot is timed (0: no boot rows)")
	batch := fs.Int("batch-size", 1000, "messages per batch")
	size := fs.Int("message-size", 1000, "message payload bytes")
	dur := fs.String("durability", "replicated", "topic durability: replicated or persisted")
	port := fs.Int("base-port", 27290, "the node serves on base+50")
	_ = fs.Parse(args)
	binDir, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	_, err = peers.Scaling(ctx, peers.ScalingOptions{
		Iggo: peers.Iggo{Dir: binDir}, Work: *work, Out: *out, KeepWork: *keep, Producers: *producers, Partitions: *partitions,
		CellData: *cell, BootData: *boot, MessageSize: *size, BatchSize: *batch, Durability: *dur,
		BasePort: *port, Log: os.Stdout,
	})
	return err
}

func soak(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("soak", flag.ExitOnError)
	bin := fs.String("bin", "bin", "directory with iggo and iggo-server")
	out := fs.String("out", "peers_results", "directory for soak.md and soak.json")
	work := fs.String("work", filepath.Join(os.TempDir(), "iggo-peers-soak"), "work directory (the node's data and logs; removed afterwards)")
	keep := fs.Bool("keep-work", false, "keep the work directory")
	duration := fs.Duration("duration", 10*time.Minute, "how long the load runs")
	rate := sizeFlag(fs, "rate", "50MB", "payload bytes per second, all producers together")
	producers := fs.Int("producers", 4, "producers (as many consumers, one group)")
	partitions := fs.Int("partitions", 4, "partitions of the topic")
	window := fs.Duration("window", time.Minute, "span of each row of the RSS table")
	batch := fs.Int("batch-size", 1000, "messages per batch")
	size := fs.Int("message-size", 1000, "message payload bytes")
	dur := fs.String("durability", "replicated", "topic durability: replicated or persisted")
	port := fs.Int("base-port", 27290, "the node serves on base+60")
	_ = fs.Parse(args)
	binDir, err := filepath.Abs(*bin)
	if err != nil {
		return err
	}
	_, err = peers.Soak(ctx, peers.SoakOptions{
		Iggo: peers.Iggo{Dir: binDir}, Work: *work, Out: *out, KeepWork: *keep, Duration: *duration, Rate: *rate,
		Producers: *producers, Partitions: *partitions, MessageSize: *size, BatchSize: *batch, Durability: *dur,
		Window: *window, BasePort: *port, Log: os.Stdout,
	})
	return err
}

func disk(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("disk", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory on the disk to measure")
	total := sizeFlag(fs, "bytes", "1GiB", "bytes to write")
	chunk := sizeFlag(fs, "chunk", "16MiB", "bytes per write, each followed by fdatasync")
	_ = fs.Parse(args)
	d, err := peers.DiskBandwidth(ctx, *dir, *total, *chunk)
	if err != nil {
		return err
	}
	fmt.Printf("%d MiB in %d MiB writes, each followed by fdatasync, in %s: %.2f s, %.1f MB/s; with each synced write's pages released: %.1f MB/s (load %.2f)\n",
		d.Bytes>>20, d.Chunk>>20, d.Dir, d.Seconds, d.MBps, d.ReleasedMBps, d.Load)
	return nil
}
