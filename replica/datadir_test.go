package replica

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/datadir"
)

func nodeConfig(dir string) *config.Config {
	cfg := config.Default()
	cfg.Path = dir
	cfg.TCP.Address = "127.0.0.1:0"
	cfg.Sharding.PinCores = false
	cfg.Logging.FileEnabled = false
	return cfg
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestNodeOwnsItsDataDir: a second node on a running node's directory is
// refused by Start with the owner's pid; a node whose port is taken fails
// Start having created nothing but the lock file; Close releases the lock,
// so a restart in the same process takes it again.
func TestNodeOwnsItsDataDir(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir)
	second, err := New(Options{Config: nodeConfig(dir), DefaultRootCredentials: true, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	err = second.Start()
	var inUse *datadir.InUseError
	if !errors.As(err, &inUse) || inUse.Owner.PID != os.Getpid() {
		t.Fatalf("second Start: %v, want the directory in use by this process", err)
	}
	if !strings.HasPrefix(err.Error(), "data directory "+dir+" is in use by pid ") {
		t.Fatalf("message %q", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fresh := filepath.Join(t.TempDir(), "data")
	cfg := nodeConfig(fresh)
	cfg.TCP.Address = busy.Addr().String()
	failing, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := failing.Start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start on a busy port: %v", err)
	}
	if got := entries(t, fresh); !slices.Equal(got, []string{datadir.LockFileName}) {
		t.Fatalf("a start that could not bind created %v", got)
	}
	// The failed start released the lock, and the closed node its own.
	startNode(t, fresh)
	restarted := startNode(t, dir)
	if restarted.Store().View().LastApplied() == 0 {
		t.Fatal("the restarted node recovered nothing")
	}
}
