// Iggy's numeric error codes with their names: protocol facts, one line each.
// The message of each is the name in lower-case words; the code is what travels.

package wire

// Iggy error codes. Names follow Iggy so a code found in a log can be searched for.
const (
	CodeError                                      Code = 1
	CodeInvalidConfiguration                       Code = 2
	CodeInvalidCommand                             Code = 3
	CodeInvalidFormat                              Code = 4
	CodeFeatureUnavailable                         Code = 5
	CodeInvalidIdentifier                          Code = 6
	CodeInvalidVersion                             Code = 7
	CodeDisconnected                               Code = 8
	CodeCannotEstablishConnection                  Code = 9
	CodeCannotCreateBaseDirectory                  Code = 10
	CodeCannotCreateRuntimeDirectory               Code = 11
	CodeCannotRemoveRuntimeDirectory               Code = 12
	CodeCannotCreateStateDirectory                 Code = 13
	CodeStateFileNotFound                          Code = 14
	CodeStateFileCorrupted                         Code = 15
	CodeInvalidStateEntryChecksum                  Code = 16
	CodeCannotOpenDatabase                         Code = 19
	CodeResourceNotFound                           Code = 20
	CodeCannotCloseWebSocketConnection             Code = 21
	CodeStaleClient                                Code = 30
	CodeTcpError                                   Code = 31
	CodeQuicError                                  Code = 32
	CodeInvalidServerAddress                       Code = 33
	CodeInvalidClientAddress                       Code = 34
	CodeInvalidIpAddress                           Code = 35
	CodeHttpError                                  Code = 36
	CodeInvalidApiUrl                              Code = 37
	CodeUnauthenticated                            Code = 40
	CodeUnauthorized                               Code = 41
	CodeInvalidCredentials                         Code = 42
	CodeInvalidUsername                            Code = 43
	CodeInvalidPassword                            Code = 44
	CodeInvalidUserStatus                          Code = 45
	CodeUserAlreadyExists                          Code = 46
	CodeUserInactive                               Code = 47
	CodeCannotDeleteUser                           Code = 48
	CodeCannotChangePermissions                    Code = 49
	CodeInvalidPersonalAccessTokenName             Code = 50
	CodePersonalAccessTokenAlreadyExists           Code = 51
	CodePersonalAccessTokensLimitReached           Code = 52
	CodeInvalidPersonalAccessToken                 Code = 53
	CodePersonalAccessTokenExpired                 Code = 54
	CodeUsersLimitReached                          Code = 55
	CodeInvalidPersonalAccessTokenExpiry           Code = 56
	CodeTransientNotCommitted                      Code = 57
	CodeTransientNotAccepted                       Code = 58
	CodeRequestAlreadyApplied                      Code = 59
	CodeNotConnected                               Code = 61
	CodeClientShutdown                             Code = 63
	CodeInvalidTlsDomain                           Code = 64
	CodeInvalidTlsCertificatePath                  Code = 65
	CodeInvalidTlsCertificate                      Code = 66
	CodeFailedToAddCertificate                     Code = 67
	CodeInvalidEncryptionKey                       Code = 70
	CodeCannotEncryptData                          Code = 71
	CodeCannotDecryptData                          Code = 72
	CodeInvalidJwtAlgorithm                        Code = 73
	CodeInvalidJwtSecret                           Code = 74
	CodeJwtMissing                                 Code = 75
	CodeCannotGenerateJwt                          Code = 76
	CodeAccessTokenMissing                         Code = 77
	CodeInvalidAccessToken                         Code = 78
	CodeCannotFetchJwks                            Code = 79
	CodeInvalidSizeBytes                           Code = 80
	CodeInvalidUtf8                                Code = 81
	CodeInvalidNumberEncoding                      Code = 82
	CodeInvalidBooleanValue                        Code = 83
	CodeInvalidNumberValue                         Code = 84
	CodeClientNotFound                             Code = 100
	CodeInvalidClientId                            Code = 101
	CodeConnectionClosed                           Code = 206
	CodeCannotParseHeaderKind                      Code = 209
	CodeHttpResponseError                          Code = 300
	CodeInvalidHttpRequest                         Code = 301
	CodeInvalidJsonResponse                        Code = 302
	CodeInvalidBytesResponse                       Code = 303
	CodeEmptyResponse                              Code = 304
	CodeCannotCreateEndpoint                       Code = 305
	CodeCannotParseUrl                             Code = 306
	CodeWebSocketError                             Code = 400
	CodeWebSocketConnectionError                   Code = 401
	CodeWebSocketCloseError                        Code = 402
	CodeWebSocketReceiveError                      Code = 403
	CodeWebSocketSendError                         Code = 404
	CodeCannotCreateStreamsDirectory               Code = 1000
	CodeCannotCreateStreamDirectory                Code = 1001
	CodeCannotCreateStreamInfo                     Code = 1002
	CodeCannotUpdateStreamInfo                     Code = 1003
	CodeCannotOpenStreamInfo                       Code = 1004
	CodeCannotReadStreamInfo                       Code = 1005
	CodeCannotCreateStream                         Code = 1006
	CodeCannotDeleteStream                         Code = 1007
	CodeCannotDeleteStreamDirectory                Code = 1008
	CodeStreamIdNotFound                           Code = 1009
	CodeStreamNameNotFound                         Code = 1010
	CodeStreamDirectoryNotFound                    Code = 1011
	CodeStreamNameAlreadyExists                    Code = 1012
	CodeInvalidStreamName                          Code = 1013
	CodeInvalidStreamId                            Code = 1014
	CodeCannotReadStreams                          Code = 1015
	CodeInvalidTopicSize                           Code = 1019
	CodeTooManyStreams                             Code = 1020
	CodeCannotCreateTopicsDirectory                Code = 2000
	CodeCannotCreateTopicDirectory                 Code = 2001
	CodeCannotCreateTopicInfo                      Code = 2002
	CodeCannotUpdateTopicInfo                      Code = 2003
	CodeCannotOpenTopicInfo                        Code = 2004
	CodeCannotReadTopicInfo                        Code = 2005
	CodeCannotCreateTopic                          Code = 2006
	CodeCannotDeleteTopic                          Code = 2007
	CodeCannotDeleteTopicDirectory                 Code = 2008
	CodeCannotPollTopic                            Code = 2009
	CodeTopicIdNotFound                            Code = 2010
	CodeTopicNameNotFound                          Code = 2011
	CodeTopicNameAlreadyExists                     Code = 2013
	CodeInvalidTopicName                           Code = 2014
	CodeTooManyPartitions                          Code = 2015
	CodeInvalidTopicId                             Code = 2016
	CodeCannotReadTopics                           Code = 2017
	CodeInvalidReplicationFactor                   Code = 2018
	CodeInvalidPartitionsCount                     Code = 2019
	CodeTopicDirectoryNotFound                     Code = 2020
	CodeTooManyTopics                              Code = 2021
	CodeCannotCreatePartition                      Code = 3000
	CodeCannotCreatePartitionsDirectory            Code = 3001
	CodeCannotCreatePartitionDirectory             Code = 3002
	CodeCannotOpenPartitionLogFile                 Code = 3003
	CodeCannotReadPartitions                       Code = 3004
	CodeCannotDeletePartition                      Code = 3005
	CodeCannotDeletePartitionDirectory             Code = 3006
	CodePartitionNotFound                          Code = 3007
	CodeNoPartitions                               Code = 3008
	CodeTopicFull                                  Code = 3009
	CodeCannotDeleteConsumerOffsetsDirectory       Code = 3010
	CodeCannotDeleteConsumerOffsetFile             Code = 3011
	CodeCannotCreateConsumerOffsetsDirectory       Code = 3012
	CodePartitionIdSpaceExhausted                  Code = 3013
	CodeCannotReadConsumerOffsets                  Code = 3020
	CodeConsumerOffsetNotFound                     Code = 3021
	CodeNotResolvedConsumer                        Code = 3022
	CodeCannotOpenConsumerOffsetsFile              Code = 3023
	CodeSegmentNotFound                            Code = 4000
	CodeSegmentClosed                              Code = 4001
	CodeInvalidSegmentSize                         Code = 4002
	CodeCannotCreateSegmentLogFile                 Code = 4003
	CodeCannotCreateSegmentIndexFile               Code = 4004
	CodeCannotCreateSegmentTimeIndexFile           Code = 4005
	CodeCannotSaveMessagesToSegment                Code = 4006
	CodeCannotSaveIndexToSegment                   Code = 4007
	CodeCannotSaveTimeIndexToSegment               Code = 4008
	CodeInvalidMessagesCount                       Code = 4009
	CodeCannotAppendMessage                        Code = 4010
	CodeCannotReadMessage                          Code = 4011
	CodeCannotReadMessageId                        Code = 4012
	CodeCannotReadMessageState                     Code = 4013
	CodeCannotReadMessageTimestamp                 Code = 4014
	CodeCannotReadHeadersLength                    Code = 4015
	CodeCannotReadHeadersPayload                   Code = 4016
	CodeTooBigUserHeaders                          Code = 4017
	CodeInvalidHeaderKey                           Code = 4018
	CodeInvalidHeaderValue                         Code = 4019
	CodeCannotReadMessageLength                    Code = 4020
	CodeCannotReadMessagePayload                   Code = 4021
	CodeTooBigMessagePayload                       Code = 4022
	CodeTooManyMessages                            Code = 4023
	CodeEmptyMessagePayload                        Code = 4024
	CodeInvalidMessagePayloadLength                Code = 4025
	CodeCannotReadMessageChecksum                  Code = 4026
	CodeInvalidMessageChecksum                     Code = 4027
	CodeInvalidKeyValueLength                      Code = 4028
	CodeCommandLengthError                         Code = 4029
	CodeInvalidSegmentsCount                       Code = 4030
	CodeNonZeroOffset                              Code = 4031
	CodeNonZeroTimestamp                           Code = 4032
	CodeMissingIndex                               Code = 4033
	CodeInvalidIndexesByteSize                     Code = 4034
	CodeInvalidIndexesCount                        Code = 4035
	CodeInvalidMessagesSize                        Code = 4036
	CodeTooSmallMessage                            Code = 4037
	CodeInvalidMessageTimestampDelta               Code = 4038
	CodeInvalidBatchChecksum                       Code = 4039
	CodeInvalidHeaderKind                          Code = 4040
	CodeUnsupportedOptionKey                       Code = 4041
	CodeInvalidOptionValue                         Code = 4042
	CodeOptionsBlockTooLarge                       Code = 4043
	CodeCannotSendMessagesDueToClientDisconnection Code = 4050
	CodeBackgroundSendError                        Code = 4051
	CodeBackgroundSendTimeout                      Code = 4052
	CodeBackgroundSendBufferFull                   Code = 4053
	CodeBackgroundWorkerDisconnected               Code = 4054
	CodeBackgroundSendBufferOverflow               Code = 4055
	CodeProducerClosed                             Code = 4057
	CodeInvalidOffset                              Code = 4100
	CodeInvalidReservedField                       Code = 4101
	CodeConsumerGroupIdNotFound                    Code = 5000
	CodeInvalidConsumerGroupId                     Code = 5002
	CodeConsumerGroupNameNotFound                  Code = 5003
	CodeConsumerGroupNameAlreadyExists             Code = 5004
	CodeInvalidConsumerGroupName                   Code = 5005
	CodeConsumerGroupMemberNotFound                Code = 5006
	CodeCannotCreateConsumerGroupInfo              Code = 5007
	CodeCannotDeleteConsumerGroupInfo              Code = 5008
	CodeConsumerGroupPartitionNotOwned             Code = 5009
	CodeMissingBaseOffsetRetainedMessageBatch      Code = 6000
	CodeMissingLastOffsetDeltaRetainedMessageBatch Code = 6001
	CodeMissingMaxTimestampRetainedMessageBatch    Code = 6002
	CodeMissingLengthRetainedMessageBatch          Code = 6003
	CodeMissingPayloadRetainedMessageBatch         Code = 6004
	CodeCannotReadBatchBaseOffset                  Code = 7000
	CodeCannotReadBatchLength                      Code = 7001
	CodeCannotReadLastOffsetDelta                  Code = 7002
	CodeCannotReadMaxTimestamp                     Code = 7003
	CodeCannotReadBatchPayload                     Code = 7004
	CodeInvalidConnectionString                    Code = 8000
	CodeSnapshotFileCompletionFailed               Code = 9000
	CodeCannotSerializeResource                    Code = 10000
	CodeCannotDeserializeResource                  Code = 10001
	CodeCannotReadFile                             Code = 10002
	CodeCannotReadFileMetadata                     Code = 10003
	CodeCannotSeekFile                             Code = 10004
	CodeCannotAppendToFile                         Code = 10005
	CodeCannotWriteToFile                          Code = 10006
	CodeCannotOverwriteFile                        Code = 10007
	CodeCannotDeleteFile                           Code = 10008
	CodeCannotSyncFile                             Code = 10009
	CodeCannotReadIndexOffset                      Code = 10010
	CodeCannotReadIndexPosition                    Code = 10011
	CodeCannotReadIndexTimestamp                   Code = 10012
	CodeTimestampOutOfRange                        Code = 10013
	CodeShardNotFound                              Code = 11000
	CodeShardCommunicationError                    Code = 11001
	CodeCannotBindToSocket                         Code = 12000
	CodeTaskTimeout                                Code = 12001
	CodeIoError                                    Code = 13000
	CodeAlreadyAuthenticated                       Code = 14000
	CodeInvalidSession                             Code = 14001
	CodeIncompatibleProtocolVersion                Code = 14003
)

