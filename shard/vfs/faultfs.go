package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fault is the fault-injecting in-memory filesystem used by tests and the
// simulator. Everything random it does comes from the seed it was created
// with, so the same sequence of calls gives the same result.
//
// # Model
//
// Each file is an inode holding its current contents (what reads see), its
// durable contents (as of the last successful Datasync/Sync) and the ordered
// list of mutations (writes, truncations) since then. Directory changes
// (create, remove, rename, mkdir) form one ordered log; an entry becomes
// durable when SyncDir is called on the directory it changes (for a rename:
// the destination's directory).
//
// Crash returns a new image, as a machine would find its disk after losing
// power, and makes the old one unusable (every call fails with ErrInjected):
//
//   - directory log: a random prefix of the not-yet-durable entries is kept
//     (metadata is journaled in order by real filesystems), plus every
//     durable entry; a rename is kept or lost whole. Names whose parent
//     directory did not survive vanish.
//   - each surviving file, independently: all unsynced mutations kept, or
//     all dropped, or a random prefix kept and the next write torn at
//     sector granularity (each sector independently new or old; the size
//     may or may not cover the torn write).
//
// CrashWith picks one of these outcomes deterministically (KeepAll models a
// process kill where the kernel survives; DropAll a strict power loss).
//
// Injected faults (Inject) fail, tear, misdirect, or halt at (a power cut) chosen
// operations by kind, path, position and probability. CorruptSector flips
// bits in a sector of the durable contents (bit rot). All injected errors
// wrap ErrInjected.
//
// Fault is safe for concurrent use (one mutex), so it can stand behind code
// that is itself concurrent in tests.
type Fault struct {
	mu      sync.Mutex
	rng     *rand.Rand
	sector  int
	crashed bool
	halted  bool

	cur  map[string]*fnode // current namespace: cleaned path → node
	base map[string]*fnode // namespace before the first entry of mlog
	mlog []metaOp

	nextIno uint64
	rules   []*faultRule
	nextID  int

	hints map[string]WritebackStats // writeback hints by cleaned path
}

// WritebackStats counts the writeback hints a Fault file received.
type WritebackStats struct {
	Calls int
	Bytes int64
	// End is the highest offset any hint reached.
	End int64
	// SyncStarts counts StartSync calls (background fdatasyncs).
	SyncStarts int
	// Releases and ReleasedBytes count Release hints; ReleasedEnd is the
	// highest offset one reached.
	Releases      int
	ReleasedBytes int64
	ReleasedEnd   int64
}

type fnode struct {
	ino     uint64
	dir     bool
	data    []byte
	synced  []byte
	pending []mutation
}

type mutation struct {
	truncate bool
	off      int64 // write offset, or new size for truncate
	data     []byte
}

type metaKind int

const (
	metaCreate metaKind = iota
	metaMkdir
	metaRemove
	metaRename
)

type metaOp struct {
	kind     metaKind
	path     string
	to       string // rename destination
	node     *fnode // create/mkdir
	durable  bool
	syncedBy string // the directory whose SyncDir makes this durable
}

// DefaultSector is the torn-write and corruption granularity unless
// FaultOptions say otherwise (the smallest unit disks write atomically).
const DefaultSector = 512

// FaultOptions configure NewFault.
type FaultOptions struct {
	// Sector is the tear and corruption granularity; DefaultSector if 0.
	Sector int
}

// NewFault returns an empty in-memory filesystem (with "/" and "." present
// and durable) driven by seed.
func NewFault(seed uint64, opts ...FaultOptions) *Fault {
	f := &Fault{
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		sector: DefaultSector,
		cur:    map[string]*fnode{},
		base:   map[string]*fnode{},
	}
	if len(opts) > 0 && opts[0].Sector > 0 {
		f.sector = opts[0].Sector
	}
	for _, root := range []string{"/", "."} {
		n := f.newNode(true)
		f.cur[root] = n
		f.base[root] = n
	}
	return f
}

