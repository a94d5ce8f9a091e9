package metadata

import (
	"slices"

	"github.com/iggo/iggo/wire"
)

// Permissions is the wire permission set. The state stores it normalized
// (NormalizePermissions) and never mutates a stored value.
type Permissions = wire.Permissions

// AllPermissions is the root user's grant set.
func AllPermissions() *Permissions {
	return &Permissions{Global: wire.GlobalPermissions{
		ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true,
		PollMessages: true, SendMessages: true,
	}}
}

// NormalizePermissions returns a deep copy of p with streams sorted by id
// and topics sorted by id within each stream. A repeated id keeps its last
// occurrence, as a map insert would. nil stays nil. Normal form makes
// equal grant sets equal values (and equal snapshot bytes) and lets
// lookups binary-search.
func NormalizePermissions(p *Permissions) *Permissions {
	if p == nil {
		return nil
	}
	out := &Permissions{Global: p.Global}
	if len(p.Streams) == 0 {
		return out
	}
	streams := make([]wire.StreamPermissions, 0, len(p.Streams))
	for i := len(p.Streams) - 1; i >= 0; i-- {
		s := p.Streams[i]
		if slices.ContainsFunc(streams, func(o wire.StreamPermissions) bool { return o.StreamID == s.StreamID }) {
			continue
		}
		var topics []wire.TopicPermissions
		for j := len(s.Topics) - 1; j >= 0; j-- {
			t := s.Topics[j]
			if !slices.ContainsFunc(topics, func(o wire.TopicPermissions) bool { return o.TopicID == t.TopicID }) {
				topics = append(topics, t)
			}
		}
		slices.SortFunc(topics, func(a, b wire.TopicPermissions) int { return cmpU32(a.TopicID, b.TopicID) })
		s.Topics = topics
		streams = append(streams, s)
	}
	slices.SortFunc(streams, func(a, b wire.StreamPermissions) int { return cmpU32(a.StreamID, b.StreamID) })
	out.Streams = streams
	return out
}

// permissionsEqual compares two normalized permission sets.
func permissionsEqual(a, b *Permissions) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Global == b.Global && slices.EqualFunc(a.Streams, b.Streams, func(x, y wire.StreamPermissions) bool {
		return x.StreamID == y.StreamID && x.ManageStream == y.ManageStream && x.ReadStream == y.ReadStream &&
			x.ManageTopics == y.ManageTopics && x.ReadTopics == y.ReadTopics && x.PollMessages == y.PollMessages &&
			x.SendMessages == y.SendMessages && slices.Equal(x.Topics, y.Topics)
	})
}

func findStreamPerms(p *Permissions, id uint32) (wire.StreamPermissions, bool) {
	i, ok := slices.BinarySearchFunc(p.Streams, id, func(s wire.StreamPermissions, id uint32) int { return cmpU32(s.StreamID, id) })
	if !ok {
		return wire.StreamPermissions{}, false
	}
	return p.Streams[i], true
}

func findTopicPerms(s wire.StreamPermissions, id uint32) (wire.TopicPermissions, bool) {
	i, ok := slices.BinarySearchFunc(s.Topics, id, func(t wire.TopicPermissions, id uint32) int { return cmpU32(t.TopicID, id) })
	if !ok {
		return wire.TopicPermissions{}, false
	}
	return s.Topics[i], true
}

// withoutGrant returns p without its grants on stream (topic == nil) or
// on one topic of it, and whether anything was removed.
func withoutGrant(p *Permissions, stream uint32, topic *uint32) (*Permissions, bool) {
	if p == nil {
		return p, false
	}
	sp, ok := findStreamPerms(p, stream)
	if !ok {
		return p, false
	}
	if topic != nil {
		if _, ok := findTopicPerms(sp, *topic); !ok {
			return p, false
		}
	}
	np := NormalizePermissions(p)
	i := slices.IndexFunc(np.Streams, func(s wire.StreamPermissions) bool { return s.StreamID == stream })
	if topic == nil {
		np.Streams = slices.Delete(np.Streams, i, i+1)
	} else {
		np.Streams[i].Topics = slices.DeleteFunc(np.Streams[i].Topics, func(t wire.TopicPermissions) bool { return t.TopicID == *topic })
	}
	return np, true
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
// a user account are in AllowedOnUser. It reads only s, so any shard can
// call it on its current view.
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

// RootGuard is the rule that only root changes root: updating the root
// user (name, status), changing its password or permissions, or deleting
// it is Unauthorized for anyone else, whatever their permissions. Iggy 0.9
// lets a user with manage_users rename or deactivate root (and change its
// password), which can lock root out for good. Other actions pass.
func RootGuard(actor, target uint32, a Action) wire.Code {
	if target != RootUserID || actor == RootUserID {
		return OK
	}
	switch a {
	case ActionUpdateUser, ActionDeleteUser, ActionChangePassword, ActionUpdatePermissions:
		return wire.CodeUnauthorized
	}
	return OK
}

// permits applies the superset rules of one permission class (Iggy's
// permissioner): manage ⊇ read at every level, global ⊇ stream ⊇ topic,
// read_topics ⊇ poll_messages and manage_topics ⊇ send_messages.
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
	sp, hasStream := findStreamPerms(p, stream)
	tp, hasTopic := findTopicPerms(sp, topic)
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
