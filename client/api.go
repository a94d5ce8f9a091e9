package client

import (
	"context"

	"github.com/iggo/iggo/wire"
)

// Typed methods, one per command. Identifiers are wire.Identifier values
// (wire.NumericID / wire.NamedID). Errors from the server are *wire.Error
// (or *wire.EvictionError); use wire.IsNotFound and friends, or
// errors.Is(err, wire.NewError(code)).

// Ping checks the connection; it is the only command allowed before login.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.call(ctx, &wire.Ping{})
	return err
}

// GetStats returns server statistics.
func (c *Client) GetStats(ctx context.Context) (wire.Stats, error) {
	p, err := c.call(ctx, &wire.GetStats{})
	if err != nil {
		return wire.Stats{}, err
	}
	return wire.DecodeStats(p)
}

// GetStatsExtended returns server statistics with iggo's trailer (the
// messages' size before compression at rest). A server without the
// extension (Iggy's) refuses it or answers without the trailer
// (Stats.Extended false).
func (c *Client) GetStatsExtended(ctx context.Context) (wire.Stats, error) {
	p, err := c.call(ctx, &wire.GetStats{Extended: true})
	if err != nil {
		return wire.Stats{}, err
	}
	return wire.DecodeStats(p)
}

// GetSnapshot returns a ZIP archive of diagnostics.
func (c *Client) GetSnapshot(ctx context.Context, compression uint8, types []uint8) (wire.SnapshotFile, error) {
	p, err := c.call(ctx, &wire.GetSnapshotFile{Compression: compression, Types: types})
	if err != nil {
		return nil, err
	}
	return wire.SnapshotFile(p), nil
}

// GetClusterMetadata returns the cluster roster.
func (c *Client) GetClusterMetadata(ctx context.Context) (wire.ClusterMetadata, error) {
	p, err := c.call(ctx, &wire.GetClusterMetadata{})
	if err != nil {
		return wire.ClusterMetadata{}, err
	}
	return wire.DecodeClusterMetadata(p)
}

// DescribeOptions returns the option catalog of a scope.
func (c *Client) DescribeOptions(ctx context.Context, scope wire.OptionsScope) (wire.OptionDescriptors, error) {
	p, err := c.call(ctx, &wire.DescribeOptions{Scope: scope})
	if err != nil {
		return nil, err
	}
	return wire.DecodeOptionDescriptors(p)
}

// GetMe returns this connection's client record.
func (c *Client) GetMe(ctx context.Context) (wire.ClientDetails, error) {
	p, err := c.call(ctx, &wire.GetMe{})
	if err != nil {
		return wire.ClientDetails{}, err
	}
	if len(p) == 0 {
		return wire.ClientDetails{}, wire.NewError(wire.CodeClientNotFound)
	}
	return wire.DecodeClientDetails(p)
}

// GetClient returns one client; a missing client is CodeClientNotFound.
func (c *Client) GetClient(ctx context.Context, id uint32) (wire.ClientDetails, error) {
	p, err := c.call(ctx, &wire.GetClient{ClientID: id})
	if err != nil {
		return wire.ClientDetails{}, err
	}
	if len(p) == 0 {
		return wire.ClientDetails{}, wire.Errorf(wire.CodeClientNotFound, "client %d", id)
	}
	return wire.DecodeClientDetails(p)
}

// GetClients lists connected clients.
func (c *Client) GetClients(ctx context.Context) (wire.ClientInfos, error) {
	p, err := c.call(ctx, &wire.GetClients{})
	if err != nil {
		return nil, err
	}
	return wire.DecodeClientInfos(p)
}

// GetUser returns one user; a missing user is CodeResourceNotFound.
func (c *Client) GetUser(ctx context.Context, id wire.Identifier) (wire.UserDetails, error) {
	p, err := c.call(ctx, &wire.GetUser{UserID: id})
	if err != nil {
		return wire.UserDetails{}, err
	}
	if len(p) == 0 {
		return wire.UserDetails{}, wire.Errorf(wire.CodeResourceNotFound, "user %s", id)
	}
	return wire.DecodeUserDetails(p)
}

