// Package bench is `iggo bench`: Iggy's benchmark kinds run against an
// iggo (or Iggy) server through package client, with HDR latency
// histograms, a JSON report and PNG charts.
//
// # Kinds
//
//	pinned-producer (pp)            each producer sends to its own stream (1 partition)
//	pinned-consumer (pc)            each consumer reads its own stream
//	pinned-producer-and-consumer    both at once; consumer latency is end to end
//	(ppc)
//	balanced-producer (bp)          producers spread batches over the partitions of
//	                                a few streams (round robin)
//	balanced-consumer-group (bcg)   consumer-group members share the partitions
//	balanced-producer-and-          producers and groups at once; end-to-end latency
//	consumer-group (bpcg)
//	end-to-end-producing-consumer   each actor sends a batch, polls it back, repeats;
//	(e2e)                           latency is send-to-receive
//
// Streams are named bench-stream-1..N, each with one topic "topic-1" and,
// for group kinds, a group "bench-cg-1". The benchmark creates them
// (deleting stale ones with those names unless --reuse-streams) and
// deletes the ones it created at the end unless KeepStreams. Consumer-only
// kinds (pc, bcg) first fill their streams in an unmeasured seeding phase,
// so they run on their own.
//
// # What is measured
//
// One sample per batch. Producers: the send round trip. pc and bcg
// consumers: the poll round trip. ppc and bpcg consumers and e2e actors:
// the time from the batch's origin timestamp (stamped at send) to its
// receipt. With a rate limit each actor is paced at its share of the
// aggregate (consumers of the end-to-end kinds at ReadAmplification times
// it), and latencies are recorded with HDR's coordinated-omission
// correction using the batch's expected interval. Batches sent or
// received during the warm-up are not recorded; a producer's warm-up
// batches do not count against its budget.
//
// # Finishing
//
// Every run is bounded: producers stop after MessageBatches batches each
// (or TotalData bytes in all), consumers once they have received
// everything produced into what they read, and any actor that makes no
// progress for IdleTimeout fails the run. A consumer whose poll returns
// nothing (and was not held by a long poll) backs off, 1 ms doubling to
// 20 ms; a consumer-group member, whose polls take its partitions in turn,
// only after a round of empty polls as long as the topic's partition
// count.
//
// # Partitions
//
// A topic gets up to MaxPartitions partitions: CREATE_TOPIC takes at most
// 1,000 (wire.MaxPartitionsPerRequest), so a larger one is grown with
// CREATE_PARTITIONS requests of at most 1,000 each. The server may refuse
// a count beyond its partition cap (TooManyPartitions).
package bench

import (
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind is a benchmark kind.
type Kind string

// Benchmark kinds (Iggy's names).
const (
	PinnedProducer                   Kind = "pinned-producer"
	PinnedConsumer                   Kind = "pinned-consumer"
	PinnedProducerAndConsumer        Kind = "pinned-producer-and-consumer"
	BalancedProducer                 Kind = "balanced-producer"
	BalancedConsumerGroup            Kind = "balanced-consumer-group"
	BalancedProducerAndConsumerGroup Kind = "balanced-producer-and-consumer-group"
	EndToEndProducingConsumer        Kind = "end-to-end-producing-consumer"
)

// Kinds lists every kind with its alias, in Iggy's order.
var Kinds = []struct {
	Kind  Kind
	Alias string
	Short string
}{
	{PinnedProducer, "pp", "producers, each to its own stream"},
	{PinnedConsumer, "pc", "consumers, each from its own stream"},
	{PinnedProducerAndConsumer, "ppc", "producers and consumers on the same streams, end-to-end latency"},
	{BalancedProducer, "bp", "producers spread over partitions"},
	{BalancedConsumerGroup, "bcg", "consumer groups sharing partitions"},
	{BalancedProducerAndConsumerGroup, "bpcg", "producers and consumer groups, end-to-end latency"},
	{EndToEndProducingConsumer, "e2e", "each actor sends a batch and polls it back"},
}

// ParseKind accepts a name or an alias.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if s == string(k.Kind) || s == k.Alias {
			return k.Kind, nil
		}
	}
	return "", fmt.Errorf("unknown benchmark kind %q", s)
}

