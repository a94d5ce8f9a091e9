// Package fakenode is a small single-node stand-in for iggo-server, built
// on package wire, that the chaos runner is tested against until the real
// server exists (and afterwards, to prove that the checker catches bugs).
// It serves what the chaos workload uses: login, ping, the roster, streams,
// topics, sends, polls (offset, first, last, next; auto-commit), consumer
// offsets and consumer groups (join, leave, sync, round-robin assignment).
//
// Sends that carry a producer identity are applied at most once per
// identity, as iggo's partitions do (an unbounded table, rebuilt from
// messages.log on restart).
//
// It runs as a real process (Main) so that kill -9, SIGSTOP, wipes and
// corruption act on it for real. State is kept in append-only files under
// the data directory, written (not fsynced) before each reply, which
// survives kill -9 on a machine that stays up:
//
//	meta.log      stream, topic and group creations and deletions
//	messages.log  stamped message batches, one per send
//	next.log      each partition's next offset after each send (the
//	              watermark that keeps offsets from being reused when
//	              messages.log loses its tail)
//	offsets.log   stored consumer offsets
//
// Each line is "<crc32 of the JSON, 8 hex digits> <JSON>\n". Replay stops
// at the first line that does not verify, and the file is cut there.
//
// Bugs can be switched on (Config.Bugs) to check that the chaos checker
// sees them:
//
//	lose-acked        on restart the last batch of messages.log is dropped
//	                  (acknowledged messages lost; offsets not reused)
//	reuse-offsets     on restart every partition's next offset goes back
//	                  by one (an acknowledged offset is handed out again)
//	volatile-offsets  consumer offsets are never written to disk
//	forget-deletes    stream deletions are never written to disk
package fakenode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/iggo/iggo/wire"
)

// Bug names.
const (
	BugLoseAcked       = "lose-acked"
	BugReuseOffsets    = "reuse-offsets"
	BugVolatileOffsets = "volatile-offsets"
	BugForgetDeletes   = "forget-deletes"
)

// Bugs lists every bug.
var Bugs = []string{BugLoseAcked, BugReuseOffsets, BugVolatileOffsets, BugForgetDeletes}

// Config configures a node.
type Config struct {
	Addr    string
	DataDir string
	Bugs    []string
	// Fresh discards the data directory's contents on boot.
	Fresh bool
	// Ready receives "ready <addr>" once the listener is up.
	Ready io.Writer
}

func (c *Config) bug(name string) bool { return slices.Contains(c.Bugs, name) }

// Main runs a node from command-line flags until SIGTERM or SIGINT and
// returns the exit code:
//
//	--addr 127.0.0.1:8090 --data DIR [--bug NAME,...] [--fresh]
func Main(args []string) int {
	fs := flag.NewFlagSet("fakenode", flag.ContinueOnError)
	var cfg Config
	var bugs string
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8090", "listen address")
	fs.StringVar(&cfg.DataDir, "data", "fakenode-data", "data directory")
	fs.StringVar(&bugs, "bug", "", "comma-separated bugs to switch on: "+strings.Join(Bugs, ", "))
	fs.BoolVar(&cfg.Fresh, "fresh", false, "discard the data directory on boot")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, b := range strings.Split(bugs, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if !slices.Contains(Bugs, b) {
			fmt.Fprintf(os.Stderr, "fakenode: unknown bug %q\n", b)
			return 2
		}
		cfg.Bugs = append(cfg.Bugs, b)
	}
	cfg.Ready = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "fakenode:", err)
		return 1
	}
	return 0
}

// Run serves until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Fresh {
		os.RemoveAll(cfg.DataDir)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return err
	}
	n := &node{cfg: cfg, streams: map[uint32]*stream{}, conns: map[*conn]bool{}}
	if err := n.recover(); err != nil {
		return err
	}
	defer n.closeFiles()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	n.addr = ln.Addr().String()
	if cfg.Ready != nil {
		fmt.Fprintf(cfg.Ready, "ready %s\n", n.addr)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	for {
		nc, err := ln.Accept()
		if err != nil {
			break
		}
		c := &conn{n: n, nc: nc}
		n.mu.Lock()
		n.conns[c] = true
		n.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve()
		}()
	}
	n.mu.Lock()
	for c := range n.conns {
		c.nc.Close()
	}
	n.mu.Unlock()
	wg.Wait()
	return nil
}

