// Package layout checks rules of the repository's layout that the compiler
// does not: production code never imports a package under tests/.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionImportsNoTests lists every package the binaries and
// libraries link (test files excluded) and fails on any under tests/.
func TestProductionImportsNoTests(t *testing.T) {
	const module = "github.com/iggo/iggo/"
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"cmd/...", module+"internal/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !containsPrefix(deps, module+"replica") {
		t.Fatalf("go list found only %d packages, without replica: the check would prove nothing", len(deps))
	}
	for _, p := range deps {
		if strings.HasPrefix(p, module+"tests/") {
			t.Errorf("production code links %s", p)
		}
	}
}

func containsPrefix(ps []string, prefix string) bool {
	for _, p := range ps {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}
