package httpapi

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/big"
	"sort"
	"strconv"

	"github.com/iggo/iggo/wire"
)

// Iggy 0.9's JSON shapes (serde renderings of iggy_common's types), built
// from the binary replies the serving path produced.

// byteSize renders a byte count as Iggy's IggyByteSize does: the count in
// the largest unit (binary or decimal) that divides it exactly, "0 B" for
// nothing.
type byteSize uint64

var sizeUnits = []struct {
	name string
	n    uint64
}{
	{"EiB", 1 << 60}, {"EB", 1e18}, {"PiB", 1 << 50}, {"PB", 1e15}, {"TiB", 1 << 40}, {"TB", 1e12},
	{"GiB", 1 << 30}, {"GB", 1e9}, {"MiB", 1 << 20}, {"MB", 1e6}, {"KiB", 1 << 10}, {"KB", 1e3},
}

func (b byteSize) String() string {
	v := uint64(b)
	if v == 0 {
		return "0 B"
	}
	for _, u := range sizeUnits {
		if v%u.n == 0 {
			return strconv.FormatUint(v/u.n, 10) + " " + u.name
		}
	}
	return strconv.FormatUint(v, 10) + " B"
}

func (b byteSize) MarshalJSON() ([]byte, error) { return strconv.AppendQuote(nil, b.String()), nil }

// u128 is a u128 rendered as a JSON number (serde_json writes u128 as an
// integer).
type u128 wire.Uint128

func (u u128) MarshalJSON() ([]byte, error) {
	if u.Hi == 0 {
		return strconv.AppendUint(nil, u.Lo, 10), nil
	}
	v := new(big.Int).SetUint64(u.Hi)
	v.Lsh(v, 64)
	v.Or(v, new(big.Int).SetUint64(u.Lo))
	return []byte(v.String()), nil
}

// optionJSON is one entry of a resource's options: the value as text and
// whether the client set it.
type optionJSON struct {
	Value    string `json:"value"`
	Explicit bool   `json:"explicit"`
}

// headerText is Iggy's to_string_value of a TLV field.
func headerText(v wire.HeaderValue) string {
	b := v.Value
	le := binary.LittleEndian
	switch v.Kind {
	case wire.KindString:
		return string(b)
	case wire.KindBool:
		if len(b) == 1 {
			return strconv.FormatBool(b[0] != 0)
		}
	case wire.KindInt8:
		if len(b) == 1 {
			return strconv.Itoa(int(int8(b[0])))
		}
	case wire.KindInt16:
		if len(b) == 2 {
			return strconv.Itoa(int(int16(le.Uint16(b))))
		}
	case wire.KindInt32:
		if len(b) == 4 {
			return strconv.Itoa(int(int32(le.Uint32(b))))
		}
	case wire.KindInt64:
		if len(b) == 8 {
			return strconv.FormatInt(int64(le.Uint64(b)), 10)
		}
	case wire.KindUint8:
		if len(b) == 1 {
			return strconv.Itoa(int(b[0]))
		}
	case wire.KindUint16:
		if len(b) == 2 {
			return strconv.Itoa(int(le.Uint16(b)))
		}
	case wire.KindUint32:
		if len(b) == 4 {
			return strconv.FormatUint(uint64(le.Uint32(b)), 10)
		}
	case wire.KindUint64:
		if len(b) == 8 {
			return strconv.FormatUint(le.Uint64(b), 10)
		}
	case wire.KindUint128:
		if len(b) == 16 {
			s, _ := u128{Lo: le.Uint64(b), Hi: le.Uint64(b[8:])}.MarshalJSON()
			return string(s)
		}
	case wire.KindInt128:
		if len(b) == 16 {
			v := new(big.Int).SetUint64(le.Uint64(b[8:]))
			v.Lsh(v, 64)
			v.Or(v, new(big.Int).SetUint64(le.Uint64(b)))
			if b[15]&0x80 != 0 {
				v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
			}
			return v.String()
		}
	case wire.KindFloat32:
		if len(b) == 4 {
			return strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(b))), 'g', -1, 32)
		}
	case wire.KindFloat64:
		if len(b) == 8 {
			return strconv.FormatFloat(math.Float64frombits(le.Uint64(b)), 'g', -1, 64)
		}
	}
	// Raw bytes render as Rust's Debug of a byte slice.
	out := []byte{'['}
	for i, c := range b {
		if i > 0 {
			out = append(out, ',', ' ')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return string(append(out, ']'))
}

func optionsJSON(explicit, derived wire.Options) map[string]optionJSON {
	out := make(map[string]optionJSON, len(explicit)+len(derived))
	for _, e := range derived {
		out[string(e.Key.Value)] = optionJSON{Value: headerText(e.Value)}
	}
	for _, e := range explicit {
		out[string(e.Key.Value)] = optionJSON{Value: headerText(e.Value), Explicit: true}
	}
	return out
}

type streamJSON struct {
	ID            uint32                `json:"id"`
	CreatedAt     uint64                `json:"created_at"`
	Name          string                `json:"name"`
	Size          byteSize              `json:"size"`
	MessagesCount uint64                `json:"messages_count"`
	TopicsCount   uint32                `json:"topics_count"`
	Options       map[string]optionJSON `json:"options"`
}

type streamDetailsJSON struct {
	ID            uint32                `json:"id"`
	CreatedAt     uint64                `json:"created_at"`
	Name          string                `json:"name"`
	Size          byteSize              `json:"size"`
	MessagesCount uint64                `json:"messages_count"`
	TopicsCount   uint32                `json:"topics_count"`
	Topics        []topicJSON           `json:"topics"`
	Options       map[string]optionJSON `json:"options"`
}

func streamOf(s wire.Stream) streamJSON {
	return streamJSON{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: byteSize(s.SizeBytes),
		MessagesCount: s.MessagesCount, TopicsCount: s.TopicsCount, Options: optionsJSON(s.Options, nil)}
}

func streamDetailsOf(s wire.StreamDetails) streamDetailsJSON {
	topics := make([]topicJSON, 0, len(s.Topics))
	for _, t := range s.Topics {
		topics = append(topics, topicOf(t))
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].ID < topics[j].ID })
	return streamDetailsJSON{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: byteSize(s.SizeBytes),
		MessagesCount: s.MessagesCount, TopicsCount: s.TopicsCount, Topics: topics, Options: optionsJSON(s.Options, nil)}
}

