package wire

import "unicode/utf8"

// Ping is code 1, empty body; the reply is empty. It is the only command a
// server accepts before login.
type Ping struct{}

// Code implements Request.
func (*Ping) Code() CommandCode { return CmdPing }

// AppendBody implements Request.
func (*Ping) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*Ping) DecodeBody(b []byte) error { return emptyBody("ping request", b) }

// GetStats is code 10, empty body. Reply: Stats.
//
// Iggy's body is empty. iggo's stats extension is a 1-byte body, the tag
// StatsExtTag (0x53, 'S'): the reply then carries, after Iggy's last field
// (total_disk_space), an iggo trailer of StatsExtSize bytes:
//
//	off  size  field
//	  0     8  messages_original_size_bytes u64: the messages' size
//	           before compression at rest (messages_size_bytes is what
//	           the segments hold)
//
// Iggy's SDKs send an empty body and get Iggy's reply unchanged; any other
// body is refused.
type GetStats struct {
	// Extended asks for iggo's trailer.
	Extended bool
}

// Stats extension of GET_STATS.
const (
	StatsExtTag  uint8 = 'S'
	StatsExtSize       = 8
)

// Code implements Request.
func (*GetStats) Code() CommandCode { return CmdGetStats }

// AppendBody implements Request.
func (r *GetStats) AppendBody(dst []byte) ([]byte, error) {
	if r.Extended {
		return append(dst, StatsExtTag), nil
	}
	return dst, nil
}

// DecodeBody implements Request.
func (r *GetStats) DecodeBody(b []byte) error {
	if len(b) == 1 && b[0] == StatsExtTag {
		r.Extended = true
		return nil
	}
	r.Extended = false
	return emptyBody("get_stats request", b)
}

// Snapshot compression codes and content types.
const (
	SnapshotStored   uint8 = 1
	SnapshotDeflated uint8 = 2
	SnapshotBzip2    uint8 = 3
	SnapshotZstd     uint8 = 4
	SnapshotLzma     uint8 = 5
	SnapshotXz       uint8 = 6

	SnapshotFilesystemOverview uint8 = 1
	SnapshotProcessList        uint8 = 2
	SnapshotResourceUsage      uint8 = 3
	SnapshotTest               uint8 = 4
	SnapshotServerLogs         uint8 = 5
	SnapshotServerConfig       uint8 = 6
	SnapshotAll                uint8 = 100
)

// GetSnapshotFile is code 11: [compression u8][types_count u8][type u8 x count].
// The reply is a ZIP archive, unframed (SnapshotFile).
type GetSnapshotFile struct {
	Compression uint8
	Types       []uint8
}

// Code implements Request.
func (*GetSnapshotFile) Code() CommandCode { return CmdGetSnapshotFile }

// AppendBody implements Request.
func (r *GetSnapshotFile) AppendBody(dst []byte) ([]byte, error) {
	if len(r.Types) > 255 {
		return dst, fieldErr("get_snapshot request", "types", -1, "at most 255 types, got %d", len(r.Types))
	}
	dst = append(dst, r.Compression, uint8(len(r.Types)))
	return append(dst, r.Types...), nil
}

// DecodeBody implements Request.
func (r *GetSnapshotFile) DecodeBody(b []byte) error {
	d := newDecoder("get_snapshot request", b)
	r.Compression = d.u8("compression")
	n := int(d.u8("types_count"))
	types := d.raw("types", n)
	r.Types = nil
	if d.err == nil && n > 0 {
		r.Types = append([]uint8(nil), types...)
	}
	return d.done()
}

// SnapshotFile is the raw ZIP archive of a snapshot reply.
type SnapshotFile []byte

// AppendTo appends the archive.
func (s SnapshotFile) AppendTo(dst []byte) ([]byte, error) { return append(dst, s...), nil }

// GetClusterMetadata is code 12, empty body. Reply: ClusterMetadata.
type GetClusterMetadata struct{}

// Code implements Request.
func (*GetClusterMetadata) Code() CommandCode { return CmdGetClusterMetadata }

