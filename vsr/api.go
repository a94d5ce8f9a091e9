package vsr

import "fmt"

// Status is the outcome of a client request as the replica reports it in a
// Reply. The values are Iggy's numeric error codes so the node can put them on
// the client wire unchanged.
type Status uint32

const (
	StatusOK Status = 0
	// StatusTransientNotCommitted: the request was accepted but its op was
	// discarded by a view change before it committed; replaying it (same
	// session and request number) is safe.
	StatusTransientNotCommitted Status = 57
	// StatusTransientNotAccepted: this replica cannot take the request now (it
	// is not the primary, not in normal status, or its queues are full);
	// retrying, perhaps at Reply.Primary, is safe.
	StatusTransientNotAccepted Status = 58
	// StatusRequestAlreadyApplied: the request number is at or below the
	// session's last committed request and its reply is no longer cached.
	StatusRequestAlreadyApplied Status = 59
	// StatusEvicted: the session is gone; Reply.Eviction says why and the
	// node answers with an Eviction frame.
	StatusEvicted Status = 0xffff_ffff
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusTransientNotCommitted:
		return "transient_not_committed"
	case StatusTransientNotAccepted:
		return "transient_not_accepted"
	case StatusRequestAlreadyApplied:
		return "request_already_applied"
	case StatusEvicted:
		return "evicted"
	}
	return fmt.Sprintf("status(%d)", uint32(s))
}

// EvictionReason says why a session ended; the values are Iggy's eviction
// reasons (wire byte 255 of an Eviction header).
type EvictionReason uint8

const (
	EvictNone EvictionReason = 0
	// EvictNoSession: the client never registered, or its session was evicted
	// to make room (capacity eviction is decided at apply time by a rule all
	// replicas share, so they agree on which sessions exist).
	EvictNoSession EvictionReason = 1
	// EvictSessionTooLow: the request carries an older session of the client
	// (a zombie connection).
	EvictSessionTooLow EvictionReason = 7
	// EvictSessionError: the request carries a session number the client was
	// never given.
	EvictSessionError EvictionReason = 12
)

// Operation codes the replica itself interprets. Every other value (1..255
// except these) is opaque and passed to the StateMachine.
const (
	OperationReserved uint8 = 0
	// OperationRegister opens a session; with sessions on it must carry
	// session 0 and request 0, and the committed op number becomes the
	// session number.
	OperationRegister uint8 = 1
)

// Request is a client request handed to the replica by the node.
type Request struct {
	// Token is opaque to the replica and comes back in the Reply, so the node
	// can route it to the connection that sent the request.
	Token uint64
	// Client, Session and Request identify the request when sessions are on;
	// they are copied into the prepare either way.
	Client    Checksum
	Session   uint64
	Request   uint64
	Operation uint8
	// User is copied into the prepare for the state machine (for example the
	// acting user id).
	User uint32
	// WallClock is the node's clock in microseconds when the request arrived.
	// The primary stamps max(WallClock, previous timestamp + 1) into the
	// prepare, so timestamps are strictly monotonic per group.
	WallClock uint64
	// Body is retained by reference until the op is applied and written; the
	// caller must not modify it afterwards.
	Body []byte
}

// Reply answers one Request, or reports a refusal. Exactly one Reply is
// produced for every Request the replica accepted (Submit), unless the replica
// is dropped (crash) first.
type Reply struct {
	Token     uint64
	Client    Checksum
	Session   uint64
	Request   uint64
	Operation uint8
	// Op and Commit locate the reply in the log (0 for refusals).
	Op        uint64
	Commit    uint64
	Timestamp uint64
	Status    Status
	Eviction  EvictionReason
	// Primary is this replica's best guess of the primary, for redirects.
	Primary uint8
	// Body is the state machine's reply (empty for refusals). For a Register
	// the session number is Op.
	Body []byte
}

// JournalOpKind is the kind of a journal operation.
type JournalOpKind uint8

