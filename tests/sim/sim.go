// Package sim is iggo's deterministic simulator for the consensus core. One
// goroutine runs several replicas of several consensus groups from a single
// seed: a lossy, reordering, duplicating, partitionable network; processes
// that crash, restart, pause and lose their disks; storage that loses
// unsynced writes, tears them, corrupts sectors and fails reads; clients with
// sessions and retries. Every tick it checks safety (committed prefixes agree,
// the hash chain holds, views and commits never go backwards, at-most-once
// execution, acknowledged writes stay committed, timestamps increase) and the
// durability contract on what replicas send and write (no message of a view
// before the view is durable, no acknowledgement before the op is, no nack of
// an op the sender acknowledged in that log_view, no journal truncate by a
// fenced replica before its fence is durable); at the end it checks the client history for linearizability (porcupine) and, after
// healing every fault, that the cluster finishes all outstanding requests
// within a bound.
//
// A failing seed replays exactly:
//
//	go test ./tests/sim -run 'TestSim$' -seed=<seed> -v
//
// (add -simtrace to print every message, write and commit of the run).
package sim

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/vsr/vsrtest"
)

// Options sizes one run.
type Options struct {
	Seed uint64
	// FaultTicks is the length of the phase with faults; LivenessTicks bounds
	// the healed phase in which every outstanding request must finish.
	FaultTicks    int
	LivenessTicks int
	// Trace, when set, receives a line per event.
	Trace io.Writer
	// NoContractChecks turns off the checks of the durability contract on
	// outgoing messages, leaving only the checks of observable outcomes
	// (used to measure how fast outcomes alone expose a broken rule).
	NoContractChecks bool
}

// Result summarizes a run.
type Result struct {
	Seed       uint64
	Replicas   int
	Groups     int
	Ticks      int
	Requests   int // client operations issued
	Completed  int // client operations with an OK reply
	Commits    uint64
	Views      uint32
	Faults     map[string]int
	Mix        string
	Linearized int // operations checked by porcupine
	Retried    int // operations acknowledged after more than one attempt
	Dedup      int // groups with a producer table
	Err        error
}

type packet struct {
	from, to, group int
	frame           []byte
	at              uint64
}

type clientMsg struct {
	toProc  int // request: target process; reply: -1
	group   int
	client  int
	req     vsr.Request
	reply   vsr.Reply
	isReply bool
	at      uint64
}

type proc struct {
	id int
	// faulty: storage faults (corruption, wipes) may hit this process. At
	// most n − view-change quorum processes are, so the others can always
	// form a view-change quorum of replicas that trust their logs.
	faulty     bool
	up         bool
	paused     bool
	restartAt  uint64
	resumeAt   uint64
	skew       uint64
	rejoinNext bool
}

type reqKey struct {
	client  vsr.Checksum
	request uint64
}

type group struct {
	idx      int
	id       uint64
	sessions bool
	// dedup: a partition-like group with a producer table (vsr
	// Config.Dedup): no Register, clients choose their sessions.
	dedup     bool
	nodes     []*vsrtest.Node
	committed map[uint64]vsr.Checksum
	reqOf     map[uint64]reqKey
	firstOp   map[reqKey]uint64
	acked     map[uint64]reqKey
	exec      map[reqKey]execution
	clients   []*client
	history   []porcupine.Operation
	// Per replica, per boot.
	checked  []uint64
	lastView []uint32
	lastCkpt []uint64
	lastTS   []uint64
	lastOp   []uint64
	// Per replica (across boots, until a wipe): the ops it acknowledged
	// (PrepareOk), with the identity and the view of the latest ack.
	acks   []map[uint64]ackRecord
	ackTop []uint64
}

type ackRecord struct {
	id   vsr.Checksum
	view uint32
}

// execution is what the simulator saw of a request's first execution: it
// resolves operations whose outcome the client never learned.
type execution struct {
	op   uint64
	val  uint64
	tick uint64
}

type mix struct {
	loss, dup            int // per 1000
	delayMax             uint64
	partitionRate        int // per 10000 ticks
	oneWay               bool
	crashRate            int // per 10000 ticks
	blackoutRate         int // whole-cluster crashes (power loss) per 100000 ticks
	pauseRate            int
	wipeRate             int
	corruptRate          int
	readErrRate          int
	ioMax                uint64
	downMin, downMax     uint64
	partMin, partMax     uint64
	clientRate, clientsN int
}

type world struct {
	o      Options
	rng    *vsr.PRNG
	n      int
	procs  []*proc
	groups []*group
	net    []packet
	cmsgs  []clientMsg
	cut    [][]bool
	cutEnd uint64
	tick   uint64
	m      mix
	res    *Result
	err    error
	faults bool
}

// Run executes one seed and returns its result; Result.Err is the first
// violated property, if any.
func Run(o Options) (res Result) {
	if o.FaultTicks == 0 {
		o.FaultTicks = 3000
	}
	if o.LivenessTicks == 0 {
		o.LivenessTicks = 8000
	}
	w := &world{o: o, rng: vsr.NewPRNG(o.Seed), res: &Result{Seed: o.Seed, Faults: map[string]int{}}}
	defer func() {
		if p := recover(); p != nil {
			w.res.Err = fmt.Errorf("panic at tick %d: %v\n%s", w.tick, p, debug.Stack())
		}
		res = *w.res
	}()
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
	w.res.Ticks = int(w.tick)
	w.res.Err = w.err
	return
}

func (w *world) tracef(format string, args ...any) {
	if w.o.Trace != nil {
		fmt.Fprintf(w.o.Trace, "%6d %s\n", w.tick, fmt.Sprintf(format, args...))
	}
}

