package ratelog

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestRateLimitedPerKind(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := New(zap.New(core), 5)
	for i := 0; i < 1000; i++ {
		l.Warn("refused", "connection refused")
		if i%10 == 0 {
			l.Info("closed", "connection closed")
		}
	}
	refused := logs.FilterMessage("connection refused").All()
	closed := logs.FilterMessage("connection closed").All()
	// The burst (5) of each kind passes at once; a tight loop is over
	// long before more tokens accrue, give or take one.
	if len(refused) < 5 || len(refused) > 7 || len(closed) < 5 || len(closed) > 7 {
		t.Fatalf("%d refused and %d closed lines", len(refused), len(closed))
	}
	// Levels below the logger's are not counted as held back.
	l.Log(zap.DebugLevel, "debug", "not logged")
	if logs.FilterMessage("not logged").Len() != 0 {
		t.Fatal("debug line logged")
	}
}

func TestSuppressedCountReported(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := New(zap.New(core), 1)
	l.Info("k", "line")
	for i := 0; i < 9; i++ {
		l.Info("k", "line")
	}
	// Force the bucket full again and log once more.
	l.mu.Lock()
	st := l.kinds["k"]
	st.lim.SetBurst(1)
	st.lim.SetLimit(1e9)
	l.mu.Unlock()
	l.Info("k", "line")
	all := logs.All()
	last := all[len(all)-1].ContextMap()
	if got, ok := last["suppressed"]; !ok || got.(uint64) < 8 {
		t.Fatalf("last line %v of %d", last, len(all))
	}
	if len(all) > 3 {
		t.Fatalf("%d lines for 11 calls at 1/s", len(all))
	}
}

func TestUnlimited(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := New(zap.New(core), 0)
	for i := 0; i < 100; i++ {
		l.Info("k", "line")
	}
	if logs.Len() != 100 {
		t.Fatalf("%d lines", logs.Len())
	}
}

// TestOneLinePerKindPerInterval: NewEvery passes one line per kind per
// interval on the logger's clock; the next line that passes counts those
// held back.
func TestOneLinePerKindPerInterval(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	l := NewEvery(zap.New(core), time.Second)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	steps := []struct {
		at     time.Duration
		kind   string
		logged bool
	}{
		{0, "a", true},
		{10 * time.Millisecond, "a", false},
		{20 * time.Millisecond, "a", false},
		{30 * time.Millisecond, "b", true}, // another kind has its own budget
		{999 * time.Millisecond, "a", false},
		{time.Second, "a", true}, // reports the three held back
		{1500 * time.Millisecond, "b", true},
	}
	for i, s := range steps {
		now = time.Unix(1000, 0).Add(s.at)
		if got := l.Warn(s.kind, "refused", zap.String("limit", s.kind)); got != s.logged {
			t.Fatalf("step %d: logged %v, want %v", i, got, s.logged)
		}
	}
	all := logs.All()
	if len(all) != 4 {
		t.Fatalf("%d lines, want 4", len(all))
	}
	if third := all[2].ContextMap(); third["limit"] != "a" || third["suppressed"] != uint64(3) {
		t.Fatalf("third line %v", third)
	}
}

func TestKindsBounded(t *testing.T) {
	l := NewEvery(nil, time.Hour)
	for i := 0; i < 10*kindsMax; i++ {
		l.Warn(string(rune('a'+i%26))+string(rune(i)), "x")
	}
	if len(l.kinds) > kindsMax+1 {
		t.Fatalf("%d kinds tracked", len(l.kinds))
	}
}