const (
	// JournalAppend writes entry Op = Header ‖ Body; Op is exactly one above
	// the journal's last op (or its first op after a discard or reset). The
	// node reports completion with AppendDone.
	JournalAppend JournalOpKind = iota + 1
	// JournalTruncate removes every entry above Op (keeps ops ≤ Op).
	JournalTruncate
	// JournalDiscard removes every entry at or below Op (the prefix); if Op is
	// at or above the last op the journal becomes empty and the next append is
	// Op+1.
	JournalDiscard
	// JournalRewrite writes entry Op = Header ‖ Body over a corrupt copy of
	// the same entry (the bytes it was first appended with), in place
	// (package journal: Repair). Completion is reported with AppendDone.
	JournalRewrite
)

func (k JournalOpKind) String() string {
	switch k {
	case JournalAppend:
		return "append"
	case JournalTruncate:
		return "truncate"
	case JournalDiscard:
		return "discard"
	case JournalRewrite:
		return "rewrite"
	}
	return fmt.Sprintf("journal_op(%d)", uint8(k))
}

// JournalOp is one operation on the group's prepare journal. The node must
// execute journal operations in the order it receives them.
type JournalOp struct {
	Kind JournalOpKind
	Op   uint64
	// Header and Body are set for JournalAppend. Header is the normalized
	// prepare header (envelope fields zero, see the package doc); the replica
	// does not modify either afterwards.
	Header *Header
	Body   []byte
	// Sync asks for fdatasync before AppendDone (Durability == Persisted).
	Sync bool
}

// Read asks the node to read journal entry Op back; the node answers with
// ReadDone. Identity is what the replica expects to find.
type Read struct {
	Op       uint64
	Identity Checksum
}

// Envelope is an outbound replica-plane message.
type Envelope struct {
	To      uint8
	Message Message
}

// Artifact describes one opaque piece of a checkpoint (a metadata snapshot, a
// segment file, the session table). Artifact SessionsArtifact belongs to the
// replica; the node owns the others.
type Artifact struct {
	ID       uint32
	Size     uint64
	Checksum Checksum
}

// SessionsArtifact is the artifact id of the session table in every manifest
// of a group with sessions on.
const SessionsArtifact uint32 = 0

// Manifest lists the artifacts of a durable checkpoint: the state after
// applying every op up to and including Op.
type Manifest struct {
	Op        uint64
	Identity  Checksum // identity of prepare Op
	Timestamp uint64   // timestamp of prepare Op
	Artifacts []Artifact
}

// CheckpointRequest asks the node to make the state machine's state after op
// Op durable. Sessions is the session table at that op (nil without
// sessions); the node stores it as artifact SessionsArtifact. The node answers
// with CheckpointDone and the checkpoint's manifest.
type CheckpointRequest struct {
	Op       uint64
	Sessions []byte
}

// ArtifactRead asks the node for Length bytes at Offset of an artifact of the
// checkpoint at op Checkpoint (to serve a peer's state transfer). The node
// answers with ArtifactReadDone(Token, ...).
type ArtifactRead struct {
	Token      uint64
	Checkpoint uint64
	Artifact   uint32
	Offset     uint64
	Length     uint32
}

// ArtifactWrite hands the node received bytes of an artifact of a checkpoint
// being installed by state transfer. The node answers with
// ArtifactWriteDone(Token, err). The node stages artifacts by id, not by
// checkpoint: writes of one artifact arrive in offset order, each at the end
// of what is staged for that id; a write at offset 0 starts the artifact
// over. When the peer moves on to a newer checkpoint during the transfer,
// writes for the newer one (Checkpoint changes) may continue artifacts
// staged for the older one; the replica has verified every artifact of the
// manifest it installs, whole, before it sends the InstallRequest.
type ArtifactWrite struct {
	Token      uint64
	Checkpoint uint64
	Artifact   uint32
	Offset     uint64
	Data       []byte
}

// InstallRequest asks the node to replace the state machine's state with the
// checkpoint whose artifacts it has received (every checksum already verified
// by the replica). The node installs the first Size bytes staged for each
// artifact of the manifest (an artifact of size 0 gets no write and is
// empty, whatever an earlier transfer left staged under its id). The node answers with InstallDone. The previous checkpoint
// must stay restorable until the replica's next state write completes,
// because until then the durable state record still names it.
type InstallRequest struct {
	Manifest Manifest
}

