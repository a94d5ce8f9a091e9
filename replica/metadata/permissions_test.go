package metadata

import (
	"fmt"
	"slices"
	"testing"

	"github.com/iggo/iggo/wire"
)

// One grant bit, named as in Iggy: level g (global), s (stream), t (topic).
type grant struct {
	level byte
	name  string
}

var allGrants = []grant{
	{'g', "manage_servers"}, {'g', "read_servers"}, {'g', "manage_users"}, {'g', "read_users"},
	{'g', "manage_streams"}, {'g', "read_streams"}, {'g', "manage_topics"}, {'g', "read_topics"},
	{'g', "poll_messages"}, {'g', "send_messages"},
	{'s', "manage_stream"}, {'s', "read_stream"}, {'s', "manage_topics"}, {'s', "read_topics"},
	{'s', "poll_messages"}, {'s', "send_messages"},
	{'t', "manage_topic"}, {'t', "read_topic"}, {'t', "poll_messages"}, {'t', "send_messages"},
}

// permsWith builds permissions holding exactly one grant on stream 1 /
// topic 2 (or globally).
func permsWith(gr grant) *Permissions {
	p := &Permissions{}
	var sp wire.StreamPermissions
	var tp wire.TopicPermissions
	var set map[string]*bool
	switch gr.level {
	case 'g':
		g := &p.Global
		set = map[string]*bool{"manage_servers": &g.ManageServers, "read_servers": &g.ReadServers,
			"manage_users": &g.ManageUsers, "read_users": &g.ReadUsers, "manage_streams": &g.ManageStreams,
			"read_streams": &g.ReadStreams, "manage_topics": &g.ManageTopics, "read_topics": &g.ReadTopics,
			"poll_messages": &g.PollMessages, "send_messages": &g.SendMessages}
	case 's':
		set = map[string]*bool{"manage_stream": &sp.ManageStream, "read_stream": &sp.ReadStream,
			"manage_topics": &sp.ManageTopics, "read_topics": &sp.ReadTopics,
			"poll_messages": &sp.PollMessages, "send_messages": &sp.SendMessages}
	case 't':
		set = map[string]*bool{"manage_topic": &tp.ManageTopic, "read_topic": &tp.ReadTopic,
			"poll_messages": &tp.PollMessages, "send_messages": &tp.SendMessages}
	}
	*set[gr.name] = true
	switch gr.level {
	case 's':
		sp.StreamID = 1
		p.Streams = []wire.StreamPermissions{sp}
	case 't':
		tp.TopicID = 2
		p.Streams = []wire.StreamPermissions{{StreamID: 1, Topics: []wire.TopicPermissions{tp}}}
	}
	return p
}

func grants(spec ...string) []grant {
	var out []grant
	for _, s := range spec {
		out = append(out, grant{s[0], s[2:]})
	}
	return out
}

