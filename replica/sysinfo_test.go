package replica

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/iggo/iggo/replica/config"
)

// TestSysinfoLine: with logging.sysinfo_print_interval set the node logs a
// system info line with CPU, memory, disk and connection figures; with 0 it
// logs none.
func TestSysinfoLine(t *testing.T) {
	for _, every := range []time.Duration{time.Second, 0} {
		core, logs := observer.New(zap.InfoLevel)
		cfg := config.Default()
		cfg.Path = t.TempDir()
		cfg.TCP.Address = "127.0.0.1:0"
		cfg.Sharding.PinCores = false
		cfg.Logging.FileEnabled = false
		cfg.Logging.SysinfoPrintInterval = config.D(every)
		n, err := New(Options{Config: cfg, DefaultRootCredentials: true, Environ: []string{}, Logger: zap.New(core)})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		_ = dial(t, n)
		wait := 3 * time.Second
		if every > 0 {
			wait = 60 * time.Second
		}
		deadline := time.Now().Add(wait)
		var line []observer.LoggedEntry
		for time.Now().Before(deadline) {
			if line = logs.FilterMessage("system info").All(); len(line) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = n.Close()
		if every == 0 {
			if len(line) > 0 || logs.FilterMessage("system info is logged periodically").Len() > 0 {
				t.Fatalf("sysinfo_print_interval = 0 logged %v", line)
			}
			continue
		}
		if len(line) == 0 {
			t.Fatal("no system info line within 60 s")
		}
		e := line[0]
		if e.LoggerName != "replica" {
			t.Errorf("logger %q, want replica", e.LoggerName)
		}
		f := e.ContextMap()
		for _, k := range []string{"cpu", "memory_process", "memory_total", "disk_free", "disk_total", "clients", "messages", "open_fds", "threads"} {
			if _, ok := f[k]; !ok {
				t.Errorf("system info line lacks %s: %v", k, f)
			}
		}
		if c, _ := f["clients"].(uint32); c < 1 {
			t.Errorf("clients = %v with a client connected", f["clients"])
		}
		if fd, _ := f["open_fds"].(int64); fd <= 0 {
			t.Errorf("open_fds = %v", f["open_fds"])
		}
	}
}
