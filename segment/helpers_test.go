package segment

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/zeebo/xxh3"
)

// makeRecord builds a valid stamped record: one frame per payload, no user
// headers, checksums filled.
func makeRecord(partition, base, ts uint64, payloads [][]byte) []byte {
	n := RecordHeaderSize
	for _, p := range payloads {
		n += FrameHeaderSize + len(p)
	}
	rec := make([]byte, n)
	binary.LittleEndian.PutUint64(rec[hPartitionID:], partition)
	binary.LittleEndian.PutUint64(rec[hBaseOffset:], base)
	binary.LittleEndian.PutUint64(rec[hBaseTimestamp:], ts)
	binary.LittleEndian.PutUint64(rec[hOriginTimestamp:], ts/2)
	binary.LittleEndian.PutUint64(rec[hBatchLength:], uint64(n))
	binary.LittleEndian.PutUint32(rec[hMessageCount:], uint32(len(payloads)))
	sums := make([]byte, checksummedHeaderBytes, checksummedHeaderBytes+8*len(payloads))
	copy(sums, rec[:checksummedHeaderBytes-4])
	binary.LittleEndian.PutUint32(sums[checksummedHeaderBytes-4:], uint32(len(payloads)))
	pos := RecordHeaderSize
	for i, p := range payloads {
		f := rec[pos:]
		binary.LittleEndian.PutUint64(f[8:], base+uint64(i)+1)
		binary.LittleEndian.PutUint32(f[24:], uint32(i))
		binary.LittleEndian.PutUint32(f[fPayloadLen:], uint32(len(p)))
		copy(f[FrameHeaderSize:], p)
		end := FrameHeaderSize + len(p)
		binary.LittleEndian.PutUint64(f[fChecksum:], xxh3.Hash(f[8:end]))
		sums = append(sums, f[:8]...)
		pos += end
	}
	binary.LittleEndian.PutUint64(rec[hBatchChecksum:], xxh3.Hash(sums))
	return rec
}

// simpleRecord builds a record of count messages with payloads of size
// bytes derived from base.
func simpleRecord(partition, base, ts uint64, count, size int) []byte {
	ps := make([][]byte, count)
	for i := range ps {
		p := make([]byte, size)
		for j := range p {
			p[j] = byte(base + uint64(i) + uint64(j))
		}
		ps[i] = p
	}
	return makeRecord(partition, base, ts, ps)
}

func testConfig(segSize uint64) Config {
	c := DefaultConfig(7)
	c.SegmentSize = segSize
	c.AllowSmallSegments = true
	return c
}

func mustOpen(t testing.TB, fsys vfs.FS, dir string, cfg Config) (*Log, *Report) {
	t.Helper()
	l, rep, err := Open(fsys, dir, cfg)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return l, rep
}

// appendN appends count single-message records of size payload bytes with
// timestamps ts0, ts0+1, … and returns them.
func appendN(t testing.TB, l *Log, count, size int, ts0 uint64) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < count; i++ {
		r := simpleRecord(l.cfg.PartitionID, l.NextOffset(), ts0+uint64(i), 1, size)
		if err := l.Append([][]byte{r}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, r)
	}
	return out
}

func asCorruption(t testing.TB, err error) *CorruptionError {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CorruptionError, got %v", err)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%v does not wrap ErrCorrupt", err)
	}
	return ce
}

func segPath(dir string, start uint64, ext string) string {
	return filepath.Join(dir, segmentName(start, ext))
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func xxh3Hash(b []byte) uint64 { return xxh3.Hash(b) }
