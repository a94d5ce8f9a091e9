//go:build vsrmutations

package vsr

// Mutation selects one deliberate breakage of a safety rule. Builds with the
// vsrmutations tag expose it so the simulator can prove it catches each one;
// no other build contains this file.
type Mutation uint8

const (
	MutationNone Mutation = iota
	// MutationTruncateWithoutNackQuorum: a view change drops an op on a
	// single nack instead of a nack quorum.
	MutationTruncateWithoutNackQuorum
	// MutationAckBeforeDurable: backups acknowledge (PrepareOk) ops whose
	// journal append has not completed.
	MutationAckBeforeDurable
	// MutationCommitWithoutQuorum: the primary commits an op as soon as any
	// replica (itself included) has it.
	MutationCommitWithoutQuorum
	// MutationForgetViewDurability: entering a view change does not persist
	// the new view before sending StartViewChange/DoViewChange.
	MutationForgetViewDurability
	// MutationTruncateBeforeFence: a boot that fences the replica issues its
	// journal truncate at once instead of after the fencing state record is
	// durable.
	MutationTruncateBeforeFence
	// MutationTruncateBeforeView: a view change issues the journal truncate
	// of its divergent suffix at once instead of after the state record of
	// its new log_view is durable.
	MutationTruncateBeforeView
	// MutationDedupReapply: a producer table executes a retry of the
	// client's last request again instead of answering its cached reply.
	MutationDedupReapply
	// MutationDedupForgetFloor: evicting a producer does not raise the
	// floor, so the evicted producer's retry is executed again.
	MutationDedupForgetFloor
	// MutationDedupDropTable: checkpoints carry an empty producer table, so
	// a restart or a state transfer forgets which requests were applied.
	MutationDedupDropTable
)

// Mutations lists every mutation, for campaigns that try them all.
var Mutations = []Mutation{
	MutationTruncateWithoutNackQuorum,
	MutationAckBeforeDurable,
	MutationCommitWithoutQuorum,
	MutationForgetViewDurability,
	MutationTruncateBeforeFence,
	MutationTruncateBeforeView,
	MutationDedupReapply,
	MutationDedupForgetFloor,
	MutationDedupDropTable,
}

func (m Mutation) String() string {
	return [...]string{"none", "truncate_without_nack_quorum", "ack_before_durable",
		"commit_without_quorum", "forget_view_durability", "truncate_before_fence",
		"truncate_before_view", "dedup_reapply", "dedup_forget_floor", "dedup_drop_table"}[m]
}

var activeMutation Mutation

// SetMutation activates a mutation for every replica in the process (the
// simulator runs single-threaded).
func SetMutation(m Mutation) { activeMutation = m }

func mutationCommitWithoutQuorum() bool { return activeMutation == MutationCommitWithoutQuorum }
func mutationAckBeforeDurable() bool    { return activeMutation == MutationAckBeforeDurable }
func mutationTruncateWithoutNackQuorum() bool {
	return activeMutation == MutationTruncateWithoutNackQuorum
}
func mutationForgetViewDurability() bool { return activeMutation == MutationForgetViewDurability }
func mutationTruncateBeforeFence() bool  { return activeMutation == MutationTruncateBeforeFence }
func mutationTruncateBeforeView() bool   { return activeMutation == MutationTruncateBeforeView }
func mutationDedupReapply() bool         { return activeMutation == MutationDedupReapply }
func mutationDedupForgetFloor() bool     { return activeMutation == MutationDedupForgetFloor }
func mutationDedupDropTable() bool       { return activeMutation == MutationDedupDropTable }
