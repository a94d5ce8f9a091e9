package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iggo/iggo/shard/vfs"
)

// Layout is what a node's data directory may hold at its top level.
type Layout struct {
	// Path is the data directory.
	Path string
	// Entries are the top-level names a node creates there (removed by
	// Wipe unless kept).
	Entries []string
	// Keep are paths inside Path (relative to it; the last element may be
	// a filepath.Match pattern) that Wipe leaves alone: the log directory
	// the running server writes, or its log files when that directory is
	// Path itself. A kept path's parents are entered, never removed.
	Keep []string
}

// alwaysKept are top-level names Wipe never removes and never objects to:
// the lock file and a filesystem root's lost+found (a data directory that
// is a mount point).
var alwaysKept = []string{LockFileName, "lost+found"}

// TopEntry is the first element of a relative path inside the data
// directory ("" for an absolute path or one that leaves the directory).
func TopEntry(rel string) string {
	if rel == "" || filepath.IsAbs(rel) {
		return ""
	}
	c := filepath.Clean(rel)
	if c == "." || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return ""
	}
	top, _, _ := strings.Cut(c, string(filepath.Separator))
	return top
}

func (l Layout) keep() []string {
	out := slices.Clone(alwaysKept)
	for _, k := range l.Keep {
		if TopEntry(k) != "" {
			out = append(out, filepath.Clean(k))
		}
	}
	return out
}

func (l Layout) known(name string) bool {
	if slices.Contains(l.Entries, name) {
		return true
	}
	for _, k := range l.keep() {
		if TopEntry(k) == name {
			return true
		}
	}
	return kept(l.keep(), name)
}

// kept reports whether rel matches a kept path or pattern.
func kept(keep []string, rel string) bool {
	for _, k := range keep {
		if ok, _ := filepath.Match(k, rel); ok {
			return true
		}
	}
	return false
}

// ForeignError refuses to wipe a directory that does not look like an iggo
// data directory.
type ForeignError struct {
	Path    string
	Foreign []string // unexpected top-level entries (at most a few)
	More    int      // how many more there are
}

func (e *ForeignError) Error() string {
	list := strings.Join(e.Foreign, ", ")
	if e.More > 0 {
		list += fmt.Sprintf(" and %d more", e.More)
	}
	return fmt.Sprintf("--fresh: refusing to wipe %s: it does not look like an iggo data directory (unexpected: %s); "+
		"point path (IGGY_PATH) at an iggo data directory or an empty one, or remove it yourself", e.Path, list)
}

// CheckWipe returns a *ForeignError when l.Path holds a top-level entry
// that is neither one of l.Entries nor kept. A missing directory passes.
func CheckWipe(fsys vfs.FS, l Layout) error {
	ents, err := fsys.ReadDir(l.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("datadir: reading %s: %w", l.Path, err)
	}
	var foreign []string
	for _, e := range ents {
		if !l.known(e.Name()) {
			foreign = append(foreign, e.Name())
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	const show = 5
	fe := &ForeignError{Path: l.Path, Foreign: foreign}
	if len(foreign) > show {
		fe.Foreign, fe.More = foreign[:show], len(foreign)-show
	}
	return fe
}

// Wipe checks l (CheckWipe) and removes everything under l.Path except the
// kept paths, then syncs the directories it removed from.
func Wipe(fsys vfs.FS, l Layout) error {
	if err := CheckWipe(fsys, l); err != nil {
		return err
	}
	return wipeDir(fsys, l.Path, "", l.keep())
}

// wipeDir removes the entries of root/rel that are not kept and not on the
// way to a kept path.
func wipeDir(fsys vfs.FS, root, rel string, keep []string) error {
	dir := filepath.Join(root, rel)
	ents, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("datadir: reading %s: %w", dir, err)
	}
	removed := false
	for _, e := range ents {
		p := filepath.Join(rel, e.Name())
		switch {
		case kept(keep, p):
			continue
		case e.IsDir() && slices.ContainsFunc(keep, func(k string) bool {
			return strings.HasPrefix(k, p+string(filepath.Separator))
		}):
			if err := wipeDir(fsys, root, p, keep); err != nil {
				return err
			}
			continue
		}
		if err := fsys.RemoveAll(filepath.Join(root, p)); err != nil {
			return fmt.Errorf("datadir: removing %s: %w", filepath.Join(root, p), err)
		}
		removed = true
	}
	if removed {
		return fsys.SyncDir(dir)
	}
	return nil
}
