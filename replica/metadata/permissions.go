package metadata

import (
	"maps"
	"slices"
)

// GlobalPermissions are the server-wide grants, in wire order.
type GlobalPermissions struct {
	ManageServers bool
	ReadServers   bool
	ManageUsers   bool
	ReadUsers     bool
	ManageStreams bool
	ReadStreams   bool
	ManageTopics  bool
	ReadTopics    bool
	PollMessages  bool
	SendMessages  bool
}

// StreamPermissions are the grants on one stream, in wire order, plus the
// per-topic grants inside it.
type StreamPermissions struct {
	ManageStream bool
	ReadStream   bool
	ManageTopics bool
	ReadTopics   bool
	PollMessages bool
	SendMessages bool
	Topics       map[uint32]TopicPermissions
}

// TopicPermissions are the grants on one topic, in wire order.
type TopicPermissions struct {
	ManageTopic  bool
	ReadTopic    bool
	PollMessages bool
	SendMessages bool
}

// Permissions is a user's full grant set. A stored *Permissions is never
// mutated; changes replace it.
type Permissions struct {
	Global  GlobalPermissions
	Streams map[uint32]StreamPermissions
}

// AllPermissions is the root user's grant set.
func AllPermissions() *Permissions {
	return &Permissions{Global: GlobalPermissions{
		ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true,
		PollMessages: true, SendMessages: true,
	}}
}

// StreamIDs returns the stream ids with grants, ascending.
func (p *Permissions) StreamIDs() []uint32 {
	if p == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(p.Streams))
}

// TopicIDs returns the topic ids with grants, ascending.
func (sp StreamPermissions) TopicIDs() []uint32 {
	return slices.Sorted(maps.Keys(sp.Topics))
}

// Clone deep-copies the permissions.
func (p *Permissions) Clone() *Permissions {
	if p == nil {
		return nil
	}
	c := &Permissions{Global: p.Global}
	if p.Streams != nil {
		c.Streams = make(map[uint32]StreamPermissions, len(p.Streams))
		for id, sp := range p.Streams {
			if sp.Topics != nil {
				sp.Topics = maps.Clone(sp.Topics)
			}
			c.Streams[id] = sp
		}
	}
	return c
}

// Equal reports deep equality.
func (p *Permissions) Equal(q *Permissions) bool {
	if p == nil || q == nil {
		return p == q
	}
	if p.Global != q.Global || len(p.Streams) != len(q.Streams) {
		return false
	}
	for id, sp := range p.Streams {
		sq, ok := q.Streams[id]
		if !ok || !streamPermsEqual(sp, sq) {
			return false
		}
	}
	return true
}

func streamPermsEqual(a, b StreamPermissions) bool {
	if a.ManageStream != b.ManageStream || a.ReadStream != b.ReadStream || a.ManageTopics != b.ManageTopics ||
		a.ReadTopics != b.ReadTopics || a.PollMessages != b.PollMessages || a.SendMessages != b.SendMessages {
		return false
	}
	return maps.Equal(a.Topics, b.Topics)
}

// Action is something a user asks to do; Allowed decides it.
type Action uint8

// Actions, one per client command that needs a decision.
const (
	ActionGetStats Action = iota + 1
	ActionGetSnapshot
	ActionGetClients
	ActionGetClient
	ActionGetMe
	ActionGetClusterMetadata
	ActionDescribeOptions
	ActionGetUser
	ActionGetUsers
	ActionCreateUser
	ActionUpdateUser
	ActionDeleteUser
	ActionUpdatePermissions
	ActionChangePassword
	ActionGetPersonalAccessTokens
	ActionCreatePersonalAccessToken
	ActionDeletePersonalAccessToken
	ActionGetStream
	ActionGetStreams
	ActionCreateStream
	ActionUpdateStream
	ActionDeleteStream
	ActionPurgeStream
	ActionGetTopic
	ActionGetTopics
	ActionCreateTopic
	ActionUpdateTopic
	ActionDeleteTopic
	ActionPurgeTopic
	ActionCreatePartitions
	ActionDeletePartitions
	ActionDeleteSegments
	ActionGetConsumerGroup
	ActionGetConsumerGroups
	ActionCreateConsumerGroup
	ActionDeleteConsumerGroup
	ActionJoinConsumerGroup
	ActionLeaveConsumerGroup
	ActionSyncConsumerGroup
	ActionPollMessages
	ActionSendMessages
	ActionGetConsumerOffset
	ActionStoreConsumerOffset
	ActionDeleteConsumerOffset
	actionCount
)

// rule is the permission class an action needs.
type rule uint8

const (
	ruleAnyUser      rule = iota + 1 // any active user
	ruleReadServers                  // manage_servers ⊇ read_servers
	ruleReadUsers                    // manage_users ⊇ read_users
	ruleManageUsers                  // manage_users
	ruleReadStreams                  // global read/manage streams
	ruleReadStream                   // + stream read/manage
	ruleCreateStream                 // global manage_streams
	ruleManageStream                 // global manage_streams, stream manage_stream
	ruleReadTopics                   // read on the stream's topics
	ruleReadTopic                    // + topic read/manage
	ruleCreateTopic                  // manage topics in the stream
	ruleManageTopic                  // + topic manage
	rulePoll                         // read_topics ⊇ poll
	ruleSend                         // manage_topics ⊇ send
)