// AppendBody implements Request.
func (*GetClusterMetadata) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetClusterMetadata) DecodeBody(b []byte) error {
	return emptyBody("get_cluster_metadata request", b)
}

// DescribeOptions is code 13: [scope u8] (1 topic, 2 stream, 3 user).
// Reply: OptionDescriptors.
type DescribeOptions struct{ Scope OptionsScope }

// Code implements Request.
func (*DescribeOptions) Code() CommandCode { return CmdDescribeOptions }

// AppendBody implements Request.
func (r *DescribeOptions) AppendBody(dst []byte) ([]byte, error) {
	if r.Scope < ScopeTopic || r.Scope > ScopeUser {
		return dst, fieldErr("describe_options request", "scope", -1, "must be 1, 2 or 3, got %d", r.Scope)
	}
	return append(dst, uint8(r.Scope)), nil
}

// DecodeBody implements Request.
func (r *DescribeOptions) DecodeBody(b []byte) error {
	d := newDecoder("describe_options request", b)
	r.Scope = OptionsScope(d.u8("scope"))
	if d.err == nil && (r.Scope < ScopeTopic || r.Scope > ScopeUser) {
		d.off--
		d.fail("scope", "must be 1 (topic), 2 (stream) or 3 (user), got %d", r.Scope)
	}
	return d.done()
}

// OptionDescriptors is the DESCRIBE_OPTIONS reply: [count u32] then per entry
// [key Name][kind u8][default u32-len][description u32-len].
type OptionDescriptors []OptionDescriptor

// AppendTo encodes the reply.
func (l OptionDescriptors) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "option descriptors"}
	e.u32(uint32(len(l)))
	for _, o := range l {
		e.name("key", o.Key)
		e.u8(uint8(o.Kind))
		e.longBytes(o.Default)
		e.longString(o.Description)
	}
	return e.result()
}

// DecodeOptionDescriptors decodes the reply.
func DecodeOptionDescriptors(b []byte) (OptionDescriptors, error) {
	d := newDecoder("option descriptors", b)
	n := d.u32("count")
	out := make(OptionDescriptors, 0, boundedCap(uint64(n), d.remaining(), 11))
	for i := uint32(0); d.err == nil && i < n; i++ {
		o := OptionDescriptor{Key: d.name("key"), Kind: HeaderKind(d.u8("kind"))}
		o.Default = d.longBytes("default")
		o.Description = d.longString("description")
		if d.err == nil {
			out = append(out, o)
		}
	}
	return out, d.done()
}

// GetMe is code 20, empty body. Reply: ClientDetails of the caller.
type GetMe struct{}

// Code implements Request.
func (*GetMe) Code() CommandCode { return CmdGetMe }

// AppendBody implements Request.
func (*GetMe) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetMe) DecodeBody(b []byte) error { return emptyBody("get_me request", b) }

// GetClient is code 21: [client_id u32]. Reply: ClientDetails, or an empty
// body when unknown.
type GetClient struct{ ClientID uint32 }

// Code implements Request.
func (*GetClient) Code() CommandCode { return CmdGetClient }

// AppendBody implements Request.
func (r *GetClient) AppendBody(dst []byte) ([]byte, error) { return appendU32(dst, r.ClientID), nil }

// DecodeBody implements Request.
func (r *GetClient) DecodeBody(b []byte) error {
	d := newDecoder("get_client request", b)
	r.ClientID = d.u32("client_id")
	return d.done()
}

// GetClients is code 22, empty body. Reply: ClientInfos.
type GetClients struct{}

// Code implements Request.
func (*GetClients) Code() CommandCode { return CmdGetClients }

// AppendBody implements Request.
func (*GetClients) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetClients) DecodeBody(b []byte) error { return emptyBody("get_clients request", b) }

// Client transports.
const (
	TransportTCP       uint8 = 1
	TransportQUIC      uint8 = 2
	TransportHTTP      uint8 = 3
	TransportWebSocket uint8 = 4
)

