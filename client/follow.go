package client

import (
	"context"
	"time"

	"github.com/iggo/iggo/wire"
)

// Follow tails a partition (or, for a group consumer without a partition,
// the member's partitions): it polls with req.WaitMillis as the wait
// (FollowWait when 0) and calls fn with every non-empty reply, as soon as
// the server delivers it, until ctx ends (Follow then returns ctx's error)
// or fn fails.
//
// After each reply the next poll starts after the last message received:
// a partition poll continues from that offset; a poll with PollNext and
// auto-commit keeps PollNext (the server's stored offset moves), as does a
// group poll without a partition (which needs auto-commit to advance). A
// server that answers an empty poll at once (Iggy's, which lacks the wait
// extension) is polled again after FollowIdle rather than in a tight loop.
func (c *Client) Follow(ctx context.Context, req wire.PollMessages, fn func(wire.PolledMessages) error) error {
	if req.WaitMillis == 0 {
		req.WaitMillis = uint32(FollowWait / time.Millisecond)
	}
	keepNext := req.Strategy.Kind == wire.PollNext && req.AutoCommit ||
		req.Consumer.Kind == wire.ConsumerKindGroup && !req.Partition.Set
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		polled, err := c.PollMessages(ctx, req)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if wire.HasCode(err, wire.CodeTransientNotAccepted) {
				// The server had no waiting slot: back off, then retry.
				if err := c.sleep(ctx, FollowIdle); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if polled.MessagesCount == 0 {
			if time.Since(start) < FollowIdle/10 {
				if err := c.sleep(ctx, FollowIdle); err != nil {
					return err
				}
			}
			continue
		}
		if err := fn(polled); err != nil {
			return err
		}
		if !keepNext {
			last := polled.Records[len(polled.Records)-1]
			req.Strategy = wire.PollFromOffset(last.BaseOffset() + uint64(last.LastOffsetDelta()) + 1)
		}
	}
}

// Follow's defaults.
const (
	// FollowWait is the wait of each poll when the request names none.
	FollowWait = 30 * time.Second
	// FollowIdle is the pause after an empty poll the server answered at
	// once, or after a refused wait.
	FollowIdle = 100 * time.Millisecond
)
