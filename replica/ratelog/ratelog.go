// Package ratelog passes at most a configured number of log lines a second
// per kind of event and counts what it held back, so that a client (or a
// thousand) repeating something cannot flood the node's log: a refused
// connection, a failed login, a closed socket are each one kind.
//
// Each kind has a token bucket (golang.org/x/time/rate): New gives PerSecond
// lines a second with a burst of PerSecond, NewEvery one line per interval.
// A line that finds the bucket empty is dropped and counted; the next line
// of that kind that passes carries the count as the field "suppressed".
// Kinds are named in code (a limit, an event); past kindsMax of them the
// rest share the kind "other", so a caller passing client data as a kind
// cannot grow the table.
package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"
)

// RefusalInterval is the least time between two lines about one refused
// limit (NewEvery for the node's over-limit input).
const RefusalInterval = 10 * time.Second

// kindsMax bounds the kinds tracked.
const kindsMax = 256

// Logger is a rate-limited front of a zap logger. Safe for concurrent use.
type Logger struct {
	log   *zap.Logger
	limit rate.Limit // lines a second per kind; 0 passes everything
	burst int
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*kind
}

type kind struct {
	lim        *rate.Limiter
	suppressed uint64
}

// New passes at most perSecond lines a second per kind to log; perSecond
// <= 0 passes everything.
func New(log *zap.Logger, perSecond int) *Logger {
	if log == nil {
		log = zap.NewNop()
	}
	if perSecond <= 0 {
		return &Logger{log: log, now: time.Now, kinds: map[string]*kind{}}
	}
	return &Logger{log: log, limit: rate.Limit(perSecond), burst: perSecond, now: time.Now, kinds: map[string]*kind{}}
}

// NewEvery passes at most one line per kind per every (RefusalInterval
// when zero).
func NewEvery(log *zap.Logger, every time.Duration) *Logger {
	if every <= 0 {
		every = RefusalInterval
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Logger{log: log, limit: rate.Every(every), burst: 1, now: time.Now, kinds: map[string]*kind{}}
}

// Base is the underlying logger.
func (l *Logger) Base() *zap.Logger { return l.log }

// allow reports whether a line of kind k may go out now and how many were
// held back since the last one that did.
func (l *Logger) allow(k string) (bool, uint64) {
	if l.limit == 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.kinds[k]
	if st == nil {
		if len(l.kinds) >= kindsMax {
			k = "other"
			st = l.kinds[k]
		}
		if st == nil {
			st = &kind{lim: rate.NewLimiter(l.limit, l.burst)}
			l.kinds[k] = st
		}
	}
	if !st.lim.AllowN(l.now(), 1) {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.suppressed = 0
	return true, n
}

// Log writes msg at level unless kind k is over its rate, and reports
// whether it did.
func (l *Logger) Log(level zapcore.Level, k, msg string, fields ...zap.Field) bool {
	if !l.log.Core().Enabled(level) {
		return false
	}
	ok, held := l.allow(k)
	if !ok {
		return false
	}
	if held > 0 {
		fields = append(fields, zap.Uint64("suppressed", held))
	}
	if ce := l.log.Check(level, msg); ce != nil {
		ce.Write(fields...)
	}
	return true
}

// Info logs at info level, rate-limited by kind.
func (l *Logger) Info(k, msg string, fields ...zap.Field) bool {
	return l.Log(zapcore.InfoLevel, k, msg, fields...)
}

// Warn logs at warn level, rate-limited by kind.
func (l *Logger) Warn(k, msg string, fields ...zap.Field) bool {
	return l.Log(zapcore.WarnLevel, k, msg, fields...)
}