// ClientInfo is the client record:
// [client_id u32][user_id u32][transport u8][address u32-len][consumer_groups_count u32].
type ClientInfo struct {
	ClientID            uint32
	UserID              uint32
	Transport           uint8
	Address             string
	ConsumerGroupsCount uint32
}

func (c *ClientInfo) appendTo(e *encoder) {
	e.u32(c.ClientID)
	e.u32(c.UserID)
	e.u8(c.Transport)
	e.longString(c.Address)
	e.u32(c.ConsumerGroupsCount)
}

func decodeClientInfo(d *decoder) ClientInfo {
	return ClientInfo{d.u32("client_id"), d.u32("user_id"), d.u8("transport"), d.longString("address"), d.u32("consumer_groups_count")}
}

// ClientInfos is the GET_CLIENTS reply: records back to back (without their
// group entries).
type ClientInfos []ClientInfo

// AppendTo encodes the list.
func (l ClientInfos) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "clients"}
	for i := range l {
		l[i].appendTo(&e)
	}
	return e.result()
}

// DecodeClientInfos decodes the list.
func DecodeClientInfos(b []byte) (ClientInfos, error) {
	d := newDecoder("clients", b)
	var out ClientInfos
	for d.err == nil && d.remaining() > 0 {
		c := decodeClientInfo(&d)
		if d.err == nil {
			out = append(out, c)
		}
	}
	return out, d.done()
}

// ClientGroup is one [stream_id u32][topic_id u32][group_id u32] membership.
type ClientGroup struct {
	StreamID, TopicID, GroupID uint32
}

// ClientDetails is the GET_CLIENT / GET_ME reply: the client record then
// consumer_groups_count memberships.
type ClientDetails struct {
	ClientInfo
	Groups []ClientGroup
}

// AppendTo encodes the payload; ConsumerGroupsCount must equal len(Groups).
func (c *ClientDetails) AppendTo(dst []byte) ([]byte, error) {
	if int(c.ConsumerGroupsCount) != len(c.Groups) {
		return dst, fieldErr("client details", "consumer_groups_count", -1, "%d does not match %d groups", c.ConsumerGroupsCount, len(c.Groups))
	}
	e := encoder{b: dst, what: "client details"}
	c.ClientInfo.appendTo(&e)
	for _, g := range c.Groups {
		e.u32(g.StreamID)
		e.u32(g.TopicID)
		e.u32(g.GroupID)
	}
	return e.result()
}

// DecodeClientDetails decodes a non-empty payload.
func DecodeClientDetails(b []byte) (ClientDetails, error) {
	d := newDecoder("client details", b)
	c := ClientDetails{ClientInfo: decodeClientInfo(&d)}
	if d.err == nil && uint64(c.ConsumerGroupsCount)*12 != uint64(d.remaining()) {
		return ClientDetails{}, fieldErr(d.what, "consumer_groups_count", d.off-4, "%d groups do not fill the %d remaining bytes", c.ConsumerGroupsCount, d.remaining())
	}
	if d.err == nil && c.ConsumerGroupsCount > 0 {
		c.Groups = make([]ClientGroup, c.ConsumerGroupsCount)
		for i := range c.Groups {
			c.Groups[i] = ClientGroup{d.u32("stream_id"), d.u32("topic_id"), d.u32("group_id")}
		}
	}
	return c, d.done()
}

// Stats is the GET_STATS reply: a 104-byte numeric head, five u32-length
// strings, the packed server semver, a counted list of 32-byte cache metrics,
// then threads_count u32, free_disk_space u64, total_disk_space u64.
type Stats struct {
	ProcessID                                            uint32
	CPUUsage, TotalCPUUsage                              float32
	MemoryUsage, TotalMemory, AvailableMemory            uint64
	RunTime, StartTime                                   uint64
	ReadBytes, WrittenBytes, MessagesSizeBytes           uint64
	StreamsCount, TopicsCount, PartitionsCount, Segments uint32
	MessagesCount                                        uint64
	ClientsCount, ConsumerGroupsCount                    uint32
	Hostname, OSName, OSVersion, KernelVersion, Version  string
	Semver                                               uint32
	CacheMetrics                                         []CacheMetric
	ThreadsCount                                         uint32
	FreeDiskSpace, TotalDiskSpace                        uint64
	// Extended: the reply carries iggo's trailer (GetStats.Extended).
	Extended                  bool
	MessagesOriginalSizeBytes uint64
}