type topicJSON struct {
	ID                   uint32                `json:"id"`
	CreatedAt            uint64                `json:"created_at"`
	Name                 string                `json:"name"`
	Size                 byteSize              `json:"size"`
	MessageExpiry        uint64                `json:"message_expiry"`
	CompressionAlgorithm string                `json:"compression_algorithm"`
	MaxTopicSize         uint64                `json:"max_topic_size"`
	MessagesCount        uint64                `json:"messages_count"`
	PartitionsCount      uint32                `json:"partitions_count"`
	Options              map[string]optionJSON `json:"options"`
}

type topicDetailsJSON struct {
	ID                   uint32                `json:"id"`
	CreatedAt            uint64                `json:"created_at"`
	Name                 string                `json:"name"`
	Size                 byteSize              `json:"size"`
	MessageExpiry        uint64                `json:"message_expiry"`
	CompressionAlgorithm string                `json:"compression_algorithm"`
	MaxTopicSize         uint64                `json:"max_topic_size"`
	MessagesCount        uint64                `json:"messages_count"`
	PartitionsCount      uint32                `json:"partitions_count"`
	Partitions           []partitionJSON       `json:"partitions"`
	Options              map[string]optionJSON `json:"options"`
}

type partitionJSON struct {
	ID            uint32   `json:"id"`
	CreatedAt     uint64   `json:"created_at"`
	SegmentsCount uint32   `json:"segments_count"`
	CurrentOffset uint64   `json:"current_offset"`
	Size          byteSize `json:"size"`
	MessagesCount uint64   `json:"messages_count"`
}

func compressionName(c uint8) string {
	if c == wire.CompressionGzip {
		return "gzip"
	}
	return "none"
}

func topicOf(t wire.Topic) topicJSON {
	expiry := t.MessageExpiry
	if expiry == 0 {
		// Iggy reads a 0 on the wire as "never expire".
		expiry = math.MaxUint64
	}
	return topicJSON{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, Size: byteSize(t.SizeBytes),
		MessageExpiry: expiry, CompressionAlgorithm: compressionName(t.CompressionAlgorithm),
		MaxTopicSize: t.MaxTopicSize, MessagesCount: t.MessagesCount, PartitionsCount: t.PartitionsCount,
		Options: optionsJSON(t.Options, t.DerivedOptions)}
}

