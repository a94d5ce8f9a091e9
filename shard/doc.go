// Package shard is iggo's per-core runtime: which CPUs run shards
// (cpu_allocation), pinning, one event loop per shard with bounded inboxes,
// consensus ticks, namespace → shard routing, and the
// round-robin connection hand-off. It knows nothing about Iggy commands: the
// replica layer supplies the message type and the per-shard Handler.
//
// # Shard plan
//
// ParseCPUAllocation reads `sharding.cpu_allocation`; Resolve turns it into
// one CPU per shard using the machine Topology (read from sysfs) and the
// process's allowed CPU set (AllowedCPUs, from sched_getaffinity). The shard
// count is the length of that list whether or not pin_cores is set. With
// pin_cores the shard goroutine calls runtime.LockOSThread and
// sched_setaffinity on its thread; a refusal (for instance a seccomp profile)
// is logged and the shard runs unpinned. NUMA memory binding is not done: the
// Go allocator has no per-thread memory policy, so numa:* only chooses CPUs.
//
// # Loop
//
// Each shard has one bounded inbox, a Go channel allocated up front
// (inbox_capacity): consensus frames, forwarded requests, connection
// hand-offs, I/O completions. Replies do not come back through an inbox:
// the node hands each request's answer to the waiting connection on the
// request itself.
//
// TrySend never blocks and never drops: a full inbox returns ErrInboxFull
// and the caller keeps the message (and the duty to fail it visibly). The
// loop blocks in a single select on the inbox, its tick wake-up and its
// stop channel — no polling, no spinning. One wake-up runs one Iteration:
//
//  1. take the first ready message, then everything else already queued,
//     up to batch_max messages;
//  2. read and reset the coalesced tick counter;
//  3. Handler.Handle(iteration).
//
// Durability is the handler's: the node's shard loop gathers every journal
// and segment fdatasync its iteration needs into one vfs submission (its
// group commit) inside Handle, so the runtime holds no file state.
//
// Ticks are not messages. A single ticker (10 ms by default) increments each
// shard's tick counter and posts at most one wake-up token into a one-slot
// channel, so a slow shard sees Ticks=n once rather than n queued ticks, and
// ticks can never fill an inbox.
//
// # Routing
//
// A partition's consensus group lives on OwningShard(namespace, shards):
// MurmurHash3 x86_32 (seed 0) over the namespace's eight little-endian
// bytes, upper 16 bits, modulo the shard count. The metadata group
// (MetadataGroup, bit 63) always lives on shard 0. Namespace documents the
// 64-bit packing.
//
// # Shutdown
//
// Runtime.Shutdown drains (inboxes keep accepting, ticks keep flowing, until
// every inbox is empty and every handler reports nothing pending, or
// shutdown_drain_timeout), then stops (TrySend returns ErrStopped; leftovers
// go to Handler.Close), then joins (shutdown_join_timeout).
//
// Reading /sys for the topology is boot-time introspection, not storage I/O,
// so it uses package os directly; storage goes through shard/vfs.
package shard
