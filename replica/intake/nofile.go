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
// message_bus.descriptors_reserved, given the soft descriptor limit:
//
//   - unset: half the soft limit (Iggy's default), and never more than the
//     soft limit minus the reserve;
//   - 0: the soft limit minus the reserve;
//   - n: n, refused when it exceeds the soft limit minus the reserve.
//
// The reserve keeps descriptors for the replica plane, partition files,
// io_uring rings, listeners and logs however many clients connect.
func ClientConnections(configured *int, soft uint64, reserved int) (int, error) {
	if soft > math.MaxInt32 {
		soft = math.MaxInt32
	}
	avail := int(soft) - reserved
	if avail < 1 {
		return 0, fmt.Errorf("intake: the descriptor limit (RLIMIT_NOFILE %d) leaves no descriptor for clients after message_bus.descriptors_reserved (%d): raise the limit (ulimit -n, LimitNOFILE=, --ulimit nofile=) or lower the reserve", soft, reserved)
	}
	switch {
	case configured == nil:
		return max(1, min(int(soft)/2, avail)), nil
	case *configured == 0:
		return avail, nil
	case *configured > avail:
		return 0, fmt.Errorf("intake: message_bus.connections_max %d exceeds the descriptor limit (RLIMIT_NOFILE %d) minus message_bus.descriptors_reserved (%d) = %d: raise the limit or lower connections_max", *configured, soft, reserved, avail)
	}
	return *configured, nil
}
