package wire

// Request is a command's request body codec. Every one of the 51 command
// types implements it with a pointer receiver (*CreateTopic, ...).
type Request interface {
	// Code is the command code.
	Code() CommandCode
	// AppendBody appends the encoded body (without frame header).
	AppendBody(dst []byte) ([]byte, error)
	// DecodeBody decodes a body occupying exactly b, overwriting the value.
	// Decoded byte slices may alias b.
	DecodeBody(b []byte) error
}

// ReplyPayload is a reply payload codec (what follows the result section,
// or the whole body for replies that are not result-framed).
type ReplyPayload interface {
	AppendTo(dst []byte) ([]byte, error)
}

// NewRequest returns a zero request value for code, or false for an unknown
// code.
func NewRequest(code CommandCode) (Request, bool) {
	switch code {
	case CmdPing:
		return &Ping{}, true
	case CmdGetStats:
		return &GetStats{}, true
	case CmdGetSnapshotFile:
		return &GetSnapshotFile{}, true
	case CmdGetClusterMetadata:
		return &GetClusterMetadata{}, true
	case CmdDescribeOptions:
		return &DescribeOptions{}, true
	case CmdGetMe:
		return &GetMe{}, true
	case CmdGetClient:
		return &GetClient{}, true
	case CmdGetClients:
		return &GetClients{}, true
	case CmdGetUser:
		return &GetUser{}, true
	case CmdGetUsers:
		return &GetUsers{}, true
	case CmdCreateUser:
		return &CreateUser{}, true
	case CmdDeleteUser:
		return &DeleteUser{}, true
	case CmdUpdateUser:
		return &UpdateUser{}, true
	case CmdUpdatePermissions:
		return &UpdatePermissions{}, true
	case CmdChangePassword:
		return &ChangePassword{}, true
	case CmdLoginUser:
		return &LoginUser{}, true
	case CmdLogoutUser:
		return &LogoutUser{}, true
	case CmdLoginRegister:
		return &LoginRegister{}, true
	case CmdGetPersonalAccessTokens:
		return &GetPersonalAccessTokens{}, true
	case CmdCreatePersonalAccessToken:
		return &CreatePersonalAccessToken{}, true
	case CmdDeletePersonalAccessToken:
		return &DeletePersonalAccessToken{}, true
	case CmdLoginWithPersonalAccessToken:
		return &LoginWithPersonalAccessToken{}, true
	case CmdLoginRegisterWithPAT:
		return &LoginRegisterWithPAT{}, true
	case CmdPollMessages:
		return &PollMessages{}, true
	case CmdSendMessages:
		return &SendMessages{}, true
	case CmdFlushUnsavedBuffer:
		return &FlushUnsavedBuffer{}, true
	case CmdGetConsumerOffset:
		return &GetConsumerOffset{}, true
	case CmdStoreConsumerOffset:
		return &StoreConsumerOffset{}, true
	case CmdDeleteConsumerOffset:
		return &DeleteConsumerOffset{}, true
	case CmdGetStream:
		return &GetStream{}, true
	case CmdGetStreams:
		return &GetStreams{}, true
	case CmdCreateStream:
		return &CreateStream{}, true
	case CmdDeleteStream:
		return &DeleteStream{}, true
	case CmdUpdateStream:
		return &UpdateStream{}, true
	case CmdPurgeStream:
		return &PurgeStream{}, true
	case CmdGetTopic:
		return &GetTopic{}, true
	case CmdGetTopics:
		return &GetTopics{}, true
	case CmdCreateTopic:
		return &CreateTopic{}, true
	case CmdDeleteTopic:
		return &DeleteTopic{}, true
	case CmdUpdateTopic:
		return &UpdateTopic{}, true
	case CmdPurgeTopic:
		return &PurgeTopic{}, true
	case CmdCreatePartitions:
		return &CreatePartitions{}, true
	case CmdDeletePartitions:
		return &DeletePartitions{}, true
	case CmdDeleteSegments:
		return &DeleteSegments{}, true
	case CmdGetConsumerGroup:
		return &GetConsumerGroup{}, true
	case CmdGetConsumerGroups:
		return &GetConsumerGroups{}, true
	case CmdCreateConsumerGroup:
		return &CreateConsumerGroup{}, true
	case CmdDeleteConsumerGroup:
		return &DeleteConsumerGroup{}, true
	case CmdJoinConsumerGroup:
		return &JoinConsumerGroup{}, true
	case CmdLeaveConsumerGroup:
		return &LeaveConsumerGroup{}, true
	case CmdSyncConsumerGroup:
		return &SyncConsumerGroup{}, true
	}
	return nil, false
}

