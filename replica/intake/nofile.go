package intake

import (
	"fmt"
	"math"
)

// Descriptors is the process's RLIMIT_NOFILE as RaiseNoFile found and left
// it.
type Descriptors struct {
	// Before is the soft limit found; Soft and Hard are the limits now.
	Before, Soft, Hard uint64
	// Err is why the soft limit could not be raised (nil when it was, or
	// needed not be).
	Err error
}

// ClientConnections is the node's connection cap from
// message_bus.connections_max (configured; nil when unset) and
// message_bus.descriptors_reserved, given the soft descriptor limit. The
// reserve in force is descriptors_reserved but at most half the limit, so
// that a small limit is split evenly rather than leaving no room for
// clients; it returns that reserve too.
//
//   - unset: half the soft limit (Iggy's default), and never more than the
//     soft limit minus the reserve;
//   - 0: the soft limit minus the reserve;
//   - n: n, refused when it exceeds the soft limit minus the reserve.
//
// The reserve keeps descriptors for the replica plane, partition files,
// io_uring rings, listeners and logs however many clients connect.
func ClientConnections(configured *int, soft uint64, reserved int) (limit, reserve int, err error) {
	if soft > math.MaxInt32 {
		soft = math.MaxInt32
	}
	reserve = min(reserved, int(soft)/2)
	avail := int(soft) - reserve
	if avail < 1 {
		return 0, reserve, fmt.Errorf("intake: the descriptor limit (RLIMIT_NOFILE %d) leaves no descriptor for clients: raise it (ulimit -n, LimitNOFILE=, --ulimit nofile=)", soft)
	}
	switch {
	case configured == nil:
		return max(1, min(int(soft)/2, avail)), reserve, nil
	case *configured == 0:
		return avail, reserve, nil
	case *configured > avail:
		return 0, reserve, fmt.Errorf("intake: message_bus.connections_max %d exceeds the descriptor limit (RLIMIT_NOFILE %d) minus the descriptors reserved (message_bus.descriptors_reserved, at most half the limit: %d) = %d: raise the limit or lower connections_max", *configured, soft, reserve, avail)
	}
	return *configured, reserve, nil
}
