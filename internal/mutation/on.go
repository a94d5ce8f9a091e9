//go:build stackmutations

package mutation

var active Kind

// Set activates breakage k (None for none). The simulator runs in one
// goroutine; nothing else may call it.
func Set(k Kind) { active = k }

// On reports whether breakage k is active.
func On(k Kind) bool { return active == k }