// Alias is the short name of k.
func (k Kind) Alias() string {
	for _, x := range Kinds {
		if x.Kind == k {
			return x.Alias
		}
	}
	return string(k)
}

func (k Kind) pinned() bool {
	return k == PinnedProducer || k == PinnedConsumer || k == PinnedProducerAndConsumer || k == EndToEndProducingConsumer
}

func (k Kind) hasProducers() bool {
	return k != PinnedConsumer && k != BalancedConsumerGroup
}

func (k Kind) hasConsumers() bool {
	return k == PinnedConsumer || k == PinnedProducerAndConsumer || k == BalancedConsumerGroup || k == BalancedProducerAndConsumerGroup
}

func (k Kind) groups() bool {
	return k == BalancedConsumerGroup || k == BalancedProducerAndConsumerGroup
}

// endToEnd reports kinds whose consumers measure origin-to-receipt latency.
func (k Kind) endToEnd() bool {
	return k == PinnedProducerAndConsumer || k == BalancedProducerAndConsumerGroup || k == EndToEndProducingConsumer
}

// Range is a fixed value or an inclusive range "min..max".
type Range struct{ Min, Max uint32 }

// ParseRange parses "1000" or "200..500".
func ParseRange(s string) (Range, error) {
	lo, hi, isRange := strings.Cut(s, "..")
	a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 32)
	if err != nil || a == 0 {
		return Range{}, fmt.Errorf("invalid value %q: want a positive number or a range such as 200..500", s)
	}
	if !isRange {
		return Range{uint32(a), uint32(a)}, nil
	}
	b, err := strconv.ParseUint(strings.TrimSpace(hi), 10, 32)
	if err != nil || b < a {
		return Range{}, fmt.Errorf("invalid range %q: want min..max with 0 < min <= max", s)
	}
	return Range{uint32(a), uint32(b)}, nil
}

func (r Range) String() string {
	if r.Min == r.Max {
		return strconv.FormatUint(uint64(r.Min), 10)
	}
	return fmt.Sprintf("%d..%d", r.Min, r.Max)
}

func (r Range) fixed() bool { return r.Min == r.Max }

func (r Range) mean() float64 { return (float64(r.Min) + float64(r.Max)) / 2 }

// Server says where and as whom the benchmark connects.
type Server struct {
	Address  string
	Username string
	Password string
	Token    string
	TLS      *tls.Config
	// Transport is the client transport (client.TransportTCP when empty).
	Transport string
}

// Params are a benchmark's parameters.
type Params struct {
	Kind Kind
	// MessageSize is the payload size in bytes; MessagesPerBatch the
	// messages per send (and the count per poll).
	MessageSize      Range
	MessagesPerBatch Range
	// MessageBatches is the number of batches each producing actor sends;
	// TotalData (bytes, all producers together) replaces it when set.
	MessageBatches uint64
	TotalData      uint64

	Producers      int
	Consumers      int
	Streams        int
	Partitions     int
	ConsumerGroups int

	// RateLimit is the aggregate bytes per second (0: unlimited).
	RateLimit uint64
	// ReadAmplification scales the consumers' rate in ppc and bpcg so they
	// keep up and queueing does not inflate end-to-end latency.
	ReadAmplification float64

	WarmupTime          time.Duration
	SamplingTime        time.Duration
	MovingAverageWindow int
	// IdleTimeout fails the run when an actor makes no progress this long.
	IdleTimeout time.Duration
	// PollWait > 0 makes consumers long-poll: each poll may wait this long
	// on the server for messages (the wait extension) instead of backing
	// off on the client after an empty poll.
	PollWait time.Duration

	// Topic settings of the streams the benchmark creates ("" / 0 = server
	// default).
	MaxTopicSize             uint64
	MessageExpiry            uint64
	Durability               string
	ConsumerOffsetDurability string

	ReuseStreams bool
	KeepStreams  bool

	Server Server

	// OutputDir receives a directory per run with report.json and the
	// charts; "" writes no files.
	OutputDir  string
	Identifier string
	Remark     string
	// Command is the full command line, recorded in the report.
	Command string
	// NoCharts skips the PNG charts.
	NoCharts bool
}

