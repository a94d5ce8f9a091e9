package wire

import "strconv"

// CommandCode identifies one of the 51 commands of protocol 0.11. Only
// NonReplicated requests carry it on the wire (request header bytes
// 196..200); replicated commands are identified by their Operation.
type CommandCode uint32

// Command codes.
const (
	CmdPing                         CommandCode = 1
	CmdGetStats                     CommandCode = 10
	CmdGetSnapshotFile              CommandCode = 11
	CmdGetClusterMetadata           CommandCode = 12
	CmdDescribeOptions              CommandCode = 13
	CmdGetMe                        CommandCode = 20
	CmdGetClient                    CommandCode = 21
	CmdGetClients                   CommandCode = 22
	CmdGetUser                      CommandCode = 31
	CmdGetUsers                     CommandCode = 32
	CmdCreateUser                   CommandCode = 33
	CmdDeleteUser                   CommandCode = 34
	CmdUpdateUser                   CommandCode = 35
	CmdUpdatePermissions            CommandCode = 36
	CmdChangePassword               CommandCode = 37
	CmdLoginUser                    CommandCode = 38 // legacy: answered with Eviction 15
	CmdLogoutUser                   CommandCode = 39
	CmdLoginRegister                CommandCode = 40
	CmdGetPersonalAccessTokens      CommandCode = 41
	CmdCreatePersonalAccessToken    CommandCode = 42
	CmdDeletePersonalAccessToken    CommandCode = 43
	CmdLoginWithPersonalAccessToken CommandCode = 44 // legacy: answered with Eviction 15
	CmdLoginRegisterWithPAT         CommandCode = 45
	CmdPollMessages                 CommandCode = 100
	CmdSendMessages                 CommandCode = 101
	CmdFlushUnsavedBuffer           CommandCode = 102
	CmdGetConsumerOffset            CommandCode = 120
	CmdStoreConsumerOffset          CommandCode = 121
	CmdDeleteConsumerOffset         CommandCode = 122
	CmdGetStream                    CommandCode = 200
	CmdGetStreams                   CommandCode = 201
	CmdCreateStream                 CommandCode = 202
	CmdDeleteStream                 CommandCode = 203
	CmdUpdateStream                 CommandCode = 204
	CmdPurgeStream                  CommandCode = 205
	CmdGetTopic                     CommandCode = 300
	CmdGetTopics                    CommandCode = 301
	CmdCreateTopic                  CommandCode = 302
	CmdDeleteTopic                  CommandCode = 303
	CmdUpdateTopic                  CommandCode = 304
	CmdPurgeTopic                   CommandCode = 305
	CmdCreatePartitions             CommandCode = 402
	CmdDeletePartitions             CommandCode = 403
	CmdDeleteSegments               CommandCode = 503
	CmdGetConsumerGroup             CommandCode = 600
	CmdGetConsumerGroups            CommandCode = 601
	CmdCreateConsumerGroup          CommandCode = 602
	CmdDeleteConsumerGroup          CommandCode = 603
	CmdJoinConsumerGroup            CommandCode = 604
	CmdLeaveConsumerGroup           CommandCode = 605
	CmdSyncConsumerGroup            CommandCode = 606
)

type commandInfo struct {
	name string
	op   Operation
}

