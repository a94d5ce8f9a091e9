package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iggo/iggo/internal/version"
)

// TestCommandLine: --help and -h print every flag with its description and
// the environment variables and exit 0; --version and -V print the
// version line and exit 0; a bad flag or a stray argument exits 2 with a
// hint, before any configuration is read.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		args     []string
		code     int
		out, err []string
	}{
		{[]string{"--help"}, 0, []string{"Usage:\n  iggo-server [flags]", "--config string", "--replica-id int", "-f, --fresh",
			"WARNING: DELETES ALL DATA", "--with-default-root-credentials", "-V, --version", "-h, --help",
			"Environment variables:", "IGGY_CONFIG_PATH", "IGGY_PATH", "IGGY_TCP_ADDRESS", "IGGY_ROOT_PASSWORD",
			"IGGY_CLUSTER_AUTH_SHARED_SECRET", "is in use by pid N"}, nil},
		{[]string{"-h"}, 0, []string{"Usage:\n  iggo-server [flags]"}, nil},
		{[]string{"--version"}, 0, []string{version.Line("iggo-server") + "\n"}, nil},
		{[]string{"-V"}, 0, []string{"iggo-server " + version.Version + " (commit "}, nil},
		{[]string{"--bogus"}, 2, nil, []string{"iggo-server: unknown flag: --bogus", "Run 'iggo-server --help' for usage."}},
		{[]string{"--replica-id", "x"}, 2, nil, []string{"invalid argument \"x\" for \"--replica-id\""}},
		{[]string{"extra"}, 2, nil, []string{"iggo-server: unexpected arguments [extra]"}},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != c.code {
			t.Fatalf("%v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.args, code, c.code, out.String(), errb.String())
		}
		for _, s := range c.out {
			if !strings.Contains(out.String(), s) {
				t.Fatalf("%v: stdout lacks %q:\n%s", c.args, s, out.String())
			}
		}
		for _, s := range c.err {
			if !strings.Contains(errb.String(), s) {
				t.Fatalf("%v: stderr lacks %q:\n%s", c.args, s, errb.String())
			}
		}
		if c.code == 0 && errb.Len() > 0 {
			t.Fatalf("%v: stderr %q", c.args, errb.String())
		}
	}
}