func (f *Fault) newNode(dir bool) *fnode {
	f.nextIno++
	return &fnode{ino: f.nextIno, dir: dir}
}

// Op is a set of operation kinds, for fault rules.
type Op uint32

const (
	OpOpen Op = 1 << iota
	OpRead
	OpWrite
	OpSync // Datasync and Sync
	OpSyncDir
	OpTruncate
	OpRename
	OpRemove
	OpMkdir
	OpReadDir
	OpStat
	OpAll Op = 1<<iota - 1
)

var opNames = []string{"open", "read", "write", "sync", "syncdir", "truncate", "rename", "remove", "mkdir", "readdir", "stat"}

func (o Op) String() string {
	var parts []string
	for i, n := range opNames {
		if o&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Action is what a firing rule does.
type Action int

const (
	// Fail makes the operation return an error without effect.
	Fail Action = iota
	// Tear applies part of a write (TearAt bytes, or a random subset of its
	// sectors when TearAt < 0) and then returns an error. On other
	// operations it acts as Fail.
	Tear
	// Halt is a power cut during the operation: a write is torn as by Tear,
	// and from then on every operation fails until Crash is called. It lets
	// a test stop the code under test at an exact point.
	Halt
	// Misdirect lands a write, whole, at another offset of the same file
	// (MisdirectBy bytes away, or a random non-zero number of sectors when
	// MisdirectBy is 0, never before offset 0) and reports success: the
	// intended range keeps its old bytes. It models a drive or controller
	// that writes to the wrong block. On other operations it acts as Fail.
	Misdirect
)

// Rule selects operations to fail.
type Rule struct {
	Ops    Op      // kinds matched; 0 means all
	Path   string  // only paths with this prefix ("" matches all)
	After  int     // let this many matching operations through first
	Count  int     // then fire this many times; 0 means without end
	Prob   float64 // fire with this probability; 0 means always
	Action Action
	TearAt int // Tear: bytes of the write that land; < 0 random sectors
	// Misdirect: the distance, in bytes, from the intended offset to where
	// the write lands; 0 picks 1 to 8 sectors either way at random.
	MisdirectBy int64
}

type faultRule struct {
	Rule
	id    int
	seen  int
	fired int
}

// Inject adds a rule and returns its id for Remove.
func (f *Fault) Inject(r Rule) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.rules = append(f.rules, &faultRule{Rule: r, id: f.nextID})
	return f.nextID
}

// RemoveRule deletes a rule; ClearRules deletes all.
func (f *Fault) RemoveRule(id int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = slices.DeleteFunc(f.rules, func(r *faultRule) bool { return r.id == id })
}

func (f *Fault) ClearRules() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}

// Fired reports how many times rule id has fired.
func (f *Fault) Fired(id int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.rules {
		if r.id == id {
			return r.fired
		}
	}
	return 0
}

// check runs the rules for one operation; it returns the rule that fires.
func (f *Fault) check(op Op, path string) (*faultRule, error) {
	if f.crashed {
		return nil, fmt.Errorf("vfs: %s %s after crash: %w", op, path, ErrInjected)
	}
	if f.halted {
		return nil, fmt.Errorf("vfs: %s %s after a halt: %w", op, path, ErrInjected)
	}
	for _, r := range f.rules {
		if r.Ops != 0 && r.Ops&op == 0 {
			continue
		}
		if r.Path != "" && !strings.HasPrefix(path, r.Path) {
			continue
		}
		r.seen++
		if r.seen <= r.After {
			continue
		}
		if r.Count > 0 && r.fired >= r.Count {
			continue
		}
		if r.Prob > 0 && f.rng.Float64() >= r.Prob {
			continue
		}
		r.fired++
		if r.Action == Halt {
			f.halted = true
		}
		return r, fmt.Errorf("vfs: %s %s: rule %d: %w", op, path, r.id, ErrInjected)
	}
	return nil, nil
}

