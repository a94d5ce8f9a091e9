package metadata

import (
	"github.com/iggo/iggo/wire"
)

// AdmitConfig is the node configuration admission needs.
type AdmitConfig struct {
	// TopicDefaults are stamped into CreateTopic and UpdateTopic.
	TopicDefaults TopicDefaults
	// Argon2 are the cost parameters for new password hashes.
	Argon2 Argon2Params
	// Node and Boot are stamped into JoinConsumerGroup: the replica id of
	// the node admitting it (0 on a single node) and the node's
	// incarnation (its start, µs since the Unix epoch).
	Node uint8
	Boot uint64
	// PartitionsMax is this node's cap on partitions across all topics (0:
	// none): metadata.partitions_max, lowered to what the node's descriptor
	// budget can hold. It is decided here, on the admitting node, and
	// stamped into CreateTopic and CreatePartitions, so every replica
	// checks the same cap against the same replicated count; no replica
	// consults its own descriptor limit while applying.
	PartitionsMax uint32
}

// DefaultAdmitConfig returns Iggy's defaults.
func DefaultAdmitConfig() AdmitConfig {
	return AdmitConfig{TopicDefaults: DefaultTopicDefaults(), Argon2: DefaultArgon2Params()}
}

// Admitted is an accepted client request ready for replication.
type Admitted struct {
	Command Command
	// Token is the raw personal access token minted for a
	// CreatePersonalAccessToken. Only its hash is replicated; the node puts
	// the token in the reply it sends after the commit and nowhere else.
	Token string
}