type node struct {
	cfg  Config
	addr string

	mu           sync.Mutex
	streams      map[uint32]*stream
	nextStreamID uint32
	sessions     uint64
	conns        map[*conn]bool
	files        map[string]*os.File
}

type stream struct {
	id          uint32
	name        string
	created     uint64
	topics      map[uint32]*topic
	nextTopicID uint32
}

type topic struct {
	id          uint32
	name        string
	created     uint64
	parts       []*partition
	groups      map[uint32]*group
	nextGroupID uint32
}

type partition struct {
	records []record
	next    uint64
	offsets map[string]uint64 // consumer key -> stored offset
	// producers is the retry table of exactly-once sends (unbounded here).
	producers map[wire.Uint128]*prodEntry
}

// prodEntry is a producer's latest applied send in a partition.
type prodEntry struct {
	session, request, base uint64
}

type record struct {
	base  uint64
	count uint32
	batch wire.BatchView
}

type group struct {
	id         uint32
	name       string
	members    []wire.Uint128 // join order
	assign     map[wire.Uint128][]uint32
	generation uint64
}

// --- persistence ---

// entry is one line of a state file.
type entry struct {
	T      string `json:"t"`
	Stream uint32 `json:"s,omitempty"`
	Topic  uint32 `json:"tp,omitempty"`
	Part   uint32 `json:"p,omitempty"`
	ID     uint32 `json:"id,omitempty"`
	Name   string `json:"name,omitempty"`
	Parts  uint32 `json:"parts,omitempty"`
	Batch  string `json:"b,omitempty"`
	Base   uint64 `json:"base,omitempty"`
	Next   uint64 `json:"next,omitempty"`
	Key    string `json:"k,omitempty"`
	Offset uint64 `json:"o,omitempty"`
	At     uint64 `json:"at,omitempty"`
	// Producer identity of a batch (exactly-once sends).
	ProdLo   uint64 `json:"plo,omitempty"`
	ProdHi   uint64 `json:"phi,omitempty"`
	PSession uint64 `json:"ps,omitempty"`
	PRequest uint64 `json:"pr,omitempty"`
}

func (n *node) path(f string) string { return filepath.Join(n.cfg.DataDir, f) }

// replay reads file f, calling apply for each verified entry; the file is
// cut after the last one. It returns the entries' line starts.
func (n *node) replay(f string, apply func(entry)) ([]int64, error) {
	b, err := os.ReadFile(n.path(f))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var starts []int64
	pos := 0
	for pos < len(b) {
		nl := bytes.IndexByte(b[pos:], '\n')
		if nl < 10 {
			break
		}
		line := b[pos : pos+nl]
		sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
		if err != nil || line[8] != ' ' || crc32.ChecksumIEEE(line[9:]) != uint32(sum) {
			break
		}
		var e entry
		if json.Unmarshal(line[9:], &e) != nil {
			break
		}
		apply(e)
		starts = append(starts, int64(pos))
		pos += nl + 1
	}
	if pos < len(b) {
		if err := os.Truncate(n.path(f), int64(pos)); err != nil {
			return nil, err
		}
	}
	return starts, nil
}

