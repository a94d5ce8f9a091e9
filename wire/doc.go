// Package wire is Iggy's client protocol 0.11 (the one Iggy server 0.9
// speaks): frame headers, operation and command codes, result framing,
// request and reply codecs for all 51 commands, the message batch format,
// and Iggy's numeric error codes. It knows nothing about the server; both
// iggo's server and its client build on it.
//
// All integers are little-endian. A u128 is 16 bytes, low half first.
// "Name" is a u8 length 1..255 followed by UTF-8 bytes; "Id" is an
// Identifier (below).
//
// # Frames
//
// Every message in either direction is one frame: a 256-byte header and an
// optional body, back to back on the stream with nothing in between. The
// frame length (header included) is the u32 at header offset 48; readers
// read 256 bytes, check 256 <= size <= limit (64 MiB by default) and read
// size-256 body bytes (ReadFrame). The byte at offset 60 classifies the frame:
// 5 Request (client to server), 8 Reply and 13 Eviction (server to client).
//
// The first 128 bytes are common to all shapes:
//
//	 0  16  checksum        u128  0 on client frames, never checked
//	16  16  checksum_body   u128  0 on client frames, never checked
//	32  16  cluster         u128  echoed by replies
//	48   4  size            u32   header + body
//	52   4  view            u32   informational
//	56   4  release         u32   must be 0
//	60   1  command         u8    frame kind
//	61   1  replica         u8    answering replica in replies
//	62  66  reserved        zero
//
// The request, reply and eviction tails are documented on RequestHeader,
// ReplyHeader and EvictionHeader.
//
// # Operations, command codes and request numbers
//
// A request's operation byte (offset 176) names the consensus operation:
// 1 Register (login, codes 40 and 45), 2 NonReplicated (every read, ping and
// unknown code; the u32 command code then sits at offset 196), 3 Logout,
// 128..149 metadata writes and 160..162 partition writes (send, store and
// delete offset). Replicated requests carry no command code; the operation
// identifies them (CommandCode.Operation, CommandForOperation).
//
// Request numbers (offset 168): a client session counts from 1. Register
// sends 0; Logout and the metadata operations (128..149) take the current
// value and advance it; NonReplicated and partition operations send the
// current value without advancing it (Operation.AdvancesRequest). Replies
// echo the request number and the operation; a client that receives a reply
// with another request number must drop the connection.
//
// # Replies and errors
//
// Errors reach a client in three ways:
//
//   - the status field (reply offset 216): a non-zero Iggy code for a denial
//     decided before commit; the body is then empty (AppendStatusReply);
//   - the result section, only on result-framed replies (ResultFramed:
//     metadata operations except 138, store/delete offset, and non-empty
//     Register replies): [count u32] then count x {index u32, result u32}.
//     Success is count 0 followed by the payload; a committed rejection is
//     [1][0][code] (AppendReply / AppendRejectionReply / SplitResult);
//   - an eviction frame, header only, which ends the session; its reason maps
//     to an Iggy code (EvictionReason.Code).
//
// Codes are the type Code with Iggy's names (CodeStreamIdNotFound = 1009, ...);
// *Error carries one, and errors.Is matches by code. Decoders return
// *FieldError naming the structure, field, byte offset and reason; it
// reports InvalidCommand (3) unless a more precise code applies.
//
// # Shared encodings
//
// Identifier: [kind u8][len u8][value]; kind 1 numeric, len 4, u32; kind 2
// string, len 1..255, UTF-8. Numeric ids are 0-based.
//
// Consumer: [kind u8: 1 consumer, 2 group][Id]. OptionalPartition: 5 bytes
// [flag u8][u32], flag 1 = present. PollingStrategy: [kind u8][value u64]
// (1 offset, 2 timestamp, 3 first, 4 last, 5 next). Partitioning: [kind u8]
// [len u8][value] (1 balanced, len 0; 2 partition id, len 4; 3 messages key,
// len 1..255).
//
// Longer strings in replies are u32 length + bytes. Booleans are one byte,
// 0 false, anything else true.
//
// User headers and options are the same TLV run:
// [kind u8][len u32][value] repeated, alternating key and value, every kind
// non-zero, every length 1..255, numeric kinds at their fixed size. Unknown
// kinds (> 15) are preserved. Options additionally require UTF-8 string
// keys, no duplicates, at most 1024 pairs and 100,000 bytes; in requests the
// options block runs to the end of the body, inside reply records it has a
// u32 length prefix. The topic option catalog (TopicOptionCatalog) lists
// every key with its canonical kind, default, bounds and whether UPDATE_TOPIC
// may change it; ResolveTopicCreate and ResolveTopicUpdate implement
// admission (canonicalization to the key's kind, explicit versus derived).
//
// Permissions are described on Permissions.
//
// # Message batches
//
// One encoding is used for the send body, the stored record and the poll
// reply: a 256-byte batch header followed by frames, each a 48-byte frame
// header, the payload and the user headers (see BatchHeader and Frame).
// Each frame's checksum is XXH3-64 (seed 0) over the frame from byte 8 to its
// end. The batch checksum is XXH3-64 over partition_id, base_offset,
// base_timestamp, origin_timestamp, batch_length (u64 each), message_count
// (u32), then every frame's 8 checksum bytes in order; producers compute it
// with the three server fields zero, and the server recomputes it when it
// stamps them (BatchView.Stamp). A message's offset is base_offset +
// offset_delta; its server time is base_timestamp; its origin time is
// origin_timestamp + timestamp_delta.
//
// VerifyBatch validates a batch in place, in one pass and without allocating:
// layout, every frame checksum, user headers, the batch checksum and the
// producer limits (payload 1..64,000,000 bytes, user headers at most
// 100,000 bytes: 4025, 4022, 4017).
// BatchView.SliceByOffset cuts poll records out of a stored batch without
// copying frames. FinishFrame and FinishBatch restamp lengths and checksums
// of frames and records rebuilt in place (the at-rest codec rewrites
// payloads with them).
//
// # Server use
//
//	frame, err := wire.ReadFrame(conn, buf, maxFrame)        // *FrameSizeError: close
//	hdr, body, err := wire.DecodeRequest(frame, maxFrame)    // rules of RequestHeader.Validate
//	req, err := wire.DecodeRequestBody(hdr.Code, body)       // typed *wire.CreateTopic, ...
//	out = wire.AppendReply(out, &hdr, payload)               // result framing applied for you
//	out = wire.AppendStatusReply(out, &hdr, wire.CodeUnauthorized)
//	out = wire.AppendRejectionReply(out, &hdr, wire.CodeTopicNameAlreadyExists)
//	out = wire.AppendEviction(out, prefix, hdr.Client, wire.EvictInvalidCredentials, 0, 0)
//
// DecodeRequest fails for a frame the real server would not process (bad
// kind, size, release, unknown operation, or the rules of Validate); the
// real server drops such frames without a reply, and a server may also
// close the connection. Register bodies go through DecodeRegister: check the
// version with Accepts(server, min, v) (answer EvictIncompatibleProtocol with
// the window otherwise), then try the password form and fall back to the
// token form.
//
// The send path should call DecodeSendMessages directly (no interface
// allocation), apply BatchView.CheckDenseDeltas if offsets must be dense,
// and BatchView.Stamp before appending. A poll reply is the 16-byte prefix
// (AppendPollReplyPrefix) followed by records: whole stored batches, or
// BatchSlice values from SliceByOffset whose Header and Frames can be
// written with net.Buffers so payloads are never copied. Reply payloads are
// built with the AppendTo methods of the reply types (Stream,
// TopicDetails, ...); AppendReply adds the result section where it belongs.
//
// # iggo's extensions
//
// Three opt-in extensions that Iggy's SDKs never send, so their requests
// decode and are answered exactly as Iggy's: POLL_MESSAGES may end with
// the 5-byte wait extension (PollWaitTag, long polling; PollMessages
// documents it byte by byte), GET_STATS may carry the 1-byte body
// StatsExtTag, which adds an 8-byte trailer to the reply (GetStats), and a
// SEND_MESSAGES header may carry a producer identity in reserved bytes
// 200..232 (RequestHeader documents it): the partition then applies the
// send at most once per identity and answers a retry with the original
// confirmation. A send refused by the partition's producer table gets
// status InvalidSession (14001: the identity was evicted or superseded,
// the send was not applied by this attempt) or RequestAlreadyApplied (59:
// the producer sent a newer request since).
//
// # Client use
//
// Requests implement Request (Code, AppendBody). DecodeReply applies the
// Go SDK's decode order and returns the payload, which the Decode* function of
// the command's reply type turns into a value.
package wire