// Ready is everything one pass of the replica wants done. See the package doc
// for the contract; in short: persist State, run Journal operations in order,
// issue Reads, send Messages, deliver Replies, and run the checkpoint and
// transfer requests, then report each completion through the matching method.
// The slices are reused: they are valid until the next call of Ready.
type Ready struct {
	// State, when non-nil, is a durable state record to write (one at a time;
	// StateDone reports completion). Messages that depend on it are held back
	// by the replica, so the node may write it concurrently with everything
	// else in this Ready.
	State          []byte
	Journal        []JournalOp
	Reads          []Read
	Messages       []Envelope
	Replies        []Reply
	Checkpoint     *CheckpointRequest
	ArtifactReads  []ArtifactRead
	ArtifactWrites []ArtifactWrite
	Install        *InstallRequest
}

// Empty reports whether the Ready holds nothing.
func (rd *Ready) Empty() bool {
	return rd.State == nil && len(rd.Journal) == 0 && len(rd.Reads) == 0 &&
		len(rd.Messages) == 0 && len(rd.Replies) == 0 && rd.Checkpoint == nil &&
		len(rd.ArtifactReads) == 0 && len(rd.ArtifactWrites) == 0 && rd.Install == nil
}

// StateMachine is what the node plugs into a group: the partition or metadata
// state machine. Apply is called by the replica, in op order, exactly once per
// op per boot (ops replayed after a restart are applied again on top of the
// restored checkpoint), and must be deterministic: given the same sequence of
// (header, body) every replica returns the same reply bytes and reaches the
// same state. It must not write into body, which the replica keeps for
// retransmission and repair and peers verify against its checksum (a
// replica set of one, which sends it nowhere, may stamp it in place), and
// it may keep referring to body after returning: the replica never writes
// into a body or reuses its memory (a replicated partition's segment write
// sends the body's frames after a stamped copy of its header).
//
// Checkpoints and state transfer involve I/O and are therefore requests in
// Ready (Checkpoint, ArtifactReads, ArtifactWrites, Install) answered through
// completion methods, not StateMachine methods.
type StateMachine interface {
	Apply(h *Header, body []byte) (reply []byte)
}

// PrepareHook, when the StateMachine also implements it, is called on the
// primary as a request becomes a prepare, with the op number and timestamp
// already chosen. It may refuse the request (status ≠ StatusOK: the client
// gets that status and nothing enters the log) or stamp 16 bytes of context
// into the prepare (for example a reserved id range); the context is part of
// the prepare's identity and reaches Apply on every replica.
type PrepareHook interface {
	Prepare(op, timestamp uint64, operation uint8, body []byte) (context [16]byte, status Status)
}

// JournalEntry is one entry of a recovered journal: the header of op Op, or
// nil when the entry exists but is corrupt (a faulty entry, repaired from
// peers).
type JournalEntry struct {
	Op     uint64
	Header *Header
}

// Boot is what the node recovered from disk for one group.
type Boot struct {
	// Incarnation is a per-boot nonce, non-zero and different on every boot
	// of this replica (the node draws it from its entropy source).
	Incarnation uint64
	// State is the last durable state record (nil: the group's storage is
	// empty).
	State []byte
	// Rejoin, with State == nil, says the disk was wiped but the group exists
	// (iggo-server --fresh in a cluster): the replica must not vote until it
	// has caught up, because it may have forgotten what it acknowledged.
	Rejoin bool
	// Journal holds the entries [floor, head] in ascending op order with no
	// gaps; faulty entries have a nil Header.
	Journal []JournalEntry
	// HeadUncertain: the journal found damage after its last entry that it
	// cannot prove was an unsynced (never acknowledged) append. See the
	// journal contract in the package doc.
	HeadUncertain bool
	// Checkpoint is the manifest of the checkpoint the node restored the state
	// machine to (the one the state record names), nil when none exists.
	Checkpoint *Manifest
	// Sessions is the session table stored with that checkpoint.
	Sessions []byte
}