// CacheMetric is one 32-byte cache entry of Stats.
type CacheMetric struct {
	StreamID, TopicID, PartitionID uint32
	Hits, Misses                   uint64
	HitRatio                       float32
}

// AppendTo encodes the reply.
func (s *Stats) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "stats"}
	e.u32(s.ProcessID)
	e.f32(s.CPUUsage)
	e.f32(s.TotalCPUUsage)
	for _, v := range []uint64{s.MemoryUsage, s.TotalMemory, s.AvailableMemory, s.RunTime, s.StartTime, s.ReadBytes, s.WrittenBytes, s.MessagesSizeBytes} {
		e.u64(v)
	}
	for _, v := range []uint32{s.StreamsCount, s.TopicsCount, s.PartitionsCount, s.Segments} {
		e.u32(v)
	}
	e.u64(s.MessagesCount)
	e.u32(s.ClientsCount)
	e.u32(s.ConsumerGroupsCount)
	for _, v := range []string{s.Hostname, s.OSName, s.OSVersion, s.KernelVersion, s.Version} {
		if e.err == nil && !utf8.ValidString(v) {
			e.err = fieldErr(e.what, "string", -1, "not valid UTF-8")
		}
		e.longString(v)
	}
	e.u32(s.Semver)
	e.u32(uint32(len(s.CacheMetrics)))
	for _, c := range s.CacheMetrics {
		e.u32(c.StreamID)
		e.u32(c.TopicID)
		e.u32(c.PartitionID)
		e.u64(c.Hits)
		e.u64(c.Misses)
		e.f32(c.HitRatio)
	}
	e.u32(s.ThreadsCount)
	e.u64(s.FreeDiskSpace)
	e.u64(s.TotalDiskSpace)
	if s.Extended {
		e.u64(s.MessagesOriginalSizeBytes)
	}
	return e.result()
}

// DecodeStats decodes the reply.
func DecodeStats(b []byte) (Stats, error) {
	d := newDecoder("stats", b)
	var s Stats
	s.ProcessID = d.u32("process_id")
	s.CPUUsage = d.f32("cpu_usage")
	s.TotalCPUUsage = d.f32("total_cpu_usage")
	for _, p := range []*uint64{&s.MemoryUsage, &s.TotalMemory, &s.AvailableMemory, &s.RunTime, &s.StartTime, &s.ReadBytes, &s.WrittenBytes, &s.MessagesSizeBytes} {
		*p = d.u64("counters")
	}
	for _, p := range []*uint32{&s.StreamsCount, &s.TopicsCount, &s.PartitionsCount, &s.Segments} {
		*p = d.u32("counts")
	}
	s.MessagesCount = d.u64("messages_count")
	s.ClientsCount = d.u32("clients_count")
	s.ConsumerGroupsCount = d.u32("consumer_groups_count")
	s.Hostname = d.longString("hostname")
	s.OSName = d.longString("os_name")
	s.OSVersion = d.longString("os_version")
	s.KernelVersion = d.longString("kernel_version")
	s.Version = d.longString("iggy_server_version")
	s.Semver = d.u32("iggy_server_semver")
	n := d.u32("cache_metrics_count")
	if d.err == nil && uint64(n)*32 > uint64(d.remaining()) {
		d.off -= 4
		d.fail("cache_metrics_count", "%d entries overrun the %d remaining bytes", n, d.remaining()-4)
	}
	if d.err == nil && n > 0 {
		s.CacheMetrics = make([]CacheMetric, n)
		for i := range s.CacheMetrics {
			s.CacheMetrics[i] = CacheMetric{d.u32("stream_id"), d.u32("topic_id"), d.u32("partition_id"), d.u64("hits"), d.u64("misses"), d.f32("hit_ratio")}
		}
	}
	s.ThreadsCount = d.u32("threads_count")
	s.FreeDiskSpace = d.u64("free_disk_space")
	s.TotalDiskSpace = d.u64("total_disk_space")
	if d.err == nil && d.remaining() == StatsExtSize {
		s.Extended = true
		s.MessagesOriginalSizeBytes = d.u64("messages_original_size_bytes")
	}
	return s, d.done()
}