// The expected matrix, written out from Iggy's permissioner rules: which
// single grants allow each action on (stream 1, topic 2).
var permissionMatrix = map[Action][]grant{
	ActionGetStats:                  grants("g:manage_servers", "g:read_servers"),
	ActionGetSnapshot:               grants("g:manage_servers", "g:read_servers"),
	ActionGetClients:                grants("g:manage_servers", "g:read_servers"),
	ActionGetClient:                 grants("g:manage_servers", "g:read_servers"),
	ActionGetUser:                   grants("g:manage_users", "g:read_users"),
	ActionGetUsers:                  grants("g:manage_users", "g:read_users"),
	ActionCreateUser:                grants("g:manage_users"),
	ActionUpdateUser:                grants("g:manage_users"),
	ActionDeleteUser:                grants("g:manage_users"),
	ActionUpdatePermissions:         grants("g:manage_users"),
	ActionChangePassword:            grants("g:manage_users"),
	ActionGetStreams:                grants("g:manage_streams", "g:read_streams"),
	ActionGetStream:                 grants("g:manage_streams", "g:read_streams", "s:manage_stream", "s:read_stream"),
	ActionCreateStream:              grants("g:manage_streams"),
	ActionUpdateStream:              grants("g:manage_streams", "s:manage_stream"),
	ActionDeleteStream:              grants("g:manage_streams", "s:manage_stream"),
	ActionPurgeStream:               grants("g:manage_streams", "s:manage_stream"),
	ActionGetTopics:                 grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics"),
	ActionGetTopic:                  grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionCreateTopic:               grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics"),
	ActionUpdateTopic:               grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionDeleteTopic:               grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionPurgeTopic:                grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionCreatePartitions:          grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionDeletePartitions:          grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionDeleteSegments:            grants("g:manage_streams", "g:manage_topics", "s:manage_stream", "s:manage_topics", "t:manage_topic"),
	ActionGetConsumerGroup:          grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionGetConsumerGroups:         grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionCreateConsumerGroup:       grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionDeleteConsumerGroup:       grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionJoinConsumerGroup:         grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionLeaveConsumerGroup:        grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionSyncConsumerGroup:         grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "t:manage_topic", "t:read_topic"),
	ActionPollMessages:              grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "g:poll_messages", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "s:poll_messages", "t:manage_topic", "t:read_topic", "t:poll_messages"),
	ActionGetConsumerOffset:         grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "g:poll_messages", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "s:poll_messages", "t:manage_topic", "t:read_topic", "t:poll_messages"),
	ActionStoreConsumerOffset:       grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "g:poll_messages", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "s:poll_messages", "t:manage_topic", "t:read_topic", "t:poll_messages"),
	ActionDeleteConsumerOffset:      grants("g:manage_streams", "g:read_streams", "g:manage_topics", "g:read_topics", "g:poll_messages", "s:manage_stream", "s:read_stream", "s:manage_topics", "s:read_topics", "s:poll_messages", "t:manage_topic", "t:read_topic", "t:poll_messages"),
	ActionSendMessages:              grants("g:manage_streams", "g:manage_topics", "g:send_messages", "s:manage_stream", "s:manage_topics", "s:send_messages", "t:manage_topic", "t:send_messages"),
	ActionGetMe:                     nil, // any active user
	ActionGetClusterMetadata:        nil,
	ActionDescribeOptions:           nil,
	ActionGetPersonalAccessTokens:   nil,
	ActionCreatePersonalAccessToken: nil,
	ActionDeletePersonalAccessToken: nil,
}

var anyUserActions = []Action{ActionGetMe, ActionGetClusterMetadata, ActionDescribeOptions,
	ActionGetPersonalAccessTokens, ActionCreatePersonalAccessToken, ActionDeletePersonalAccessToken}

func TestPermissionMatrix(t *testing.T) {
	if len(permissionMatrix) != int(actionCount)-1 {
		t.Fatalf("matrix covers %d actions, there are %d", len(permissionMatrix), actionCount-1)
	}
	m := newMachine(t)
	users := map[grant]uint32{}
	for _, gr := range allGrants {
		users[gr] = m.user(fmt.Sprintf("u-%c-%s", gr.level, gr.name), permsWith(gr)).ID
	}
	none := m.user("no-grants", nil).ID
	s := m.s
	for a := Action(1); a < actionCount; a++ {
		want := permissionMatrix[a]
		anyUser := slices.Contains(anyUserActions, a)
		for _, gr := range allGrants {
			id := users[gr]
			exp := anyUser || slices.Contains(want, gr)
			if got := s.Allowed(id, a, 1, 2); got != exp {
				t.Errorf("action %d with %c:%s on 1/2: got %v, want %v", a, gr.level, gr.name, got, exp)
			}
			// Stream and topic grants are scoped: the same grant says
			// nothing about stream 3 or topic 4 of stream 1.
			if gr.level != 'g' && !anyUser {
				if s.Allowed(id, a, 3, 2) {
					t.Errorf("action %d with %c:%s leaks to stream 3", a, gr.level, gr.name)
				}
				if gr.level == 't' && s.Allowed(id, a, 1, 4) {
					t.Errorf("action %d with t:%s leaks to topic 4", a, gr.name)
				}
			}
		}
		if got := s.Allowed(none, a, 1, 2); got != anyUser {
			t.Errorf("action %d for a user without grants: %v", a, got)
		}
		if !s.Allowed(RootUserID, a, 1, 2) {
			t.Errorf("root denied action %d", a)
		}
		if s.Allowed(12345, a, 1, 2) {
			t.Errorf("unknown user allowed action %d", a)
		}
	}
	if s.Allowed(RootUserID, 0, 0, 0) || s.Allowed(RootUserID, actionCount, 0, 0) {
		t.Error("invalid actions allowed")
	}
}

