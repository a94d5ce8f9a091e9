package vsrtest

import (
	"fmt"

	"github.com/iggo/iggo/vsr"
)

// Entry is one journal entry on a Disk.
type Entry struct {
	Op    uint64
	Frame []byte // header ‖ body, as appended
	// Durable: the append completed, so the entry survives a crash.
	Durable bool
	// Corrupt: the entry's bytes were damaged after they became durable.
	Corrupt    bool
	pendingFix bool
}

// Checkpoint is a durable checkpoint: its manifest and artifact bytes.
type Checkpoint struct {
	Manifest  vsr.Manifest
	Artifacts map[uint32][]byte
}

// Disk models what one replica of one group keeps across crashes: the state
// record, the journal and checkpoints. Its crash model follows the journal
// contract in the vsr package doc:
//
//   - an append is durable once its completion was delivered; a crash keeps a
//     random prefix of the appends still in flight and loses the rest (a torn
//     last append counts as lost: the journal proves it was never synced);
//   - a truncate is durable once a later append completed; a crash before
//     that may undo it (the later appends being lost too) — of several such
//     truncates, any later part of them, never leaving a hole;
//   - a state write is atomic: a crash before its completion keeps the old
//     record or, sometimes, the new one;
//   - a durable entry can be corrupted afterwards (a sector fault); if the
//     corrupt entry is the journal's last, recovery cannot tell it from a
//     torn write and reports the head as uncertain, leaving the damaged
//     tail in place until the replica truncates it.
type Disk struct {
	State        []byte
	pendingState []byte
	Journal      []Entry
	next         uint64 // op the next append must carry when the journal is empty
	// ghosts: the durable entries that truncates since the last completed
	// append removed (ascending, contiguous above ghostAbove); a crash may
	// bring them back. ghostKeeps: the keep points of the earlier of those
	// truncates, above ghostAbove (a crash may undo only the later ones).
	ghosts      []Entry
	ghostAbove  uint64
	ghostKeeps  []uint64
	Checkpoints map[uint64]*Checkpoint
	staging     map[uint32][]byte // state transfer artifacts by id
	// ReadErrors makes reads of these ops fail (until removed).
	ReadErrors map[uint64]bool
}

// NewDisk returns an empty disk.
func NewDisk() *Disk {
	return &Disk{Checkpoints: map[uint64]*Checkpoint{}, staging: map[uint32][]byte{},
		ReadErrors: map[uint64]bool{}}
}

func (d *Disk) lastOp() uint64 {
	if len(d.Journal) == 0 {
		if d.next == 0 {
			return 0
		}
		return d.next - 1
	}
	return d.Journal[len(d.Journal)-1].Op
}

func (d *Disk) append(op uint64, frame []byte) {
	if last := d.lastOp(); op != last+1 {
		panic(fmt.Sprintf("vsrtest: journal append of op %d after op %d", op, last))
	}
	d.Journal = append(d.Journal, Entry{Op: op, Frame: frame})
}

// completeAppend marks op durable; like fdatasync it makes every earlier
// entry durable too, and it makes any earlier truncate durable.
func (d *Disk) completeAppend(op uint64) {
	for i := range d.Journal {
		if d.Journal[i].Op <= op {
			d.Journal[i].Durable = true
		}
	}
	d.ghosts, d.ghostKeeps = nil, nil
}

func (d *Disk) truncate(keep uint64) {
	kept := d.Journal[:0]
	var cut []Entry
	for _, e := range d.Journal {
		if e.Op <= keep {
			kept = append(kept, e)
		} else if e.Durable {
			cut = append(cut, e)
		}
	}
	d.Journal = kept
	switch {
	case len(cut) == 0:
	case len(d.ghosts) == 0:
		d.ghosts, d.ghostAbove = cut, keep
	default:
		// A second truncate before any append completed, below the first:
		// what it cuts lies right below the first one's ghosts (every entry
		// above the first keep point is a non-durable append since). A crash
		// may undo both, only this one, or neither; recording only the
		// first would let a crash restore its ghosts above a hole.
		d.ghostKeeps = append(d.ghostKeeps, d.ghostAbove)
		d.ghosts = append(cut, d.ghosts...)
		d.ghostAbove = keep
	}
	if len(d.Journal) == 0 {
		d.next = keep + 1
	}
}

func (d *Disk) discard(through uint64) {
	kept := d.Journal[:0]
	for _, e := range d.Journal {
		if e.Op > through {
			kept = append(kept, e)
		}
	}
	last := d.lastOp()
	d.Journal = kept
	if len(d.Journal) == 0 {
		d.next = max(through, last) + 1
	}
	d.ghosts, d.ghostKeeps = nil, nil
}

// Entry returns journal entry op, or nil.
func (d *Disk) Entry(op uint64) *Entry { return d.entry(op) }

