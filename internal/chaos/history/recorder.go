package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Recorder appends events to a history. It is safe for concurrent use;
// events get dense indexes and monotonic times in the order they are
// recorded. Every event is written through to the sink (if any) and kept
// in memory.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	next   int64
	last   int64
	events []Event
	w      *bufio.Writer
	sink   io.Writer
	err    error
}

// NewRecorder starts a history at now, writing meta as its header line
// to sink. A nil sink keeps the history in memory only.
func NewRecorder(meta Meta, sink io.Writer) (*Recorder, error) {
	r := &Recorder{start: time.Now(), next: 1, sink: sink}
	if sink != nil {
		r.w = bufio.NewWriterSize(sink, 256<<10)
		meta.Type = "meta"
		if meta.Version == 0 {
			meta.Version = MetaVersion
		}
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("history: encode header: %w", err)
		}
		if _, err := r.w.Write(append(b, '\n')); err != nil {
			return nil, fmt.Errorf("history: write header: %w", err)
		}
	}
	return r, nil
}

// Now is the time since the start of the history, in ns, as events are
// stamped.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

func (r *Recorder) add(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Index = r.next
	r.next++
	// Stamped under the lock so times never go back in index order.
	e.Time = max(int64(time.Since(r.start)), r.last)
	r.last = e.Time
	r.events = append(r.events, e)
	if r.w != nil && r.err == nil {
		b, err := json.Marshal(e)
		if err == nil {
			_, err = r.w.Write(append(b, '\n'))
		}
		if err != nil {
			r.err = fmt.Errorf("history: write event %d: %w", e.Index, err)
		}
	}
	return e
}

// Invoke records the invocation of op kind by process p and returns the
// handle that records its completion.
func (r *Recorder) Invoke(p int, kind Kind, args Value) *Pending {
	a := args
	e := r.add(Event{Type: Invoke, Process: p, Kind: kind, Value: &a})
	return &Pending{r: r, p: p, kind: kind, at: e.Time}
}

// Note records a phase marker.
func (r *Recorder) Note(phase string) {
	r.add(Event{Type: Note, Process: NemesisProcess, Value: &Value{Phase: phase}})
}

// Events returns a copy of the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Flush writes buffered lines to the sink.
func (r *Recorder) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return r.err
	}
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = fmt.Errorf("history: flush: %w", err)
	}
	if f, ok := r.sink.(*os.File); ok && r.err == nil {
		if err := f.Sync(); err != nil {
			r.err = fmt.Errorf("history: sync: %w", err)
		}
	}
	return r.err
}

// Pending is an invoked operation awaiting its completion. Exactly one of
// OK, Fail or Info must be called.
type Pending struct {
	r    *Recorder
	p    int
	kind Kind
	at   int64
	done bool
}

// Process is the process that invoked the operation.
func (h *Pending) Process() int { return h.p }

// Invoked is the invocation time.
func (h *Pending) Invoked() int64 { return h.at }

func (h *Pending) complete(t Type, node int, v *Value, err error, code int) {
	if h.done {
		panic(fmt.Sprintf("history: %s of process %d completed twice", h.kind, h.p))
	}
	h.done = true
	e := Event{Type: t, Process: h.p, Kind: h.kind, Value: v, Code: code}
	if node >= 0 {
		e.Node = Int(node)
	}
	if err != nil {
		e.Err = err.Error()
	}
	h.r.add(e)
}

// OK records success with result v, served by node (-1 unknown).
func (h *Pending) OK(node int, v Value) { h.complete(OK, node, &v, nil, 0) }

// Fail records a definite failure.
func (h *Pending) Fail(node int, err error, code int) { h.complete(Fail, node, nil, err, code) }

// Info records an unknown outcome.
func (h *Pending) Info(node int, err error, code int) { h.complete(Info, node, nil, err, code) }

// ErrNotHistory is returned by Read for input that does not start with a
// history header.
var ErrNotHistory = errors.New("history: first line is not a history header")

// Read parses a history. A torn last line (the writer died mid-line) is
// ignored; any other undecodable line is an error.
func Read(in io.Reader) (Meta, []Event, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var meta Meta
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return meta, nil, fmt.Errorf("history: read header: %w", err)
		}
		return meta, nil, ErrNotHistory
	}
	if err := json.Unmarshal(sc.Bytes(), &meta); err != nil || meta.Type != "meta" {
		return meta, nil, ErrNotHistory
	}
	switch meta.Version {
	case MetaVersion:
	case 1:
		meta.Checks.AtLeastOnce = true
	default:
		return meta, nil, fmt.Errorf("history: format version %d, this reader knows 1 and %d", meta.Version, MetaVersion)
	}
	var events []Event
	var bad error
	line := 1
	for sc.Scan() {
		line++
		if bad != nil {
			return meta, nil, bad // an undecodable line that was not the last
		}
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			bad = fmt.Errorf("history: line %d: %w", line, err)
			continue
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return meta, nil, fmt.Errorf("history: read: %w", err)
	}
	return meta, events, nil
}

// ReadFile reads a history file.
func ReadFile(path string) (Meta, []Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return Meta{}, nil, err
	}
	defer f.Close()
	return Read(f)
}