var commandTable = map[CommandCode]commandInfo{
	CmdPing:                         {"ping", OpNonReplicated},
	CmdGetStats:                     {"stats", OpNonReplicated},
	CmdGetSnapshotFile:              {"snapshot", OpNonReplicated},
	CmdGetClusterMetadata:           {"cluster.metadata", OpNonReplicated},
	CmdDescribeOptions:              {"options.describe", OpNonReplicated},
	CmdGetMe:                        {"me", OpNonReplicated},
	CmdGetClient:                    {"client.get", OpNonReplicated},
	CmdGetClients:                   {"client.list", OpNonReplicated},
	CmdGetUser:                      {"user.get", OpNonReplicated},
	CmdGetUsers:                     {"user.list", OpNonReplicated},
	CmdCreateUser:                   {"user.create", OpCreateUser},
	CmdDeleteUser:                   {"user.delete", OpDeleteUser},
	CmdUpdateUser:                   {"user.update", OpUpdateUser},
	CmdUpdatePermissions:            {"user.permissions", OpUpdatePermissions},
	CmdChangePassword:               {"user.password", OpChangePassword},
	CmdLoginUser:                    {"user.login", OpNonReplicated},
	CmdLogoutUser:                   {"user.logout", OpLogout},
	CmdLoginRegister:                {"user.login_register", OpRegister},
	CmdGetPersonalAccessTokens:      {"personal_access_token.list", OpNonReplicated},
	CmdCreatePersonalAccessToken:    {"personal_access_token.create", OpCreatePersonalAccessToken},
	CmdDeletePersonalAccessToken:    {"personal_access_token.delete", OpDeletePersonalAccessToken},
	CmdLoginWithPersonalAccessToken: {"personal_access_token.login", OpNonReplicated},
	CmdLoginRegisterWithPAT:         {"personal_access_token.login_register", OpRegister},
	CmdPollMessages:                 {"message.poll", OpNonReplicated},
	CmdSendMessages:                 {"message.send", OpSendMessages},
	CmdFlushUnsavedBuffer:           {"message.flush_unsaved_buffer", OpNonReplicated},
	CmdGetConsumerOffset:            {"consumer_offset.get", OpNonReplicated},
	CmdStoreConsumerOffset:          {"consumer_offset.store", OpStoreConsumerOffset},
	CmdDeleteConsumerOffset:         {"consumer_offset.delete", OpDeleteConsumerOffset},
	CmdGetStream:                    {"stream.get", OpNonReplicated},
	CmdGetStreams:                   {"stream.list", OpNonReplicated},
	CmdCreateStream:                 {"stream.create", OpCreateStream},
	CmdDeleteStream:                 {"stream.delete", OpDeleteStream},
	CmdUpdateStream:                 {"stream.update", OpUpdateStream},
	CmdPurgeStream:                  {"stream.purge", OpPurgeStream},
	CmdGetTopic:                     {"topic.get", OpNonReplicated},
	CmdGetTopics:                    {"topic.list", OpNonReplicated},
	CmdCreateTopic:                  {"topic.create", OpCreateTopic},
	CmdDeleteTopic:                  {"topic.delete", OpDeleteTopic},
	CmdUpdateTopic:                  {"topic.update", OpUpdateTopic},
	CmdPurgeTopic:                   {"topic.purge", OpPurgeTopic},
	CmdCreatePartitions:             {"partition.create", OpCreatePartitions},
	CmdDeletePartitions:             {"partition.delete", OpDeletePartitions},
	CmdDeleteSegments:               {"segment.delete", OpDeleteSegments},
	CmdGetConsumerGroup:             {"consumer_group.get", OpNonReplicated},
	CmdGetConsumerGroups:            {"consumer_group.list", OpNonReplicated},
	CmdCreateConsumerGroup:          {"consumer_group.create", OpCreateConsumerGroup},
	CmdDeleteConsumerGroup:          {"consumer_group.delete", OpDeleteConsumerGroup},
	CmdJoinConsumerGroup:            {"consumer_group.join", OpJoinConsumerGroup},
	CmdLeaveConsumerGroup:           {"consumer_group.leave", OpLeaveConsumerGroup},
	CmdSyncConsumerGroup:            {"consumer_group.sync", OpNonReplicated},
}

// AllCommands lists the 51 command codes in ascending order.
var AllCommands = []CommandCode{
	CmdPing, CmdGetStats, CmdGetSnapshotFile, CmdGetClusterMetadata, CmdDescribeOptions,
	CmdGetMe, CmdGetClient, CmdGetClients,
	CmdGetUser, CmdGetUsers, CmdCreateUser, CmdDeleteUser, CmdUpdateUser, CmdUpdatePermissions,
	CmdChangePassword, CmdLoginUser, CmdLogoutUser, CmdLoginRegister,
	CmdGetPersonalAccessTokens, CmdCreatePersonalAccessToken, CmdDeletePersonalAccessToken,
	CmdLoginWithPersonalAccessToken, CmdLoginRegisterWithPAT,
	CmdPollMessages, CmdSendMessages, CmdFlushUnsavedBuffer,
	CmdGetConsumerOffset, CmdStoreConsumerOffset, CmdDeleteConsumerOffset,
	CmdGetStream, CmdGetStreams, CmdCreateStream, CmdDeleteStream, CmdUpdateStream, CmdPurgeStream,
	CmdGetTopic, CmdGetTopics, CmdCreateTopic, CmdDeleteTopic, CmdUpdateTopic, CmdPurgeTopic,
	CmdCreatePartitions, CmdDeletePartitions, CmdDeleteSegments,
	CmdGetConsumerGroup, CmdGetConsumerGroups, CmdCreateConsumerGroup, CmdDeleteConsumerGroup,
	CmdJoinConsumerGroup, CmdLeaveConsumerGroup, CmdSyncConsumerGroup,
}

// Known reports whether c is one of the 51 codes.
func (c CommandCode) Known() bool {
	_, ok := commandTable[c]
	return ok
}

// String is Iggy's dotted command name ("topic.create").
func (c CommandCode) String() string {
	if info, ok := commandTable[c]; ok {
		return info.name
	}
	return "command(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Operation is the operation a client sends c with: Register for 40/45,
// Logout for 39, the replicated operation for the 25 replicated codes, and
// NonReplicated for everything else (unknown codes included).
func (c CommandCode) Operation() Operation {
	if info, ok := commandTable[c]; ok {
		return info.op
	}
	return OpNonReplicated
}

// CommandForOperation maps a replicated (or session) operation back to its
// command code. Register maps to CmdLoginRegister, since the request does not
// say which of 40/45 it is; NonReplicated and unknown operations return false.
func CommandForOperation(op Operation) (CommandCode, bool) {
	c, ok := opToCommand[op]
	return c, ok
}

var opToCommand = func() map[Operation]CommandCode {
	m := make(map[Operation]CommandCode)
	for c, info := range commandTable {
		if info.op != OpNonReplicated && info.op != OpRegister {
			m[info.op] = c
		}
	}
	m[OpRegister] = CmdLoginRegister
	return m
}()