func topicDetailsOf(t wire.TopicDetails) topicDetailsJSON {
	b := topicOf(t.Topic)
	parts := make([]partitionJSON, 0, len(t.Partitions))
	for _, p := range t.Partitions {
		parts = append(parts, partitionJSON{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, Size: byteSize(p.SizeBytes), MessagesCount: p.MessagesCount})
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].ID < parts[j].ID })
	return topicDetailsJSON{ID: b.ID, CreatedAt: b.CreatedAt, Name: b.Name, Size: b.Size, MessageExpiry: b.MessageExpiry,
		CompressionAlgorithm: b.CompressionAlgorithm, MaxTopicSize: b.MaxTopicSize, MessagesCount: b.MessagesCount,
		PartitionsCount: b.PartitionsCount, Partitions: parts, Options: b.Options}
}

type groupJSON struct {
	ID              uint32 `json:"id"`
	Name            string `json:"name"`
	PartitionsCount uint32 `json:"partitions_count"`
	MembersCount    uint32 `json:"members_count"`
}

type groupMemberJSON struct {
	ID              uint32   `json:"id"`
	PartitionsCount uint32   `json:"partitions_count"`
	Partitions      []uint32 `json:"partitions"`
}

type groupDetailsJSON struct {
	ID              uint32            `json:"id"`
	Name            string            `json:"name"`
	PartitionsCount uint32            `json:"partitions_count"`
	MembersCount    uint32            `json:"members_count"`
	Members         []groupMemberJSON `json:"members"`
}

func groupOf(g wire.ConsumerGroup) groupJSON {
	return groupJSON{ID: g.ID, Name: g.Name, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount}
}

func groupDetailsOf(g wire.ConsumerGroupDetails) groupDetailsJSON {
	out := groupDetailsJSON{ID: g.ID, Name: g.Name, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount,
		Members: make([]groupMemberJSON, 0, len(g.Members))}
	for _, m := range g.Members {
		parts := m.Partitions
		if parts == nil {
			parts = []uint32{}
		}
		out.Members = append(out.Members, groupMemberJSON{ID: m.ID, PartitionsCount: uint32(len(m.Partitions)), Partitions: parts})
	}
	sort.Slice(out.Members, func(i, j int) bool { return out.Members[i].ID < out.Members[j].ID })
	return out
}

func userStatusName(s uint8) string {
	if s == wire.UserInactive {
		return "inactive"
	}
	return "active"
}

type userJSON struct {
	ID        uint32                `json:"id"`
	CreatedAt uint64                `json:"created_at"`
	Status    string                `json:"status"`
	Username  string                `json:"username"`
	Options   map[string]optionJSON `json:"options"`
}

type userDetailsJSON struct {
	ID          uint32                `json:"id"`
	CreatedAt   uint64                `json:"created_at"`
	Status      string                `json:"status"`
	Username    string                `json:"username"`
	Permissions *permissionsJSON      `json:"permissions"`
	Options     map[string]optionJSON `json:"options"`
}

func userOf(u wire.UserInfo) userJSON {
	return userJSON{ID: u.ID, CreatedAt: u.CreatedAt, Status: userStatusName(u.Status), Username: u.Username,
		Options: optionsJSON(u.Options, nil)}
}

func userDetailsOf(u wire.UserDetails) userDetailsJSON {
	b := userOf(u.UserInfo)
	return userDetailsJSON{ID: b.ID, CreatedAt: b.CreatedAt, Status: b.Status, Username: b.Username,
		Permissions: permissionsOf(u.Permissions), Options: b.Options}
}

// Permissions in Iggy's JSON: stream and topic maps keyed by the id as a
// string, null when empty.
type permissionsJSON struct {
	Global  globalPermissionsJSON           `json:"global"`
	Streams map[string]streamPermissionJSON `json:"streams"`
}

type globalPermissionsJSON struct {
	ManageServers bool `json:"manage_servers"`
	ReadServers   bool `json:"read_servers"`
	ManageUsers   bool `json:"manage_users"`
	ReadUsers     bool `json:"read_users"`
	ManageStreams bool `json:"manage_streams"`
	ReadStreams   bool `json:"read_streams"`
	ManageTopics  bool `json:"manage_topics"`
	ReadTopics    bool `json:"read_topics"`
	PollMessages  bool `json:"poll_messages"`
	SendMessages  bool `json:"send_messages"`
}

