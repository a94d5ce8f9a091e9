package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/iggo/iggo/wire"
)

// iggo's internal metadata operations, in the internal band (64..127)
// that clients may not send, clear of Iggy's own 64..68.
const (
	OpBootstrap           wire.Operation = 96
	OpSetLimits           wire.Operation = 97
	OpDisconnectClient    wire.Operation = 98
	OpDeleteExpiredTokens wire.Operation = 99
	OpEvictNodeMembers    wire.Operation = 100
	OpRevokeAccessToken   wire.Operation = 101
	OpCompleteRevocation  wire.Operation = 102
	OpExpireMembers       wire.Operation = 103
)

// Prepare body envelope; the layout is documented in doc.go.
const (
	// opVersion is what EncodeOp writes. Version 3 (before cooperative
	// rebalancing) is still decoded: its JoinConsumerGroup has no in-flight
	// list and re-deals every partition. Version 2 (before the node-wide
	// partition cap and the root guard) is still decoded: its CreateTopic
	// and CreatePartitions have no cap stamp, and its commands apply with
	// Meta.Legacy. Version 1 (before consumer-group members recorded their
	// node) is decoded too: its JoinConsumerGroup has no stamp and decodes
	// with Boot = BootUnknown.
	opVersion      = 4
	opVersionV3    = 3
	opVersionV2    = 2
	opVersionV1    = 1
	opHeaderSize   = 34
	flagSystem     = 1
	defaultsSize   = 48
	limitsSize     = 24
	maxStampLength = 1<<16 - 1
)

// ErrOp wraps every prepare-body decoding failure.
var ErrOp = errors.New("metadata prepare body")

// OperationOf returns the prepare operation of c: Iggy's operation byte for
// client commands, iggo's internal ones otherwise.
func OperationOf(c Command) wire.Operation {
	switch c.(type) {
	case CreateStream:
		return wire.OpCreateStream
	case UpdateStream:
		return wire.OpUpdateStream
	case DeleteStream:
		return wire.OpDeleteStream
	case PurgeStream:
		return wire.OpPurgeStream
	case CreateTopic:
		return wire.OpCreateTopic
	case UpdateTopic:
		return wire.OpUpdateTopic
	case DeleteTopic:
		return wire.OpDeleteTopic
	case PurgeTopic:
		return wire.OpPurgeTopic
	case CreatePartitions:
		return wire.OpCreatePartitions
	case DeletePartitions:
		return wire.OpDeletePartitions
	case CreateConsumerGroup:
		return wire.OpCreateConsumerGroup
	case DeleteConsumerGroup:
		return wire.OpDeleteConsumerGroup
	case JoinConsumerGroup:
		return wire.OpJoinConsumerGroup
	case LeaveConsumerGroup:
		return wire.OpLeaveConsumerGroup
	case CreateUser:
		return wire.OpCreateUser
	case UpdateUser:
		return wire.OpUpdateUser
	case DeleteUser:
		return wire.OpDeleteUser
	case ChangePassword:
		return wire.OpChangePassword
	case UpdatePermissions:
		return wire.OpUpdatePermissions
	case CreatePersonalAccessToken:
		return wire.OpCreatePersonalAccessToken
	case DeletePersonalAccessToken:
		return wire.OpDeletePersonalAccessToken
	case Bootstrap:
		return OpBootstrap
	case SetLimits:
		return OpSetLimits
	case DisconnectClient:
		return OpDisconnectClient
	case DeleteExpiredTokens:
		return OpDeleteExpiredTokens
	case EvictNodeMembers:
		return OpEvictNodeMembers
	case ExpireMembers:
		return OpExpireMembers
	case CompleteRevocation:
		return OpCompleteRevocation
	case RevokeAccessToken:
		return OpRevokeAccessToken
	}
	panic(fmt.Sprintf("metadata: OperationOf got unknown command %T", c))
}

