// Package intake bounds what clients can make a node hold before their
// requests reach a shard: connections (per node, per transport and, while
// unauthenticated, per source address), descriptors, the bytes of frames
// being read, and the time a frame may take to arrive. It knows nothing of
// TCP, TLS or WebSocket: every transport hands the serving path a byte
// stream and an address, and the serving path asks intake whether to take
// it and reads its frames through intake's Reader.
//
// # Admission
//
// Admission counts open client connections under one mutex. Admit refuses
// a new one (the caller closes it at once and logs the refusal,
// rate-limited) when
//
//   - the node holds ConnectionsMax connections (message_bus.connections_max);
//   - its transport holds its own cap (TransportMax, when set);
//   - its source address holds UnauthPerAddress connections that have not
//     logged in yet (message_bus.unauthenticated_per_address_max); IPv6
//     addresses count by /64, the block one host usually owns;
//   - the unauthenticated budget cannot take UnauthBase bytes, the buffers
//     a fresh connection holds before its login
//     (message_bus.unauthenticated_bytes_max).
//
// The Ticket it returns is the connection's claim: Authenticated gives back
// the per-address slot and the unauthenticated charge once a login
// succeeds, Release gives back everything when the connection closes.
//
// # Budgets
//
// A Budget is a node-wide byte count with a limit, taken and given back
// with atomic operations. Two exist: the unauthenticated budget (the fixed
// per-connection charge above plus every byte of frames read on
// connections that have not logged in) and the in-flight budget
// (message_bus.inflight_bytes_max: every byte of every frame from its
// arrival until the request has been answered).
//
// # Reading frames
//
// Reader reads one frame at a time through a buffered reader and wire's
// ReadBody, which grows the frame's buffer only as bytes arrive (at most
// twice what arrived plus 4 KiB) and charges each growth to the budgets
// before it allocates. Three deadlines apply:
//
//   - idle: the wait for the first byte of a frame, given per call (the
//     serving path passes message_bus.unauthenticated_idle_timeout before a
//     login, the consumer-group heartbeat deadline for group members, none
//     otherwise);
//   - header: from that first byte until the 256-byte header is complete
//     (message_bus.frame_header_timeout);
//   - body: from the complete header until the last byte of the frame
//     (message_bus.frame_body_timeout).
//
// Before a login a frame may not declare more than UnauthFrameMax bytes
// (message_bus.unauthenticated_frame_max; only PING and the login are
// allowed then, and both are small). What Next returns on a broken limit:
//
//	*TimeoutError                a deadline passed; close the connection
//	*LimitError, !Answerable     a limit of an unauthenticated connection;
//	                             close the connection
//	*LimitError, Answerable      the in-flight budget could not take an
//	                             authenticated connection's frame: after
//	                             Discard (which reads the rest of it and
//	                             throws it away, holding nothing) the stream
//	                             is still framed and the request gets a
//	                             status reply (TransientNotAccepted, which
//	                             clients replay)
//	*wire.FrameSizeError         size outside [256, max_message_size]; close
//
// # Descriptors
//
// RaiseNoFile lifts the soft RLIMIT_NOFILE to the hard limit at boot, as
// Iggy does; ClientConnections turns message_bus.connections_max and
// message_bus.descriptors_reserved into the node's connection cap, keeping
// the reserve (at most half the limit) for the replica plane, storage
// files and the node's own descriptors; package fdbudget divides what the
// cap leaves between the plane, the node and the storage files.
// AcceptBackoff paces an accept loop that failed (EMFILE,
// ENFILE, ENOBUFS, ENOMEM ...) so it sleeps, doubling up to a ceiling,
// instead of spinning.
package intake
