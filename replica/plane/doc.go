// Package plane is the replica plane: the authenticated TCP links between
// the nodes of an iggo cluster that carry VSR frames (package vsr) for the
// metadata group and every partition group.
//
// # Topology
//
// Each node runs one Transport on behalf of shard 0: it binds tcp_replica
// (or adopts a listener shard 0 bound), and dials every peer with a higher
// replica id; lower ids dial higher ones, so each pair of nodes shares
// exactly one link and there is nothing to tie-break. An accepted link from
// a peer that already has one replaces it (newest wins): a peer that
// restarted may leave a half-open connection behind that only the kernel's
// keep-alives would otherwise find. Dials are retried with exponential
// backoff (ReconnectMin doubling to ReconnectMax = message_bus.
// reconnect_period) jittered to [d/2, d]. Sockets have TCP_NODELAY and
// keep-alives (5 s idle, 2 s interval, 3 probes). Links are owned by the
// transport's goroutines (Go's netpoller), not by shard loops: what a shard
// owns is its consensus groups, and frames reach them through its inbox.
//
// # Handshake
//
// Optionally inside TLS 1.3 (ALPN "iggo-replica"), the dialer D and the
// acceptor A exchange three fixed-size 128-byte messages before any frame:
//
//	D → A  hello      D's id, the id D believes A has, D's nonce, D's key ids
//	A → D  challenge  A's id, A's nonce, the chosen key id, MAC_A
//	D → A  finish     the chosen key id, MAC_D
//
// Message layout (integers little-endian):
//
//	0   [8]  magic "IGGOREPL"
//	8   u8   version, 1
//	9   u8   step: 1 hello, 2 challenge, 3 finish
//	10  u8   flags: bit 0 auth (cluster.auth.enabled), bit 1 TLS; others zero
//	11  u8   sender replica id (claimed)
//	12  u8   receiver replica id (whom the sender believes it talks to)
//	13  u8   roster size (≥ 1)
//	14  [2]  reserved, zero
//	16  [16] cluster id (ClusterID of cluster.name)
//	32  [32] nonce: fresh random in hello and challenge, zero in finish
//	64  [8]  key id: hello, the sender's current key; then the chosen key
//	72  [8]  hello only: the sender's previous key id (or zero); else zero
//	80  [16] data key id: codec.KeyID of encryption.key, zero when
//	         encryption at rest is off (Config.DataKeyID)
//	96  [32] MAC: zero in hello; HMAC-SHA256 in challenge and finish
//
// Keys. Each configured secret (shared_secret, and previous_shared_secret
// during a rotation) becomes a link key K = HKDF-SHA256(secret, salt "iggo
// replica-plane v1", info cluster id), and its key id the first 8 bytes of
// HMAC-SHA256(K, "iggo key id"). A picks the first of its keys (current,
// then previous) whose id D announced, so two nodes connect whenever they
// share either key — in any order of a rolling rotation (A on new with
// previous = old, B still on old alone, or the reverse). With auth off, K is
// derived from a fixed public string: the handshake still checks cluster,
// roster and ids, but proves nothing.
//
// MACs, each over length-prefixed parts (u32 LE length ‖ bytes):
//
//	MAC_A = HMAC(K, "iggo-replica/1 challenge", hello, challenge[0:96], X)
//	MAC_D = HMAC(K, "iggo-replica/1 finish", hello, challenge, finish[0:96], X)
//
// X is the TLS exporter ("EXPORTER-iggo-replica-v1", 32 bytes) of the
// session, or empty without TLS. Each MAC covers both claimed ids, the
// cluster id, the roster size, the flags and both nonces, so it cannot be
// replayed on another connection, reflected (distinct labels), altered in
// flight, or relayed between two TLS sessions by a man in the middle.
//
// What A checks, in order, refusing (closing without an answer) on the first
// failure: a well-formed hello; same cluster id (ReasonWrongCluster); same
// auth and TLS flags; same roster size; same data key id (ReasonDataKey:
// replicas journal each other's stored batches, so encryption at rest must
// be keyed alike on every node); receiver = A; sender in the roster;
// sender < A (only lower ids dial; ReasonWrongDirection); a shared key; the
// connection's source ip = the sender's roster ip (ReasonSourceAddress; the
// dialer binds its roster ip as source); in CA mode, the client certificate
// (verified against ca_file) names the sender's roster ip as an IP SAN
// (ReasonCertIdentity). Only then does A send its challenge; then it
// verifies the finish (same sender, chosen key, MAC_D). D checks the
// challenge the same way, and that its sender is the replica D dialed
// (ReasonWrongPeer), before it sends its finish. The whole exchange,
// connect and TLS included, must finish within handshake_grace
// (ReasonTimeout). Every refusal is counted per reason and logged at warn
// level, at most once per LogInterval per reason with a count of those held
// back, so garbage on the port cannot flood the log; the node keeps serving.
//
// # Admission
//
// Anyone who can reach tcp_replica can open connections; until a
// connection has delivered a hello that passes the checks above (up to and
// including the source address and certificate), it is held by the
// admission gate, decided at accept before a byte is read:
//
//   - it must deliver that hello within HelloGrace
//     (message_bus.replica_hello_grace, TLS handshake included), else it is
//     closed (ReasonTimeout);
//   - at most HandshakesPerAddress connections from one source address wait
//     at once (message_bus.replica_handshakes_per_address); one more is
//     refused at accept (ReasonAddressQuota);
//   - at most HandshakesMax connections from addresses outside the roster
//     wait at once (message_bus.replica_handshakes_max); one more is refused
//     at accept (ReasonBusy);
//   - connections from the roster ips of the replicas that dial this node
//     (lower ids) are admitted ahead of everyone: they do not count against
//     HandshakesMax, and when their address's quota is full the oldest
//     waiting connection from that address is closed (ReasonAddressQuota)
//     instead of refusing the new one, so a peer that redials always gets
//     in. With AnySourceAddress no address is preferred (an ip proves
//     nothing then).
//
// Past its hello a connection leaves the gate and has the rest of
// handshake_grace; only one such handshake per claimed replica runs at a
// time, a newer one closing the older (ReasonSuperseded). So the
// connections a handshake can hold are bounded by HandshakesMax +
// HandshakesPerAddress per dialing peer ip + one per peer, and a flood
// without the key from addresses outside the roster never keeps two keyed
// nodes from linking. Its limit: an attacker that can send from a peer's own
// roster ip (on that machine, or on the path) competes with that peer for
// its quota, and one that also knows the public key id can hold a
// post-hello slot; neither can complete a handshake.
//
// Identity. Iggy 0.9's key proves cluster membership only: any key holder
// can claim any replica id. Here a claimed id must also match the
// connection's source address and the direction rule, and in TLS CA mode
// each node proves its id with its own private key (mutual TLS, roster ip
// as IP SAN): the cluster key alone can then no longer impersonate a
// replica. With a shared key and no CA, a key holder that can also send from
// another node's ip can still impersonate it; that is the limit of a
// pre-shared key.
//
// # Frames
//
// After the handshake a link carries vsr frames in both directions: a
// 256-byte header then size − 256 body bytes (see package vsr, "Replica-plane
// frames"). The reader reads the header, rejects a size field above
// max_message_size (ReasonFrameTooLarge) or a header whose seal does not
// verify before allocating anything, then reads the body into a buffer of
// its own and runs vsr.Decode (seal, body checksum, per-command shape); the
// frame must carry this cluster's id and the link's peer as sender. Any
// failure closes the link (ReasonFrameCorrupt, ReasonFrameCluster,
// ReasonFrameSender): the sender is authenticated, so this is a bug or
// corruption, and a fresh link resynchronises the stream.
//
// # Delivery and the one place frames are dropped
//
// A good frame goes to Config.Deliver(from, group, message) on the link's
// reader goroutine. The node routes it to the shard that owns the group
// (shard.Route) with the shard's non-blocking TrySend into its bounded
// inbox. If the inbox is full, Deliver returns the error and the transport
// drops the frame and counts it (PeerStats.DroppedIn, logged at debug,
// rate-limited). This is the only place the transport drops a frame it
// accepted, and it is safe: VSR never relies on a single delivery — the
// primary retransmits unacknowledged prepares every
// prepare_retransmit_interval, commits are re-broadcast every
// commit_broadcast_interval, view-change and repair messages are resent on
// their timers, and acknowledgements are cumulative. The alternative,
// blocking the reader, would stall every group on that link behind one
// overloaded shard. Frames from one peer for one group keep their order
// (one reader, FIFO inboxes); VSR tolerates reordering anyway.
//
// # Sending
//
// Send(to, message) never blocks. It refuses with ErrPeerDown when there is
// no link, or ErrQueueFull when the peer's queue (peer_queue_capacity
// frames) is full; both are counted and the caller drops the message (VSR
// retransmits). A writer goroutine per link takes the first queued frame
// plus whatever else is queued, up to max_batch, and writes them in one
// vectored write (writev of header and body slices, no copy), so many small
// VSR messages coalesce into few syscalls; over TLS it packs them through a
// 64 KiB buffer. A write that does not complete within WriteTimeout
// (cluster.heartbeat_timeout) closes the link. When a link goes down its
// queued frames are discarded and counted (PeerStats.DroppedQueued).
//
// # Wiring
//
//	pc, err := plane.FromConfig(conf, self)        // roster, keys, TLS, message_bus
//	pc.Listener = replicaListener                   // tcp_replica, bound by shard 0
//	pc.Logger = log
//	pc.Deliver = func(from uint8, group uint64, m vsr.Message) error {
//		s := shard.Route(shard.Namespace(group), rt.Shards())
//		return rt.Send(s, replicaFrame{from: from, msg: m}) // TrySend: never blocks
//	}
//	tr, err := plane.New(pc); err = tr.Start()
//	// in a shard loop, for each rd.Messages envelope e:
//	_ = tr.Send(e.To, e.Message) // ErrPeerDown / ErrQueueFull are counted; VSR retransmits
//	// at shutdown, after the shards stopped: tr.Close()
//
// The vsr.Config.Cluster of every group is plane.ClusterID(cluster.name),
// the same id the transport checks on every frame.
//
// # Metrics
//
// Stats returns per-peer state (connected, since when), link connects and
// disconnects, dial failures, frames and bytes in and out, vectored writes,
// send refusals, inbound drops, discarded queued frames and link violations,
// plus refusal counts per Reason: plain atomics, read without locks.
package plane