func (d *Disk) entry(op uint64) *Entry {
	for i := range d.Journal {
		if d.Journal[i].Op == op {
			return &d.Journal[i]
		}
	}
	return nil
}

// Crash applies the crash model. rng decides how much of the in-flight work
// survives; nil loses all of it.
func (d *Disk) Crash(rng *vsr.PRNG) {
	if d.pendingState != nil && rng != nil && rng.Chance(1, 2) {
		d.State = d.pendingState
	}
	d.pendingState = nil
	keep := len(d.Journal)
	for i, e := range d.Journal {
		if !e.Durable {
			keep = i
			break
		}
	}
	if rng != nil && keep < len(d.Journal) {
		keep += rng.Intn(len(d.Journal) - keep + 1)
	}
	for i := range d.Journal[:keep] {
		d.Journal[i].Durable = true
	}
	d.Journal = d.Journal[:keep]
	if len(d.ghosts) > 0 && rng != nil && rng.Chance(1, 2) {
		// Undo the truncates from a random one of them on: the ghosts up to
		// the keep point of the last truncate that survived come back.
		top := ^uint64(0)
		if len(d.ghostKeeps) > 0 {
			if i := rng.Intn(len(d.ghostKeeps) + 1); i < len(d.ghostKeeps) {
				top = d.ghostKeeps[i]
			}
		}
		kept := d.Journal[:0]
		for _, e := range d.Journal {
			if e.Op <= d.ghostAbove {
				kept = append(kept, e)
			}
		}
		for _, e := range d.ghosts {
			if e.Op <= top {
				kept = append(kept, e)
			}
		}
		d.Journal = kept
	}
	d.ghosts, d.ghostKeeps = nil, nil
}

// CrashUndoingTruncate crashes like Crash but always undoes a truncate that
// no later append made durable (the entries it removed come back).
func (d *Disk) CrashUndoingTruncate() {
	ghosts, above := d.ghosts, d.ghostAbove
	d.Crash(nil)
	if len(ghosts) > 0 {
		kept := d.Journal[:0]
		for _, e := range d.Journal {
			if e.Op <= above {
				kept = append(kept, e)
			}
		}
		d.Journal = append(kept, ghosts...)
	}
}

// rewrite replaces corrupt entry op with a verified copy; it becomes good
// once durable (completeRewrite).
func (d *Disk) rewrite(op uint64, frame []byte) {
	if e := d.entry(op); e != nil {
		e.Frame = frame
		e.pendingFix = true
	}
}

func (d *Disk) completeRewrite(op uint64) {
	if e := d.entry(op); e != nil && e.pendingFix {
		e.Corrupt, e.pendingFix = false, false
	}
}

// Wipe empties the disk (a replaced drive, or iggo-server --fresh).
func (d *Disk) Wipe() { *d = *NewDisk() }

// Corrupt damages durable entry op; it reports whether there was one.
func (d *Disk) Corrupt(op uint64) bool {
	if e := d.entry(op); e != nil && e.Durable {
		e.Corrupt = true
		return true
	}
	return false
}

// Recover returns the journal as the node hands it to vsr.New. A corrupt
// tail is left out of what it returns (the head is then uncertain) but stays
// on the disk: as the journal contract asks, only the replica's truncate —
// which it issues once its fence is durable — removes it, so a crash before
// then finds the damage again instead of a clean, shorter journal.
func (d *Disk) Recover() ([]vsr.JournalEntry, bool) {
	uncertain := false
	n := len(d.Journal)
	for n > 0 && d.Journal[n-1].Corrupt {
		n--
		uncertain = true
	}
	out := make([]vsr.JournalEntry, n)
	for i, e := range d.Journal[:n] {
		out[i].Op = e.Op
		if !e.Corrupt {
			h := new(vsr.Header)
			copy(h[:], e.Frame[:vsr.HeaderSize])
			out[i].Header = h
		}
	}
	return out, uncertain
}

// Read returns entry op as the journal reads it back.
func (d *Disk) Read(op uint64) ([]byte, error) {
	if d.ReadErrors[op] {
		return nil, fmt.Errorf("vsrtest: injected read error at op %d", op)
	}
	e := d.entry(op)
	switch {
	case e == nil:
		return nil, fmt.Errorf("vsrtest: no journal entry %d", op)
	case e.Corrupt:
		b := append([]byte(nil), e.Frame...)
		b[len(b)/2] ^= 0x40
		return b, nil
	}
	return e.Frame, nil
}

// HasDurable reports whether the disk holds an intact durable copy of op with
// the given identity.
func (d *Disk) HasDurable(op uint64, id vsr.Checksum) bool {
	e := d.entry(op)
	if e == nil || !e.Durable || e.Corrupt {
		return false
	}
	return (*vsr.Header)(e.Frame[:vsr.HeaderSize]).Identity() == id
}