func (n *node) recover() error {
	n.files = map[string]*os.File{}
	if _, err := n.replay("meta.log", n.applyMeta); err != nil {
		return err
	}
	type batchAt struct {
		e    entry
		line int64
	}
	var batches []batchAt
	starts, err := n.replay("messages.log", func(e entry) { batches = append(batches, batchAt{e: e}) })
	if err != nil {
		return err
	}
	for j := range batches {
		batches[j].line = starts[j]
	}
	if n.cfg.bug(BugLoseAcked) && len(batches) > 0 {
		// The bug: the last batch never made it to disk.
		last := batches[len(batches)-1]
		batches = batches[:len(batches)-1]
		if err := os.Truncate(n.path("messages.log"), last.line); err != nil {
			return err
		}
	}
	for _, b := range batches {
		n.applyBatch(b.e)
	}
	if !n.cfg.bug(BugReuseOffsets) {
		if _, err := n.replay("next.log", func(e entry) {
			if p := n.part(e.Stream, e.Topic, e.Part); p != nil && e.Next > p.next {
				p.next = e.Next
			}
		}); err != nil {
			return err
		}
	} else {
		for _, s := range n.streams {
			for _, t := range s.topics {
				for _, p := range t.parts {
					if p.next > 0 {
						p.next-- // the bug: the last offset is handed out again
					}
				}
			}
		}
	}
	if _, err := n.replay("offsets.log", func(e entry) {
		if p := n.part(e.Stream, e.Topic, e.Part); p != nil {
			p.offsets[e.Key] = e.Offset
		}
	}); err != nil {
		return err
	}
	for _, f := range []string{"meta.log", "messages.log", "next.log", "offsets.log"} {
		fh, err := os.OpenFile(n.path(f), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		n.files[f] = fh
	}
	return nil
}

func (n *node) closeFiles() {
	for _, f := range n.files {
		f.Close()
	}
}

func (n *node) applyMeta(e entry) {
	switch e.T {
	case "stream":
		n.streams[e.ID] = &stream{id: e.ID, name: e.Name, created: e.At, topics: map[uint32]*topic{}}
		n.nextStreamID = max(n.nextStreamID, e.ID+1)
	case "dstream":
		delete(n.streams, e.ID)
	case "topic":
		if s := n.streams[e.Stream]; s != nil {
			t := &topic{id: e.ID, name: e.Name, created: e.At, groups: map[uint32]*group{}}
			for i := uint32(0); i < e.Parts; i++ {
				t.parts = append(t.parts, &partition{offsets: map[string]uint64{}})
			}
			s.topics[e.ID] = t
			s.nextTopicID = max(s.nextTopicID, e.ID+1)
		}
	case "dtopic":
		if s := n.streams[e.Stream]; s != nil {
			delete(s.topics, e.ID)
		}
	case "group":
		if t := n.topic(e.Stream, e.Topic); t != nil {
			t.groups[e.ID] = &group{id: e.ID, name: e.Name, assign: map[wire.Uint128][]uint32{}}
			t.nextGroupID = max(t.nextGroupID, e.ID+1)
		}
	}
}

func (n *node) applyBatch(e entry) {
	p := n.part(e.Stream, e.Topic, e.Part)
	if p == nil {
		return
	}
	raw, err := base64.StdEncoding.DecodeString(e.Batch)
	if err != nil {
		return
	}
	v, err := wire.ParseBatch(raw)
	if err != nil {
		return
	}
	p.records = append(p.records, record{base: v.BaseOffset(), count: v.MessageCount(), batch: v})
	p.next = max(p.next, v.BaseOffset()+uint64(v.MessageCount()))
	if id := (wire.Uint128{Lo: e.ProdLo, Hi: e.ProdHi}); !id.IsZero() {
		p.noteProducer(id, e.PSession, e.PRequest, v.BaseOffset())
	}
}

func (p *partition) noteProducer(id wire.Uint128, sess, req, base uint64) {
	if p.producers == nil {
		p.producers = map[wire.Uint128]*prodEntry{}
	}
	p.producers[id] = &prodEntry{session: sess, request: req, base: base}
}

func (n *node) topic(s, t uint32) *topic {
	if st := n.streams[s]; st != nil {
		return st.topics[t]
	}
	return nil
}

func (n *node) part(s, t, p uint32) *partition {
	if tp := n.topic(s, t); tp != nil && int(p) < len(tp.parts) {
		return tp.parts[p]
	}
	return nil
}

// write appends an entry to file f; mu held. The write reaches the kernel
// before the reply leaves, so kill -9 cannot lose it.
func (n *node) write(f string, e entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line := fmt.Appendf(nil, "%08x %s\n", crc32.ChecksumIEEE(b), b)
	_, err = n.files[f].Write(line)
	return err
}

// --- connections ---

type conn struct {
	n       *node
	nc      net.Conn
	session uint64
	client  wire.Uint128
	hdr     wire.RequestHeader // of the request being dispatched
}

func (c *conn) serve() {
	defer func() {
		c.nc.Close()
		c.n.mu.Lock()
		delete(c.n.conns, c)
		c.n.leaveAllLocked(c.client)
		c.n.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		frame, err := wire.ReadFrame(br, nil, 0)
		if err != nil {
			return
		}
		h, body, err := wire.DecodeRequest(frame, 0)
		if err != nil {
			return
		}
		reply := c.handle(h, body)
		if reply == nil {
			return
		}
		if _, err := c.nc.Write(reply); err != nil {
			return
		}
	}
}

func now() uint64 { return uint64(time.Now().UnixMicro()) }

func (c *conn) handle(h wire.RequestHeader, body []byte) []byte {
	n := c.n
	switch h.Operation {
	case wire.OpRegister:
		if _, err := wire.DecodeRegister(body); err != nil {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictMalformedLogin, 0, 0)
		}
		n.mu.Lock()
		n.leaveAllLocked(c.client)
		n.sessions++
		c.session, c.client = n.sessions, h.Client
		n.mu.Unlock()
		p, _ := (&wire.LoginReply{Session: c.session, ServerProtocol: wire.CurrentProtocol, ServerVersion: "fakenode"}).AppendTo(nil)
		return wire.AppendReply(nil, &h, p)
	case wire.OpLogout:
		n.mu.Lock()
		n.leaveAllLocked(c.client)
		n.mu.Unlock()
		c.session = 0
		return wire.AppendReply(nil, &h, nil)
	case wire.OpNonReplicated:
		if c.session == 0 && h.Code != wire.CmdPing {
			return wire.AppendStatusReply(nil, &h, wire.CodeUnauthenticated)
		}
	default:
		if c.session == 0 || h.Session != c.session {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictNoSession, 0, 0)
		}
	}
	req, err := wire.DecodeRequestBody(h.Code, body)
	if err != nil {
		return wire.AppendStatusReply(nil, &h, wire.CodeInvalidCommand)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	c.hdr = h
	payload, code, reject := c.dispatch(req)
	switch {
	case code != 0 && reject:
		return wire.AppendRejectionReply(nil, &h, code)
	case code != 0:
		return wire.AppendStatusReply(nil, &h, code)
	}
	var out []byte
	if payload != nil {
		if out, err = payload.AppendTo(nil); err != nil {
			return wire.AppendStatusReply(nil, &h, wire.CodeError)
		}
	}
	return wire.AppendReply(nil, &h, out)
}

