package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Source fills a Snapshot of the node's published state when a scrape
// asks. It must not block on a shard loop: everything it reads is already
// published (metadata view, atomics, role board, runtime statistics).
type Source interface {
	MetricsSnapshot(s *Snapshot)
}

// Snapshot is what the state collector exports.
type Snapshot struct {
	// Iggy's gauges.
	Streams, Topics, Partitions, Segments, Users, Clients uint64
	Messages                                              uint64
	ConsumerGroups                                        uint64
	// ClientsByTransport counts connected clients (index: wire.Transport*).
	ClientsByTransport [maxTransport]uint64
	HTTPSessions       uint64

	Shards     []ShardStat
	TopicStats []TopicStat
	Groups     []GroupStat
	Members    []MemberStat
	Pools      []PoolStat
	Files      []FileStat

	// Ready and Live are the health endpoints' answers (1 or 0).
	Ready, Live bool
}

// ShardStat is one shard loop's inbox and iteration figures.
type ShardStat struct {
	Shard            int
	Queued           int
	Processed        uint64
	Refused, Stopped uint64
	Iterations       uint64
	MaxBatch         uint64
}

// TopicStat sums a topic's partitions on this node.
type TopicStat struct {
	Stream, Topic uint32
	// Appended counts messages and bytes appended since the node started
	// (replays of the journal at boot excluded); Stored is what the
	// partitions hold now.
	AppendedMessages, AppendedBytes uint64
	StoredMessages, StoredBytes     uint64
	// Polled counts messages and record bytes polls read since the node
	// started.
	PolledMessages, PolledBytes uint64
}

// GroupStat is one consensus group's published role on this node.
type GroupStat struct {
	Kind    GroupKind
	View    uint32
	Status  string
	Primary bool
	// CommitLag is the committed ops this replica has not applied yet.
	CommitLag uint64
}

// MemberStat is one gossip member as this node sees it.
type MemberStat struct {
	Name  string
	State string // alive, suspect, dead, left, unknown
}

// PoolStat is one shard's stamp-buffer pool.
type PoolStat struct {
	Shard                int
	IdleBytes, IdleCount int64
	Hits, Misses         uint64
}

// FileStat is one shard's storage descriptors (vfs.Bounded).
type FileStat struct {
	Shard     int
	Open, Max int
	// Reopens counts files reopened on use after Closes closed them
	// underneath to make room.
	Reopens, Closes uint64
}

var vsrStatuses = []string{"normal", "view_change", "recovering", "recovering_head"}
var memberStates = []string{"alive", "suspect", "dead", "left"}

type stateCollector struct {
	src   Source
	descs map[string]*prometheus.Desc
}

