package wire

import (
	"encoding/binary"
	"strconv"
)

// Frame geometry.
const (
	// HeaderSize is the fixed header in front of every frame.
	HeaderSize = 256
	// DefaultMaxFrameSize is the largest frame (header + body) either side
	// accepts by default: 64 MiB, like Iggy's server and Go SDK.
	DefaultMaxFrameSize = 64 * 1024 * 1024
)

// Byte offsets shared by every header shape (the common prefix).
const (
	offChecksum     = 0
	offChecksumBody = 16
	offCluster      = 32
	offSize         = 48
	offView         = 52
	offRelease      = 56
	offCommand      = 60
	offReplica      = 61
	offReservedFrm  = 62 // 66 bytes, through 127
)

// Request header offsets.
const (
	offReqClient          = 128
	offReqRequestChecksum = 144
	offReqTimestamp       = 160
	offReqRequest         = 168
	offReqOperation       = 176
	offReqSession         = 184
	offReqUserID          = 192
	offReqCode            = 196 // NonReplicated only: u32 command code
	// iggo's producer identity (SendMessages only; Iggy's SDKs send zeros).
	offReqProducer        = 200
	offReqProducerSession = 216
	offReqProducerRequest = 224
)

// Reply header offsets.
const (
	offRepRequestChecksum = 128
	offRepContext         = 144
	offRepClient          = 160
	offRepOp              = 176
	offRepCommit          = 184
	offRepTimestamp       = 192
	offRepRequest         = 200
	offRepOperation       = 208
	offRepStatus          = 216
)

// Eviction header offsets.
const (
	offEvClient     = 128
	offEvVersionMax = 144
	offEvVersionMin = 148
	offEvReason     = 255
)

// FrameKind is the "command" byte at offset 60: it classifies a frame.
type FrameKind uint8

// Frame kinds seen on a client connection (the others belong to the replica
// plane and never appear there).
const (
	FrameReserved FrameKind = 0
	FrameRequest  FrameKind = 5
	FrameReply    FrameKind = 8
	FrameEviction FrameKind = 13
)

func (k FrameKind) String() string {
	switch k {
	case FrameRequest:
		return "Request"
	case FrameReply:
		return "Reply"
	case FrameEviction:
		return "Eviction"
	}
	return "FrameKind(" + strconv.Itoa(int(k)) + ")"
}

// Uint128 is a little-endian 128-bit value: Lo is bytes 0..8, Hi bytes 8..16.
type Uint128 struct {
	Lo, Hi uint64
}

// IsZero reports whether both halves are zero.
func (u Uint128) IsZero() bool { return u.Lo == 0 && u.Hi == 0 }

func getU128(b []byte) Uint128 {
	return Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}
}

func putU128(b []byte, v Uint128) {
	binary.LittleEndian.PutUint64(b, v.Lo)
	binary.LittleEndian.PutUint64(b[8:], v.Hi)
}

// FrameKindOf returns the kind byte of a header (b must hold >= 61 bytes).
func FrameKindOf(header []byte) FrameKind { return FrameKind(header[offCommand]) }

// FrameSizeOf returns the size field (header + body) of a header.
func FrameSizeOf(header []byte) uint32 { return binary.LittleEndian.Uint32(header[offSize:]) }

// Prefix is the common 128-byte prefix every header starts with. Client-facing
// frames are unsealed: both checksums are zero and never verified.
type Prefix struct {
	Checksum     Uint128
	ChecksumBody Uint128
	Cluster      Uint128
	Size         uint32
	View         uint32
	Release      uint32
	Kind         FrameKind
	Replica      uint8
}

func (p *Prefix) put(b []byte) {
	putU128(b[offChecksum:], p.Checksum)
	putU128(b[offChecksumBody:], p.ChecksumBody)
	putU128(b[offCluster:], p.Cluster)
	binary.LittleEndian.PutUint32(b[offSize:], p.Size)
	binary.LittleEndian.PutUint32(b[offView:], p.View)
	binary.LittleEndian.PutUint32(b[offRelease:], p.Release)
	b[offCommand] = byte(p.Kind)
	b[offReplica] = p.Replica
}

