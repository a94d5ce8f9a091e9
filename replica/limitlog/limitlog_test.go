package limitlog

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestOneLinePerLimitPerInterval(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := New(zap.New(core), time.Second)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	steps := []struct {
		at     time.Duration
		limit  string
		logged bool
	}{
		{0, "a", true},
		{10 * time.Millisecond, "a", false},
		{20 * time.Millisecond, "a", false},
		{30 * time.Millisecond, "b", true}, // another limit has its own budget
		{999 * time.Millisecond, "a", false},
		{time.Second, "a", true}, // reports the two held back
		{1500 * time.Millisecond, "b", true},
	}
	for i, s := range steps {
		now = time.Unix(1000, 0).Add(s.at)
		if got := l.Refused(s.limit, "127.0.0.1:5"); got != s.logged {
			t.Fatalf("step %d: logged %v, want %v", i, got, s.logged)
		}
	}
	all := logs.All()
	if len(all) != 4 {
		t.Fatalf("%d lines, want 4", len(all))
	}
	third := all[2].ContextMap()
	if third["limit"] != "a" || third["addr"] != "127.0.0.1:5" || third["suppressed_since_last"] != uint64(3) {
		t.Fatalf("third line %v", third)
	}
}

func TestKeysBounded(t *testing.T) {
	l := New(nil, time.Hour)
	for i := 0; i < 10*keysMax; i++ {
		l.Refused(string(rune('a'+i%26))+string(rune(i)), "x")
	}
	if len(l.keys) > keysMax+1 {
		t.Fatalf("%d keys tracked", len(l.keys))
	}
}
