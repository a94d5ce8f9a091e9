// Package partition is one partition's state machine and files on its
// owning shard: the op codec (Encode*), Apply, the one segment write
// pipeline (Pipeline: stage, submit, finish, sync), the checkpoint and
// purge.gen formats, state transfer artifacts (the segment list), polls,
// consumer offsets and retention. It knows no tasks, no shard loop and no
// node: what it needs from outside (proposing an op, the group's
// superblock, failing the group, node-wide counters) comes through Host,
// the rest through Config. Package replica turns tasks into these calls.
//
// A partition's consensus group journals every operation before Apply
// runs; Apply is deterministic given the checkpoint it started from.
//
// # Prepare bodies
//
// The operation byte of a partition prepare says which:
//
//	160 send            the message batch in its stored form (package
//	                    codec: as sent, compressed, sealed)
//	161 store offset    [kind u8][id u32][offset u64][flags u8: bit 0 auto-commit]
//	                    [cap u32] (the partition.consumer_offsets_max of the node
//	                    that took the request: a store of a key absent from the
//	                    partition is refused with 3009 TopicFull when it already
//	                    holds cap keys of that kind, on every replica alike;
//	                    a 14-byte body, journaled before the cap, has no cap)
//	162 delete offset   [kind u8][id u32]
//	170 purge           [generation u64]
//	171 drop group      [group_id u32]
//	172 delete segments [keep_from u64] (cluster mode: the leading sealed
//	                    segments whose next offset is at or below keep_from go,
//	                    stopping at the first that ends above it or is active;
//	                    a replay or a duplicate deletes nothing more). Sent by
//	                    DELETE_SEGMENTS and by retention: the partition primary
//	                    evaluates message_expiry and max_topic_size and names
//	                    the end of the last segment they select. Applying it
//	                    asks vsr for a checkpoint at once when the latest
//	                    checkpoint lists a segment it deleted.
//
// Replies: send [base_offset u64]; the others [code u32] (0, 3009 for a store
// refused by its cap, or 3021 for a delete of an absent offset). An
// auto-commit never moves an offset back. All integers are little-endian.
//
// # Partition checkpoint (checkpoint-{op:020})
//
// The state machine after op (little-endian):
//
//	off  size  field
//	  0     8  magic "IGGOPCKP"
//	  8     4  version = 2 (1 is still read)
//	 12     4  reserved, zero
//	 16     8  op
//	 24     8  next offset (the offset frontier: every offset below was minted)
//	 32     8  purge generation
//	 40     4  consumer offset count N
//	 44  13*N  entries by ascending (kind, id): kind u8 (1 consumer, 2 group),
//	           id u32, offset u64
//	  …     4  version 2 only: producer table length T
//	  …     T  version 2 only: the group's producer table (exactly-once
//	           sends) as vsr encodes it: u32 count|1<<31|1<<30, u64 eviction
//	           floor, then per producer sorted by id: [16] producer, u64
//	           session, u32 user, u8 owned = 1, u64 request (last applied),
//	           u64 last_op, u64 reply_op, u32 reply length, the reply (the
//	           8-byte base offset of a send)
//	  …    16  XXH3-128 of every byte before it, low 64 bits first
//
// A version 1 file (written before producer tables) restores with an empty
// table. The table is also listed in the manifest as artifact 0
// (vsr.SessionsArtifact), so state transfer hands it to vsr; the copy in
// the checkpoint file is what a restart restores.
//
// The segments already hold every record applied up to op; the checkpoint
// makes them durable (fdatasync of the .log, index entries written) in the
// same submission as the file and the directory sync. The superblock then
// records op, the file's checksum and the offset frontier (Host.
// RecordCheckpoint), and the view state naming op follows. Files of older
// checkpoints (and segment lists) are removed once the view state names a
// newer one (CheckpointDurable).
//
// # Segment list (segments-{op:020}, cluster mode)
//
// Little-endian: magic "IGGOPSEG" (8), version u32 = 1, segment count u32,
// then per segment, oldest first: start offset u64, size u64 (.log bytes
// at the checkpoint), XXH3-128 of those bytes (low half first); then
// XXH3-128 of everything before it. Written with every partition
// checkpoint of a cluster node, removed with the checkpoint.
//
// # Purge generation (purge.gen)
//
// 16 bytes: the generation u64 ‖ XXH3-64 of those 8 bytes, written
// atomically (vfs.WriteFileAtomic) after a purge op emptied the segments,
// so a replay of the purge op after a crash does not purge again what was
// appended since. A missing file is generation 0; a damaged one fails the
// open with ErrDamaged (a cluster node quarantines the partition and
// refills it from its peers).
//
// # State transfer
//
// In cluster mode every checkpoint's manifest lists artifact 0 (the
// producer table), 1 (the checkpoint file), 2 (the segment list) and 3+i
// (the first size bytes of segment i's .log: segments are append-only, so
// that prefix does not change after the checkpoint). Each artifact's
// checksum is XXH3-128 of exactly the bytes served for it (the whole
// checkpoint file, trailer included), whether the manifest was made by the
// checkpoint or restored at boot. Retention deletes
// segments by a replicated op (172), so every replica drops them at the
// same op: a transfer of a checkpoint that still lists them then fails on
// every peer alike, so the op asks vsr for a checkpoint right after it
// (Host.CheckpointAfter), and the receiver, retrying, gets that newer
// manifest. Artifact ids are positions in the list: after a deletion, a
// prefix staged under an id carries over to whatever segment now has that
// id, fails the whole-artifact checksum and is fetched again from offset 0.
// Indexes are not shipped: segment.Open rebuilds a missing index from its
// log. Checksums of sealed segments are computed once and cached; the
// active segment is hashed incrementally as the pipeline appends to it.
//
// The receiver stages artifacts under {partition}/transfer/artifact-{id},
// by id across checkpoints, and Install replaces the segments and segment
// lists, adds the checkpoint file, reopens the segment log, restores the
// state machine from the checkpoint and records it in the superblock; the
// journal is reset by vsr. Older checkpoint files stay until the view state
// names the installed one (CheckpointDurable), so a restart before that
// restores the checkpoint the view state still names, over the transferred
// segments.
//
// # Write pipeline
//
// Apply stamps a committed batch and queues it on the shard's Pipeline;
// Pipeline.Flush writes every queued partition's records (one vectored
// write per segment, all in one submission) and notes which partitions
// are due a segment sync or a writeback hint; StageSyncs puts those into
// the submission about to run (the shard's group commit, or one of their
// own) and FinishSyncs completes them. A partition that must be written
// now (checkpoint, purge, retention, close) runs the same stage and finish
// steps for itself alone.
//
// # Original sizes (compressed)
//
// With compression at rest a partition's segments hold fewer bytes than
// its producers sent; stats report both. The empty file {dir}/compressed
// (fdatasync'ed with its directory) marks a partition that may hold a
// record whose stored form differs from its client form; a marked
// partition reads its segments once when it opens to total their records'
// original sizes (codec.Stack.OriginalSize).
package partition