func getPrefix(b []byte) Prefix {
	return Prefix{
		Checksum:     getU128(b[offChecksum:]),
		ChecksumBody: getU128(b[offChecksumBody:]),
		Cluster:      getU128(b[offCluster:]),
		Size:         binary.LittleEndian.Uint32(b[offSize:]),
		View:         binary.LittleEndian.Uint32(b[offView:]),
		Release:      binary.LittleEndian.Uint32(b[offRelease:]),
		Kind:         FrameKind(b[offCommand]),
		Replica:      b[offReplica],
	}
}

// RequestHeader is the client-to-server header (kind 5).
//
//	  0..128  common prefix (size at 48, kind 5 at 60, release 0)
//	128..144  client           u128, non-zero, random per registration
//	144..160  request_checksum u128, XXH3-64(body) widened, or 0 = not stamped
//	160..168  timestamp        u64, informational, echoed in the reply
//	168..176  request          u64, request number (see Operation.AdvancesRequest)
//	176       operation        u8
//	177..184  padding          zero
//	184..192  session          u64, from the login reply; 0 before login
//	192..196  user_id          u32, clients send 0
//	196..256  reserved         zero, except 196..200 = command code for NonReplicated
//	                           and, on SendMessages, iggo's producer identity:
//	200..216  producer         u128, 0 = none (Iggy's SDKs: at-least-once)
//	216..224  producer_session u64, > 0 when producer != 0
//	224..232  producer_request u64, > 0 when producer != 0
//	232..256  reserved         zero
//
// The producer identity is an iggo extension (exactly-once sends): a send
// that carries it is applied at most once per (producer, producer_session,
// producer_request) by its partition, and a retry gets the first attempt's
// confirmation. Iggy's server ignores these bytes; Iggy's SDKs leave them 0.
type RequestHeader struct {
	Prefix
	Client          Uint128
	RequestChecksum Uint128
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Session         uint64
	UserID          uint32
	// Code is the command code carried in the reserved bytes; written only
	// when Operation is NonReplicated. For replicated operations decoding
	// fills it from the operation (CommandForOperation).
	Code CommandCode
	// Producer, ProducerSession and ProducerRequest are the producer
	// identity of a SendMessages (zero: none); written and read only for
	// OpSendMessages.
	Producer        Uint128
	ProducerSession uint64
	ProducerRequest uint64
}

// Put writes the header into b[0:256], zeroing everything it does not set.
// Kind is forced to FrameRequest; Size is written as given.
func (h *RequestHeader) Put(b []byte) {
	b = b[:HeaderSize]
	clear(b)
	p := h.Prefix
	p.Kind = FrameRequest
	p.put(b)
	putU128(b[offReqClient:], h.Client)
	putU128(b[offReqRequestChecksum:], h.RequestChecksum)
	binary.LittleEndian.PutUint64(b[offReqTimestamp:], h.Timestamp)
	binary.LittleEndian.PutUint64(b[offReqRequest:], h.Request)
	b[offReqOperation] = byte(h.Operation)
	binary.LittleEndian.PutUint64(b[offReqSession:], h.Session)
	binary.LittleEndian.PutUint32(b[offReqUserID:], h.UserID)
	if h.Operation == OpNonReplicated {
		binary.LittleEndian.PutUint32(b[offReqCode:], uint32(h.Code))
	}
	if h.Operation == OpSendMessages {
		putU128(b[offReqProducer:], h.Producer)
		binary.LittleEndian.PutUint64(b[offReqProducerSession:], h.ProducerSession)
		binary.LittleEndian.PutUint64(b[offReqProducerRequest:], h.ProducerRequest)
	}
}