func TestSelfService(t *testing.T) {
	m := newMachine(t)
	a := m.user("alice", nil).ID
	b := m.user("bob", nil).ID
	admin := m.user("admin", &Permissions{Global: wire.GlobalPermissions{ManageUsers: true}}).ID
	for _, act := range []Action{ActionGetUser, ActionChangePassword, ActionGetPersonalAccessTokens, ActionCreatePersonalAccessToken, ActionDeletePersonalAccessToken} {
		if !m.s.AllowedOnUser(a, act, a) {
			t.Errorf("self-service action %d denied", act)
		}
	}
	for _, act := range []Action{ActionGetUser, ActionChangePassword, ActionUpdateUser, ActionUpdatePermissions, ActionDeleteUser} {
		if m.s.AllowedOnUser(a, act, b) {
			t.Errorf("action %d on another user allowed without grants", act)
		}
		if !m.s.AllowedOnUser(admin, act, b) {
			t.Errorf("manage_users denied action %d", act)
		}
	}
	for _, act := range []Action{ActionUpdateUser, ActionUpdatePermissions, ActionDeleteUser} {
		if m.s.AllowedOnUser(a, act, a) {
			t.Errorf("action %d on self allowed without manage_users", act)
		}
	}
	inactive := UserInactive
	m.must(UpdateUser{User: NumericID(a), Status: &inactive})
	if m.s.AllowedOnUser(a, ActionGetUser, a) || m.s.Allowed(a, ActionGetMe, 0, 0) {
		t.Error("inactive user allowed")
	}
}

func TestNormalizePermissions(t *testing.T) {
	p := &Permissions{Global: wire.GlobalPermissions{ReadUsers: true}, Streams: []wire.StreamPermissions{
		{StreamID: 9, ReadStream: true},
		{StreamID: 5, ReadStream: true, Topics: []wire.TopicPermissions{{TopicID: 3, ReadTopic: true}, {TopicID: 1, PollMessages: true}, {TopicID: 3, SendMessages: true}}},
		{StreamID: 9, ManageStream: true},
	}}
	n := NormalizePermissions(p)
	want := &Permissions{Global: wire.GlobalPermissions{ReadUsers: true}, Streams: []wire.StreamPermissions{
		{StreamID: 5, ReadStream: true, Topics: []wire.TopicPermissions{{TopicID: 1, PollMessages: true}, {TopicID: 3, SendMessages: true}}},
		{StreamID: 9, ManageStream: true},
	}}
	if !permissionsEqual(n, want) {
		t.Fatalf("normalized %+v", n)
	}
	n.Streams[0].Topics[0].ReadTopic = true
	if p.Streams[1].Topics[1].ReadTopic {
		t.Fatal("normal form shares slices with its input")
	}
	if NormalizePermissions(nil) != nil || !permissionsEqual(nil, nil) || permissionsEqual(nil, n) {
		t.Fatal("nil handling")
	}
	// Lookups use the normal form: a duplicate listed later wins.
	m := newMachine(t)
	u := m.user("dup", p).ID
	if !m.s.Allowed(u, ActionDeleteStream, 9, 0) || !m.s.Allowed(u, ActionSendMessages, 5, 3) || !m.s.Allowed(u, ActionGetTopic, 5, 3) {
		t.Fatal("grants of the normalized set not honoured")
	}
}