func newStateCollector(src Source) *stateCollector {
	c := &stateCollector{src: src, descs: map[string]*prometheus.Desc{}}
	d := func(name, help string, labels ...string) {
		c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
	}
	d("streams", "total count of streams")
	d("topics", "total count of topics")
	d("partitions", "total count of partitions")
	d("segments", "total count of segments")
	d("messages", "total count of messages")
	d("users", "total count of users")
	d("clients", "total count of clients")
	d("iggo_consumer_groups", "Consumer groups in the metadata.")
	d("iggo_connections", "Connected clients by transport (HTTP: live API sessions).", "transport")
	d("iggo_shard_inbox_depth", "Tasks queued in a shard's inbox.", "shard")
	d("iggo_shard_inbox_refused_total", "Sends refused because a shard inbox was full (answered 58) or the shard stopped.", "shard", "reason")
	d("iggo_shard_tasks_processed_total", "Tasks a shard loop finished.", "shard")
	d("iggo_shard_iterations_total", "Shard loop passes.", "shard")
	d("iggo_shard_max_batch", "Largest number of tasks one shard iteration carried.", "shard")
	d("iggo_messages_appended_total", "Messages appended to the topic's partitions on this node since it started.", "stream", "topic")
	d("iggo_bytes_appended_total", "Batch bytes appended to the topic's partitions on this node since it started.", "stream", "topic")
	d("iggo_messages_polled_total", "Messages polls read from the topic's partitions on this node since it started.", "stream", "topic")
	d("iggo_bytes_polled_total", "Record bytes polls read from the topic's partitions on this node since it started.", "stream", "topic")
	d("iggo_topic_messages", "Messages the topic's partitions hold on this node.", "stream", "topic")
	d("iggo_topic_bytes", "Bytes the topic's partitions hold on this node.", "stream", "topic")
	d("iggo_vsr_groups", "Consensus groups on this node by kind and replica status.", "kind", "status")
	d("iggo_vsr_primaries", "Consensus groups this node leads (primary in normal status).", "kind")
	d("iggo_vsr_view", "Highest view among the node's groups of a kind.", "kind")
	d("iggo_vsr_commit_lag", "Largest number of committed ops a replica of the kind has not applied.", "kind")
	d("iggo_gossip_members", "Gossip members by state as this node sees them.", "state")
	d("iggo_gossip_member_up", "1 while gossip counts the member alive or suspect.", "member", "state")
	d("iggo_memory_pool_idle_bytes", "Idle bytes in a shard's stamp-buffer pool.", "shard")
	d("iggo_storage_files_open", "Descriptors a shard's storage files hold now.", "shard")
	d("iggo_storage_files_max", "Descriptors a shard's storage files may hold (partition.open_files_max split between the shards).", "shard")
	d("iggo_storage_file_closes_total", "Storage files a shard closed while idle to make room for another.", "shard")
	d("iggo_storage_file_reopens_total", "Storage files a shard reopened on use after closing them to make room.", "shard")
	d("iggo_memory_pool_idle_buffers", "Idle buffers in a shard's stamp-buffer pool.", "shard")
	d("iggo_memory_pool_gets_total", "Buffers taken from a shard's pool (result: hit reused one, miss allocated).", "shard", "result")
	d("iggo_ready", "1 while /readyz answers 200.")
	d("iggo_live", "1 while /livez answers 200.")
	return c
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	var s Snapshot
	c.src.MetricsSnapshot(&s)
	g := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	ctr := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, v, labels...)
	}
	g("streams", float64(s.Streams))
	g("topics", float64(s.Topics))
	g("partitions", float64(s.Partitions))
	g("segments", float64(s.Segments))
	g("messages", float64(s.Messages))
	g("users", float64(s.Users))
	g("clients", float64(s.Clients))
	g("iggo_consumer_groups", float64(s.ConsumerGroups))
	for t := 1; t < maxTransport; t++ {
		name := TransportName(uint8(t))
		if name == "other" {
			continue
		}
		v := s.ClientsByTransport[t]
		if name == "http" {
			v = s.HTTPSessions
		}
		g("iggo_connections", float64(v), name)
	}
	for _, sh := range s.Shards {
		id := strconv.Itoa(sh.Shard)
		g("iggo_shard_inbox_depth", float64(sh.Queued), id)
		ctr("iggo_shard_inbox_refused_total", float64(sh.Refused), id, "full")
		ctr("iggo_shard_inbox_refused_total", float64(sh.Stopped), id, "stopped")
		ctr("iggo_shard_tasks_processed_total", float64(sh.Processed), id)
		ctr("iggo_shard_iterations_total", float64(sh.Iterations), id)
		g("iggo_shard_max_batch", float64(sh.MaxBatch), id)
	}
	for _, t := range s.TopicStats {
		st, tp := itoa(t.Stream), itoa(t.Topic)
		ctr("iggo_messages_appended_total", float64(t.AppendedMessages), st, tp)
		ctr("iggo_bytes_appended_total", float64(t.AppendedBytes), st, tp)
		ctr("iggo_messages_polled_total", float64(t.PolledMessages), st, tp)
		ctr("iggo_bytes_polled_total", float64(t.PolledBytes), st, tp)
		g("iggo_topic_messages", float64(t.StoredMessages), st, tp)
		g("iggo_topic_bytes", float64(t.StoredBytes), st, tp)
	}
	for k := range groupKinds {
		counts := map[string]int{}
		primaries, lag := 0, uint64(0)
		view := uint32(0)
		seen := false
		for _, gr := range s.Groups {
			if gr.Kind != k {
				continue
			}
			seen = true
			counts[gr.Status]++
			if gr.Primary {
				primaries++
			}
			lag = max(lag, gr.CommitLag)
			view = max(view, gr.View)
		}
		kind := groupKindNames[k]
		for _, st := range vsrStatuses {
			g("iggo_vsr_groups", float64(counts[st]), kind, st)
		}
		g("iggo_vsr_primaries", float64(primaries), kind)
		if seen {
			g("iggo_vsr_view", float64(view), kind)
			g("iggo_vsr_commit_lag", float64(lag), kind)
		}
	}
	if len(s.Members) > 0 {
		counts := map[string]int{}
		for _, mb := range s.Members {
			counts[mb.State]++
			g("iggo_gossip_member_up", b2f(mb.State == "alive" || mb.State == "suspect"), mb.Name, mb.State)
		}
		for _, st := range memberStates {
			g("iggo_gossip_members", float64(counts[st]), st)
		}
	}
	for _, p := range s.Pools {
		id := strconv.Itoa(p.Shard)
		g("iggo_memory_pool_idle_bytes", float64(p.IdleBytes), id)
		g("iggo_memory_pool_idle_buffers", float64(p.IdleCount), id)
		ctr("iggo_memory_pool_gets_total", float64(p.Hits), id, "hit")
		ctr("iggo_memory_pool_gets_total", float64(p.Misses), id, "miss")
	}
	for _, f := range s.Files {
		id := strconv.Itoa(f.Shard)
		g("iggo_storage_files_open", float64(f.Open), id)
		g("iggo_storage_files_max", float64(f.Max), id)
		ctr("iggo_storage_file_closes_total", float64(f.Closes), id)
		ctr("iggo_storage_file_reopens_total", float64(f.Reopens), id)
	}
	g("iggo_ready", b2f(s.Ready))
	g("iggo_live", b2f(s.Live))
}