// DecodeRequestBody decodes the body of a request with command code (from
// RequestHeader.Code). An unknown code returns *Error InvalidCommand (3),
// which is also what a server answers for it. Register requests should go
// through DecodeRegister instead, since their code is not on the wire.
func DecodeRequestBody(code CommandCode, body []byte) (Request, error) {
	r, ok := NewRequest(code)
	if !ok {
		return nil, Errorf(CodeInvalidCommand, "unknown command code %d", code)
	}
	if err := r.DecodeBody(body); err != nil {
		return nil, err
	}
	return r, nil
}

// EmptyMeansNotFound reports the single-object reads whose "not found"
// answer is status 0 with an empty body (GET_STREAM, GET_TOPIC, GET_USER,
// GET_CONSUMER_GROUP, GET_CLIENT, GET_CONSUMER_OFFSET, SYNC_CONSUMER_GROUP).
func EmptyMeansNotFound(code CommandCode) bool {
	switch code {
	case CmdGetStream, CmdGetTopic, CmdGetUser, CmdGetConsumerGroup, CmdGetClient,
		CmdGetConsumerOffset, CmdSyncConsumerGroup:
		return true
	}
	return false
}

// DecodeReplyPayload decodes the payload of a successful reply to code into
// its typed value (a value type such as Stats, Streams, TopicDetails...).
// Commands whose reply carries nothing return (nil, nil) for an empty payload
// and an error otherwise; for EmptyMeansNotFound commands an empty payload
// also returns (nil, nil).
func DecodeReplyPayload(code CommandCode, p []byte) (any, error) {
	if len(p) == 0 && EmptyMeansNotFound(code) {
		return nil, nil
	}
	switch code {
	case CmdGetStats:
		return DecodeStats(p)
	case CmdGetSnapshotFile:
		if len(p) == 0 {
			return SnapshotFile(nil), nil
		}
		return SnapshotFile(p), nil
	case CmdGetClusterMetadata:
		return DecodeClusterMetadata(p)
	case CmdDescribeOptions:
		return DecodeOptionDescriptors(p)
	case CmdGetMe, CmdGetClient:
		return DecodeClientDetails(p)
	case CmdGetClients:
		return DecodeClientInfos(p)
	case CmdGetUser, CmdCreateUser:
		return DecodeUserDetails(p)
	case CmdGetUsers:
		return DecodeUsers(p)
	case CmdLoginRegister, CmdLoginRegisterWithPAT:
		return DecodeLoginReply(p)
	case CmdGetPersonalAccessTokens:
		return DecodePersonalAccessTokens(p)
	case CmdCreatePersonalAccessToken:
		return DecodeRawPersonalAccessToken(p)
	case CmdPollMessages:
		return DecodePollReply(p)
	case CmdSendMessages:
		return DecodeSendConfirmations(p)
	case CmdGetConsumerOffset:
		return DecodeConsumerOffsetInfo(p)
	case CmdGetStream:
		return DecodeStreamDetails(p)
	case CmdGetStreams:
		return DecodeStreams(p)
	case CmdCreateStream:
		return DecodeStream(p)
	case CmdGetTopic, CmdCreateTopic:
		return DecodeTopicDetails(p)
	case CmdGetTopics:
		return DecodeTopics(p)
	case CmdGetConsumerGroup, CmdCreateConsumerGroup:
		return DecodeConsumerGroupDetails(p)
	case CmdGetConsumerGroups:
		return DecodeConsumerGroups(p)
	case CmdSyncConsumerGroup:
		return DecodeGroupAssignment(p)
	}
	if !code.Known() {
		return nil, Errorf(CodeInvalidCommand, "unknown command code %d", code)
	}
	if len(p) != 0 {
		return nil, fieldErr(code.String()+" reply", "body", 0, "must be empty, got %d bytes", len(p))
	}
	return nil, nil
}
