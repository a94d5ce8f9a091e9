package vfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// OS is the portable implementation over package os. It is used when
// io_uring is unavailable and as the reference the other implementations
// are tested against.
type OS struct{}

// NewOS returns the portable filesystem.
func NewOS() *OS { return &OS{} }

func (OS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (OS) Remove(name string) error                     { return os.Remove(name) }
func (OS) RemoveAll(name string) error                  { return os.RemoveAll(name) }
func (OS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (OS) MkdirAll(name string, perm fs.FileMode) error { return os.MkdirAll(name, perm) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (OS) Stat(name string) (fs.FileInfo, error)        { return os.Stat(name) }

func (OS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

type osFile struct{ f *os.File }

func (o *osFile) ReadAt(p []byte, off int64) (int, error) { return o.f.ReadAt(p, off) }

func (o *osFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := o.f.WriteAt(p, off)
	if err == nil && n != len(p) {
		err = fmt.Errorf("vfs: short write to %s: %d of %d bytes", o.f.Name(), n, len(p))
	}
	return n, err
}

func (o *osFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	total := 0
	for _, b := range bufs {
		n, err := o.WriteAt(b, off+int64(total))
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (o *osFile) Datasync() error           { return datasync(o.f) }
func (o *osFile) Sync() error               { return o.f.Sync() }
func (o *osFile) Truncate(size int64) error { return o.f.Truncate(size) }
func (o *osFile) Close() error              { return o.f.Close() }
func (o *osFile) Name() string              { return o.f.Name() }

func (o *osFile) Size() (int64, error) {
	st, err := o.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
