// Package datadir is the ownership of a node's data directory: the
// exclusive lock a server holds on it for as long as it runs, and the
// checked wipe of --fresh.
//
// # Lock file
//
// {path}/iggo.lock is created (0644) if missing and held with flock(2)
// LOCK_EX|LOCK_NB on one open file description for the life of the
// process; the kernel drops the lock when the process exits, however it
// exits, so a crashed server never leaves a stale lock behind. A server
// takes it before it reads or writes anything else under {path} (only
// {path} itself is created first, if missing); a second server on the same
// directory finds the lock held and refuses to start with "data directory
// {path} is in use by pid N". Whoever holds the lock writes, after taking
// it, its identity as text lines (truncating what an earlier owner wrote,
// then fsync):
//
//	iggo data directory lock
//	pid=<decimal process id>
//	node=<roster name, or "single node">
//	replica_id=<decimal replica id>
//	started=<RFC 3339 time with nanoseconds, UTC>
//
// The content is information for people and for the refusal message; the
// flock alone decides ownership. A refused server reads the file (retrying
// briefly while the owner may still be writing it) and never writes it. The
// file stays after a clean stop, naming its last owner. flock needs a local
// filesystem that implements it (ext4, xfs, btrfs, tmpfs; not every network
// filesystem does); removing the file while a server runs defeats the lock.
//
// The lock file is opened with package os, not through shard/vfs: flock is
// a property of the process, not storage, and nothing durable depends on
// the file's bytes.
//
// # --fresh
//
// Wipe empties a data directory only if every entry at its top level is
// one an iggo node creates (Layout.Entries: metadata, streams, state,
// quarantine, the runtime and log directories) or one Wipe keeps
// (Layout.Keep: the lock file, the log directory the running server writes,
// lost+found of a filesystem root); anything else is refused with an error
// that names the unexpected entries, and nothing is removed. An empty or
// missing directory is fine. Kept entries stay as they are: the current
// run's log survives its own --fresh.
package datadir