type streamPermissionJSON struct {
	ManageStream bool                           `json:"manage_stream"`
	ReadStream   bool                           `json:"read_stream"`
	ManageTopics bool                           `json:"manage_topics"`
	ReadTopics   bool                           `json:"read_topics"`
	PollMessages bool                           `json:"poll_messages"`
	SendMessages bool                           `json:"send_messages"`
	Topics       map[string]topicPermissionJSON `json:"topics"`
}

type topicPermissionJSON struct {
	ManageTopic  bool `json:"manage_topic"`
	ReadTopic    bool `json:"read_topic"`
	PollMessages bool `json:"poll_messages"`
	SendMessages bool `json:"send_messages"`
}

func permissionsOf(p *wire.Permissions) *permissionsJSON {
	if p == nil {
		return nil
	}
	g := p.Global
	out := &permissionsJSON{Global: globalPermissionsJSON{g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers,
		g.ManageStreams, g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages}}
	if len(p.Streams) > 0 {
		out.Streams = map[string]streamPermissionJSON{}
		for _, s := range p.Streams {
			sp := streamPermissionJSON{ManageStream: s.ManageStream, ReadStream: s.ReadStream, ManageTopics: s.ManageTopics,
				ReadTopics: s.ReadTopics, PollMessages: s.PollMessages, SendMessages: s.SendMessages}
			if len(s.Topics) > 0 {
				sp.Topics = map[string]topicPermissionJSON{}
				for _, t := range s.Topics {
					sp.Topics[strconv.FormatUint(uint64(t.TopicID), 10)] = topicPermissionJSON{t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages}
				}
			}
			out.Streams[strconv.FormatUint(uint64(s.StreamID), 10)] = sp
		}
	}
	return out
}

// wirePermissions converts the request form back (ids ascending, as the
// binary encoding lists them).
func wirePermissions(p *permissionsJSON) (*wire.Permissions, error) {
	if p == nil {
		return nil, nil
	}
	g := p.Global
	out := &wire.Permissions{Global: wire.GlobalPermissions{ManageServers: g.ManageServers, ReadServers: g.ReadServers,
		ManageUsers: g.ManageUsers, ReadUsers: g.ReadUsers, ManageStreams: g.ManageStreams, ReadStreams: g.ReadStreams,
		ManageTopics: g.ManageTopics, ReadTopics: g.ReadTopics, PollMessages: g.PollMessages, SendMessages: g.SendMessages}}
	for key, s := range p.Streams {
		id, err := strconv.ParseUint(key, 10, 32)
		if err != nil {
			return nil, httpError(422, "invalid_json", "permissions.streams: keys must be stream ids")
		}
		sp := wire.StreamPermissions{StreamID: uint32(id), ManageStream: s.ManageStream, ReadStream: s.ReadStream,
			ManageTopics: s.ManageTopics, ReadTopics: s.ReadTopics, PollMessages: s.PollMessages, SendMessages: s.SendMessages}
		for tkey, t := range s.Topics {
			tid, err := strconv.ParseUint(tkey, 10, 32)
			if err != nil {
				return nil, httpError(422, "invalid_json", "permissions.streams.topics: keys must be topic ids")
			}
			sp.Topics = append(sp.Topics, wire.TopicPermissions{TopicID: uint32(tid), ManageTopic: t.ManageTopic,
				ReadTopic: t.ReadTopic, PollMessages: t.PollMessages, SendMessages: t.SendMessages})
		}
		sort.Slice(sp.Topics, func(i, j int) bool { return sp.Topics[i].TopicID < sp.Topics[j].TopicID })
		out.Streams = append(out.Streams, sp)
	}
	sort.Slice(out.Streams, func(i, j int) bool { return out.Streams[i].StreamID < out.Streams[j].StreamID })
	return out, nil
}

type patJSON struct {
	Name     string  `json:"name"`
	ExpiryAt *uint64 `json:"expiry_at"`
}

type rawPATJSON struct {
	Token string `json:"token"`
}

type tokenInfoJSON struct {
	Token  string `json:"token"`
	Expiry uint64 `json:"expiry"`
}

type identityJSON struct {
	UserID      uint32         `json:"user_id"`
	AccessToken *tokenInfoJSON `json:"access_token"`
}

