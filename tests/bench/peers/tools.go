package peers

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Pinned versions of the JetStream side (both build with Go 1.26).
const (
	NATSServerVersion = "v2.15.2"
	NATSCLIVersion    = "v0.5.0"

	natsServerModule = "github.com/nats-io/nats-server/v2"
	natsCLIPackage   = "github.com/nats-io/natscli/nats"
)

// Tools are the JetStream binaries.
type Tools struct {
	NATSServer string
	NATS       string
}

// DefaultToolsDir is where installed tools are kept between runs:
// <user cache dir>/iggo-peers.
func DefaultToolsDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "iggo-peers")
	}
	return filepath.Join(os.TempDir(), "iggo-peers-tools")
}

// InstallTools installs nats-server serverVersion and the nats CLI
// cliVersion under dir (one directory per version) with `go install`
// outside any module, reusing a binary that reports the same version.
func InstallTools(ctx context.Context, dir, serverVersion, cliVersion string, log io.Writer) (Tools, error) {
	if log == nil {
		log = io.Discard
	}
	server, err := install(ctx, filepath.Join(dir, "nats-server-"+serverVersion), natsServerModule+"@"+serverVersion, "nats-server", serverVersion, log)
	if err != nil {
		return Tools{}, err
	}
	cli, err := install(ctx, filepath.Join(dir, "natscli-"+cliVersion), natsCLIPackage+"@"+cliVersion, "nats", cliVersion, log)
	if err != nil {
		return Tools{}, err
	}
	return Tools{NATSServer: server, NATS: cli}, nil
}

func install(ctx context.Context, gobin, pkg, name, version string, log io.Writer) (string, error) {
	bin := filepath.Join(gobin, name)
	if v, err := toolVersion(ctx, bin); err == nil && v == version {
		fmt.Fprintf(log, "%s %s: %s\n", name, version, bin)
		return bin, nil
	}
	if err := os.MkdirAll(gobin, 0o755); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "go install %s (GOBIN=%s)\n", pkg, gobin)
	cmd := exec.CommandContext(ctx, "go", "install", pkg)
	// Outside the module: the tool's own go.mod decides its dependencies.
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-buildvcs=false", "GO111MODULE=on", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go install %s: %w\n%s", pkg, err, out)
	}
	v, err := toolVersion(ctx, bin)
	if err != nil {
		return "", fmt.Errorf("%s after go install: %w", bin, err)
	}
	if v != version {
		return "", fmt.Errorf("%s reports version %q after go install of %s", bin, v, pkg)
	}
	return bin, nil
}

// toolVersion runs `bin --version`: "nats-server: v2.15.2" and "v0.5.0"
// both give the v-prefixed word.
func toolVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "", err
	}
	return parseVersion(string(out)), nil
}

func parseVersion(out string) string {
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "v") && len(f) > 1 && f[1] >= '0' && f[1] <= '9' {
			return f
		}
	}
	return ""
}