var actionRules = [actionCount]rule{
	ActionGetStats:                  ruleReadServers,
	ActionGetSnapshot:               ruleReadServers,
	ActionGetClients:                ruleReadServers,
	ActionGetClient:                 ruleReadServers,
	ActionGetMe:                     ruleAnyUser,
	ActionGetClusterMetadata:        ruleAnyUser,
	ActionDescribeOptions:           ruleAnyUser,
	ActionGetUser:                   ruleReadUsers,
	ActionGetUsers:                  ruleReadUsers,
	ActionCreateUser:                ruleManageUsers,
	ActionUpdateUser:                ruleManageUsers,
	ActionDeleteUser:                ruleManageUsers,
	ActionUpdatePermissions:         ruleManageUsers,
	ActionChangePassword:            ruleManageUsers,
	ActionGetPersonalAccessTokens:   ruleAnyUser,
	ActionCreatePersonalAccessToken: ruleAnyUser,
	ActionDeletePersonalAccessToken: ruleAnyUser,
	ActionGetStream:                 ruleReadStream,
	ActionGetStreams:                ruleReadStreams,
	ActionCreateStream:              ruleCreateStream,
	ActionUpdateStream:              ruleManageStream,
	ActionDeleteStream:              ruleManageStream,
	ActionPurgeStream:               ruleManageStream,
	ActionGetTopic:                  ruleReadTopic,
	ActionGetTopics:                 ruleReadTopics,
	ActionCreateTopic:               ruleCreateTopic,
	ActionUpdateTopic:               ruleManageTopic,
	ActionDeleteTopic:               ruleManageTopic,
	ActionPurgeTopic:                ruleManageTopic,
	ActionCreatePartitions:          ruleManageTopic,
	ActionDeletePartitions:          ruleManageTopic,
	ActionDeleteSegments:            ruleManageTopic,
	ActionGetConsumerGroup:          ruleReadTopic,
	ActionGetConsumerGroups:         ruleReadTopic,
	ActionCreateConsumerGroup:       ruleReadTopic,
	ActionDeleteConsumerGroup:       ruleReadTopic,
	ActionJoinConsumerGroup:         ruleReadTopic,
	ActionLeaveConsumerGroup:        ruleReadTopic,
	ActionSyncConsumerGroup:         ruleReadTopic,
	ActionPollMessages:              rulePoll,
	ActionSendMessages:              ruleSend,
	ActionGetConsumerOffset:         rulePoll,
	ActionStoreConsumerOffset:       rulePoll,
	ActionDeleteConsumerOffset:      rulePoll,
}

// Allowed decides whether user may perform a on (stream, topic), which
// are resolved numeric ids (ignored by actions that are not scoped to
// them). Unknown and inactive users are refused; the root user (id 0) is
// allowed everything while active. Self-service exceptions for actions on
// a user account are in AllowedOnUser.
func (s *State) Allowed(userID uint32, a Action, stream, topic uint32) bool {
	u := s.User(userID)
	if u == nil || u.Status != UserActive || a == 0 || a >= actionCount {
		return false
	}
	if userID == RootUserID {
		return true
	}
	return permits(u.Permissions, actionRules[a], stream, topic)
}

// AllowedOnUser decides user-account actions against target, applying the
// self-service rules: any active user may read its own account, change its
// own password and list, create and delete its own personal access tokens.
// Updating its own account (name, status) or permissions still needs
// manage_users, as in Iggy, so a user cannot reactivate or promote itself.
func (s *State) AllowedOnUser(actor uint32, a Action, target uint32) bool {
	u := s.User(actor)
	if u == nil || u.Status != UserActive {
		return false
	}
	if actor == target {
		switch a {
		case ActionGetUser, ActionChangePassword, ActionGetPersonalAccessTokens,
			ActionCreatePersonalAccessToken, ActionDeletePersonalAccessToken:
			return true
		}
	}
	return s.Allowed(actor, a, 0, 0)
}

// permits applies the superset rules of one permission class.
func permits(p *Permissions, r rule, stream, topic uint32) bool {
	if r == ruleAnyUser {
		return true
	}
	if p == nil {
		return false
	}
	g := p.Global
	switch r {
	case ruleReadServers:
		return g.ManageServers || g.ReadServers
	case ruleReadUsers:
		return g.ManageUsers || g.ReadUsers
	case ruleManageUsers:
		return g.ManageUsers
	case ruleReadStreams:
		return g.ManageStreams || g.ReadStreams
	case ruleCreateStream:
		return g.ManageStreams
	}
	sp, hasStream := p.Streams[stream]
	tp, hasTopic := sp.Topics[topic]
	switch r {
	case ruleReadStream:
		return g.ManageStreams || g.ReadStreams || (hasStream && (sp.ManageStream || sp.ReadStream))
	case ruleManageStream:
		return g.ManageStreams || (hasStream && sp.ManageStream)
	case ruleReadTopics:
		return g.ManageStreams || g.ReadStreams || g.ManageTopics || g.ReadTopics ||
			(hasStream && (sp.ManageStream || sp.ReadStream || sp.ManageTopics || sp.ReadTopics))
	case ruleReadTopic:
		return permits(p, ruleReadTopics, stream, topic) || (hasTopic && (tp.ManageTopic || tp.ReadTopic))
	case ruleCreateTopic:
		return g.ManageStreams || g.ManageTopics || (hasStream && (sp.ManageStream || sp.ManageTopics))
	case ruleManageTopic:
		return permits(p, ruleCreateTopic, stream, topic) || (hasTopic && tp.ManageTopic)
	case rulePoll:
		return g.PollMessages || permits(p, ruleReadTopics, stream, topic) ||
			(hasStream && sp.PollMessages) || (hasTopic && (tp.ManageTopic || tp.ReadTopic || tp.PollMessages))
	case ruleSend:
		return g.SendMessages || permits(p, ruleCreateTopic, stream, topic) ||
			(hasStream && sp.SendMessages) || (hasTopic && (tp.ManageTopic || tp.SendMessages))
	}
	return false
}