// EncodeOp renders the prepare body for c under m: the envelope, the
// stamped values and the command's request in Iggy's wire encoding.
// Passwords never appear in it (only their hashes, as stamps). m.Op is
// not encoded: it is the prepare's own op number.
func EncodeOp(m Meta, c Command) ([]byte, error) {
	b := make([]byte, opHeaderSize, 128)
	b[0] = opVersion
	b[1] = byte(OperationOf(c))
	if m.System {
		b[2] = flagSystem
	}
	binary.LittleEndian.PutUint32(b[4:], m.UserID)
	binary.LittleEndian.PutUint64(b[8:], m.Timestamp)
	binary.LittleEndian.PutUint64(b[16:], m.Client.Lo)
	binary.LittleEndian.PutUint64(b[24:], m.Client.Hi)

	var req wire.Request
	switch c := c.(type) {
	case CreateStream:
		req = &wire.CreateStream{Name: c.Name, Options: c.Options}
	case UpdateStream:
		req = &wire.UpdateStream{StreamID: c.Stream, Name: c.Name, Options: c.Options}
	case DeleteStream:
		req = &wire.DeleteStream{StreamID: c.Stream}
	case PurgeStream:
		req = &wire.PurgeStream{StreamID: c.Stream}
	case CreateTopic:
		b = appendDefaults(b, c.Defaults)
		b = binary.LittleEndian.AppendUint32(b, c.PartitionsMax)
		req = &wire.CreateTopic{StreamID: c.Stream, PartitionsCount: c.PartitionsCount, Name: c.Name, Options: c.Options}
	case UpdateTopic:
		b = appendDefaults(b, c.Defaults)
		req = &wire.UpdateTopic{StreamID: c.Stream, TopicID: c.Topic, Name: c.Name, Options: c.Options}
	case DeleteTopic:
		req = &wire.DeleteTopic{StreamID: c.Stream, TopicID: c.Topic}
	case PurgeTopic:
		req = &wire.PurgeTopic{StreamID: c.Stream, TopicID: c.Topic}
	case CreatePartitions:
		b = binary.LittleEndian.AppendUint32(b, c.PartitionsMax)
		req = &wire.CreatePartitions{StreamID: c.Stream, TopicID: c.Topic, PartitionsCount: c.Count}
	case DeletePartitions:
		req = &wire.DeletePartitions{StreamID: c.Stream, TopicID: c.Topic, PartitionsCount: c.Count}
	case CreateConsumerGroup:
		req = &wire.CreateConsumerGroup{StreamID: c.Stream, TopicID: c.Topic, Name: c.Name}
	case DeleteConsumerGroup:
		req = &wire.DeleteConsumerGroup{StreamID: c.Stream, TopicID: c.Topic, GroupID: c.Group}
	case JoinConsumerGroup:
		b = append(b, c.Node)
		b = binary.LittleEndian.AppendUint64(b, c.Boot)
		if len(c.InFlight) > 1<<16-1 {
			return nil, fmt.Errorf("%w: %d in-flight partitions", ErrOp, len(c.InFlight))
		}
		b = binary.LittleEndian.AppendUint16(b, uint16(len(c.InFlight)))
		for _, p := range c.InFlight {
			b = binary.LittleEndian.AppendUint32(b, p)
		}
		req = &wire.JoinConsumerGroup{StreamID: c.Stream, TopicID: c.Topic, GroupID: c.Group}
	case LeaveConsumerGroup:
		req = &wire.LeaveConsumerGroup{StreamID: c.Stream, TopicID: c.Topic, GroupID: c.Group}
	case CreateUser:
		b = appendStr16(b, c.PasswordHash)
		req = &wire.CreateUser{Username: c.Username, Status: uint8(c.Status), Permissions: c.Permissions, Options: c.Options}
	case UpdateUser:
		u := &wire.UpdateUser{UserID: c.User, Username: c.Username, Options: c.Options}
		if c.Status != nil {
			st := uint8(*c.Status)
			u.Status = &st
		}
		req = u
	case DeleteUser:
		req = &wire.DeleteUser{UserID: c.User}
	case ChangePassword:
		b = appendStr16(appendStr16(b, c.VerifiedHash), c.NewPasswordHash)
		req = &wire.ChangePassword{UserID: c.User}
	case UpdatePermissions:
		req = &wire.UpdatePermissions{UserID: c.User, Permissions: c.Permissions}
	case CreatePersonalAccessToken:
		b = append(b, c.Hash[:]...)
		req = &wire.CreatePersonalAccessToken{Name: c.Name, Expiry: c.Expiry}
	case DeletePersonalAccessToken:
		req = &wire.DeletePersonalAccessToken{Name: c.Name}
	case Bootstrap:
		if len(c.RootUsername) > 255 {
			return nil, fmt.Errorf("%w: root username of %d bytes", ErrOp, len(c.RootUsername))
		}
		b = append(b, byte(len(c.RootUsername)))
		b = append(b, c.RootUsername...)
		b = appendLimits(appendStr16(b, c.RootPasswordHash), c.Limits)
	case SetLimits:
		b = appendLimits(b, c.Limits)
	case DisconnectClient:
		b = binary.LittleEndian.AppendUint64(b, c.Client.Lo)
		b = binary.LittleEndian.AppendUint64(b, c.Client.Hi)
	case EvictNodeMembers:
		b = append(b, c.Node)
		b = binary.LittleEndian.AppendUint64(b, c.Before)
	case ExpireMembers:
		if len(c.Clients) > ExpireMembersMax {
			return nil, fmt.Errorf("%w: expiring %d members, at most %d", ErrOp, len(c.Clients), ExpireMembersMax)
		}
		b = append(b, c.Node)
		b = binary.LittleEndian.AppendUint64(b, c.Boot)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(c.Clients)))
		for _, cl := range c.Clients {
			b = binary.LittleEndian.AppendUint64(b, cl.Lo)
			b = binary.LittleEndian.AppendUint64(b, cl.Hi)
		}
	case CompleteRevocation:
		b = binary.LittleEndian.AppendUint32(b, c.Stream)
		b = binary.LittleEndian.AppendUint32(b, c.Topic)
		b = binary.LittleEndian.AppendUint32(b, c.Group)
		b = binary.LittleEndian.AppendUint64(b, c.Client.Lo)
		b = binary.LittleEndian.AppendUint64(b, c.Client.Hi)
		b = binary.LittleEndian.AppendUint32(b, c.Partition)
		b = append(b, boolByte(c.HasCommitted))
		b = binary.LittleEndian.AppendUint64(b, c.Committed)
	case RevokeAccessToken:
		b = append(b, c.ID[:]...)
		b = binary.LittleEndian.AppendUint64(b, c.Expiry)
	case DeleteExpiredTokens:
	default:
		panic(fmt.Sprintf("metadata: EncodeOp got unknown command %T", c))
	}
	stamp := len(b) - opHeaderSize
	if stamp > maxStampLength {
		return nil, fmt.Errorf("%w: stamp of %d bytes", ErrOp, stamp)
	}
	binary.LittleEndian.PutUint16(b[32:], uint16(stamp))
	if req == nil {
		return b, nil
	}
	out, err := req.AppendBody(b)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding %T: %w", ErrOp, c, err)
	}
	return out, nil
}