func (w *world) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("tick %d: %s", w.tick, fmt.Sprintf(format, args...))
		w.tracef("FAIL %v", w.err)
	}
}

func (w *world) chance(perThousand int) bool {
	return perThousand > 0 && w.rng.Intn(1000) < perThousand
}

func (w *world) between(lo, hi uint64) uint64 {
	if hi <= lo {
		return lo
	}
	return lo + uint64(w.rng.Intn(int(hi-lo+1)))
}

// setup draws the cluster shape and the fault mix from the seed (swarm
// testing: each seed enables a different subset of faults at different
// intensities).
func (w *world) setup() {
	w.n = []int{1, 2, 3, 3, 3, 5, 5}[w.rng.Intn(7)]
	groups := 1 + w.rng.Intn(3)
	pick := func(vals ...int) int { return vals[w.rng.Intn(len(vals))] }
	w.m = mix{
		loss:          pick(0, 0, 10, 50, 200),
		dup:           pick(0, 0, 10, 50),
		delayMax:      uint64(pick(1, 3, 10, 30)),
		partitionRate: pick(0, 0, 5, 20),
		oneWay:        w.rng.Chance(1, 2),
		crashRate:     pick(0, 5, 10, 30),
		blackoutRate:  pick(0, 0, 10, 50),
		pauseRate:     pick(0, 0, 5, 20),
		wipeRate:      pick(0, 0, 0, 3),
		corruptRate:   pick(0, 0, 10, 50),
		readErrRate:   pick(0, 0, 10),
		ioMax:         uint64(pick(0, 1, 3, 8, 30)),
		downMin:       20, downMax: uint64(pick(100, 400, 1500)),
		partMin: 50, partMax: uint64(pick(200, 800, 2000)),
		clientRate: pick(5, 20, 60),
		clientsN:   1 + w.rng.Intn(5),
	}
	w.res.Replicas, w.res.Groups = w.n, groups
	w.res.Mix = fmt.Sprintf("n=%d groups=%d loss=%d‰ dup=%d‰ delay≤%d partitions=%d/10k(oneway=%v) crashes=%d/10k blackouts=%d/100k pauses=%d/10k wipes=%d/10k corrupt=%d/10k readerr=%d/10k io≤%d clients=%d",
		w.n, groups, w.m.loss, w.m.dup, w.m.delayMax, w.m.partitionRate, w.m.oneWay, w.m.crashRate, w.m.blackoutRate,
		w.m.pauseRate, w.m.wipeRate, w.m.corruptRate, w.m.readErrRate, w.m.ioMax, w.m.clientsN)
	w.tracef("mix %s", w.res.Mix)
	w.cut = make([][]bool, w.n)
	for i := range w.cut {
		w.cut[i] = make([]bool, w.n)
	}
	for i := 0; i < w.n; i++ {
		w.procs = append(w.procs, &proc{id: i, up: true, skew: uint64(w.rng.Intn(2_000_000))})
	}
	if w.n > 2 {
		qVC := w.n - (w.n+1)/2 + 1
		for k := 0; k < w.n-qVC; k++ {
			w.procs[w.rng.Intn(w.n)].faulty = true
		}
	}
	depth := pick(1, 4, 16, 32)
	slots := 256
	for gi := 0; gi < groups; gi++ {
		g := &group{idx: gi, id: uint64(w.rng.Uint64() >> 1), sessions: gi == 0 || w.rng.Chance(1, 3),
			committed: map[uint64]vsr.Checksum{}, reqOf: map[uint64]reqKey{}, firstOp: map[reqKey]uint64{},
			acked: map[uint64]reqKey{}, exec: map[reqKey]execution{}}
		if gi == 0 {
			g.id = vsr.MetadataGroup
		}
		// Half the groups without sessions keep a producer table (from a
		// bit of the id already drawn, so the draws of a seed stay put).
		g.dedup = !g.sessions && g.id&1 == 1
		if g.dedup {
			w.res.Dedup++
		}
		durability := vsr.Persisted
		if w.rng.Chance(1, 3) {
			durability = vsr.Replicated
		}
		clientsMax := pick(2, 4, 64)
		g.checked = make([]uint64, w.n)
		g.lastView = make([]uint32, w.n)
		g.lastCkpt = make([]uint64, w.n)
		g.lastTS = make([]uint64, w.n)
		g.lastOp = make([]uint64, w.n)
		g.acks = make([]map[uint64]ackRecord, w.n)
		g.ackTop = make([]uint64, w.n)
		for r := range g.acks {
			g.acks[r] = map[uint64]ackRecord{}
		}
		for r := 0; r < w.n; r++ {
			cfg := vsr.DefaultConfig()
			cfg.Cluster = vsr.Checksum{0x51, 0x4d}
			cfg.Group = g.id
			cfg.Replica = uint8(r)
			cfg.ReplicaCount = uint8(w.n)
			cfg.Durability = durability
			cfg.Sessions = g.sessions
			cfg.Dedup = g.dedup
			cfg.ClientsMax = clientsMax
			cfg.PrepareQueueDepth = depth
			cfg.RequestQueueDepth = pick(1, 8, 64)
			cfg.JournalSlots = slots
			cfg.CheckpointInterval = pick(16, 64, 128)
			cfg.HeartbeatTimeout = 2 * time.Second
			cfg.CommitBroadcastInterval = 200 * time.Millisecond
			cfg.PrepareRetransmitInterval = time.Duration(pick(50, 100, 250)) * time.Millisecond
			cfg.ViewChangeRetransmitInterval = 200 * time.Millisecond
			cfg.ViewChangeStatusTimeout = time.Second
			cfg.RequestStartViewRetransmitInterval = 300 * time.Millisecond
			cfg.ViewProbeAttemptsMax = pick(1, 3, 5)
			cfg.RepairRetryInterval = 300 * time.Millisecond
			cfg.RepairChunkMax = pick(1, 8, 128)
			cfg.TransferChunkBytes = 4096
			cfg.BodyCacheBytes = pick(0, 1<<20)
			cfg.Seed = w.rng.Uint64()
			if err := cfg.Validate(); err != nil {
				panic(err)
			}
			node := vsrtest.NewNode(r, cfg, vsrtest.NewDisk())
			node.Rand = vsr.NewPRNG(w.rng.Uint64())
			ioMax := w.m.ioMax
			node.Latency = func(kind string) uint64 {
				if ioMax == 0 {
					return 0
				}
				return uint64(node.Rand.Intn(int(ioMax) + 1))
			}
			gr, rr := g, r
			node.OnApply = func(h *vsr.Header, body, reply []byte) { w.onApply(gr, rr, h, reply) }
			node.OnJournal = func(j vsr.JournalOp) { w.checkJournal(gr, rr, j) }
			if w.o.Trace != nil {
				node.Trace = func(line string) { w.tracef("g%d %s", gr.idx, line) }
			}
			g.nodes = append(g.nodes, node)
		}
		for c := 0; c < w.m.clientsN; c++ {
			g.clients = append(g.clients, newClient(g, c, w))
		}
		w.groups = append(w.groups, g)
	}
	for _, g := range w.groups {
		for r := range g.nodes {
			w.boot(g, r, false)
		}
	}
}

