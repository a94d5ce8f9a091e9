package metadata

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/iggo/iggo/wire"
)

// Apply applies one committed command and returns the next state and the
// result. s is never modified. Apply is deterministic: its output depends
// only on s, m and c (no clock, randomness or map iteration order), so
// every replica that applies the same commands in the same order holds
// byte-identical snapshots and returns identical results.
//
// A rejected command (Result.Code != 0) leaves the state unchanged except
// for LastApplied. Client commands are first checked against the
// permissions in s (the state before the command) unless m.System.
func (s *State) Apply(m Meta, c Command) (*State, Result) {
	t := begin(s)
	t.s.lastApplied = m.Op
	var r Result
	if code := t.authorize(m, c); code != OK {
		r.Code = code
	} else {
		r = t.apply(m, c)
	}
	if r.Code != OK {
		ns := *s
		ns.lastApplied = m.Op
		return &ns, Result{Code: r.Code}
	}
	return t.s, r
}

func (t *txn) apply(m Meta, c Command) Result {
	switch c := c.(type) {
	case Bootstrap:
		return t.bootstrap(m, c)
	case SetLimits:
		return t.setLimits(c)
	case CreateStream:
		return t.createStream(m, c)
	case UpdateStream:
		return t.updateStream(c)
	case DeleteStream:
		return t.deleteStream(c)
	case PurgeStream:
		return t.purgeStream(c)
	case CreateTopic:
		return t.createTopic(m, c)
	case UpdateTopic:
		return t.updateTopic(c)
	case DeleteTopic:
		return t.deleteTopic(c)
	case PurgeTopic:
		return t.purgeTopic(c)
	case CreatePartitions:
		return t.createPartitions(m, c)
	case DeletePartitions:
		return t.deletePartitions(c)
	case CreateConsumerGroup:
		return t.createGroup(c)
	case DeleteConsumerGroup:
		return t.deleteGroup(c)
	case JoinConsumerGroup:
		return t.joinGroup(m, c)
	case LeaveConsumerGroup:
		return t.leaveGroup(m, c)
	case DisconnectClient:
		return t.disconnect(c.Client)
	case EvictNodeMembers:
		return t.evictNodeMembers(c)
	case ExpireMembers:
		return t.expireMembers(c)
	case CompleteRevocation:
		return t.completeRevocation(c)
	case CreateUser:
		return t.createUser(m, c)
	case UpdateUser:
		return t.updateUser(m, c)
	case DeleteUser:
		return t.deleteUser(c)
	case ChangePassword:
		return t.changePassword(c)
	case UpdatePermissions:
		return t.updatePermissions(c)
	case CreatePersonalAccessToken:
		return t.createToken(m, c)
	case DeletePersonalAccessToken:
		return t.deleteToken(m, c)
	case DeleteExpiredTokens:
		return t.deleteExpiredTokens(m)
	case RevokeAccessToken:
		return t.revokeAccessToken(m, c)
	}
	panic(fmt.Sprintf("metadata: Apply got unknown command %T", c))
}

func fail(c wire.Code) Result { return Result{Code: c} }