type cacheMetricJSON struct {
	Hits     uint64  `json:"hits"`
	Misses   uint64  `json:"misses"`
	HitRatio float32 `json:"hit_ratio"`
}

type statsJSON struct {
	ProcessID           uint32                     `json:"process_id"`
	CPUUsage            float32                    `json:"cpu_usage"`
	TotalCPUUsage       float32                    `json:"total_cpu_usage"`
	MemoryUsage         byteSize                   `json:"memory_usage"`
	TotalMemory         byteSize                   `json:"total_memory"`
	AvailableMemory     byteSize                   `json:"available_memory"`
	RunTime             uint64                     `json:"run_time"`
	StartTime           uint64                     `json:"start_time"`
	ReadBytes           byteSize                   `json:"read_bytes"`
	WrittenBytes        byteSize                   `json:"written_bytes"`
	MessagesSizeBytes   byteSize                   `json:"messages_size_bytes"`
	StreamsCount        uint32                     `json:"streams_count"`
	TopicsCount         uint32                     `json:"topics_count"`
	PartitionsCount     uint32                     `json:"partitions_count"`
	SegmentsCount       uint32                     `json:"segments_count"`
	MessagesCount       uint64                     `json:"messages_count"`
	ClientsCount        uint32                     `json:"clients_count"`
	ConsumerGroupsCount uint32                     `json:"consumer_groups_count"`
	Hostname            string                     `json:"hostname"`
	OSName              string                     `json:"os_name"`
	OSVersion           string                     `json:"os_version"`
	KernelVersion       string                     `json:"kernel_version"`
	IggyServerVersion   string                     `json:"iggy_server_version"`
	IggyServerSemver    *uint32                    `json:"iggy_server_semver"`
	CacheMetrics        map[string]cacheMetricJSON `json:"cache_metrics"`
	ThreadsCount        uint32                     `json:"threads_count"`
	FreeDiskSpace       byteSize                   `json:"free_disk_space"`
	TotalDiskSpace      byteSize                   `json:"total_disk_space"`
}

func statsOf(s wire.Stats) statsJSON {
	out := statsJSON{ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage,
		MemoryUsage: byteSize(s.MemoryUsage), TotalMemory: byteSize(s.TotalMemory), AvailableMemory: byteSize(s.AvailableMemory),
		RunTime: s.RunTime, StartTime: s.StartTime, ReadBytes: byteSize(s.ReadBytes), WrittenBytes: byteSize(s.WrittenBytes),
		MessagesSizeBytes: byteSize(s.MessagesSizeBytes), StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount,
		PartitionsCount: s.PartitionsCount, SegmentsCount: s.Segments, MessagesCount: s.MessagesCount,
		ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount, Hostname: s.Hostname, OSName: s.OSName,
		OSVersion: s.OSVersion, KernelVersion: s.KernelVersion, IggyServerVersion: s.Version,
		CacheMetrics: map[string]cacheMetricJSON{}, ThreadsCount: s.ThreadsCount,
		FreeDiskSpace: byteSize(s.FreeDiskSpace), TotalDiskSpace: byteSize(s.TotalDiskSpace)}
	if s.Semver != 0 {
		v := s.Semver
		out.IggyServerSemver = &v
	}
	for _, c := range s.CacheMetrics {
		key := strconv.FormatUint(uint64(c.StreamID), 10) + "-" + strconv.FormatUint(uint64(c.TopicID), 10) + "-" +
			strconv.FormatUint(uint64(c.PartitionID), 10)
		out.CacheMetrics[key] = cacheMetricJSON{c.Hits, c.Misses, c.HitRatio}
	}
	return out
}

func transportName(t uint8) string {
	switch t {
	case wire.TransportTCP:
		return "TCP"
	case wire.TransportQUIC:
		return "QUIC"
	case wire.TransportHTTP:
		return "HTTP"
	case wire.TransportWebSocket:
		return "WebSocket"
	}
	return "Unknown"
}

type clientJSON struct {
	ClientID            uint32  `json:"client_id"`
	UserID              *uint32 `json:"user_id"`
	Address             string  `json:"address"`
	Transport           string  `json:"transport"`
	ConsumerGroupsCount uint32  `json:"consumer_groups_count"`
}

type clientGroupJSON struct {
	StreamID uint32 `json:"stream_id"`
	TopicID  uint32 `json:"topic_id"`
	GroupID  uint32 `json:"group_id"`
}