func clean(name string) string { return filepath.Clean(name) }

func parentOf(p string) string { return filepath.Dir(p) }

func (f *Fault) lookupDir(p string) bool {
	n, ok := f.cur[p]
	return ok && n.dir
}

func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

func (f *Fault) logMeta(op metaOp) {
	f.mlog = append(f.mlog, op)
}

// OpenFile implements FS.
func (f *Fault) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpOpen, p); err != nil {
		return nil, err
	}
	n, ok := f.cur[p]
	switch {
	case ok && n.dir:
		return nil, pathErr("open", name, syscall.EISDIR)
	case ok && flag&O_CREATE != 0 && flag&O_EXCL != 0:
		return nil, pathErr("open", name, fs.ErrExist)
	case !ok && flag&O_CREATE == 0:
		return nil, pathErr("open", name, fs.ErrNotExist)
	case !ok:
		if !f.lookupDir(parentOf(p)) {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		n = f.newNode(false)
		f.cur[p] = n
		f.logMeta(metaOp{kind: metaCreate, path: p, node: n, syncedBy: parentOf(p)})
	}
	if flag&(O_WRONLY|O_RDWR) != 0 && flag&O_TRUNC != 0 {
		f.mutate(n, mutation{truncate: true, off: 0})
	}
	return &faultFile{fs: f, n: n, name: name, path: p, writable: flag&(O_WRONLY|O_RDWR) != 0}, nil
}

// mutate applies m to n's current contents and remembers it as unsynced.
func (f *Fault) mutate(n *fnode, m mutation) {
	n.data = applyMutation(n.data, m)
	n.pending = append(n.pending, m)
}

func applyMutation(data []byte, m mutation) []byte {
	if m.truncate {
		if m.off <= int64(len(data)) {
			return data[:m.off]
		}
		return append(data, make([]byte, m.off-int64(len(data)))...)
	}
	end := m.off + int64(len(m.data))
	if end > int64(len(data)) {
		data = append(data, make([]byte, end-int64(len(data)))...)
	}
	copy(data[m.off:], m.data)
	return data
}

// Remove implements FS.
func (f *Fault) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpRemove, p); err != nil {
		return err
	}
	n, ok := f.cur[p]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir {
		for q := range f.cur {
			if parentOf(q) == p && q != p {
				return pathErr("remove", name, syscall.ENOTEMPTY)
			}
		}
	}
	delete(f.cur, p)
	f.logMeta(metaOp{kind: metaRemove, path: p, syncedBy: parentOf(p)})
	return nil
}

// RemoveAll implements FS.
func (f *Fault) RemoveAll(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpRemove, p); err != nil {
		return err
	}
	if _, ok := f.cur[p]; !ok {
		return nil
	}
	// Children first, deepest first, so that a crash keeping a prefix of
	// the log never keeps a child whose parent is already gone.
	var victims []string
	for q := range f.cur {
		if q == p || strings.HasPrefix(q, p+"/") {
			victims = append(victims, q)
		}
	}
	sort.Slice(victims, func(i, j int) bool {
		di, dj := strings.Count(victims[i], "/"), strings.Count(victims[j], "/")
		if di != dj {
			return di > dj
		}
		return victims[i] < victims[j]
	})
	for _, q := range victims {
		delete(f.cur, q)
		f.logMeta(metaOp{kind: metaRemove, path: q, syncedBy: parentOf(q)})
	}
	return nil
}

