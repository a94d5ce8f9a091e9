package replica

import (
	"encoding/binary"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/transport"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// target is a resolved partition: its namespace, incarnation and shard.
type target struct {
	stream, topic, partition uint32
	ns                       shard.Namespace
	rev                      uint64
	shard                    int
}

// ref names the partition incarnation of a request for it.
func (tg target) ref() partRef { return partRef{ns: tg.ns, rev: tg.rev} }

func (c *conn) target(st *metadata.Stream, tp *metadata.Topic, pid uint32) (target, wire.Code) {
	p, ok := tp.Partition(pid)
	if !ok {
		return target{}, wire.CodePartitionNotFound
	}
	ns, err := shard.NewNamespace(st.ID, tp.ID, pid)
	if err != nil {
		return target{}, wire.CodePartitionNotFound
	}
	return target{stream: st.ID, topic: tp.ID, partition: pid, ns: ns, rev: p.Revision,
		shard: shard.OwningShard(ns, len(c.n.shards))}, 0
}

type topicKey struct {
	stream, topic uint32
	rev           uint64
}

// nextBalanced is the server-side round robin of balanced sends, per topic.
func (n *Node) nextBalanced(tp *metadata.Topic) uint32 {
	k := topicKey{tp.StreamID, tp.ID, tp.Revision}
	v, ok := n.topicRR.Load(k)
	if !ok {
		v, _ = n.topicRR.LoadOrStore(k, new(atomic.Uint32))
	}
	return v.(*atomic.Uint32).Add(1) - 1
}

// consumerKey resolves a consumer to the key its offsets are stored under;
// for a group it also returns the group.
func consumerKey(tp *metadata.Topic, cons wire.Consumer) (offsetKey, *metadata.ConsumerGroup, wire.Code) {
	switch cons.Kind {
	case wire.ConsumerKindSingle:
		return offsetKey{Kind: wire.ConsumerKindSingle, ID: wire.ConsumerKey(cons.ID)}, nil, 0
	case wire.ConsumerKindGroup:
		g := tp.ResolveGroup(cons.ID)
		if g == nil {
			return offsetKey{}, nil, wire.CodeConsumerGroupIdNotFound
		}
		return offsetKey{Kind: wire.ConsumerKindGroup, ID: g.ID}, g, 0
	}
	return offsetKey{}, nil, wire.CodeInvalidCommand
}

// send: admission (layout, checksums, dense deltas), routing, then the
// owning shard's partition group; the reply confirms the base offset.
func (c *conn) send(h *wire.RequestHeader, body []byte) bool {
	req, err := wire.DecodeSendMessages(body)
	if err != nil {
		return c.refuseBody(h, "send_messages body", err)
	}
	if err := req.Batch.CheckDenseDeltas(); err != nil {
		return c.refuseBody(h, "send_messages body", err)
	}
	// Iggy 0.9 resolves the partition before it authorizes, and answers
	// ResourceNotFound for a stream, topic or partition that does not
	// resolve (dispatch_partition_request).
	view := c.n.store.View()
	st, tp, code := view.ResolveTopic(req.StreamID, req.TopicID)
	if code != 0 {
		return c.status(h, wire.CodeResourceNotFound)
	}
	count := tp.PartitionsCount()
	if count == 0 {
		return c.status(h, wire.CodeResourceNotFound)
	}
	var pid uint32
	switch req.Partitioning.Kind {
	case wire.PartitionBalanced:
		pid = c.n.nextBalanced(tp) % count
	case wire.PartitionIDKind:
		pid = req.Partitioning.PartitionID
	case wire.PartitionMessagesKey:
		pid = wire.PartitionForKey(req.Partitioning.Key, count)
	default:
		return c.status(h, wire.CodeInvalidCommand)
	}
	tg, code := c.target(st, tp, pid)
	if code != 0 {
		return c.status(h, wire.CodeResourceNotFound)
	}
	uid := c.user()
	if !view.Allowed(uid, metadata.ActionSendMessages, st.ID, tp.ID) {
		return c.status(h, wire.CodeUnauthorized)
	}
	r := &c.reqs.send
	*r = sendReq{partRef: tg.ref(), user: uid}
	if !h.Producer.IsZero() {
		// The session bounds the producer table's eviction floor: it must
		// be a metadata op this node has seen (iggo's client uses a login
		// session), or one bogus identity could raise the floor above
		// every session and lock every new producer out.
		if h.ProducerSession > view.LastApplied() {
			return c.status(h, wire.CodeInvalidSession)
		}
		r.producer, r.session, r.request = toVSR(h.Producer), h.ProducerSession, h.ProducerRequest
	}
	r.body = req.Batch.Bytes()
	if alg := topicAlgorithm(tp.Config.Compression); c.n.atRest.sealed() || alg != codec.None {
		// Compressed and encrypted once here, before the prepare: the
		// journal, every replica and the segments hold the same stored
		// bytes. A cluster node encodes into a fresh buffer the prepare
		// may keep, instead of reusing one the owning shard would have to
		// copy.
		dst := c.ebuf[:0]
		if c.n.replicaCount > 1 {
			dst = nil
		}
		enc, changed, code := c.n.encodeSend(dst, req.Batch, alg)
		if code != 0 {
			return c.status(h, code)
		}
		if changed {
			r.body, r.owned = enc, c.n.replicaCount > 1
			if !r.owned {
				c.ebuf = enc
			}
		}
	}
	ok := c.run(tg.shard, r)
	r.body, r.owned = nil, false
	if !ok {
		return false
	}
	if code := c.partitionStatus(); code != 0 {
		return c.status(h, code)
	}
	conf := wire.SendConfirmations{{StreamID: st.ID, TopicID: tp.ID, PartitionID: pid,
		BaseOffset: binary.LittleEndian.Uint64(c.t.reply)}}
	return c.okPayload(h, conf)
}

// Names of the message limits in refusal log lines.
const (
	limitPayloadEmpty   = "message payload_length >= 1"
	limitPayloadMax     = "message payload_length <= 64000000 (Iggy MAX_PAYLOAD_SIZE)"
	limitUserHeadersMax = "message user_headers_length <= 100000 (Iggy MAX_USER_HEADERS_SIZE)"
)

// refuseBody answers a request whose body did not decode with the Iggy
// code the decoder gave (InvalidCommand when none) and logs it,
// rate-limited per limit, under the limit it broke (what, for a
// malformed body).
func (c *conn) refuseBody(h *wire.RequestHeader, what string, err error) bool {
	code := errCode(err)
	limit := what
	switch code {
	case wire.CodeInvalidMessagePayloadLength:
		limit = limitPayloadEmpty
	case wire.CodeTooBigMessagePayload:
		limit = limitPayloadMax
	case wire.CodeTooBigUserHeaders:
		limit = limitUserHeadersMax
	}
	c.n.limitLog.Warn(limit, "refused a request over a limit", zap.String("limit", limit), zap.String("addr", c.addr),
		zap.Stringer("code", code), zap.Uint32("client", c.id), zap.Error(err))
	return c.status(h, code)
}

// partitionStatus is the status-field code of a partition-plane answer.
func (c *conn) partitionStatus() wire.Code {
	switch {
	case c.t.status != 0:
		return wire.Code(c.t.status)
	case c.t.vstatus == vsr.StatusEvicted:
		// The producer table refused the identity (evicted, superseded or
		// another user's): nothing was applied by this attempt.
		return wire.CodeInvalidSession
	case c.t.vstatus != vsr.StatusOK:
		return wire.Code(c.t.vstatus)
	case len(c.t.reply) < 4:
		return wire.CodeError
	}
	return 0
}

// offsetWriteTarget resolves a consumer-offset store or delete as Iggy 0.9
// does (fence_and_resolve_offset_namespace, then dispatch_partition_request):
// every stream, topic, partition or group that does not resolve, an absent
// partition, and a group partition the caller does not own answer
// ResourceNotFound; permission is checked after resolution.
func (c *conn) offsetWriteTarget(cons wire.Consumer, sid, tid wire.Identifier, part wire.OptionalPartition) (target, offsetKey, wire.Code) {
	view := c.n.store.View()
	st, tp, code := view.ResolveTopic(sid, tid)
	if code != 0 || !part.Set {
		return target{}, offsetKey{}, wire.CodeResourceNotFound
	}
	key, g, code := consumerKey(tp, cons)
	if code == wire.CodeConsumerGroupIdNotFound {
		return target{}, offsetKey{}, wire.CodeResourceNotFound
	}
	if code != 0 {
		return target{}, offsetKey{}, code
	}
	if g != nil && !g.Owns(c.clientID(), part.ID) {
		return target{}, offsetKey{}, wire.CodeResourceNotFound
	}
	tg, code := c.target(st, tp, part.ID)
	if code != 0 {
		return target{}, offsetKey{}, wire.CodeResourceNotFound
	}
	if !view.Allowed(c.user(), metadata.ActionStoreConsumerOffset, st.ID, tp.ID) {
		return target{}, offsetKey{}, wire.CodeUnauthorized
	}
	return tg, key, 0
}

// offsetReadTarget resolves a consumer-offset read as Iggy 0.9 does
// (handle_get_consumer_offset): an absent partition reads partition 0; a
// stream, topic or group that does not resolve is an empty reply (no
// offset), a partition that does not exist PartitionNotFound.
func (c *conn) offsetReadTarget(cons wire.Consumer, sid, tid wire.Identifier, part wire.OptionalPartition) (tg target, key offsetKey, empty bool, code wire.Code) {
	view := c.n.store.View()
	st, tp, code := view.ResolveTopic(sid, tid)
	if code != 0 {
		return target{}, offsetKey{}, true, 0
	}
	if !view.Allowed(c.user(), metadata.ActionGetConsumerOffset, st.ID, tp.ID) {
		return target{}, offsetKey{}, false, wire.CodeUnauthorized
	}
	pid := uint32(0)
	if part.Set {
		pid = part.ID
	}
	tg, code = c.target(st, tp, pid)
	if code != 0 {
		return target{}, offsetKey{}, false, code
	}
	key, _, code = consumerKey(tp, cons)
	if code == wire.CodeConsumerGroupIdNotFound {
		return target{}, offsetKey{}, true, 0
	}
	return tg, key, false, code
}

func (c *conn) storeOffset(h *wire.RequestHeader, body []byte) bool {
	var req wire.StoreConsumerOffset
	if err := req.DecodeBody(body); err != nil {
		return c.refuseBody(h, "store_consumer_offset body", err)
	}
	tg, key, code := c.offsetWriteTarget(req.Consumer, req.StreamID, req.TopicID, req.Partition)
	if code != 0 {
		return c.status(h, code)
	}
	c.reqs.storeOffset = storeOffsetReq{partRef: tg.ref(), user: c.user(), key: key, offset: req.Offset}
	if !c.run(tg.shard, &c.reqs.storeOffset) {
		return false
	}
	if code := c.partitionStatus(); code != 0 {
		return c.status(h, code)
	}
	if code := replyCode(c.t.reply); code != 0 {
		return c.status(h, wire.Code(code))
	}
	return c.ok(h, nil)
}

func (c *conn) deleteOffset(h *wire.RequestHeader, body []byte) bool {
	var req wire.DeleteConsumerOffset
	if err := req.DecodeBody(body); err != nil {
		return c.refuseBody(h, "delete_consumer_offset body", err)
	}
	tg, key, code := c.offsetWriteTarget(req.Consumer, req.StreamID, req.TopicID, req.Partition)
	if code != 0 {
		return c.status(h, code)
	}
	c.reqs.deleteOffset = deleteOffsetReq{partRef: tg.ref(), user: c.user(), key: key}
	if !c.run(tg.shard, &c.reqs.deleteOffset) {
		return false
	}
	if code := c.partitionStatus(); code != 0 {
		return c.status(h, code)
	}
	if code := replyCode(c.t.reply); code != 0 {
		return c.status(h, wire.Code(code))
	}
	return c.ok(h, nil)
}

func (c *conn) getOffset(h *wire.RequestHeader, req *wire.GetConsumerOffset) bool {
	tg, key, empty, code := c.offsetReadTarget(req.Consumer, req.StreamID, req.TopicID, req.Partition)
	if code != 0 {
		return c.status(h, code)
	}
	if empty {
		return c.ok(h, nil)
	}
	c.reqs.getOffset = getOffsetReq{partRef: tg.ref(), key: key}
	if !c.run(tg.shard, &c.reqs.getOffset) {
		return false
	}
	if c.t.status != 0 {
		return c.status(h, wire.Code(c.t.status))
	}
	if !c.t.poll.Found {
		return c.ok(h, nil)
	}
	info := wire.ConsumerOffsetInfo{PartitionID: tg.partition, CurrentOffset: c.t.poll.Current, StoredOffset: c.t.poll.Stored}
	return c.okPayload(h, &info)
}

// emptyPoll is the poll reply with no messages.
func (c *conn) emptyPoll(h *wire.RequestHeader, partition uint32, current uint64) bool {
	c.pbuf = wire.AppendPollReplyPrefix(c.pbuf[:0], partition, current, 0)
	return c.ok(h, c.pbuf)
}

func (c *conn) poll(h *wire.RequestHeader, body []byte) bool {
	var req wire.PollMessages
	if err := req.DecodeBody(body); err != nil {
		// Iggy answers an empty poll here, which a consumer reads as the
		// end of the partition; the status says what is wrong instead.
		return c.refuseBody(h, "poll_messages body", err)
	}
	if req.WaitMillis > 0 {
		return c.pollWaiting(h, &req)
	}
	var st pollStep
	if replied, ok := c.pollOnce(h, &req, &st); replied {
		return ok
	}
	return c.pollFinish(h)
}

// pollStep is what pollOnce resolved: the partition it polled and, for a
// consumer-group poll without a partition, how many partitions the member
// owns (1 otherwise).
type pollStep struct {
	tg    target
	owned int
}

// pollOnce resolves a poll and runs it on the owning shard, leaving the
// result in c.t.poll. replied says the request was answered already (a
// refusal or a resync), with ok false when the connection must close.
func (c *conn) pollOnce(h *wire.RequestHeader, req *wire.PollMessages, st *pollStep) (replied, ok bool) {
	view := c.n.store.View()
	group := req.Consumer.Kind == wire.ConsumerKindGroup
	st0, tp, code := view.ResolveTopic(req.StreamID, req.TopicID)
	if code != 0 {
		if group {
			// Iggy 0.9 fences a group poll before it resolves the
			// partition: an unknown stream or topic fails the fence,
			// answered with the resync sentinel.
			return true, c.emptyPoll(h, wire.ResyncPartition, 0)
		}
		return true, c.status(h, code)
	}
	uid := c.user()
	if !view.Allowed(uid, metadata.ActionPollMessages, st0.ID, tp.ID) {
		return true, c.status(h, wire.CodeUnauthorized)
	}
	key, g, code := consumerKey(tp, req.Consumer)
	if code == wire.CodeConsumerGroupIdNotFound {
		return true, c.emptyPoll(h, wire.ResyncPartition, 0)
	}
	if code != 0 {
		return true, c.status(h, code)
	}
	pid := uint32(0)
	if req.Partition.Set {
		pid = req.Partition.ID
	}
	st.owned = 1
	if g != nil {
		client := c.clientID()
		if req.Partition.Set {
			if !g.Pollable(client, pid) {
				return true, c.emptyPoll(h, wire.ResyncPartition, 0)
			}
		} else {
			_, owned, ok := g.Assignment(client)
			if !ok || len(owned) == 0 {
				return true, c.emptyPoll(h, wire.ResyncPartition, 0)
			}
			pid = owned[c.rr%uint32(len(owned))]
			c.rr++
			st.owned = len(owned)
		}
		if c.n.handOffPending(st0.ID, tp.ID, pid, g.ID) {
			// Just handed over: this replica has not applied the old
			// owner's last commit yet (consumer_group_rebalance.go).
			return true, c.emptyPoll(h, pid, 0)
		}
	}
	tg, code := c.target(st0, tp, pid)
	if code != 0 {
		return true, c.status(h, code)
	}
	st.tg = tg
	r := &c.reqs.poll
	*r = pollReq{partRef: tg.ref(), user: uid, key: key, strategy: req.Strategy, count: req.Count, auto: req.AutoCommit, buf: r.buf}
	if !c.run(tg.shard, r) {
		return true, false
	}
	if c.t.status != 0 {
		return true, c.status(h, wire.Code(c.t.status))
	}
	return false, true
}

// pollFinish answers with the records pollOnce left in c.t.poll.
func (c *conn) pollFinish(h *wire.RequestHeader) bool {
	if (c.n.atRest.sealed() || c.t.poll.Compressed) && len(c.t.poll.Parts) > 0 {
		buf, code := c.n.decodePoll(c.dbuf, &c.t.poll)
		c.dbuf = buf
		if code != 0 {
			return c.status(h, code)
		}
	}
	return c.pollReply(h)
}

// pollReply writes the header, the 16-byte prefix and the records with one
// vectored write: record bytes go from the read buffer to the socket
// without another copy.
func (c *conn) pollReply(h *wire.RequestHeader) bool {
	r := &c.t.poll
	size := wire.HeaderSize + wire.PollReplyPrefixSize
	for _, p := range r.Parts {
		size += len(p)
	}
	rh := wire.ReplyTo(h)
	rh.Size = uint32(size)
	if cap(c.wbuf) < wire.HeaderSize+wire.PollReplyPrefixSize {
		c.wbuf = make([]byte, 0, 4096)
	}
	hb := c.wbuf[:wire.HeaderSize]
	rh.Put(hb)
	hb = wire.AppendPollReplyPrefix(hb, r.Partition, r.Current, r.Count)
	c.iov = append(c.iov[:0], hb)
	c.iov = append(c.iov, r.Parts...)
	var err error
	if vw, ok := c.nc.(transport.VecWriter); ok {
		_, err = vw.WriteVec(c.iov)
	} else {
		iov := c.iov
		_, err = iov.WriteTo(c.nc)
	}
	if err != nil {
		return false
	}
	clear(c.iov)
	return true
}

func (c *conn) deleteSegments(h *wire.RequestHeader, body []byte) bool {
	var req wire.DeleteSegments
	if err := req.DecodeBody(body); err != nil {
		return c.status(h, errCode(err))
	}
	view := c.n.store.View()
	st, tp, code := view.ResolveTopic(req.StreamID, req.TopicID)
	if code != 0 {
		return c.status(h, code)
	}
	if !view.Allowed(c.user(), metadata.ActionDeleteSegments, st.ID, tp.ID) {
		return c.status(h, wire.CodeUnauthorized)
	}
	tg, code := c.target(st, tp, req.PartitionID)
	if code != 0 {
		return c.status(h, code)
	}
	c.reqs.deleteSegments = deleteSegmentsReq{partRef: tg.ref(), user: c.user(), count: req.SegmentsCount}
	if !c.run(tg.shard, &c.reqs.deleteSegments) {
		return false
	}
	if c.t.status != 0 {
		return c.status(h, wire.Code(c.t.status))
	}
	// In a cluster the deletion is a replicated op with a reply.
	if c.t.vstatus != vsr.StatusOK {
		return c.status(h, wire.Code(c.t.vstatus))
	}
	if len(c.t.reply) >= 4 {
		if code := replyCode(c.t.reply); code != 0 {
			return c.status(h, wire.Code(code))
		}
	}
	return c.ok(h, nil)
}
