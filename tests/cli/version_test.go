package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/iggo/iggo/tests/harness"
)

// TestVersionsAgree: `iggo --version` and `iggo-server --version` print the
// same version string (version, commit, build date, Go and protocol) after
// their names, and both exit 0.
func TestVersionsAgree(t *testing.T) {
	e := &cliEnv{bin: iggoBinary(t), home: t.TempDir()}
	r := e.exec(t, "", "--version")
	if r.code != exitOK || !strings.HasPrefix(r.out, "iggo 0.9.0-iggo (commit ") {
		t.Fatalf("iggo --version:\n%v", r)
	}
	out, err := exec.Command(harness.Binary(t), "--version").Output()
	if err != nil {
		t.Fatalf("iggo-server --version: %v", err)
	}
	cli, srv := strings.TrimPrefix(r.out, "iggo "), strings.TrimPrefix(string(out), "iggo-server ")
	if cli != srv || !strings.HasSuffix(srv, "; protocol 0.11)\n") {
		t.Fatalf("versions differ:\n iggo        %q\n iggo-server %q", r.out, out)
	}
}
