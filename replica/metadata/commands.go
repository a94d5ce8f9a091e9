package metadata

import "github.com/iggo/iggo/wire"

// Meta is what the committed prepare says about a command besides its
// body: all of it is stamped by the primary before replication and is the
// same on every replica.
type Meta struct {
	// Op is the VSR op number of the prepare; recorded as LastApplied.
	Op uint64
	// Timestamp is the primary's clock at prepare time, µs since the Unix
	// epoch. It is the only clock Apply reads.
	Timestamp uint64
	// UserID is the authenticated user that issued the request.
	UserID uint32
	// Client is the VSR client id of the issuing connection; it keys
	// consumer-group membership.
	Client ClientID
	// System marks server-originated commands (bootstrap, disconnect
	// cleanup, token expiry): they skip the permission gate, and the
	// system-only commands are refused without it.
	System bool
	// Legacy marks a command decoded from a prepare body older than
	// version 3: it is applied with the rules of its time (no root guard,
	// no node-wide partition cap), so a journal written before them
	// replays to the state it committed.
	Legacy bool
}

// Command is one metadata state-machine command. Each type below mirrors
// an Iggy request (decoded from its wire body) plus the values the
// primary stamps before replication.
type Command interface{ isCommand() }

// Bootstrap creates the root user (id 0) and sets the limits. It must be
// the first command of a fresh cluster; later it is refused with
// UserAlreadyExists. System only.
type Bootstrap struct {
	RootUsername     string
	RootPasswordHash string // Argon2id PHC string computed by the node
	Limits           Limits
}

// SetLimits replaces the replicated limits (affects future creations
// only). System only.
type SetLimits struct{ Limits Limits }

// CreateStream is CREATE_STREAM (202).
type CreateStream struct {
	Name    string
	Options wire.Options
}

// UpdateStream is UPDATE_STREAM (204).
type UpdateStream struct {
	Stream  Identifier
	Name    string
	Options wire.Options
}

// DeleteStream is DELETE_STREAM (203).
type DeleteStream struct{ Stream Identifier }

// PurgeStream is PURGE_STREAM (205).
type PurgeStream struct{ Stream Identifier }

// CreateTopic is CREATE_TOPIC (302). Defaults are stamped by the primary
// from its configuration.
type CreateTopic struct {
	Stream          Identifier
	PartitionsCount uint32
	Name            string
	Options         wire.Options
	Defaults        TopicDefaults
	// PartitionsMax is the admitting node's cap on partitions across all
	// topics (0: none), stamped so every replica checks the same cap.
	PartitionsMax uint32
}

// UpdateTopic is UPDATE_TOPIC (304). Defaults are stamped by the primary:
// a key set to its server-default sentinel returns to them.
type UpdateTopic struct {
	Stream, Topic Identifier
	Name          string
	Options       wire.Options
	Defaults      TopicDefaults
}

// DeleteTopic is DELETE_TOPIC (303).
type DeleteTopic struct{ Stream, Topic Identifier }

// PurgeTopic is PURGE_TOPIC (305).
type PurgeTopic struct{ Stream, Topic Identifier }

// CreatePartitions is CREATE_PARTITIONS (402): appends Count partitions
// with the next ids.
type CreatePartitions struct {
	Stream, Topic Identifier
	Count         uint32
	// PartitionsMax is the admitting node's node-wide cap (0: none), as
	// for CreateTopic.
	PartitionsMax uint32
}

// DeletePartitions is DELETE_PARTITIONS (403): removes the Count highest
// partition ids.
type DeletePartitions struct {
	Stream, Topic Identifier
	Count         uint32
}

// CreateConsumerGroup is CREATE_CONSUMER_GROUP (602).
type CreateConsumerGroup struct {
	Stream, Topic Identifier
	Name          string
}

// DeleteConsumerGroup is DELETE_CONSUMER_GROUP (603).
type DeleteConsumerGroup struct{ Stream, Topic, Group Identifier }

// JoinConsumerGroup is JOIN_CONSUMER_GROUP (604); the member is
// Meta.Client. Node and Boot are stamped by the node holding the client's
// connection (its replica id and incarnation) and recorded in the Member,
// so EvictNodeMembers can find the members of a node that crashed or
// restarted. Joining twice is a no-op, apart from re-stamping Node and
// Boot when they differ (the client reconnected through another node).
//
// InFlight, stamped by the admitting node too, lists the group's
// partitions that may hold polled but uncommitted messages (prepare body
// version 4): a partition the join takes from its owner moves at once
// when it is not listed, and is otherwise handed off cooperatively (the
// owner keeps it until it commits or the rebalancing timeout passes;
// CompleteRevocation).
type JoinConsumerGroup struct {
	Stream, Topic, Group Identifier
	Node                 uint8
	Boot                 uint64
	InFlight             []uint32
	// Redeal: decoded from a prepare body before version 4, whose joins
	// re-dealt every partition (round robin); never encoded.
	Redeal bool
}