type clientDetailsJSON struct {
	ClientID            uint32            `json:"client_id"`
	UserID              *uint32           `json:"user_id"`
	Address             string            `json:"address"`
	Transport           string            `json:"transport"`
	ConsumerGroupsCount uint32            `json:"consumer_groups_count"`
	ConsumerGroups      []clientGroupJSON `json:"consumer_groups"`
}

func clientOf(c wire.ClientInfo) clientJSON {
	out := clientJSON{ClientID: c.ClientID, Address: c.Address, Transport: transportName(c.Transport),
		ConsumerGroupsCount: c.ConsumerGroupsCount}
	if c.UserID != math.MaxUint32 {
		u := c.UserID
		out.UserID = &u
	}
	return out
}

func clientDetailsOf(c wire.ClientDetails) clientDetailsJSON {
	b := clientOf(c.ClientInfo)
	out := clientDetailsJSON{ClientID: b.ClientID, UserID: b.UserID, Address: b.Address, Transport: b.Transport,
		ConsumerGroupsCount: b.ConsumerGroupsCount, ConsumerGroups: make([]clientGroupJSON, 0, len(c.Groups))}
	for _, g := range c.Groups {
		out.ConsumerGroups = append(out.ConsumerGroups, clientGroupJSON{g.StreamID, g.TopicID, g.GroupID})
	}
	sort.Slice(out.ConsumerGroups, func(i, j int) bool { return out.ConsumerGroups[i].GroupID < out.ConsumerGroups[j].GroupID })
	return out
}

type endpointsJSON struct {
	TCP       uint16 `json:"tcp"`
	QUIC      uint16 `json:"quic"`
	HTTP      uint16 `json:"http"`
	WebSocket uint16 `json:"websocket"`
}

type clusterNodeJSON struct {
	Name      string        `json:"name"`
	IP        string        `json:"ip"`
	Endpoints endpointsJSON `json:"endpoints"`
	Role      string        `json:"role"`
	Status    string        `json:"status"`
}

type clusterJSON struct {
	Name  string            `json:"name"`
	Nodes []clusterNodeJSON `json:"nodes"`
}

var nodeStatusNames = []string{"healthy", "starting", "stopping", "unreachable", "maintenance", "unknown"}

func clusterOf(m wire.ClusterMetadata) clusterJSON {
	out := clusterJSON{Name: m.Name, Nodes: make([]clusterNodeJSON, 0, len(m.Nodes))}
	for _, n := range m.Nodes {
		role := "follower"
		if n.Role == wire.RoleLeader {
			role = "leader"
		}
		status := "unknown"
		if int(n.Status) < len(nodeStatusNames) {
			status = nodeStatusNames[n.Status]
		}
		out.Nodes = append(out.Nodes, clusterNodeJSON{Name: n.Name, IP: n.IP,
			Endpoints: endpointsJSON{n.TCPPort, n.QUICPort, n.HTTPPort, n.WSPort}, Role: role, Status: status})
	}
	return out
}

type offsetJSON struct {
	PartitionID   uint32 `json:"partition_id"`
	CurrentOffset uint64 `json:"current_offset"`
	StoredOffset  uint64 `json:"stored_offset"`
}

type optionSpecJSON struct {
	Key          string  `json:"key"`
	Kind         string  `json:"kind"`
	DefaultValue []uint8 `json:"default_value"`
	Description  string  `json:"description"`
}

// MarshalJSON writes default_value as an array of numbers (serde's Vec<u8>),
// not base64.
func (o optionSpecJSON) MarshalJSON() ([]byte, error) {
	key, _ := json.Marshal(o.Key)
	kind, _ := json.Marshal(o.Kind)
	desc, _ := json.Marshal(o.Description)
	b := []byte(`{"key":`)
	b = append(b, key...)
	b = append(b, `,"kind":`...)
	b = append(b, kind...)
	b = append(b, `,"default_value":[`...)
	for i, v := range o.DefaultValue {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	b = append(b, `],"description":`...)
	b = append(b, desc...)
	return append(b, '}'), nil
}

type confirmationJSON struct {
	StreamID    uint32 `json:"stream_id"`
	TopicID     uint32 `json:"topic_id"`
	PartitionID uint32 `json:"partition_id"`
	BaseOffset  uint64 `json:"base_offset"`
}

type confirmationsJSON struct {
	Confirmations []confirmationJSON `json:"confirmations"`
}
