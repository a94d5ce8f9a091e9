//go:build !stackmutations

package mutation

// On reports whether breakage k is active: never, in this build.
func On(Kind) bool { return false }
