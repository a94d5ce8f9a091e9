// Package audit writes the audit trail of client actions: every committed
// change of users, permissions, personal access tokens, streams, topics,
// partitions and consumer groups, every such change the state machine
// refused, and every permission denial, as INFO lines of the logger the
// node gives it (replica.audit) on the node that served the client. Each line says who (user
// name and id; the connection's client id and address come with the
// connection's logger), what (the message and, for denials, Iggy's command
// name such as "stream.delete") and on which resource (ids and names
// resolved against the metadata the request was decided on). Secrets are
// never logged: no password, hash or token, only a token's name.
//
// A committed change is always written: each one is a replicated,
// fdatasync'ed metadata op, so the metadata group's own throughput bounds
// how fast a client can cause them, and an audit trail that dropped some
// would be worthless. Denials and refused changes cost a looping client
// next to nothing, so they are budgeted: each connection has its own
// budget (Config.ClientPerSecond lines per second, bursts of as many)
// inside a node-wide one (Config.PerSecond). A line over budget is
// dropped and counted; the next line the connection writes carries the
// counts as "suppressed_client" (this connection's) and "suppressed_node"
// (every connection's, over the node-wide budget).
package audit

import (
	"encoding/binary"
	"reflect"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

// Config bounds the audit lines.
type Config struct {
	// PerSecond is the node-wide budget (logging.audit_lines_per_second).
	PerSecond int
	// ClientPerSecond is one connection's budget
	// (logging.audit_client_lines_per_second).
	ClientPerSecond int
}

// Log is a node's audit trail.
type Log struct {
	cfg     Config
	log     *zap.Logger
	node    *rate.Limiter
	dropped atomic.Uint64
	now     func() time.Time // the budgets' clock (tests fix it)
}

// New returns the audit trail of a node, written to log (the node names
// it replica.audit); budgets below 1 are raised to 1.
func New(cfg Config, log *zap.Logger) *Log {
	cfg.PerSecond, cfg.ClientPerSecond = max(1, cfg.PerSecond), max(1, cfg.ClientPerSecond)
	return &Log{cfg: cfg, log: log, node: rate.NewLimiter(rate.Limit(cfg.PerSecond), cfg.PerSecond), now: time.Now}
}

// Client is one connection's audit trail. Its methods run on the
// connection's goroutine only.
type Client struct {
	a       *Log
	log     *zap.Logger
	lim     *rate.Limiter
	dropped uint64
}

// Client returns the trail of a connection; conn (its client id and
// address) goes on every line.
func (a *Log) Client(conn ...zap.Field) *Client {
	return &Client{a: a, log: a.log.With(conn...), lim: rate.NewLimiter(rate.Limit(a.cfg.ClientPerSecond), a.cfg.ClientPerSecond)}
}

// allow spends one line of both budgets.
func (c *Client) allow() bool {
	now := c.a.now()
	if !c.lim.AllowN(now, 1) {
		c.dropped++
		return false
	}
	if !c.a.node.AllowN(now, 1) {
		c.a.dropped.Add(1)
		return false
	}
	return true
}

func (c *Client) write(msg string, fields []zap.Field) {
	if c.dropped > 0 {
		fields = append(fields, zap.Uint64("suppressed_client", c.dropped))
		c.dropped = 0
	}
	if n := c.a.dropped.Swap(0); n > 0 {
		fields = append(fields, zap.Uint64("suppressed_node", n))
	}
	c.log.Info(msg, fields...)
}

func who(view *metadata.State, user uint32) []zap.Field {
	f := []zap.Field{zap.Uint32("user_id", user)}
	if u := view.User(user); u != nil {
		f = append(f, zap.String("user", u.Username))
	}
	return f
}

// Changed records a committed change (never dropped, see the package
// doc). view is the metadata the request
// was admitted on (it still names what a delete removed); record is the
// reply payload of a create (the created record, whose first u32 is its
// id), else nil. Commands that are not audited changes (consumer-group
// joins and leaves) are ignored.
func (c *Client) Changed(view *metadata.State, user uint32, cmd metadata.Command, record []byte) {
	msg, fields := describe(view, cmd)
	if msg == "" {
		return
	}
	if len(record) >= 4 {
		if k := createdKey(cmd); k != "" {
			fields = append(fields, zap.Uint32(k, binary.LittleEndian.Uint32(record)))
		}
	}
	c.write(msg, append(who(view, user), fields...))
}

// Refused records a change the metadata state machine refused with code
// (a name taken, an object missing; a permission refused at apply time is
// a denial and reported by Denied).
func (c *Client) Refused(view *metadata.State, user uint32, cmd metadata.Command, code wire.Code) {
	msg, fields := describe(view, cmd)
	if msg == "" || !c.allow() {
		return
	}
	fields = append(fields, zap.Stringer("code", code))
	c.write(msg+" refused", append(who(view, user), fields...))
}

// Denied records a permission denial (Iggy code 41, Unauthorized) of
// command. decode, called only when the line is within budget, returns the
// decoded request (or nil): its StreamID, TopicID, GroupID, UserID and
// partition fields name the resource.
func (c *Client) Denied(view *metadata.State, user uint32, command wire.CommandCode, decode func() any) {
	if !c.allow() {
		return
	}
	fields := append(who(view, user), zap.Stringer("command", command))
	if decode != nil {
		fields = append(fields, resourceOf(view, decode())...)
	}
	c.write("permission denied", fields)
}

// createdKey is the field that names the id of what cmd created.
func createdKey(cmd metadata.Command) string {
	switch cmd.(type) {
	case metadata.CreateStream:
		return "stream_id"
	case metadata.CreateTopic:
		return "topic_id"
	case metadata.CreateConsumerGroup:
		return "group_id"
	case metadata.CreateUser:
		return "target_user_id"
	}
	return ""
}

// stream, topic, group and target name a resource by id and name when the
// view resolves it, else by the identifier the client sent.
func stream(view *metadata.State, id wire.Identifier) []zap.Field {
	if st := view.ResolveStream(id); st != nil {
		return []zap.Field{zap.Uint32("stream_id", st.ID), zap.String("stream", st.Name)}
	}
	return []zap.Field{zap.Stringer("stream", id)}
}

func topic(view *metadata.State, sid, tid wire.Identifier) []zap.Field {
	st, tp, _ := view.ResolveTopic(sid, tid)
	if tp == nil {
		f := stream(view, sid)
		if st != nil {
			f = []zap.Field{zap.Uint32("stream_id", st.ID), zap.String("stream", st.Name)}
		}
		return append(f, zap.Stringer("topic", tid))
	}
	return []zap.Field{zap.Uint32("stream_id", st.ID), zap.String("stream", st.Name),
		zap.Uint32("topic_id", tp.ID), zap.String("topic", tp.Name)}
}

func group(view *metadata.State, sid, tid, gid wire.Identifier) []zap.Field {
	f := topic(view, sid, tid)
	if _, g, _ := view.ResolveGroup(sid, tid, gid); g != nil {
		return append(f, zap.Uint32("group_id", g.ID), zap.String("group", g.Name))
	}
	return append(f, zap.Stringer("group", gid))
}

func target(view *metadata.State, id wire.Identifier) []zap.Field {
	if u := view.ResolveUser(id); u != nil {
		return []zap.Field{zap.Uint32("target_user_id", u.ID), zap.String("target_user", u.Username)}
	}
	return []zap.Field{zap.Stringer("target_user", id)}
}

var statusNames = map[metadata.UserStatus]string{metadata.UserActive: "active", metadata.UserInactive: "inactive"}

func status(s metadata.UserStatus) zap.Field {
	if n, ok := statusNames[s]; ok {
		return zap.String("status", n)
	}
	return zap.Uint8("status", uint8(s))
}

// describe is the message and resource fields of an audited change ("" for
// a command that is not one).
func describe(view *metadata.State, cmd metadata.Command) (string, []zap.Field) {
	switch c := cmd.(type) {
	case metadata.CreateStream:
		return "stream created", []zap.Field{zap.String("stream", c.Name)}
	case metadata.UpdateStream:
		return "stream updated", append(stream(view, c.Stream), zap.String("name", c.Name))
	case metadata.DeleteStream:
		return "stream deleted", stream(view, c.Stream)
	case metadata.PurgeStream:
		return "stream purged", stream(view, c.Stream)
	case metadata.CreateTopic:
		return "topic created", append(stream(view, c.Stream), zap.String("topic", c.Name), zap.Uint32("partitions", c.PartitionsCount))
	case metadata.UpdateTopic:
		return "topic updated", append(topic(view, c.Stream, c.Topic), zap.String("name", c.Name))
	case metadata.DeleteTopic:
		return "topic deleted", topic(view, c.Stream, c.Topic)
	case metadata.PurgeTopic:
		return "topic purged", topic(view, c.Stream, c.Topic)
	case metadata.CreatePartitions:
		return "partitions created", append(topic(view, c.Stream, c.Topic), zap.Uint32("count", c.Count))
	case metadata.DeletePartitions:
		return "partitions deleted", append(topic(view, c.Stream, c.Topic), zap.Uint32("count", c.Count))
	case metadata.CreateConsumerGroup:
		return "consumer group created", append(topic(view, c.Stream, c.Topic), zap.String("group", c.Name))
	case metadata.DeleteConsumerGroup:
		return "consumer group deleted", group(view, c.Stream, c.Topic, c.Group)
	case metadata.CreateUser:
		return "user created", []zap.Field{zap.String("target_user", c.Username), status(c.Status),
			zap.Bool("permissions", c.Permissions != nil)}
	case metadata.UpdateUser:
		f := target(view, c.User)
		if c.Username != nil {
			f = append(f, zap.String("username", *c.Username))
		}
		if c.Status != nil {
			f = append(f, status(*c.Status))
		}
		return "user updated", f
	case metadata.DeleteUser:
		return "user deleted", target(view, c.User)
	case metadata.ChangePassword:
		return "password changed", target(view, c.User)
	case metadata.UpdatePermissions:
		return "permissions updated", append(target(view, c.User), permissions(c.Permissions)...)
	case metadata.CreatePersonalAccessToken:
		return "personal access token created", []zap.Field{zap.String("token", c.Name), zap.Uint64("expiry_us", c.Expiry)}
	case metadata.DeletePersonalAccessToken:
		return "personal access token deleted", []zap.Field{zap.String("token", c.Name)}
	}
	return "", nil
}

// permissions summarises a grant: the global flags that are set and how
// many streams carry their own.
func permissions(p *metadata.Permissions) []zap.Field {
	if p == nil {
		return []zap.Field{zap.Strings("global", nil), zap.Int("streams", 0)}
	}
	g := p.Global
	var set []string
	for _, f := range []struct {
		on   bool
		name string
	}{{g.ManageServers, "manage_servers"}, {g.ReadServers, "read_servers"}, {g.ManageUsers, "manage_users"},
		{g.ReadUsers, "read_users"}, {g.ManageStreams, "manage_streams"}, {g.ReadStreams, "read_streams"},
		{g.ManageTopics, "manage_topics"}, {g.ReadTopics, "read_topics"}, {g.PollMessages, "poll_messages"},
		{g.SendMessages, "send_messages"}} {
		if f.on {
			set = append(set, f.name)
		}
	}
	return []zap.Field{zap.Strings("global", set), zap.Int("streams", len(p.Streams))}
}

var identifierType = reflect.TypeFor[wire.Identifier]()

// resourceOf names the resource of a decoded request from its identifier
// fields (StreamID, TopicID, GroupID, UserID) and its partition.
func resourceOf(view *metadata.State, req any) []zap.Field {
	v := reflect.ValueOf(req)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	ids := map[string]wire.Identifier{}
	var fields []zap.Field
	for _, name := range []string{"StreamID", "TopicID", "GroupID", "UserID"} {
		if f := v.FieldByName(name); f.IsValid() && f.Type() == identifierType {
			ids[name] = f.Interface().(wire.Identifier)
		}
	}
	sid, hasS := ids["StreamID"]
	tid, hasT := ids["TopicID"]
	gid, hasG := ids["GroupID"]
	switch {
	case hasS && hasT && hasG:
		fields = group(view, sid, tid, gid)
	case hasS && hasT:
		fields = topic(view, sid, tid)
	case hasS:
		fields = stream(view, sid)
	}
	if uid, ok := ids["UserID"]; ok {
		fields = append(fields, target(view, uid)...)
	}
	switch p := v.FieldByName("PartitionID"); {
	case p.IsValid() && p.Kind() == reflect.Uint32:
		fields = append(fields, zap.Uint64("partition_id", p.Uint()))
	default:
		if op := v.FieldByName("Partition"); op.IsValid() && op.Type() == reflect.TypeFor[wire.OptionalPartition]() {
			if part := op.Interface().(wire.OptionalPartition); part.Set {
				fields = append(fields, zap.Uint32("partition_id", part.ID))
			}
		}
	}
	return fields
}