// GetUsers lists users.
func (c *Client) GetUsers(ctx context.Context) (wire.Users, error) {
	p, err := c.call(ctx, &wire.GetUsers{})
	if err != nil {
		return nil, err
	}
	return wire.DecodeUsers(p)
}

// CreateUser creates a user and returns it.
func (c *Client) CreateUser(ctx context.Context, req wire.CreateUser) (wire.UserDetails, error) {
	p, err := c.call(ctx, &req)
	if err != nil {
		return wire.UserDetails{}, err
	}
	return wire.DecodeUserDetails(p)
}

// DeleteUser deletes a user.
func (c *Client) DeleteUser(ctx context.Context, id wire.Identifier) error {
	return c.empty(ctx, &wire.DeleteUser{UserID: id})
}

// UpdateUser changes a user's name and/or status (nil leaves it).
func (c *Client) UpdateUser(ctx context.Context, id wire.Identifier, username *string, status *uint8) error {
	return c.empty(ctx, &wire.UpdateUser{UserID: id, Username: username, Status: status})
}

// UpdatePermissions replaces a user's permissions (nil removes them).
func (c *Client) UpdatePermissions(ctx context.Context, id wire.Identifier, p *wire.Permissions) error {
	return c.empty(ctx, &wire.UpdatePermissions{UserID: id, Permissions: p})
}

// ChangePassword changes a user's password.
func (c *Client) ChangePassword(ctx context.Context, id wire.Identifier, current, next string) error {
	return c.empty(ctx, &wire.ChangePassword{UserID: id, CurrentPassword: current, NewPassword: next})
}

// GetPersonalAccessTokens lists the caller's tokens.
func (c *Client) GetPersonalAccessTokens(ctx context.Context) (wire.PersonalAccessTokens, error) {
	p, err := c.call(ctx, &wire.GetPersonalAccessTokens{})
	if err != nil {
		return nil, err
	}
	return wire.DecodePersonalAccessTokens(p)
}

// CreatePersonalAccessToken creates a token; expiry is a duration in µs (0
// server default, MaxUint64 never). The raw token is returned once.
func (c *Client) CreatePersonalAccessToken(ctx context.Context, name string, expiry uint64) (string, error) {
	p, err := c.call(ctx, &wire.CreatePersonalAccessToken{Name: name, Expiry: expiry})
	if err != nil {
		return "", err
	}
	t, err := wire.DecodeRawPersonalAccessToken(p)
	return t.Token, err
}

// DeletePersonalAccessToken deletes a token by name.
func (c *Client) DeletePersonalAccessToken(ctx context.Context, name string) error {
	return c.empty(ctx, &wire.DeletePersonalAccessToken{Name: name})
}

// GetStream returns a stream and its topics; a missing stream is
// CodeStreamIdNotFound.
func (c *Client) GetStream(ctx context.Context, id wire.Identifier) (wire.StreamDetails, error) {
	p, err := c.call(ctx, &wire.GetStream{StreamID: id})
	if err != nil {
		return wire.StreamDetails{}, err
	}
	if len(p) == 0 {
		return wire.StreamDetails{}, wire.Errorf(wire.CodeStreamIdNotFound, "stream %s", id)
	}
	return wire.DecodeStreamDetails(p)
}

// GetStreams lists streams.
func (c *Client) GetStreams(ctx context.Context) (wire.Streams, error) {
	p, err := c.call(ctx, &wire.GetStreams{})
	if err != nil {
		return nil, err
	}
	return wire.DecodeStreams(p)
}

// CreateStream creates a stream.
func (c *Client) CreateStream(ctx context.Context, name string, opts wire.Options) (wire.Stream, error) {
	p, err := c.call(ctx, &wire.CreateStream{Name: name, Options: opts})
	if err != nil {
		return wire.Stream{}, err
	}
	return wire.DecodeStream(p)
}

// UpdateStream renames a stream (options are a patch).
func (c *Client) UpdateStream(ctx context.Context, id wire.Identifier, name string, opts wire.Options) error {
	return c.empty(ctx, &wire.UpdateStream{StreamID: id, Name: name, Options: opts})
}

// DeleteStream deletes a stream.
func (c *Client) DeleteStream(ctx context.Context, id wire.Identifier) error {
	err := c.empty(ctx, &wire.DeleteStream{StreamID: id})
	if err == nil {
		c.topics.dropStream(id)
	}
	return err
}