func (w *world) boot(g *group, r int, rejoin bool) {
	node := g.nodes[r]
	durableView := uint32(0)
	if node.Disk.State != nil {
		if s, err := vsr.DecodeState(node.Disk.State); err == nil {
			durableView = s.View
			if s.Checkpoint < g.lastCkpt[r] {
				w.fail("g%d r%d: durable checkpoint went back from %d to %d", g.idx, r, g.lastCkpt[r], s.Checkpoint)
			}
		}
	}
	g.lastOp[r], g.lastTS[r] = 0, 0 // the boot may already apply ops
	if err := node.Boot(rejoin); err != nil {
		w.fail("g%d r%d: boot: %v", g.idx, r, err)
		return
	}
	inf := node.R.Info()
	if inf.View < durableView {
		w.fail("g%d r%d: booted into view %d below durable view %d", g.idx, r, inf.View, durableView)
	}
	g.lastView[r] = inf.View
	g.checked[r] = inf.CommitMin
}

// ---------------------------------------------------------------------------
// The main loop.

func (w *world) step() {
	w.tick++
	if w.faults {
		w.injectFaults()
	}
	w.wakeProcs()
	w.deliverNetwork()
	w.deliverClients()
	for _, p := range w.procs {
		if !p.up || p.paused {
			continue
		}
		for _, g := range w.groups {
			g.nodes[p.id].Tick()
		}
		w.collect(p.id)
	}
	for _, g := range w.groups {
		for _, c := range g.clients {
			c.act(w)
		}
	}
	for _, p := range w.procs {
		w.collect(p.id)
	}
	w.checkTick()
}

func (w *world) wallClock(p int) uint64 { return w.tick*10_000 + w.procs[p].skew }

// collect moves a process's outputs onto the network.
func (w *world) collect(p int) {
	for gi, g := range w.groups {
		node := g.nodes[p]
		for _, e := range node.TakeOut() {
			w.checkSend(g, p, e.Message)
			frame := vsrtest.Encode(e.Message)
			w.sendPacket(packet{from: p, to: int(e.To), group: gi, frame: frame})
		}
		for _, rp := range node.TakeReplies() {
			c := int(rp.Token >> 40 & 0xffff)
			if c >= len(g.clients) {
				continue
			}
			if w.faults && w.chance(w.m.loss) {
				continue
			}
			w.cmsgs = append(w.cmsgs, clientMsg{toProc: -1, group: gi, client: c, reply: rp, isReply: true,
				at: w.tick + w.between(1, w.m.delayMax)})
		}
	}
}

func (w *world) sendPacket(pk packet) {
	if w.faults && w.chance(w.m.loss) {
		w.res.Faults["packets lost"]++
		return
	}
	copies := 1
	if w.faults && w.chance(w.m.dup) {
		copies = 2
		w.res.Faults["packets duplicated"]++
	}
	for i := 0; i < copies; i++ {
		pk.at = w.tick + w.between(1, w.m.delayMax)
		w.net = append(w.net, pk)
	}
}

// deliverNetwork delivers the due packets in a random order (reordering).
func (w *world) deliverNetwork() {
	var due []packet
	keep := w.net[:0]
	for _, pk := range w.net {
		if pk.at <= w.tick && !w.procs[pk.to].paused {
			due = append(due, pk)
		} else {
			keep = append(keep, pk)
		}
	}
	w.net = keep
	for i := len(due) - 1; i > 0; i-- {
		j := w.rng.Intn(i + 1)
		due[i], due[j] = due[j], due[i]
	}
	for _, pk := range due {
		if w.cut[pk.from][pk.to] || !w.procs[pk.to].up {
			continue
		}
		m, err := vsr.Decode(pk.frame, 1<<30)
		if err != nil {
			w.fail("g%d r%d sent an undecodable frame: %v", pk.group, pk.from, err)
			return
		}
		g := w.groups[pk.group]
		w.tracef("g%d r%d -> r%d %s", pk.group, pk.from, pk.to, vsrtest.Describe(m))
		g.nodes[pk.to].Deliver(m)
		w.collect(pk.to)
	}
}