// Defaults returns Iggy's defaults for kind.
func Defaults(kind Kind) Params {
	p := Params{
		Kind:                kind,
		MessageSize:         Range{1000, 1000},
		MessagesPerBatch:    Range{1000, 1000},
		MessageBatches:      1000,
		Producers:           8,
		Consumers:           8,
		ConsumerGroups:      1,
		ReadAmplification:   1.05,
		SamplingTime:        10 * time.Millisecond,
		MovingAverageWindow: 20,
		IdleTimeout:         10 * time.Second,
		Server:              Server{Address: "127.0.0.1:8090", Username: "iggy", Password: "iggy"},
	}
	switch kind {
	case PinnedProducer, EndToEndProducingConsumer:
		p.Consumers, p.ConsumerGroups, p.Streams, p.Partitions = 0, 0, 8, 1
	case PinnedConsumer:
		p.Producers, p.ConsumerGroups, p.Streams, p.Partitions = 0, 0, 8, 1
	case PinnedProducerAndConsumer:
		p.ConsumerGroups, p.Streams, p.Partitions = 0, 8, 1
	case BalancedProducer:
		p.Consumers, p.ConsumerGroups, p.Streams, p.Partitions = 0, 0, 1, 24
	case BalancedConsumerGroup:
		p.Producers, p.Streams, p.Partitions = 0, 1, 24
	case BalancedProducerAndConsumerGroup:
		p.Streams, p.Partitions = 1, 24
	}
	return p
}

// FollowActors sets the stream count of pinned kinds to the actor count,
// as Iggy does when --streams is not given.
func (p *Params) FollowActors() {
	if p.Kind.pinned() {
		p.Streams = max(p.Producers, p.Consumers, 1)
	}
}

// Limits on parameters; they keep a typo from asking for a million
// connections.
const (
	MaxActors  = 1024
	MaxStreams = 10_000
	// MaxPartitions per topic; beyond wire.MaxPartitionsPerRequest the
	// topic is grown with CREATE_PARTITIONS (see createTopic).
	MaxPartitions = 100_000
	MaxMessage    = 10 << 20 // payload bytes
	MaxBatch      = 100_000  // messages per batch
	maxBatchBytes = 60 << 20 // stays under the 64 MiB frame
)