// authorize is the in-apply permission gate. It decides against the
// state before the command, which every replica holds identically, so the
// decision replays the same everywhere. An identifier that does not
// resolve passes through so the handler reports its own not-found code.
func (t *txn) authorize(m Meta, c Command) wire.Code {
	switch c.(type) {
	case Bootstrap, SetLimits, DisconnectClient, EvictNodeMembers, ExpireMembers, DeleteExpiredTokens, RevokeAccessToken, CompleteRevocation:
		if m.System {
			return OK
		}
		return wire.CodeUnauthorized
	}
	if m.System {
		return OK
	}
	s := t.s
	u := s.User(m.UserID)
	if u == nil || u.Status != UserActive {
		return wire.CodeUnauthorized
	}
	allow := func(a Action, stream, topic uint32) wire.Code {
		if s.Allowed(m.UserID, a, stream, topic) {
			return OK
		}
		return wire.CodeUnauthorized
	}
	onStream := func(a Action, id Identifier) wire.Code {
		st := s.ResolveStream(id)
		if st == nil {
			return OK
		}
		return allow(a, st.ID, 0)
	}
	onTopic := func(a Action, sid, tid Identifier) wire.Code {
		st, tp, code := s.ResolveTopic(sid, tid)
		if code != OK {
			return OK
		}
		return allow(a, st.ID, tp.ID)
	}
	onUser := func(a Action, id Identifier) wire.Code {
		target := s.ResolveUser(id)
		if target == nil {
			// Unlike streams and topics, a missing user is reported as
			// not found only to those allowed to manage users, so the
			// self-service path does not probe for usernames.
			return allow(a, 0, 0)
		}
		if !s.AllowedOnUser(m.UserID, a, target.ID) {
			return wire.CodeUnauthorized
		}
		if m.Legacy {
			return OK
		}
		return RootGuard(m.UserID, target.ID, a)
	}
	switch c := c.(type) {
	case CreateStream:
		return allow(ActionCreateStream, 0, 0)
	case UpdateStream:
		return onStream(ActionUpdateStream, c.Stream)
	case DeleteStream:
		return onStream(ActionDeleteStream, c.Stream)
	case PurgeStream:
		return onStream(ActionPurgeStream, c.Stream)
	case CreateTopic:
		return onStream(ActionCreateTopic, c.Stream)
	case UpdateTopic:
		return onTopic(ActionUpdateTopic, c.Stream, c.Topic)
	case DeleteTopic:
		return onTopic(ActionDeleteTopic, c.Stream, c.Topic)
	case PurgeTopic:
		return onTopic(ActionPurgeTopic, c.Stream, c.Topic)
	case CreatePartitions:
		return onTopic(ActionCreatePartitions, c.Stream, c.Topic)
	case DeletePartitions:
		return onTopic(ActionDeletePartitions, c.Stream, c.Topic)
	case CreateConsumerGroup:
		return onTopic(ActionCreateConsumerGroup, c.Stream, c.Topic)
	case DeleteConsumerGroup:
		return onTopic(ActionDeleteConsumerGroup, c.Stream, c.Topic)
	case JoinConsumerGroup:
		return onTopic(ActionJoinConsumerGroup, c.Stream, c.Topic)
	case LeaveConsumerGroup:
		return onTopic(ActionLeaveConsumerGroup, c.Stream, c.Topic)
	case CreateUser:
		return allow(ActionCreateUser, 0, 0)
	case UpdateUser:
		return onUser(ActionUpdateUser, c.User)
	case DeleteUser:
		return onUser(ActionDeleteUser, c.User)
	case ChangePassword:
		return onUser(ActionChangePassword, c.User)
	case UpdatePermissions:
		return onUser(ActionUpdatePermissions, c.User)
	case CreatePersonalAccessToken:
		return allow(ActionCreatePersonalAccessToken, 0, 0)
	case DeletePersonalAccessToken:
		return allow(ActionDeletePersonalAccessToken, 0, 0)
	}
	return OK
}

// ValidName reports whether name is a valid wire Name (1..255 bytes of
// UTF-8).
func ValidName(name string) bool {
	return len(name) >= 1 && len(name) <= 255 && utf8.ValidString(name)
}

func (t *txn) bootstrap(m Meta, c Bootstrap) Result {
	s := t.s
	if s.bootstrapped || len(s.users) > 0 || s.nextUserID != 0 {
		return fail(wire.CodeUserAlreadyExists)
	}
	if !c.Limits.Valid() {
		return fail(wire.CodeInvalidCommand)
	}
	if code := ValidateUsername(c.RootUsername); code != OK {
		return fail(code)
	}
	if c.RootPasswordHash == "" {
		return fail(wire.CodeInvalidPassword)
	}
	s.limits = c.Limits
	s.bootstrapped = true
	root := &User{
		ID: RootUserID, Username: c.RootUsername, PasswordHash: c.RootPasswordHash,
		Status: UserActive, CreatedAt: m.Timestamp, Permissions: AllPermissions(), gen: t.id,
	}
	t.usersMut()
	s.users = append(s.users, root)
	t.userNamesMut()[root.Username] = root.ID
	s.nextUserID = 1
	return Result{User: root}
}

func (t *txn) setLimits(c SetLimits) Result {
	if !c.Limits.Valid() {
		return fail(wire.CodeInvalidCommand)
	}
	t.s.limits = c.Limits
	return Result{}
}

// ---------------------------------------------------------------- streams

func (t *txn) createStream(m Meta, c CreateStream) Result {
	s := t.s
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidStreamName)
	}
	if code := ValidateEmptyCatalog(c.Options); code != OK {
		return fail(code)
	}
	if _, ok := s.streamNames[c.Name]; ok {
		return fail(wire.CodeStreamNameAlreadyExists)
	}
	// Lowest free id, as Iggy's slab: a function of the occupied ids only,
	// which a snapshot carries, so a restored state allocates the same.
	id := s.streams.lowestFree()
	if id >= s.limits.MaxStreams {
		return fail(wire.CodeTooManyStreams)
	}
	st := &Stream{
		ID: id, Name: c.Name, CreatedAt: m.Timestamp, Revision: t.bumpRevision(),
		topicNames: map[string]uint32{}, gen: t.id, topicNamesGen: t.id,
	}
	s.streams.set(t.id, id, st)
	t.streamNamesMut()[c.Name] = id
	return Result{Stream: st}
}

func (t *txn) updateStream(c UpdateStream) Result {
	s := t.s
	old := s.ResolveStream(c.Stream)
	if old == nil {
		return fail(wire.CodeStreamIdNotFound)
	}
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidStreamName)
	}
	if code := ValidateEmptyCatalog(c.Options); code != OK {
		return fail(code)
	}
	if id, ok := s.streamNames[c.Name]; ok && id != old.ID {
		return fail(wire.CodeStreamNameAlreadyExists)
	}
	if c.Name != old.Name {
		st := t.stream(old.ID)
		names := t.streamNamesMut()
		delete(names, st.Name)
		names[c.Name] = st.ID
		st.Name = c.Name
	}
	return Result{Stream: s.Stream(old.ID)}
}