// Rename implements FS.
func (f *Fault) Rename(oldpath, newpath string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	op, np := clean(oldpath), clean(newpath)
	if _, err := f.check(OpRename, op); err != nil {
		return err
	}
	n, ok := f.cur[op]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldpath, Err: fs.ErrNotExist}
	}
	if !f.lookupDir(parentOf(np)) {
		return &fs.PathError{Op: "rename", Path: newpath, Err: fs.ErrNotExist}
	}
	if op == np {
		return nil
	}
	if dst, ok := f.cur[np]; ok {
		if dst.dir != n.dir {
			return &fs.PathError{Op: "rename", Path: newpath, Err: syscall.EISDIR}
		}
		if dst.dir && f.hasChildren(np) {
			return &fs.PathError{Op: "rename", Path: newpath, Err: syscall.ENOTEMPTY}
		}
	}
	if n.dir && strings.HasPrefix(np, op+"/") {
		return &fs.PathError{Op: "rename", Path: newpath, Err: syscall.EINVAL}
	}
	renameIn(f.cur, op, np)
	if n.dir {
		// Pending changes inside the moved directory are now made durable
		// by syncing it under its new name.
		for i := range f.mlog {
			if sb := f.mlog[i].syncedBy; !f.mlog[i].durable && (sb == op || strings.HasPrefix(sb, op+"/")) {
				f.mlog[i].syncedBy = np + sb[len(op):]
			}
		}
	}
	f.logMeta(metaOp{kind: metaRename, path: op, to: np, syncedBy: parentOf(np)})
	return nil
}

func (f *Fault) hasChildren(dir string) bool {
	for q := range f.cur {
		if q != dir && parentOf(q) == dir {
			return true
		}
	}
	return false
}

// renameIn moves op (and, for a directory, everything below it) to np.
func renameIn(ns map[string]*fnode, op, np string) {
	moved := map[string]*fnode{}
	for q, n := range ns {
		if q == op {
			moved[np] = n
		} else if strings.HasPrefix(q, op+"/") {
			moved[np+q[len(op):]] = n
		}
	}
	delete(ns, op)
	for q := range ns {
		if strings.HasPrefix(q, op+"/") {
			delete(ns, q)
		}
	}
	delete(ns, np)
	for q := range ns {
		if strings.HasPrefix(q, np+"/") {
			delete(ns, q)
		}
	}
	for q, n := range moved {
		ns[q] = n
	}
}

// MkdirAll implements FS.
func (f *Fault) MkdirAll(name string, perm fs.FileMode) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpMkdir, p); err != nil {
		return err
	}
	var todo []string
	for d := p; ; d = parentOf(d) {
		if n, ok := f.cur[d]; ok {
			if !n.dir {
				return pathErr("mkdir", d, syscall.ENOTDIR)
			}
			break
		}
		todo = append(todo, d)
	}
	for i := len(todo) - 1; i >= 0; i-- {
		n := f.newNode(true)
		f.cur[todo[i]] = n
		f.logMeta(metaOp{kind: metaMkdir, path: todo[i], node: n, syncedBy: parentOf(todo[i])})
	}
	return nil
}

