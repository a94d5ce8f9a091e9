package metadata

import "strconv"

// Code is an Iggy numeric error code (the value that travels in the reply
// status field or in a result-framed rejection). Zero means success.
type Code uint32

// The codes the metadata state machine and its admission helpers produce.
// Numbering is Iggy's (foreign/go/errors/errors.yaml); nothing here invents
// a code.
const (
	OK                               Code = 0
	CodeError                        Code = 1
	CodeInvalidCommand               Code = 3
	CodeResourceNotFound             Code = 20
	CodeUnauthenticated              Code = 40
	CodeUnauthorized                 Code = 41
	CodeInvalidCredentials           Code = 42
	CodeInvalidUsername              Code = 43
	CodeInvalidPassword              Code = 44
	CodeInvalidUserStatus            Code = 45
	CodeUserAlreadyExists            Code = 46
	CodeUserInactive                 Code = 47
	CodeCannotDeleteUser             Code = 48
	CodeCannotChangePermissions      Code = 49
	CodeInvalidPATName               Code = 50
	CodePATAlreadyExists             Code = 51
	CodePATLimitReached              Code = 52
	CodeInvalidPAT                   Code = 53
	CodePATExpired                   Code = 54
	CodeUsersLimitReached            Code = 55
	CodeInvalidPATExpiry             Code = 56
	CodeStreamIDNotFound             Code = 1009
	CodeStreamNameAlreadyExists      Code = 1012
	CodeInvalidStreamName            Code = 1013
	CodeInvalidTopicSize             Code = 1019
	CodeTooManyStreams               Code = 1020
	CodeTopicIDNotFound              Code = 2010
	CodeTopicNameAlreadyExists       Code = 2013
	CodeInvalidTopicName             Code = 2014
	CodeTooManyPartitions            Code = 2015
	CodeInvalidPartitionsCount       Code = 2019
	CodeTooManyTopics                Code = 2021
	CodePartitionNotFound            Code = 3007
	CodePartitionIDSpaceExhausted    Code = 3013
	CodeUnsupportedOptionKey         Code = 4041
	CodeInvalidOptionValue           Code = 4042
	CodeConsumerGroupIDNotFound      Code = 5000
	CodeInvalidConsumerGroupID       Code = 5002
	CodeConsumerGroupNameExists      Code = 5004
	CodeInvalidConsumerGroupName     Code = 5005
	CodeConsumerGroupMemberNotFound  Code = 5006
	CodeConsumerGroupPartitionNotOwn Code = 5009
)

var codeNames = map[Code]string{
	OK:                               "Ok",
	CodeError:                        "Error",
	CodeInvalidCommand:               "InvalidCommand",
	CodeResourceNotFound:             "ResourceNotFound",
	CodeUnauthenticated:              "Unauthenticated",
	CodeUnauthorized:                 "Unauthorized",
	CodeInvalidCredentials:           "InvalidCredentials",
	CodeInvalidUsername:              "InvalidUsername",
	CodeInvalidPassword:              "InvalidPassword",
	CodeInvalidUserStatus:            "InvalidUserStatus",
	CodeUserAlreadyExists:            "UserAlreadyExists",
	CodeUserInactive:                 "UserInactive",
	CodeCannotDeleteUser:             "CannotDeleteUser",
	CodeCannotChangePermissions:      "CannotChangePermissions",
	CodeInvalidPATName:               "InvalidPersonalAccessTokenName",
	CodePATAlreadyExists:             "PersonalAccessTokenAlreadyExists",
	CodePATLimitReached:              "PersonalAccessTokensLimitReached",
	CodeInvalidPAT:                   "InvalidPersonalAccessToken",
	CodePATExpired:                   "PersonalAccessTokenExpired",
	CodeUsersLimitReached:            "UsersLimitReached",
	CodeInvalidPATExpiry:             "InvalidPersonalAccessTokenExpiry",
	CodeStreamIDNotFound:             "StreamIdNotFound",
	CodeStreamNameAlreadyExists:      "StreamNameAlreadyExists",
	CodeInvalidStreamName:            "InvalidStreamName",
	CodeInvalidTopicSize:             "InvalidTopicSize",
	CodeTooManyStreams:               "TooManyStreams",
	CodeTopicIDNotFound:              "TopicIdNotFound",
	CodeTopicNameAlreadyExists:       "TopicNameAlreadyExists",
	CodeInvalidTopicName:             "InvalidTopicName",
	CodeTooManyPartitions:            "TooManyPartitions",
	CodeInvalidPartitionsCount:       "InvalidPartitionsCount",
	CodeTooManyTopics:                "TooManyTopics",
	CodePartitionNotFound:            "PartitionNotFound",
	CodePartitionIDSpaceExhausted:    "PartitionIdSpaceExhausted",
	CodeUnsupportedOptionKey:         "UnsupportedOptionKey",
	CodeInvalidOptionValue:           "InvalidOptionValue",
	CodeConsumerGroupIDNotFound:      "ConsumerGroupIdNotFound",
	CodeInvalidConsumerGroupID:       "InvalidConsumerGroupId",
	CodeConsumerGroupNameExists:      "ConsumerGroupNameAlreadyExists",
	CodeInvalidConsumerGroupName:     "InvalidConsumerGroupName",
	CodeConsumerGroupMemberNotFound:  "ConsumerGroupMemberNotFound",
	CodeConsumerGroupPartitionNotOwn: "ConsumerGroupPartitionNotOwned",
}

// String returns Iggy's name for the code, or the number when unknown.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "Code(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Error makes a non-zero Code usable as an error value.
func (c Code) Error() string {
	return "iggy error " + strconv.FormatUint(uint64(c), 10) + " (" + c.String() + ")"
}