// PurgeStream deletes a stream's messages.
func (c *Client) PurgeStream(ctx context.Context, id wire.Identifier) error {
	return c.empty(ctx, &wire.PurgeStream{StreamID: id})
}

// GetTopic returns a topic and its partitions; a missing topic is
// CodeTopicIdNotFound.
func (c *Client) GetTopic(ctx context.Context, stream, topic wire.Identifier) (wire.TopicDetails, error) {
	p, err := c.call(ctx, &wire.GetTopic{StreamID: stream, TopicID: topic})
	if err != nil {
		return wire.TopicDetails{}, err
	}
	if len(p) == 0 {
		return wire.TopicDetails{}, wire.Errorf(wire.CodeTopicIdNotFound, "topic %s/%s", stream, topic)
	}
	return wire.DecodeTopicDetails(p)
}

// GetTopics lists a stream's topics.
func (c *Client) GetTopics(ctx context.Context, stream wire.Identifier) (wire.Topics, error) {
	p, err := c.call(ctx, &wire.GetTopics{StreamID: stream})
	if err != nil {
		return nil, err
	}
	return wire.DecodeTopics(p)
}

// CreateTopic creates a topic; settings go in req.Options (see
// wire.TopicOptionCatalog).
func (c *Client) CreateTopic(ctx context.Context, req wire.CreateTopic) (wire.TopicDetails, error) {
	p, err := c.call(ctx, &req)
	if err != nil {
		return wire.TopicDetails{}, err
	}
	return wire.DecodeTopicDetails(p)
}

// UpdateTopic renames a topic and patches its updatable options.
func (c *Client) UpdateTopic(ctx context.Context, req wire.UpdateTopic) error {
	return c.empty(ctx, &req)
}

// DeleteTopic deletes a topic.
func (c *Client) DeleteTopic(ctx context.Context, stream, topic wire.Identifier) error {
	err := c.empty(ctx, &wire.DeleteTopic{StreamID: stream, TopicID: topic})
	if err == nil {
		c.topics.drop(stream, topic)
	}
	return err
}

// PurgeTopic deletes a topic's messages.
func (c *Client) PurgeTopic(ctx context.Context, stream, topic wire.Identifier) error {
	return c.empty(ctx, &wire.PurgeTopic{StreamID: stream, TopicID: topic})
}

// CreatePartitions adds partitions to a topic.
func (c *Client) CreatePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	defer c.topics.drop(stream, topic)
	return c.empty(ctx, &wire.CreatePartitions{StreamID: stream, TopicID: topic, PartitionsCount: count})
}

// DeletePartitions removes the highest-numbered partitions.
func (c *Client) DeletePartitions(ctx context.Context, stream, topic wire.Identifier, count uint32) error {
	defer c.topics.drop(stream, topic)
	return c.empty(ctx, &wire.DeletePartitions{StreamID: stream, TopicID: topic, PartitionsCount: count})
}

// DeleteSegments deletes the oldest sealed segments of a partition. The
// reply payload is ignored (its shape varies between servers).
func (c *Client) DeleteSegments(ctx context.Context, stream, topic wire.Identifier, partition, count uint32) error {
	_, err := c.call(ctx, &wire.DeleteSegments{StreamID: stream, TopicID: topic, PartitionID: partition, SegmentsCount: count})
	return err
}

// CreateConsumerGroup creates a group.
func (c *Client) CreateConsumerGroup(ctx context.Context, stream, topic wire.Identifier, name string) (wire.ConsumerGroupDetails, error) {
	p, err := c.call(ctx, &wire.CreateConsumerGroup{StreamID: stream, TopicID: topic, Name: name})
	if err != nil {
		return wire.ConsumerGroupDetails{}, err
	}
	return wire.DecodeConsumerGroupDetails(p)
}

// GetConsumerGroup returns a group and its members; a missing group is
// CodeConsumerGroupIdNotFound.
func (c *Client) GetConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (wire.ConsumerGroupDetails, error) {
	p, err := c.call(ctx, &wire.GetConsumerGroup{StreamID: stream, TopicID: topic, GroupID: group})
	if err != nil {
		return wire.ConsumerGroupDetails{}, err
	}
	if len(p) == 0 {
		return wire.ConsumerGroupDetails{}, wire.Errorf(wire.CodeConsumerGroupIdNotFound, "group %s", group)
	}
	return wire.DecodeConsumerGroupDetails(p)
}

