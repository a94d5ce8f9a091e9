// Package chaos is iggo's Jepsen-style black-box test runner: real server
// processes, real sockets, a recorded client workload, injected faults,
// and a checker that decides from the history alone whether the cluster
// kept its promises. It lives outside tests/ because the CLI (`iggo
// chaos`) runs it; the runs against a real iggo-server that CI makes are
// in tests/chaos.
//
// # A run
//
//  1. Start the cluster: Nodes local processes (iggo-server with a
//     generated configuration, or the fake node), each in its own data
//     directory and, when partitions are wanted, its own network namespace.
//  2. Set up the workload's stream, topic, consumer group and metadata
//     stream.
//  3. For Duration, run the workload (package workload) and the seeded
//     fault schedule (package schedule, applied by the nemesis through
//     package fault) together. Every client operation and every fault is
//     recorded (package history) as JSON lines in WorkDir/history.jsonl. A
//     node that exits without being killed is recorded as a crash and
//     restarted.
//  4. Heal everything, then require LivenessOps successful operations
//     within LivenessDeadline.
//  5. Read every partition back in full from every node, waiting up to
//     ConvergeTimeout for the nodes to agree.
//  6. Stop the cluster and check the history file (package check).
//  7. Print the summary; keep WorkDir (history, node logs, data,
//     porcupine views) when the run failed or Keep is set.
//
// # Entry points
//
//   - Run(ctx, Options) (Summary, error): one run. The error means the run
//     could not be carried out; violations come back as Summary.Valid false.
//   - Campaign(ctx, Options, runs): runs with seeds Seed, Seed+1, ...;
//     Sum(summaries) adds up a campaign's figures (schedules, faults,
//     sends by outcome, retried sends, duplicates), which `chaos run
//     --runs N` prints (make chaos-campaign: 50 schedules on 3 nodes).
//   - CheckFile(path, out, visualizeDir): re-check a saved history.
//   - Command(): the cobra command `chaos` with `run` and `check`; cmd/iggo
//     registers it with root.AddCommand(chaos.Command()), and
//     internal/chaos/cmd/iggo-chaos runs it alone (`make chaos`).
//
// The fake node (package fakenode) runs by re-executing the current binary
// with FakeNodeEnv=1 in its environment: this package's init hands such a
// process to fakenode.Main, so every binary that links the package (the
// CLI, iggo-chaos, test binaries) can host fake nodes.
//
// # Exactly-once
//
// By default producers resend a failed or unknown batch as it is (the same
// message ids, the client's producer identity carried across redials), and
// the checker allows no logical message stored twice. AtLeastOnce (the
// --at-least-once flag) sends as Iggy's SDKs do and records the history
// under the lenient rule (history Checks.AtLeastOnce).
//
// # Networks
//
// With network namespaces (root, ip and nft; Network "netns", or "auto"
// when the schedule has network faults) each node gets its own address on
// a private bridge and partitions are drop rules on that bridge (client,
// replica and gossip traffic alike). Without network faults the nodes run
// on loopback with free ports. A single node can also run behind the
// loopback proxy, which stalls or cuts the client links; cluster runs with
// network faults need namespaces, because iggo-server takes its peers'
// addresses from a roster that must be identical on every node and so
// cannot be pointed at per-pair proxies.
//
// # Clusters
//
// With Nodes > 1 every node gets a generated configuration with
// cluster.enabled, the cluster name "iggo-chaos", a pre-shared replica key
// (cluster.auth), heartbeat_timeout at its 2 s floor, and the same roster:
// replica id i is node i with its client, replica and gossip ports. The
// nodes start together (a node serves logins only once a quorum runs).
// Clients follow the metadata leader; sends to a backup are forwarded by
// the server. Wipes restart the node with --fresh (state transfer refills
// it); corruption damages one node's segment log, index or journal, which
// the node must repair from its peers. A node whose data a wipe or
// corruption destroyed counts as faulty until it holds again everything
// acknowledged: before the next destructive fault on another node the
// nemesis waits (up to a minute, else a fault error) until the earlier one
// serves every partition up to the acknowledged offsets, so no run destroys
// two replicas' copies at once — more than the cluster tolerates.
//
// # Reads
//
// StrictReads (default for one node) checks consumer offsets as
// linearizable registers and compares stored-offset reads across nodes.
// Clusters default to comparing reads per node only, because followers
// serve reads locally and may lag.
package chaos