func (w *world) deliverClients() {
	var due []clientMsg
	keep := w.cmsgs[:0]
	for _, cm := range w.cmsgs {
		if cm.at <= w.tick && (cm.isReply || !w.procs[cm.toProc].paused) {
			due = append(due, cm)
		} else {
			keep = append(keep, cm)
		}
	}
	w.cmsgs = keep
	for _, cm := range due {
		g := w.groups[cm.group]
		if cm.isReply {
			g.clients[cm.client].onReply(w, cm.reply)
			continue
		}
		if !w.procs[cm.toProc].up {
			continue
		}
		cm.req.WallClock = w.wallClock(cm.toProc)
		g.nodes[cm.toProc].Submit(cm.req)
		w.collect(cm.toProc)
	}
}

// ---------------------------------------------------------------------------
// Faults.

func (w *world) injectFaults() {
	m := &w.m
	if w.cutEnd != 0 && w.tick >= w.cutEnd {
		w.clearPartition()
	}
	if w.cutEnd == 0 && w.n > 1 && w.rng.Intn(10000) < m.partitionRate {
		w.partition()
	}
	if w.rng.Intn(10000) < m.crashRate {
		w.crashSomeone()
	}
	if w.rng.Intn(100000) < m.blackoutRate {
		// Every process loses power at once: each keeps only what its
		// storage had made durable.
		down := w.between(m.downMin, m.downMax)
		for _, p := range w.procs {
			if p.up {
				w.crash(p.id, down)
			}
		}
		w.res.Faults["blackouts"]++
	}
	if w.n > 1 && w.rng.Intn(10000) < m.pauseRate {
		p := w.procs[w.rng.Intn(w.n)]
		if p.up && !p.paused {
			p.paused = true
			p.resumeAt = w.tick + w.between(m.downMin, m.downMax/2+m.downMin)
			w.res.Faults["pauses"]++
			w.tracef("pause p%d until %d", p.id, p.resumeAt)
		}
	}
	if w.n > 2 && w.rng.Intn(10000) < m.wipeRate {
		w.wipeSomeone()
	}
	if w.n > 1 && w.rng.Intn(10000) < m.corruptRate {
		w.corruptSomething()
	}
	if w.rng.Intn(10000) < m.readErrRate {
		g := w.groups[w.rng.Intn(len(w.groups))]
		node := g.nodes[w.rng.Intn(w.n)]
		if len(node.Disk.Journal) > 0 {
			op := node.Disk.Journal[w.rng.Intn(len(node.Disk.Journal))].Op
			node.Disk.ReadErrors[op] = true
			w.res.Faults["read errors"]++
		}
	}
	// Read errors are transient.
	if w.tick%97 == 0 {
		for _, g := range w.groups {
			for _, node := range g.nodes {
				clear(node.Disk.ReadErrors)
			}
		}
	}
}

func (w *world) partition() {
	m := &w.m
	for i := range w.cut {
		clear(w.cut[i])
	}
	side := make([]bool, w.n)
	if w.rng.Chance(1, 2) {
		side[w.rng.Intn(w.n)] = true // isolate one replica
	} else {
		for i := range side {
			side[i] = w.rng.Chance(1, 2)
		}
	}
	oneWay := m.oneWay && w.rng.Chance(1, 2)
	for i := 0; i < w.n; i++ {
		for j := 0; j < w.n; j++ {
			if side[i] && !side[j] {
				w.cut[i][j] = true
			}
			if !side[i] && side[j] && !oneWay {
				w.cut[i][j] = true
			}
		}
	}
	w.cutEnd = w.tick + w.between(m.partMin, m.partMax)
	w.res.Faults["partitions"]++
	w.tracef("partition %v oneway=%v until %d", side, oneWay, w.cutEnd)
}

func (w *world) clearPartition() {
	for i := range w.cut {
		clear(w.cut[i])
	}
	w.cutEnd = 0
	w.tracef("partition healed")
}

func (w *world) crashSomeone() {
	var cands []int
	for _, p := range w.procs {
		if p.up {
			cands = append(cands, p.id)
		}
	}
	// Keep a majority up most of the time, but not always.
	if len(cands) <= w.n/2 && w.rng.Chance(3, 4) || len(cands) == 0 {
		return
	}
	id := cands[w.rng.Intn(len(cands))]
	if w.rng.Chance(1, 2) {
		// Prefer a primary: crashing it forces a view change.
		for _, g := range w.groups {
			if pi := g.nodes[id].R.Info(); !pi.IsPrimary {
				for _, c := range cands {
					if g.nodes[c].R.Info().IsPrimary {
						id = c
					}
				}
				break
			}
		}
	}
	w.crash(id, w.between(w.m.downMin, w.m.downMax))
}

func (w *world) crash(id int, down uint64) {
	p := w.procs[id]
	p.up = false
	p.paused = false
	p.restartAt = w.tick + down
	for _, g := range w.groups {
		g.nodes[id].Crash()
	}
	w.res.Faults["crashes"]++
	w.tracef("crash p%d until %d", id, p.restartAt)
}

func (w *world) wakeProcs() {
	for _, p := range w.procs {
		if !p.up && p.restartAt <= w.tick {
			p.up = true
			for _, g := range w.groups {
				w.boot(g, p.id, p.rejoinNext)
			}
			p.rejoinNext = false
			w.res.Faults["restarts"]++
		}
		if p.paused && p.resumeAt <= w.tick {
			p.paused = false
		}
	}
}

