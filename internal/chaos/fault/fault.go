// Package fault injects the faults of a chaos run into the system under
// test and heals them: process crashes (SIGKILL) and restarts, pauses
// (SIGSTOP/SIGCONT), wipes (the data directory deleted, the node restarted
// with --fresh), corruption and truncation of data files while a node is
// down, and network partitions.
//
// Faults act through two small interfaces so that other deployments can
// plug in: Node (one server process) and Network (the links between
// nodes, and between the clients and the nodes). Implementations here:
//
//   - Process: a local child process (exec), optionally started inside a
//     network namespace;
//   - Netns: one network namespace per node plus a hub namespace holding a
//     bridge, veth pairs, and a veth into the runner's namespace for the
//     clients; partitions are nftables drop rules in the receiving node's
//     namespace (one way or both) or a link set down (isolation). It needs
//     root, `ip` and `nft` (NetnsAvailable);
//   - Proxy: the loopback-only fallback, a userspace TCP proxy per
//     directed link that can stall a direction (bytes held until healed,
//     like packets lost and retransmitted) or cut it (connections reset,
//     new ones refused);
//   - DockerNode and DockerNetwork: containers of a compose cluster driven
//     through the docker CLI.
//
// Every resource is released by Close, also after failures, and names
// carry the creating process id so that SweepNetns can remove what a
// crashed runner left behind.
package fault

import (
	"errors"
)

// Node is one server of the system under test.
type Node interface {
	// Start starts the node; fresh asks it to discard its state on boot
	// (iggo-server --fresh). Starting a running node is an error.
	Start(fresh bool) error
	// Kill stops the node with SIGKILL (or the deployment's equivalent)
	// and waits until it is gone.
	Kill() error
	// Pause freezes the node (SIGSTOP); Resume thaws it.
	Pause() error
	Resume() error
	// Running reports whether the node is started and not killed (a paused
	// node is running).
	Running() bool
	// DataDir is the node's data directory on this machine, "" when it is
	// not reachable from here (wipes and corruption then need another way).
	DataDir() string
}

// Network cuts and heals links. Node indexes are those of the cluster;
// Client (-1) stands for the runner's clients.
type Network interface {
	// Block drops traffic sent by node from to node to (one way).
	Block(from, to int) error
	// Isolate cuts node i off from every other node and from the clients.
	Isolate(i int) error
	// Heal removes every block and isolation.
	Heal() error
	// Close tears the network down.
	Close() error
}

// Client is the index that names the runner's clients in a Network.
const Client = -1

// ErrUnsupported is returned by injectors asked for a fault their
// deployment cannot produce.
var ErrUnsupported = errors.New("fault: not supported by this deployment")