func (t *txn) deleteStream(c DeleteStream) Result {
	s := t.s
	st := s.ResolveStream(c.Stream)
	if st == nil {
		return fail(wire.CodeStreamIdNotFound)
	}
	var effects []Effect
	for tp := range st.topics.all {
		effects = appendTopicTeardown(effects, tp)
	}
	s.streams.set(t.id, st.ID, nil)
	delete(t.streamNamesMut(), st.Name)
	t.bumpRevision()
	t.revokeGrants(st.ID, nil)
	return Result{Effects: effects}
}

// appendTopicTeardown lists the effects of dropping topic tp entirely.
func appendTopicTeardown(effects []Effect, tp *Topic) []Effect {
	for _, g := range tp.groups {
		effects = append(effects, Effect{Kind: EffectGroupDeleted, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID})
	}
	for _, p := range tp.Partitions {
		effects = append(effects, Effect{Kind: EffectPartitionDeleted, Stream: tp.StreamID, Topic: tp.ID, Partition: p.ID, Revision: p.Revision})
	}
	return effects
}

// revokeGrants removes permissions on a deleted stream (topic == nil) or
// topic from every user. Ids are reused, so a grant left behind would
// silently apply to whatever is created next under the same id.
func (t *txn) revokeGrants(stream uint32, topic *uint32) {
	for i, u := range t.s.users {
		if np, changed := withoutGrant(u.Permissions, stream, topic); changed {
			t.user(i).Permissions = np
		}
	}
}

func (t *txn) purgeStream(c PurgeStream) Result {
	st := t.s.ResolveStream(c.Stream)
	if st == nil {
		return fail(wire.CodeStreamIdNotFound)
	}
	var effects []Effect
	for tp := range st.topics.all {
		if len(tp.Partitions) > 0 {
			effects = t.purgePartitions(st.ID, tp.ID, effects)
		}
	}
	if len(effects) > 0 {
		t.bumpRevision()
	}
	return Result{Effects: effects}
}

func (t *txn) purgePartitions(stream, topic uint32, effects []Effect) []Effect {
	_, tp := t.topicAt(stream, topic)
	ps := t.partitionsMut(tp)
	for i := range ps {
		ps[i].PurgeGeneration++
		effects = append(effects, Effect{
			Kind: EffectPartitionPurged, Stream: stream, Topic: topic, Partition: ps[i].ID,
			Revision: ps[i].Revision, Generation: ps[i].PurgeGeneration,
		})
	}
	return effects
}

// ----------------------------------------------------------------- topics

func (t *txn) createTopic(m Meta, c CreateTopic) Result {
	s := t.s
	old := s.ResolveStream(c.Stream)
	if old == nil {
		return fail(wire.CodeStreamIdNotFound)
	}
	if c.PartitionsCount > s.limits.MaxPartitionsPerRequest {
		return fail(wire.CodeTooManyPartitions)
	}
	if c.PartitionsCount > s.limits.MaxPartitionsPerTopic {
		return fail(wire.CodePartitionIdSpaceExhausted)
	}
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidTopicName)
	}
	if _, ok := old.topicNames[c.Name]; ok {
		return fail(wire.CodeTopicNameAlreadyExists)
	}
	res, code := ResolveTopicCreate(c.Options, c.PartitionsCount, c.Defaults)
	if code != OK {
		return fail(code)
	}
	id := old.topics.lowestFree()
	if id >= s.limits.MaxTopicsPerStream {
		return fail(wire.CodeTooManyTopics)
	}
	if code := s.PartitionsFit(c.PartitionsCount, c.PartitionsMax); code != OK {
		return fail(code)
	}
	rev := t.bumpRevision()
	tp := &Topic{
		StreamID: old.ID, ID: id, Name: c.Name, CreatedAt: m.Timestamp, Revision: rev,
		Config: res.Config, Explicit: res.Explicit, Derived: res.Derived,
		Partitions: make([]Partition, c.PartitionsCount), groupNames: map[string]uint32{},
		gen: t.id, partitionsGen: t.id, groupsGen: t.id, groupNamesGen: t.id,
	}
	effects := make([]Effect, 0, c.PartitionsCount)
	for i := range tp.Partitions {
		tp.Partitions[i] = Partition{ID: uint32(i), CreatedAt: m.Timestamp, Revision: rev}
		effects = append(effects, Effect{Kind: EffectPartitionCreated, Stream: old.ID, Topic: id, Partition: uint32(i), Revision: rev})
	}
	st := t.stream(old.ID)
	st.topics.set(t.id, id, tp)
	t.topicNamesMut(st)[c.Name] = id
	return Result{Stream: st, Topic: tp, Effects: effects}
}