// CompleteRevocation (system-only) completes the pending hand-off of
// Partition from the member Client of group Group in topic Topic of
// stream Stream: the partition moves to its target member. Proposed by the
// node holding the source's connection once the source has committed what
// it polled, and by the metadata primary once consumer_group.
// rebalancing_timeout has passed since the hand-off began (its clock); a
// hand-off that is no longer pending makes it a no-op.
//
// Committed, when HasCommitted, is the group's stored offset in the
// partition as the proposing node saw it (the source's last commit): the
// apply hands it on in EffectHandedOff, so that the new owner's node
// serves the partition only once its own replica caught up with that
// commit.
type CompleteRevocation struct {
	Stream, Topic, Group uint32
	Client               ClientID
	Partition            uint32
	HasCommitted         bool
	Committed            uint64
}

// LeaveConsumerGroup is LEAVE_CONSUMER_GROUP (605); the member is
// Meta.Client.
type LeaveConsumerGroup struct{ Stream, Topic, Group Identifier }

// DisconnectClient removes Client from every consumer group (logout,
// socket close, stale-client eviction). System only.
type DisconnectClient struct{ Client ClientID }

// EvictNodeMembers removes from every consumer group each member with
// Member.Node == Node and Member.Boot < Before (the members whose
// connections lived on an earlier boot of that node and died with it),
// rebalancing as DisconnectClient does. Members with Boot == BootUnknown
// are never removed by it. System only: a node issues it for itself after
// a restart (Before = its own incarnation), and the metadata primary for a
// node gossip reported dead or left for cluster.member_eviction_timeout or
// that sent no consumer session report for consumer_group.session_timeout.
type EvictNodeMembers struct {
	Node   uint8
	Before uint64
}

// ExpireMembers removes from every consumer group each member whose
// client is in Clients and that is still stamped with Node and Boot,
// rebalancing as DisconnectClient does. System only: the metadata primary
// issues it for members a node stopped reporting in its consumer session
// reports for consumer_group.session_timeout (their connection closed but
// the leave was lost) while the node itself keeps reporting. A member
// that joined again through another node or boot in the meantime is
// re-stamped and stays. Clients are distinct, at most ExpireMembersMax.
type ExpireMembers struct {
	Node    uint8
	Boot    uint64
	Clients []ClientID
}

// ExpireMembersMax bounds ExpireMembers.Clients (its stamp must fit the
// prepare body's u16 stamp length).
const ExpireMembersMax = (maxStampLength - 1 - 8 - 2) / 16

// CreateUser is CREATE_USER (33); PasswordHash is computed by the node.
type CreateUser struct {
	Username     string
	PasswordHash string
	Status       UserStatus
	Permissions  *Permissions
	Options      wire.Options
}

// UpdateUser is UPDATE_USER (35); nil fields are left unchanged.
type UpdateUser struct {
	User     Identifier
	Username *string
	Status   *UserStatus
	Options  wire.Options
}

// DeleteUser is DELETE_USER (34).
type DeleteUser struct{ User Identifier }

// ChangePassword is CHANGE_PASSWORD (37). The primary verifies the
// current password against the target's stored hash and stamps that hash
// as VerifiedHash ("" when verification failed). Apply accepts only if the
// user's hash is still VerifiedHash, so a password changed in between
// cannot be overwritten with stale credentials.
type ChangePassword struct {
	User            Identifier
	VerifiedHash    string
	NewPasswordHash string
}

// UpdatePermissions is UPDATE_PERMISSIONS (36); nil removes all grants.
type UpdatePermissions struct {
	User        Identifier
	Permissions *Permissions
}

// CreatePersonalAccessToken is CREATE_PERSONAL_ACCESS_TOKEN (42) for
// Meta.UserID. The node generates the token and stamps only its hash.
// Expiry is a duration in µs; 0 and math.MaxUint64 mean never.
type CreatePersonalAccessToken struct {
	Name   string
	Expiry uint64
	Hash   TokenHash
}

// DeletePersonalAccessToken is DELETE_PERSONAL_ACCESS_TOKEN (43) for
// Meta.UserID.
type DeletePersonalAccessToken struct{ Name string }

// DeleteExpiredTokens removes every token expired at Meta.Timestamp.
// System only; the node issues it periodically when ExpiredTokens is not
// empty.
type DeleteExpiredTokens struct{}

