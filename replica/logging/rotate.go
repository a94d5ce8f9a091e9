package logging

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// File is the server's log file, name, rotated by size: when a write would
// take it past MaxSize it becomes name.1 (the previous name.1 becomes
// name.2, and so on) and a new name is started. Rotated files are deleted
// by Cleanup: those last modified more than Retention ago, then the oldest
// while all rotated files together exceed MaxTotal. The active file is
// never deleted. Log files are diagnostics, not storage: package os.
type File struct {
	mu   sync.Mutex
	name string
	f    *os.File
	size uint64
	opts FileOptions
}

// FileOptions are the [logging] limits of a File.
type FileOptions struct {
	// MaxSize rotates the file at this size; 0 never rotates.
	MaxSize uint64
	// MaxTotal bounds the rotated files' total size; 0 keeps any amount.
	MaxTotal uint64
	// Retention deletes rotated files older than this; 0 keeps them.
	Retention time.Duration
}

// OpenFile opens (appending) or creates name.
func OpenFile(name string, opts FileOptions) (*File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logging: opening log file %s: %w", name, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("logging: %w", err)
	}
	return &File{name: name, f: f, size: uint64(st.Size()), opts: opts}, nil
}

// Write appends p, rotating first when p would take the file past MaxSize.
func (r *File) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.MaxSize > 0 && r.size > 0 && r.size+uint64(len(p)) > r.opts.MaxSize {
		r.rotate()
	}
	n, err := r.f.Write(p)
	r.size += uint64(n)
	return n, err
}

func (r *File) rotate() {
	_ = r.f.Close()
	rotated := r.rotated()
	// Highest suffix first, so that no rename overwrites a file.
	for i := len(rotated) - 1; i >= 0; i-- {
		_ = os.Rename(rotated[i].path, r.name+"."+strconv.Itoa(rotated[i].n+1))
	}
	_ = os.Rename(r.name, r.name+".1")
	f, err := os.OpenFile(r.name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		// Keep serving: a log that cannot be reopened must not stop the
		// server. Lines go nowhere until the next rotation succeeds.
		f, _ = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	r.f, r.size = f, 0
	r.trimTotal(r.rotated())
}

type rotatedFile struct {
	path string
	n    int // suffix: 1 is the newest
	size uint64
	mod  time.Time
}

// rotated lists name.N files, newest (lowest N) first.
func (r *File) rotated() []rotatedFile {
	matches, _ := filepath.Glob(r.name + ".*")
	var out []rotatedFile
	for _, m := range matches {
		n, err := strconv.Atoi(strings.TrimPrefix(m, r.name+"."))
		if err != nil || n < 1 {
			continue
		}
		st, err := os.Stat(m)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		out = append(out, rotatedFile{path: m, n: n, size: uint64(st.Size()), mod: st.ModTime()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	return out
}

// trimTotal deletes the oldest rotated files while they exceed MaxTotal.
func (r *File) trimTotal(files []rotatedFile) (removed []string) {
	if r.opts.MaxTotal == 0 {
		return nil
	}
	var total uint64
	for _, f := range files {
		total += f.size
		if total > r.opts.MaxTotal {
			if os.Remove(f.path) == nil {
				removed = append(removed, f.path)
			}
		}
	}
	return removed
}

// Cleanup applies Retention (against now) and MaxTotal to the rotated
// files and returns the ones it deleted.
func (r *File) Cleanup(now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var removed []string
	var kept []rotatedFile
	for _, f := range r.rotated() {
		if r.opts.Retention > 0 && now.Sub(f.mod) > r.opts.Retention {
			if os.Remove(f.path) == nil {
				removed = append(removed, f.path)
				continue
			}
		}
		kept = append(kept, f)
	}
	return append(removed, r.trimTotal(kept)...)
}

// Sync flushes the file to disk.
func (r *File) Sync() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Sync()
}

// Close closes the file.
func (r *File) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Close()
}
