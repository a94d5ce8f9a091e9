package client

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/iggo/iggo/wire"
)

// MessageOption customises NewMessage.
type MessageOption func(*wire.Message) error

// WithID sets the message id (NewMessage otherwise picks a random UUIDv4).
func WithID(id wire.Uint128) MessageOption {
	return func(m *wire.Message) error { m.ID = id; return nil }
}

// WithHeaders encodes typed user headers.
func WithHeaders(entries ...wire.HeaderEntry) MessageOption {
	return func(m *wire.Message) error {
		b, err := wire.AppendUserHeaders(nil, entries)
		if err != nil {
			return err
		}
		m.UserHeaders = b
		return nil
	}
}

// WithOriginTimestamp sets the producer time in µs (default: now).
func WithOriginTimestamp(us uint64) MessageOption {
	return func(m *wire.Message) error { m.OriginTimestamp = us; return nil }
}

// NewMessage builds a message with a random id and the current time as its
// origin timestamp.
func NewMessage(payload []byte, opts ...MessageOption) (wire.Message, error) {
	m := wire.Message{ID: randomUUID(), OriginTimestamp: uint64(time.Now().UnixMicro()), Payload: payload}
	for _, o := range opts {
		if err := o(&m); err != nil {
			return wire.Message{}, err
		}
	}
	if len(m.Payload) == 0 {
		return wire.Message{}, wire.NewError(wire.CodeEmptyMessagePayload)
	}
	if len(m.Payload) > wire.MaxPayloadSize {
		return wire.Message{}, wire.NewError(wire.CodeTooBigMessagePayload)
	}
	return m, nil
}

