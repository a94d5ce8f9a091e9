// Package fdbudget splits the process's descriptor limit (RLIMIT_NOFILE)
// between client sockets, the replica plane, the node's own descriptors
// and the storage files of partitions and the metadata group, and checks
// partition.open_files_max against it.
//
// The budget, for a soft limit L:
//
//	connections  message_bus.connections_max, or L/2 when it is unset or
//	             0 (no cap: the sockets still need descriptors)
//	plane        (cluster mode) replica_handshakes_max + peers ×
//	             replica_handshakes_per_address + 2 × peers (links and
//	             handshakes past their hello)
//	base         BaseReserve: listeners, io_uring rings, logs, gossip,
//	             the data-directory lock, the standard streams
//	files        the rest, or partition.open_files_max when set (it must
//	             fit in the rest)
//
// The files are split evenly between the shards, each of which holds its
// storage files through a vfs.Bounded of that many descriptors: files not
// in use are closed underneath and reopened on use, so the number of
// partitions does not depend on descriptors (a partition has five files
// with one segment, two more per sealed segment). Partitions are capped by
// metadata.partitions_max alone.
package fdbudget

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// BaseReserve is the descriptors kept for the node's own files and
// sockets besides clients, the plane and storage files.
const BaseReserve = 64

// MinFilesPerShard is the fewest storage descriptors a shard gets: one
// partition's journal, segment log and index, and room to reopen a fourth
// file. A limit that leaves less (the connections were given nearly all
// of it) still gets this many, and the budget says it is Short.
const MinFilesPerShard = 4

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
	// OpenFilesMax is partition.open_files_max (0: what the limit leaves).
	OpenFilesMax uint64
	// Shards is the number of shards the files are split between (at
	// least 1).
	Shards int
}

// Budget is the split.
type Budget struct {
	Limit, Connections, Plane, Base uint64
	// Left is what the limit leaves for storage files, Files the
	// descriptors they get (Left, or open_files_max), PerShard each
	// shard's share.
	Left, Files, PerShard uint64
	// Short: Left held fewer than MinFilesPerShard a shard, which each
	// gets anyway (the node logs a warning; descriptors may run out).
	Short bool
}

func (b Budget) String() string {
	return fmt.Sprintf("RLIMIT_NOFILE %d: %d for connections, %d for the replica plane, %d for the node, %d for storage files (%d per shard)",
		b.Limit, b.Connections, b.Plane, b.Base, b.Files, b.PerShard)
}

// Split computes the budget; it fails, naming the key, when
// partition.open_files_max does not fit in what the limit leaves.
func Split(in Inputs) (Budget, error) {
	shards := uint64(max(in.Shards, 1))
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
		b.Left = in.Limit - used
	}
	b.Files = b.Left
	if in.OpenFilesMax != 0 {
		if in.OpenFilesMax > b.Left {
			return b, fmt.Errorf("partition.open_files_max %d does not fit: %s leaves %d for storage files (lower the key or message_bus.connections_max, or raise the limit)",
				in.OpenFilesMax, b.usedString(), b.Left)
		}
		b.Files = in.OpenFilesMax
	}
	b.PerShard = b.Files / shards
	if b.PerShard < MinFilesPerShard {
		if in.OpenFilesMax != 0 {
			return b, fmt.Errorf("partition.open_files_max %d gives %d shards fewer than %d descriptors each", in.OpenFilesMax, shards, MinFilesPerShard)
		}
		b.PerShard, b.Short = MinFilesPerShard, true
	}
	return b, nil
}

func (b Budget) usedString() string {
	return fmt.Sprintf("RLIMIT_NOFILE %d less %d for connections, %d for the replica plane and %d for the node",
		b.Limit, b.Connections, b.Plane, b.Base)
}

// Limit returns the soft RLIMIT_NOFILE of this process.
func Limit() (uint64, error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &r); err != nil {
		return 0, fmt.Errorf("fdbudget: getrlimit: %w", err)
	}
	return r.Cur, nil
}
