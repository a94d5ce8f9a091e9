// Package fakeserver is an in-memory, single-node stand-in for an iggo (or
// Iggy 0.9) server, built only on package wire and listening on loopback. It
// exists so the CLI and the benchmark can be tested end to end, through the
// real client and real sockets, before (and independently of) the real
// server: it keeps streams, topics, partitions, messages, consumer groups,
// consumer offsets, users and personal access tokens in maps, and answers
// every command of protocol 0.11 the way a healthy single node would.
//
// It is a test double, not a server: nothing is persisted, permissions are
// stored but not enforced, there is one node and no consensus. Tests that
// need a failure inject it with Server.SetHook.
package fakeserver

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/iggo/iggo/wire"
)

// Root credentials the server starts with (user id 0).
const (
	RootUsername = "iggy"
	RootPassword = "iggy"
)

// Limits of the fake; they keep a runaway test from eating the machine.
const (
	// MaxStoredBytes bounds all message bytes held; sends beyond it are
	// refused with TopicFull (3009).
	MaxStoredBytes = 512 << 20
	maxFrame       = wire.DefaultMaxFrameSize
)

// Hook sees every decoded request before the server does. Returning a
// non-nil reply sends it instead of the normal answer; returning
// (nil, false) lets the server answer.
type Hook func(h wire.RequestHeader, req wire.Request) (reply []byte, handled bool)

// Server is a running fake server.
type Server struct {
	ln   net.Listener
	addr string

	mu          sync.Mutex
	hook        Hook
	conns       map[*conn]bool
	nextClient  uint32
	nextSession uint64
	users       map[uint32]*user
	nextUser    uint32
	streams     map[uint32]*stream
	nextStream  uint32
	storedBytes uint64
	started     time.Time
	requests    map[wire.CommandCode]int
	wg          sync.WaitGroup
	closed      bool
}

type user struct {
	info  wire.UserInfo
	pass  string
	perms *wire.Permissions
	pats  map[string]*pat
}

type pat struct {
	name   string
	token  string
	expiry uint64 // µs timestamp, 0 never
}

type stream struct {
	rec       wire.Stream
	topics    map[uint32]*topic
	nextTopic uint32
}

type topic struct {
	rec        wire.Topic
	partitions []*partition
	groups     map[uint32]*group
	nextGroup  uint32
	balanced   uint32
}

type partition struct {
	id        uint32
	created   uint64
	batches   [][]byte // stamped batch records in offset order
	next      uint64   // next offset to assign
	sizeBytes uint64
	offsets   map[uint32]uint64 // individual consumer key -> stored offset
	groupOffs map[uint32]uint64 // group id -> stored offset
}

type group struct {
	id         uint32
	name       string
	members    []uint32 // client ids in join order
	generation uint64
}

// Start listens on 127.0.0.1 (port chosen by the kernel) and serves until
// Close.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln:       ln,
		addr:     ln.Addr().String(),
		conns:    map[*conn]bool{},
		users:    map[uint32]*user{},
		streams:  map[uint32]*stream{},
		started:  time.Now(),
		requests: map[wire.CommandCode]int{},
	}
	s.users[0] = &user{
		info:  wire.UserInfo{ID: 0, CreatedAt: nowUs(), Status: 1, Username: RootUsername},
		pass:  RootPassword,
		perms: &wire.Permissions{Global: allGlobal()},
		pats:  map[string]*pat{},
	}
	s.nextUser = 1
	s.nextClient = 1
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr is the "host:port" the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops the listener, closes every connection and waits for the
// connection goroutines to end.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

// SetHook installs (or with nil removes) a request hook.
func (s *Server) SetHook(h Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// Requests reports how many requests with code c the server has decoded.
func (s *Server) Requests(c wire.CommandCode) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[c]
}

// StreamNames lists the names of the existing streams, sorted.
func (s *Server) StreamNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.streams {
		out = append(out, st.rec.Name)
	}
	sort.Strings(out)
	return out
}

// TopicOptions returns the explicit options of a topic, found by names.
func (s *Server) TopicOptions(streamName, topicName string) (wire.Options, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.findStream(wire.MustNamedID(streamName))
	if err != nil {
		return nil, false
	}
	t, err := findTopic(st, wire.MustNamedID(topicName))
	if err != nil {
		return nil, false
	}
	return t.rec.Options, true
}

// MessageCount is the number of messages stored in one partition.
func (s *Server) MessageCount(streamName, topicName string, partitionID uint32) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.findStream(wire.MustNamedID(streamName))
	if err != nil {
		return 0
	}
	t, err := findTopic(st, wire.MustNamedID(topicName))
	if err != nil || int(partitionID) >= len(t.partitions) {
		return 0
	}
	return t.partitions[partitionID].next
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		c := &conn{s: s, nc: nc, id: s.nextClient}
		s.nextClient++
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go c.serve()
	}
}