// randomUUID is a version 4 UUID stored as its 16 bytes (low half first,
// as the Go SDK writes the UUID bytes verbatim).
func randomUUID() wire.Uint128 {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("client: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return wire.Uint128{Lo: binary.LittleEndian.Uint64(b[:8]), Hi: binary.LittleEndian.Uint64(b[8:])}
}

// SendMessages sends msgs as one batch. Balanced and messages-key
// partitioning are resolved here, against the topic's partition count
// (GET_TOPIC, cached; dropped when the server answers PartitionNotFound):
// balanced is a per-topic round robin, a key goes to XXH32(key) % count.
// The server receives partition-id partitioning.
func (c *Client) SendMessages(ctx context.Context, stream, topic wire.Identifier, p wire.Partitioning, msgs []wire.Message) (wire.SendConfirmations, error) {
	resolved := p
	if p.Kind != wire.PartitionIDKind {
		n, err := c.partitionsCount(ctx, stream, topic)
		if err != nil {
			return nil, err
		}
		switch p.Kind {
		case wire.PartitionBalanced:
			resolved = wire.PartitionByID(c.topics.nextBalanced(stream, topic, n))
		case wire.PartitionMessagesKey:
			if len(p.Key) == 0 || len(p.Key) > 255 {
				return nil, wire.NewError(wire.CodeInvalidKeyValueLength)
			}
			resolved = wire.PartitionByID(wire.PartitionForKey(p.Key, n))
		default:
			return nil, wire.Errorf(wire.CodeInvalidCommand, "unknown partitioning kind %d", p.Kind)
		}
	}
	return c.send(ctx, stream, topic, resolved, msgs)
}

// SendMessagesServerPartitioned sends with the partitioning as given, so
// balanced (1) and messages-key (3) are resolved by the server.
func (c *Client) SendMessagesServerPartitioned(ctx context.Context, stream, topic wire.Identifier, p wire.Partitioning, msgs []wire.Message) (wire.SendConfirmations, error) {
	return c.send(ctx, stream, topic, p, msgs)
}

func (c *Client) send(ctx context.Context, stream, topic wire.Identifier, p wire.Partitioning, msgs []wire.Message) (wire.SendConfirmations, error) {
	req := &wire.SendMessages{StreamID: stream, TopicID: topic, Partitioning: p, Messages: msgs}
	var payload []byte
	var err error
	if c.cfg.AtLeastOnceSends {
		payload, err = c.call(ctx, req)
	} else {
		payload, err = c.sendOnce(ctx, req)
	}
	if err != nil {
		// Iggy 0.9 answers ResourceNotFound for a send whose stream,
		// topic or partition does not resolve.
		if wire.HasCode(err, wire.CodePartitionNotFound) || wire.HasCode(err, wire.CodeResourceNotFound) {
			c.topics.invalidate(stream, topic)
		}
		return nil, err
	}
	conf, err := wire.DecodeSendConfirmations(payload)
	if err != nil {
		// The batch is committed; failing now would invite a duplicate
		// resend, so report success without placement.
		c.log.Warn("undecodable send confirmations", zap.Error(err))
		return nil, nil
	}
	return conf, nil
}

// ErrOutcomeUnknown wraps the error of a request whose outcome the client
// cannot learn: an attempt may have been applied (its reply was lost, or
// it was answered TransientNotCommitted) and a retry was refused rather
// than risk a duplicate. For a send: the partition no longer knows the
// producer (its entry was evicted, or superseded); the batch is in the
// partition at most once. For another replicated request: a leader check
// moved the client to a new session after a TransientNotCommitted answer,
// where the same request would be a new one; it applied at most once.
var ErrOutcomeUnknown = errors.New("client: outcome unknown (applied at most once)")

// sendOnce sends req with the next producer request number, and retries it
// with the same identity after reconnects, failovers and transient
// refusals until the context ends. A refusal by the partition's producer
// table (InvalidSession) of a send that surely did not apply renews the
// identity with the current login and sends again; after an attempt whose
// outcome was lost it is ErrOutcomeUnknown.
func (c *Client) sendOnce(ctx context.Context, req *wire.SendMessages) ([]byte, error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	st := &stampState{}
	var sum uint64
	for renewals := 0; ; renewals++ {
		c.mu.Lock()
		if c.prod.id.IsZero() {
			c.mu.Unlock()
			return c.call(ctx, req) // not logged in yet: the call refuses or logs in
		}
		reuse := false
		if c.prod.pending != 0 && renewals == 0 {
			// The last send's outcome is unknown: the same batch again is
			// its retry, anything else abandons it.
			pending, want := c.prod.pending, c.prod.pendingSum
			c.mu.Unlock()
			sum = bodySum(req)
			c.mu.Lock()
			reuse = sum == want && pending == c.prod.request
			c.prod.pending = 0
		}
		if !reuse {
			c.prod.request++
		}
		st.prod = producer{id: c.prod.id, session: c.prod.session, request: c.prod.request}
		st.stamped, st.written, st.lost = false, false, reuse
		c.mu.Unlock()
		payload, err := c.callAs(ctx, req, 0, st)
		if err != nil && (st.lost || st.written && !isServerError(err)) {
			// It may have been applied: remember it, so that sending the
			// same batch again is a retry. A retry of a send left in doubt
			// (st.lost from the start) keeps it in doubt however it ends,
			// even with nothing written: the earlier attempt's outcome is
			// still unknown, and a new request number for the same batch
			// would let the partition apply it twice (chaos seed 71: a
			// retry refused locally as not connected between two kills).
			if sum == 0 {
				sum = bodySum(req)
			}
			c.mu.Lock()
			if c.prod.request == st.prod.request && c.prod.id == st.prod.id {
				c.prod.pending, c.prod.pendingSum = st.prod.request, sum
			}
			c.mu.Unlock()
		}
		if !wire.HasCode(err, wire.CodeInvalidSession) && !wire.HasCode(err, wire.CodeRequestAlreadyApplied) {
			if err == nil {
				c.retried(st)
			}
			return payload, err
		}
		if st.lost || renewals > 0 || wire.HasCode(err, wire.CodeRequestAlreadyApplied) {
			return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
		}
		// Nothing was applied: a fresh identity from a new login.
		if err := c.renewProducer(ctx); err != nil {
			return nil, err
		}
	}
}

// bodySum is the XXH3-64 of a send's body (how a retry is recognised).
func bodySum(req *wire.SendMessages) uint64 {
	b, err := req.AppendBody(nil)
	if err != nil {
		return 0
	}
	return xxh3.Hash(b) | 1 // never 0
}

// isServerError reports an answer of the server (a status or result code)
// rather than a broken or abandoned exchange.
func isServerError(err error) bool {
	var we *wire.Error
	return errors.As(err, &we) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// renewProducer logs in again (a new connection, client id and session)
// and makes that login the producer identity.
func (c *Client) renewProducer(ctx context.Context) error {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	c.mu.Lock()
	old := c.prod
	c.mu.Unlock()
	if err := c.reconnectLocked(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The new login's client id has no entry in any producer table, and
	// its session (the op of this login) is above every session a table
	// has evicted, which the server bounds by the ops it has applied.
	if !c.sess.bound || c.sess.client == old.id {
		return wire.Errorf(wire.CodeInvalidSession, "no new login to renew producer %v", old.id)
	}
	c.prod = producer{id: c.sess.client, session: c.sess.id}
	return nil
}

// retried counts sends that needed more than one attempt.
func (c *Client) retried(st *stampState) {
	if st.lost {
		c.retriedSends.Add(1)
	}
}

// RetriedSends is how many sends with a producer identity lost an
// attempt's outcome and were confirmed by a retry with the same identity.
func (c *Client) RetriedSends() uint64 { return c.retriedSends.Load() }

func (c *Client) partitionsCount(ctx context.Context, stream, topic wire.Identifier) (uint32, error) {
	if n, ok := c.topics.count(stream, topic); ok {
		return n, nil
	}
	t, err := c.GetTopic(ctx, stream, topic)
	if err != nil {
		return 0, err
	}
	if t.PartitionsCount == 0 {
		return 0, wire.Errorf(wire.CodePartitionNotFound, "topic %s/%s has no partitions", stream, topic)
	}
	c.topics.setCount(stream, topic, t.PartitionsCount)
	return t.PartitionsCount, nil
}

// PollMessages polls with any strategy. A group consumer without an
// explicit partition is served by PollGroup, or with a wait by
// pollGroupWaiting.
//
// req.WaitMillis > 0 uses iggo's wait extension: a poll that finds nothing
// is held by the server until a message arrives or the wait ends (the
// call's budget is RequestTimeout plus the wait). The connection is
// lockstep, so other calls on this client wait meanwhile. A server without
// the extension (Iggy's) answers at once.
func (c *Client) PollMessages(ctx context.Context, req wire.PollMessages) (wire.PolledMessages, error) {
	if req.Consumer.Kind == wire.ConsumerKindGroup && !req.Partition.Set {
		if req.WaitMillis > 0 {
			return c.pollGroupWaiting(ctx, req)
		}
		return c.PollGroup(ctx, req.StreamID, req.TopicID, req.Consumer.ID, req.Strategy, req.Count, req.AutoCommit)
	}
	p, err := c.callPlus(ctx, &req, time.Duration(req.WaitMillis)*time.Millisecond)
	if err != nil {
		return wire.PolledMessages{}, err
	}
	return wire.DecodePollReply(p)
}

// pollGroupWaiting is a waiting consumer-group poll. It makes sure the
// caller is a member (joining as PollGroup does) and sends the poll
// without a partition, so the server waits on every partition the member
// owns and answers from whichever gets a message first.
func (c *Client) pollGroupWaiting(ctx context.Context, req wire.PollMessages) (wire.PolledMessages, error) {
	none := wire.PolledMessages{PartitionID: wire.NoAssignedPartition}
	wait := time.Duration(req.WaitMillis) * time.Millisecond
	for attempt := 0; attempt < c.cfg.GroupPollAttempts; attempt++ {
		parts, err := c.ensureAssignment(ctx, req.StreamID, req.TopicID, req.Consumer.ID)
		if err != nil {
			return wire.PolledMessages{}, err
		}
		if len(parts) == 0 {
			// Nothing to wait on here: behave like a wait that ended.
			if err := c.sleep(ctx, min(wait, c.cfg.GroupAssignmentRefresh)); err != nil {
				return wire.PolledMessages{}, err
			}
			c.groups.drop(req.StreamID, req.TopicID, req.Consumer.ID)
			return none, nil
		}
		p, err := c.callPlus(ctx, &req, wait)
		if err != nil {
			if wire.HasCode(err, wire.CodeConsumerGroupMemberNotFound) || wire.HasCode(err, wire.CodeConsumerGroupPartitionNotOwned) {
				c.groups.drop(req.StreamID, req.TopicID, req.Consumer.ID)
				continue
			}
			return wire.PolledMessages{}, err
		}
		polled, err := wire.DecodePollReply(p)
		if err != nil {
			return wire.PolledMessages{}, err
		}
		if polled.PartitionID == wire.ResyncPartition && polled.MessagesCount == 0 {
			c.groups.drop(req.StreamID, req.TopicID, req.Consumer.ID)
			continue
		}
		return polled, nil
	}
	return none, nil
}

// PollGroup polls as a consumer-group member: it syncs the assignment
// (cached for GroupAssignmentRefresh; joining first if SYNC says the caller
// is not a member, unless it left explicitly), polls the owned partitions
// round robin, and resyncs when the server says the assignment is stale
// (5006, 5009, or an empty reply on partition 0xFFFFFFFF). A member that
// owns nothing gets an empty result with PartitionID
// wire.NoAssignedPartition.
func (c *Client) PollGroup(ctx context.Context, stream, topic, group wire.Identifier, strategy wire.PollingStrategy, count uint32, autoCommit bool) (wire.PolledMessages, error) {
	none := wire.PolledMessages{PartitionID: wire.NoAssignedPartition}
	for attempt := 0; attempt < c.cfg.GroupPollAttempts; attempt++ {
		parts, err := c.ensureAssignment(ctx, stream, topic, group)
		if err != nil {
			return wire.PolledMessages{}, err
		}
		if len(parts) == 0 {
			return none, nil
		}
		pid, ok := c.groups.next(stream, topic, group)
		if !ok {
			continue
		}
		req := wire.PollMessages{Consumer: wire.GroupConsumer(group), StreamID: stream, TopicID: topic,
			Partition: wire.SomePartition(pid), Strategy: strategy, Count: count, AutoCommit: autoCommit}
		p, err := c.call(ctx, &req)
		if err != nil {
			if wire.HasCode(err, wire.CodeConsumerGroupMemberNotFound) || wire.HasCode(err, wire.CodeConsumerGroupPartitionNotOwned) {
				c.groups.drop(stream, topic, group)
				continue
			}
			return wire.PolledMessages{}, err
		}
		polled, err := wire.DecodePollReply(p)
		if err != nil {
			return wire.PolledMessages{}, err
		}
		if polled.PartitionID == wire.ResyncPartition && polled.MessagesCount == 0 {
			c.groups.drop(stream, topic, group)
			continue
		}
		return polled, nil
	}
	// Still rebalancing: report an empty poll, not an error.
	return none, nil
}

func (c *Client) ensureAssignment(ctx context.Context, stream, topic, group wire.Identifier) ([]uint32, error) {
	if parts, ok := c.groups.fresh(stream, topic, group, c.cfg.GroupAssignmentRefresh); ok {
		return parts, nil
	}
	a, err := c.SyncConsumerGroup(ctx, stream, topic, group)
	if wire.HasCode(err, wire.CodeConsumerGroupMemberNotFound) && !c.groups.hasLeft(stream, topic, group) {
		if err = c.JoinConsumerGroup(ctx, stream, topic, group); err != nil {
			return nil, err
		}
		a, err = c.SyncConsumerGroup(ctx, stream, topic, group)
	}
	if err != nil {
		return nil, err
	}
	c.groups.put(stream, topic, group, a)
	return a.Partitions, nil
}

// topicCache keeps partition counts and balanced cursors per topic.
type topicCache struct {
	mu      sync.Mutex
	counts  map[topicKey]uint32
	cursors map[topicKey]uint32
}

type topicKey struct{ stream, topic wire.Identifier }

func (t *topicCache) count(s, tp wire.Identifier) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.counts[topicKey{s, tp}]
	return n, ok
}

func (t *topicCache) setCount(s, tp wire.Identifier, n uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[topicKey]uint32{}
	}
	t.counts[topicKey{s, tp}] = n
}

func (t *topicCache) nextBalanced(s, tp wire.Identifier, n uint32) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cursors == nil {
		t.cursors = map[topicKey]uint32{}
	}
	k := topicKey{s, tp}
	p := t.cursors[k] % n
	t.cursors[k]++
	return p
}

