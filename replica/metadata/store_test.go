package metadata

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// goroutineFataler reports failures from reader goroutines.
type goroutineFataler struct {
	mu  sync.Mutex
	err error
}

func (g *goroutineFataler) Helper() {}
func (g *goroutineFataler) Fatalf(format string, args ...any) {
	g.mu.Lock()
	if g.err == nil {
		g.err = fmt.Errorf(format, args...)
	}
	g.mu.Unlock()
	runtime.Goexit()
}

// TestStoreReadersSeeImmutableStates runs readers on other goroutines
// against a writer applying random commands. Each reader keeps a view,
// checks its invariants, and later checks that the view still encodes to
// the same bytes: published states are never written (the race detector
// would also flag it).
func TestStoreReadersSeeImmutableStates(t *testing.T) {
	b := bootstrapStep()
	st := NewStore(NewState())
	st.Apply(b.meta, b.cmd)
	var stop atomic.Bool
	var wg sync.WaitGroup
	f := &goroutineFataler{}
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for i := 0; !stop.Load(); i++ {
				v := st.View()
				if v.LastApplied() < last {
					f.Fatalf("reader %d went back from op %d to %d", r, last, v.LastApplied())
				}
				last = v.LastApplied()
				before := EncodeSnapshot(v)
				checkInvariants(f, v)
				for _, s := range v.Streams() {
					for _, tp := range s.Topics() {
						v.Allowed(1, ActionPollMessages, s.ID, tp.ID)
						for _, g := range tp.Groups() {
							g.Assignment(cl(1))
						}
					}
				}
				runtime.Gosched()
				if !bytes.Equal(before, EncodeSnapshot(v)) {
					f.Fatalf("reader %d: a published state changed under it", r)
				}
			}
		}()
	}
	c := randChooser{newRand(99)}
	for i := range 3000 {
		s := genStep(c, st.View(), uint64(i+2), uint64(1e6+i))
		st.Apply(s.meta, s.cmd)
	}
	stop.Store(true)
	wg.Wait()
	if f.err != nil {
		t.Fatal(f.err)
	}
	if st.View().LastApplied() != 3001 {
		t.Fatalf("LastApplied %d", st.View().LastApplied())
	}
	restored, err := DecodeSnapshot(EncodeSnapshot(st.View()))
	if err != nil {
		t.Fatal(err)
	}
	st.Replace(restored)
	if st.View() != restored {
		t.Fatal("Replace did not publish")
	}
}

func TestStoreAdvance(t *testing.T) {
	st := NewStore(NewState())
	before := st.View()
	st.Advance(7)
	if got := st.View().LastApplied(); got != 7 {
		t.Fatalf("LastApplied %d after Advance(7)", got)
	}
	if before.LastApplied() != 0 {
		t.Fatal("Advance modified the published state in place")
	}
}