// wipeSomeone replaces a process's disks, but only when every committed op
// it holds is held intact by another replica (or covered by another
// replica's checkpoint), and no other wiped replica is still catching up.
func (w *world) wipeSomeone() {
	id := w.rng.Intn(w.n)
	if !w.procs[id].faulty {
		return
	}
	for _, g := range w.groups {
		for r, node := range g.nodes {
			if node.Up && node.R.Info().Status == "recovering_head" && r != id {
				return
			}
		}
		if !w.othersHoldCommitted(g, id) {
			return
		}
	}
	w.crash(id, w.between(w.m.downMin, w.m.downMax))
	for _, g := range w.groups {
		g.nodes[id].Disk.Wipe()
		g.lastCkpt[id] = 0
		clear(g.acks[id]) // the rejoin fence covers what it acknowledged before
		g.ackTop[id] = 0
	}
	w.procs[id].rejoinNext = true
	w.res.Faults["wipes"]++
	w.tracef("wipe p%d", id)
}

func (w *world) othersHoldCommitted(g *group, except int) bool {
	var top uint64
	for op := range g.committed {
		top = max(top, op)
	}
	for op := uint64(1); op <= top; op++ {
		id, ok := g.committed[op]
		if !ok {
			continue
		}
		if !w.copyElsewhere(g, except, op, id) {
			return false
		}
	}
	return true
}

func (w *world) copyElsewhere(g *group, except int, op uint64, id vsr.Checksum) bool {
	for r, node := range g.nodes {
		if r == except {
			continue
		}
		if node.Disk.HasDurable(op, id) {
			return true
		}
		if s, err := vsr.DecodeState(node.Disk.State); node.Disk.State != nil && err == nil && s.Checkpoint >= op {
			return true
		}
	}
	return false
}

// corruptSomething damages one durable journal entry, only where another
// replica holds an intact copy (the fault atlas).
func (w *world) corruptSomething() {
	g := w.groups[w.rng.Intn(len(w.groups))]
	r := w.rng.Intn(w.n)
	node := g.nodes[r]
	if len(node.Disk.Journal) == 0 || !w.procs[r].faulty {
		return
	}
	e := node.Disk.Journal[w.rng.Intn(len(node.Disk.Journal))]
	if !e.Durable || e.Corrupt {
		return
	}
	id := (*vsr.Header)(e.Frame[:vsr.HeaderSize]).Identity()
	if !w.copyElsewhere(g, r, e.Op, id) {
		return
	}
	node.Disk.Corrupt(e.Op)
	w.res.Faults["corruptions"]++
	w.tracef("corrupt g%d r%d op %d", g.idx, r, e.Op)
}

// heal ends the fault phase: the network becomes reliable and fast, every
// process comes back.
func (w *world) heal() {
	w.clearPartition()
	w.m.loss, w.m.dup, w.m.delayMax = 0, 0, 1
	for _, p := range w.procs {
		p.paused = false
		if !p.up {
			p.restartAt = w.tick
		}
	}
	for _, g := range w.groups {
		for _, node := range g.nodes {
			clear(node.Disk.ReadErrors)
		}
		for _, c := range g.clients {
			c.stopNew = true
		}
	}
	w.tracef("heal")
}

// ---------------------------------------------------------------------------
// Checks.

func (w *world) onApply(g *group, r int, h *vsr.Header, reply []byte) {
	op := h.Op()
	if g.lastOp[r] != 0 && op <= g.lastOp[r] {
		w.fail("g%d r%d applied op %d after op %d", g.idx, r, op, g.lastOp[r])
	}
	g.lastOp[r] = op
	if ts := h.Timestamp(); ts <= g.lastTS[r] {
		w.fail("g%d r%d: op %d timestamp %d not above %d", g.idx, r, op, ts, g.lastTS[r])
	} else {
		g.lastTS[r] = ts
	}
	w.agree(g, r, op, h.Identity())
	if prev, ok := g.committed[op-1]; ok && op > 1 && h.Parent() != prev {
		w.fail("g%d r%d: op %d breaks the hash chain", g.idx, r, op)
	}
	key := reqKey{client: h.Client(), request: h.Request()}
	if h.Operation() != vsr.OperationRegister && !key.client.IsZero() {
		if old, ok := g.reqOf[op]; ok && old != key {
			w.fail("g%d: op %d executed as %v and as %v", g.idx, op, old, key)
		}
		g.reqOf[op] = key
		if g.sessions || g.dedup {
			// At most once: a (client, request) is executed by one op.
			if first, ok := g.firstOp[key]; ok && first != op {
				w.fail("g%d: request %v executed twice, at ops %d and %d", g.idx, key, first, op)
			}
			g.firstOp[key] = op
			if _, ok := g.exec[key]; !ok && len(reply) == 8 {
				g.exec[key] = execution{op: op, val: binary.LittleEndian.Uint64(reply), tick: w.tick}
			}
		}
		if a, ok := g.acked[op]; ok && a != key {
			w.fail("g%d: op %d acknowledged for %v but executed as %v", g.idx, op, a, key)
		}
	}
}

