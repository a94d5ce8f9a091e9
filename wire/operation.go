package wire

import "strconv"

// Operation is the consensus operation byte of a request (offset 176) and of
// a reply (offset 208). Replicated commands are identified by it alone;
// everything else travels as NonReplicated with the command code in the
// request header's reserved bytes.
type Operation uint8

// Operations of protocol 0.11.
const (
	OpReserved      Operation = 0
	OpRegister      Operation = 1
	OpNonReplicated Operation = 2
	OpLogout        Operation = 3

	// Server-internal band (never sent by clients; may appear in replies).
	OpCreateTopicWithAssignments      Operation = 64
	OpCreatePartitionsWithAssignments Operation = 65
	OpRemoveConsumerGroupMember       Operation = 66
	OpCompleteConsumerGroupRevocation Operation = 67
	OpTruncatePartition               Operation = 68

	// Metadata plane.
	OpCreateStream              Operation = 128
	OpUpdateStream              Operation = 129
	OpDeleteStream              Operation = 130
	OpPurgeStream               Operation = 131
	OpCreateTopic               Operation = 132
	OpUpdateTopic               Operation = 133
	OpDeleteTopic               Operation = 134
	OpPurgeTopic                Operation = 135
	OpCreatePartitions          Operation = 136
	OpDeletePartitions          Operation = 137
	OpDeleteSegments            Operation = 138
	OpCreateConsumerGroup       Operation = 139
	OpDeleteConsumerGroup       Operation = 140
	OpCreateUser                Operation = 141
	OpUpdateUser                Operation = 142
	OpDeleteUser                Operation = 143
	OpChangePassword            Operation = 144
	OpUpdatePermissions         Operation = 145
	OpCreatePersonalAccessToken Operation = 146
	OpDeletePersonalAccessToken Operation = 147
	OpJoinConsumerGroup         Operation = 148
	OpLeaveConsumerGroup        Operation = 149

	// Partition plane.
	OpSendMessages         Operation = 160
	OpStoreConsumerOffset  Operation = 161
	OpDeleteConsumerOffset Operation = 162
)

var opNames = map[Operation]string{
	OpReserved: "Reserved", OpRegister: "Register", OpNonReplicated: "NonReplicated", OpLogout: "Logout",
	OpCreateTopicWithAssignments: "CreateTopicWithAssignments", OpCreatePartitionsWithAssignments: "CreatePartitionsWithAssignments",
	OpRemoveConsumerGroupMember: "RemoveConsumerGroupMember", OpCompleteConsumerGroupRevocation: "CompleteConsumerGroupRevocation",
	OpTruncatePartition: "TruncatePartition",
	OpCreateStream:      "CreateStream", OpUpdateStream: "UpdateStream", OpDeleteStream: "DeleteStream", OpPurgeStream: "PurgeStream",
	OpCreateTopic: "CreateTopic", OpUpdateTopic: "UpdateTopic", OpDeleteTopic: "DeleteTopic", OpPurgeTopic: "PurgeTopic",
	OpCreatePartitions: "CreatePartitions", OpDeletePartitions: "DeletePartitions", OpDeleteSegments: "DeleteSegments",
	OpCreateConsumerGroup: "CreateConsumerGroup", OpDeleteConsumerGroup: "DeleteConsumerGroup",
	OpCreateUser: "CreateUser", OpUpdateUser: "UpdateUser", OpDeleteUser: "DeleteUser", OpChangePassword: "ChangePassword",
	OpUpdatePermissions: "UpdatePermissions", OpCreatePersonalAccessToken: "CreatePersonalAccessToken",
	OpDeletePersonalAccessToken: "DeletePersonalAccessToken", OpJoinConsumerGroup: "JoinConsumerGroup",
	OpLeaveConsumerGroup: "LeaveConsumerGroup",
	OpSendMessages:       "SendMessages", OpStoreConsumerOffset: "StoreConsumerOffset", OpDeleteConsumerOffset: "DeleteConsumerOffset",
}

// Known reports whether op is one of the protocol's operation values. SDKs
// reject replies whose operation byte is not known.
func (op Operation) Known() bool {
	_, ok := opNames[op]
	return ok
}

func (op Operation) String() string {
	if n, ok := opNames[op]; ok {
		return n
	}
	return "Operation(" + strconv.Itoa(int(op)) + ")"
}

// IsInternal reports the server-internal band 64..68.
func (op Operation) IsInternal() bool { return op >= 64 && op <= 68 }

// IsMetadata reports the metadata plane: 64..68 and 128..149 except 138
// (DeleteSegments, which is replicated on the metadata plane but whose own
// reply is not result-framed).
func (op Operation) IsMetadata() bool {
	if op.IsInternal() {
		return true
	}
	return op >= OpCreateStream && op <= OpLeaveConsumerGroup && op != OpDeleteSegments
}

// IsPartition reports the partition plane (160 and up).
func (op Operation) IsPartition() bool { return op >= OpSendMessages }

// IsReplicated reports every operation other than Register and NonReplicated
// (Logout included): these need a bound session and a non-zero request.
func (op Operation) IsReplicated() bool {
	return op != OpReserved && op != OpRegister && op != OpNonReplicated
}

// AdvancesRequest reports whether the client consumes a request number for
// op: Logout and the metadata ops (128..149, 138 included). Partition ops and
// NonReplicated reuse the current number; Register sends 0.
func (op Operation) AdvancesRequest() bool {
	return op == OpLogout || (op >= OpCreateStream && op <= OpLeaveConsumerGroup)
}

// ClientAllowed reports whether a client may send op: not Reserved and not the
// internal band, and one of the known values.
func (op Operation) ClientAllowed() bool {
	return op.Known() && op != OpReserved && !op.IsInternal()
}

// ResultFramed reports whether a status-0 reply with operation op carries the
// result section [count u32][{index u32, result u32} x count] in front of its
// payload. bodyLen matters only for Register, which is result-framed when the
// body is non-empty.
func ResultFramed(op Operation, bodyLen int) bool {
	if op.IsMetadata() || op == OpStoreConsumerOffset || op == OpDeleteConsumerOffset {
		return true
	}
	return op == OpRegister && bodyLen > 0
}
