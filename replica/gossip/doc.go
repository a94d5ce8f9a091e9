// Package gossip is node liveness and node information for an iggo cluster,
// on hashicorp/memberlist (SWIM: probes, indirect probes, suspicion,
// piggy-backed gossip, periodic full-state exchange). Consensus does not
// depend on it — VSR has its own heartbeats — it feeds the health field of
// GET_CLUSTER_METADATA and `iggo cluster status`.
//
// # Port
//
// Each node gossips on its roster ip and cluster.nodes[].ports.gossip (TCP
// and UDP); unset, the port is tcp_replica + 1000 (config.GossipPortOffset),
// which keeps the usual layout (replica ports 9090, 9091, ... on one host)
// free of collisions. A fixed, roster-known port is the simplest robust
// choice: every node can join every other one from the config alone, before
// any other channel exists, and firewalls can be written from the roster.
//
// # Joining
//
// Start binds the port and joins every roster member it can reach; members
// that are not alive are joined again every RejoinInterval, so a node that
// started first, or the two sides of a healed partition, find each other
// without operator action. Memberlist's node name is the roster name.
//
// # Security and isolation
//
// Every packet carries the label "iggo/" + the first 8 bytes of the cluster
// id in hex, so two clusters on one network ignore each other. With
// cluster.auth enabled, packets are encrypted and authenticated with
// memberlist's keyring (AES-256-GCM) under GossipKey(shared_secret) =
// HKDF-SHA256(secret, salt "iggo gossip v1", info cluster id); the key of
// previous_shared_secret is also accepted. A node encrypts with its current
// key only, so a rotation takes Iggy's three rolls (every node: current =
// old, previous = new; then current = new, previous = old; then new alone),
// during each of which every pair of nodes still understands each other. A
// node with another key, or none, cannot join. An alive announcement for a
// name not in the roster, or whose meta names another replica id than the
// roster gives that name, is refused (Stats.Refused).
//
// # Node meta
//
// Each node gossips a small record (Meta, at most 512 bytes): replica id,
// name, the host clients should dial, its client TCP port, a status word,
// and its part in the metadata group (role and view). Layout (Meta.Encode):
//
//	0  u8   version (2)
//	1  u8   replica id
//	2  u8   status: 0 healthy, 1 starting, 2 stopping, 4 maintenance
//	3  u8   role: 0 unknown (not in normal status), 1 leader, 2 follower
//	4  u16  client tcp port, little-endian
//	6  u32  metadata group view, little-endian
//	10 u8   name length n (1..255), n bytes of name
//	…  u8   client host length h, h bytes of host
//
// The status values are GET_CLUSTER_METADATA's; 3 (unreachable) is never
// announced, it is what Member.WireStatus reports for a member that is dead,
// gone or never heard from. SetStatus announces a new status, SetRole a new role and view.
//
// # Liveness
//
// Members lists every roster member with what this node knows: Unknown
// (never heard from), Alive, Suspect, Dead, Left. Dead is memberlist's
// verdict after its suspicion timeout. Left is a member that announced
// Stopping before going away (Close does both; memberlist's callbacks do
// not tell a leave from a failure). Suspect is this node's own, earlier
// signal: memberlist still counts the member alive, but none of this node's
// direct probes of it has been answered for SuspectAfter (memberlist's own
// suspect state is not readable without racing its internals). An answered
// probe makes it Alive again.
//
// Events delivers join, update and leave notices on a bounded channel;
// events that do not fit are dropped and counted, since Members remains the
// authoritative view. Memberlist's own log goes to the given zap logger at
// debug level.
package gossip
