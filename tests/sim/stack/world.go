// Package stack is iggo's real-stack simulator: from one seed, in one
// goroutine, it runs three nodes' storage and consensus stacks exactly as
// the server's shards run them — replica/consensus (driver, groups, view
// state, forwarding) over package journal and superblock, with
// replica/partition (state machine, segment write pipeline, checkpoints,
// state transfer artifacts) and package segment as each group's state
// machine — over vfs.Fault disks and a simulated network. Only the
// sockets, the connection layer and the metadata group are left out.
//
// Faults: a lossy, reordering, partitionable network that duplicates frames
// (all but forwarded requests: the replica plane delivers a frame at most
// once, and a duplicated Forward would run its request twice); kills
// of any node (every write kept) and, when every partition is persisted,
// power losses of the one faulty node (unsynced writes dropped or torn:
// vfs.Fault.Crash); failed writes on any node (the group stops, the node
// restarts); torn and misdirected writes and bit rot on the faulty node
// (its storage is found damaged, set aside and refilled from its peers).
// Damage stays on that one node: a replica whose journal tail is torn or
// whose storage is damaged may have lost acknowledged ops, so it is fenced
// and does not vote until a primary re-anchors it, and a group of three
// with two such replicas has no quorum (vsr tolerates one).
//
// Checks: every tick, committed op identities agree across replicas; at
// the end, after healing every fault, every outstanding request completes
// within a bound and every node's partitions hold exactly the model's
// messages: every acknowledged send at the offset its reply named, no
// message twice (exactly-once sends through the producer table), offsets
// dense from 0, each producer's messages in its order, identical on every
// node; and every node holds the consumer offset the last committed store
// left (stores are not idempotent: a late attempt of an older value may
// commit after a newer one was acknowledged).
//
// A failing seed replays exactly:
//
//	go test ./tests/sim/stack -run 'TestStack$' -seed=<seed> -v
//
// (-simtrace prints the run's events).
package stack

import (
	"encoding/binary"
	"fmt"
	"io"
	"runtime/debug"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
)

// Options sizes one run.
type Options struct {
	Seed uint64
	// FaultTicks is the length of the phase with faults; LivenessTicks
	// bounds the healed phase in which everything must finish.
	FaultTicks    int
	LivenessTicks int
	// Trace, when set, receives a line per event.
	Trace io.Writer
}

// Result summarizes a run.
type Result struct {
	Seed     uint64
	Ticks    int
	Sends    int // send requests issued (first attempts)
	Acked    int // sends acknowledged
	Retried  int // sends acknowledged after more than one attempt
	Messages int // messages in the final log of every partition
	Offsets  int // consumer-offset stores acknowledged
	Polled   int // messages returned by polls during the run
	Commits  uint64
	Views    uint32
	Installs int
	Faults   map[string]int
	Err      error
}

type packet struct {
	from, to int
	frame    []byte
	at       uint64
}

type proc struct {
	id     int
	faulty bool // storage corruption and misdirected writes may hit it
	up     bool
	disk   *vfs.Fault
	node   *node
	boots  uint64
	// downUntil: a crashed process restarts at this tick.
	downUntil uint64
	// rules: the injected write faults in force on its disk.
	rules []int
	// damaged: its storage took a fault that destroys synced data (bit
	// rot, a misdirected write) since it last booted clean; only then
	// may a boot find its storage damaged.
	damaged bool
}

type world struct {
	o          Options
	rng        *vsr.PRNG
	n          int
	groups     int
	durability []metadata.Durability
	cluster    vsr.Checksum
	procs      []*proc
	net        []packet
	cut        [][]bool
	cutEnd     uint64
	tick       uint64
	faults     bool
	// sendRate: per thousand, each idle producer's chance to send a tick
	// (drawn per seed: some runs barely load the groups, others fill
	// journals past their window so that laggards need state transfer).
	sendRate int
	// descriptors: what each node's vfs.Bounded holds, 2 to 12 by seed
	// (a node's two partitions have about ten files), drawn without the
	// run's generator so that seeds keep their scenarios.
	descriptors int
	res         *Result
	err         error
	log         *zap.Logger

	// observed[g]: what polls returned during the run.
	observed [][]observation
	// logs[g][p]: each node's partition log, read when quiescent.
	logs       [][][]message
	clients    []*client
	committers []*committer
	// committed[g][op]: the identity of op as first seen committed.
	committed []map[uint64]vsr.Checksum
	checked   [][]uint64 // [g][replica]: ops checked against committed
}

