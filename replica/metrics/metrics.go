// Package metrics holds the node's Prometheus instruments: the few the hot
// paths bump (request latency per command and transport, storage submission
// latency, consensus events, connections opened) and a collector that reads
// everything else from published state when a scrape asks (entity counts,
// shard inboxes, per-topic append counters, consensus roles, gossip, memory
// pools). It does no I/O and starts no goroutine; the HTTP API serves its
// registry.
//
// # Cost on the hot path
//
// A request observation is one array index and one histogram observation
// (atomic adds, no allocation); the histogram child of a (transport,
// command) pair is created on its first use and cached in an
// atomic.Pointer. Storage observations are one per submission (a batch of
// many messages), never one per message. Per-topic message and byte
// counters are the partitions' own atomics (added once per applied batch),
// summed only at scrape time. A nil *Metrics accepts every call and does
// nothing, so code paths that run without a registry (tests, tools) need no
// checks.
//
// # Names
//
// Iggy 0.9's names come without a prefix: http_requests_total and the
// gauges streams, topics, partitions, segments, messages, users, clients.
// Everything iggo adds is prefixed iggo_ (see the README's metric list).
package metrics

import (
	"encoding/binary"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/iggo/iggo/wire"
)

// Transports the request metrics distinguish (wire.Transport* values; 0 is
// "other", for in-process callers that name none).
const maxTransport = 8

// TransportName is the label of a wire.Transport* value.
func TransportName(t uint8) string {
	switch t {
	case wire.TransportTCP:
		return "tcp"
	case wire.TransportQUIC:
		return "quic"
	case wire.TransportHTTP:
		return "http"
	case wire.TransportWebSocket:
		return "websocket"
	}
	return "other"
}

// Storage submission kinds (StorageKind values) for ObserveStorage.
type StorageKind uint8

const (
	// JournalWrite is a journal append (header and body, vectored).
	JournalWrite StorageKind = iota
	// GroupCommit is one shard iteration's fdatasync submission: every
	// journal that needs it and the segment syncs riding along.
	GroupCommit
	// SegmentWrite is one submission of segment appends (all partitions of
	// a shard with pending records).
	SegmentWrite
	// SegmentSync is a segment fdatasync submitted on its own (no group
	// commit to ride).
	SegmentSync
	// Checkpoint is one group checkpoint on its shard loop: the state
	// machine's files, syncs and superblock (the view state that names it
	// is a separate write).
	Checkpoint
	storageKinds
)

var storageKindNames = [storageKinds]string{"journal_write", "group_commit", "segment_write", "segment_sync", "checkpoint"}

// GroupKind labels consensus events: the metadata group or a partition.
type GroupKind uint8

const (
	Metadata GroupKind = iota
	Partition
	groupKinds
)

var groupKindNames = [groupKinds]string{"metadata", "partition"}

// String is the label value.
func (k GroupKind) String() string { return groupKindNames[k] }

// commandSlots indexes the request histogram: one slot per known command
// code plus one for unknown ones.
var (
	commandSlot  = map[wire.CommandCode]int{}
	commandNames []string
	opSlot       [256]int
)

func init() {
	codes := []wire.CommandCode{}
	for c := wire.CommandCode(0); c < 1000; c++ {
		if c.Known() {
			codes = append(codes, c)
		}
	}
	for i, c := range codes {
		commandSlot[c] = i
		commandNames = append(commandNames, c.String())
	}
	commandNames = append(commandNames, "unknown")
	unknown := len(codes)
	for op := range opSlot {
		opSlot[op] = unknown
		if c, ok := wire.CommandForOperation(wire.Operation(op)); ok {
			opSlot[op] = commandSlot[c]
		}
	}
}

// slotOf is the command slot of a request frame, read from its header
// without decoding it (operation byte at 176, command code at 196).
func slotOf(frame []byte) int {
	if len(frame) < wire.HeaderSize {
		return len(commandNames) - 1
	}
	op := frame[176]
	if wire.Operation(op) == wire.OpNonReplicated {
		if s, ok := commandSlot[wire.CommandCode(binary.LittleEndian.Uint32(frame[196:200]))]; ok {
			return s
		}
		return len(commandNames) - 1
	}
	return opSlot[op]
}

