package fault

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// CorruptMode is how a data file is damaged.
type CorruptMode string

// Corruption modes.
const (
	// FlipBits flips one bit in each of a few random bytes.
	FlipBits CorruptMode = "flip"
	// Truncate cuts the file at a random length (possibly 0).
	Truncate CorruptMode = "truncate"
	// TornTail cuts 1..4096 bytes off the end, like a write torn by a
	// crash.
	TornTail CorruptMode = "torn-tail"
	// ZeroBlock overwrites a random 4 KiB-aligned block (or the whole
	// file if shorter) with zeros, like a lost sector.
	ZeroBlock CorruptMode = "zero-block"
)

// CorruptModes lists every mode.
var CorruptModes = []CorruptMode{FlipBits, Truncate, TornTail, ZeroBlock}

// DefaultDataFiles are the file patterns iggo keeps durable data in:
// segment logs and indexes (named by their 20-digit start offset),
// partition journal files (named by their first op) and the metadata
// journal (base names, filepath.Match syntax). The server's own logs
// (logs/*.log) and a partition journal's pooled files awaiting reuse
// (recycle-*.wal, which hold no live data) do not match.
var DefaultDataFiles = []string{"[0-9]*.log", "[0-9]*.index", "[0-9]*.wal", "journal.wal"}

// Corruption describes what Corrupt did.
type Corruption struct {
	File   string
	Mode   CorruptMode
	Detail string
}

func (c Corruption) String() string { return fmt.Sprintf("%s %s: %s", c.Mode, c.File, c.Detail) }

// ErrNoDataFiles is returned when a directory holds no file to damage.
var ErrNoDataFiles = errors.New("fault: no data file to corrupt")

// DataFiles lists the non-empty regular files under dir whose base name
// matches one of patterns, sorted, as paths relative to dir.
func DataFiles(dir string, patterns []string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() == 0 {
			return err
		}
		for _, p := range patterns {
			if ok, _ := filepath.Match(p, d.Name()); ok {
				rel, err := filepath.Rel(dir, path)
				if err != nil {
					return err
				}
				out = append(out, rel)
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fault: list data files of %s: %w", dir, err)
	}
	slices.Sort(out)
	return out, nil
}

// Corrupt damages one data file under dir, chosen by rng among
// DataFiles(dir, patterns). The node owning dir must be down. The same
// rng state and directory contents give the same damage.
func Corrupt(dir string, rng *rand.Rand, mode CorruptMode, patterns []string) (Corruption, error) {
	files, err := DataFiles(dir, patterns)
	if err != nil {
		return Corruption{}, err
	}
	if len(files) == 0 {
		return Corruption{}, fmt.Errorf("%w under %s (patterns %v)", ErrNoDataFiles, dir, patterns)
	}
	f := files[rng.IntN(len(files))]
	c, err := CorruptFile(filepath.Join(dir, f), rng, mode)
	c.File = f
	return c, err
}

// CorruptFile damages path in the given mode.
func CorruptFile(path string, rng *rand.Rand, mode CorruptMode) (Corruption, error) {
	c := Corruption{File: path, Mode: mode}
	st, err := os.Stat(path)
	if err != nil {
		return c, fmt.Errorf("fault: corrupt: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return c, fmt.Errorf("fault: corrupt %s: empty file", path)
	}
	switch mode {
	case Truncate, TornTail:
		var to int64
		if mode == Truncate {
			to = rng.Int64N(size)
		} else {
			to = size - 1 - rng.Int64N(min(size, 4096))
		}
		if err := os.Truncate(path, to); err != nil {
			return c, fmt.Errorf("fault: corrupt: %w", err)
		}
		c.Detail = fmt.Sprintf("%d -> %d bytes", size, to)
		return c, nil
	case FlipBits, ZeroBlock:
	default:
		return c, fmt.Errorf("fault: unknown corruption mode %q", mode)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return c, fmt.Errorf("fault: corrupt: %w", err)
	}
	defer f.Close()
	if mode == ZeroBlock {
		const block = 4096
		at := rng.Int64N((size+block-1)/block) * block
		n := min(block, size-at)
		if _, err := f.WriteAt(make([]byte, n), at); err != nil {
			return c, fmt.Errorf("fault: corrupt: %w", err)
		}
		c.Detail = fmt.Sprintf("zeroed %d bytes at %d", n, at)
	} else {
		flips := 1 + rng.IntN(4)
		var at []int64
		for i := 0; i < flips; i++ {
			off := rng.Int64N(size)
			var b [1]byte
			if _, err := f.ReadAt(b[:], off); err != nil {
				return c, fmt.Errorf("fault: corrupt: %w", err)
			}
			b[0] ^= 1 << rng.IntN(8)
			if _, err := f.WriteAt(b[:], off); err != nil {
				return c, fmt.Errorf("fault: corrupt: %w", err)
			}
			at = append(at, off)
		}
		c.Detail = fmt.Sprintf("flipped bits at %v of %d bytes", at, size)
	}
	if err := f.Sync(); err != nil {
		return c, fmt.Errorf("fault: corrupt: %w", err)
	}
	return c, nil
}

// Wipe deletes everything inside dir (the directory itself stays). The
// node owning dir must be down.
func Wipe(dir string) error {
	if dir == "" || dir == "/" {
		return fmt.Errorf("fault: refusing to wipe %q", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("fault: wipe %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("fault: wipe %s: %w", dir, err)
		}
	}
	return nil
}
