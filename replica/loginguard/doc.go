// Package loginguard bounds what logins can cost a node: a semaphore caps
// concurrent password verifications (each Argon2id derivation holds about
// 19 MiB and tens of milliseconds of a core), and token buckets throttle
// failed logins per client address and per user name.
//
// # One attempt
//
// Guard.Check runs one credential check:
//
//  1. Throttle (when enabled). The attempt takes a token from its address's
//     bucket (IPv6 by /64) and, when it names an existing user, from that
//     user's bucket. A bucket holds up to Burst tokens and gains one every
//     Interval; taking from an empty bucket goes into debt, and the attempt
//     waits until the debt is paid. A wait longer than DelayMax gives the
//     tokens back and ends the attempt after DelayMax as Throttled, without
//     checking anything: the caller answers InvalidCredentials, so a
//     guesser learns nothing from a throttled attempt.
//  2. Verification slot, for checks that need Argon2 (not a cached
//     success, not a token). At most Verifications run at once; at most
//     QueueMax wait, each at most QueueTimeout; beyond either the attempt
//     ends as Busy (the caller answers TransientNotAccepted, which SDKs
//     replay) and its tokens go back. An attempt from an address whose
//     bucket is not full (it failed recently) may use only
//     Verifications-1 of the slots (when there are two or more), so a
//     guesser's queue never holds up a client with a clean record for
//     more than one verification.
//  3. The check. A success (right credentials, also for an inactive
//     user) gives the tokens back: only failures count, so a thousand
//     clients of one host logging in at once are never throttled. A
//     failure keeps them.
//
// The per-user bucket refills faster than the per-address one by default,
// so that one address alone cannot lock a user out; it bounds guessing
// spread over many addresses. Both tables are bounded (EntriesMax each):
// when one is full, buckets that have refilled completely (equivalent to
// absent ones) are dropped, at most once a second; if none has, new keys
// share one overflow bucket.
//
// # Sizing
//
// DefaultVerifications sizes the semaphore from the machine: one slot per
// CPU, and no more than an eighth of the memory limit (cgroup memory.max,
// else MemTotal) divided by the Argon2 memory cost.
package loginguard