// GetConsumerGroups lists a topic's groups.
func (c *Client) GetConsumerGroups(ctx context.Context, stream, topic wire.Identifier) (wire.ConsumerGroups, error) {
	p, err := c.call(ctx, &wire.GetConsumerGroups{StreamID: stream, TopicID: topic})
	if err != nil {
		return nil, err
	}
	return wire.DecodeConsumerGroups(p)
}

// DeleteConsumerGroup deletes a group.
func (c *Client) DeleteConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	defer c.groups.drop(stream, topic, group)
	return c.empty(ctx, &wire.DeleteConsumerGroup{StreamID: stream, TopicID: topic, GroupID: group})
}

// JoinConsumerGroup joins this connection to a group.
func (c *Client) JoinConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	err := c.empty(ctx, &wire.JoinConsumerGroup{StreamID: stream, TopicID: topic, GroupID: group})
	if err == nil {
		c.groups.markJoined(stream, topic, group)
	}
	return err
}

// LeaveConsumerGroup leaves a group; group polling will not rejoin it
// implicitly afterwards.
func (c *Client) LeaveConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) error {
	err := c.empty(ctx, &wire.LeaveConsumerGroup{StreamID: stream, TopicID: topic, GroupID: group})
	if err == nil {
		c.groups.markLeft(stream, topic, group)
	}
	return err
}

// SyncConsumerGroup returns the caller's current assignment; when the
// caller is not a member it returns CodeConsumerGroupMemberNotFound.
func (c *Client) SyncConsumerGroup(ctx context.Context, stream, topic, group wire.Identifier) (wire.GroupAssignment, error) {
	p, err := c.call(ctx, &wire.SyncConsumerGroup{StreamID: stream, TopicID: topic, GroupID: group})
	if err != nil {
		return wire.GroupAssignment{}, err
	}
	if len(p) == 0 {
		return wire.GroupAssignment{}, wire.Errorf(wire.CodeConsumerGroupMemberNotFound, "not a member of group %s", group)
	}
	return wire.DecodeGroupAssignment(p)
}

// GetConsumerOffset returns the stored offset, or nil when none is stored.
func (c *Client) GetConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition) (*wire.ConsumerOffsetInfo, error) {
	p, err := c.call(ctx, &wire.GetConsumerOffset{Consumer: consumer, StreamID: stream, TopicID: topic, Partition: partition})
	if err != nil || len(p) == 0 {
		return nil, err
	}
	o, err := wire.DecodeConsumerOffsetInfo(p)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// StoreConsumerOffset stores an offset (ack quorum).
func (c *Client) StoreConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, offset uint64) error {
	return c.empty(ctx, &wire.StoreConsumerOffset{Consumer: consumer, StreamID: stream, TopicID: topic, Partition: partition, Offset: offset, Ack: wire.AckQuorum})
}

// DeleteConsumerOffset deletes a stored offset (ack quorum).
func (c *Client) DeleteConsumerOffset(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition) error {
	return c.empty(ctx, &wire.DeleteConsumerOffset{Consumer: consumer, StreamID: stream, TopicID: topic, Partition: partition, Ack: wire.AckQuorum})
}

// FlushUnsavedBuffer asks the server to flush a partition (Iggy answers
// FeatureUnavailable).
func (c *Client) FlushUnsavedBuffer(ctx context.Context, stream, topic wire.Identifier, partition uint32, fsync bool) error {
	return c.empty(ctx, &wire.FlushUnsavedBuffer{StreamID: stream, TopicID: topic, PartitionID: partition, Fsync: fsync})
}

// empty runs a command whose reply carries nothing.
func (c *Client) empty(ctx context.Context, req wire.Request) error {
	p, err := c.call(ctx, req)
	if err != nil {
		return err
	}
	if len(p) != 0 {
		return wire.Errorf(wire.CodeInvalidCommand, "%v reply carries %d unexpected bytes", req.Code(), len(p))
	}
	return nil
}