// Run executes one seed and returns its result; Result.Err is the first
// violated property, if any.
func Run(o Options) (res Result) {
	if o.FaultTicks == 0 {
		o.FaultTicks = 2000
	}
	if o.LivenessTicks == 0 {
		o.LivenessTicks = 6000
	}
	w := &world{o: o, rng: vsr.NewPRNG(o.Seed), n: 3, groups: 2, res: &Result{Seed: o.Seed, Faults: map[string]int{}}}
	defer func() {
		if p := recover(); p != nil {
			w.res.Err = fmt.Errorf("panic at tick %d: %v\n%s", w.tick, p, debug.Stack())
		}
		res = *w.res
	}()
	w.log = zap.NewNop()
	if o.Trace != nil {
		enc := zap.NewDevelopmentEncoderConfig()
		enc.TimeKey = ""
		w.log = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(o.Trace), zap.DebugLevel))
	}
	w.setup()
	w.faults = true
	for t := 0; t < o.FaultTicks && w.err == nil; t++ {
		w.step()
	}
	w.heal()
	w.faults = false
	deadline := w.tick + uint64(o.LivenessTicks)
	for w.err == nil && !w.quiescent() {
		if w.tick >= deadline {
			w.fail("liveness: %s after %d healed ticks", w.stuck(), o.LivenessTicks)
			break
		}
		w.step()
	}
	if w.err == nil {
		w.finalChecks()
	}
	w.shutdown()
	w.res.Ticks = int(w.tick)
	w.res.Err = w.err
	return
}

func (w *world) tracef(format string, args ...any) {
	if w.o.Trace != nil {
		fmt.Fprintf(w.o.Trace, "%6d "+format+"\n", append([]any{w.tick}, args...)...)
	}
}

func (w *world) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("tick %d: "+format, append([]any{w.tick}, args...)...)
		w.tracef("FAIL %v", w.err)
	}
}

func (w *world) chance(perThousand int) bool { return w.rng.Intn(1000) < perThousand }

func (w *world) between(lo, hi uint64) uint64 { return lo + uint64(w.rng.Intn(int(hi-lo+1))) }

// clock is every node's wall clock in microseconds (one tick is vsr's
// tick interval).
func (w *world) clock() uint64 {
	return 1_700_000_000_000_000 + w.tick*uint64(vsr.TickInterval.Microseconds())
}

func (w *world) incarnation(id int) uint64 { return w.procs[id].boots }

func (w *world) setup() {
	binary.LittleEndian.PutUint64(w.cluster[:], w.o.Seed|1)
	for g := 0; g < w.groups; g++ {
		d := metadata.DurabilityReplicated
		if w.rng.Intn(2) == 0 {
			d = metadata.DurabilityPersisted
		}
		w.durability = append(w.durability, d)
		w.committed = append(w.committed, map[uint64]vsr.Checksum{})
		w.observed = append(w.observed, nil)
		w.checked = append(w.checked, make([]uint64, w.n))
	}
	w.sendRate = []int{30, 60, 200, 400}[w.rng.Intn(4)]
	w.descriptors = 2 + int((w.o.Seed*0x9E3779B97F4A7C15)>>59)%11
	faulty := w.rng.Intn(w.n)
	w.cut = make([][]bool, w.n)
	for i := 0; i < w.n; i++ {
		w.cut[i] = make([]bool, w.n)
		p := &proc{id: i, faulty: i == faulty, disk: vfs.NewFault(w.o.Seed*31 + uint64(i))}
		w.procs = append(w.procs, p)
	}
	for i := 0; i < w.n; i++ {
		w.start(w.procs[i], false)
	}
	w.setupClients()
}

// start boots a process from its disk.
func (w *world) start(p *proc, rejoin bool) {
	p.boots++
	nd, err := w.boot(p.id, p.disk, rejoin)
	if err != nil {
		w.fail("%v", err)
		return
	}
	p.node, p.up = nd, true
	w.tracef("p%d up (boot %d)", p.id, p.boots)
}