func appendStr16(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendDefaults(b []byte, d TopicDefaults) []byte {
	s := d.Settings
	b = append(b, s.CompressionAlgorithm)
	b = binary.LittleEndian.AppendUint64(b, s.MessageExpiry)
	b = binary.LittleEndian.AppendUint64(b, s.MaxTopicSize)
	b = binary.LittleEndian.AppendUint64(b, s.SegmentSize)
	b = binary.LittleEndian.AppendUint32(b, s.MessagesRequiredToSave)
	b = binary.LittleEndian.AppendUint64(b, s.SizeOfMessagesRequiredToSave)
	b = append(b, boolByte(s.PreallocateSegments), byte(d.Durability), byte(d.ConsumerOffsetDurability))
	return binary.LittleEndian.AppendUint64(b, d.SegmentSizeMax)
}

func appendLimits(b []byte, l Limits) []byte {
	for _, v := range []uint32{l.MaxStreams, l.MaxTopicsPerStream, l.MaxPartitionsPerTopic, l.MaxPartitionsPerRequest, l.MaxTokensPerUser, l.MaxUsers} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// DecodeOp parses a prepare body produced by EncodeOp. The returned Meta
// has Op = 0 (the caller sets it from the prepare). Any malformed body is
// an error wrapping ErrOp; it never panics. Decoded byte slices may alias
// b.
func DecodeOp(b []byte) (Meta, Command, error) {
	if len(b) < opHeaderSize {
		return Meta{}, nil, fmt.Errorf("%w: %d bytes, envelope needs %d", ErrOp, len(b), opHeaderSize)
	}
	if (b[0] != opVersion && b[0] != opVersionV3 && b[0] != opVersionV2 && b[0] != opVersionV1) || b[2]&^flagSystem != 0 || b[3] != 0 {
		return Meta{}, nil, fmt.Errorf("%w: version %d, flags %#x, reserved %#x", ErrOp, b[0], b[2], b[3])
	}
	m := Meta{
		System:    b[2]&flagSystem != 0,
		Legacy:    b[0] < opVersionV3,
		UserID:    binary.LittleEndian.Uint32(b[4:]),
		Timestamp: binary.LittleEndian.Uint64(b[8:]),
		Client:    wire.Uint128{Lo: binary.LittleEndian.Uint64(b[16:]), Hi: binary.LittleEndian.Uint64(b[24:])},
	}
	n := int(binary.LittleEndian.Uint16(b[32:]))
	if len(b) < opHeaderSize+n {
		return Meta{}, nil, fmt.Errorf("%w: stamp of %d bytes overruns the body", ErrOp, n)
	}
	st := stampReader{b: b[opHeaderSize : opHeaderSize+n]}
	body := b[opHeaderSize+n:]
	op := wire.Operation(b[1])
	c, err := decodeCommand(b[0], op, &st, body)
	if err != nil {
		return Meta{}, nil, err
	}
	if st.err == nil && len(st.b) != 0 {
		st.err = fmt.Errorf("%d unread stamp bytes", len(st.b))
	}
	if st.err != nil {
		return Meta{}, nil, fmt.Errorf("%w: operation %d stamp: %w", ErrOp, op, st.err)
	}
	return m, c, nil
}

func decodeCommand(version byte, op wire.Operation, st *stampReader, body []byte) (Command, error) {
	internal := func(c Command) (Command, error) {
		if len(body) != 0 {
			return nil, fmt.Errorf("%w: operation %d carries %d body bytes", ErrOp, op, len(body))
		}
		return c, nil
	}
	switch op {
	case OpBootstrap:
		name := string(st.take(int(st.u8())))
		hash := st.str16()
		return internal(Bootstrap{RootUsername: name, RootPasswordHash: hash, Limits: st.limits()})
	case OpSetLimits:
		return internal(SetLimits{Limits: st.limits()})
	case OpDisconnectClient:
		return internal(DisconnectClient{Client: wire.Uint128{Lo: st.u64(), Hi: st.u64()}})
	case OpDeleteExpiredTokens:
		return internal(DeleteExpiredTokens{})
	case OpRevokeAccessToken:
		var c RevokeAccessToken
		copy(c.ID[:], st.take(len(c.ID)))
		c.Expiry = st.u64()
		return internal(c)
	case OpEvictNodeMembers:
		if version == opVersionV1 {
			return nil, fmt.Errorf("%w: operation %d in a version %d body", ErrOp, op, version)
		}
		return internal(EvictNodeMembers{Node: st.u8(), Before: st.u64()})
	case OpExpireMembers:
		if version < opVersion {
			return nil, fmt.Errorf("%w: operation %d in a version %d body", ErrOp, op, version)
		}
		c := ExpireMembers{Node: st.u8(), Boot: st.u64()}
		n := int(st.u16())
		if n > ExpireMembersMax {
			return nil, fmt.Errorf("%w: expiring %d members, at most %d", ErrOp, n, ExpireMembersMax)
		}
		c.Clients = make([]ClientID, 0, n)
		for range n {
			c.Clients = append(c.Clients, wire.Uint128{Lo: st.u64(), Hi: st.u64()})
		}
		return internal(c)
	case OpCompleteRevocation:
		if version < opVersion {
			return nil, fmt.Errorf("%w: operation %d in a version %d body", ErrOp, op, version)
		}
		c := CompleteRevocation{Stream: st.u32(), Topic: st.u32(), Group: st.u32()}
		c.Client = wire.Uint128{Lo: st.u64(), Hi: st.u64()}
		c.Partition = st.u32()
		c.HasCommitted, c.Committed = st.boolean(), st.u64()
		return internal(c)
	}
	code, ok := wire.CommandForOperation(op)
	if !ok || op == wire.OpDeleteSegments || !op.IsMetadata() {
		return nil, fmt.Errorf("%w: operation %d is not a metadata command", ErrOp, op)
	}
	req, err := wire.DecodeRequestBody(code, body)
	if err != nil {
		return nil, fmt.Errorf("%w: operation %d body: %w", ErrOp, op, err)
	}
	switch r := req.(type) {
	case *wire.CreateStream:
		return CreateStream{Name: r.Name, Options: r.Options}, nil
	case *wire.UpdateStream:
		return UpdateStream{Stream: r.StreamID, Name: r.Name, Options: r.Options}, nil
	case *wire.DeleteStream:
		return DeleteStream{Stream: r.StreamID}, nil
	case *wire.PurgeStream:
		return PurgeStream{Stream: r.StreamID}, nil
	case *wire.CreateTopic:
		c := CreateTopic{Stream: r.StreamID, PartitionsCount: r.PartitionsCount, Name: r.Name, Options: r.Options, Defaults: st.defaults()}
		if version >= opVersionV3 {
			c.PartitionsMax = st.u32()
		}
		return c, nil
	case *wire.UpdateTopic:
		return UpdateTopic{Stream: r.StreamID, Topic: r.TopicID, Name: r.Name, Options: r.Options, Defaults: st.defaults()}, nil
	case *wire.DeleteTopic:
		return DeleteTopic{Stream: r.StreamID, Topic: r.TopicID}, nil
	case *wire.PurgeTopic:
		return PurgeTopic{Stream: r.StreamID, Topic: r.TopicID}, nil
	case *wire.CreatePartitions:
		c := CreatePartitions{Stream: r.StreamID, Topic: r.TopicID, Count: r.PartitionsCount}
		if version >= opVersionV3 {
			c.PartitionsMax = st.u32()
		}
		return c, nil
	case *wire.DeletePartitions:
		return DeletePartitions{Stream: r.StreamID, Topic: r.TopicID, Count: r.PartitionsCount}, nil
	case *wire.CreateConsumerGroup:
		return CreateConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Name: r.Name}, nil
	case *wire.DeleteConsumerGroup:
		return DeleteConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID}, nil
	case *wire.JoinConsumerGroup:
		c := JoinConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID, Boot: BootUnknown}
		if version != opVersionV1 {
			c.Node, c.Boot = st.u8(), st.u64()
		}
		c.Redeal = version < opVersion
		if version >= opVersion {
			n := 0
			if b := st.take(2); b != nil {
				n = int(binary.LittleEndian.Uint16(b))
			}
			c.InFlight = make([]uint32, 0, n)
			for i := 0; i < n; i++ {
				c.InFlight = append(c.InFlight, st.u32())
			}
		}
		return c, nil
	case *wire.LeaveConsumerGroup:
		return LeaveConsumerGroup{Stream: r.StreamID, Topic: r.TopicID, Group: r.GroupID}, nil
	case *wire.CreateUser:
		if r.Password != "" {
			return nil, fmt.Errorf("%w: create_user body carries a password", ErrOp)
		}
		return CreateUser{Username: r.Username, PasswordHash: st.str16(), Status: UserStatus(r.Status), Permissions: r.Permissions, Options: r.Options}, nil
	case *wire.UpdateUser:
		c := UpdateUser{User: r.UserID, Username: r.Username, Options: r.Options}
		if r.Status != nil {
			s := UserStatus(*r.Status)
			c.Status = &s
		}
		return c, nil
	case *wire.DeleteUser:
		return DeleteUser{User: r.UserID}, nil
	case *wire.ChangePassword:
		if r.CurrentPassword != "" || r.NewPassword != "" {
			return nil, fmt.Errorf("%w: change_password body carries a password", ErrOp)
		}
		verified := st.str16()
		return ChangePassword{User: r.UserID, VerifiedHash: verified, NewPasswordHash: st.str16()}, nil
	case *wire.UpdatePermissions:
		return UpdatePermissions{User: r.UserID, Permissions: r.Permissions}, nil
	case *wire.CreatePersonalAccessToken:
		var h TokenHash
		copy(h[:], st.take(len(h)))
		return CreatePersonalAccessToken{Name: r.Name, Expiry: r.Expiry, Hash: h}, nil
	case *wire.DeletePersonalAccessToken:
		return DeletePersonalAccessToken{Name: r.Name}, nil
	}
	return nil, fmt.Errorf("%w: operation %d has no metadata command", ErrOp, op)
}