// raw is a reply payload already encoded.
type raw []byte

func (r raw) AppendTo(dst []byte) ([]byte, error) { return append(dst, r...), nil }

func (n *node) streamBy(id wire.Identifier) *stream {
	if v, ok := id.Numeric(); ok {
		return n.streams[v]
	}
	name, _ := id.Name()
	for _, s := range n.streams {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (s *stream) topicBy(id wire.Identifier) *topic {
	if v, ok := id.Numeric(); ok {
		return s.topics[v]
	}
	name, _ := id.Name()
	for _, t := range s.topics {
		if t.name == name {
			return t
		}
	}
	return nil
}

func (t *topic) groupBy(id wire.Identifier) *group {
	if v, ok := id.Numeric(); ok {
		return t.groups[v]
	}
	name, _ := id.Name()
	for _, g := range t.groups {
		if g.name == name {
			return g
		}
	}
	return nil
}

// resolve finds a stream and topic or says which is missing.
func (n *node) resolve(s, t wire.Identifier) (*stream, *topic, wire.Code) {
	st := n.streamBy(s)
	if st == nil {
		return nil, nil, wire.CodeStreamIdNotFound
	}
	tp := st.topicBy(t)
	if tp == nil {
		return st, nil, wire.CodeTopicIdNotFound
	}
	return st, tp, 0
}

func (n *node) streamRecord(s *stream) wire.Stream {
	return wire.Stream{ID: s.id, CreatedAt: s.created, TopicsCount: uint32(len(s.topics)), Name: s.name}
}

func (n *node) topicDetails(t *topic) *wire.TopicDetails {
	d := &wire.TopicDetails{Topic: wire.Topic{ID: t.id, CreatedAt: t.created, PartitionsCount: uint32(len(t.parts)),
		CompressionAlgorithm: wire.CompressionNone, Name: t.name}}
	for i, p := range t.parts {
		d.Partitions = append(d.Partitions, wire.Partition{ID: uint32(i), CreatedAt: t.created, SegmentsCount: 1, CurrentOffset: current(p)})
	}
	return d
}

func current(p *partition) uint64 {
	if p.next == 0 {
		return 0
	}
	return p.next - 1
}

// consumerKey names an offset owner; groups resolve to their id.
func consumerKey(t *topic, c wire.Consumer) (string, *group, wire.Code) {
	if c.Kind == wire.ConsumerKindGroup {
		g := t.groupBy(c.ID)
		if g == nil {
			return "", nil, wire.CodeConsumerGroupIdNotFound
		}
		return fmt.Sprintf("g:%d", g.id), g, 0
	}
	return "c:" + c.ID.String(), nil, 0
}

func (c *conn) dispatch(req wire.Request) (wire.ReplyPayload, wire.Code, bool) {
	n := c.n
	switch r := req.(type) {
	case *wire.Ping:
		return nil, 0, false
	case *wire.GetClusterMetadata:
		host, port, _ := net.SplitHostPort(n.addr)
		pn, _ := strconv.Atoi(port)
		return &wire.ClusterMetadata{Name: "fakenode", Nodes: []wire.ClusterNode{{Name: "fake-0", IP: host, TCPPort: uint16(pn),
			Role: wire.RoleLeader, Status: wire.NodeHealthy}}}, 0, false
	case *wire.CreateStream:
		for _, s := range n.streams {
			if s.name == r.Name {
				return nil, wire.CodeStreamNameAlreadyExists, true
			}
		}
		s := &stream{id: n.nextStreamID, name: r.Name, created: now(), topics: map[uint32]*topic{}}
		if err := n.write("meta.log", entry{T: "stream", ID: s.id, Name: s.name, At: s.created}); err != nil {
			return nil, wire.CodeError, false
		}
		n.nextStreamID++
		n.streams[s.id] = s
		rec := n.streamRecord(s)
		return &rec, 0, false
	case *wire.GetStream:
		s := n.streamBy(r.StreamID)
		if s == nil {
			return raw(nil), 0, false
		}
		d := wire.StreamDetails{Stream: n.streamRecord(s)}
		for _, id := range sortedKeys(s.topics) {
			d.Topics = append(d.Topics, n.topicDetails(s.topics[id]).Topic)
		}
		return &d, 0, false
	case *wire.DeleteStream:
		s := n.streamBy(r.StreamID)
		if s == nil {
			return nil, wire.CodeStreamIdNotFound, true
		}
		if !n.cfg.bug(BugForgetDeletes) {
			if err := n.write("meta.log", entry{T: "dstream", ID: s.id}); err != nil {
				return nil, wire.CodeError, false
			}
		}
		delete(n.streams, s.id)
		return nil, 0, false
	case *wire.CreateTopic:
		s := n.streamBy(r.StreamID)
		if s == nil {
			return nil, wire.CodeStreamIdNotFound, true
		}
		if s.topicBy(mustName(r.Name)) != nil {
			return nil, wire.CodeTopicNameAlreadyExists, true
		}
		if r.PartitionsCount == 0 || r.PartitionsCount > 1000 {
			return nil, wire.CodeTooManyPartitions, false
		}
		e := entry{T: "topic", Stream: s.id, ID: s.nextTopicID, Name: r.Name, Parts: r.PartitionsCount, At: now()}
		if err := n.write("meta.log", e); err != nil {
			return nil, wire.CodeError, false
		}
		n.applyMeta(e)
		return n.topicDetails(s.topics[e.ID]), 0, false
	case *wire.GetTopic:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return raw(nil), 0, false
		}
		return n.topicDetails(t), 0, false
	case *wire.DeleteTopic:
		s, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, true
		}
		if err := n.write("meta.log", entry{T: "dtopic", Stream: s.id, ID: t.id}); err != nil {
			return nil, wire.CodeError, false
		}
		delete(s.topics, t.id)
		return nil, 0, false
	case *wire.SendMessages:
		s, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, false
		}
		if r.Partitioning.Kind != wire.PartitionIDKind {
			return nil, wire.CodeInvalidCommand, false
		}
		pid := r.Partitioning.PartitionID
		if int(pid) >= len(t.parts) {
			return nil, wire.CodePartitionNotFound, false
		}
		p := t.parts[pid]
		h := c.hdr
		if !h.Producer.IsZero() {
			// Exactly-once sends, as iggo's partitions apply them.
			if pe := p.producers[h.Producer]; pe != nil && pe.session == h.ProducerSession {
				switch {
				case h.ProducerRequest == pe.request:
					return wire.SendConfirmations{{StreamID: s.id, TopicID: t.id, PartitionID: pid, BaseOffset: pe.base}}, 0, false
				case h.ProducerRequest < pe.request:
					return nil, wire.CodeRequestAlreadyApplied, false
				}
			} else if pe != nil && h.ProducerSession < pe.session {
				return nil, wire.CodeInvalidSession, false
			}
		}
		v, err := wire.ParseBatch(bytes.Clone(r.Batch.Bytes()))
		if err != nil {
			return nil, wire.CodeInvalidCommand, false
		}
		base := p.next
		v.Stamp(uint64(pid), base, now())
		e := entry{T: "batch", Stream: s.id, Topic: t.id, Part: pid, Batch: base64.StdEncoding.EncodeToString(v.Bytes()),
			ProdLo: h.Producer.Lo, ProdHi: h.Producer.Hi, PSession: h.ProducerSession, PRequest: h.ProducerRequest}
		if err := n.write("messages.log", e); err != nil {
			return nil, wire.CodeError, false
		}
		p.records = append(p.records, record{base: base, count: v.MessageCount(), batch: v})
		p.next = base + uint64(v.MessageCount())
		if !h.Producer.IsZero() {
			p.noteProducer(h.Producer, h.ProducerSession, h.ProducerRequest, base)
		}
		if err := n.write("next.log", entry{T: "next", Stream: s.id, Topic: t.id, Part: pid, Next: p.next}); err != nil {
			return nil, wire.CodeError, false
		}
		return wire.SendConfirmations{{StreamID: s.id, TopicID: t.id, PartitionID: pid, BaseOffset: base}}, 0, false
	case *wire.PollMessages:
		return c.poll(r)
	case *wire.GetConsumerOffset:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, false
		}
		pid := r.Partition.ID // absent: partition 0
		if int(pid) >= len(t.parts) {
			return nil, wire.CodePartitionNotFound, false
		}
		key, _, code := consumerKey(t, r.Consumer)
		if code != 0 {
			return nil, code, false
		}
		p := t.parts[pid]
		o, ok := p.offsets[key]
		if !ok {
			return raw(nil), 0, false
		}
		return &wire.ConsumerOffsetInfo{PartitionID: pid, CurrentOffset: current(p), StoredOffset: o}, 0, false
	case *wire.StoreConsumerOffset:
		s, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, wire.CodeResourceNotFound, false
		}
		pid := r.Partition.ID
		if int(pid) >= len(t.parts) {
			return nil, wire.CodePartitionNotFound, false
		}
		key, g, code := consumerKey(t, r.Consumer)
		if code != 0 {
			return nil, code, false
		}
		if g != nil && !slices.Contains(g.assign[c.client], pid) {
			return nil, wire.CodeConsumerGroupPartitionNotOwned, false
		}
		p := t.parts[pid]
		if p.next == 0 || r.Offset > current(p) {
			return nil, wire.CodeInvalidOffset, false
		}
		if err := n.storeOffset(s, t, pid, key, r.Offset); err != nil {
			return nil, wire.CodeError, false
		}
		return nil, 0, false
	case *wire.CreateConsumerGroup:
		s, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, true
		}
		if t.groupBy(mustName(r.Name)) != nil {
			return nil, wire.CodeConsumerGroupNameAlreadyExists, true
		}
		e := entry{T: "group", Stream: s.id, Topic: t.id, ID: t.nextGroupID, Name: r.Name}
		if err := n.write("meta.log", e); err != nil {
			return nil, wire.CodeError, false
		}
		n.applyMeta(e)
		return &wire.ConsumerGroupDetails{ConsumerGroup: wire.ConsumerGroup{ID: e.ID, PartitionsCount: uint32(len(t.parts)), Name: r.Name}}, 0, false
	case *wire.GetConsumerGroup:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return raw(nil), 0, false
		}
		g := t.groupBy(r.GroupID)
		if g == nil {
			return raw(nil), 0, false
		}
		d := &wire.ConsumerGroupDetails{ConsumerGroup: wire.ConsumerGroup{ID: g.id, PartitionsCount: uint32(len(t.parts)),
			MembersCount: uint32(len(g.members)), Name: g.name}}
		for i, m := range g.members {
			d.Members = append(d.Members, wire.ConsumerGroupMember{ID: uint32(i), Partitions: g.assign[m]})
		}
		return d, 0, false
	case *wire.JoinConsumerGroup:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, true
		}
		g := t.groupBy(r.GroupID)
		if g == nil {
			return nil, wire.CodeConsumerGroupIdNotFound, true
		}
		if !slices.Contains(g.members, c.client) {
			g.members = append(g.members, c.client)
			g.rebalance(len(t.parts))
		}
		return nil, 0, false
	case *wire.LeaveConsumerGroup:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, true
		}
		g := t.groupBy(r.GroupID)
		if g == nil {
			return nil, wire.CodeConsumerGroupIdNotFound, true
		}
		if !slices.Contains(g.members, c.client) {
			return nil, wire.CodeConsumerGroupMemberNotFound, true
		}
		g.leave(c.client, len(t.parts))
		return nil, 0, false
	case *wire.SyncConsumerGroup:
		_, t, code := n.resolve(r.StreamID, r.TopicID)
		if code != 0 {
			return nil, code, false
		}
		g := t.groupBy(r.GroupID)
		if g == nil {
			return nil, wire.CodeConsumerGroupIdNotFound, false
		}
		if !slices.Contains(g.members, c.client) {
			return raw(nil), 0, false
		}
		return &wire.GroupAssignment{Generation: g.generation, Partitions: slices.Clone(g.assign[c.client])}, 0, false
	}
	return nil, wire.CodeFeatureUnavailable, false
}