// Validate reports the first inconsistent parameter.
func (p *Params) Validate() error {
	k := p.Kind
	if _, err := ParseKind(string(k)); err != nil {
		return err
	}
	switch {
	case p.MessageSize.Min == 0 || p.MessageSize.Max > MaxMessage:
		return fmt.Errorf("message size must be 1..%d bytes", MaxMessage)
	case p.MessagesPerBatch.Min == 0 || p.MessagesPerBatch.Max > MaxBatch:
		return fmt.Errorf("messages per batch must be 1..%d", MaxBatch)
	case uint64(p.MessageSize.Max)*uint64(p.MessagesPerBatch.Max) > maxBatchBytes:
		return fmt.Errorf("a batch of %d messages of %d bytes exceeds %d bytes; lower --message-size or --messages-per-batch", p.MessagesPerBatch.Max, p.MessageSize.Max, maxBatchBytes)
	case p.MessageBatches == 0 && p.TotalData == 0:
		return fmt.Errorf("give --message-batches or --total-data")
	case p.MessageBatches != 0 && p.TotalData != 0:
		return fmt.Errorf("give either --message-batches or --total-data, not both")
	case p.SamplingTime <= 0:
		return fmt.Errorf("--sampling-time must be positive")
	case p.WarmupTime < 0:
		return fmt.Errorf("--warmup-time must not be negative")
	case p.MovingAverageWindow < 1:
		return fmt.Errorf("--moving-average-window must be at least 1")
	case p.IdleTimeout <= 0:
		return fmt.Errorf("--idle-timeout must be positive")
	case p.PollWait < 0 || p.PollWait > 0 && (p.PollWait < time.Millisecond || p.PollWait >= p.IdleTimeout):
		return fmt.Errorf("--poll-wait must be 0 or between 1ms and --idle-timeout (%s)", p.IdleTimeout)
	case p.Streams < 1 || p.Streams > MaxStreams:
		return fmt.Errorf("--streams must be 1..%d", MaxStreams)
	case p.Partitions < 1 || p.Partitions > MaxPartitions:
		return fmt.Errorf("--partitions must be 1..%d", MaxPartitions)
	case p.ReadAmplification < 1:
		return fmt.Errorf("--read-amplification must be at least 1")
	case p.Server.Address == "":
		return fmt.Errorf("no server address")
	}
	for _, d := range []struct{ name, v string }{{"--durability", p.Durability}, {"--consumer-offset-durability", p.ConsumerOffsetDurability}} {
		if d.v != "" && d.v != "replicated" && d.v != "persisted" {
			return fmt.Errorf("%s must be replicated or persisted", d.name)
		}
	}
	if k.hasProducers() && (p.Producers < 1 || p.Producers > MaxActors) {
		return fmt.Errorf("--producers must be 1..%d for %s", MaxActors, k)
	}
	if !k.hasProducers() && p.Producers != 0 {
		return fmt.Errorf("%s has no producers", k)
	}
	if k.hasConsumers() && (p.Consumers < 1 || p.Consumers > MaxActors) {
		return fmt.Errorf("--consumers must be 1..%d for %s", MaxActors, k)
	}
	if !k.hasConsumers() && p.Consumers != 0 {
		return fmt.Errorf("%s has no separate consumers", k)
	}
	if k.pinned() && p.Partitions != 1 {
		return fmt.Errorf("%s uses one partition per stream", k)
	}
	switch k {
	case PinnedProducer, EndToEndProducingConsumer:
		if p.Streams < p.Producers {
			return fmt.Errorf("%s needs a stream per producer: --streams %d < --producers %d", k, p.Streams, p.Producers)
		}
	case PinnedConsumer:
		if p.Streams < p.Consumers {
			return fmt.Errorf("%s needs a stream per consumer: --streams %d < --consumers %d", k, p.Streams, p.Consumers)
		}
	case PinnedProducerAndConsumer:
		if p.Streams < p.Producers || p.Consumers != p.Producers {
			return fmt.Errorf("%s pairs each producer with a consumer on its own stream: want --producers = --consumers <= --streams", k)
		}
	}
	if k.groups() {
		if p.ConsumerGroups < 1 || p.ConsumerGroups > p.Streams {
			return fmt.Errorf("--consumer-groups must be 1..--streams (%d): each group reads one stream", p.Streams)
		}
		if p.Consumers < p.ConsumerGroups {
			return fmt.Errorf("--consumers (%d) must be at least --consumer-groups (%d)", p.Consumers, p.ConsumerGroups)
		}
	} else if p.ConsumerGroups != 0 {
		return fmt.Errorf("%s uses no consumer groups", k)
	}
	if p.TotalData != 0 && p.TotalData < uint64(p.MessageSize.Max)*uint64(max(p.Producers, p.Consumers, 1)) {
		return fmt.Errorf("--total-data %d is smaller than one message per actor", p.TotalData)
	}
	return nil
}

// producingActors is how many actors send.
func (p *Params) producingActors() int {
	if p.Kind == PinnedConsumer || p.Kind == BalancedConsumerGroup {
		return p.Consumers // the seeding phase sends on their behalf
	}
	return p.Producers
}

// perActorRate is each actor's share of the aggregate rate limit.
func (p *Params) perActorRate() float64 {
	if p.RateLimit == 0 {
		return 0
	}
	actors := p.Producers + p.Consumers
	return float64(p.RateLimit) / float64(max(actors, 1))
}

// StreamName is the name of stream i (1-based).
func StreamName(i int) string { return "bench-stream-" + strconv.Itoa(i) }

// TopicName is the topic in every benchmark stream.
const TopicName = "topic-1"

// GroupName is the consumer group of group kinds in stream i.
func GroupName(i int) string { return "bench-cg-" + strconv.Itoa(i) }

// TransportName names the transport in reports: tcp, tcp-tls, ws, wss or
// quic.
func (s Server) TransportName() string {
	t := s.Transport
	if t == "" {
		t = "tcp"
	}
	if s.TLS != nil {
		switch t {
		case "tcp":
			return "tcp-tls"
		case "ws":
			return "wss"
		}
	}
	return t
}