// DecodeRequestHeader decodes the structure of a request header: at least 256
// bytes, kind 5, size within [256, maxFrame], release 0, a known operation.
// It does not apply the session rules; see Validate. maxFrame 0 means
// DefaultMaxFrameSize.
func DecodeRequestHeader(b []byte, maxFrame uint32) (RequestHeader, error) {
	const what = "request header"
	if len(b) < HeaderSize {
		return RequestHeader{}, fieldErr(what, "header", 0, "needs %d bytes, got %d", HeaderSize, len(b))
	}
	if maxFrame == 0 {
		maxFrame = DefaultMaxFrameSize
	}
	var h RequestHeader
	h.Prefix = getPrefix(b)
	if h.Kind != FrameRequest {
		return RequestHeader{}, fieldErr(what, "command", offCommand, "frame kind %d is not Request (5)", h.Kind)
	}
	if h.Size < HeaderSize || h.Size > maxFrame {
		return RequestHeader{}, fieldErr(what, "size", offSize, "frame size %d outside [%d, %d]", h.Size, HeaderSize, maxFrame)
	}
	if h.Release != 0 {
		return RequestHeader{}, fieldErr(what, "release", offRelease, "must be 0, got %d", h.Release)
	}
	h.Client = getU128(b[offReqClient:])
	h.RequestChecksum = getU128(b[offReqRequestChecksum:])
	h.Timestamp = binary.LittleEndian.Uint64(b[offReqTimestamp:])
	h.Request = binary.LittleEndian.Uint64(b[offReqRequest:])
	h.Operation = Operation(b[offReqOperation])
	h.Session = binary.LittleEndian.Uint64(b[offReqSession:])
	h.UserID = binary.LittleEndian.Uint32(b[offReqUserID:])
	if !h.Operation.Known() {
		return RequestHeader{}, fieldErr(what, "operation", offReqOperation, "unknown operation %d", h.Operation)
	}
	if h.Operation == OpNonReplicated {
		h.Code = CommandCode(binary.LittleEndian.Uint32(b[offReqCode:]))
	} else if c, ok := CommandForOperation(h.Operation); ok {
		h.Code = c
	}
	if h.Operation == OpSendMessages {
		h.Producer = getU128(b[offReqProducer:])
		h.ProducerSession = binary.LittleEndian.Uint64(b[offReqProducerSession:])
		h.ProducerRequest = binary.LittleEndian.Uint64(b[offReqProducerRequest:])
	}
	return h, nil
}

// Validate applies the server's field rules (a request failing them is
// answered by dropping or evicting, never processed): client != 0; operation
// allowed from clients (not Reserved, not 64..68); Register carries session 0
// and request 0; every operation other than Register and NonReplicated
// carries session > 0 and request > 0.
func (h *RequestHeader) Validate() error {
	const what = "request header"
	if h.Client.IsZero() {
		return fieldErr(what, "client", offReqClient, "must be non-zero")
	}
	if !h.Operation.ClientAllowed() {
		return fieldErr(what, "operation", offReqOperation, "operation %s is not allowed from clients", h.Operation)
	}
	switch h.Operation {
	case OpRegister:
		if h.Session != 0 {
			return fieldErr(what, "session", offReqSession, "register must carry session 0, got %d", h.Session)
		}
		if h.Request != 0 {
			return fieldErr(what, "request", offReqRequest, "register must carry request 0, got %d", h.Request)
		}
	case OpNonReplicated:
	default:
		if h.Session == 0 {
			return fieldErr(what, "session", offReqSession, "operation %s needs a session", h.Operation)
		}
		if h.Request == 0 {
			return fieldErr(what, "request", offReqRequest, "operation %s needs a request number > 0", h.Operation)
		}
	}
	if !h.Producer.IsZero() && h.ProducerSession == 0 {
		return fieldErr(what, "producer_session", offReqProducerSession, "a producer identity needs a session > 0")
	}
	if !h.Producer.IsZero() && h.ProducerRequest == 0 {
		return fieldErr(what, "producer_request", offReqProducerRequest, "a producer identity needs a request > 0")
	}
	return nil
}