// Metrics is the node's instrument set and its registry.
type Metrics struct {
	reg *prometheus.Registry

	requests *prometheus.HistogramVec
	reqObs   [maxTransport][]atomic.Pointer[prometheus.Histogram]

	storage    *prometheus.HistogramVec
	storageObs [storageKinds]prometheus.Observer

	opened    *prometheus.CounterVec
	openedCtr [maxTransport]prometheus.Counter

	viewChanges, repairs, transfers [groupKinds]prometheus.Counter

	httpRequests prometheus.Counter
}

// New builds the instruments and a registry holding them, the Go runtime
// and process collectors, and the state collector over src (nil: none).
func New(src Source) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "iggo_request_duration_seconds",
		Help:    "Time from a decoded request frame to its reply written, by command and transport.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2.5, 13),
	}, []string{"command", "transport"})
	for t := range m.reqObs {
		m.reqObs[t] = make([]atomic.Pointer[prometheus.Histogram], len(commandNames))
	}
	m.storage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "iggo_storage_submit_seconds",
		Help:    "Latency of one storage submission (journal append, group commit fdatasync, segment write or sync).",
		Buckets: prometheus.ExponentialBuckets(20e-6, 2.5, 13),
	}, []string{"kind"})
	for k := range m.storageObs {
		m.storageObs[k] = m.storage.WithLabelValues(storageKindNames[k])
	}
	m.opened = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "iggo_connections_opened_total",
		Help: "Client connections (and HTTP sessions) opened, by transport.",
	}, []string{"transport"})
	for t := range m.openedCtr {
		m.openedCtr[t] = m.opened.WithLabelValues(TransportName(uint8(t)))
	}
	vc := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "iggo_vsr_view_changes_total",
		Help: "Views this node's replicas moved to, by group kind.",
	}, []string{"kind"})
	rp := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "iggo_vsr_repairs_total",
		Help: "Journal entries repaired from a peer, by group kind.",
	}, []string{"kind"})
	tr := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "iggo_vsr_state_transfers_total",
		Help: "Checkpoints installed by state transfer, by group kind.",
	}, []string{"kind"})
	for k := range groupKinds {
		m.viewChanges[k] = vc.WithLabelValues(groupKindNames[k])
		m.repairs[k] = rp.WithLabelValues(groupKindNames[k])
		m.transfers[k] = tr.WithLabelValues(groupKindNames[k])
	}
	m.httpRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "total count of http_requests",
	})
	m.reg.MustRegister(m.requests, m.storage, m.opened, vc, rp, tr, m.httpRequests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src != nil {
		m.reg.MustRegister(newStateCollector(src))
	}
	return m
}

// Registry is what /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest records one served request frame.
func (m *Metrics) ObserveRequest(transport uint8, frame []byte, d time.Duration) {
	if m == nil {
		return
	}
	if transport >= maxTransport {
		transport = 0
	}
	slot := slotOf(frame)
	p := &m.reqObs[transport][slot]
	h := p.Load()
	if h == nil {
		o := m.requests.WithLabelValues(commandNames[slot], TransportName(transport)).(prometheus.Histogram)
		p.CompareAndSwap(nil, &o)
		h = p.Load()
	}
	(*h).Observe(d.Seconds())
}

// ObserveStorage records one storage submission.
func (m *Metrics) ObserveStorage(k StorageKind, d time.Duration) {
	if m == nil {
		return
	}
	m.storageObs[k].Observe(d.Seconds())
}

// ConnectionOpened counts a connection or HTTP session.
func (m *Metrics) ConnectionOpened(transport uint8) {
	if m == nil {
		return
	}
	if transport >= maxTransport {
		transport = 0
	}
	m.openedCtr[transport].Inc()
}

// ViewChange counts a replica moving to a higher view.
func (m *Metrics) ViewChange(k GroupKind) {
	if m != nil {
		m.viewChanges[k].Inc()
	}
}

// Repair counts a journal entry rewritten from a peer.
func (m *Metrics) Repair(k GroupKind) {
	if m != nil {
		m.repairs[k].Inc()
	}
}

// StateTransfer counts an installed state transfer.
func (m *Metrics) StateTransfer(k GroupKind) {
	if m != nil {
		m.transfers[k].Inc()
	}
}

// HTTPRequest counts one HTTP request (Iggy's http_requests_total).
func (m *Metrics) HTTPRequest() {
	if m != nil {
		m.httpRequests.Inc()
	}
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
