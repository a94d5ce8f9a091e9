// Package fdbudget splits the process's descriptor limit (RLIMIT_NOFILE)
// between client sockets, the replica plane, the node's own files and
// partitions, and derives from it the node-wide partition cap: the most
// partitions whose files the node can hold open without running out of
// descriptors for anything else.
//
// The budget, for a soft limit L:
//
//	connections  message_bus.connections_max, or L/2 when it is unset or
//	             0 (no cap: the sockets still need descriptors)
//	plane        (cluster mode) replica_handshakes_max + peers ×
//	             replica_handshakes_per_address + 2 × peers (links and
//	             handshakes past their hello)
//	base         BaseReserve: the metadata group, listeners, io_uring
//	             rings, logs, gossip, the standard streams
//	partitions   the rest, PerPartition descriptors each
//
// The cap is min(metadata.partitions_max when set, partitions / 5), at
// least 1. A partition holds PerPartition descriptors while it has one
// segment (superblock, view state, journal, the segment's .log and
// .index); each further sealed segment holds two more, which the cap does
// not count (sealed segments come from data, bounded by retention and
// disk, not from a request).
package fdbudget

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// PerPartition is the descriptors one open partition holds with a single
// segment.
const PerPartition = 5

// BaseReserve is the descriptors kept for the node's own files and
// sockets besides clients, the plane and partitions.
const BaseReserve = 64

// Inputs describe the node.
type Inputs struct {
	// Limit is the soft RLIMIT_NOFILE.
	Limit uint64
	// ConnectionsMax is message_bus.connections_max (nil: unset; 0: no
	// cap).
	ConnectionsMax *int
	// Peers is the number of other cluster members (0 for a single node);
	// HandshakesMax and HandshakesPerAddress are the replica plane's
	// admission limits.
	Peers                               int
	HandshakesMax, HandshakesPerAddress int
	// PartitionsMax is metadata.partitions_max (0: none).
	PartitionsMax uint64
}

// Budget is the split.
type Budget struct {
	Limit, Connections, Plane, Base, Partitions uint64
	// Cap is the node-wide partition cap.
	Cap uint64
	// FromDescriptors tells whether the descriptor budget (rather than
	// metadata.partitions_max) sets the cap.
	FromDescriptors bool
}

func (b Budget) String() string {
	return fmt.Sprintf("RLIMIT_NOFILE %d: %d for connections, %d for the replica plane, %d for the node, %d for partitions (%d each): partition cap %d",
		b.Limit, b.Connections, b.Plane, b.Base, b.Partitions, PerPartition, b.Cap)
}

// Split computes the budget.
func Split(in Inputs) Budget {
	b := Budget{Limit: in.Limit, Base: BaseReserve}
	switch {
	case in.ConnectionsMax != nil && *in.ConnectionsMax > 0:
		b.Connections = uint64(*in.ConnectionsMax)
	default:
		b.Connections = in.Limit / 2
	}
	if in.Peers > 0 {
		b.Plane = uint64(in.HandshakesMax) + uint64(in.Peers)*uint64(in.HandshakesPerAddress) + 2*uint64(in.Peers)
	}
	if used := b.Connections + b.Plane + b.Base; used < in.Limit {
		b.Partitions = in.Limit - used
	}
	b.Cap = max(b.Partitions/PerPartition, 1)
	b.FromDescriptors = true
	if in.PartitionsMax != 0 && in.PartitionsMax <= b.Cap {
		b.Cap, b.FromDescriptors = in.PartitionsMax, false
	}
	return b
}

// Limit returns the soft RLIMIT_NOFILE of this process.
func Limit() (uint64, error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("fdbudget: getrlimit: %w", err)
	}
	return r.Cur, nil
}