type conn struct {
	s       *Server
	nc      net.Conn
	id      uint32
	session uint64
	userID  uint32
	client  wire.Uint128
}

func (c *conn) serve() {
	s := c.s
	defer s.wg.Done()
	defer func() {
		c.nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.leaveAllGroups(c.id)
		s.mu.Unlock()
	}()
	var buf []byte
	for {
		frame, err := wire.ReadFrame(c.nc, buf, maxFrame)
		if err != nil {
			return
		}
		buf = frame[:0]
		h, body, err := wire.DecodeRequest(frame, maxFrame)
		if err != nil {
			return // the real server drops frames it cannot process
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

func (c *conn) handle(h wire.RequestHeader, body []byte) []byte {
	s := c.s
	switch h.Operation {
	case wire.OpRegister:
		s.mu.Lock()
		hook := s.hook
		s.mu.Unlock()
		if hook != nil {
			// Logins reach the hook too (decoded when they decode), so
			// tests can delay or refuse them.
			if req, err := wire.DecodeRequestBody(h.Code, body); err == nil {
				if reply, handled := hook(h, req); handled {
					return reply
				}
			}
		}
		return c.register(h, body)
	case wire.OpLogout:
		s.mu.Lock()
		c.session = 0
		s.leaveAllGroups(c.id)
		s.mu.Unlock()
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
		code, _ := wire.CodeOf(err)
		return wire.AppendStatusReply(nil, &h, code)
	}
	s.mu.Lock()
	s.requests[h.Code]++
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		if reply, handled := hook(h, req); handled {
			return reply
		}
	}
	s.mu.Lock()
	payload, err := c.dispatch(h, req)
	s.mu.Unlock()
	if err != nil {
		code, ok := wire.CodeOf(err)
		if !ok {
			code = wire.CodeError
		}
		return wire.AppendRejectionReply(nil, &h, code)
	}
	var p []byte
	if payload != nil {
		p, err = payload.AppendTo(nil)
		if err != nil {
			return wire.AppendStatusReply(nil, &h, wire.CodeError)
		}
	}
	return wire.AppendReply(nil, &h, p)
}

func (c *conn) register(h wire.RequestHeader, body []byte) []byte {
	s := c.s
	reg, err := wire.DecodeRegister(body)
	if err != nil {
		return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictMalformedLogin, 0, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var u *user
	if reg.Password != nil {
		for _, cand := range s.users {
			if cand.info.Username == reg.Password.Username && cand.pass == reg.Password.Password {
				u = cand
			}
		}
	}
	if u == nil && reg.Token != nil {
		for _, cand := range s.users {
			for _, p := range cand.pats {
				if p.token == reg.Token.Token && (p.expiry == 0 || p.expiry > nowUs()) {
					u = cand
				}
			}
		}
		if u == nil && reg.Password == nil {
			return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictInvalidToken, 0, 0)
		}
	}
	if u == nil {
		return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictInvalidCredentials, 0, 0)
	}
	if u.info.Status != 1 {
		return wire.AppendEviction(nil, wire.Prefix{}, h.Client, wire.EvictUserInactive, 0, 0)
	}
	s.nextSession++
	c.session = s.nextSession
	c.userID = u.info.ID
	c.client = h.Client
	p, _ := (&wire.LoginReply{UserID: u.info.ID, Session: c.session, ServerProtocol: wire.CurrentProtocol, ServerVersion: "fakeserver"}).AppendTo(nil)
	return wire.AppendReply(nil, &h, p)
}

// dispatch runs one command against the state; s.mu is held.
func (c *conn) dispatch(h wire.RequestHeader, req wire.Request) (wire.ReplyPayload, error) {
	s := c.s
	switch r := req.(type) {
	case *wire.Ping:
		return nil, nil
	case *wire.GetStats:
		return s.stats(), nil
	case *wire.GetSnapshotFile:
		return snapshot(r)
	case *wire.GetClusterMetadata:
		host, port, _ := net.SplitHostPort(s.addr)
		p, _ := strconv.Atoi(port)
		return &wire.ClusterMetadata{Name: "fake-cluster", Nodes: []wire.ClusterNode{{Name: "fake-node-0", IP: host, TCPPort: uint16(p), Role: wire.RoleLeader, Status: 0}}}, nil
	case *wire.DescribeOptions:
		d, err := wire.DescribeScope(r.Scope)
		if err != nil {
			return nil, err
		}
		return wire.OptionDescriptors(d), nil
	case *wire.GetMe:
		return s.clientDetails(c), nil
	case *wire.GetClient:
		for cc := range s.conns {
			if cc.id == r.ClientID {
				return s.clientDetails(cc), nil
			}
		}
		return raw(nil), nil
	case *wire.GetClients:
		var out wire.ClientInfos
		for _, cc := range s.sortedConns() {
			out = append(out, s.clientDetails(cc).ClientInfo)
		}
		return out, nil
	case *wire.GetUser:
		u, err := s.findUser(r.UserID)
		if err != nil {
			return raw(nil), nil
		}
		return &wire.UserDetails{UserInfo: u.info, Permissions: u.perms}, nil
	case *wire.GetUsers:
		var out wire.Users
		for _, id := range sortedKeys(s.users) {
			out = append(out, s.users[id].info)
		}
		return out, nil
	case *wire.CreateUser:
		for _, u := range s.users {
			if u.info.Username == r.Username {
				return nil, wire.NewError(wire.CodeUserAlreadyExists)
			}
		}
		u := &user{info: wire.UserInfo{ID: s.nextUser, CreatedAt: nowUs(), Status: r.Status, Username: r.Username}, pass: r.Password, perms: r.Permissions, pats: map[string]*pat{}}
		s.nextUser++
		s.users[u.info.ID] = u
		return &wire.UserDetails{UserInfo: u.info, Permissions: u.perms}, nil
	case *wire.DeleteUser:
		u, err := s.findUser(r.UserID)
		if err != nil {
			return nil, err
		}
		if u.info.ID == 0 {
			return nil, wire.NewError(wire.CodeCannotDeleteUser)
		}
		delete(s.users, u.info.ID)
		return nil, nil
	case *wire.UpdateUser:
		u, err := s.findUser(r.UserID)
		if err != nil {
			return nil, err
		}
		if r.Username != nil {
			u.info.Username = *r.Username
		}
		if r.Status != nil {
			u.info.Status = *r.Status
		}
		return nil, nil
	case *wire.UpdatePermissions:
		u, err := s.findUser(r.UserID)
		if err != nil {
			return nil, err
		}
		u.perms = r.Permissions
		return nil, nil
	case *wire.ChangePassword:
		u, err := s.findUser(r.UserID)
		if err != nil {
			return nil, err
		}
		if u.pass != r.CurrentPassword {
			return nil, wire.NewError(wire.CodeInvalidCredentials)
		}
		u.pass = r.NewPassword
		return nil, nil
	case *wire.GetPersonalAccessTokens:
		u := s.users[c.userID]
		var out wire.PersonalAccessTokens
		names := make([]string, 0, len(u.pats))
		for n := range u.pats {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, wire.PersonalAccessTokenInfo{Name: n, ExpiryAt: u.pats[n].expiry})
		}
		return out, nil
	case *wire.CreatePersonalAccessToken:
		u := s.users[c.userID]
		if _, ok := u.pats[r.Name]; ok {
			return nil, wire.NewError(wire.CodePersonalAccessTokenAlreadyExists)
		}
		var b [24]byte
		_, _ = rand.Read(b[:])
		p := &pat{name: r.Name, token: hex.EncodeToString(b[:])}
		if r.Expiry != 0 && r.Expiry != ^uint64(0) {
			p.expiry = nowUs() + r.Expiry
		}
		u.pats[r.Name] = p
		return &wire.RawPersonalAccessToken{Token: p.token}, nil
	case *wire.DeletePersonalAccessToken:
		u := s.users[c.userID]
		if _, ok := u.pats[r.Name]; !ok {
			return nil, wire.NewError(wire.CodeResourceNotFound)
		}
		delete(u.pats, r.Name)
		return nil, nil

	case *wire.GetStream:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return raw(nil), nil
		}
		d := wire.StreamDetails{Stream: s.streamRecord(st)}
		for _, id := range sortedKeys(st.topics) {
			d.Topics = append(d.Topics, topicRecord(st.topics[id]))
		}
		return &d, nil
	case *wire.GetStreams:
		var out wire.Streams
		for _, id := range sortedKeys(s.streams) {
			out = append(out, s.streamRecord(s.streams[id]))
		}
		return out, nil
	case *wire.CreateStream:
		for _, st := range s.streams {
			if st.rec.Name == r.Name {
				return nil, wire.NewError(wire.CodeStreamNameAlreadyExists)
			}
		}
		st := &stream{rec: wire.Stream{ID: s.nextStream, CreatedAt: nowUs(), Name: r.Name, Options: r.Options}, topics: map[uint32]*topic{}}
		s.nextStream++
		s.streams[st.rec.ID] = st
		rec := s.streamRecord(st)
		return &rec, nil
	case *wire.UpdateStream:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		for _, o := range s.streams {
			if o != st && o.rec.Name == r.Name {
				return nil, wire.NewError(wire.CodeStreamNameAlreadyExists)
			}
		}
		st.rec.Name = r.Name
		return nil, nil
	case *wire.DeleteStream:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		for _, t := range st.topics {
			s.dropTopicData(t)
		}
		delete(s.streams, st.rec.ID)
		return nil, nil
	case *wire.PurgeStream:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		for _, t := range st.topics {
			s.dropTopicData(t)
		}
		return nil, nil

	case *wire.GetTopic:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return raw(nil), nil
		}
		t, err := findTopic(st, r.TopicID)
		if err != nil {
			return raw(nil), nil
		}
		d := topicDetails(t)
		return &d, nil
	case *wire.GetTopics:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return wire.Topics{}, nil
		}
		out := wire.Topics{}
		for _, id := range sortedKeys(st.topics) {
			out = append(out, topicRecord(st.topics[id]))
		}
		return out, nil
	case *wire.CreateTopic:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		for _, t := range st.topics {
			if t.rec.Name == r.Name {
				return nil, wire.NewError(wire.CodeTopicNameAlreadyExists)
			}
		}
		if r.PartitionsCount > wire.MaxPartitionsPerRequest {
			return nil, wire.NewError(wire.CodeTooManyPartitions)
		}
		opts, extra, err := splitDurability(r.Options)
		if err != nil {
			return nil, err
		}
		explicit, derived, settings, err := wire.ResolveTopicCreate(opts, r.PartitionsCount)
		if err != nil {
			return nil, err
		}
		t := &topic{rec: wire.Topic{ID: st.nextTopic, CreatedAt: nowUs(), PartitionsCount: r.PartitionsCount,
			MessageExpiry: settings.MessageExpiry, CompressionAlgorithm: settings.CompressionAlgorithm,
			MaxTopicSize: settings.MaxTopicSize, Name: r.Name, Options: append(explicit, extra...), DerivedOptions: derived},
			groups: map[uint32]*group{}}
		st.nextTopic++
		addPartitions(t, r.PartitionsCount)
		st.topics[t.rec.ID] = t
		d := topicDetails(t)
		return &d, nil
	case *wire.UpdateTopic:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		t, err := findTopic(st, r.TopicID)
		if err != nil {
			return nil, err
		}
		opts, _, err := splitDurability(t.rec.Options)
		if err != nil {
			return nil, err
		}
		explicit, derived, settings, err := wire.ResolveTopicUpdate(opts, t.rec.DerivedOptions, r.Options, t.rec.PartitionsCount)
		if err != nil {
			return nil, err
		}
		_, extra, _ := splitDurability(t.rec.Options)
		t.rec.Name = r.Name
		t.rec.Options, t.rec.DerivedOptions = append(explicit, extra...), derived
		t.rec.MessageExpiry, t.rec.CompressionAlgorithm, t.rec.MaxTopicSize = settings.MessageExpiry, settings.CompressionAlgorithm, settings.MaxTopicSize
		return nil, nil
	case *wire.DeleteTopic:
		st, err := s.findStream(r.StreamID)
		if err != nil {
			return nil, err
		}
		t, err := findTopic(st, r.TopicID)
		if err != nil {
			return nil, err
		}
		s.dropTopicData(t)
		delete(st.topics, t.rec.ID)
		return nil, nil
	case *wire.PurgeTopic:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		s.dropTopicData(t)
		return nil, nil
	case *wire.CreatePartitions:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		if r.PartitionsCount == 0 || r.PartitionsCount > wire.MaxPartitionsPerRequest {
			return nil, wire.NewError(wire.CodeTooManyPartitions)
		}
		addPartitions(t, r.PartitionsCount)
		t.rec.PartitionsCount += r.PartitionsCount
		return nil, nil
	case *wire.DeletePartitions:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		if r.PartitionsCount == 0 || r.PartitionsCount > uint32(len(t.partitions)) {
			return nil, wire.NewError(wire.CodeInvalidPartitionsCount)
		}
		keep := len(t.partitions) - int(r.PartitionsCount)
		for _, p := range t.partitions[keep:] {
			s.storedBytes -= p.sizeBytes
		}
		t.partitions = t.partitions[:keep]
		t.rec.PartitionsCount = uint32(keep)
		return nil, nil
	case *wire.DeleteSegments:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		if int(r.PartitionID) >= len(t.partitions) {
			return nil, wire.NewError(wire.CodePartitionNotFound)
		}
		return nil, nil

	case *wire.CreateConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		for _, g := range t.groups {
			if g.name == r.Name {
				return nil, wire.NewError(wire.CodeConsumerGroupNameAlreadyExists)
			}
		}
		g := &group{id: t.nextGroup, name: r.Name}
		t.nextGroup++
		t.groups[g.id] = g
		d := groupDetails(t, g)
		return &d, nil
	case *wire.GetConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		g, err := findGroup(t, r.GroupID)
		if err != nil {
			return raw(nil), nil
		}
		d := groupDetails(t, g)
		return &d, nil
	case *wire.GetConsumerGroups:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		var out wire.ConsumerGroups
		for _, id := range sortedKeys(t.groups) {
			out = append(out, groupDetails(t, t.groups[id]).ConsumerGroup)
		}
		return out, nil
	case *wire.DeleteConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		g, err := findGroup(t, r.GroupID)
		if err != nil {
			return nil, err
		}
		delete(t.groups, g.id)
		return nil, nil
	case *wire.JoinConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		g, err := findGroup(t, r.GroupID)
		if err != nil {
			return nil, err
		}
		for _, m := range g.members {
			if m == c.id {
				return nil, nil
			}
		}
		g.members = append(g.members, c.id)
		g.generation++
		return nil, nil
	case *wire.LeaveConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		g, err := findGroup(t, r.GroupID)
		if err != nil {
			return nil, err
		}
		if !removeMember(g, c.id) {
			return nil, wire.NewError(wire.CodeConsumerGroupMemberNotFound)
		}
		return nil, nil
	case *wire.SyncConsumerGroup:
		t, err := s.findStreamTopic(r.StreamID, r.TopicID)
		if err != nil {
			return nil, err
		}
		g, err := findGroup(t, r.GroupID)
		if err != nil {
			return nil, err
		}
		parts, member := assignment(t, g, c.id)
		if !member {
			return raw(nil), nil
		}
		return &wire.GroupAssignment{Generation: g.generation, Partitions: parts}, nil

	case *wire.GetConsumerOffset:
		t, p, gid, err := s.offsetTarget(c, r.Consumer, r.StreamID, r.TopicID, r.Partition)
		if err != nil {
			return nil, err
		}
		_ = t
		off, ok := storedOffset(p, r.Consumer, gid)
		if !ok {
			return raw(nil), nil
		}
		return &wire.ConsumerOffsetInfo{PartitionID: p.id, CurrentOffset: current(p), StoredOffset: off}, nil
	case *wire.StoreConsumerOffset:
		_, p, gid, err := s.offsetTarget(c, r.Consumer, r.StreamID, r.TopicID, r.Partition)
		if err != nil {
			return nil, err
		}
		if p.next == 0 || r.Offset > current(p) {
			return nil, wire.NewError(wire.CodeInvalidOffset)
		}
		storeOffset(p, r.Consumer, gid, r.Offset)
		return nil, nil
	case *wire.DeleteConsumerOffset:
		_, p, gid, err := s.offsetTarget(c, r.Consumer, r.StreamID, r.TopicID, r.Partition)
		if err != nil {
			return nil, err
		}
		if _, ok := storedOffset(p, r.Consumer, gid); !ok {
			return nil, wire.NewError(wire.CodeConsumerOffsetNotFound)
		}
		if r.Consumer.Kind == wire.ConsumerKindGroup {
			delete(p.groupOffs, gid)
		} else {
			delete(p.offsets, wire.ConsumerKey(r.Consumer.ID))
		}
		return nil, nil

	case *wire.SendMessages:
		return s.send(r)
	case *wire.PollMessages:
		return s.poll(c, r)
	case *wire.FlushUnsavedBuffer:
		return nil, wire.NewError(wire.CodeFeatureUnavailable)
	}
	return nil, wire.Errorf(wire.CodeFeatureUnavailable, "fake server does not serve %v", h.Code)
}

