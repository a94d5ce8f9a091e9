// Package peers measures iggo beside NATS JetStream in one run, a scaling
// table of one iggo node, and the disk's sequential write bandwidth, and
// writes the results as markdown tables, JSON and a PNG chart. It is the
// library behind `make bench-peers`, `make bench-scaling` and the
// iggo-peers command (cmd/iggo-peers); nothing in it runs inside a server.
//
// # Tools
//
// nats-server and the nats CLI are installed with `go install pkg@version`
// outside the module (GOBIN=ToolsDir, pinned versions NATSServerVersion and
// NATSCLIVersion); an installed binary whose --version matches is reused.
//
// # Comparison (Compare)
//
// One row per setup × durability × producer count, iggo and JetStream
// measured back to back:
//
//	setup    iggo                               JetStream
//	single   iggo-server, one node              one nats-server, stream R1
//	3-node   `iggo cluster up --nodes 3`        three nats-servers with routes, R3
//	durability replicated                       file store, default sync_interval
//	durability persisted                        file store, sync_interval: always
//
// Both sides send 1,000-byte messages; iggo with `iggo bench pp` in
// batches of 1,000 (one request and one reply per batch, one batch in
// flight per producer, a stream per producer), JetStream with
// `nats bench js pub <mode> --batch N` for each configured mode (the
// default, fast batch publishing of 1,000 messages, also waits for one
// acknowledgement per batch of 1,000 with one batch in flight per client;
// all clients publish to one stream). The message count is the same:
// producers × batches × 1,000.
//
// Throughput is computed the same way for both: all messages the
// producers sent divided by the longest producer's duration. Latency is
// per batch: iggo's p50/p99 over every producer's batches merged; the
// nats CLI reports them per client, and the row shows the worst client's.
// The 1-minute load average (/proc/loadavg) is recorded before each
// measurement.
//
// # Scaling (Scaling)
//
// For each partition count a fresh single node: `iggo bench bpcg` (one
// stream, one topic with that many partitions, producers and as many
// consumers in one consumer group polling while the producers send) for
// each producer count, sampling the server's VmRSS from /proc every 100 ms;
// then `iggo bench bp` fills the node with BootData bytes, the node is
// stopped with SIGTERM and started again, and the boot time is the time
// from exec to the first successful login and the topic reporting every
// message it was sent. A partition count the node refuses (over its
// metadata.partitions_max, 10,000 by default) is a row saying so, not a
// failure.
//
// # Soak (Soak)
//
// One fresh node under `iggo bench bpcg` rate-limited to Rate payload bytes
// a second for Duration, its VmRSS sampled every second and reported per
// Window (smallest and largest sample), with the last window's peak
// against the second's (the first holds the ramp-up).
//
// # Disk (DiskBandwidth)
//
// Writes Bytes in Chunk-sized writes (16 MiB), each followed by fdatasync,
// to a file in the work directory and reports MB/s (10^6 bytes per second)
// and, from Compare, the persisted single-node payload rate as a share of
// it.
//
// # Clean-up
//
// Every process is started in its own process group, its pid recorded in
// <work>/pids, and stopped by its pid (SIGTERM, then SIGKILL) when the
// run ends, fails or is interrupted (SIGINT/SIGTERM cancel the context);
// the work directory is removed unless KeepWork. The Makefile targets add
// a shell trap that kills what <work>/pids still lists (only processes
// whose command line or environment name the work directory) and removes
// it, for a run that was killed outright.
package peers