// crash stops a process; its disk becomes what a crash leaves behind: a
// kill keeps every write (the kernel has them), a power loss keeps what
// was synced and drops or tears the rest. Power losses hit only the faulty
// process: the durability contract covers the power loss of a minority
// (persisted topics) and the kill of any number of nodes.
func (w *world) crash(p *proc, down uint64) {
	if !p.up {
		return
	}
	p.node.close()
	p.node, p.up = nil, false
	p.rules = nil
	mode := vfs.CrashKeepAll
	if p.faulty && w.powerLossOK() {
		switch w.rng.Intn(3) {
		case 0:
			mode = vfs.CrashRandom
		case 1:
			mode = vfs.CrashDropAll
		}
	}
	p.disk = p.disk.CrashWith(mode)
	p.downUntil = w.tick + down
	w.res.Faults["crash"]++
	w.tracef("p%d crash (mode %d), down %d ticks", p.id, mode, down)
	w.dropInFlightTo(p.id)
}

// powerLossOK: a power loss may drop unsynced journal writes, which only
// persisted topics promise to survive.
func (w *world) powerLossOK() bool {
	for _, d := range w.durability {
		if d != metadata.DurabilityPersisted {
			return false
		}
	}
	return true
}

func (w *world) shutdown() {
	for _, p := range w.procs {
		if p.up {
			p.node.close()
			p.up = false
		}
	}
}

// step is one tick: faults, the network, clients, ticks and drives.
func (w *world) step() {
	w.tick++
	if w.faults {
		w.injectFaults()
	}
	if w.cutEnd != 0 && w.tick >= w.cutEnd {
		w.clearCut()
	}
	for _, p := range w.procs {
		if !p.up && p.downUntil != 0 && w.tick >= p.downUntil {
			p.downUntil = 0
			w.start(p, false)
		}
	}
	w.deliverNetwork()
	w.actClients()
	for _, p := range w.procs {
		if !p.up {
			continue
		}
		for _, rp := range p.node.parts {
			rp.g.Tick(1)
		}
		p.node.drive()
		w.restartFailed(p)
	}
	if w.err == nil {
		w.checkAgreement()
	}
}

// restartFailed restarts a process one of whose groups stopped after a
// storage failure, as an operator (or a supervisor) would: the group's
// state is recovered from disk.
func (w *world) restartFailed(p *proc) {
	if !p.up {
		return
	}
	for _, rp := range p.node.parts {
		if rp.g.Failed() != nil {
			w.res.Faults["group-failed"]++
			w.tracef("p%d g%d stopped: %v", p.id, rp.idx, rp.g.Failed())
			w.crash(p, w.between(5, 50))
			return
		}
	}
}

func (w *world) send(from, to int, m vsr.Message) {
	f := make([]byte, vsr.HeaderSize+len(m.Body))
	copy(f, m.Header[:])
	copy(f[vsr.HeaderSize:], m.Body)
	if from == to {
		w.net = append(w.net, packet{from: from, to: to, frame: f, at: w.tick + 1})
		return
	}
	if w.faults && w.chance(w.lossRate()) {
		w.res.Faults["drop"]++
		return
	}
	at := w.tick + 1
	if w.faults {
		at += w.between(0, 8)
	}
	w.net = append(w.net, packet{from: from, to: to, frame: f, at: at})
	if w.faults && w.chance(10) {
		later := at + w.between(1, 20)
		// The replica plane's links (TCP) deliver a frame at most once. vsr
		// frames are duplicated anyway (the protocol retransmits and must
		// take repeats); a forwarded request is not: its repeat would be a
		// second client request, and a consumer offset store is not
		// idempotent (an older value landed after a newer one was
		// acknowledged, seed 602781).
		if c := m.Header.Command(); c != vsr.CmdForward && c != vsr.CmdForwardReply {
			w.res.Faults["dup"]++
			w.net = append(w.net, packet{from: from, to: to, frame: f, at: later})
		}
	}
}

func (w *world) lossRate() int { return 20 }

func (w *world) dropInFlightTo(id int) {
	keep := w.net[:0]
	for _, pk := range w.net {
		if pk.to != id {
			keep = append(keep, pk)
		}
	}
	w.net = keep
}