var codeNames = map[Code]codeInfo{
	CodeError:                                      {"Error", "error"},
	CodeInvalidConfiguration:                       {"InvalidConfiguration", "invalid configuration"},
	CodeInvalidCommand:                             {"InvalidCommand", "invalid command"},
	CodeInvalidFormat:                              {"InvalidFormat", "invalid format"},
	CodeFeatureUnavailable:                         {"FeatureUnavailable", "feature unavailable"},
	CodeInvalidIdentifier:                          {"InvalidIdentifier", "invalid identifier"},
	CodeInvalidVersion:                             {"InvalidVersion", "invalid version"},
	CodeDisconnected:                               {"Disconnected", "disconnected"},
	CodeCannotEstablishConnection:                  {"CannotEstablishConnection", "cannot establish connection"},
	CodeCannotCreateBaseDirectory:                  {"CannotCreateBaseDirectory", "cannot create base directory"},
	CodeCannotCreateRuntimeDirectory:               {"CannotCreateRuntimeDirectory", "cannot create runtime directory"},
	CodeCannotRemoveRuntimeDirectory:               {"CannotRemoveRuntimeDirectory", "cannot remove runtime directory"},
	CodeCannotCreateStateDirectory:                 {"CannotCreateStateDirectory", "cannot create state directory"},
	CodeStateFileNotFound:                          {"StateFileNotFound", "state file not found"},
	CodeStateFileCorrupted:                         {"StateFileCorrupted", "state file corrupted"},
	CodeInvalidStateEntryChecksum:                  {"InvalidStateEntryChecksum", "invalid state entry checksum"},
	CodeCannotOpenDatabase:                         {"CannotOpenDatabase", "cannot open database"},
	CodeResourceNotFound:                           {"ResourceNotFound", "resource not found"},
	CodeCannotCloseWebSocketConnection:             {"CannotCloseWebSocketConnection", "cannot close web socket connection"},
	CodeStaleClient:                                {"StaleClient", "stale client"},
	CodeTcpError:                                   {"TcpError", "TCP error"},
	CodeQuicError:                                  {"QuicError", "QUIC error"},
	CodeInvalidServerAddress:                       {"InvalidServerAddress", "invalid server address"},
	CodeInvalidClientAddress:                       {"InvalidClientAddress", "invalid client address"},
	CodeInvalidIpAddress:                           {"InvalidIpAddress", "invalid IP address"},
	CodeHttpError:                                  {"HttpError", "HTTP error"},
	CodeInvalidApiUrl:                              {"InvalidApiUrl", "invalid API url"},
	CodeUnauthenticated:                            {"Unauthenticated", "unauthenticated"},
	CodeUnauthorized:                               {"Unauthorized", "unauthorized"},
	CodeInvalidCredentials:                         {"InvalidCredentials", "invalid credentials"},
	CodeInvalidUsername:                            {"InvalidUsername", "invalid username"},
	CodeInvalidPassword:                            {"InvalidPassword", "invalid password"},
	CodeInvalidUserStatus:                          {"InvalidUserStatus", "invalid user status"},
	CodeUserAlreadyExists:                          {"UserAlreadyExists", "user already exists"},
	CodeUserInactive:                               {"UserInactive", "user inactive"},
	CodeCannotDeleteUser:                           {"CannotDeleteUser", "cannot delete user"},
	CodeCannotChangePermissions:                    {"CannotChangePermissions", "cannot change permissions"},
	CodeInvalidPersonalAccessTokenName:             {"InvalidPersonalAccessTokenName", "invalid personal access token name"},
	CodePersonalAccessTokenAlreadyExists:           {"PersonalAccessTokenAlreadyExists", "personal access token already exists"},
	CodePersonalAccessTokensLimitReached:           {"PersonalAccessTokensLimitReached", "personal access tokens limit reached"},
	CodeInvalidPersonalAccessToken:                 {"InvalidPersonalAccessToken", "invalid personal access token"},
	CodePersonalAccessTokenExpired:                 {"PersonalAccessTokenExpired", "personal access token expired"},
	CodeUsersLimitReached:                          {"UsersLimitReached", "users limit reached"},
	CodeInvalidPersonalAccessTokenExpiry:           {"InvalidPersonalAccessTokenExpiry", "invalid personal access token expiry"},
	CodeTransientNotCommitted:                      {"TransientNotCommitted", "transient not committed"},
	CodeTransientNotAccepted:                       {"TransientNotAccepted", "transient not accepted"},
	CodeRequestAlreadyApplied:                      {"RequestAlreadyApplied", "request already applied"},
	CodeNotConnected:                               {"NotConnected", "not connected"},
	CodeClientShutdown:                             {"ClientShutdown", "client shutdown"},
	CodeInvalidTlsDomain:                           {"InvalidTlsDomain", "invalid TLS domain"},
	CodeInvalidTlsCertificatePath:                  {"InvalidTlsCertificatePath", "invalid TLS certificate path"},
	CodeInvalidTlsCertificate:                      {"InvalidTlsCertificate", "invalid TLS certificate"},
	CodeFailedToAddCertificate:                     {"FailedToAddCertificate", "failed to add certificate"},
	CodeInvalidEncryptionKey:                       {"InvalidEncryptionKey", "invalid encryption key"},
	CodeCannotEncryptData:                          {"CannotEncryptData", "cannot encrypt data"},
	CodeCannotDecryptData:                          {"CannotDecryptData", "cannot decrypt data"},
	CodeInvalidJwtAlgorithm:                        {"InvalidJwtAlgorithm", "invalid JWT algorithm"},
	CodeInvalidJwtSecret:                           {"InvalidJwtSecret", "invalid JWT secret"},
	CodeJwtMissing:                                 {"JwtMissing", "JWT missing"},
	CodeCannotGenerateJwt:                          {"CannotGenerateJwt", "cannot generate JWT"},
	CodeAccessTokenMissing:                         {"AccessTokenMissing", "access token missing"},
	CodeInvalidAccessToken:                         {"InvalidAccessToken", "invalid access token"},
	CodeCannotFetchJwks:                            {"CannotFetchJwks", "cannot fetch JWKS"},
	CodeInvalidSizeBytes:                           {"InvalidSizeBytes", "invalid size bytes"},
	CodeInvalidUtf8:                                {"InvalidUtf8", "invalid UTF-8"},
	CodeInvalidNumberEncoding:                      {"InvalidNumberEncoding", "invalid number encoding"},
	CodeInvalidBooleanValue:                        {"InvalidBooleanValue", "invalid boolean value"},
	CodeInvalidNumberValue:                         {"InvalidNumberValue", "invalid number value"},
	CodeClientNotFound:                             {"ClientNotFound", "client not found"},
	CodeInvalidClientId:                            {"InvalidClientId", "invalid client id"},
	CodeConnectionClosed:                           {"ConnectionClosed", "connection closed"},
	CodeCannotParseHeaderKind:                      {"CannotParseHeaderKind", "cannot parse header kind"},
	CodeHttpResponseError:                          {"HttpResponseError", "HTTP response error"},
	CodeInvalidHttpRequest:                         {"InvalidHttpRequest", "invalid HTTP request"},
	CodeInvalidJsonResponse:                        {"InvalidJsonResponse", "invalid json response"},
	CodeInvalidBytesResponse:                       {"InvalidBytesResponse", "invalid bytes response"},
	CodeEmptyResponse:                              {"EmptyResponse", "empty response"},
	CodeCannotCreateEndpoint:                       {"CannotCreateEndpoint", "cannot create endpoint"},
	CodeCannotParseUrl:                             {"CannotParseUrl", "cannot parse url"},
	CodeWebSocketError:                             {"WebSocketError", "web socket error"},
	CodeWebSocketConnectionError:                   {"WebSocketConnectionError", "web socket connection error"},
	CodeWebSocketCloseError:                        {"WebSocketCloseError", "web socket close error"},
	CodeWebSocketReceiveError:                      {"WebSocketReceiveError", "web socket receive error"},
	CodeWebSocketSendError:                         {"WebSocketSendError", "web socket send error"},
	CodeCannotCreateStreamsDirectory:               {"CannotCreateStreamsDirectory", "cannot create streams directory"},
	CodeCannotCreateStreamDirectory:                {"CannotCreateStreamDirectory", "cannot create stream directory"},
	CodeCannotCreateStreamInfo:                     {"CannotCreateStreamInfo", "cannot create stream info"},
	CodeCannotUpdateStreamInfo:                     {"CannotUpdateStreamInfo", "cannot update stream info"},
	CodeCannotOpenStreamInfo:                       {"CannotOpenStreamInfo", "cannot open stream info"},
	CodeCannotReadStreamInfo:                       {"CannotReadStreamInfo", "cannot read stream info"},
	CodeCannotCreateStream:                         {"CannotCreateStream", "cannot create stream"},
	CodeCannotDeleteStream:                         {"CannotDeleteStream", "cannot delete stream"},
	CodeCannotDeleteStreamDirectory:                {"CannotDeleteStreamDirectory", "cannot delete stream directory"},
	CodeStreamIdNotFound:                           {"StreamIdNotFound", "stream id not found"},
	CodeStreamNameNotFound:                         {"StreamNameNotFound", "stream name not found"},
	CodeStreamDirectoryNotFound:                    {"StreamDirectoryNotFound", "stream directory not found"},
	CodeStreamNameAlreadyExists:                    {"StreamNameAlreadyExists", "stream name already exists"},
	CodeInvalidStreamName:                          {"InvalidStreamName", "invalid stream name"},
	CodeInvalidStreamId:                            {"InvalidStreamId", "invalid stream id"},
	CodeCannotReadStreams:                          {"CannotReadStreams", "cannot read streams"},
	CodeInvalidTopicSize:                           {"InvalidTopicSize", "invalid topic size"},
	CodeTooManyStreams:                             {"TooManyStreams", "too many streams"},
	CodeCannotCreateTopicsDirectory:                {"CannotCreateTopicsDirectory", "cannot create topics directory"},
	CodeCannotCreateTopicDirectory:                 {"CannotCreateTopicDirectory", "cannot create topic directory"},
	CodeCannotCreateTopicInfo:                      {"CannotCreateTopicInfo", "cannot create topic info"},
	CodeCannotUpdateTopicInfo:                      {"CannotUpdateTopicInfo", "cannot update topic info"},
	CodeCannotOpenTopicInfo:                        {"CannotOpenTopicInfo", "cannot open topic info"},
	CodeCannotReadTopicInfo:                        {"CannotReadTopicInfo", "cannot read topic info"},
	CodeCannotCreateTopic:                          {"CannotCreateTopic", "cannot create topic"},
	CodeCannotDeleteTopic:                          {"CannotDeleteTopic", "cannot delete topic"},
	CodeCannotDeleteTopicDirectory:                 {"CannotDeleteTopicDirectory", "cannot delete topic directory"},
	CodeCannotPollTopic:                            {"CannotPollTopic", "cannot poll topic"},
	CodeTopicIdNotFound:                            {"TopicIdNotFound", "topic id not found"},
	CodeTopicNameNotFound:                          {"TopicNameNotFound", "topic name not found"},
	CodeTopicNameAlreadyExists:                     {"TopicNameAlreadyExists", "topic name already exists"},
	CodeInvalidTopicName:                           {"InvalidTopicName", "invalid topic name"},
	CodeTooManyPartitions:                          {"TooManyPartitions", "too many partitions"},
	CodeInvalidTopicId:                             {"InvalidTopicId", "invalid topic id"},
	CodeCannotReadTopics:                           {"CannotReadTopics", "cannot read topics"},
	CodeInvalidReplicationFactor:                   {"InvalidReplicationFactor", "invalid replication factor"},
	CodeInvalidPartitionsCount:                     {"InvalidPartitionsCount", "invalid partitions count"},
	CodeTopicDirectoryNotFound:                     {"TopicDirectoryNotFound", "topic directory not found"},
	CodeTooManyTopics:                              {"TooManyTopics", "too many topics"},
	CodeCannotCreatePartition:                      {"CannotCreatePartition", "cannot create partition"},
	CodeCannotCreatePartitionsDirectory:            {"CannotCreatePartitionsDirectory", "cannot create partitions directory"},
	CodeCannotCreatePartitionDirectory:             {"CannotCreatePartitionDirectory", "cannot create partition directory"},
	CodeCannotOpenPartitionLogFile:                 {"CannotOpenPartitionLogFile", "cannot open partition log file"},
	CodeCannotReadPartitions:                       {"CannotReadPartitions", "cannot read partitions"},
	CodeCannotDeletePartition:                      {"CannotDeletePartition", "cannot delete partition"},
	CodeCannotDeletePartitionDirectory:             {"CannotDeletePartitionDirectory", "cannot delete partition directory"},
	CodePartitionNotFound:                          {"PartitionNotFound", "partition not found"},
	CodeNoPartitions:                               {"NoPartitions", "no partitions"},
	CodeTopicFull:                                  {"TopicFull", "topic full"},
	CodeCannotDeleteConsumerOffsetsDirectory:       {"CannotDeleteConsumerOffsetsDirectory", "cannot delete consumer offsets directory"},
	CodeCannotDeleteConsumerOffsetFile:             {"CannotDeleteConsumerOffsetFile", "cannot delete consumer offset file"},
	CodeCannotCreateConsumerOffsetsDirectory:       {"CannotCreateConsumerOffsetsDirectory", "cannot create consumer offsets directory"},
	CodePartitionIdSpaceExhausted:                  {"PartitionIdSpaceExhausted", "partition id space exhausted"},
	CodeCannotReadConsumerOffsets:                  {"CannotReadConsumerOffsets", "cannot read consumer offsets"},
	CodeConsumerOffsetNotFound:                     {"ConsumerOffsetNotFound", "consumer offset not found"},
	CodeNotResolvedConsumer:                        {"NotResolvedConsumer", "not resolved consumer"},
	CodeCannotOpenConsumerOffsetsFile:              {"CannotOpenConsumerOffsetsFile", "cannot open consumer offsets file"},
	CodeSegmentNotFound:                            {"SegmentNotFound", "segment not found"},
	CodeSegmentClosed:                              {"SegmentClosed", "segment closed"},
	CodeInvalidSegmentSize:                         {"InvalidSegmentSize", "invalid segment size"},
	CodeCannotCreateSegmentLogFile:                 {"CannotCreateSegmentLogFile", "cannot create segment log file"},
	CodeCannotCreateSegmentIndexFile:               {"CannotCreateSegmentIndexFile", "cannot create segment index file"},
	CodeCannotCreateSegmentTimeIndexFile:           {"CannotCreateSegmentTimeIndexFile", "cannot create segment time index file"},
	CodeCannotSaveMessagesToSegment:                {"CannotSaveMessagesToSegment", "cannot save messages to segment"},
	CodeCannotSaveIndexToSegment:                   {"CannotSaveIndexToSegment", "cannot save index to segment"},
	CodeCannotSaveTimeIndexToSegment:               {"CannotSaveTimeIndexToSegment", "cannot save time index to segment"},
	CodeInvalidMessagesCount:                       {"InvalidMessagesCount", "invalid messages count"},
	CodeCannotAppendMessage:                        {"CannotAppendMessage", "cannot append message"},
	CodeCannotReadMessage:                          {"CannotReadMessage", "cannot read message"},
	CodeCannotReadMessageId:                        {"CannotReadMessageId", "cannot read message id"},
	CodeCannotReadMessageState:                     {"CannotReadMessageState", "cannot read message state"},
	CodeCannotReadMessageTimestamp:                 {"CannotReadMessageTimestamp", "cannot read message timestamp"},
	CodeCannotReadHeadersLength:                    {"CannotReadHeadersLength", "cannot read headers length"},
	CodeCannotReadHeadersPayload:                   {"CannotReadHeadersPayload", "cannot read headers payload"},
	CodeTooBigUserHeaders:                          {"TooBigUserHeaders", "too big user headers"},
	CodeInvalidHeaderKey:                           {"InvalidHeaderKey", "invalid header key"},
	CodeInvalidHeaderValue:                         {"InvalidHeaderValue", "invalid header value"},
	CodeCannotReadMessageLength:                    {"CannotReadMessageLength", "cannot read message length"},
	CodeCannotReadMessagePayload:                   {"CannotReadMessagePayload", "cannot read message payload"},
	CodeTooBigMessagePayload:                       {"TooBigMessagePayload", "too big message payload"},
	CodeTooManyMessages:                            {"TooManyMessages", "too many messages"},
	CodeEmptyMessagePayload:                        {"EmptyMessagePayload", "empty message payload"},
	CodeInvalidMessagePayloadLength:                {"InvalidMessagePayloadLength", "invalid message payload length"},
	CodeCannotReadMessageChecksum:                  {"CannotReadMessageChecksum", "cannot read message checksum"},
	CodeInvalidMessageChecksum:                     {"InvalidMessageChecksum", "invalid message checksum"},
	CodeInvalidKeyValueLength:                      {"InvalidKeyValueLength", "invalid key value length"},
	CodeCommandLengthError:                         {"CommandLengthError", "command length error"},
	CodeInvalidSegmentsCount:                       {"InvalidSegmentsCount", "invalid segments count"},
	CodeNonZeroOffset:                              {"NonZeroOffset", "non zero offset"},
	CodeNonZeroTimestamp:                           {"NonZeroTimestamp", "non zero timestamp"},
	CodeMissingIndex:                               {"MissingIndex", "missing index"},
	CodeInvalidIndexesByteSize:                     {"InvalidIndexesByteSize", "invalid indexes byte size"},
	CodeInvalidIndexesCount:                        {"InvalidIndexesCount", "invalid indexes count"},
	CodeInvalidMessagesSize:                        {"InvalidMessagesSize", "invalid messages size"},
	CodeTooSmallMessage:                            {"TooSmallMessage", "too small message"},
	CodeInvalidMessageTimestampDelta:               {"InvalidMessageTimestampDelta", "invalid message timestamp delta"},
	CodeInvalidBatchChecksum:                       {"InvalidBatchChecksum", "invalid batch checksum"},
	CodeInvalidHeaderKind:                          {"InvalidHeaderKind", "invalid header kind"},
	CodeUnsupportedOptionKey:                       {"UnsupportedOptionKey", "unsupported option key"},
	CodeInvalidOptionValue:                         {"InvalidOptionValue", "invalid option value"},
	CodeOptionsBlockTooLarge:                       {"OptionsBlockTooLarge", "options block too large"},
	CodeCannotSendMessagesDueToClientDisconnection: {"CannotSendMessagesDueToClientDisconnection", "cannot send messages due to client disconnection"},
	CodeBackgroundSendError:                        {"BackgroundSendError", "background send error"},
	CodeBackgroundSendTimeout:                      {"BackgroundSendTimeout", "background send timeout"},
	CodeBackgroundSendBufferFull:                   {"BackgroundSendBufferFull", "background send buffer full"},
	CodeBackgroundWorkerDisconnected:               {"BackgroundWorkerDisconnected", "background worker disconnected"},
	CodeBackgroundSendBufferOverflow:               {"BackgroundSendBufferOverflow", "background send buffer overflow"},
	CodeProducerClosed:                             {"ProducerClosed", "producer closed"},
	CodeInvalidOffset:                              {"InvalidOffset", "invalid offset"},
	CodeInvalidReservedField:                       {"InvalidReservedField", "invalid reserved field"},
	CodeConsumerGroupIdNotFound:                    {"ConsumerGroupIdNotFound", "consumer group id not found"},
	CodeInvalidConsumerGroupId:                     {"InvalidConsumerGroupId", "invalid consumer group id"},
	CodeConsumerGroupNameNotFound:                  {"ConsumerGroupNameNotFound", "consumer group name not found"},
	CodeConsumerGroupNameAlreadyExists:             {"ConsumerGroupNameAlreadyExists", "consumer group name already exists"},
	CodeInvalidConsumerGroupName:                   {"InvalidConsumerGroupName", "invalid consumer group name"},
	CodeConsumerGroupMemberNotFound:                {"ConsumerGroupMemberNotFound", "consumer group member not found"},
	CodeCannotCreateConsumerGroupInfo:              {"CannotCreateConsumerGroupInfo", "cannot create consumer group info"},
	CodeCannotDeleteConsumerGroupInfo:              {"CannotDeleteConsumerGroupInfo", "cannot delete consumer group info"},
	CodeConsumerGroupPartitionNotOwned:             {"ConsumerGroupPartitionNotOwned", "consumer group partition not owned"},
	CodeMissingBaseOffsetRetainedMessageBatch:      {"MissingBaseOffsetRetainedMessageBatch", "missing base offset retained message batch"},
	CodeMissingLastOffsetDeltaRetainedMessageBatch: {"MissingLastOffsetDeltaRetainedMessageBatch", "missing last offset delta retained message batch"},
	CodeMissingMaxTimestampRetainedMessageBatch:    {"MissingMaxTimestampRetainedMessageBatch", "missing max timestamp retained message batch"},
	CodeMissingLengthRetainedMessageBatch:          {"MissingLengthRetainedMessageBatch", "missing length retained message batch"},
	CodeMissingPayloadRetainedMessageBatch:         {"MissingPayloadRetainedMessageBatch", "missing payload retained message batch"},
	CodeCannotReadBatchBaseOffset:                  {"CannotReadBatchBaseOffset", "cannot read batch base offset"},
	CodeCannotReadBatchLength:                      {"CannotReadBatchLength", "cannot read batch length"},
	CodeCannotReadLastOffsetDelta:                  {"CannotReadLastOffsetDelta", "cannot read last offset delta"},
	CodeCannotReadMaxTimestamp:                     {"CannotReadMaxTimestamp", "cannot read max timestamp"},
	CodeCannotReadBatchPayload:                     {"CannotReadBatchPayload", "cannot read batch payload"},
	CodeInvalidConnectionString:                    {"InvalidConnectionString", "invalid connection string"},
	CodeSnapshotFileCompletionFailed:               {"SnapshotFileCompletionFailed", "snapshot file completion failed"},
	CodeCannotSerializeResource:                    {"CannotSerializeResource", "cannot serialize resource"},
	CodeCannotDeserializeResource:                  {"CannotDeserializeResource", "cannot deserialize resource"},
	CodeCannotReadFile:                             {"CannotReadFile", "cannot read file"},
	CodeCannotReadFileMetadata:                     {"CannotReadFileMetadata", "cannot read file metadata"},
	CodeCannotSeekFile:                             {"CannotSeekFile", "cannot seek file"},
	CodeCannotAppendToFile:                         {"CannotAppendToFile", "cannot append to file"},
	CodeCannotWriteToFile:                          {"CannotWriteToFile", "cannot write to file"},
	CodeCannotOverwriteFile:                        {"CannotOverwriteFile", "cannot overwrite file"},
	CodeCannotDeleteFile:                           {"CannotDeleteFile", "cannot delete file"},
	CodeCannotSyncFile:                             {"CannotSyncFile", "cannot sync file"},
	CodeCannotReadIndexOffset:                      {"CannotReadIndexOffset", "cannot read index offset"},
	CodeCannotReadIndexPosition:                    {"CannotReadIndexPosition", "cannot read index position"},
	CodeCannotReadIndexTimestamp:                   {"CannotReadIndexTimestamp", "cannot read index timestamp"},
	CodeTimestampOutOfRange:                        {"TimestampOutOfRange", "timestamp out of range"},
	CodeShardNotFound:                              {"ShardNotFound", "shard not found"},
	CodeShardCommunicationError:                    {"ShardCommunicationError", "shard communication error"},
	CodeCannotBindToSocket:                         {"CannotBindToSocket", "cannot bind to socket"},
	CodeTaskTimeout:                                {"TaskTimeout", "task timeout"},
	CodeIoError:                                    {"IoError", "io error"},
	CodeAlreadyAuthenticated:                       {"AlreadyAuthenticated", "already authenticated"},
	CodeInvalidSession:                             {"InvalidSession", "invalid session"},
	CodeIncompatibleProtocolVersion:                {"IncompatibleProtocolVersion", "incompatible protocol version"},
}
