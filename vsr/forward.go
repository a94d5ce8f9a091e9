package vsr

// Forwarded requests. A node whose replica of a group is a backup relays a
// client request to the group's primary (Forward) and gets the primary's
// Reply back (ForwardReply), so a client connected to any node is served.
// The replica itself never sends or consumes these frames (Step ignores
// them): they are node-to-node messages that reuse the frame format, its
// checksums and the replica plane's authenticated links.
//
// Forward (14), body = the request body:
//
//	80  u64  token       the forwarding node's reference, echoed in the reply
//	88  [16] client
//	104 u64  session
//	112 u64  request
//	120 u64  wall_clock  µs, the forwarding node's clock at arrival
//	128 u32  user
//	132 u8   operation   (not 0)
//	133 [123] reserved, zero
//
// ForwardReply (15), body = the reply body:
//
//	80  u64  token       from the Forward
//	88  u64  op
//	96  u64  timestamp
//	104 u32  status      Status
//	108 u8   eviction    EvictionReason
//	109 u8   primary     the answering replica's primary hint
//	110 [2]  reserved, zero
//	112 u32  code        node-level refusal (an Iggy code; 0 when the replica answered)
//	116 u64  origin      the incarnation of the Forward's header, echoed
//	124 [132] reserved, zero
//
// A token names a request only within one boot of the forwarding node (it
// restarts from 1), so the forwarding node takes a reply as its own only
// when origin is its own incarnation: a reply the primary sent to a
// forward of the node's previous boot would otherwise answer a request of
// the new boot that drew the same token (real-stack simulator, seed 594:
// a send was acknowledged with another producer's offset).
const (
	offFwdToken     = 80
	offFwdClient    = 88
	offFwdSession   = 104
	offFwdRequest   = 112
	offFwdWallClock = 120
	offFwdUser      = 128
	offFwdOperation = 132

	offFwdReplyOp        = 88
	offFwdReplyTimestamp = 96
	offFwdReplyStatus    = 104
	offFwdReplyEviction  = 108
	offFwdReplyPrimary   = 109
	offFwdReplyCode      = 112
	offFwdReplyOrigin    = 116
	offFwdReplyEnd       = 124
)

// Sender identifies the node sending a forwarded frame.
type Sender struct {
	Cluster      Checksum
	Group        uint64
	Replica      uint8
	ReplicaCount uint8
	Incarnation  uint64
}

func (s Sender) header(cmd Command) *Header {
	h := new(Header)
	h.putSum(offCluster, s.Cluster)
	h.put16(offProtocol, ProtocolVersion)
	h[offCommand] = byte(cmd)
	h[offReplica] = s.Replica
	h[offReplicaCount] = s.ReplicaCount
	h.put64(offGroup, s.Group)
	h.setIncarnation(s.Incarnation)
	return h
}

func sealed(h *Header, body []byte) Message {
	h.setSize(uint32(HeaderSize + len(body)))
	h.setChecksumBody(BodyChecksum(body))
	h.Seal()
	return Message{Header: h, Body: body}
}

// EncodeForward builds a Forward frame carrying req; req.Token is the
// forwarding node's token. The body is referenced, not copied.
func EncodeForward(s Sender, req Request) Message {
	if req.Operation == OperationReserved {
		panic("vsr: forwarding the reserved operation 0")
	}
	h := s.header(CmdForward)
	h.put64(offFwdToken, req.Token)
	h.putSum(offFwdClient, req.Client)
	h.put64(offFwdSession, req.Session)
	h.put64(offFwdRequest, req.Request)
	h.put64(offFwdWallClock, req.WallClock)
	h.put32(offFwdUser, req.User)
	h[offFwdOperation] = req.Operation
	return sealed(h, req.Body)
}

// ForwardedRequest returns the request a Forward frame carries (Token is the
// forwarding node's token).
func ForwardedRequest(m Message) Request {
	h := m.Header
	return Request{Token: h.u64(offFwdToken), Client: h.sum(offFwdClient), Session: h.u64(offFwdSession),
		Request: h.u64(offFwdRequest), WallClock: h.u64(offFwdWallClock), User: h.u32(offFwdUser),
		Operation: h[offFwdOperation], Body: m.Body}
}

// ForwardOrigin identifies a Forward frame to the node that sent it: its
// token and the incarnation (boot) of the node that drew the token.
type ForwardOrigin struct {
	Token       uint64
	Incarnation uint64
}

// ForwardOriginOf returns the origin of a Forward frame, which its
// ForwardReply echoes.
func ForwardOriginOf(m Message) ForwardOrigin {
	return ForwardOrigin{Token: m.Header.u64(offFwdToken), Incarnation: m.Header.Incarnation()}
}

// EncodeForwardReply builds the ForwardReply answering the Forward from
// origin with rp (its Token is ignored) or, when code is non-zero, a
// node-level refusal.
func EncodeForwardReply(s Sender, origin ForwardOrigin, rp Reply, code uint32) Message {
	h := s.header(CmdForwardReply)
	h.put64(offFwdToken, origin.Token)
	h.put64(offFwdReplyOrigin, origin.Incarnation)
	h.put64(offFwdReplyOp, rp.Op)
	h.put64(offFwdReplyTimestamp, rp.Timestamp)
	h.put32(offFwdReplyStatus, uint32(rp.Status))
	h[offFwdReplyEviction] = uint8(rp.Eviction)
	h[offFwdReplyPrimary] = rp.Primary
	h.put32(offFwdReplyCode, code)
	return sealed(h, rp.Body)
}

// ForwardedReply returns the origin, reply and node-level code of a
// ForwardReply frame.
func ForwardedReply(m Message) (origin ForwardOrigin, rp Reply, code uint32) {
	h := m.Header
	rp = Reply{Op: h.u64(offFwdReplyOp), Timestamp: h.u64(offFwdReplyTimestamp),
		Status: Status(h.u32(offFwdReplyStatus)), Eviction: EvictionReason(h[offFwdReplyEviction]),
		Primary: h[offFwdReplyPrimary], Body: m.Body}
	return ForwardOrigin{Token: h.u64(offFwdToken), Incarnation: h.u64(offFwdReplyOrigin)}, rp, h.u32(offFwdReplyCode)
}

// CommitNow broadcasts the primary's commit point at once instead of at the
// next CommitBroadcastInterval. The node calls it after answering a request
// a backup forwarded, so that backup learns the commit (and can answer its
// client from state that includes the op) without waiting for the next
// heartbeat. An extra Commit is an ordinary heartbeat to its receivers. It
// does nothing unless this replica is a settled primary of a group with
// backups.
func (r *Replica) CommitNow() {
	if r.stopped != nil || r.solo() || r.status != statusNormal || !r.isPrimary() || r.abdicated || !r.viewSettled() {
		return
	}
	r.broadcast(r.commitMessage())
}
