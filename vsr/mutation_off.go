//go:build !vsrmutations

package vsr

// Deliberate safety breakages exist only in builds with the vsrmutations
// tag (see mutation_on.go); in every other build these are constant false and
// compile away.

func mutationCommitWithoutQuorum() bool       { return false }
func mutationAckBeforeDurable() bool          { return false }
func mutationTruncateWithoutNackQuorum() bool { return false }
func mutationForgetViewDurability() bool      { return false }
func mutationTruncateBeforeFence() bool       { return false }
func mutationTruncateBeforeView() bool        { return false }
func mutationDedupReapply() bool              { return false }
func mutationDedupForgetFloor() bool          { return false }
func mutationDedupDropTable() bool            { return false }
