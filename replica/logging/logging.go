// Package logging builds the server's logger from [logging]: human-readable
// lines on stdout, and with file_enabled JSON lines in a size-rotated file
// whose rotated copies a background pass deletes by age (retention) and by
// total size (max_total_size) every rotation_check_interval. The level is
// logging.level: a bare level, or target=level directives (Levels) that set
// the level per logger name.
//
// # Targets
//
// A target is a zap logger name. The server names its loggers:
//
//	server               cmd/iggo-server (start, shutdown, configuration warnings)
//	replica              the node: boot, recovery, listener, background passes
//	replica.conn         client connections
//	replica.audit        the audit trail (changes, refusals, denials; package replica/audit)
//	replica.shard        shard loops, their consensus groups and partitions
//	replica.plane        replica links (cluster mode)
//	replica.gossip       membership (cluster mode), and replica.gossip.memberlist
//	replica.cluster      cluster metadata and node status (cluster mode)
//
// so "warn,replica.conn=debug" logs warnings everywhere and everything a
// connection logs.
//
// # Files
//
//	<logging.path>/iggo-server.log       the active file, JSON lines
//	<logging.path>/iggo-server.log.N     rotated files, .1 the newest
package logging

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// FileName is the active log file inside the log directory.
const FileName = "iggo-server.log"

// Options are the [logging] settings New needs.
type Options struct {
	Level string
	// Dir is the log directory; empty logs to Stdout only.
	Dir  string
	File FileOptions
	// CheckInterval is how often rotated files are cleaned up
	// (rotation_check_interval); 0 only at rotation.
	CheckInterval time.Duration
	Stdout        io.Writer
}

// Logger is a built server logger and the file behind it, if any.
type Logger struct {
	*zap.Logger
	File *File

	stop     chan struct{}
	done     sync.WaitGroup
	stopOnce sync.Once
}

// New builds the logger. Close stops the cleanup pass and closes the file.
func New(o Options) (*Logger, error) {
	lv, err := ParseLevels(o.Level)
	if err != nil {
		return nil, err
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	cc := ec
	cc.EncodeLevel = zapcore.CapitalLevelEncoder
	cores := []zapcore.Core{zapcore.NewCore(zapcore.NewConsoleEncoder(cc), zapcore.AddSync(o.Stdout), lv)}
	l := &Logger{stop: make(chan struct{})}
	if o.Dir != "" {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("logging: creating log directory %s: %w", o.Dir, err)
		}
		f, err := OpenFile(filepath.Join(o.Dir, FileName), o.File)
		if err != nil {
			return nil, err
		}
		l.File = f
		cores = append(cores, zapcore.NewCore(zapcore.NewJSONEncoder(ec), zapcore.AddSync(f), lv))
	}
	l.Logger = zap.New(lv.Filter(zapcore.NewTee(cores...)))
	if l.File != nil && o.CheckInterval > 0 {
		l.done.Add(1)
		go l.cleanupLoop(o.CheckInterval)
	}
	return l, nil
}

func (l *Logger) cleanupLoop(every time.Duration) {
	defer l.done.Done()
	log := l.Named("logging")
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			if removed := l.File.Cleanup(now); len(removed) > 0 {
				log.Info("rotated log files deleted", zap.Strings("files", removed))
			}
		}
	}
}

// Close stops the cleanup pass, syncs and closes the log file.
func (l *Logger) Close() {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.done.Wait()
		_ = l.Sync()
		if l.File != nil {
			_ = l.File.Close()
		}
	})
}