type stampReader struct {
	b   []byte
	err error
}

func (r *stampReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("need %d bytes, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *stampReader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *stampReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *stampReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *stampReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *stampReader) str16() string {
	n := 0
	if b := r.take(2); b != nil {
		n = int(binary.LittleEndian.Uint16(b))
	}
	return string(r.take(n))
}

func (r *stampReader) boolean() bool {
	v := r.u8()
	if v > 1 && r.err == nil {
		r.err = fmt.Errorf("boolean byte %d", v)
	}
	return v == 1
}

func (r *stampReader) defaults() TopicDefaults {
	var d TopicDefaults
	d.Settings.CompressionAlgorithm = r.u8()
	d.Settings.MessageExpiry = r.u64()
	d.Settings.MaxTopicSize = r.u64()
	d.Settings.SegmentSize = r.u64()
	d.Settings.MessagesRequiredToSave = r.u32()
	d.Settings.SizeOfMessagesRequiredToSave = r.u64()
	d.Settings.PreallocateSegments = r.boolean()
	d.Durability = Durability(r.u8())
	d.ConsumerOffsetDurability = Durability(r.u8())
	d.SegmentSizeMax = r.u64()
	return d
}

func (r *stampReader) limits() Limits {
	return Limits{MaxStreams: r.u32(), MaxTopicsPerStream: r.u32(), MaxPartitionsPerTopic: r.u32(),
		MaxPartitionsPerRequest: r.u32(), MaxTokensPerUser: r.u32(), MaxUsers: r.u32()}
}