func (t *txn) updateTopic(c UpdateTopic) Result {
	oldStream, old, code := t.s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidTopicName)
	}
	if id, ok := oldStream.topicNames[c.Name]; ok && id != old.ID {
		return fail(wire.CodeTopicNameAlreadyExists)
	}
	res, code := ResolveTopicUpdate(c.Options, old, c.Defaults)
	if code != OK {
		return fail(code)
	}
	st, tp := t.topicAt(oldStream.ID, old.ID)
	if c.Name != tp.Name {
		names := t.topicNamesMut(st)
		delete(names, tp.Name)
		names[c.Name] = tp.ID
		tp.Name = c.Name
	}
	var effects []Effect
	if res.Config != tp.Config || !optionsEqual(res.Explicit, tp.Explicit) {
		tp.Config, tp.Explicit, tp.Derived = res.Config, res.Explicit, res.Derived
		effects = append(effects, Effect{Kind: EffectTopicUpdated, Stream: st.ID, Topic: tp.ID, Revision: tp.Revision})
	}
	return Result{Stream: st, Topic: tp, Effects: effects}
}

func (t *txn) deleteTopic(c DeleteTopic) Result {
	oldStream, old, code := t.s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	effects := appendTopicTeardown(nil, old)
	st := t.stream(oldStream.ID)
	st.topics.set(t.id, old.ID, nil)
	delete(t.topicNamesMut(st), old.Name)
	t.bumpRevision()
	tid := old.ID
	t.revokeGrants(st.ID, &tid)
	return Result{Effects: effects}
}

func (t *txn) purgeTopic(c PurgeTopic) Result {
	st, tp, code := t.s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	if len(tp.Partitions) == 0 {
		return Result{}
	}
	effects := t.purgePartitions(st.ID, tp.ID, nil)
	t.bumpRevision()
	return Result{Effects: effects}
}

// ------------------------------------------------------------- partitions

func (t *txn) createPartitions(m Meta, c CreatePartitions) Result {
	s := t.s
	oldStream, old, code := s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	if c.Count == 0 || c.Count > s.limits.MaxPartitionsPerRequest {
		return fail(wire.CodeTooManyPartitions)
	}
	if uint64(len(old.Partitions))+uint64(c.Count) > uint64(s.limits.MaxPartitionsPerTopic) {
		return fail(wire.CodePartitionIdSpaceExhausted)
	}
	if code := s.PartitionsFit(c.Count, c.PartitionsMax); code != OK {
		return fail(code)
	}
	rev := t.bumpRevision()
	_, tp := t.topicAt(oldStream.ID, old.ID)
	ps := t.partitionsMut(tp)
	effects := make([]Effect, 0, c.Count)
	for range c.Count {
		id := uint32(len(ps))
		ps = append(ps, Partition{ID: id, CreatedAt: m.Timestamp, Revision: rev})
		effects = append(effects, Effect{Kind: EffectPartitionCreated, Stream: tp.StreamID, Topic: tp.ID, Partition: id, Revision: rev})
	}
	tp.Partitions = ps
	effects = t.rebalanceAll(tp, effects)
	return Result{Topic: tp, Effects: effects}
}

func (t *txn) deletePartitions(c DeletePartitions) Result {
	s := t.s
	oldStream, old, code := s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	if c.Count == 0 || c.Count > s.limits.MaxPartitionsPerRequest {
		return fail(wire.CodeTooManyPartitions)
	}
	if c.Count > uint32(len(old.Partitions)) {
		return fail(wire.CodeInvalidPartitionsCount)
	}
	t.bumpRevision()
	_, tp := t.topicAt(oldStream.ID, old.ID)
	keep := len(tp.Partitions) - int(c.Count)
	var effects []Effect
	for _, p := range tp.Partitions[keep:] {
		effects = append(effects, Effect{Kind: EffectPartitionDeleted, Stream: tp.StreamID, Topic: tp.ID, Partition: p.ID, Revision: p.Revision})
	}
	tp.Partitions = slices.Clone(tp.Partitions[:keep])
	tp.partitionsGen = t.id
	effects = t.rebalanceAll(tp, effects)
	return Result{Topic: tp, Effects: effects}
}

// rebalanceAll re-deals the partitions of every group of the private
// topic tp after its partition count changed.
func (t *txn) rebalanceAll(tp *Topic, effects []Effect) []Effect {
	for i := range tp.groups {
		g := t.group(tp, i)
		rebalance(g, tp.PartitionsCount())
		effects = append(effects, Effect{Kind: EffectGroupRebalanced, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID, Generation: g.Generation})
	}
	return effects
}

// rebalance deals partitions 0..n-1 round-robin over the members in
// member order (partition p goes to member p mod len(members)) and bumps
// the generation. Every partition ends up with exactly one owner and the
// members' counts differ by at most one.
func rebalance(g *ConsumerGroup, partitions uint32) {
	g.Generation++
	n := uint32(len(g.Members))
	for i := range g.Members {
		g.Members[i].Partitions = nil
		g.Members[i].Revoking = nil
		if n == 0 {
			continue
		}
		var ps []uint32
		for p := uint32(i); p < partitions; p += n {
			ps = append(ps, p)
		}
		g.Members[i].Partitions = ps
	}
}

