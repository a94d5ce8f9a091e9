// Package limitlog writes the log lines about input the node refused
// because it broke a limit: one line per limit per interval, naming the
// limit and the client address, with the count of refusals held back since
// the previous line. Hostile or broken clients can then be seen in the log
// without being able to flood it.
package limitlog

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultInterval is the least time between two lines about one limit.
const DefaultInterval = 10 * time.Second

// keysMax bounds the limits tracked: limit names are a fixed set chosen by
// the code, so this only guards against a caller passing client data as
// the name.
const keysMax = 256

// Logger rate-limits refusal lines per limit. The zero value is not usable;
// use New. Safe for concurrent use.
type Logger struct {
	log   *zap.Logger
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	last time.Time
	held uint64
}

// New returns a Logger writing to log at warn level, at most one line per
// limit per every (DefaultInterval when zero).
func New(log *zap.Logger, every time.Duration) *Logger {
	if every <= 0 {
		every = DefaultInterval
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Logger{log: log, every: every, now: time.Now, keys: map[string]*entry{}}
}

// Refused records one refusal under limit (a configuration key or the
// name of a protocol limit) from the client at addr, and logs it unless a
// line about limit was written less than the interval ago. It reports
// whether it logged.
func (l *Logger) Refused(limit, addr string, fields ...zap.Field) bool {
	now := l.now()
	l.mu.Lock()
	e := l.keys[limit]
	if e == nil {
		if len(l.keys) >= keysMax {
			limit = "other"
			e = l.keys[limit]
		}
		if e == nil {
			e = &entry{}
			l.keys[limit] = e
		}
	}
	if !e.last.IsZero() && now.Sub(e.last) < l.every {
		e.held++
		l.mu.Unlock()
		return false
	}
	held := e.held
	e.last, e.held = now, 0
	l.mu.Unlock()
	fields = append(fields, zap.String("limit", limit), zap.String("addr", addr))
	if held > 0 {
		fields = append(fields, zap.Uint64("suppressed_since_last", held))
	}
	l.log.Warn("refused a request over a limit", fields...)
	return true
}