// ReplyHeader is the server-to-client header (kind 8).
//
//	  0..128  common prefix (size at 48, kind 8 at 60)
//	128..144  request_checksum u128, echo of the request's
//	144..160  context          u128, 0
//	160..176  client           u128, the client id
//	176..184  op               u64, log position (informational)
//	184..192  commit           u64, commit number (informational)
//	192..200  timestamp        u64, echo of the request's
//	200..208  request          u64, echo of the request's: SDKs check it
//	208       operation        u8, echo of the request's: decides result framing
//	209..216  padding          zero
//	216..220  status           u32, 0 ok, else the Iggy code of a pre-commit
//	                           denial (the body is then empty)
//	220..256  reserved         zero
type ReplyHeader struct {
	Prefix
	RequestChecksum Uint128
	Context         Uint128
	Client          Uint128
	Op              uint64
	Commit          uint64
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Status          Code
}

// ReplyTo returns a reply header that echoes what SDKs check and what the
// real server echoes: cluster, view, client, request_checksum, timestamp,
// request and operation. Status 0, size left for the encoder.
func ReplyTo(req *RequestHeader) ReplyHeader {
	return ReplyHeader{
		Prefix:          Prefix{Cluster: req.Cluster, View: req.View, Kind: FrameReply},
		RequestChecksum: req.RequestChecksum,
		Client:          req.Client,
		Timestamp:       req.Timestamp,
		Request:         req.Request,
		Operation:       req.Operation,
	}
}

// Put writes the header into b[0:256]; Kind is forced to FrameReply.
func (h *ReplyHeader) Put(b []byte) {
	b = b[:HeaderSize]
	clear(b)
	p := h.Prefix
	p.Kind = FrameReply
	p.put(b)
	putU128(b[offRepRequestChecksum:], h.RequestChecksum)
	putU128(b[offRepContext:], h.Context)
	putU128(b[offRepClient:], h.Client)
	binary.LittleEndian.PutUint64(b[offRepOp:], h.Op)
	binary.LittleEndian.PutUint64(b[offRepCommit:], h.Commit)
	binary.LittleEndian.PutUint64(b[offRepTimestamp:], h.Timestamp)
	binary.LittleEndian.PutUint64(b[offRepRequest:], h.Request)
	b[offRepOperation] = byte(h.Operation)
	binary.LittleEndian.PutUint32(b[offRepStatus:], uint32(h.Status))
}

// DecodeReplyHeader decodes a reply header: at least 256 bytes, kind 8, size
// within [256, maxFrame] (0 = DefaultMaxFrameSize), known operation.
func DecodeReplyHeader(b []byte, maxFrame uint32) (ReplyHeader, error) {
	const what = "reply header"
	if len(b) < HeaderSize {
		return ReplyHeader{}, fieldErr(what, "header", 0, "needs %d bytes, got %d", HeaderSize, len(b))
	}
	if maxFrame == 0 {
		maxFrame = DefaultMaxFrameSize
	}
	var h ReplyHeader
	h.Prefix = getPrefix(b)
	if h.Kind != FrameReply {
		return ReplyHeader{}, fieldErr(what, "command", offCommand, "frame kind %d is not Reply (8)", h.Kind)
	}
	if h.Size < HeaderSize || h.Size > maxFrame {
		return ReplyHeader{}, fieldErr(what, "size", offSize, "frame size %d outside [%d, %d]", h.Size, HeaderSize, maxFrame)
	}
	readReplyTail(&h, b)
	if !h.Operation.Known() {
		return ReplyHeader{}, fieldErr(what, "operation", offRepOperation, "unknown operation %d", h.Operation)
	}
	return h, nil
}

func readReplyTail(h *ReplyHeader, b []byte) {
	h.RequestChecksum = getU128(b[offRepRequestChecksum:])
	h.Context = getU128(b[offRepContext:])
	h.Client = getU128(b[offRepClient:])
	h.Op = binary.LittleEndian.Uint64(b[offRepOp:])
	h.Commit = binary.LittleEndian.Uint64(b[offRepCommit:])
	h.Timestamp = binary.LittleEndian.Uint64(b[offRepTimestamp:])
	h.Request = binary.LittleEndian.Uint64(b[offRepRequest:])
	h.Operation = Operation(b[offRepOperation])
	h.Status = Code(binary.LittleEndian.Uint32(b[offRepStatus:]))
}