func (t *topicCache) invalidate(s, tp wire.Identifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.counts, topicKey{s, tp})
}

func (t *topicCache) drop(s, tp wire.Identifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.counts, topicKey{s, tp})
	delete(t.cursors, topicKey{s, tp})
}

func (t *topicCache) dropStream(s wire.Identifier) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.counts {
		if k.stream == s {
			delete(t.counts, k)
		}
	}
	for k := range t.cursors {
		if k.stream == s {
			delete(t.cursors, k)
		}
	}
}

// clear forgets counts (a reconnect may land on a different view) but keeps
// the round-robin cursors so balance carries on.
func (t *topicCache) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.counts)
}

// groupCache keeps consumer-group assignments and explicit leaves.
type groupCache struct {
	mu      sync.Mutex
	entries map[groupKey]*assignment
	left    map[groupKey]bool
}

type groupKey struct{ stream, topic, group wire.Identifier }

type assignment struct {
	generation uint64
	partitions []uint32
	fetched    time.Time
	cursor     int
}

func (g *groupCache) fresh(s, t, gr wire.Identifier, ttl time.Duration) ([]uint32, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.entries[groupKey{s, t, gr}]
	if !ok || time.Since(a.fetched) >= ttl {
		return nil, false
	}
	return a.partitions, true
}

