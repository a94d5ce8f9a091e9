// Package ratelog passes at most a configured number of log lines a second
// per kind of event and counts what it held back, so that a client (or a
// thousand) repeating something cannot flood the node's log: a refused
// connection, a failed login, a closed socket are each one kind.
//
// Each kind has a token bucket (golang.org/x/time/rate) of PerSecond lines a
// second with a burst of PerSecond. A line that finds the bucket empty is
// dropped and counted; the next line of that kind that passes carries the
// count as the field "suppressed". Kinds are a fixed set named in code, so
// the table of buckets stays small.
package ratelog

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/time/rate"
)

// Logger is a rate-limited front of a zap logger. Safe for concurrent use.
type Logger struct {
	log       *zap.Logger
	perSecond int

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
	return &Logger{log: log, perSecond: perSecond, kinds: map[string]*kind{}}
}

// Base is the underlying logger.
func (l *Logger) Base() *zap.Logger { return l.log }

// allow reports whether a line of kind k may go out now and how many were
// held back since the last one that did.
func (l *Logger) allow(k string) (bool, uint64) {
	if l.perSecond <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.kinds[k]
	if st == nil {
		st = &kind{lim: rate.NewLimiter(rate.Limit(l.perSecond), l.perSecond)}
		l.kinds[k] = st
	}
	if !st.lim.Allow() {
		st.suppressed++
		return false, 0
	}
	n := st.suppressed
	st.suppressed = 0
	return true, n
}

// Log writes msg at level unless kind k is over its rate.
func (l *Logger) Log(level zapcore.Level, k, msg string, fields ...zap.Field) {
	if !l.log.Core().Enabled(level) {
		return
	}
	ok, held := l.allow(k)
	if !ok {
		return
	}
	if held > 0 {
		fields = append(fields, zap.Uint64("suppressed", held))
	}
	if ce := l.log.Check(level, msg); ce != nil {
		ce.Write(fields...)
	}
}

// Info logs at info level, rate-limited by kind.
func (l *Logger) Info(k, msg string, fields ...zap.Field) {
	l.Log(zapcore.InfoLevel, k, msg, fields...)
}

// Warn logs at warn level, rate-limited by kind.
func (l *Logger) Warn(k, msg string, fields ...zap.Field) {
	l.Log(zapcore.WarnLevel, k, msg, fields...)
}