// checkSend checks the durability contract on every message as it leaves a
// replica: no message of a view before that view is durable (a campaign
// vote for a view the replica has not entered yet promises nothing), and no
// acknowledgement of an op before the op is durable in the replica's
// journal.
func (w *world) checkSend(g *group, r int, m vsr.Message) {
	if w.o.NoContractChecks {
		return
	}
	w.checkNacks(g, r, m)
	h := m.Header
	node := g.nodes[r]
	var durable *vsr.State
	if node.Disk.State != nil {
		durable, _ = vsr.DecodeState(node.Disk.State)
	}
	c := h.Control()
	var needView, needLogView uint32
	switch h.Command() {
	case vsr.CmdStartViewChange:
		if !c.Entered {
			return
		}
		needView = h.View()
	case vsr.CmdDoViewChange:
		needView, needLogView = h.View(), c.LogView
	case vsr.CmdPrepareOk, vsr.CmdStartView:
		needView, needLogView = h.View(), h.View()
	case vsr.CmdCommit:
		needView, needLogView = h.View(), h.View()
	default:
		return
	}
	if durable == nil || durable.View < needView || durable.LogView < needLogView {
		w.fail("g%d r%d sent %s in view %d before its view was durable (durable %v)",
			g.idx, r, h.Command(), h.View(), durable != nil)
		return
	}
	if h.Command() == vsr.CmdPrepareOk && c.Op > durable.Checkpoint && c.Op > 0 {
		e := node.Disk.Entry(c.Op)
		if e == nil || !e.Durable || (*vsr.Header)(e.Frame[:vsr.HeaderSize]).Identity() != c.ID {
			if inf := node.R.Info(); c.Op > inf.Checkpoint {
				w.fail("g%d r%d acknowledged op %d before it was durable", g.idx, r, c.Op)
			}
		}
	}
}

func (w *world) agree(g *group, r int, op uint64, id vsr.Checksum) {
	if prev, ok := g.committed[op]; ok {
		if prev != id {
			w.fail("g%d r%d: committed op %d is %s here, %s elsewhere", g.idx, r, op, id, prev)
		}
		return
	}
	g.committed[op] = id
}

func (w *world) checkTick() {
	for _, g := range w.groups {
		for r, node := range g.nodes {
			if !node.Up {
				continue
			}
			inf := node.R.Info()
			if inf.View < g.lastView[r] {
				w.fail("g%d r%d: view went back from %d to %d", g.idx, r, g.lastView[r], inf.View)
			}
			g.lastView[r] = inf.View
			if inf.View > w.res.Views {
				w.res.Views = inf.View
			}
			if inf.Checkpoint < g.lastCkpt[r] && node.Disk.State != nil {
				s, _ := vsr.DecodeState(node.Disk.State)
				if s != nil && s.Checkpoint < g.lastCkpt[r] {
					w.fail("g%d r%d: durable checkpoint went back", g.idx, r)
				}
			}
			if node.Disk.State != nil {
				if s, err := vsr.DecodeState(node.Disk.State); err == nil {
					g.lastCkpt[r] = max(g.lastCkpt[r], s.Checkpoint)
				}
			}
			if inf.CommitMin < g.checked[r] {
				if inf.CommitMin < g.checked[r] && inf.Checkpoint <= g.checked[r] {
					w.fail("g%d r%d: commit went back from %d to %d", g.idx, r, g.checked[r], inf.CommitMin)
				}
			}
			for op := g.checked[r] + 1; op <= inf.CommitMin; op++ {
				if id, ok := node.R.Identity(op); ok {
					w.agree(g, r, op, id)
				}
			}
			g.checked[r] = max(g.checked[r], inf.CommitMin)
			if inf.CommitMax > w.res.Commits {
				w.res.Commits = inf.CommitMax
			}
		}
	}
}

// quiescent reports whether every client finished and every replica caught
// up with the highest commit.
func (w *world) quiescent() bool {
	for _, g := range w.groups {
		for _, c := range g.clients {
			if c.cur != nil || c.state == clientRegistering {
				return false
			}
		}
		var top uint64
		for _, node := range g.nodes {
			if node.Up {
				top = max(top, node.R.Info().CommitMax)
			}
		}
		for _, node := range g.nodes {
			if !node.Up {
				return false
			}
			if inf := node.R.Info(); inf.CommitMin != top || inf.Status != "normal" {
				return false
			}
		}
	}
	return true
}

func (w *world) stuck() string {
	s := ""
	for _, g := range w.groups {
		for _, c := range g.clients {
			if c.cur != nil {
				s += fmt.Sprintf("g%d client %d waits for request %d (%d attempts); ", g.idx, c.idx, c.cur.req.Request, c.cur.attempts)
				break
			}
		}
		for r, node := range g.nodes {
			if node.Up {
				inf := node.R.Info()
				s += fmt.Sprintf("g%d r%d %s v%d/%d op=%d commit=%d/%d journal=%d/%d ckpt=%d; ", g.idx, r, inf.Status,
					inf.View, inf.LogView, inf.Op, inf.CommitMin, inf.CommitMax, inf.JournalHead, inf.DurableHead, inf.Checkpoint)
			}
		}
	}
	return s
}

func (w *world) finalChecks() {
	for _, g := range w.groups {
		ops := make([]uint64, 0, len(g.acked))
		for op := range g.acked {
			ops = append(ops, op)
		}
		slices.Sort(ops)
		for _, op := range ops {
			if _, ok := g.committed[op]; !ok {
				w.fail("g%d: acknowledged op %d (%v) never committed", g.idx, op, g.acked[op])
				return
			}
			if rk, ok := g.reqOf[op]; ok && rk != g.acked[op] {
				w.fail("g%d: acknowledged op %d lost", g.idx, op)
				return
			}
		}
		if g.dedup {
			for _, node := range g.nodes {
				w.res.Faults["state transfers (producer tables)"] += node.Installs
			}
		}
		ref := g.nodes[0].SM
		for r, node := range g.nodes {
			if !node.SM.Equal(ref) {
				w.fail("g%d: replica %d state %v differs from replica 0 %v", g.idx, r, node.SM, ref)
				return
			}
		}
		if g.sessions || g.dedup {
			g.resolveUnknown()
			sort.SliceStable(g.history, func(i, j int) bool { return g.history[i].Call < g.history[j].Call })
			res, err := checkLinearizable(g.history, 10*time.Second)
			if err != nil {
				w.fail("g%d: %v", g.idx, err)
				return
			}
			if res == porcupine.Ok {
				w.res.Linearized += len(g.history)
			} else {
				w.res.Faults["linearizability undecided"]++
			}
		}
	}
}

