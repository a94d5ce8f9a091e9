package fault

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func content(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) | 1 // never zero
	}
	return b
}

func TestCorruptFileModes(t *testing.T) {
	for _, size := range []int{1, 100, 4096, 10_000} {
		for _, mode := range CorruptModes {
			for seed := uint64(0); seed < 5; seed++ {
				path := filepath.Join(t.TempDir(), "f")
				orig := content(size)
				writeFile(t, path, orig)
				c, err := CorruptFile(path, rand.New(rand.NewPCG(seed, 1)), mode)
				if err != nil {
					t.Fatalf("%s size %d: %v", mode, size, err)
				}
				got, _ := os.ReadFile(path)
				switch mode {
				case Truncate:
					if len(got) >= size || !bytes.Equal(got, orig[:len(got)]) {
						t.Errorf("truncate %d: got %d bytes (%s)", size, len(got), c)
					}
				case TornTail:
					if len(got) >= size || size-len(got) > 4096 || !bytes.Equal(got, orig[:len(got)]) {
						t.Errorf("torn tail %d: got %d bytes (%s)", size, len(got), c)
					}
				case FlipBits:
					diff := 0
					for i := range got {
						if got[i] != orig[i] {
							diff++
						}
					}
					if len(got) != size || diff == 0 || diff > 4 {
						t.Errorf("flip %d: %d bytes differ, size %d (%s)", size, diff, len(got), c)
					}
				case ZeroBlock:
					zeros := bytes.Count(got, []byte{0})
					if len(got) != size || zeros == 0 || zeros > 4096 {
						t.Errorf("zero block %d: %d zeros (%s)", size, zeros, c)
					}
				}
			}
		}
	}
}

func TestCorruptIsDeterministic(t *testing.T) {
	for _, mode := range CorruptModes {
		var results [2][]byte
		for i := range results {
			dir := t.TempDir()
			for j, name := range []string{"a/00000000000000000000.log", "a/00000000000000000000.index", "b/journal.wal", "b/other.txt"} {
				writeFile(t, filepath.Join(dir, name), content(3000+j))
			}
			c, err := Corrupt(dir, rand.New(rand.NewPCG(7, 7)), mode, DefaultDataFiles)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Ext(c.File) == ".txt" {
				t.Errorf("corrupted %s, not a data file", c.File)
			}
			results[i], _ = os.ReadFile(filepath.Join(dir, c.File))
			results[i] = append([]byte(c.String()+"\n"), results[i]...)
		}
		if !bytes.Equal(results[0], results[1]) {
			t.Errorf("%s: same seed, different damage", mode)
		}
	}
}

func TestDataFilesAndErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p/1.log"), content(10))
	writeFile(t, filepath.Join(dir, "p/2.log"), nil) // empty: skipped
	writeFile(t, filepath.Join(dir, "x.toml"), content(10))
	writeFile(t, filepath.Join(dir, "p/recycle-00000000000000000064.wal"), content(10)) // pooled: no live data
	files, err := DataFiles(dir, DefaultDataFiles)
	if err != nil || len(files) != 1 || files[0] != filepath.Join("p", "1.log") {
		t.Fatalf("files %v, %v", files, err)
	}
	if _, err := Corrupt(dir, rand.New(rand.NewPCG(1, 1)), FlipBits, []string{"[0-9]*.wal"}); !errors.Is(err, ErrNoDataFiles) {
		t.Errorf("no match: %v", err)
	}
	if _, err := CorruptFile(filepath.Join(dir, "p/2.log"), rand.New(rand.NewPCG(1, 1)), FlipBits); err == nil {
		t.Error("corrupted an empty file")
	}
	if _, err := CorruptFile(filepath.Join(dir, "p/1.log"), rand.New(rand.NewPCG(1, 1)), "melt"); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestWipe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a/b/c.log"), content(10))
	writeFile(t, filepath.Join(dir, "top.wal"), content(10))
	if err := Wipe(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Fatalf("after wipe: %v, %v", entries, err)
	}
	if err := Wipe(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("wiping a missing dir: %v", err)
	}
	for _, bad := range []string{"", "/"} {
		if err := Wipe(bad); err == nil {
			t.Errorf("Wipe(%q) accepted", bad)
		}
	}
}
