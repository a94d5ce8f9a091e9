package logging

import (
	"fmt"
	"strings"
	"sync"

	"go.uber.org/zap/zapcore"
)

// Off is the level of a target whose lines are all dropped.
const Off = zapcore.FatalLevel + 1

// Levels is a parsed logging.level: a default level and per-target
// directives. A target is a logger name (zap's Named, joined with dots:
// "replica.conn"); "::" in a directive is read as "." so that Iggy's
// Rust-style targets ("server::shard") are accepted. A directive applies to
// its target and to every name below it ("replica" covers
// "replica.plane"); of several, the longest target wins, and of two equal
// ones the later.
type Levels struct {
	def        zapcore.Level
	directives []directive
	min        zapcore.Level
	cache      sync.Map // logger name → zapcore.Level
}

type directive struct {
	target string
	level  zapcore.Level
}

// ParseLevels reads a level ("info") or comma-separated directives
// ("warn,replica=debug,replica.plane=trace"). Levels are trace, debug,
// info, warn (or warning), error, off and none; trace is zap's debug. A
// spec without a bare level defaults to info.
func ParseLevels(spec string) (*Levels, error) {
	l := &Levels{def: zapcore.InfoLevel}
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("logging: empty level")
	}
	for _, d := range strings.Split(spec, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		target, level, hasTarget := strings.Cut(d, "=")
		if !hasTarget {
			level = d
		}
		lv, err := parseLevel(level)
		if err != nil {
			return nil, err
		}
		if !hasTarget {
			l.def = lv
			continue
		}
		target = strings.ReplaceAll(strings.TrimSpace(target), "::", ".")
		if target == "" {
			return nil, fmt.Errorf("logging: directive %q has no target", d)
		}
		l.directives = append(l.directives, directive{target: target, level: lv})
	}
	l.min = l.def
	for _, d := range l.directives {
		l.min = min(l.min, d.level)
	}
	return l, nil
}

func parseLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace", "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn", "warning":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	case "off", "none":
		return Off, nil
	}
	return 0, fmt.Errorf("logging: %q is not a level (trace, debug, info, warn, error, off, none)", s)
}

// For returns the level in force for a logger name.
func (l *Levels) For(name string) zapcore.Level {
	if v, ok := l.cache.Load(name); ok {
		return v.(zapcore.Level)
	}
	lv, best := l.def, -1
	for _, d := range l.directives {
		if (name == d.target || strings.HasPrefix(name, d.target+".")) && len(d.target) >= best {
			lv, best = d.level, len(d.target)
		}
	}
	l.cache.Store(name, lv)
	return lv
}

// Min is the most verbose level any target has.
func (l *Levels) Min() zapcore.Level { return l.min }

// Enabled reports whether some target logs at lv (zapcore.LevelEnabler).
func (l *Levels) Enabled(lv zapcore.Level) bool { return lv >= l.min }

// Filter wraps a core so that each entry passes only at or above the level
// of its logger's name. The wrapped core must enable at least Min.
func (l *Levels) Filter(c zapcore.Core) zapcore.Core { return &filterCore{Core: c, lv: l} }

type filterCore struct {
	zapcore.Core
	lv *Levels
}

func (c *filterCore) Enabled(lv zapcore.Level) bool { return c.lv.Enabled(lv) && c.Core.Enabled(lv) }

func (c *filterCore) With(fields []zapcore.Field) zapcore.Core {
	return &filterCore{Core: c.Core.With(fields), lv: c.lv}
}

func (c *filterCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if e.Level < c.lv.For(e.LoggerName) {
		return ce
	}
	return c.Core.Check(e, ce)
}