// --------------------------------------------------------- consumer groups

func (t *txn) createGroup(c CreateConsumerGroup) Result {
	oldStream, old, code := t.s.ResolveTopic(c.Stream, c.Topic)
	if code != OK {
		return fail(code)
	}
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidConsumerGroupName)
	}
	if _, ok := old.groupNames[c.Name]; ok {
		return fail(wire.CodeConsumerGroupNameAlreadyExists)
	}
	if old.NextGroupID == math.MaxUint32 {
		return fail(wire.CodeInvalidConsumerGroupId)
	}
	_, tp := t.topicAt(oldStream.ID, old.ID)
	g := &ConsumerGroup{ID: tp.NextGroupID, Name: c.Name, gen: t.id}
	tp.NextGroupID++
	tp.groups = append(t.groupsMut(tp), g)
	t.groupNamesMut(tp)[c.Name] = g.ID
	return Result{Topic: tp, Group: g}
}

func (t *txn) deleteGroup(c DeleteConsumerGroup) Result {
	oldTopic, old, code := t.s.ResolveGroup(c.Stream, c.Topic, c.Group)
	if code != OK {
		return fail(code)
	}
	_, tp := t.topicAt(oldTopic.StreamID, oldTopic.ID)
	gs := t.groupsMut(tp)
	i := slices.IndexFunc(gs, func(g *ConsumerGroup) bool { return g.ID == old.ID })
	tp.groups = slices.Delete(gs, i, i+1)
	delete(t.groupNamesMut(tp), old.Name)
	return Result{Topic: tp, Effects: []Effect{{Kind: EffectGroupDeleted, Stream: tp.StreamID, Topic: tp.ID, Group: old.ID}}}
}

func (t *txn) joinGroup(m Meta, c JoinConsumerGroup) Result {
	oldTopic, old, code := t.s.ResolveGroup(c.Stream, c.Topic, c.Group)
	if code != OK {
		return fail(code)
	}
	if m.Client.IsZero() {
		return fail(wire.CodeInvalidCommand)
	}
	if mem, ok := old.Member(m.Client); ok {
		if c.Boot == BootUnknown || (mem.Node == c.Node && mem.Boot == c.Boot) {
			return Result{Topic: oldTopic, Group: old}
		}
		// The client reconnected through another node (or a later boot)
		// and joined again: its connection lives there now. Re-stamp the
		// member so node eviction follows it; no rebalance.
		_, tp := t.topicAt(oldTopic.StreamID, oldTopic.ID)
		g := t.group(tp, slices.Index(tp.groups, old))
		i := slices.IndexFunc(g.Members, func(x Member) bool { return x.Client == m.Client })
		g.Members[i].Node, g.Members[i].Boot = c.Node, c.Boot
		return Result{Topic: tp, Group: g}
	}
	_, tp := t.topicAt(oldTopic.StreamID, oldTopic.ID)
	g := t.group(tp, slices.Index(tp.groups, old))
	g.Members = append(g.Members, Member{ID: g.NextMemberID, Client: m.Client, Node: c.Node, Boot: c.Boot})
	g.NextMemberID++
	if c.Redeal {
		// Prepare bodies before version 4 re-dealt every partition.
		rebalance(g, tp.PartitionsCount())
	} else {
		rebalanceCooperative(g, tp.PartitionsCount(), c.InFlight, m.Timestamp)
	}
	return Result{Topic: tp, Group: g, Effects: []Effect{{Kind: EffectGroupRebalanced, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID, Generation: g.Generation}}}
}

func (t *txn) leaveGroup(m Meta, c LeaveConsumerGroup) Result {
	oldTopic, old, code := t.s.ResolveGroup(c.Stream, c.Topic, c.Group)
	if code != OK {
		return fail(code)
	}
	if _, ok := old.Member(m.Client); !ok {
		return fail(wire.CodeConsumerGroupMemberNotFound)
	}
	_, tp := t.topicAt(oldTopic.StreamID, oldTopic.ID)
	g := t.group(tp, slices.Index(tp.groups, old))
	removeMember(g, m.Client)
	rebalance(g, tp.PartitionsCount())
	return Result{Topic: tp, Group: g, Effects: []Effect{{Kind: EffectGroupRebalanced, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID, Generation: g.Generation}}}
}