func (g *groupCache) put(s, t, gr wire.Identifier, asg wire.GroupAssignment) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.entries == nil {
		g.entries = map[groupKey]*assignment{}
	}
	k := groupKey{s, t, gr}
	next := &assignment{generation: asg.Generation, partitions: asg.Partitions, fetched: time.Now()}
	if cur, ok := g.entries[k]; ok && cur.generation == asg.Generation {
		// Same generation: same ownership, so keep the round-robin position
		// instead of starving the partitions behind it.
		next.cursor = cur.cursor
	}
	g.entries[k] = next
}

func (g *groupCache) next(s, t, gr wire.Identifier) (uint32, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.entries[groupKey{s, t, gr}]
	if !ok || len(a.partitions) == 0 {
		return 0, false
	}
	i := a.cursor % len(a.partitions)
	a.cursor = (i + 1) % len(a.partitions)
	return a.partitions[i], true
}

func (g *groupCache) drop(s, t, gr wire.Identifier) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.entries, groupKey{s, t, gr})
}

func (g *groupCache) markJoined(s, t, gr wire.Identifier) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.entries, groupKey{s, t, gr})
	delete(g.left, groupKey{s, t, gr})
}

func (g *groupCache) markLeft(s, t, gr wire.Identifier) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.entries, groupKey{s, t, gr})
	if g.left == nil {
		g.left = map[groupKey]bool{}
	}
	g.left[groupKey{s, t, gr}] = true
}

func (g *groupCache) hasLeft(s, t, gr wire.Identifier) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.left[groupKey{s, t, gr}]
}

// clear forgets assignments (memberships die with the connection) but
// keeps explicit leaves, which are caller intent.
func (g *groupCache) clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.entries)
}