func mustName(s string) wire.Identifier {
	id, err := wire.NamedID(s)
	if err != nil {
		return wire.NumericID(^uint32(0))
	}
	return id
}

func (n *node) storeOffset(s *stream, t *topic, pid uint32, key string, off uint64) error {
	if !n.cfg.bug(BugVolatileOffsets) {
		if err := n.write("offsets.log", entry{T: "offset", Stream: s.id, Topic: t.id, Part: pid, Key: key, Offset: off}); err != nil {
			return err
		}
	}
	t.parts[pid].offsets[key] = off
	return nil
}

func (c *conn) poll(r *wire.PollMessages) (wire.ReplyPayload, wire.Code, bool) {
	n := c.n
	s, t, code := n.resolve(r.StreamID, r.TopicID)
	if code != 0 {
		return nil, code, false
	}
	pid := r.Partition.ID
	key, g, code := consumerKey(t, r.Consumer)
	if code != 0 {
		return nil, code, false
	}
	if g != nil {
		if !r.Partition.Set || !slices.Contains(g.assign[c.client], pid) {
			return raw(wire.AppendPollReplyPrefix(nil, wire.ResyncPartition, 0, 0)), 0, false
		}
	}
	if int(pid) >= len(t.parts) {
		return nil, wire.CodePartitionNotFound, false
	}
	p := t.parts[pid]
	var from uint64
	switch r.Strategy.Kind {
	case wire.PollOffset:
		from = r.Strategy.Value
	case wire.PollLast:
		from = current(p) - min(current(p), uint64(max(r.Count, 1))-1)
	case wire.PollNext:
		if o, ok := p.offsets[key]; ok {
			from = o + 1
		}
	}
	out := []byte{}
	var count uint32
	var last uint64
	for _, rec := range p.records {
		if count >= r.Count {
			break
		}
		if rec.base+uint64(rec.count) <= from {
			continue
		}
		sl, ok := rec.batch.SliceByOffset(from, r.Count-count)
		if !ok {
			continue
		}
		out = sl.AppendTo(out)
		count += sl.Count
		v, _ := wire.ParseBatch(sl.AppendTo(nil))
		last = v.BaseOffset() + uint64(v.LastOffsetDelta())
	}
	if r.AutoCommit && count > 0 {
		if err := n.storeOffset(s, t, pid, key, last); err != nil {
			return nil, wire.CodeError, false
		}
	}
	return raw(append(wire.AppendPollReplyPrefix(nil, pid, current(p), count), out...)), 0, false
}

// rebalance deals partitions round robin over members in join order.
func (g *group) rebalance(parts int) {
	g.generation++
	clear(g.assign)
	if len(g.members) == 0 {
		return
	}
	for p := 0; p < parts; p++ {
		m := g.members[p%len(g.members)]
		g.assign[m] = append(g.assign[m], uint32(p))
	}
}

func (g *group) leave(client wire.Uint128, parts int) {
	g.members = slices.DeleteFunc(g.members, func(m wire.Uint128) bool { return m == client })
	g.rebalance(parts)
}

// leaveAllLocked drops a client from every group (logout, disconnect,
// re-login).
func (n *node) leaveAllLocked(client wire.Uint128) {
	if client.IsZero() {
		return
	}
	for _, s := range n.streams {
		for _, t := range s.topics {
			for _, g := range t.groups {
				if slices.Contains(g.members, client) {
					g.leave(client, len(t.parts))
				}
			}
		}
	}
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