// rebalanceCooperative is the rebalance of a join, as Iggy 0.9's
// rebalance_cooperative: partitions nobody owns go to the members that
// own none; then each member holding more than its fair share (partitions
// / members, the first members in member order allowed one more while the
// remainder lasts) gives its excess, its highest partitions first, round
// robin to the members that own none and are no hand-off's target. An
// excess partition listed in inFlight (it may hold polled, uncommitted
// messages) stays with its owner as a pending revocation created at now;
// the others move at once. The generation is bumped.
func rebalanceCooperative(g *ConsumerGroup, partitions uint32, inFlight []uint32, now uint64) {
	g.Generation++
	n := uint32(len(g.Members))
	if n == 0 || partitions == 0 {
		return
	}
	owned := make([]bool, partitions)
	for _, m := range g.Members {
		for _, p := range m.Partitions {
			if p < partitions {
				owned[p] = true
			}
		}
	}
	var idle []int
	for i, m := range g.Members {
		if len(m.Partitions) == 0 {
			idle = append(idle, i)
		}
	}
	if len(idle) > 0 {
		k := 0
		for p := uint32(0); p < partitions; p++ {
			if !owned[p] {
				i := idle[k%len(idle)]
				g.Members[i].Partitions = append(g.Members[i].Partitions, p)
				k++
			}
		}
	}
	targets := map[uint32]bool{}
	for _, m := range g.Members {
		for _, r := range m.Revoking {
			targets[r.Target] = true
		}
	}
	idle = idle[:0]
	for i, m := range g.Members {
		if len(m.Partitions) == 0 && !targets[m.ID] {
			idle = append(idle, i)
		}
	}
	if len(idle) == 0 {
		return
	}
	fair, rem := partitions/n, partitions%n
	type move struct {
		partition uint32
		source    int
	}
	var excess []move
	for i, m := range g.Members {
		var effective []uint32
		for _, p := range m.Partitions {
			if !m.revoking(p) {
				effective = append(effective, p)
			}
		}
		allowed := fair
		if rem > 0 {
			allowed++
		}
		if uint32(len(effective)) > fair && rem > 0 {
			rem--
		}
		if uint32(len(effective)) <= allowed {
			continue
		}
		for j := len(effective) - 1; j >= int(allowed); j-- {
			excess = append(excess, move{partition: effective[j], source: i})
		}
	}
	for k, mv := range excess {
		ti := idle[k%len(idle)]
		src := &g.Members[mv.source]
		if slices.Contains(inFlight, mv.partition) {
			src.Revoking = append(slices.Clone(src.Revoking), Revocation{Partition: mv.partition, Target: g.Members[ti].ID, Since: now})
			slices.SortFunc(src.Revoking, func(a, b Revocation) int { return cmpU32(a.Partition, b.Partition) })
			continue
		}
		src.Partitions = slices.DeleteFunc(src.Partitions, func(p uint32) bool { return p == mv.partition })
		g.Members[ti].Partitions = append(g.Members[ti].Partitions, mv.partition)
	}
	for i := range g.Members {
		slices.Sort(g.Members[i].Partitions)
	}
}

// completeRevocation moves a pending hand-off's partition to its target
// member (a full rebalance when the target left meanwhile) and bumps the
// generation; a hand-off no longer pending is a no-op.
func (t *txn) completeRevocation(c CompleteRevocation) Result {
	st := t.s.Stream(c.Stream)
	if st == nil {
		return Result{}
	}
	tp0 := st.Topic(c.Topic)
	if tp0 == nil {
		return Result{}
	}
	gi := slices.IndexFunc(tp0.groups, func(g *ConsumerGroup) bool { return g.ID == c.Group })
	if gi < 0 {
		return Result{}
	}
	src, ok := tp0.groups[gi].Member(c.Client)
	if !ok || !src.revoking(c.Partition) {
		return Result{}
	}
	_, tp := t.topicAt(c.Stream, c.Topic)
	g := t.group(tp, gi)
	si := slices.IndexFunc(g.Members, func(m Member) bool { return m.Client == c.Client })
	s := &g.Members[si]
	ri := slices.IndexFunc(s.Revoking, func(r Revocation) bool { return r.Partition == c.Partition })
	target := s.Revoking[ri].Target
	s.Revoking = slices.Delete(slices.Clone(s.Revoking), ri, ri+1)
	s.Partitions = slices.DeleteFunc(s.Partitions, func(p uint32) bool { return p == c.Partition })
	ti := slices.IndexFunc(g.Members, func(m Member) bool { return m.ID == target })
	if ti < 0 {
		rebalance(g, tp.PartitionsCount())
	} else {
		g.Generation++
		g.Members[ti].Partitions = append(g.Members[ti].Partitions, c.Partition)
		slices.Sort(g.Members[ti].Partitions)
	}
	effects := []Effect{{Kind: EffectGroupRebalanced, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID, Generation: g.Generation}}
	if c.HasCommitted {
		effects = append(effects, Effect{Kind: EffectHandedOff, Stream: tp.StreamID, Topic: tp.ID, Group: g.ID, Partition: c.Partition, Offset: c.Committed})
	}
	return Result{Topic: tp, Group: g, Effects: effects}
}

func removeMember(g *ConsumerGroup, client ClientID) {
	removeMembers(g, func(m Member) bool { return m.Client == client })
}

func removeMembers(g *ConsumerGroup, match func(Member) bool) {
	g.Members = slices.DeleteFunc(g.Members, match)
}

func (t *txn) disconnect(client ClientID) Result {
	return t.removeMembersWhere(func(m Member) bool { return m.Client == client })
}

// evictNodeMembers removes the members a node's earlier boots registered.
// BootUnknown is the largest uint64, so Boot < Before never holds for it.
func (t *txn) evictNodeMembers(c EvictNodeMembers) Result {
	return t.removeMembersWhere(func(m Member) bool { return m.Node == c.Node && m.Boot < c.Before })
}

