// Package replica is the iggo node: boot and recovery, the client listeners
// (replica/transport: tcp, tcp with TLS, WebSocket, WSS), connection
// hand-off, the connection frame loop, and the two kinds of
// consensus groups a node drives — the metadata group on shard 0 and one
// group per partition on its owning shard — with their state machines and
// storage. cmd/iggo-server only wires configuration and logging to it.
//
// # Threads of control
//
//   - Shards. One shard.Runtime loop per allowed CPU (sharding.*). A shard
//     owns the consensus groups whose namespace hashes to it
//     (shard.OwningShard; the metadata group is always shard 0) and their
//     files, opened through that shard's vfs filesystem (io_uring when the
//     kernel allows it, else the portable path after one warning). Only the
//     owning shard's loop touches a partition: its vsr.Replica, journal,
//     segments and consumer offsets.
//   - Connections. The listener runs on shard 0's behalf and hands every
//     accepted connection to serveClient (intake.go), the one entry of
//     every transport: it is admitted by intake.Admission (connections_max,
//     per transport, per address before a login, the unauthenticated byte
//     budget; the excess is closed at once) and handed, before a byte is
//     read, to the next shard
//     round-robin (shard 0 included unless
//     cluster.coordinator.skip_shard_zero_for_clients). That shard starts
//     the connection's goroutine (Go's netpoller does the waiting). The
//     goroutine reads a frame through intake.Reader (buffer grown as bytes
//     arrive, charged to the node's budgets, under the header, body and
//     idle deadlines), decodes it with wire, checks session and
//     permissions against the published metadata view (metadata.Store; a
//     copy-on-write State read without locks), and serves reads itself.
//     Everything replicated, and every partition read, becomes a task in
//     the owning shard's bounded inbox; a full inbox is answered with
//     TransientNotAccepted (58), never dropped. The goroutine waits for the
//     answer before it reads the next frame: exactly one reply per request,
//     in order.
//   - HTTP. The HTTP API (package httpapi, http.go) runs on shard 0's
//     behalf on net/http's goroutines. It serves nothing itself: each route
//     runs the binary command on a local session (local_session.go), a
//     conn whose socket is a reply capture, through conn.handle — the same
//     decode, admission, permission checks, forwarding and inbox hand-offs
//     as a socket's frames. A session registers a VSR client session (the
//     Register a binary login commits) at its first write; reads need none.
//   - Shard loop iteration. Handle takes what one wake-up brought (tasks and
//     coalesced ticks), submits requests to the replicas, then drives every
//     touched replica's Ready until nothing more happens (package
//     consensus: a consensus.Group per group, one consensus.Driver per
//     shard with the shard loop as its host): view-state writes,
//     journal appends (one vectored write per journal file), one group
//     commit per pass (every journal that needs fdatasync, and segment syncs
//     that are due, in one vfs submission), the AppendDones that commit and
//     apply ops, then the segment writes of the applied batches (one
//     vectored write per segment, all in one submission). Replies go out
//     last, so a send's reply never releases the connection's buffer while a
//     write still references it. In a cluster a send's reply and a
//     forwarded request's ForwardReply go out as the op commits (task
//     early): the shard copied the batch, so nothing the pass still writes
//     references the connection's buffer, and neither waits for the
//     segment write.
//
// # One send
//
// The connection verifies the batch in place (wire.DecodeSendMessages: layout
// and every checksum; dense offset deltas), resolves the partition
// (balanced: server-side round robin per topic; partition id; messages key:
// XXH32 % count) and hands the batch bytes — a slice of its read buffer,
// never copied — to the owning shard. The partition's replica prepares it
// (the prepare body is the batch), the journal writes header and body with
// one pwritev (and fdatasync under persisted durability), the op commits
// (quorum of one), and Apply stamps partition_id, base_offset (dense,
// 0-based) and base_timestamp (the prepare's timestamp) in place and queues
// the batch for its segment, which the same iteration writes. The socket
// read, the journal write and the segment write are the only copies.
//
// With more than one replica (cluster mode, below) the replica keeps the
// prepare body for retransmission and repair, and peers verify it against
// its checksum, so the body must stay exactly as journaled: the owning
// shard copies a send's batch out of the connection's buffer before it
// submits it, and Apply stamps a copy of its 256-byte header only: the
// stamps and the batch checksum live there (the checksum covers the
// frames' own checksums, which stamping does not change), and the segment
// write is the stamped header followed by the prepare body's frames as
// received, one vectored write (segment.Record, wire.StampHeader). Every
// replica stamps the same committed batch with the same (partition_id,
// base_offset, prepare timestamp), so their segments are byte-identical.
//
// # One send, call by call
//
// The path of a send on a single node, in the order the calls happen
// (file:function; rooms below replica are named by package):
//
//  1. conn.go:conn.serve reads one frame through intake.Reader;
//     conn.go:conn.handle decodes its header and checks the session and
//     permissions against metadata.Store's published view.
//  2. conn_data.go:conn.send verifies the batch in place
//     (wire.DecodeSendMessages), applies the at-rest codec (codec.Stack),
//     resolves the partition (conn_data.go:conn.target) and fills the
//     connection's preallocated sendReq (task.go: partition incarnation,
//     user, body, producer identity); conn.go:conn.run points the
//     connection's one reusable task at it, hands the task to the owning
//     shard's inbox (shard.Runtime.Send) and waits on its done channel.
//  3. shard.go:shardLoop.Handle takes the iteration's tasks;
//     shard.go:shardLoop.dispatch switches on the request's type, finds
//     the partition (shard.go:shardLoop.partitionFor) and calls
//     partition_host.go:part.send(task, sendReq), which turns the request
//     into partition.SendRequest (a vsr.Request with the producer
//     identity); consensus.Group.Submit (group.go) registers the task as
//     the request's Waiter and submits it to the vsr.Replica.
//  4. shard.go:shardLoop.settle runs consensus.Driver.Drive (driver.go):
//     Group.runReadies → ready.go:Group.process, per Ready part:
//     writeState (view state), runJournal / journalRun.flush (one vectored
//     append per journal file), and at the end of the pass
//     Driver.groupCommit: one vfs submission with every journal fdatasync
//     due (persisted topics) plus the segment syncs the pipeline stages
//     (shard.go:shardLoop.StageCommit → partition.Pipeline.StageCommit);
//     ready.go:Group.syncDone reports the appends (vsr.AppendDone).
//  5. The op commits inside the replica, which calls the state machine:
//     partition/apply.go:Partition.Apply → applySend stamps the batch
//     (base offset, timestamp) and partition/pipeline.go:Pipeline.stage
//     queues it for its segment.
//  6. After the pass, shard.go:shardLoop.AfterPass →
//     partition.Pipeline.Flush: one vectored segment write per partition
//     (Partition.stageAppend → segment.Log.StageAppend, one submission,
//     finishAppend), publishing the new offsets to polls.
//  7. The replica's Reply reaches consensus.Group.complete (group.go),
//     which records it in the task's result (task.go:task.SetReply) and
//     calls shard.go:shardLoop.Deliver → shardLoop.complete; after the
//     iteration's writes settle finishes it (task.go:task.finish, which
//     signals the connection's done channel), and conn_data.go:conn.send
//     writes the reply (base offset) to the socket.
//
// In a cluster, step 3 on a backup forwards the request to the primary
// (consensus/forward.go: Group.forward, vsr Forward frame over
// replica/plane); the primary serves it with Group.SubmitHere
// (cluster.go:shardLoop.serveForward) and its ForwardReply completes the
// backup's task (Group.ForwardReplied), held until the backup applied the
// op too. Step 4 sends prepares to the backups (Host.Send → the replica
// plane) and the op commits on a quorum of PrepareOks.
//
// # Compression and encryption at rest
//
// A topic whose compression_codec is gzip, zstd or lz4 (Iggy's
// compression_algorithm = gzip means gzip), and every topic when
// encryption.enabled, has the connection encode the verified batch into
// its stored form (package codec: the messages' bytes compressed into one
// block in frame 0, then sealed with AES-256-GCM when encryption is on;
// without compression every payload and every non-empty user-headers block
// sealed; frame and batch checksums recomputed over the stored bytes)
// before it hands it to the owning shard, so the prepare
// body, the journal entry of every replica, the segments and the state
// transfer artifacts all hold the same sealed bytes, and a backup that
// forwards a send forwards its stored form (it is never sealed twice). A
// single node encodes into a buffer the connection reuses (it waits for
// the reply); a cluster node encodes into a fresh one the prepare keeps,
// instead of the copy the owning shard would make. A stored batch that no
// longer fits a prepare (28 bytes more per sealed section) is refused with
// InvalidMessagesSize (4036); a batch compression does not make smaller is
// stored uncompressed. A poll's records are decoded on the connection
// (never on the shard loop) into its own buffer: decompressed, sections
// opened, lengths and checksums recomputed over the bytes sent, which is
// what Iggy's SDKs verify; a record that does not decode answers
// CannotDecryptData (72) under encryption, Error (1) otherwise. Without
// encryption records that are not compressed go to the socket as read. A
// compressed record is never cut on the shard: the poll hands it whole
// with the range to keep (partition.PollResult.Cuts), cut after decoding. The
// journal holds the stored form too (it is the prepare body). Segment
// sizes, retention and max_topic_size count stored bytes; GET_STATS with
// iggo's extension also reports the original size (package partition).
// At boot, before anything under path is read,
// {path}/encryption_key_check (codec.KeyCheck: an HMAC of a constant under
// the key, never the key) refuses a wrong key, a directory written with a
// key started without one, and a key on a directory written without; a
// new directory with encryption on gets the file. Cluster nodes also
// compare a key id in the replica-plane handshake (package plane), so a
// node keyed differently never links.
//
// # Long polling
//
// A poll carrying iggo's wait extension (wire.PollMessages.WaitMillis)
// that finds no message waits on its connection goroutine (conn_wait.go,
// package longpoll), never on a shard loop: the poll task reports the
// offset it needs, the connection registers it with the partition's feed
// and blocks on a channel, and the owning shard's publish after the
// segment write of applied batches (package partition) wakes it; it then
// polls again. Every replica publishes its own applies, so a poll on a
// backup waits for that backup's commit. A consumer-group poll without a
// partition polls every partition the member owns before it waits on all
// of them. Waits are cut to long_poll.max_wait and bounded by
// long_poll.waiters_max per node and waiters_per_connection (refused with
// 58; with waiters_max = 0 with 5); a deleted partition closes its feed
// and wakes its waiters; node shutdown ends every wait.
//
// # Cluster mode
//
// cluster.enabled = true runs the node as replica --replica-id of a roster
// ([[cluster.nodes]]): New refuses an id the roster lacks (config
// validation refuses duplicate ids, names and endpoints). Every group —
// metadata and each partition — has one replica per roster member
// (vsr.Config.ReplicaCount = roster size, Replica = --replica-id), with
// primaries spread by vsr.PrimaryOffset and timing from the [cluster] keys.
// The cluster id is plane.ClusterID(cluster.name): prepares, replica-plane
// frames and every group's superblock carry it, and a node refuses data
// written under another cluster name or replica id with an error naming
// the directory.
//
// Shard 0 runs the replica plane (package plane): it binds the node's
// tcp_replica, dials the peers, authenticates them with cluster.auth
// (refusals are counted and logged, rate-limited, and the node keeps
// serving) and delivers each inbound frame to the bounded inbox of the
// shard owning its group (metadata → shard 0, partition →
// shard.OwningShard); a full inbox drops the frame, which VSR retransmits.
// Frames for a group this node does not host yet are dropped too; the
// group appears when the metadata op that creates it applies here. Every
// node applies every metadata op and opens, purges and deletes its own
// replicas of the partitions accordingly.
//
// A request reaching a node whose replica of the group is a backup in
// normal status (a client metadata command, a login's Register, the node's
// own system commands, a send, an offset store or delete, an auto-commit)
// is forwarded to the primary in a vsr Forward frame and the primary's
// reply relayed back in a ForwardReply (layouts in package vsr,
// forward.go); the connection cannot tell. The primary then broadcasts
// its commit point at once (vsr CommitNow) instead of at the next commit
// heartbeat (it does so after every committed metadata op, forwarded or
// not, so every node's metadata view follows closely), and the forwarding node answers only once it applied the op
// itself (at most a forward deadline later), so the client's next request
// there sees what it just created, joined or sent. A forward that could
// not be sent, or that a peer no longer primary refused, is answered 58
// (TransientNotAccepted); one unanswered within cluster.heartbeat_timeout
// is answered 57 (TransientNotCommitted, in doubt: the primary may have
// prepared it and may still commit it). Clients replay both with the same
// request identity (iggo's client never sends a request answered 57 under
// a new one: it reports the outcome unknown instead).
// Metadata requests carry the client's session, so a replay is applied at
// most once. A send that carries a producer identity (header bytes
// 200..232, iggo's client) is applied at most once by its partition's
// producer table (vsr Config.Dedup, bounded by partition.dedup_clients_max)
// and a replay is answered with the original confirmation; other partition
// requests (Iggy's SDKs' sends, offset stores) are at-least-once, as on a
// single node whose reply was lost. Reads (polls, offset reads, get_*)
// are served by the node the client is connected to, from what it has
// committed.
//
// A login reaching a node whose metadata is not bootstrapped (no quorum
// has created root yet, or the node's metadata is still catching up after
// a restart) is answered 58, which clients replay, not InvalidCredentials.
//
// Each node registers its own system session (client id "iggo:system"
// with last byte 1 + replica id). On a first boot every node proposes the
// root user; the first proposal to commit wins, the others are refused
// with 46 and logged. Every consumer-group join records the node holding
// the member's connection and that node's incarnation (its start, µs), so
// the members of a node that went away are found without their
// connections (consumer_group_evict.go): a node that restarts removes its
// previous runs' members once its metadata replica is in normal status (a
// single node during boot), and the metadata primary removes those of a node gossip
// reports dead or left for cluster.member_eviction_timeout
// (EvictNodeMembers, package metadata). Every node also sends the primary
// a consumer session report each consumer_group.heartbeat_interval; the
// primary expires the members no report named for
// consumer_group.session_timeout (consumer_group_sessions.go; EvictNodeMembers for a
// silent node, ExpireMembers for members a reporting node dropped).
//
// Roles: the owning shard publishes each group's view, status and primary
// whenever they change (cluster_view.go: GroupRoles, MetadataPrimary,
// PartitionPrimary, PeerLinks) and logs the change.
//
// Recovery. A restarted node replays its journals, rejoins the views of
// its groups and repairs missing or corrupt prepares from its peers (vsr
// journal repair; a rewritten entry is fdatasync'ed like an append). At
// boot a cluster node never deletes partition storage its recovered
// metadata does not name: a directory whose revision (incarnation file) is
// above the metadata's is kept, since the metadata is behind its peers'
// and will name it; any other is moved to {path}/quarantine/ and logged as
// an error. A partition whose storage cannot back its own checkpoint (the
// checkpoint file unreadable, segments ending below the offsets it or the
// superblock records, as after a truncated or zeroed .log, or a corrupt
// record anywhere: a cluster node re-hashes every record at boot) is moved
// there too, and the partition opens empty as a rejoining replica that
// refills from its peers (a single node refuses to boot instead).
// A partition deleted while the node was down is deleted when
// the metadata op deleting it applies here. A cluster node's shutdown does
// not wait for its queued system commands (they need a quorum). A
// partition whose files are damaged (segment corruption or holes, segments
// below the checkpointed offset frontier, a bad checkpoint file or
// superblock, a view state with no valid record over a journal with ops)
// is quarantined the same way and reopened empty as a
// rejoining replica, which journal repair or state transfer refills; a
// single node refuses to open it instead, having no other copy.
//
// With --fresh on a directory that held cluster data the node's groups
// rejoin (vsr.Boot.Rejoin: no vote until caught up): the metadata group,
// and every partition created by a metadata op at or below the commit
// point the metadata group learned when it first reached normal status.
// An empty directory is a new node (a new cluster may start with --fresh
// everywhere). A replica whose missing ops no peer's journal still holds
// fetches a peer's latest checkpoint by state transfer (transfer.go,
// package partition): for the metadata group the session table
// (artifact 0) and the metadata snapshot (1), installed as a new
// snapshot.bin, after which the shards open and drop partitions to match;
// for a partition the checkpoint file (1), its segment list (2) and the
// .log prefix of each listed segment (3, 4, …), installed in place of the
// partition's segments and checkpoint, indexes rebuilt by segment.Open.
//
// # Durability
//
// A topic's durability option (replicated | persisted, enforce_fsync = true
// meaning persisted) decides whether a send's journal append is
// fdatasync'ed before the ack; consumer_offset_durability decides it for
// offset stores. Metadata appends are always fdatasync'ed. Segments are
// written after commit and made durable by checkpoints; in between they are
// fdatasync'ed, riding the next group commit, whenever the topic's flush
// thresholds (messages_required_to_save, size_of_messages_required_to_save,
// with floors of 16,384 messages and 16 MiB) have accumulated, which only
// spreads the checkpoint's work. Every 64 applied ops a
// partition checkpoints: pending segment writes, segment fdatasync and
// index, the checkpoint file, the superblock (checkpoint op, checksum,
// offset frontier), then the view state naming it; after that the journal
// drops what it no longer needs. Restart recovery per group: superblock →
// view state → the checkpoint it names → segments (torn tail truncated) →
// journal replay of every op after the checkpoint, re-applied in order;
// a replayed batch the segments already hold is not written again. The
// recovered segments must reach the superblock's offset frontier, or the
// partition refuses to open rather than mint an offset twice.
//
// # Damaged journal heads
//
// A torn journal tail (journal.Recovery.Torn: damage that no later record's
// sync promise covers) may hold ops this replica synced and acknowledged —
// damage inside the last synced group carries no promise. A cluster replica
// that forgot such an op could nack it in a view change and, with the one
// other replica lacking it, drop a committed op. So in a group of more than
// one replica the node boots the replica with vsr.Boot.HeadUncertain: it
// comes back recovering_head and fenced (logged as "journal tail damaged and
// possibly acknowledged: replica fenced, recovering its head from peers"),
// does not vote until a primary's StartView re-anchors it, and never nacks
// an op it may have acknowledged.
//
// The vsr contract asks the journal to keep such a tail on disk until the
// replica's own truncate removes it, so that the tail is never gone while
// the fence is not durable. iggo gets the same ordering differently: the
// journal's BeforeCut hook (journal.PartitionOptions, MetadataOptions) runs
// after the scan and before anything is cut, and the node writes the
// group's view state with Fenced and HeadPending set (fdatasync'ed) there;
// only then does recovery cut the tail. A crash after the cut boots from
// that record, which alone makes vsr recovering_head and fenced (a state
// record with HeadPending), so no order of crashes leaves a shorter journal
// under an unfenced record. A failed write fails the group's open with
// nothing cut. The truncate vsr issues for HeadUncertain then removes
// nothing (the journal already ends at the last intact op) and is still
// held until a fenced record is durable. Keeping the tail instead would make
// the journal carry a pending cut through appends, file rotation (a new
// partition file may take a torn file's name) and discards; the early
// fence needs none of that.
//
// A group with no state record yet (a brand-new group) is not fenced: vsr
// journals nothing and sends nothing before its first state record is
// durable, so its journal holds nothing acknowledged. A single-replica group
// (a single node) keeps the plain cut: it has no peer to recover its head
// from (a fenced solo replica could never leave recovering_head), so there
// the journal's documented limit stays: damage inside the last synced group
// with neither a later record nor its sync marker is cut, and the node
// forgets those ops as if it had crashed before syncing them. Damage a sync
// promise covers (journal.Recovery.Faulty above the checkpoint) is
// corruption of acknowledged ops: a single node refuses to start, naming
// the journal file, the byte offset and the ways out (restore the data
// directory from a backup, or --fresh); a cluster node repairs those ops
// from its peers. The price in a cluster: after a
// whole-cluster power loss that tore the tails of more than n − quorum
// replicas of a group, those replicas all wait for a StartView that no
// quorum can send, and the group stays unavailable (there is no automatic
// way out; vsr's journal contract names this trade-off). A replica whose
// journal is damaged only in the middle (faulty entries) is not fenced by
// this rule; vsr decides from the entries. With durability = replicated
// a partition's appends are acknowledged before their fdatasync, so a
// power loss can also lose acknowledged ops at a clean record boundary,
// which no journal check can see: that topic setting trusts the other
// replicas, not the local disk.
//
// # Data directory
//
// One process owns {path}: before it reads or writes anything else there
// (cmd/iggo-server: before it even opens its log file), a server takes
// the exclusive flock(2) of {path}/iggo.lock, which the kernel drops when
// the process exits, however it exits. A second server on the directory
// exits at once with "data directory {path} is in use by pid N (...)",
// having changed nothing. The lock file is text, written by the holder
// after it took the lock (package datadir has the details):
//
//	iggo data directory lock
//	pid=<decimal>
//	node=<roster name, or "single node">
//	replica_id=<decimal>
//	started=<RFC 3339, UTC, nanoseconds>
//
// Start then loads the client listeners' TLS certificates, binds the
// client listeners and, in cluster mode, the replica plane's, and only then
// recovers storage, so a start that cannot bind its ports or read a
// certificate fails without touching the data; accepting starts after
// recovery (connections wait in the listen backlog meanwhile). Gossip binds
// later and never fails a start (it retries). Recovery itself is the same
// whether the previous run stopped cleanly or crashed.
//
// --fresh empties the directory only if every top-level entry is one a
// node creates (metadata, streams, state, quarantine, the runtime.path and
// logging.path directories) or one it keeps (iggo.lock, lost+found); a
// directory with anything else is refused, naming the unexpected entries,
// before anything is created or removed in it. The wipe keeps the lock
// file and the log directory, so the log of the run that wiped survives.
//
//	{path}/iggo.lock                        the owner's lock file, above
//	{path}/metadata/superblock              superblock package (4 copies)
//	{path}/metadata/viewstate               vsr state record, below
//	{path}/metadata/journal.wal             metadata prepare journal
//	{path}/metadata/snapshot.bin            metadata checkpoint, below
//	{path}/metadata/prev/snapshot.bin       the previous one
//	{path}/streams/{s}/topics/{t}/partitions/{p}/
//	    incarnation                         partition revision, decimal
//	    superblock, viewstate               as for metadata
//	    journal/{first_op:020}.wal          partition prepare journal
//	    journal/recycle-{max_op:020}.wal    retired journal file kept for reuse
//	    {start_offset:020}.log / .index     segments (segment package)
//	    checkpoint-{op:020}                 partition checkpoint, below
//	    segments-{op:020}                   cluster mode: its segment list, below
//	    transfer/artifact-{id}              cluster mode: state transfer staging
//	    purge.gen                           u64 purge generation ‖ XXH3-64
//	    compressed                          empty: some record's stored form
//	                                        differs from what was sent (its
//	                                        original size is read at open)
//	{path}/quarantine/{s}-{t}-{p}-{unix ns}/ cluster mode: unknown or damaged partition storage
//	{path}/encryption_key_check             encryption at rest: key check (codec)
//	{path}/state/log                        Iggy's legacy file, empty
//	{path}/runtime/current_config.toml      rewritten at every boot
//	{path}/logs/iggo-server.log             JSON log lines (package logging)
//	{path}/logs/iggo-server.log.N           rotated copies, .1 the newest
//
// # Audit trail
//
// The connection that served a request writes its audit lines (package
// audit; conn_audit.go): each committed change of users, permissions,
// tokens, streams, topics, partitions and consumer groups, each such change
// the metadata state machine refused, and every permission denial (code
// 41, whichever check gave it), at INFO under the logger replica.audit, with the
// user, the connection's client id and address, and the resource by id and
// name. Denials and refusals are budgeted per connection and per node
// (logging.audit_client_lines_per_second, audit_lines_per_second); committed
// changes never are. In a cluster only the node the client talks to writes
// them. Gossip logs each peer coming up or going down at INFO; recovery
// logs what it recovered (metadata: op, checkpoint, journal ops replayed,
// streams, topics, partitions, groups, users; partitions: journal ops
// replayed, segments, messages, bytes, consumer offsets).
//
// # View state (viewstate)
//
// A group's vsr state record lives in its view-state file: two slots
// written alternately, the newest valid one wins. Package consensus, which
// reads and writes it, documents the format byte by byte.
//
// # Partition checkpoint, segment list, purge.gen
//
// The partition's files — checkpoint-{op:020}, segments-{op:020} (cluster
// mode), purge.gen, transfer/artifact-{id} and compressed — are laid out
// byte by byte in package partition (replica/partition/doc.go).
//
// # Metadata checkpoint (snapshot.bin)
//
// journal.WriteSnapshot's file whose data is: u32 length S, S bytes of
// metadata.EncodeSnapshot, then the vsr session table to the end.
//
// # Prepare bodies
//
// Metadata group: Register (operation 1) [kind u8: 1 password login, 2 the
// node's system session, 3 token login][user_id u32], then for kind 3 the
// 32-byte SHA-256 of the token (the commit refuses the session when the
// user, or the token, is gone: 42/45/53 in the reply); every other op is
// metadata.EncodeOp.
// Replies are [code u32] then, for a successful create, the record
// (stream, topic, group, user) in its wire encoding.
//
// Partition groups: operations 160 (send), 161 (store offset), 162
// (delete offset), 170 (purge), 171 (drop group) and 172 (delete
// segments), their bodies and replies, are laid out in package partition
// (replica/partition/doc.go, "Prepare bodies").
//
// # Cluster metadata and leader redirection
//
// GET_CLUSTER_METADATA (login required) lists every roster node in roster
// order. A node's ip is the host chosen for the asking client
// (config.ClusterNode.ClientHost against the socket's remote address: the
// longest matching advertised_addresses client_cidr, else
// advertised_address, else the roster ip), its tcp port the roster's and,
// with http.enabled, its http port the roster's ports.http, with
// websocket.enabled its websocket port the roster's ports.websocket (ws or
// wss as websocket.tls says); the quic port is 0. Role 0
// (leader) marks the metadata group's primary in the highest view known:
// this node's own while its metadata replica is in normal status, or the
// view a live member announces over gossip while claiming leadership (a
// node in a view change or recovering thus still points clients at the
// leader); with neither, no node is leader. Status comes from gossip
// (package gossip): this node is always healthy; another node reports the
// status it announces (healthy from the moment it serves clients, stopping
// while it shuts down) while gossip counts it alive or suspect, and 3
// (unreachable) once it is dead, left, or never heard from, and whenever
// gossip is not running here. 5 (unknown) is never sent: Iggy's Go SDK
// refuses it. A single node answers one entry: its roster name, leader,
// healthy, at node.advertised_address (else the bound host), the bound tcp
// port, the bound http port and the bound websocket port.
//
// Gossip runs in cluster mode only, on the node's roster gossip port,
// encrypted and authenticated with the key derived from
// cluster.auth.shared_secret when cluster.auth is on. It starts just before
// the client listener accepts and announces healthy plus the node's role and view,
// re-announced within a gossip interval of any change. A port that cannot
// be bound is logged and retried every rejoin interval; the node serves
// meanwhile. Close announces stopping and leaves first (each step bounded
// by message_bus.close_peer_timeout), so the others report it unreachable
// at once; a crashed node reads unreachable after memberlist's failure
// detection, a probe round plus 4 probe intervals of suspicion (about 5 s
// in a 3-node cluster with the default 1 s probe interval).
//
// What Iggy's Go SDK does with it (foreign/go: tcp_session_management.go,
// internal/util/leader_aware.go): after every login it reads the roster;
// with more than one node it takes the first node with role leader and
// status healthy, joins its ip with the tcp port, and if that differs from
// the address it dialed (compared after lower-casing, localhost as
// 127.0.0.1, IP literals by value) it disconnects, dials the leader and
// logs in again, at most 3 times in a row. No healthy leader: it re-reads
// the roster every 250 ms for up to 5 s, then stays. Its reconnection
// (on by default: unbounded retries, 2 s apart) cycles through the last
// address, the configured one and the healthy nodes of the last roster, so
// a leader it cannot dial sends it back to another node, where it logs in
// and checks again; reporting a leader only while gossip counts it alive
// keeps that detour short. A replicated request answered 58 is replayed for
// 2 s, then the same leader check runs. Because the ip answered depends on
// the client's network, the address a client dialed and the leader's
// address compare equal when it already is on the leader. A client that
// stays on a backup (redirects exhausted, no leader yet) keeps working:
// the backup serves reads and forwards writes and logins to the primary
// (cluster.go). iggo's client does the same and, in addition, treats a
// leader it cannot reach as no leader (package client).
package replica