func (w *world) deliverNetwork() {
	var due []packet
	keep := w.net[:0]
	for _, pk := range w.net {
		if pk.at <= w.tick {
			due = append(due, pk)
		} else {
			keep = append(keep, pk)
		}
	}
	w.net = keep
	for _, pk := range due {
		p := w.procs[pk.to]
		if !p.up || w.cut[pk.from][pk.to] {
			continue
		}
		p.node.receive(pk.from, pk.frame)
	}
}

// injectFaults picks this tick's faults.
func (w *world) injectFaults() {
	switch {
	case w.rng.Intn(10000) < 25:
		w.crashSomeone()
	case w.rng.Intn(10000) < 20:
		w.partitionNetwork()
	case w.rng.Intn(10000) < 15:
		w.writeFault()
	case w.rng.Intn(10000) < 10:
		w.rotSomething()
	}
}

func (w *world) crashSomeone() {
	p := w.procs[w.rng.Intn(w.n)]
	if !p.up {
		return
	}
	w.crash(p, w.between(10, 300))
}

func (w *world) partitionNetwork() {
	if w.cutEnd != 0 {
		return
	}
	side := w.rng.Intn(w.n)
	oneWay := w.rng.Intn(3) == 0
	for i := 0; i < w.n; i++ {
		if i == side {
			continue
		}
		w.cut[side][i] = true
		if !oneWay {
			w.cut[i][side] = true
		}
	}
	w.cutEnd = w.tick + w.between(20, 400)
	w.res.Faults["partition"]++
	w.tracef("partition p%d (one way %v) until %d", side, oneWay, w.cutEnd)
}

func (w *world) clearCut() {
	for i := range w.cut {
		clear(w.cut[i])
	}
	w.cutEnd = 0
}

// writeFault makes one of the next writes of a running process fail (any
// process: nothing lands, the group stops and the node restarts) or, on
// the faulty process only, tear or land at the wrong offset. A torn write
// leaves a journal tail that may have been acknowledged, so its replica
// fences itself until its peers restore its head: like corruption, it
// counts against the one node whose storage may be faulty, or two fenced
// or rejoining replicas of three could leave no quorum to recover with.
func (w *world) writeFault() {
	p := w.procs[w.rng.Intn(w.n)]
	if !p.up {
		return
	}
	rule := vfs.Rule{Ops: vfs.OpWrite, After: w.rng.Intn(20), Count: 1, Path: "/data/"}
	switch r := w.rng.Intn(3); {
	case r == 0 || !p.faulty:
		rule.Action = vfs.Fail
		w.res.Faults["write-fail"]++
	case r == 1:
		rule.Action, rule.TearAt = vfs.Tear, -1
		w.res.Faults["write-tear"]++
	default:
		rule.Action = vfs.Misdirect
		p.damaged = true
		w.res.Faults["write-misdirect"]++
	}
	p.rules = append(p.rules, p.disk.Inject(rule))
	w.tracef("p%d write fault %d armed", p.id, rule.Action)
}

// rotSomething flips bits in a durable sector of a file of the faulty
// process while it is down (found at its next boot).
func (w *world) rotSomething() {
	for _, p := range w.procs {
		if !p.faulty || p.up {
			continue
		}
		files := w.files(p.disk, "/data")
		if len(files) == 0 {
			return
		}
		name := files[w.rng.Intn(len(files))]
		if off := p.disk.CorruptRandom(name); off >= 0 {
			p.damaged = true
			w.res.Faults["rot"]++
			w.tracef("p%d rot %s at %d", p.id, name, off)
		}
	}
}

// files lists the regular files under dir, in a fixed order.
func (w *world) files(fsys vfs.FS, dir string) []string {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		p := dir + "/" + e.Name()
		if e.IsDir() {
			out = append(out, w.files(fsys, p)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// heal ends every fault: the network is whole and lossless, write faults
// are disarmed, and every process is up.
func (w *world) heal() {
	w.clearCut()
	for _, p := range w.procs {
		if p.up {
			p.disk.ClearRules()
			p.rules = nil
		}
	}
	for _, p := range w.procs {
		if !p.up {
			p.downUntil = 0
			w.start(p, false)
		}
	}
	w.tracef("healed")
}
