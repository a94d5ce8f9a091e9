// Package client is iggo's Go client for Iggy's protocol 0.11, built on
// package wire. The CLI, the benchmark tool, the chaos runner and the
// integration tests talk to servers only through it.
//
// # Connection and session
//
// A Client owns one TCP connection (TCP_NODELAY, optional TLS) and sends one
// request at a time: it writes a frame and reads exactly one reply before
// the next request may be written (a mutex serialises callers). Every reply
// must echo the request number in flight; any other number means the
// stream is out of step and the connection is closed.
//
// Login is the Register operation: a fresh random non-zero client id is
// minted for every connection and every login, the body carries the version
// prefix (protocol 0.11.0) and either the username/password or the token
// form, and the reply binds the session fence every later request carries.
// Request numbers follow the protocol: the counter starts at 1 per session;
// Logout and the metadata operations (128..149) consume a number, reads and
// partition writes reuse the current one, Register sends 0.
//
// After every login the client reads the cluster roster. With more than one
// node it moves to the healthy leader if it is connected elsewhere (at most
// MaxRedirects times in a row), and it remembers the healthy nodes as
// reconnect candidates. A roster without a healthy leader (an election in
// progress) is read again every LeaderlessPoll for up to LeaderlessWait. A
// leader the client cannot reach (it just crashed and the roster does not
// say so yet) counts as no leader: the client logs in again on the node it
// came from and keeps polling, so a login never fails because of a stale
// roster.
//
// # Leader changes
//
// When the leader dies, the next call (or the heartbeat, on an idle
// client) finds the connection broken and reconnects. A connection idle for
// IdleCheck is checked before a request goes out (a non-blocking peek at
// the socket): one the server closed meanwhile is replaced first, so even a
// replicated request counts as not sent and goes to the new connection
// rather than failing with an unknown outcome. Reconnect candidates are the
// last address, the configured ones, then the healthy nodes of the last
// roster, dialed in turn with a pause that starts at Reconnect.Backoff and
// doubles up to Reconnect.MaxBackoff, for at most Reconnect.MaxAttempts
// dials. The first node that takes the login is asked for the roster and
// the client moves on to the leader it names. A leader that loses its role
// but stays up answers writes with TransientNotAccepted (or forwards them
// to the new primary); after NotAcceptedBudget of 58 the client runs the
// leader check and moves.
//
// # Failures
//
// Server errors come back as *wire.Error (status channel and result
// section) or *wire.EvictionError (the session ended; the connection is
// closed). Use wire.IsNotFound, wire.HasCode or errors.Is(err,
// wire.NewError(code)). Broken connections are *ConnError.
//
// Retries keep the protocol's promises:
//   - TransientNotCommitted (57) means the outcome is in doubt (the server
//     took the request into its pipeline, it may still commit: a view
//     change dropped its op, or the group stopped after a storage failure
//     and the node must restart), and the client treats it as a lost
//     reply: the same frame, same session, same request number, every
//     ReplayInterval until the call's deadline; a send stays in doubt (its
//     producer identity is kept for the retry) however the call ends, and
//     another replicated request is not sent on a new session (it fails
//     with ErrOutcomeUnknown);
//   - TransientNotAccepted (58): replayed the same way for NotAcceptedBudget,
//     then the leader check runs; if it moves the client, the request is
//     stamped again for the new session and sent there;
//   - after a reconnect (with re-login), a request is sent again only if it is
//     a read or ping, a send (below), or if it provably did not apply:
//     nothing was sent, or the server refused it as Unauthenticated (40) or
//     StaleClient (30). Any other replicated request whose connection broke
//     mid-exchange is not resent: the caller gets the *ConnError.
//
// # Exactly-once sends
//
// Every SendMessages carries a producer identity in header bytes 200..232
// (an iggo extension, see package wire): the client id and session of the
// client's first login, kept across reconnects and re-logins, and a
// producer request number that grows by one per send. A send is retried
// with that same identity after a broken connection, a failover (leader
// check, new node, new login) and 57/58, until the call's deadline or
// Reconnect.MaxPerCall reconnections; the partition applies it at most once
// and answers a retry with the first attempt's confirmation (same offsets).
// Sends of one Client are serialised while they are outstanding, so a retry
// is always of the producer's latest request. If the partition no longer
// knows the producer (its entry was evicted from a full
// partition.dedup_clients_max table) it answers InvalidSession (14001): a
// send refused on an attempt that surely did not apply is sent again under
// a fresh identity (a new login); after an attempt whose outcome was lost
// the call fails with ErrOutcomeUnknown (the batch is stored at most once).
// RetriedSends counts sends confirmed after a lost attempt.
// Config.AtLeastOnceSends turns the identity off (Iggy's behaviour: a send
// whose reply was lost is reported, not resent). Against Iggy's server the
// identity is ignored: sends are at-least-once there.
//
// Every call takes a context; without a deadline RequestTimeout applies. A
// call abandoned mid-exchange closes the connection, since its reply could
// no longer be matched.
//
// # Messages
//
// SendMessages resolves balanced and messages-key partitioning on the
// client: the topic's partition count comes from GET_TOPIC (cached, dropped
// on ResourceNotFound 20, PartitionNotFound 3007 and on reconnect);
// balanced is a per-topic round robin and a key goes to XXH32(key) % count.
// The server then receives partition-id partitioning. SendMessagesServerPartitioned sends
// balanced or key partitioning as given, for the server to resolve.
//
// PollMessages supports every strategy. A group consumer without an
// explicit partition goes through PollGroup, which keeps the SYNC
// assignment, polls owned partitions round robin and resyncs when the
// server reports the assignment stale.
package client