// Cluster node roles and statuses.
const (
	RoleLeader   uint8 = 0
	RoleFollower uint8 = 1

	NodeHealthy     uint8 = 0
	NodeStarting    uint8 = 1
	NodeStopping    uint8 = 2
	NodeUnreachable uint8 = 3
	NodeMaintenance uint8 = 4
)

// MaxClusterNodes is the most nodes a roster may list (Go SDK bound).
const MaxClusterNodes = 64

// ClusterNode is one roster entry:
// [name u32-len][ip u32-len][tcp u16][quic u16][http u16][websocket u16][role u8][status u8].
type ClusterNode struct {
	Name                                string
	IP                                  string
	TCPPort, QUICPort, HTTPPort, WSPort uint16
	Role                                uint8
	Status                              uint8
}

// ClusterMetadata is the GET_CLUSTER_METADATA reply:
// [cluster name u32-len][nodes_count u32][nodes].
type ClusterMetadata struct {
	Name  string
	Nodes []ClusterNode
}

// AppendTo encodes the reply. It refuses what the Go SDK would refuse:
// more than 64 nodes, a role other than 0/1, a status above 4.
func (m *ClusterMetadata) AppendTo(dst []byte) ([]byte, error) {
	const what = "cluster metadata"
	if len(m.Nodes) > MaxClusterNodes {
		return dst, fieldErr(what, "nodes", -1, "%d nodes exceed %d", len(m.Nodes), MaxClusterNodes)
	}
	e := encoder{b: dst, what: what}
	e.longString(m.Name)
	e.u32(uint32(len(m.Nodes)))
	for _, n := range m.Nodes {
		if n.Role > RoleFollower || n.Status > NodeMaintenance {
			return dst, fieldErr(what, "node", -1, "node %q has role %d status %d", n.Name, n.Role, n.Status)
		}
		e.longString(n.Name)
		e.longString(n.IP)
		e.u16(n.TCPPort)
		e.u16(n.QUICPort)
		e.u16(n.HTTPPort)
		e.u16(n.WSPort)
		e.u8(n.Role)
		e.u8(n.Status)
	}
	return e.result()
}

// DecodeClusterMetadata decodes the reply.
func DecodeClusterMetadata(b []byte) (ClusterMetadata, error) {
	d := newDecoder("cluster metadata", b)
	m := ClusterMetadata{Name: d.longString("name")}
	n := d.u32("nodes_count")
	if d.err == nil && n > MaxClusterNodes {
		d.off -= 4
		d.fail("nodes_count", "%d nodes exceed %d", n, MaxClusterNodes)
	}
	if d.err == nil && n > 0 {
		m.Nodes = make([]ClusterNode, 0, boundedCap(uint64(n), d.remaining(), 18))
	}
	for i := uint32(0); d.err == nil && i < n; i++ {
		node := ClusterNode{Name: d.longString("node name"), IP: d.longString("node ip")}
		node.TCPPort, node.QUICPort, node.HTTPPort, node.WSPort = d.u16("tcp port"), d.u16("quic port"), d.u16("http port"), d.u16("websocket port")
		node.Role = d.u8("role")
		if d.err == nil && node.Role > RoleFollower {
			d.off--
			d.fail("role", "must be 0 (leader) or 1 (follower), got %d", node.Role)
		}
		node.Status = d.u8("status")
		if d.err == nil && node.Status > NodeMaintenance {
			d.off--
			d.fail("status", "must be 0..4, got %d", node.Status)
		}
		if d.err == nil {
			m.Nodes = append(m.Nodes, node)
		}
	}
	return m, d.done()
}