// resolveUnknown settles operations whose outcome the client never learned
// (timeouts, evictions): one that executed gets its real result and the time
// of its first execution as its return; one that never executed had no effect
// and leaves the history. The checker then works on a fully determined
// history, which keeps it fast, and checks the executions the clients did not
// see as well.
func (g *group) resolveUnknown() {
	kept := g.history[:0]
	for _, op := range g.history {
		out := op.Output.(kvOutput)
		if !out.unknown {
			kept = append(kept, op)
			continue
		}
		meta := op.Metadata.(reqKey)
		e, ok := g.exec[meta]
		if !ok {
			continue
		}
		op.Output = kvOutput{val: e.val}
		op.Return = int64(e.tick)
		if op.Return < op.Call {
			op.Return = op.Call
		}
		kept = append(kept, op)
	}
	g.history = kept
}

// ---------------------------------------------------------------------------
// Clients.

const (
	clientIdle = iota
	clientRegistering
	clientReady
)

type pendingOp struct {
	req      vsr.Request
	input    kvInput
	call     uint64
	attempts int
	sentAt   uint64
	hist     bool
}

type client struct {
	idx     int
	g       *group
	id      vsr.Checksum
	state   int
	session uint64
	nextReq uint64
	cur     *pendingOp
	target  int
	retryAt uint64
	seq     uint64
	stopNew bool
}

func newClient(g *group, idx int, w *world) *client {
	c := &client{idx: idx, g: g, target: w.rng.Intn(w.n), nextReq: 1}
	c.id = vsr.Checksum{0xc1, byte(g.idx), byte(idx), 1}
	if g.sessions {
		c.state = clientIdle
	} else {
		c.state = clientReady
	}
	if g.dedup {
		c.session = 1
	}
	return c
}

const clientTimeout = 300

func (c *client) token() uint64 {
	c.seq++
	return uint64(c.g.idx)<<56 | uint64(c.idx)<<40 | c.seq&0xff_ffff_ffff
}

func (c *client) act(w *world) {
	switch {
	case c.cur != nil:
		if w.tick >= c.retryAt && (c.cur.sentAt == 0 || w.tick-c.cur.sentAt >= clientTimeout) {
			if c.cur.sentAt != 0 {
				c.target = (c.target + 1) % w.n
			}
			c.send(w)
		}
	case c.state == clientIdle:
		c.state = clientRegistering
		c.cur = &pendingOp{req: vsr.Request{Client: c.id, Operation: vsr.OperationRegister}, call: w.tick}
		c.send(w)
	case c.state == clientReady && !c.stopNew && w.rng.Intn(100) < w.m.clientRate:
		key := uint8(w.rng.Intn(8))
		op := &pendingOp{call: w.tick, hist: true}
		if w.rng.Chance(1, 2) {
			val := w.rng.Uint64() >> 8
			op.input = kvInput{put: true, key: key, val: val}
			op.req = vsr.Request{Operation: vsrtest.OpPut, Body: vsrtest.EncodePut(key, val)}
		} else {
			op.input = kvInput{key: key}
			op.req = vsr.Request{Operation: vsrtest.OpGet, Body: vsrtest.EncodeGet(key)}
		}
		op.req.Client, op.req.Session, op.req.Request = c.id, c.session, c.nextReq
		c.nextReq++
		c.cur = op
		w.res.Requests++
		c.send(w)
	}
}

func (c *client) send(w *world) {
	c.cur.attempts++
	c.cur.sentAt = w.tick
	req := c.cur.req
	req.Token = c.token()
	if w.faults && w.chance(w.m.loss) {
		return
	}
	w.cmsgs = append(w.cmsgs, clientMsg{toProc: c.target, group: c.g.idx, client: c.idx, req: req,
		at: w.tick + w.between(1, w.m.delayMax)})
}

func (c *client) finish(w *world, out kvOutput, ret uint64) {
	op := c.cur
	c.cur = nil
	if !op.hist || !(c.g.sessions || c.g.dedup) {
		return
	}
	r := int64(ret)
	if out.unknown {
		r = math.MaxInt64
	}
	c.g.history = append(c.g.history, porcupine.Operation{ClientId: c.idx, Input: op.input,
		Call: int64(op.call), Output: out, Return: r,
		Metadata: reqKey{client: c.id, request: op.req.Request}})
}

