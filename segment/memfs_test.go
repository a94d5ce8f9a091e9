package segment

import (
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iggo/iggo/shard/vfs"
)

// memFS is a minimal in-memory vfs.FS that lets the fuzz targets run
// without paying for fdatasync on every execution. It has no fault model;
// crash tests use the fault-injecting filesystem of shard/vfs.
type memFS struct {
	mu    sync.Mutex
	files map[string]*memData
	dirs  map[string]bool
}

type memData struct{ b []byte }

func newMemFS() *memFS {
	return &memFS{files: map[string]*memData{}, dirs: map[string]bool{"/": true}}
}

func (m *memFS) OpenFile(name string, flag int, perm fs.FileMode) (vfs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = path.Clean(name)
	d, ok := m.files[name]
	switch {
	case ok && flag&vfs.O_CREATE != 0 && flag&vfs.O_EXCL != 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !ok && flag&vfs.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case !ok:
		if !m.dirs[path.Dir(name)] {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		d = &memData{}
		m.files[name] = d
	}
	if flag&vfs.O_TRUNC != 0 {
		d.b = nil
	}
	return &memFile{fs: m, name: name, d: d}, nil
}

func (m *memFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = path.Clean(name)
	if _, ok := m.files[name]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(m.files, name)
	return nil
}

func (m *memFS) RemoveAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = path.Clean(name)
	for f := range m.files {
		if f == name || strings.HasPrefix(f, name+"/") {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if d == name || strings.HasPrefix(d, name+"/") {
			delete(m.dirs, d)
		}
	}
	return nil
}

func (m *memFS) Rename(oldpath, newpath string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.files[path.Clean(oldpath)]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	delete(m.files, path.Clean(oldpath))
	m.files[path.Clean(newpath)] = d
	return nil
}

func (m *memFS) MkdirAll(name string, perm fs.FileMode) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := path.Clean(name); ; p = path.Dir(p) {
		m.dirs[p] = true
		if p == "/" || p == "." {
			return nil
		}
	}
}

func (m *memFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = path.Clean(name)
	if !m.dirs[name] {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for f, d := range m.files {
		if path.Dir(f) == name {
			out = append(out, memInfo{name: path.Base(f), size: int64(len(d.b))})
		}
	}
	for d := range m.dirs {
		if d != name && path.Dir(d) == name {
			out = append(out, memInfo{name: path.Base(d), dir: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m *memFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = path.Clean(name)
	if d, ok := m.files[name]; ok {
		return memInfo{name: path.Base(name), size: int64(len(d.b))}, nil
	}
	if m.dirs[name] {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (m *memFS) SyncDir(string) error { return nil }

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string               { return i.name }
func (i memInfo) Size() int64                { return i.size }
func (i memInfo) IsDir() bool                { return i.dir }
func (i memInfo) ModTime() time.Time         { return time.Time{} }
func (i memInfo) Sys() any                   { return nil }
func (i memInfo) Type() fs.FileMode          { return i.Mode().Type() }
func (i memInfo) Info() (fs.FileInfo, error) { return i, nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

type memFile struct {
	fs   *memFS
	name string
	d    *memData
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off >= int64(len(f.d.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.d.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(f.d.b)) {
		f.d.b = append(f.d.b, make([]byte, end-int64(len(f.d.b)))...)
	}
	return copy(f.d.b[off:], p), nil
}

func (f *memFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	total := 0
	for _, b := range bufs {
		n, _ := f.WriteAt(b, off+int64(total))
		total += n
	}
	return total, nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if size <= int64(len(f.d.b)) {
		f.d.b = f.d.b[:size]
	} else {
		f.d.b = append(f.d.b, make([]byte, size-int64(len(f.d.b)))...)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return int64(len(f.d.b)), nil
}

func (f *memFile) Datasync() error { return nil }
func (f *memFile) Sync() error     { return nil }
func (f *memFile) Close() error    { return nil }
func (f *memFile) Name() string    { return f.name }