// raw is a reply payload that is exactly its bytes.
type raw []byte

func (r raw) AppendTo(dst []byte) ([]byte, error) { return append(dst, r...), nil }

func nowUs() uint64 { return uint64(time.Now().UnixMicro()) }

func allGlobal() wire.GlobalPermissions {
	return wire.GlobalPermissions{ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true, PollMessages: true, SendMessages: true}
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	keys := make([]uint32, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}

func (s *Server) sortedConns() []*conn {
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		if c.session != 0 {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

func (s *Server) clientDetails(c *conn) *wire.ClientDetails {
	d := &wire.ClientDetails{ClientInfo: wire.ClientInfo{ClientID: c.id, UserID: c.userID, Transport: wire.TransportTCP, Address: c.nc.RemoteAddr().String()}}
	for _, sid := range sortedKeys(s.streams) {
		st := s.streams[sid]
		for _, tid := range sortedKeys(st.topics) {
			t := st.topics[tid]
			for _, gid := range sortedKeys(t.groups) {
				for _, m := range t.groups[gid].members {
					if m == c.id {
						d.Groups = append(d.Groups, wire.ClientGroup{StreamID: sid, TopicID: tid, GroupID: gid})
					}
				}
			}
		}
	}
	d.ConsumerGroupsCount = uint32(len(d.Groups))
	return d
}

func (s *Server) leaveAllGroups(clientID uint32) {
	for _, st := range s.streams {
		for _, t := range st.topics {
			for _, g := range t.groups {
				removeMember(g, clientID)
			}
		}
	}
}

func removeMember(g *group, clientID uint32) bool {
	for i, m := range g.members {
		if m == clientID {
			g.members = append(g.members[:i], g.members[i+1:]...)
			g.generation++
			return true
		}
	}
	return false
}

// assignment deals partitions round robin over members in join order.
func assignment(t *topic, g *group, clientID uint32) ([]uint32, bool) {
	idx := -1
	for i, m := range g.members {
		if m == clientID {
			idx = i
		}
	}
	if idx < 0 {
		return nil, false
	}
	parts := []uint32{}
	for p := range t.partitions {
		if p%len(g.members) == idx {
			parts = append(parts, uint32(p))
		}
	}
	return parts, true
}

func groupDetails(t *topic, g *group) wire.ConsumerGroupDetails {
	d := wire.ConsumerGroupDetails{ConsumerGroup: wire.ConsumerGroup{ID: g.id, PartitionsCount: uint32(len(t.partitions)), MembersCount: uint32(len(g.members)), Name: g.name}}
	for _, m := range g.members {
		parts, _ := assignment(t, g, m)
		d.Members = append(d.Members, wire.ConsumerGroupMember{ID: m, Partitions: parts})
	}
	return d
}

func (s *Server) findUser(id wire.Identifier) (*user, error) {
	if n, ok := id.Numeric(); ok {
		if u, ok := s.users[n]; ok {
			return u, nil
		}
		return nil, wire.NewError(wire.CodeResourceNotFound)
	}
	name, _ := id.Name()
	for _, u := range s.users {
		if u.info.Username == name {
			return u, nil
		}
	}
	return nil, wire.NewError(wire.CodeResourceNotFound)
}

func (s *Server) findStream(id wire.Identifier) (*stream, error) {
	if n, ok := id.Numeric(); ok {
		if st, ok := s.streams[n]; ok {
			return st, nil
		}
		return nil, wire.Errorf(wire.CodeStreamIdNotFound, "stream %s", id)
	}
	name, _ := id.Name()
	for _, st := range s.streams {
		if st.rec.Name == name {
			return st, nil
		}
	}
	return nil, wire.Errorf(wire.CodeStreamIdNotFound, "stream %s", id)
}

func findTopic(st *stream, id wire.Identifier) (*topic, error) {
	if n, ok := id.Numeric(); ok {
		if t, ok := st.topics[n]; ok {
			return t, nil
		}
		return nil, wire.NewError(wire.CodeTopicIdNotFound)
	}
	name, _ := id.Name()
	for _, t := range st.topics {
		if t.rec.Name == name {
			return t, nil
		}
	}
	return nil, wire.NewError(wire.CodeTopicIdNotFound)
}

func (s *Server) findStreamTopic(sid, tid wire.Identifier) (*topic, error) {
	st, err := s.findStream(sid)
	if err != nil {
		return nil, err
	}
	return findTopic(st, tid)
}

func findGroup(t *topic, id wire.Identifier) (*group, error) {
	if n, ok := id.Numeric(); ok {
		if g, ok := t.groups[n]; ok {
			return g, nil
		}
		return nil, wire.NewError(wire.CodeConsumerGroupIdNotFound)
	}
	name, _ := id.Name()
	for _, g := range t.groups {
		if g.name == name {
			return g, nil
		}
	}
	return nil, wire.NewError(wire.CodeConsumerGroupIdNotFound)
}

func (s *Server) streamRecord(st *stream) wire.Stream {
	rec := st.rec
	rec.TopicsCount = uint32(len(st.topics))
	rec.SizeBytes, rec.MessagesCount = 0, 0
	for _, t := range st.topics {
		tr := topicRecord(t)
		rec.SizeBytes += tr.SizeBytes
		rec.MessagesCount += tr.MessagesCount
	}
	return rec
}

func topicRecord(t *topic) wire.Topic {
	rec := t.rec
	rec.PartitionsCount = uint32(len(t.partitions))
	rec.SizeBytes, rec.MessagesCount = 0, 0
	for _, p := range t.partitions {
		rec.SizeBytes += p.sizeBytes
		rec.MessagesCount += p.next
	}
	return rec
}

func topicDetails(t *topic) wire.TopicDetails {
	d := wire.TopicDetails{Topic: topicRecord(t)}
	for _, p := range t.partitions {
		d.Partitions = append(d.Partitions, wire.Partition{ID: p.id, CreatedAt: p.created, SegmentsCount: 1, CurrentOffset: current(p), SizeBytes: p.sizeBytes, MessagesCount: p.next})
	}
	return d
}

func addPartitions(t *topic, n uint32) {
	for i := uint32(0); i < n; i++ {
		t.partitions = append(t.partitions, &partition{id: uint32(len(t.partitions)), created: nowUs(), offsets: map[uint32]uint64{}, groupOffs: map[uint32]uint64{}})
	}
}

func (s *Server) dropTopicData(t *topic) {
	for _, p := range t.partitions {
		s.storedBytes -= p.sizeBytes
		p.batches, p.next, p.sizeBytes = nil, 0, 0
		p.offsets, p.groupOffs = map[uint32]uint64{}, map[uint32]uint64{}
	}
}

// splitDurability takes the 0.9.0-final durability keys out of an options
// block (the wire catalog of this protocol version does not list them) and
// checks their values.
func splitDurability(o wire.Options) (rest, durability wire.Options, err error) {
	for _, e := range o {
		k := string(e.Key.Value)
		if k == "durability" || k == "consumer_offset_durability" {
			v, _ := e.Value.AsString()
			if v != "replicated" && v != "persisted" {
				return nil, nil, wire.Errorf(wire.CodeInvalidOptionValue, "%s must be replicated or persisted", k)
			}
			durability = append(durability, e)
			continue
		}
		rest = append(rest, e)
	}
	return rest, durability, nil
}

func current(p *partition) uint64 {
	if p.next == 0 {
		return 0
	}
	return p.next - 1
}

func (s *Server) offsetTarget(c *conn, consumer wire.Consumer, sid, tid wire.Identifier, part wire.OptionalPartition) (*topic, *partition, uint32, error) {
	t, err := s.findStreamTopic(sid, tid)
	if err != nil {
		return nil, nil, 0, wire.NewError(wire.CodeResourceNotFound)
	}
	pid := uint32(0)
	if part.Set {
		pid = part.ID
	}
	if int(pid) >= len(t.partitions) {
		return nil, nil, 0, wire.NewError(wire.CodePartitionNotFound)
	}
	var gid uint32
	if consumer.Kind == wire.ConsumerKindGroup {
		g, err := findGroup(t, consumer.ID)
		if err != nil {
			return nil, nil, 0, err
		}
		gid = g.id
	}
	return t, t.partitions[pid], gid, nil
}

func storedOffset(p *partition, consumer wire.Consumer, gid uint32) (uint64, bool) {
	if consumer.Kind == wire.ConsumerKindGroup {
		o, ok := p.groupOffs[gid]
		return o, ok
	}
	o, ok := p.offsets[wire.ConsumerKey(consumer.ID)]
	return o, ok
}

func storeOffset(p *partition, consumer wire.Consumer, gid uint32, off uint64) {
	if consumer.Kind == wire.ConsumerKindGroup {
		p.groupOffs[gid] = off
		return
	}
	p.offsets[wire.ConsumerKey(consumer.ID)] = off
}

func (s *Server) send(r *wire.SendMessages) (wire.ReplyPayload, error) {
	st, err := s.findStream(r.StreamID)
	if err != nil {
		return nil, err
	}
	t, err := findTopic(st, r.TopicID)
	if err != nil {
		return nil, err
	}
	if len(t.partitions) == 0 {
		return nil, wire.NewError(wire.CodePartitionNotFound)
	}
	var pid uint32
	switch r.Partitioning.Kind {
	case wire.PartitionIDKind:
		pid = r.Partitioning.PartitionID
	case wire.PartitionBalanced:
		pid = t.balanced % uint32(len(t.partitions))
		t.balanced++
	case wire.PartitionMessagesKey:
		pid = wire.PartitionForKey(r.Partitioning.Key, uint32(len(t.partitions)))
	}
	if int(pid) >= len(t.partitions) {
		return nil, wire.NewError(wire.CodePartitionNotFound)
	}
	p := t.partitions[pid]
	b := bytes.Clone(r.Batch.Bytes())
	if s.storedBytes+uint64(len(b)) > MaxStoredBytes {
		return nil, wire.Errorf(wire.CodeTopicFull, "fake server holds at most %d bytes", MaxStoredBytes)
	}
	v, err := wire.ParseBatch(b)
	if err != nil {
		return nil, err
	}
	base := p.next
	v.Stamp(uint64(pid), base, nowUs())
	p.batches = append(p.batches, b)
	p.next += uint64(v.MessageCount())
	p.sizeBytes += uint64(len(b))
	s.storedBytes += uint64(len(b))
	return wire.SendConfirmations{{StreamID: st.rec.ID, TopicID: t.rec.ID, PartitionID: pid, BaseOffset: base}}, nil
}

func (s *Server) poll(c *conn, r *wire.PollMessages) (wire.ReplyPayload, error) {
	st, err := s.findStream(r.StreamID)
	if err != nil {
		return nil, err
	}
	t, err := findTopic(st, r.TopicID)
	if err != nil {
		return nil, err
	}
	pid := uint32(0)
	if r.Partition.Set {
		pid = r.Partition.ID
	}
	var gid uint32
	if r.Consumer.Kind == wire.ConsumerKindGroup {
		g, err := findGroup(t, r.Consumer.ID)
		if err != nil {
			return nil, err
		}
		gid = g.id
		parts, member := assignment(t, g, c.id)
		owned := false
		for _, q := range parts {
			owned = owned || q == pid
		}
		if !member || !r.Partition.Set || !owned {
			return raw(wire.AppendPollReplyPrefix(nil, wire.ResyncPartition, 0, 0)), nil
		}
	}
	if int(pid) >= len(t.partitions) {
		return nil, wire.NewError(wire.CodePartitionNotFound)
	}
	p := t.partitions[pid]
	var start uint64
	switch r.Strategy.Kind {
	case wire.PollOffset:
		start = r.Strategy.Value
	case wire.PollTimestamp:
		start = p.next
		for _, b := range p.batches {
			v, _ := wire.ParseBatch(b)
			if v.BaseTimestamp() >= r.Strategy.Value {
				start = v.BaseOffset()
				break
			}
		}
	case wire.PollFirst:
		start = 0
	case wire.PollLast:
		if p.next > uint64(r.Count) {
			start = p.next - uint64(r.Count)
		}
	case wire.PollNext:
		if off, ok := storedOffset(p, r.Consumer, gid); ok {
			start = off + 1
		}
	}
	out := []byte{}
	var n, remaining uint32 = 0, r.Count
	var last uint64
	for _, b := range p.batches {
		if remaining == 0 {
			break
		}
		v, _ := wire.ParseBatch(b)
		if v.BaseOffset()+uint64(v.LastOffsetDelta()) < start {
			continue
		}
		sl, ok := v.SliceByOffset(start, remaining)
		if !ok {
			continue
		}
		out = sl.AppendTo(out)
		n += sl.Count
		remaining -= sl.Count
		sv, _ := wire.ParseBatch(out[len(out)-sl.Len():])
		last = sv.BaseOffset() + uint64(sv.LastOffsetDelta())
	}
	if r.AutoCommit && n > 0 {
		storeOffset(p, r.Consumer, gid, last)
	}
	reply := wire.AppendPollReplyPrefix(nil, pid, current(p), n)
	return raw(append(reply, out...)), nil
}

func (s *Server) stats() *wire.Stats {
	st := &wire.Stats{ProcessID: 4242, RunTime: uint64(time.Since(s.started).Microseconds()), StartTime: uint64(s.started.UnixMicro()),
		Hostname: "fakehost", OSName: "fakeos", OSVersion: "1", KernelVersion: "1", Version: "fakeserver", ClientsCount: uint32(len(s.sortedConns())),
		TotalMemory: 1 << 30, AvailableMemory: 1 << 29, MemoryUsage: 1 << 20, ThreadsCount: 1, FreeDiskSpace: 1 << 33, TotalDiskSpace: 1 << 34}
	for _, stream := range s.streams {
		st.StreamsCount++
		for _, t := range stream.topics {
			st.TopicsCount++
			st.PartitionsCount += uint32(len(t.partitions))
			st.Segments += uint32(len(t.partitions))
			st.ConsumerGroupsCount += uint32(len(t.groups))
			for _, p := range t.partitions {
				st.MessagesCount += p.next
				st.MessagesSizeBytes += p.sizeBytes
			}
		}
	}
	return st
}

func snapshot(r *wire.GetSnapshotFile) (wire.ReplyPayload, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("fakeserver.txt")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "fake server snapshot: compression %d, types %v\n", r.Compression, r.Types)
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return wire.SnapshotFile(buf.Bytes()), nil
}