// Admit turns a decoded client request for a replicated metadata operation
// into the command to replicate, on the connection's shard before the
// request reaches the metadata primary. It refuses, with the code for the
// reply's status field, what fails without consensus: permission
// (Unauthorized, decided on s, and decided again in Apply), the options
// catalog (4041/4042/1019), partition counts (TooManyPartitions), password
// bounds (InvalidPassword) and the token cap. It stamps what Apply must not
// compute itself: password hashes (Argon2id, deliberately slow — keep this
// off shard 0), the verified current password hash, the token hash, the
// topic defaults and a joining member's node and boot.
//
// Conditions that depend on the state at commit time (names taken, objects
// missing) are left to Apply, which rejects them deterministically.
// userID is the session's user. It returns CodeInvalidCommand for a
// request that is not a replicated metadata command.
func Admit(s *State, userID uint32, req wire.Request, cfg AdmitConfig) (Admitted, wire.Code) {
	u := s.User(userID)
	if u == nil || u.Status != UserActive {
		return Admitted{}, wire.CodeUnauthorized
	}
	allow := func(a Action, stream, topic uint32) wire.Code {
		if s.Allowed(userID, a, stream, topic) {
			return OK
		}
		return wire.CodeUnauthorized
	}
	onStream := func(a Action, id Identifier) wire.Code {
		if st := s.ResolveStream(id); st != nil {
			return allow(a, st.ID, 0)
		}
		return OK
	}
	onTopic := func(a Action, sid, tid Identifier) wire.Code {
		if st, tp, code := s.ResolveTopic(sid, tid); code == OK {
			return allow(a, st.ID, tp.ID)
		}
		return OK
	}
	onUser := func(a Action, id Identifier) wire.Code {
		if target := s.ResolveUser(id); target != nil {
			if !s.AllowedOnUser(userID, a, target.ID) {
				return wire.CodeUnauthorized
			}
			return RootGuard(userID, target.ID, a)
		}
		return allow(a, 0, 0)
	}
	// The node-wide partition cap, on the view admission sees; Apply
	// checks it again against the committed count (concurrent creates
	// admitted against the same view cannot overshoot it together).
	fits := func(n uint32) wire.Code { return s.PartitionsFit(n, cfg.PartitionsMax) }
	perRequest := func(n uint32, zeroAllowed bool) wire.Code {
		if n > s.limits.MaxPartitionsPerRequest || (n == 0 && !zeroAllowed) {
			return wire.CodeTooManyPartitions
		}
		return OK
	}
	first := func(codes ...wire.Code) wire.Code {
		for _, c := range codes {
			if c != OK {
				return c
			}
		}
		return OK
	}
	ok := func(c Command, code wire.Code) (Admitted, wire.Code) {
		if code != OK {
			return Admitted{}, code
		}
		return Admitted{Command: c}, OK
	}

	switch r := req.(type) {
	case *wire.CreateStream:
		return ok(CreateStream{Name: r.Name, Options: r.Options},
			first(allow(ActionCreateStream, 0, 0), ValidateEmptyCatalog(r.Options)))
	case *wire.UpdateStream:
		return ok(UpdateStream{Stream: r.StreamID, Name: r.Name, Options: r.Options},
			first(onStream(ActionUpdateStream, r.StreamID), ValidateEmptyCatalog(r.Options)))
	case *wire.DeleteStream:
		return ok(DeleteStream{Stream: r.StreamID}, onStream(ActionDeleteStream, r.StreamID))
	case *wire.PurgeStream:
		return ok(PurgeStream{Stream: r.StreamID}, onStream(ActionPurgeStream, r.StreamID))
	case *wire.CreateTopic:
		_, optCode := ResolveTopicCreate(r.Options, r.PartitionsCount, cfg.TopicDefaults)
		return ok(CreateTopic{Stream: r.StreamID, PartitionsCount: r.PartitionsCount, Name: r.Name, Options: r.Options, Defaults: cfg.TopicDefaults, PartitionsMax: cfg.PartitionsMax},
			first(onStream(ActionCreateTopic, r.StreamID), perRequest(r.PartitionsCount, true), optCode, fits(r.PartitionsCount)))
	case *wire.UpdateTopic:
		optCode := OK
		if _, tp, code := s.ResolveTopic(r.StreamID, r.TopicID); code == OK {
			_, optCode = ResolveTopicUpdate(r.Options, tp, cfg.TopicDefaults)
		}
		return ok(UpdateTopic{Stream: r.StreamID, Topic: r.TopicID, Name: r.Name, Options: r.Options, Defaults: cfg.TopicDefaults},
			first(onTopic(ActionUpdateTopic, r.StreamID, r.TopicID), optCode))
	case *wire.DeleteTopic:
		return ok(DeleteTopic{Stream: r.StreamID, Topic: r.TopicID}, onTopic(ActionDeleteTopic, r.StreamID, r.TopicID))
	case *wire.PurgeTopic:
		return ok(PurgeTopic{Stream: r.StreamID, Topic: r.TopicID}, onTopic(ActionPurgeTopic, r.StreamID, r.TopicID))
	case *wire.CreatePartitions:
		return ok(CreatePartitions{Stream: r.StreamID, Topic: r.TopicID, Count: r.PartitionsCount, PartitionsMax: cfg.PartitionsMax},
			first(onTopic(ActionCreatePartitions, r.StreamID, r.TopicID), perRequest(r.PartitionsCount, false), fits(r.PartitionsCount)))
	case *wire.DeletePartitions:
		return ok(DeletePartitions{Stream: r.StreamID, Topic: r.TopicID, Count: r.PartitionsCount},
			first(onTopic(ActionDeletePartitions, r.StreamID, r.TopicID), perRequest(r.PartitionsCount, false)))
	case *wire.CreateConsumerGroup:
		return ok(CreateConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Name: r.Name}, onTopic(ActionCreateConsumerGroup, r.StreamID, r.TopicID))
	case *wire.DeleteConsumerGroup:
		return ok(DeleteConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID}, onTopic(ActionDeleteConsumerGroup, r.StreamID, r.TopicID))
	case *wire.JoinConsumerGroup:
		return ok(JoinConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID, Node: cfg.Node, Boot: cfg.Boot}, onTopic(ActionJoinConsumerGroup, r.StreamID, r.TopicID))
	case *wire.LeaveConsumerGroup:
		return ok(LeaveConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID}, onTopic(ActionLeaveConsumerGroup, r.StreamID, r.TopicID))
	case *wire.CreateUser:
		if code := first(allow(ActionCreateUser, 0, 0), ValidateEmptyCatalog(r.Options), ValidatePassword(r.Password)); code != OK {
			return Admitted{}, code
		}
		hash, err := HashPassword(r.Password, cfg.Argon2)
		if err != nil {
			return Admitted{}, wire.CodeError
		}
		return ok(CreateUser{Username: r.Username, PasswordHash: hash, Status: UserStatus(r.Status), Permissions: r.Permissions, Options: r.Options}, OK)
	case *wire.UpdateUser:
		c := UpdateUser{User: r.UserID, Username: r.Username, Options: r.Options}
		rootOff := OK
		if r.Status != nil {
			st := UserStatus(*r.Status)
			c.Status = &st
			if target := s.ResolveUser(r.UserID); target != nil && target.ID == RootUserID && st == UserInactive {
				rootOff = wire.CodeInvalidUserStatus // nobody could reactivate it
			}
		}
		return ok(c, first(onUser(ActionUpdateUser, r.UserID), ValidateEmptyCatalog(r.Options), rootOff))
	case *wire.DeleteUser:
		return ok(DeleteUser{User: r.UserID}, onUser(ActionDeleteUser, r.UserID))
	case *wire.UpdatePermissions:
		return ok(UpdatePermissions{User: r.UserID, Permissions: r.Permissions}, onUser(ActionUpdatePermissions, r.UserID))
	case *wire.ChangePassword:
		if code := first(onUser(ActionChangePassword, r.UserID), ValidatePassword(r.NewPassword)); code != OK {
			return Admitted{}, code
		}
		c := ChangePassword{User: r.UserID}
		// A wrong current password is not denied here: it commits as an
		// InvalidCredentials no-op, as in Iggy, so the request is recorded.
		if target := s.ResolveUser(r.UserID); target != nil && VerifyPassword(target.PasswordHash, r.CurrentPassword) {
			c.VerifiedHash = target.PasswordHash
		}
		hash, err := HashPassword(r.NewPassword, cfg.Argon2)
		if err != nil {
			return Admitted{}, wire.CodeError
		}
		c.NewPasswordHash = hash
		return ok(c, OK)
	case *wire.CreatePersonalAccessToken:
		if uint64(len(u.Tokens)) >= uint64(s.limits.MaxTokensPerUser) {
			return Admitted{}, wire.CodePersonalAccessTokensLimitReached
		}
		if !ValidName(r.Name) {
			return Admitted{}, wire.CodeInvalidPersonalAccessTokenName
		}
		tok, hash, err := GenerateToken()
		if err != nil {
			return Admitted{}, wire.CodeError
		}
		return Admitted{Command: CreatePersonalAccessToken{Name: r.Name, Expiry: r.Expiry, Hash: hash}, Token: tok}, OK
	case *wire.DeletePersonalAccessToken:
		return ok(DeletePersonalAccessToken{Name: r.Name}, OK)
	}
	return Admitted{}, wire.CodeInvalidCommand
}