// expireMembers removes the listed members still stamped with the node
// and boot the primary expired them for.
func (t *txn) expireMembers(c ExpireMembers) Result {
	listed := make(map[ClientID]bool, len(c.Clients))
	for _, cl := range c.Clients {
		listed[cl] = true
	}
	return t.removeMembersWhere(func(m Member) bool { return m.Node == c.Node && m.Boot == c.Boot && listed[m.Client] })
}

// removeMembersWhere removes the members match selects from every group
// and rebalances each group that lost one (disconnect, node eviction).
func (t *txn) removeMembersWhere(match func(Member) bool) Result {
	var effects []Effect
	// Iterate the state the command started from: privatizing paths below
	// replaces records in t.s, never in it.
	for st := range t.base.streams.all {
		for tp := range st.topics.all {
			for i, g := range tp.groups {
				if !slices.ContainsFunc(g.Members, match) {
					continue
				}
				_, ptp := t.topicAt(st.ID, tp.ID)
				pg := t.group(ptp, i)
				removeMembers(pg, match)
				rebalance(pg, ptp.PartitionsCount())
				effects = append(effects, Effect{Kind: EffectGroupRebalanced, Stream: st.ID, Topic: tp.ID, Group: pg.ID, Generation: pg.Generation})
			}
		}
	}
	return Result{Effects: effects}
}

// ------------------------------------------------------------------ users

func (t *txn) userIndex(id uint32) int {
	i, ok := slices.BinarySearchFunc(t.s.users, id, func(u *User, id uint32) int { return cmpU32(u.ID, id) })
	if !ok {
		panic(fmt.Sprintf("metadata: user %d resolved but not indexed", id))
	}
	return i
}

func (t *txn) createUser(m Meta, c CreateUser) Result {
	s := t.s
	if code := ValidateUsername(c.Username); code != OK {
		return fail(code)
	}
	if c.Status != UserActive && c.Status != UserInactive {
		return fail(wire.CodeInvalidUserStatus)
	}
	if c.PasswordHash == "" {
		return fail(wire.CodeInvalidPassword)
	}
	if code := ValidateEmptyCatalog(c.Options); code != OK {
		return fail(code)
	}
	if _, ok := s.userNames[c.Username]; ok {
		return fail(wire.CodeUserAlreadyExists)
	}
	if uint64(len(s.users)) >= uint64(s.limits.MaxUsers) || s.nextUserID == math.MaxUint32 {
		return fail(wire.CodeUsersLimitReached)
	}
	u := &User{
		ID: s.nextUserID, Username: c.Username, PasswordHash: c.PasswordHash, Status: c.Status,
		CreatedAt: m.Timestamp, Permissions: NormalizePermissions(c.Permissions), gen: t.id,
	}
	s.nextUserID++
	s.users = append(t.usersMut(), u)
	t.userNamesMut()[u.Username] = u.ID
	return Result{User: u}
}

func (t *txn) updateUser(m Meta, c UpdateUser) Result {
	s := t.s
	old := s.ResolveUser(c.User)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	if code := ValidateEmptyCatalog(c.Options); code != OK {
		return fail(code)
	}
	if c.Username != nil {
		if code := ValidateUsername(*c.Username); code != OK {
			return fail(code)
		}
		if id, ok := s.userNames[*c.Username]; ok && id != old.ID {
			return fail(wire.CodeUserAlreadyExists)
		}
	}
	if c.Status != nil && *c.Status != UserActive && *c.Status != UserInactive {
		return fail(wire.CodeInvalidUserStatus)
	}
	if c.Status != nil && *c.Status == UserInactive && old.ID == RootUserID && !m.Legacy {
		// Only root may change root, so an inactive root could never be
		// reactivated.
		return fail(wire.CodeInvalidUserStatus)
	}
	u := t.user(t.userIndex(old.ID))
	if c.Username != nil && *c.Username != u.Username {
		names := t.userNamesMut()
		delete(names, u.Username)
		names[*c.Username] = u.ID
		u.Username = *c.Username
	}
	var effects []Effect
	if c.Status != nil {
		if *c.Status == UserInactive && u.Status == UserActive {
			effects = append(effects, Effect{Kind: EffectUserDeactivated, User: u.ID})
		}
		u.Status = *c.Status
	}
	return Result{User: u, Effects: effects}
}

func (t *txn) deleteUser(c DeleteUser) Result {
	s := t.s
	old := s.ResolveUser(c.User)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	if old.ID == RootUserID {
		return fail(wire.CodeCannotDeleteUser)
	}
	if len(old.Tokens) > 0 {
		toks := t.tokensMut()
		for _, p := range old.Tokens {
			delete(toks, p.Hash)
		}
	}
	i := t.userIndex(old.ID)
	s.users = slices.Delete(t.usersMut(), i, i+1)
	delete(t.userNamesMut(), old.Username)
	return Result{Effects: []Effect{{Kind: EffectUserDeleted, User: old.ID}}}
}

