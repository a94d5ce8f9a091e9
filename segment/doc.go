// Package segment stores one partition's messages as a chain of segments.
//
// A partition directory holds, for every segment, a `.log` file with the
// stored records and an `.index` file that finds them. Both are named by the
// segment's start offset (the offset of its first message) as 20 decimal
// digits, zero-padded: `00000000000000001024.log`, `00000000000000001024.index`.
// Segments tile the offset space without holes: segment i+1 starts at the
// offset after segment i's last message. The package knows nothing of
// consensus; the partition state machine (package replica) hands it records
// that are already committed and stamped.
//
// A Log is owned by one shard and is not safe for concurrent use.
//
// # The .log file
//
// A `.log` file is a concatenation of records with nothing between them and
// no file header. A record is one message batch exactly as Iggy's wire
// protocol and Iggy's own segments encode it (the wire package owns the full
// codec; this package reads only what it needs). All integers little-endian.
//
// Record (batch) header, 256 bytes:
//
//	off  size  field
//	  0     8  partition_id      u64, must equal Config.PartitionID
//	  8     8  base_offset       u64, offset of the first message
//	 16     8  base_timestamp    u64, server time in µs; the server timestamp
//	                             of every message in the record
//	 24     8  origin_timestamp  u64, producer time in µs (minimum over messages)
//	 32     8  batch_length      u64, length of the whole record, header included
//	 40     8  batch_checksum    u64, see below
//	 48     4  message_count     u32, number of message frames, ≥ 1
//	 52   204  reserved          zero
//
// It is followed by message_count frames, back to back, ending exactly at
// batch_length. Frame:
//
//	off  size  field
//	  0     8  checksum             u64 = XXH3-64(frame[8:48] ‖ payload ‖ user_headers)
//	  8    16  id                   u128, producer-chosen
//	 24     4  offset_delta         u32, message offset − base_offset
//	 28     4  timestamp_delta      u32, µs after origin_timestamp
//	 32     4  user_headers_length  u32
//	 36     4  payload_length       u32
//	 40     8  reserved             zero
//	 48     -  payload, then user headers
//
// batch_checksum = XXH3-64 over the 44 bytes partition_id ‖ base_offset ‖
// base_timestamp ‖ origin_timestamp ‖ batch_length (u64 each) ‖
// message_count (u32), followed by every frame's 8 checksum bytes in order.
//
// With encryption at rest (package replica/codec) the layout is the same,
// but each payload and each non-empty user-headers block is stored sealed
// (12-byte nonce ‖ ciphertext ‖ 16-byte tag), the two lengths are the
// sealed lengths, and both checksums cover the stored bytes: this package
// verifies and serves records without the key. With compression at rest a
// record keeps its header and its message_count frames, but frame 0 holds
// every message's bytes in one compressed block (its user-headers
// section, payload empty) and the other frames are bare 48-byte headers
// (package replica/codec has the block layout); the same checks apply.
//
// A record covers the offsets [base_offset, base_offset+message_count). The
// first record of a segment starts at the segment's start offset and each
// record starts at the offset after the previous one. offset_delta is not
// interpreted here.
//
// # The .index file
//
// A `.index` file is a sequence of 24-byte entries with no file header. An
// entry points at one record of the segment's `.log`:
//
//	off  size  field
//	  0     4  relative_offset  u32, record base_offset − segment start offset
//	  4     4  position         u32, byte position of the record in the .log
//	  8     8  max_timestamp    u64, largest base_timestamp of this record and
//	                            every record before it in the segment
//	 16     4  length           u32, the record's batch_length
//	 20     4  checksum         u32, low 32 bits of XXH3-64 seeded with the
//	                            segment start offset over bytes 0..20
//
// Which records get an entry: the first record of a segment; a later record
// when at least Config.IndexInterval bytes lie between the start of the last
// indexed record and its own start (IndexInterval 0: every record); and the
// last durable record at each sync if it has none yet (a sync entry, see
// below). Entries are strictly increasing in relative_offset and position.
// Without sync entries (IndexInterval 0 never needs one) an index rebuilt
// from the log is byte-identical to the one written. The running maximum in
// max_timestamp makes timestamp lookups a binary search even if base
// timestamps ever go backwards; "first message with timestamp ≥ t" means the
// first record, in offset order, whose base_timestamp ≥ t.
//
// The entry checksum is seeded with the segment's start offset so that an
// index file renamed or copied onto another segment fails verification.
//
// An entry reaches the .index file only once its record is durable: the
// entries of records made durable by one sync are written by the next
// PlanSync (or by syncing a segment before its successor is created, or by
// Close), so the file trails the log by one group commit and never names a
// record a crash could lose. The sync entry makes the end of the last entry's
// record exactly the durable end known at that sync. That is what lets
// recovery tell corruption from a torn tail (see Recovery).
//
// The active (last) segment keeps its whole index in memory. Sealed segments
// keep every Config.IndexSummaryStride-th entry in memory and read one block
// of entries from the file per lookup.
//
// # The purge marker
//
// Purge(next) writes an empty file `{next:020}.purge` before deleting any
// segment and removes it after the empty segment `{next:020}.log` exists. A
// marker found at boot means a purge was interrupted; recovery finishes it.
//
// # Sealing and durability
//
// A segment is sealed when its size reaches Config.SegmentSize; the record
// that crosses the size is written whole. The next append opens a new segment
// at the next offset. Before a segment's successor is created, the sealed
// segment's files and the directory are made durable, so after any crash only
// the last segment can have a torn tail; damage anywhere else is corruption.
//
// Appends reach the kernel at once; PlanSync/CompleteSync (or Sync) make them
// durable. Reads return only whole records below the written end, or below the
// durable end when asked.
//
// # Recovery
//
// Open walks the directory: it finishes an interrupted purge, removes an
// `.index` without a `.log`, checks every segment's index against its log,
// and rebuilds an index that is missing, short, damaged or points past the
// log (reported in the Report; merely trailing entries of the last segment
// are routine and completed silently).
//
// Every segment's index is trusted up to its last valid entry if the record
// header there agrees with it (Config.VerifyAllOnOpen re-hashes every record
// of every segment instead; reads with Config.ValidateChecksum catch damage
// to records recovery did not re-hash).
//
// Sealed segments were durable before their successors existed, so any
// damage in one is corruption. The record headers after the last entry are
// walked.
//
// The records of the last segment after its last index entry are re-hashed.
// Damage below the end of the record named by the last valid index entry hit
// durable data and is corruption. Damage above it is a torn tail (a crash may
// keep any prefix of unsynced appends, and any sectors of the write in
// flight, so whole records may even follow the damage): the log is truncated
// there and the Report says where and why. A whole record with good checksums
// but the wrong partition or offset is never a tear and is corruption
// wherever it is.
//
// Corruption is returned as a *CorruptionError (errors.Is ErrCorrupt) naming
// the file, byte position and expected offset; nothing is changed. Holes and
// overlaps between segments are reported the same way.
package segment