// ReadDir implements FS.
func (f *Fault) ReadDir(name string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpReadDir, p); err != nil {
		return nil, err
	}
	n, ok := f.cur[p]
	if !ok {
		return nil, pathErr("readdir", name, fs.ErrNotExist)
	}
	if !n.dir {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	var out []fs.DirEntry
	for q, c := range f.cur {
		if q != p && parentOf(q) == p {
			out = append(out, fs.FileInfoToDirEntry(faultInfo{name: filepath.Base(q), size: int64(len(c.data)), dir: c.dir}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Stat implements FS.
func (f *Fault) Stat(name string) (fs.FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(name)
	if _, err := f.check(OpStat, p); err != nil {
		return nil, err
	}
	n, ok := f.cur[p]
	if !ok {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return faultInfo{name: filepath.Base(p), size: int64(len(n.data)), dir: n.dir}, nil
}

// SyncDir implements FS.
func (f *Fault) SyncDir(dir string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := clean(dir)
	if _, err := f.check(OpSyncDir, p); err != nil {
		return err
	}
	n, ok := f.cur[p]
	if !ok {
		return pathErr("syncdir", dir, fs.ErrNotExist)
	}
	if !n.dir {
		return pathErr("syncdir", dir, syscall.ENOTDIR)
	}
	for i := range f.mlog {
		m := &f.mlog[i]
		if m.syncedBy != p || m.durable {
			continue
		}
		m.durable = true
		if m.kind == metaRemove {
			// Earlier changes below a removed directory can no longer be
			// synced through their own (vanished) directory; the removal
			// settles them.
			for j := 0; j < i; j++ {
				if strings.HasPrefix(f.mlog[j].path, m.path+"/") {
					f.mlog[j].durable = true
				}
			}
		}
	}
	// Fold the durable prefix into base so the log stays short.
	k := 0
	for k < len(f.mlog) && f.mlog[k].durable {
		replayMeta(f.base, f.mlog[k])
		k++
	}
	f.mlog = append(f.mlog[:0], f.mlog[k:]...)
	return nil
}

// Submit implements FS by running the batch sequentially.
func (f *Fault) Submit(b *Batch) error { return SubmitSequential(f, b) }

func replayMeta(ns map[string]*fnode, m metaOp) {
	switch m.kind {
	case metaCreate, metaMkdir:
		if p, ok := ns[parentOf(m.path)]; ok && p.dir {
			ns[m.path] = m.node
		}
	case metaRemove:
		delete(ns, m.path)
	case metaRename:
		if _, ok := ns[m.path]; ok {
			if p, ok := ns[parentOf(m.to)]; ok && p.dir {
				renameIn(ns, m.path, m.to)
			}
		}
	}
}

// CrashMode selects how Crash treats unsynced state.
type CrashMode int

const (
	// CrashRandom drops, keeps or tears unsynced state at random.
	CrashRandom CrashMode = iota
	// CrashKeepAll keeps every write and directory change (a process kill
	// with the kernel alive).
	CrashKeepAll
	// CrashDropAll keeps only what was synced.
	CrashDropAll
)

// Crash returns the image a crash leaves behind (randomly, see Fault) and
// makes f unusable.
func (f *Fault) Crash() *Fault { return f.CrashWith(CrashRandom) }

// CrashWith is Crash with the outcome chosen by mode.
func (f *Fault) CrashWith(mode CrashMode) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		panic("vfs: Crash of a Fault filesystem that already crashed")
	}
	f.crashed = true

	// Namespace: base, then the log with a random prefix of the
	// non-durable entries kept and every durable one.
	ns := make(map[string]*fnode, len(f.base))
	for p, n := range f.base {
		ns[p] = n
	}
	keep := 0
	switch mode {
	case CrashRandom:
		keep = f.rng.IntN(len(f.mlog) + 1)
	case CrashKeepAll:
		keep = len(f.mlog)
	}
	for i, m := range f.mlog {
		if i < keep || m.durable {
			replayMeta(ns, m)
		}
	}
	// Drop names whose parent directory did not survive.
	paths := make([]string, 0, len(ns))
	for p := range ns {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		return strings.Count(paths[i], "/") < strings.Count(paths[j], "/") ||
			strings.Count(paths[i], "/") == strings.Count(paths[j], "/") && paths[i] < paths[j]
	})
	for _, p := range paths {
		if p == "/" || p == "." {
			continue
		}
		if par, ok := ns[parentOf(p)]; !ok || !par.dir {
			delete(ns, p)
		}
	}

	// Contents: each surviving inode once, in inode order.
	byIno := map[*fnode]*fnode{}
	var nodes []*fnode
	for _, p := range paths {
		if n, ok := ns[p]; ok {
			if _, seen := byIno[n]; !seen {
				byIno[n] = nil
				nodes = append(nodes, n)
			}
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ino < nodes[j].ino })

	img := &Fault{
		rng:     rand.New(rand.NewPCG(f.rng.Uint64(), f.rng.Uint64())),
		sector:  f.sector,
		cur:     map[string]*fnode{},
		base:    map[string]*fnode{},
		nextIno: f.nextIno,
	}
	for _, n := range nodes {
		c := &fnode{ino: n.ino, dir: n.dir}
		if !n.dir {
			c.data = f.crashContents(n, mode)
			c.synced = slices.Clone(c.data)
		}
		byIno[n] = c
	}
	for p, n := range ns {
		img.cur[p] = byIno[n]
		img.base[p] = byIno[n]
	}
	return img
}

// crashContents decides what of n's unsynced mutations reach the disk.
func (f *Fault) crashContents(n *fnode, mode CrashMode) []byte {
	data := slices.Clone(n.synced)
	if len(n.pending) == 0 {
		return data
	}
	keep, tear := 0, false
	switch mode {
	case CrashKeepAll:
		keep = len(n.pending)
	case CrashDropAll:
	default:
		switch f.rng.IntN(4) {
		case 0:
			keep = len(n.pending)
		case 1:
		default:
			keep = f.rng.IntN(len(n.pending) + 1)
			tear = keep < len(n.pending)
		}
	}
	for _, m := range n.pending[:keep] {
		data = applyMutation(data, m)
	}
	if tear {
		data = applyAll(data, f.tear(data, n.pending[keep], -1))
	}
	return data
}

// tear returns the part of mutation m that reaches the disk, as mutations
// to apply to data (the contents before m): the first tearAt bytes when
// tearAt >= 0, else each sector of the write independently with
// probability 1/2, and the size extension or not. A truncation is applied
// or not, whole.
func (f *Fault) tear(data []byte, m mutation, tearAt int) []mutation {
	if m.truncate {
		if tearAt > 0 || (tearAt < 0 && f.rng.IntN(2) == 0) {
			return []mutation{m}
		}
		return nil
	}
	if tearAt >= 0 {
		if tearAt > len(m.data) {
			tearAt = len(m.data)
		}
		if tearAt == 0 {
			return nil
		}
		return []mutation{{off: m.off, data: slices.Clone(m.data[:tearAt])}}
	}
	oldSize := int64(len(data))
	end := m.off + int64(len(m.data))
	sec := int64(f.sector)
	var out []mutation
	var keptEnd int64
	for s := m.off - m.off%sec; s < end; s += sec {
		lo, hi := max(s, m.off), min(s+sec, end)
		if f.rng.IntN(2) == 0 {
			out = append(out, mutation{off: lo, data: slices.Clone(m.data[lo-m.off : hi-m.off])})
			keptEnd = max(keptEnd, hi)
		}
	}
	// The size update may or may not have reached the disk; it cannot be
	// smaller than the data that did. Sectors past the old end that did not
	// land read as zeros.
	if end > oldSize && end > keptEnd && f.rng.IntN(2) == 0 {
		out = append(out, mutation{truncate: true, off: end})
	}
	return out
}

func applyAll(data []byte, ms []mutation) []byte {
	for _, m := range ms {
		data = applyMutation(data, m)
	}
	return data
}

// CorruptSector flips one to eight random bits in the durable contents of
// the sector holding byte off of name, as bit rot on the medium would.
// Reads see the damage except where unsynced writes cover it (those are
// still in memory). It reports false if off is not in the durable contents.
func (f *Fault) CorruptSector(name string, off int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.cur[clean(name)]
	if !ok || n.dir || off < 0 || off >= int64(len(n.synced)) {
		return false
	}
	start := off - off%int64(f.sector)
	end := min(start+int64(f.sector), int64(len(n.synced)))
	flips := 1 + f.rng.IntN(8)
	for i := 0; i < flips; i++ {
		pos := start + f.rng.Int64N(end-start)
		n.synced[pos] ^= byte(1) << f.rng.IntN(8)
	}
	n.data = applyAll(slices.Clone(n.synced), n.pending)
	return true
}

// CorruptRandom corrupts a random sector of name and returns its offset, or
// -1 if the file is empty or missing.
func (f *Fault) CorruptRandom(name string) int64 {
	f.mu.Lock()
	n, ok := f.cur[clean(name)]
	if !ok || n.dir || len(n.synced) == 0 {
		f.mu.Unlock()
		return -1
	}
	off := f.rng.Int64N(int64(len(n.synced)))
	f.mu.Unlock()
	f.CorruptSector(name, off)
	return off - off%int64(f.sector)
}

// Durable returns what name would hold after a crash that drops every
// unsynced change (its durable contents), and whether such a durable name
// exists.
func (f *Fault) Durable(name string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ns := make(map[string]*fnode, len(f.base))
	for p, n := range f.base {
		ns[p] = n
	}
	for _, m := range f.mlog {
		if m.durable {
			replayMeta(ns, m)
		}
	}
	n, ok := ns[clean(name)]
	if !ok || n.dir {
		return nil, ok
	}
	return slices.Clone(n.synced), true
}

// Sector returns the sector size faults use.
func (f *Fault) Sector() int { return f.sector }

// Rand returns a value from the filesystem's seeded generator, so tests can
// derive further choices from the same seed.
func (f *Fault) Rand(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

type faultFile struct {
	fs       *Fault
	n        *fnode
	name     string
	path     string
	writable bool
	closed   bool
}

func (ff *faultFile) op(op Op) (*faultRule, error) {
	if ff.closed {
		return nil, pathErr(op.String(), ff.name, ErrClosed)
	}
	return ff.fs.check(op, ff.path)
}

func (ff *faultFile) ReadAt(p []byte, off int64) (int, error) {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if _, err := ff.op(OpRead); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", ff.name, syscall.EINVAL)
	}
	if off >= int64(len(ff.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, ff.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (ff *faultFile) WriteAt(p []byte, off int64) (int, error) {
	return ff.WritevAt([][]byte{p}, off)
}

func (ff *faultFile) WritevAt(bufs [][]byte, off int64) (int, error) {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	rule, err := ff.op(OpWrite)
	if rule == nil && err != nil {
		return 0, err
	}
	if !ff.writable {
		return 0, pathErr("write", ff.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathErr("write", ff.name, syscall.EINVAL)
	}
	total := totalLen(bufs)
	if total == 0 {
		return 0, err
	}
	data := make([]byte, 0, total)
	for _, b := range bufs {
		data = append(data, b...)
	}
	m := mutation{off: off, data: data}
	if err != nil && rule.Action == Misdirect {
		m.off = ff.fs.misdirect(off, rule.MisdirectBy)
		ff.fs.mutate(ff.n, m)
		return total, nil
	}
	if err != nil {
		if rule.Action == Tear || rule.Action == Halt {
			// What landed stays as ordinary unsynced writes.
			for _, piece := range ff.fs.tear(ff.n.data, m, rule.TearAt) {
				ff.fs.mutate(ff.n, piece)
			}
		}
		return 0, err
	}
	ff.fs.mutate(ff.n, m)
	return total, nil
}

// misdirect picks where a misdirected write at off lands.
func (f *Fault) misdirect(off, by int64) int64 {
	if by == 0 {
		by = int64(1+f.rng.IntN(8)) * int64(f.sector)
		if f.rng.IntN(2) == 0 {
			by = -by
		}
	}
	to := off + by
	if to < 0 {
		to = off - by
	}
	return to
}

func (ff *faultFile) Datasync() error {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if _, err := ff.op(OpSync); err != nil {
		return err
	}
	for _, m := range ff.n.pending {
		ff.n.synced = applyMutation(ff.n.synced, m)
	}
	ff.n.pending = ff.n.pending[:0]
	if len(ff.n.synced) != len(ff.n.data) {
		panic(fmt.Sprintf("vfs: fault model out of step for %s: synced %d bytes, current %d", ff.name, len(ff.n.synced), len(ff.n.data)))
	}
	return nil
}

func (ff *faultFile) Sync() error { return ff.Datasync() }

// Writeback records the hint (see Writebacks) and changes nothing else: in
// the model, as on a disk, a started writeback makes nothing durable, so a
// crash treats the range like any other unsynced write.
func (ff *faultFile) Writeback(off, n int64) error {
	return ff.hint("sync_file_range", off, n, func(st *WritebackStats) {
		st.Calls++
		st.Bytes += n
		st.End = max(st.End, off+n)
	})
}

// hint checks a range hint of n bytes at off (named op in errors) and
// records it in the file's WritebackStats with record.
func (ff *faultFile) hint(op string, off, n int64, record func(*WritebackStats)) error {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if ff.closed {
		return pathErr(op, ff.name, ErrClosed)
	}
	if ff.fs.crashed || ff.fs.halted {
		return pathErr(op, ff.name, fmt.Errorf("%w: filesystem crashed or halted", ErrInjected))
	}
	if off < 0 || n < 0 {
		return pathErr(op, ff.name, syscall.EINVAL)
	}
	if ff.fs.hints == nil {
		ff.fs.hints = map[string]WritebackStats{}
	}
	st := ff.fs.hints[ff.path]
	record(&st)
	ff.fs.hints[ff.path] = st
	return nil
}

// Release records the hint (see Writebacks) and changes nothing else: the
// model has no page cache, and dropping clean pages changes no data.
func (ff *faultFile) Release(off, n int64) error {
	return ff.hint("fadvise", off, n, func(st *WritebackStats) {
		st.Releases++
		st.ReleasedBytes += n
		st.ReleasedEnd = max(st.ReleasedEnd, off+n)
	})
}

// StartSync records the hint (see Writebacks) and changes nothing else: a
// background fdatasync nobody waited for makes nothing durable that the
// model could count on (conservatively, a crash treats the file's unsynced
// writes as before).
func (ff *faultFile) StartSync() {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if ff.closed || ff.fs.crashed || ff.fs.halted {
		return
	}
	if ff.fs.hints == nil {
		ff.fs.hints = map[string]WritebackStats{}
	}
	st := ff.fs.hints[ff.path]
	st.SyncStarts++
	ff.fs.hints[ff.path] = st
}

// Writebacks reports the writeback hints name has received (in this image;
// a crash starts counting afresh). The map holds one entry per path that
// was hinted, so it is bounded by the files the test creates.
func (f *Fault) Writebacks(name string) WritebackStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hints[filepath.Clean(name)]
}

func (ff *faultFile) Truncate(size int64) error {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if _, err := ff.op(OpTruncate); err != nil {
		return err
	}
	if !ff.writable {
		return pathErr("truncate", ff.name, syscall.EINVAL)
	}
	if size < 0 {
		return pathErr("truncate", ff.name, syscall.EINVAL)
	}
	ff.fs.mutate(ff.n, mutation{truncate: true, off: size})
	return nil
}

func (ff *faultFile) Size() (int64, error) {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if _, err := ff.op(OpStat); err != nil {
		return 0, err
	}
	return int64(len(ff.n.data)), nil
}

func (ff *faultFile) Close() error {
	ff.fs.mu.Lock()
	defer ff.fs.mu.Unlock()
	if ff.closed {
		return pathErr("close", ff.name, ErrClosed)
	}
	ff.closed = true
	return nil
}

func (ff *faultFile) Name() string { return ff.name }

type faultInfo struct {
	name string
	size int64
	dir  bool
}

func (i faultInfo) Name() string { return i.name }
func (i faultInfo) Size() int64  { return i.size }
func (i faultInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i faultInfo) ModTime() time.Time { return time.Time{} }
func (i faultInfo) IsDir() bool        { return i.dir }
func (i faultInfo) Sys() any           { return nil }