func (t *txn) changePassword(c ChangePassword) Result {
	old := t.s.ResolveUser(c.User)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	if c.VerifiedHash == "" || c.VerifiedHash != old.PasswordHash {
		return fail(wire.CodeInvalidCredentials)
	}
	if c.NewPasswordHash == "" {
		return fail(wire.CodeInvalidPassword)
	}
	u := t.user(t.userIndex(old.ID))
	u.PasswordHash = c.NewPasswordHash
	return Result{User: u}
}

func (t *txn) updatePermissions(c UpdatePermissions) Result {
	old := t.s.ResolveUser(c.User)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	if old.ID == RootUserID {
		return fail(wire.CodeCannotChangePermissions)
	}
	u := t.user(t.userIndex(old.ID))
	u.Permissions = NormalizePermissions(c.Permissions)
	return Result{User: u}
}

func (t *txn) createToken(m Meta, c CreatePersonalAccessToken) Result {
	s := t.s
	old := s.User(m.UserID)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	if !ValidName(c.Name) {
		return fail(wire.CodeInvalidPersonalAccessTokenName)
	}
	pos, exists := findToken(old.Tokens, c.Name)
	if exists {
		return fail(wire.CodePersonalAccessTokenAlreadyExists)
	}
	if uint64(len(old.Tokens)) >= uint64(s.limits.MaxTokensPerUser) {
		return fail(wire.CodePersonalAccessTokensLimitReached)
	}
	if _, clash := s.tokens[c.Hash]; clash {
		return fail(wire.CodePersonalAccessTokenAlreadyExists)
	}
	var expiry uint64
	if c.Expiry != 0 && c.Expiry != math.MaxUint64 {
		expiry = m.Timestamp + c.Expiry
		if expiry < m.Timestamp {
			return fail(wire.CodeInvalidPersonalAccessTokenExpiry)
		}
	}
	u := t.user(t.userIndex(old.ID))
	pat := PersonalAccessToken{Name: c.Name, Hash: c.Hash, CreatedAt: m.Timestamp, ExpiryAt: expiry}
	u.Tokens = slices.Insert(u.Tokens, pos, pat)
	t.tokensMut()[c.Hash] = tokenRef{user: u.ID, name: c.Name}
	return Result{User: u, Token: &u.Tokens[pos]}
}

func (t *txn) deleteToken(m Meta, c DeletePersonalAccessToken) Result {
	old := t.s.User(m.UserID)
	if old == nil {
		return fail(wire.CodeResourceNotFound)
	}
	pos, ok := findToken(old.Tokens, c.Name)
	if !ok {
		return fail(wire.CodeResourceNotFound)
	}
	u := t.user(t.userIndex(old.ID))
	hash := u.Tokens[pos].Hash
	delete(t.tokensMut(), hash)
	u.Tokens = slices.Delete(u.Tokens, pos, pos+1)
	return Result{User: u, Effects: []Effect{{Kind: EffectTokenDeleted, User: u.ID, Token: hash}}}
}

// pruneRevoked drops revocations whose token expired at ts (µs).
func (t *txn) pruneRevoked(ts uint64) {
	now := ts / 1e6
	if !slices.ContainsFunc(t.s.revoked, func(r RevokedToken) bool { return r.Expiry <= now }) {
		return
	}
	t.s.revoked = slices.DeleteFunc(slices.Clone(t.s.revoked), func(r RevokedToken) bool { return r.Expiry <= now })
}

func (t *txn) revokeAccessToken(m Meta, c RevokeAccessToken) Result {
	t.pruneRevoked(m.Timestamp)
	if c.Expiry <= m.Timestamp/1e6 {
		return Result{} // already expired: nothing to remember
	}
	i, found := slices.BinarySearchFunc(t.s.revoked, c.ID, func(r RevokedToken, id [16]byte) int { return bytes.Compare(r.ID[:], id[:]) })
	if found {
		return Result{}
	}
	if len(t.s.revoked) >= MaxRevokedAccessTokens {
		return fail(wire.CodeError)
	}
	t.s.revoked = slices.Insert(slices.Clone(t.s.revoked), i, RevokedToken{ID: c.ID, Expiry: c.Expiry})
	return Result{}
}

func (t *txn) deleteExpiredTokens(m Meta) Result {
	t.pruneRevoked(m.Timestamp)
	var effects []Effect
	for i, old := range t.s.users {
		if !slices.ContainsFunc(old.Tokens, func(p PersonalAccessToken) bool { return p.Expired(m.Timestamp) }) {
			continue
		}
		u := t.user(i)
		toks := t.tokensMut()
		u.Tokens = slices.DeleteFunc(u.Tokens, func(p PersonalAccessToken) bool {
			if p.Expired(m.Timestamp) {
				delete(toks, p.Hash)
				effects = append(effects, Effect{Kind: EffectTokenDeleted, User: u.ID, Token: p.Hash})
				return true
			}
			return false
		})
	}
	return Result{Effects: effects}
}
