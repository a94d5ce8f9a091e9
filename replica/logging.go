package replica

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/iggo/iggo/replica/config"
)

// LogFileName is the server's log file inside the logging directory.
const LogFileName = "iggo-server.log"

// NewLogger builds the server logger from [logging]: human-readable lines
// on stdout and, with file_enabled, JSON lines in <path>/<logging.path>/
// iggo-server.log, rotated at max_file_size with rotated files deleted
// beyond max_total_size. The level is logging.level (the first bare level
// of a directive list; per-target directives apply to the whole server).
// Log files are diagnostics, not storage, and are written with package os.
func NewLogger(cfg *config.Config, stdout io.Writer) (*zap.Logger, func(), error) {
	level := zapcore.InfoLevel
	for _, d := range strings.Split(cfg.Logging.Level, ",") {
		d = strings.TrimSpace(d)
		if d == "" || strings.Contains(d, "=") {
			continue
		}
		switch strings.ToLower(d) {
		case "trace", "debug":
			level = zapcore.DebugLevel
		case "info":
			level = zapcore.InfoLevel
		case "warn", "warning":
			level = zapcore.WarnLevel
		case "error":
			level = zapcore.ErrorLevel
		case "off", "none":
			level = zapcore.FatalLevel + 1
		default:
			return nil, nil, fmt.Errorf("replica: logging.level %q is not a level", d)
		}
		break
	}
	enab := zap.NewAtomicLevelAt(level)
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	cc := ec
	cc.EncodeLevel = zapcore.CapitalLevelEncoder
	cores := []zapcore.Core{zapcore.NewCore(zapcore.NewConsoleEncoder(cc), zapcore.AddSync(stdout), enab)}
	closeFn := func() {}
	if cfg.Logging.FileEnabled {
		dir := cfg.LogDir()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("replica: creating log directory %s: %w", dir, err)
		}
		w, err := openRotating(filepath.Join(dir, LogFileName), cfg.Logging.MaxFileSize.Bytes(), cfg.Logging.MaxTotalSize.Bytes())
		if err != nil {
			return nil, nil, err
		}
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(ec), zapcore.AddSync(w), enab))
		closeFn = func() { _ = w.Close() }
	}
	return zap.New(zapcore.NewTee(cores...)), closeFn, nil
}

// rotating is a size-rotated log file: name, name.1 (newest rotated), …
type rotating struct {
	mu       sync.Mutex
	name     string
	f        *os.File
	size     uint64
	maxSize  uint64
	maxTotal uint64
}

func openRotating(name string, maxSize, maxTotal uint64) (*rotating, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("replica: opening log file %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &rotating{name: name, f: f, size: uint64(st.Size()), maxSize: maxSize, maxTotal: maxTotal}, nil
}

func (r *rotating) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.maxSize > 0 && r.size+uint64(len(p)) > r.maxSize && r.size > 0 {
		r.rotate()
	}
	n, err := r.f.Write(p)
	r.size += uint64(n)
	return n, err
}

func (r *rotating) rotate() {
	_ = r.f.Close()
	matches, _ := filepath.Glob(r.name + ".*")
	sort.Slice(matches, func(i, j int) bool { return suffixNum(matches[i]) > suffixNum(matches[j]) })
	for _, m := range matches {
		_ = os.Rename(m, fmt.Sprintf("%s.%d", r.name, suffixNum(m)+1))
	}
	_ = os.Rename(r.name, r.name+".1")
	if r.maxTotal > 0 {
		matches, _ = filepath.Glob(r.name + ".*")
		sort.Slice(matches, func(i, j int) bool { return suffixNum(matches[i]) < suffixNum(matches[j]) })
		var total uint64
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil {
				total += uint64(st.Size())
				if total > r.maxTotal {
					_ = os.Remove(m)
				}
			}
		}
	}
	f, err := os.OpenFile(r.name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		f, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	r.f, r.size = f, 0
}

func suffixNum(name string) int {
	i := strings.LastIndexByte(name, '.')
	var n int
	_, _ = fmt.Sscanf(name[i+1:], "%d", &n)
	return n
}

func (r *rotating) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Sync()
}

func (r *rotating) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Close()
}
