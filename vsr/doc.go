// Package vsr is iggo's consensus core: Viewstamped Replication (VSR
// Revisited, with TigerBeetle's refinements) for one consensus group per
// Replica value — the metadata group on shard 0 and one group per partition
// on its owning shard. It runs any replica count from 1 to ReplicasMax with
// the same code: a single node is a group of one, with a quorum of one.
//
// # Determinism
//
// A Replica starts no goroutines, reads no clock, does no I/O and never lets
// map iteration order decide anything. Its inputs are method calls — peer
// messages (Step), client requests (Submit), ticks of TickInterval (Tick) and
// storage completions (StateDone, AppendDone, ReadDone, CheckpointDone,
// ArtifactReadDone, ArtifactWriteDone, InstallDone) — and its outputs come out
// of Ready. Jitter comes from a PRNG seeded by Config.Seed and the boot's
// incarnation. Given the same inputs in the same order, a replica produces the
// same outputs byte for byte; the simulator in tests/sim relies on it.
//
// # Driving a group
//
// The node owns one Replica per group and runs this loop on the group's shard
// (the shard's inbox delivers network frames, client requests, timer ticks and
// I/O completions one at a time):
//
//	sm := restoreStateMachine(checkpoint)          // node-side: the checkpoint the state record names
//	r, err := vsr.New(cfg, sm, vsr.Boot{
//		Incarnation: bootNonce,                    // grows across boots (e.g. wall-clock µs)
//		State:       superblockPayload,            // nil for a new group
//		Journal:     recoveredEntries,             // [floor, head], nil headers for corrupt entries
//		HeadUncertain: journalTailDamagedMaybeSynced,
//		Checkpoint:  &manifest, Sessions: sessionsArtifact,
//	})
//	for event := range inbox {
//		switch e := event.(type) {
//		case frame:      if m, err := vsr.Decode(e.bytes, cfg.MessageSizeMax); err == nil { r.Step(m) }
//		case request:    r.Submit(vsr.Request{Token: e.conn, Client: ..., Body: e.body, WallClock: nowMicros()})
//		case tick:       r.Tick()                   // every 10 ms
//		case appendDone: r.AppendDone(e.op, e.identity, e.err)
//		case stateDone:  r.StateDone(e.err)
//		// … ReadDone, CheckpointDone, ArtifactReadDone, ArtifactWriteDone, InstallDone
//		}
//		for r.HasReady() {
//			rd := r.Ready()
//			if rd.State != nil      { superblock.WriteAsync(rd.State) }        // → StateDone
//			for _, op := range rd.Journal { journal.Submit(op) }             // in order → AppendDone
//			for _, rd := range rd.Reads   { journal.ReadAsync(rd.Op) }       // → ReadDone
//			if rd.Checkpoint != nil { snapshotNow(rd.Checkpoint) }           // capture now, persist async → CheckpointDone
//			for _, e := range rd.Messages { replicaPlane.Send(e.To, e.Message) }
//			for _, rp := range rd.Replies { connections.Reply(rp) }          // by Token
//			// ArtifactReads/ArtifactWrites/Install: state transfer I/O
//		}
//		if err := r.Err(); err != nil { /* drop r and boot the group again from disk */ }
//	}
//
// The contract of one Ready:
//
//   - State, when set, is the new durable state record (State). The node
//     writes it with its superblock's redundancy and reports StateDone. The
//     replica holds back every replica-plane message and every journal
//     operation that depends on it — in particular no message of a view
//     leaves before (view, log_view) is durable, the journal truncate of a
//     view change waits for the record of its new log_view, and the journal
//     truncate of a restart that fences the replica waits for the fencing
//     record — so the node may start the write and still run this Ready's
//     Messages and Journal at once. One state write is in flight at a time.
//   - Journal operations must run in the order given (and in the order of
//     successive Readys): an append after a truncate lands after the
//     truncation. Appends are contiguous in op order. Each append gets one
//     AppendDone, in any order; Sync asks for fdatasync first (Durability
//     Persisted); a shard batches the fdatasyncs of one loop iteration into
//     one (group commit). An AppendDone with an error stops the replica (Err).
//   - Messages may be sent immediately; they are already safe to send.
//   - Replies may be delivered immediately (they follow commits). Every
//     Submit gets exactly one Reply, possibly much later, unless the replica
//     is dropped first.
//   - Checkpoint asks the node to make the state after op Checkpoint.Op
//     durable. The node must capture that state before it calls any other
//     method of the replica (the replica applies nothing more until then) and
//     may write it asynchronously; it stores Checkpoint.Sessions as artifact
//     SessionsArtifact and answers CheckpointDone with the manifest.
//   - The slices of a Ready stay valid until the next call of Ready. Bodies
//     are passed by reference throughout: the replica never copies a request
//     or prepare body (bodies can be 1 MiB batches), and the node must not
//     modify a body after handing it over (Submit, or a frame given to Step).
//
// # Roles, views, primaries
//
// The primary of a group in view v is (v + PrimaryOffset(group, n)) mod n, so
// from view 0 on every replica leads some groups; the metadata group's offset
// is 0 (its view-v primary is v mod n, replica 0 first, as in Iggy). A client request reaches
// the group's primary (a backup answers StatusTransientNotAccepted with a
// primary hint); the primary assigns the next op, stamps the timestamp
// max(WallClock, previous + 1) (strictly monotonic per group, across views
// and restarts) and lets an optional PrepareHook refuse the request or stamp
// 16 bytes of context. It appends the prepare to its journal and sends it to
// every backup in parallel (no chain); backups append and answer PrepareOk.
// Acknowledgements are cumulative: PrepareOk(op) means "my journal holds the
// canonical chain up to op, durably". An op commits once a replication quorum
// (⌈n/2⌉, 2 for n = 2, not capped) acknowledged it in the current view; every
// replica then applies it in op order through StateMachine.Apply. Backups
// learn the commit point from the commit field of later prepares and from the
// primary's Commit heartbeats (every CommitBroadcastInterval), which also
// carry the identity of the committed op, so a backup checks that its log
// matches. The primary retransmits, every PrepareRetransmitInterval with
// backoff, every prepare a backup has not acknowledged — also ones that
// already reached a quorum — and a backup buffers prepares that arrive out of
// order and fetches missing ones (journal repair).
//
// # View change
//
// A backup that hears neither a Commit heartbeat nor a new prepare for
// HeartbeatTimeout campaigns for the next view (StartViewChange); votes
// expire after four ViewChangeRetransmitIntervals unless repeated. A replica moves to view change status only
// when a view-change quorum campaigns for the same view, so a replica cut off
// in one direction cannot depose a healthy primary; a primary that no longer
// hears a replication quorum stops its heartbeats so the others elect a new
// one. On entering view change a replica freezes the log suffix it vouches
// for, persists (view, log_view, that suffix) and only then sends its
// DoViewChange: headers of the suffix plus, per op, a present bit (it has the
// body) and a nack bit (it provably never acknowledged the op: not durable in
// its journal). The new primary merges a quorum of DoViewChanges: the votes
// with the highest log_view are canonical; every op up to the highest commit
// any vote reports is kept; above it ops are kept in order until one is proven
// uncommitted by a nack quorum (n − replication + 1 nacks), where the log is
// truncated. A corrupt journal entry is never a nack. An op that is neither
// provably uncommitted nor held by any voter blocks the view until more votes
// arrive. The new primary truncates its own divergent suffix, persists the new
// log_view and suffix, fetches the bodies it lacks, and only when its journal
// holds the whole log durably sends StartView and resumes; the uncommitted
// suffix is acknowledged again in the new view. A view change that takes
// longer than ViewChangeStatusTimeout moves on to the next view. A replica
// that entered a view change says so in its StartViewChange ("entered"); the
// others follow it at once, so a replica that entered a view on a quorum that
// later dissolved is never left alone in it.
//
// # Restarts, repair, state transfer
//
// A restarted replica rebuilds its log from its journal and its durable state
// record and keeps the longest journal prefix it can prove canonical. Each
// boot carries a fresh incarnation; a backup probes the primary of its view
// with RequestStartView and accepts only a StartView that echoes its
// incarnation or comes from a newer view; after ViewProbeAttemptsMax
// unanswered probes (a whole-cluster restart) it campaigns for a new view. A
// restarted primary never resumes its view. A replica that cannot vouch for
// its log — a corrupt journal entry above what it knows committed, a journal
// tail that may have been synced, or a wiped disk (Boot.Rejoin) — becomes
// recovering_head: it does not vote until a StartView re-anchors it, and stays
// fenced: it never nacks an op up to the head of the log it adopted then,
// since it may have acknowledged and forgotten any of them. The fence is
// durable before the journal forgets anything: every journal operation of
// such a boot, first the truncate of what it can no longer vouch for, waits
// until the state record that says fenced is written. A replica whose disk was wiped has
// also forgotten which views it took part in, so before adopting a StartView
// it learns the views of n − replication + 1 other replicas (a set that meets
// every replication quorum even without it) and accepts no view older than
// theirs: a primary deposed while cut off cannot lead it back. A solo replica commits everything it
// journaled and moves to a new view on every boot.
//
// Missing or corrupt prepares are fetched from peers (RequestPrepares), and
// verified against the canonical header or, for ops whose header is not known
// yet, by the hash chain from the nearest known op above. A peer that no
// longer holds the needed range answers RangeEvicted; the replica then
// fetches that peer's latest checkpoint (state transfer: RequestManifest,
// Manifest, then RequestChunk/Chunk for each artifact in turn, each artifact
// verified against its XXH3-128), asks the node to install it (Install /
// InstallDone) and continues with journal repair above it. A peer keeps
// serving only its latest checkpoint; it answers a RequestChunk of an older
// one with a Manifest of the current one (same nonce), and the transfer
// moves to that one keeping what it staged: an artifact staged in part or in
// whole continues where it stopped (append-only artifacts such as segments
// keep their prefix), is verified whole against the newer manifest, and
// starts over from offset 0 only if that fails. Once the state
// record naming the installed checkpoint is durable the journal drops what the
// checkpoint covers; ops above it that the journal already holds, chained to
// it, stay where they are (a truncate to the checkpoint would drop ops the
// replica may have acknowledged in its durable log_view, even if it appended
// them again at once).
//
// Every CheckpointInterval applied ops the replica asks the node for a
// checkpoint, and sooner once an op named by CheckpointAfter is applied (a
// state machine whose op made the latest checkpoint unservable to state
// transfer asks for one); once the state record naming it is durable, the journal may
// drop ops more than JournalSlots/2 below it. The replica keeps headers of the
// last JournalSlots ops in memory and never takes an op more than
// JournalSlots − 1 above its checkpoint or above its last completed append,
// so a restart can replay from the checkpoint and every pending completion
// finds its op.
//
// # Client sessions
//
// With Config.Sessions (the metadata group), a client registers first
// (OperationRegister, session 0, request 0); the committed op number becomes
// its session number. Each later request carries (client, session, request):
// the replica executes a request number at most once, answers a retry of the
// last one with its cached reply, answers an older one with
// StatusRequestAlreadyApplied, and answers an unknown or superseded session
// with StatusEvicted and the reason. A client has one request in flight at a
// time. When the table is full, registering evicts the session with the oldest
// last applied op — decided while applying, so every replica evicts the same
// one. A session belongs to the user whose Register opened it (the prepare's
// user field): a Register for a client id whose session another user owns is
// answered StatusEvicted / EvictSessionError, on the primary and again at
// commit, and leaves that session as it was. The session table is replicated state: it is saved with every
// checkpoint and shipped by state transfer.
//
// # Producer tables (exactly-once sends)
//
// With Config.Dedup (partition groups) the table is a producer table: there
// is no Register. A request with a zero client (what Iggy's SDKs send: they
// reuse one request number for many requests, so their numbers identify
// nothing) is applied with no checks — at-least-once. A request with a
// non-zero client carries (client, session, request) chosen by the client:
// the session a number the client may only raise (iggo's client uses the
// metadata session of its first login, which the server bounds by the
// metadata log head) and the request a number that grows with every new
// request. The first request of a client opens its entry. A retry of the
// entry's last request is answered with the cached reply (and the op that
// produced it) without executing it again — on the primary before it is
// prepared, and again at apply time if the retry entered the log (a backup
// forwarded it, or the first attempt was still in flight in another view);
// an older request is answered StatusRequestAlreadyApplied; a lower session
// StatusEvicted/EvictSessionTooLow; a higher session restarts the entry; an
// entry of another user is not touched (StatusEvicted/EvictSessionError).
// When the table holds ClientsMax entries, a new client evicts the least
// recently used entry (oldest last applied op, decided while applying) and
// raises the table's floor to that entry's session; a client without an
// entry whose session is at or below the floor is refused
// (StatusEvicted/EvictNoSession) because it may be an evicted client
// retrying a request that was applied. Refusals execute nothing, so every
// (client, session, request) is applied at most once. The producer table is
// replicated state like the session table: checkpointed (SessionsArtifact)
// and shipped by state transfer.
//
// # Journal contract
//
// The journal of a group (package journal) stores opaque entries keyed by op:
// entry = 256-byte prepare header ‖ body, exactly as JournalAppend gives them.
// The replica needs:
//
//   - Append in op order (contiguous; after a Discard or a reset the next op
//     may jump), Truncate (keep ops ≤ Op) and Discard (drop ops ≤ Op), in the
//     order issued. A truncate must be durable before any later append is
//     reported complete.
//   - AppendDone only once the entry is written (and synced when asked);
//     completing op n implies nothing about op n+1 but, under fdatasync,
//     everything earlier is durable too.
//   - Read of any retained op, answered with the stored bytes or an error.
//   - Recovery that returns the entries [floor, head] contiguously, with a nil
//     header for an entry that is present but corrupt, and that tells a torn
//     tail from damage: if the damaged tail can be proven never synced (for
//     example each entry's header is written twice, or every sync writes a
//     synced-up-to marker), drop it silently; if it might have been synced
//     (and so acknowledged), leave it out of Boot.Journal, set
//     Boot.HeadUncertain and keep it on disk: the replica removes it with a
//     truncate that it issues only once the state record fencing it is
//     durable (a tail cut at recovery could outlive a crash that the fence
//     does not, and the replica would come back unfenced with a clean,
//     shorter journal and nack ops it had acknowledged). Equivalent: the
//     node makes a state record with Fenced and HeadPending durable before
//     the tail is cut, then sets HeadUncertain (package replica does so: a
//     crash after the cut boots from that record, recovering_head). A
//     journal that cannot tell must set HeadUncertain on every damaged tail: safe, but
//     after a whole-cluster power loss every replica would then wait for a
//     StartView that nobody can send. Dropping a possibly acknowledged tail
//     silently is not safe even on one replica: if that replica and the one
//     other holder of a committed op are the ones to vote next, the op is
//     lost. A journal can make every torn tail provable by completing an
//     append (AppendDone) only once a durable record promises its sync: then
//     damage no durable promise covers was never acknowledged.
//   - Rewrite of one corrupt entry in place with a verified copy fetched from
//     a peer (JournalRewrite, same bytes as first appended; completion through
//     AppendDone).
//
// A corrupt entry found at boot above the committed prefix that was not
// rewritten yet truncates the journal there (and makes the replica
// recovering_head if acknowledged ops may be lost with it).
//
// # Replica-plane frames
//
// Every frame is a 256-byte header followed by size − 256 body bytes, all
// integers little-endian. Common prefix (every command):
//
//	0   [16] checksum       XXH3-128 of header bytes [16, 256): seals the header and,
//	                        through checksum_body, the body
//	16  [16] checksum_body  XXH3-128 of the body; zero iff the body is empty
//	32  [16] cluster        cluster id
//	48  u32  size           256 + body length
//	52  u32  view           the sender's view (for StartViewChange/DoViewChange: the view campaigned for)
//	56  u16  protocol       ProtocolVersion (1); other values are refused
//	58  u8   command        Command
//	59  u8   replica        sender's index
//	60  u8   replica_count  the group's replica count
//	61  [3]  reserved, zero
//	64  u64  group          consensus group id (MetadataGroup or a partition namespace)
//	72  u64  incarnation    sender's boot nonce
//	80  …    command-specific, unused bytes zero
//
// Prepare (1), body = request body:
//
//	80  [16] identity   XXH3-128 of the header with checksum, view, replica, incarnation and
//	                    identity zeroed: covers body, op, parent and the view it was prepared in
//	96  [16] parent     identity of op − 1 (zero for op 1): the hash chain
//	112 [16] client
//	128 u64  op
//	136 u64  commit     primary's commit_max when it prepared op (< op)
//	144 u64  timestamp  µs, strictly monotonic per group
//	152 u64  request
//	160 u64  session
//	168 u32  prepare_view
//	172 u32  user       node-defined (acting user id)
//	176 u8   operation  (0 reserved, 1 register, others opaque)
//	177 [7]  reserved
//	184 [16] context    stamped by the PrepareHook
//	200 [56] reserved
//
// A stored (journaled) prepare header is normalized: view = prepare_view,
// replica = 0, incarnation = 0, resealed; every replica stores the same bytes.
//
// PrepareOk (2): 80 [16] identity of op; 96 u64 op (acknowledged through);
// 104 u64 sender's commit_max.
//
// Commit (3): 80 [16] identity of commit; 96 u64 commit; 104 u64 primary's
// head op; 112 u64 heartbeat counter; 120 u64 checkpoint.
//
// StartViewChange (4): 80 u32 flags (bit 0: the sender already entered view
// change status for this view, on a quorum; receivers may follow at once).
//
// DoViewChange (5), body = headers of ops op, op−1, …, commit+1 (≤ PipelineMax),
// each a normalized prepare header chained to the next and the last to the
// commit identity: 80 [16] commit identity; 96 u64 commit; 104 u64 op;
// 112 u32 log_view (< view); 116 [4] zero; 120 u64 checkpoint; 128 [16] nack
// bits; 144 [16] present bits (bit i: body header i); 160 u64 highest
// timestamp known; 168 u64 nack floor: the sender nacks no op at or below it
// (a fenced replica; all ones: no op at all).
//
// StartView (6), body as DoViewChange: 80 [16] commit identity; 96 u64
// commit; 104 u64 op; 112 u64 nonce (echoed incarnation, 0 when unsolicited);
// 120 u64 checkpoint; 128 u64 highest timestamp.
//
// RequestStartView (7): 80 u64 nonce (the requester's incarnation); 88 u32
// flags: bit 0 "rejoin" (the requester lost its disk: every replica answers
// with a report), bit 1 "report" (an answer to a rejoining replica; the
// header's view is the sender's current view).
//
// RequestPrepares (8): 80 u64 nonce; 88 u64 from (≥ 1); 96 u64 to (≥ from).
// Answered with Prepare frames.
//
// RangeEvicted (9): 80 u64 nonce; 88 u64 floor: the lowest op the sender
// still serves.
//
// RequestManifest (10): 80 u64 nonce. Manifest (11): 80 u64 nonce; 88 u64
// checkpoint op (0: none); 96 [16] its identity; 112 u32 artifact count; 116
// u64 its timestamp; body = per artifact 32 bytes: u32 id (ascending), [4]
// zero, u64 size, [16] XXH3-128.
//
// RequestChunk (12) and Chunk (13): 80 u64 nonce; 88 u64 checkpoint op; 96
// u64 offset; 104 u32 artifact; 108 u32 length; a Chunk's body is the bytes.
// A RequestChunk of a checkpoint the peer no longer serves (or whose read
// failed after the peer moved on) is answered with a Manifest.
//
// Forward (14) and ForwardReply (15) are node-to-node messages on the same
// links (a backup relaying a client request to the primary, and the
// answer); the replica never emits or consumes them. Their layouts are in
// forward.go.
//
// SessionReport (16) is node-to-node as well: a node telling the metadata
// primary which consumer-group clients it serves (layout in
// session_report.go); the replica never emits or consumes it either.
//
// The durable state record's layout is documented on EncodeState, the
// session table's on (*clientTable).encode.
package vsr
