package consensus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/iggo/iggo/shard/vfs"
	"github.com/zeebo/xxh3"
)

// The view-state file keeps a group's vsr state record in two slots, each
// write going to both; its format is in the package doc ("View state").
const (
	viewStateFile   = "viewstate"
	viewStateSlot   = 40 << 10
	viewStateHeader = 32
	viewStateMagic  = "IGGOVIEW"
)

var errViewStateTooLarge = errors.New("replica: view state record too large")

type viewState struct {
	fs   vfs.FS
	dir  string
	path string
	f    vfs.File
	seq  uint64
	buf  []byte
}

// openViewState opens (creating when missing) the view-state file in dir and
// returns the newest record's payload, nil when there is none.
func openViewState(fsys vfs.FS, dir string) (*viewState, []byte, error) {
	path := filepath.Join(dir, viewStateFile)
	v := &viewState{fs: fsys, dir: dir, path: path, buf: make([]byte, viewStateSlot)}
	f, err := fsys.OpenFile(path, vfs.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = fsys.OpenFile(path, vfs.O_RDWR|vfs.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("replica: creating %s: %w", path, err)
		}
		if err := fsys.SyncDir(dir); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("replica: syncing %s: %w", dir, err)
		}
		v.f = f
		return v, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("replica: opening %s: %w", path, err)
	}
	v.f = f
	var best []byte
	for slot := 0; slot < 2; slot++ {
		seq, payload, ok := v.readSlot(slot)
		if ok && seq > v.seq {
			v.seq, best = seq, payload
		}
	}
	return v, best, nil
}

func (v *viewState) readSlot(slot int) (uint64, []byte, bool) {
	b := make([]byte, viewStateSlot)
	n, err := v.f.ReadAt(b, int64(slot*viewStateSlot))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, false
	}
	return decodeViewSlot(b[:n], slot)
}

// decodeViewSlot checks one slot's bytes; ok is false for anything but a
// whole, verified record written for that slot.
func decodeViewSlot(b []byte, slot int) (uint64, []byte, bool) {
	if len(b) < viewStateHeader+16 || !bytes.Equal(b[:8], []byte(viewStateMagic)) {
		return 0, nil, false
	}
	seq := binary.LittleEndian.Uint64(b[8:])
	size := int(binary.LittleEndian.Uint32(b[16:]))
	if seq == 0 || int(seq%2) != slot || size > viewStateSlot-viewStateHeader-16 || len(b) < viewStateHeader+size+16 {
		return 0, nil, false
	}
	for _, x := range b[20:viewStateHeader] {
		if x != 0 {
			return 0, nil, false
		}
	}
	end := viewStateHeader + size
	sum := xxh3.Hash128(b[:end])
	if binary.LittleEndian.Uint64(b[end:]) != sum.Lo || binary.LittleEndian.Uint64(b[end+8:]) != sum.Hi {
		return 0, nil, false
	}
	return seq, bytes.Clone(b[viewStateHeader:end]), true
}

// write durably stores payload as the newest record in both slots: first
// in the slot its sequence names (one pwrite, one fdatasync), then again
// with the next sequence in the other slot. A crash during either round
// leaves the old or the new record; once write returns both slots hold the
// new one, so damage to either slot cannot bring back an older record the
// replica already acted past (with one copy per record, bit rot in the
// newest slot made the older slot win: the replica went back to a view it
// had left and diverged, real-stack simulator seed 202967).
func (v *viewState) write(payload []byte) error {
	if len(payload) > viewStateSlot-viewStateHeader-16 {
		return fmt.Errorf("%w: %d bytes", errViewStateTooLarge, len(payload))
	}
	for range 2 {
		if err := v.writeSlot(payload); err != nil {
			return err
		}
	}
	return nil
}

// writeSlot durably writes payload with the next sequence into the slot it
// names.
func (v *viewState) writeSlot(payload []byte) error {
	seq := v.seq + 1
	b := v.buf[:viewStateHeader+len(payload)+16]
	clear(b[:viewStateHeader])
	copy(b, viewStateMagic)
	binary.LittleEndian.PutUint64(b[8:], seq)
	binary.LittleEndian.PutUint32(b[16:], uint32(len(payload)))
	copy(b[viewStateHeader:], payload)
	end := viewStateHeader + len(payload)
	sum := xxh3.Hash128(b[:end])
	binary.LittleEndian.PutUint64(b[end:], sum.Lo)
	binary.LittleEndian.PutUint64(b[end+8:], sum.Hi)
	if _, err := v.f.WriteAt(b, int64(seq%2)*viewStateSlot); err != nil {
		return fmt.Errorf("replica: writing %s: %w", v.path, err)
	}
	if err := v.f.Datasync(); err != nil {
		return fmt.Errorf("replica: syncing %s: %w", v.path, err)
	}
	v.seq = seq
	return nil
}

func (v *viewState) close() error { return v.f.Close() }