// RevokeAccessToken records an HTTP access token (by ID, the first 16
// bytes of SHA-256 of its jti) as logged out until Expiry (unix seconds,
// the token's own exp). System only: the HTTP API's logout submits it, so
// every node refuses the token from then on. Entries whose expiry passed at
// Meta.Timestamp are dropped by this command and by DeleteExpiredTokens.
type RevokeAccessToken struct {
	ID     [16]byte
	Expiry uint64
}

// MaxRevokedAccessTokens bounds the revocation list; a revocation beyond it
// (that many logged-out tokens not yet expired) is refused with
// CodeError, never dropped.
const MaxRevokedAccessTokens = 1 << 16

func (Bootstrap) isCommand()                 {}
func (SetLimits) isCommand()                 {}
func (CreateStream) isCommand()              {}
func (UpdateStream) isCommand()              {}
func (DeleteStream) isCommand()              {}
func (PurgeStream) isCommand()               {}
func (CreateTopic) isCommand()               {}
func (UpdateTopic) isCommand()               {}
func (DeleteTopic) isCommand()               {}
func (PurgeTopic) isCommand()                {}
func (CreatePartitions) isCommand()          {}
func (DeletePartitions) isCommand()          {}
func (CreateConsumerGroup) isCommand()       {}
func (DeleteConsumerGroup) isCommand()       {}
func (JoinConsumerGroup) isCommand()         {}
func (LeaveConsumerGroup) isCommand()        {}
func (DisconnectClient) isCommand()          {}
func (EvictNodeMembers) isCommand()          {}
func (ExpireMembers) isCommand()             {}
func (CompleteRevocation) isCommand()        {}
func (CreateUser) isCommand()                {}
func (UpdateUser) isCommand()                {}
func (DeleteUser) isCommand()                {}
func (ChangePassword) isCommand()            {}
func (UpdatePermissions) isCommand()         {}
func (CreatePersonalAccessToken) isCommand() {}
func (DeletePersonalAccessToken) isCommand() {}
func (DeleteExpiredTokens) isCommand()       {}
func (RevokeAccessToken) isCommand()         {}

// Result is the deterministic outcome of Apply: identical on every
// replica, so every replica can build the same reply.
type Result struct {
	// Code is 0 on success, else the Iggy error code of a committed
	// rejection (the state is then unchanged apart from LastApplied).
	Code wire.Code
	// The records the reply needs (pointers into the new state):
	// CreateStream → Stream; CreateTopic → Stream, Topic; consumer-group
	// commands → Topic (for its partition count) and Group; CreateUser →
	// User; CreatePersonalAccessToken → User and Token.
	Stream *Stream
	Topic  *Topic
	Group  *ConsumerGroup
	User   *User
	Token  *PersonalAccessToken
	// Effects tell the node what to do outside the metadata state:
	// create or tear down partition storage, purge, drop group offsets,
	// evict sessions.
	Effects []Effect
}

// EffectKind says what an Effect asks the node to do.
type EffectKind uint8

// Effect kinds.
const (
	// EffectPartitionCreated: create storage and the consensus group for
	// (Stream, Topic, Partition) at Revision.
	EffectPartitionCreated EffectKind = iota + 1
	// EffectPartitionDeleted: tear down (Stream, Topic, Partition) whose
	// incarnation is Revision (also emitted for every partition of a
	// deleted topic or stream).
	EffectPartitionDeleted
	// EffectPartitionPurged: reset (Stream, Topic, Partition) to empty,
	// clearing its consumer offsets; Generation is the new purge count.
	EffectPartitionPurged
	// EffectTopicUpdated: the topic's updatable settings (retention,
	// compression) changed; push them to its partitions.
	EffectTopicUpdated
	// EffectGroupDeleted: drop offsets stored under (Stream, Topic, Group).
	EffectGroupDeleted
	// EffectGroupRebalanced: the assignment of (Stream, Topic, Group)
	// changed; Generation is the new generation.
	EffectGroupRebalanced
	// EffectUserDeleted: end the sessions of User.
	EffectUserDeleted
	// EffectUserDeactivated: User became inactive; end its sessions.
	EffectUserDeactivated
	// EffectTokenDeleted: the personal access token Token of User was
	// deleted (or expired and was removed); end the sessions opened with it.
	EffectTokenDeleted
	// EffectHandedOff: partition Partition of (Stream, Topic, Group) was
	// handed to a new member after its old owner committed offset Offset
	// there (CompleteRevocation).
	EffectHandedOff
)

// Effect is one action the node takes after a committed command.
type Effect struct {
	Kind       EffectKind
	Stream     uint32
	Topic      uint32
	Partition  uint32
	Group      uint32
	User       uint32
	Revision   uint64
	Generation uint64
	Token      TokenHash
	Offset     uint64
}