func (c *client) onReply(w *world, rp vsr.Reply) {
	op := c.cur
	if op == nil || rp.Request != op.req.Request || rp.Operation != op.req.Operation || rp.Client != c.id {
		return // stale
	}
	switch rp.Status {
	case vsr.StatusOK:
		if op.req.Operation == vsr.OperationRegister {
			c.session = rp.Op
			c.state = clientReady
			c.cur = nil
			return
		}
		key := reqKey{client: c.id, request: op.req.Request}
		if a, ok := c.g.acked[rp.Op]; ok && a != key {
			w.fail("g%d: op %d acknowledged to two requests", c.g.idx, rp.Op)
		}
		if rk, ok := c.g.reqOf[rp.Op]; ok && rk != key {
			w.fail("g%d: client %d got op %d, which executed %v", c.g.idx, c.idx, rp.Op, rk)
		}
		c.g.acked[rp.Op] = key
		w.res.Completed++
		var v uint64
		if len(rp.Body) == 8 {
			v = binary.LittleEndian.Uint64(rp.Body)
		}
		if e, ok := c.g.exec[key]; ok && (c.g.sessions || c.g.dedup) && (e.op != rp.Op || e.val != v) {
			// A retry answered from the table gets the first execution's
			// reply: same op, same result.
			w.fail("g%d: client %d request %d answered op %d value %d, executed at op %d with %d",
				c.g.idx, c.idx, op.req.Request, rp.Op, v, e.op, e.val)
		}
		if op.attempts > 1 {
			w.res.Retried++
		}
		c.finish(w, kvOutput{val: v}, w.tick)
	case vsr.StatusTransientNotAccepted:
		if int(rp.Primary) != c.target {
			c.target = int(rp.Primary)
		} else {
			c.target = (c.target + 1) % w.n
		}
		c.retryAt = w.tick + 10
		op.sentAt = 0
	case vsr.StatusTransientNotCommitted:
		c.retryAt = w.tick + 10
		op.sentAt = 0
	case vsr.StatusRequestAlreadyApplied:
		c.finish(w, kvOutput{unknown: true}, w.tick)
	case vsr.StatusEvicted:
		if op.req.Operation != vsr.OperationRegister {
			c.finish(w, kvOutput{unknown: true}, w.tick)
		} else {
			c.cur = nil
		}
		c.state = clientIdle
		if c.g.dedup {
			// A producer table forgot the client (evicted, or a newer
			// session): a new session above every one in use, as a new
			// metadata login gives.
			w.res.Faults["producer evicted"]++
			c.session = w.tick + 1
			c.state = clientReady
		}
	default:
		w.fail("g%d: unexpected reply status %s", c.g.idx, rp.Status)
	}
}

// checkNacks checks the nack rule: a DoViewChange never nacks an op its
// sender acknowledged in the view its log is from. Within one view the log is
// the primary's, so an op acknowledged in view L is still in the sender's log
// of view L unless it lost it — and then it must be fenced (its nack floor at
// or above the op). A nack here is explicit (nack bit), a different header at
// the op, or the log ending below the op.
func (w *world) checkNacks(g *group, r int, m vsr.Message) {
	h := m.Header
	c := h.Control()
	switch h.Command() {
	case vsr.CmdPrepareOk:
		g.acks[r][c.Op] = ackRecord{id: c.ID, view: h.View()}
		g.ackTop[r] = max(g.ackTop[r], c.Op)
	case vsr.CmdDoViewChange:
		for op := max(c.Commit, c.NackFloor) + 1; op <= g.ackTop[r] && op > c.NackFloor; op++ {
			a, ok := g.acks[r][op]
			if !ok || a.view != c.LogView {
				continue
			}
			nacked := op > c.Op
			if !nacked {
				i := int(c.Op - op)
				if (i+1)*vsr.HeaderSize > len(m.Body) {
					continue
				}
				bh := (*vsr.Header)(m.Body[i*vsr.HeaderSize : (i+1)*vsr.HeaderSize])
				nacked = bh.Identity() != a.id || c.Nacked(i)
			}
			if nacked {
				w.fail("g%d r%d: do_view_change for view %d (log_view %d, op %d, commit %d, nacks above %d) nacks op %d (%s), which it acknowledged in view %d",
					g.idx, r, h.View(), c.LogView, c.Op, c.Commit, c.NackFloor, op, a.id, a.view)
				return
			}
		}
	}
}

// checkJournal checks the fencing order: a fenced replica (one that may have
// forgotten ops it acknowledged) truncates its journal only once a state
// record saying so is durable; a truncate that outlived a crash the record
// did not would leave an unfenced replica with a shorter journal, free to
// nack what it acknowledged.
//
// And the view order: an unfenced replica truncates no op it acknowledged in
// the log_view of its durable state record above that record's commit (a
// do_view_change from that record would nack it); a view change that drops such an
// op truncates only once the record of its new log_view is durable, or a
// crash could keep the truncate and lose the record (seed 2020831).
func (w *world) checkJournal(g *group, r int, j vsr.JournalOp) {
	if w.o.NoContractChecks || j.Kind != vsr.JournalTruncate {
		return
	}
	node := g.nodes[r]
	if node.R == nil {
		return
	}
	var durable *vsr.State
	if node.Disk.State != nil {
		durable, _ = vsr.DecodeState(node.Disk.State)
	}
	if node.R.Info().Fenced {
		if durable == nil || !durable.Fenced {
			w.fail("g%d r%d truncated its journal to op %d while fenced, before its fence was durable", g.idx, r, j.Op)
		}
		return
	}
	if durable == nil || durable.Fenced {
		return
	}
	// A do_view_change nacks nothing at or below the commit its record
	// carries.
	for op := max(j.Op, durable.Commit, durable.Checkpoint) + 1; op <= g.ackTop[r]; op++ {
		if a, ok := g.acks[r][op]; ok && a.view == durable.LogView && node.Disk.HasDurable(op, a.id) {
			w.fail("g%d r%d truncated its journal to op %d, dropping op %d (%s) it acknowledged in view %d, the log_view of its durable state record",
				g.idx, r, j.Op, op, a.id, a.view)
			return
		}
	}
}
