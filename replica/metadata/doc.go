// Package metadata is the node's metadata state machine: streams, topics,
// partitions, consumer groups, users, permissions and personal access
// tokens. It is replicated by the metadata consensus group on shard 0 of
// every node: each committed prepare carries one Command, every replica
// applies it with State.Apply in commit order, and every shard reads the
// result through an immutable State.
//
// # Flow of a metadata request
//
//  1. The connection's shard decodes the request with wire and calls Admit
//     against its current view. Admit refuses what fails without consensus
//     (permission, options catalog, counts, password bounds, token cap) with
//     the code for the reply status field, and stamps what Apply must not
//     compute: Argon2id password hashes, the verified current-password hash,
//     the token hash (the raw token stays with the connection for the reply)
//     and the node's topic defaults.
//  2. The primary builds the prepare body with EncodeOp(Meta, Command);
//     backups decode it with DecodeOp. Meta (timestamp, acting user, client
//     id, system flag) is stamped by the primary; Meta.Op is the prepare's op
//     number and is not part of the body.
//  3. On commit every replica runs Store.Apply (State.Apply underneath). The
//     Result is identical everywhere: Code 0 or a committed rejection (an
//     Iggy code, sent result-framed), the records the reply needs, and
//     Effects telling the node what to do outside this package (create or
//     tear down partition storage and consensus groups, purge, drop group
//     offsets, end sessions).
//  4. Replies are rendered with the *Record functions into wire values; the
//     partition statistics come from the shards through a StatsSource.
//
// # Determinism
//
// Apply reads no clock (Meta.Timestamp is the only time), no randomness and
// never iterates a Go map where order could matter; lists are slices in id
// order. Permission checks happen inside Apply against the state before the
// command, so every replica (and WAL replay) decides the same way.
// Everything that differs between nodes (configuration, defaults, limits)
// either travels in the prepare or lives in the replicated state (Limits).
//
// # Identifiers
//
//   - Streams: 0-based; a new stream takes the lowest free id, as Iggy's
//     slab does. A pure function of the occupied ids, so a state restored
//     from a snapshot allocates exactly as a live one. Bounded by
//     Limits.MaxStreams (≤ 1<<20, the namespace's stream field).
//   - Topics: 0-based per stream, lowest free id, ≤ Limits.MaxTopicsPerStream
//     (≤ 4096).
//   - Partitions: dense 0..n-1 per topic; CreatePartitions appends the next
//     ids, DeletePartitions removes the highest ones, at most
//     Limits.MaxPartitionsPerRequest (1000) per request.
//   - Because ids are reused, every stream, topic and partition carries a
//     Revision (the state revision that created it). Storage and consensus
//     groups key an incarnation by (ids, Revision), so a stream deleted and
//     recreated under the same id never meets the old one's data. Deleting a
//     stream or topic also removes the grants on it from every user, so a
//     stale grant cannot apply to the next object created under that id.
//   - Consumer groups: per topic, monotonic, never reused (offsets are keyed
//     by group id). Members are keyed by the client id, get a per-group
//     monotonic member id and keep join order. Each member also records the
//     node holding its connection (replica id, 0 on a single node) and that
//     node's boot (incarnation, µs), stamped into the join by the admitting
//     node.
//   - Users: id 0 is root (created by Bootstrap, cannot be deleted, always
//     all permissions). Other users get monotonic ids, never reused, so a
//     session bound to a deleted user id cannot turn into a new account.
//
// # Caps decided at admission, checked at apply
//
// The node-wide partition cap depends on the admitting node's configuration
// (metadata.partitions_max), which may differ between nodes, so no replica
// may consult its own while applying. Admit decides it
// on the view it sees (AdmitConfig.PartitionsMax) and stamps it into
// CreateTopic and CreatePartitions; Apply checks the stamped cap against the
// committed partition count (PartitionsFit: TooManyPartitions), so every
// replica decides alike and creates admitted concurrently cannot overshoot
// it together. A stamp of 0 means no cap.
//
// # The root account
//
// Only root changes root (RootGuard): updating its name or status,
// changing its password or permissions and deleting it are Unauthorized for
// anyone else, in Admit and again in Apply; root cannot be set inactive
// (InvalidUserStatus), since nobody else could reactivate it. Commands
// decoded from prepare bodies older than version 3 (Meta.Legacy) apply
// without the guard, as they committed.
//
// # Consumer-group assignment
//
// Any change of membership (join of a new member, leave, disconnect) or of
// the topic's partition count re-deals all partitions round-robin in member
// order (partition p goes to member p mod n) and bumps the group's
// generation. Every partition then has exactly one owner and owner counts
// differ by at most one. Joining twice is a no-op (no bump), except that a
// join stamped with another node or boot than the member's re-stamps it
// (the client reconnected elsewhere; still no bump).
//
// # Members of a crashed or restarted node
//
// A member's connection lives on one node; when that node crashes or
// restarts nobody sends its DisconnectClient. EvictNodeMembers{Node,
// Before} removes every member with that Node and Boot < Before and
// rebalances each group that lost one exactly as DisconnectClient does.
// A node submits it for itself once its metadata replica is in normal
// status after boot (Before = its own incarnation), and the metadata
// primary submits it for a node gossip reported dead or left for
// cluster.member_eviction_timeout or that sent it no consumer session
// report for consumer_group.session_timeout. ExpireMembers{Node, Boot,
// Clients} removes the listed members still stamped with that node and
// boot (the node's session reports stopped naming them: their connection
// closed and the leave was lost); a member re-stamped by a join through
// another node or boot stays. Members restored from snapshot version 1 or
// joined by a prepare body of version 1 have Node 0 and Boot =
// BootUnknown (the largest u64): no Before is above it, so they are never
// removed by node eviction (only by their own disconnect).
//
// # Cooperative rebalancing
//
// A join rebalances as Iggy 0.9's rebalance_cooperative
// (rebalanceCooperative): partitions nobody owns go to members owning
// none, then each member above its fair share gives its excess (highest
// partitions first) round robin to the members owning none. An excess
// partition listed in the join's InFlight (stamped by the admitting node:
// it may hold polled, uncommitted messages) stays with its owner as a
// pending Revocation (target member, Since = the join's timestamp): the
// owner keeps it for commits (Owns) but may not poll it (Pollable,
// Assignment), and nobody else gets it until CompleteRevocation moves it
// (the node decides when: package replica,
// consumer_group_rebalance.go). Leave, disconnect, node eviction and
// partition changes re-deal every partition round robin
// and drop pending revocations, as Iggy's rebalance_members does. Joins
// decoded from prepare bodies before version 4 (Redeal) re-deal round
// robin, as they did when they committed.
//
// # Snapshot format (EncodeSnapshot / DecodeSnapshot)
//
// Integers are little-endian. str8 is [len u8][bytes], str16 is
// [len u16][bytes]. Lists are [count u32] then the elements.
//
//	offset  size  field
//	     0     8  magic "IGGOMETA"
//	     8     4  format version u32 = 4 (1, 2 and 3 are still decoded, below)
//	    12     4  reserved, zero
//	    16     8  payload length P u64
//	    24     P  payload (below)
//	  24+P     8  XXH3-64 (seed 0) of bytes [0, 24+P)
//
// Payload:
//
//	u64   last applied op number
//	u64   state revision
//	u8    bootstrapped (0/1)
//	u32   next user id
//	6×u32 limits: max_streams, max_topics_per_stream, max_partitions_per_topic,
//	      max_partitions_per_request, max_tokens_per_user, max_users
//	u32   stream count, then per stream in ascending id:
//	  u32    id
//	  u64    created_at (µs)
//	  u64    revision
//	  str8   name
//	  opts   options (always empty: the stream catalog has no keys)
//	  u32    topic count, then per topic in ascending id:
//	    u32  id
//	    u64  created_at
//	    u64  revision
//	    str8 name
//	    u8   compression codec (1 none, 2 gzip, 3 zstd, 4 lz4; the topic
//	         record's compression_algorithm is gzip for 2, none otherwise)
//	    u64  message_expiry µs (u64::MAX never)
//	    u64  max_topic_size (u64::MAX unlimited)
//	    u64  segment_size
//	    u8   enforce_fsync
//	    u32  messages_required_to_save
//	    u64  size_of_messages_required_to_save
//	    u8   preallocate_segments
//	    u8   durability (1 replicated, 2 persisted)
//	    u8   consumer_offset_durability
//	    opts explicit options
//	    opts derived options
//	    u32  partition count, then per partition (id = index):
//	         u64 created_at, u64 revision, u64 purge_generation
//	    u32  next group id
//	    u32  group count, then per group in ascending id:
//	      u32  id
//	      str8 name
//	      u64  generation
//	      u32  next member id
//	      u32  member count, then per member in member order:
//	           u32 id, u64 client id low, u64 client id high,
//	           u8 node (replica id), u64 boot (node incarnation µs),
//	           u32 count + count × u32 owned partition ids (ascending),
//	           u32 count + count × (u32 partition, u32 target member id,
//	           u64 since µs): pending revocations, ascending by partition,
//	           each of an owned partition to another member (version 4)
//	u32   user count, then per user in ascending id:
//	  u32    id
//	  u64    created_at
//	  u8     status (1 active, 2 inactive)
//	  str8   username
//	  str16  password hash (Argon2id PHC string)
//	  opts   options (always empty)
//	  u8     has permissions; if 1:
//	         10×u8 global flags (wire order), u32 stream count, per stream in
//	         ascending id: u32 id, 6×u8 flags, u32 topic count, per topic in
//	         ascending id: u32 id, 4×u8 flags
//	  u32    token count, then per token in ascending name:
//	         str8 name, 32 bytes SHA-256 of the token, u64 created_at,
//	         u64 expiry_at (0 never)
//	u32   revoked access token count (≤ MaxRevokedAccessTokens), then per
//	      token in ascending id: 16 bytes id (SHA-256 of the JWT's jti,
//	      first half), u64 expiry (unix seconds)
//
//	opts = u32 count, then per entry: str8 key, u8 value kind, u8 value
//	       length (1..255), value bytes. Topic blocks list the catalog keys
//	       in catalog order.
//
// The encoding is canonical: every state has exactly one encoding, and the
// decoder accepts only canonical input (booleans 0/1, ascending ids and
// names, option blocks equal to the canonical rendering of the topic
// configuration, every partition owned exactly once in a group with
// members, root present iff bootstrapped, no trailing bytes). Name and
// token indexes are rebuilt, not stored.
//
// Version 1 is the same layout without the member's node and boot (a
// member is u32 id, u64 client low, u64 client high, then its partitions);
// its members decode with node 0 and boot BootUnknown. Version 2 is
// version 3 without the revoked access tokens (they decode as none).
// Version 3 is version 4 without the members' pending revocations (they
// decode as none). EncodeSnapshot always writes version 4.
//
// # Prepare body format (EncodeOp / DecodeOp)
//
//	offset  size  field
//	     0     1  version = 4 (3, 2 and 1 are still decoded, below)
//	     1     1  operation: Iggy's operation byte (128..149 except 138) for
//	              client commands; 96 Bootstrap, 97 SetLimits,
//	              98 DisconnectClient, 99 DeleteExpiredTokens,
//	              100 EvictNodeMembers, 101 RevokeAccessToken,
//	              102 CompleteRevocation, 103 ExpireMembers
//	     2     1  flags: bit 0 = system command; other bits zero
//	     3     1  reserved, zero
//	     4     4  acting user id u32
//	     8     8  timestamp u64 (µs)
//	    16    16  client id u128 (low half first)
//	    32     2  stamp length N u16
//	    34     N  stamp (per operation, below)
//	  34+N     …  the request body in Iggy's wire encoding, to the end
//	              (empty for iggo's internal operations)
//
// Stamps: CreateTopic and UpdateTopic carry the topic defaults (48 bytes:
// u8 compression, u64 message_expiry, u64 max_topic_size, u64 segment_size,
// u32 messages_required_to_save, u64 size_of_messages_required_to_save,
// u8 preallocate_segments, u8 durability, u8 consumer_offset_durability,
// u64 segment_size_max); CreateTopic then u32 partitions_max, the admitting
// node's node-wide partition cap (0: none). CreatePartitions carries u32
// partitions_max. CreateUser carries str16 password hash and its body
// has an empty password. ChangePassword carries str16 verified hash, str16
// new hash, and its body has empty passwords. CreatePersonalAccessToken
// carries the 32-byte token hash. Bootstrap carries str8 root username,
// str16 root password hash and the six u32 limits; SetLimits the limits;
// DisconnectClient the 16-byte client id. JoinConsumerGroup carries u8
// node (the admitting node's replica id) and u64 boot (its incarnation,
// µs), then u16 count + count × u32 in-flight partitions (version 4).
// EvictNodeMembers carries u8 node and u64 before. ExpireMembers carries
// u8 node, u64 boot, u16 count and count × 16-byte client ids (version 4
// only). CompleteRevocation
// carries u32 stream, u32 topic, u32 group, the 16-byte source client id,
// u32 partition, u8 has-committed and u64 committed offset. RevokeAccessToken
// carries the 16-byte token id and u64 expiry (unix seconds). Other operations
// have no stamp. Plaintext passwords and raw tokens never enter a prepare.
//
// Version 2 bodies (written before the node-wide partition cap and the
// root guard) decode the same way except that CreateTopic and
// CreatePartitions have no partitions_max (0: no cap), and they decode
// with Meta.Legacy, which applies them without the root guard: a journal
// replays to the state it committed. Version 1 bodies (written before
// members recorded their node) are version 2 bodies in which
// JoinConsumerGroup has no stamp (node 0, boot BootUnknown) and
// EvictNodeMembers does not exist. Version 3 bodies are version 4 bodies
// whose JoinConsumerGroup stamp ends after the boot (no in-flight list; it
// decodes with Redeal and re-deals every partition) and in which
// CompleteRevocation does not exist. EncodeOp always writes version 4.
//
// # Topic options
//
// The catalog is Iggy's eight keys (wire.TopicOptionCatalog) plus iggo's
// durability and consumer_offset_durability (replicated | persisted,
// create-only) and compression_codec (none | gzip | zstd | lz4,
// updatable). compression_algorithm is Iggy's projection of the codec:
// gzip for gzip, none for the others; setting it to gzip selects gzip,
// setting it to none turns gzip off and leaves zstd and lz4 alone (an Iggy
// client re-sending what it read changes nothing), and both keys in one
// block must agree (else 4042). A snapshot written before
// compression_codec existed has blocks without it; they decode (codec 1 or
// 2) and are rendered with it. enforce_fsync is an alias: true means both durabilities
// are persisted, and an explicit contradiction is refused (4042). Absent
// keys, and keys set to a server-default sentinel, resolve from the
// primary's TopicDefaults (stamped, so replicas agree) and are reported in
// the derived block; keys the client set are canonicalized to the key's
// kind and reported in the explicit block. UpdateTopic may change only
// compression_algorithm, message_expiry and max_topic_size (others are
// refused by name, 4041); a sentinel returns a key to the default.
package metadata