// EvictionHeader is the session-terminal server-to-client header (kind 13).
// It is header-only (size 256) and carries no request correlation.
//
//	  0..128  common prefix (size 256, kind 13, reserved_frame zero)
//	128..144  client       u128, non-zero
//	144..148  version_max  u32, packed protocol version; reason 14 only
//	148..152  version_min  u32, packed protocol version; reason 14 only
//	152..255  reserved     zero
//	255       reason       u8 (EvictionReason)
type EvictionHeader struct {
	Prefix
	Client     Uint128
	VersionMax uint32
	VersionMin uint32
	Reason     EvictionReason
}

// Put writes the header into b[0:256]; Kind is forced to FrameEviction and
// Size to 256.
func (h *EvictionHeader) Put(b []byte) {
	b = b[:HeaderSize]
	clear(b)
	p := h.Prefix
	p.Kind = FrameEviction
	p.Size = HeaderSize
	p.put(b)
	putU128(b[offEvClient:], h.Client)
	binary.LittleEndian.PutUint32(b[offEvVersionMax:], h.VersionMax)
	binary.LittleEndian.PutUint32(b[offEvVersionMin:], h.VersionMin)
	b[offEvReason] = byte(h.Reason)
}

// DecodeEvictionHeader decodes and validates an eviction header as Iggy
// does: kind 13, size exactly 256, client non-zero, reserved regions zero,
// reason not Reserved, version window only (and well-formed) on reason 14.
func DecodeEvictionHeader(b []byte) (EvictionHeader, error) {
	const what = "eviction header"
	if len(b) < HeaderSize {
		return EvictionHeader{}, fieldErr(what, "header", 0, "needs %d bytes, got %d", HeaderSize, len(b))
	}
	var h EvictionHeader
	h.Prefix = getPrefix(b)
	if h.Kind != FrameEviction {
		return EvictionHeader{}, fieldErr(what, "command", offCommand, "frame kind %d is not Eviction (13)", h.Kind)
	}
	if h.Size != HeaderSize {
		return EvictionHeader{}, fieldErr(what, "size", offSize, "must be %d, got %d", HeaderSize, h.Size)
	}
	if h.Release != 0 {
		return EvictionHeader{}, fieldErr(what, "release", offRelease, "must be 0, got %d", h.Release)
	}
	for i := offReservedFrm; i < 128; i++ {
		if b[i] != 0 {
			return EvictionHeader{}, fieldErr(what, "reserved_frame", i, "must be zero")
		}
	}
	h.Client = getU128(b[offEvClient:])
	h.VersionMax = binary.LittleEndian.Uint32(b[offEvVersionMax:])
	h.VersionMin = binary.LittleEndian.Uint32(b[offEvVersionMin:])
	h.Reason = EvictionReason(b[offEvReason])
	if h.Client.IsZero() {
		return EvictionHeader{}, fieldErr(what, "client", offEvClient, "must be non-zero")
	}
	for i := 152; i < offEvReason; i++ {
		if b[i] != 0 {
			return EvictionHeader{}, fieldErr(what, "reserved", i, "must be zero")
		}
	}
	if h.Reason == EvictReserved {
		return EvictionHeader{}, fieldErr(what, "reason", offEvReason, "must not be Reserved (0)")
	}
	if h.Reason == EvictIncompatibleProtocol {
		if h.VersionMin == 0 || h.VersionMax < h.VersionMin {
			return EvictionHeader{}, fieldErr(what, "server_protocol_version", offEvVersionMax,
				"window [%d, %d] must satisfy 1 <= min <= max", h.VersionMin, h.VersionMax)
		}
	} else if h.VersionMax != 0 || h.VersionMin != 0 {
		return EvictionHeader{}, fieldErr(what, "server_protocol_version", offEvVersionMax,
			"must be zero unless the reason is IncompatibleProtocol")
	}
	return h, nil
}
