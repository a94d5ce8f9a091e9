// Package journal is the durable log of consensus prepares used by iggo's
// consensus groups: the metadata group's journal and each partition
// group's prepare journal.
//
// It is a top-level package because of what it stores and what it does:
// it stores consensus prepares, so it cannot live in segment/ (which must
// not know about consensus), and it does file I/O, so it cannot live in
// vsr/ (whose core is deterministic and does no I/O). It depends only on
// shard/vfs for files and on superblock for the checkpoint helper.
//
// Entries are opaque bytes identified by op number; the prepare header
// format belongs to vsr. The journal frames each entry itself so that
// recovery can tell a torn tail from corruption in the middle without
// knowing vsr.
//
// # Flavours
//
// Both share the record format, append, sync, read, truncation, repair and
// recovery:
//
//   - Metadata (OpenMetadata): one file, dir/journal.wal, retaining at most
//     Slots (journal_slots, 1,024) ops above the last checkpoint. Appending
//     beyond that is refused with ErrFull; CheckpointDue turns true when
//     fewer than CheckpointMargin slots remain, so the node checkpoints in
//     time (WriteSnapshot, superblock, DiscardPrefix; Checkpoint does all
//     three). DiscardPrefix compacts by rewriting the kept ops into
//     journal.wal.tmp, fsync, rename, directory fsync.
//   - Partition (OpenPartition): a directory of files named by their first
//     op, "%020d.wal", rotated after FileSize bytes (an entry that crosses
//     it is written whole). DiscardPrefix retires the files holding only
//     discarded ops: into the recycle pool (see "Recycled files"), or
//     deleted when the pool is full or recycling is off. A byte Budget
//     bounds the files: CheckpointDue turns true at CheckpointAt of it, and
//     appending beyond it is refused (pooled files do not count).
//
// # File format (little-endian)
//
// Every journal file starts with a 64-byte file header:
//
//	off  size  field
//	  0    16  checksum: XXH3-128 of bytes [16, 64), low 64 bits first
//	 16     8  magic "IGGOJRNL"
//	 24     2  version = 1
//	 26     1  kind: 1 metadata, 2 partition
//	 27     5  reserved, 0
//	 32     8  first op: the op of the file's first record (0: not yet known,
//	           a fresh metadata journal); for a partition file it equals the
//	           op in its name
//	 40    16  prev link: the link of op first-1 (0: unknown)
//	 56     8  reserved, 0
//
// Records follow back to back from offset 64, each a 96-byte header and
// the entry bytes:
//
//	off  size  field
//	  0    16  header checksum: XXH3-128 of bytes [16, 96) of the header
//	 16     4  magic "IGJR"
//	 20     1  version = 1
//	 21     1  flags: 0 a record, 1 an end marker (see "Recycled files")
//	 22     2  reserved, 0
//	 24     8  op
//	 32     8  offset of this record in its file
//	 40     4  entry length (at most MaxEntry, 64 MiB + 4 KiB by default)
//	 44     4  reserved, 0
//	 48     8  synced: every op <= synced was durable (its fdatasync had
//	           returned) when this record was written
//	 56    16  entry checksum: XXH3-128 of the entry bytes
//	 72    16  prev link: the link of the record of op-1 (0: unknown)
//	 88     8  file stamp: in a partition file, the first op of the file
//	           (its name) the record was written into; 0 in the metadata
//	           journal (and in partition records of builds before
//	           recycling)
//	 96     -  entry bytes
//
// The link of a record is XXH3-128 of (op u64 ‖ entry checksum ‖ prev link):
// the records form a hash chain that depends only on ops and contents, so
// compaction (which moves records) and repair (which rewrites one with the
// same content) keep it, and a repaired run must chain into the record after
// it. The offset field makes a record valid only where it was written, which
// catches misdirected writes and keeps record-shaped bytes inside an entry
// (a client's payload) from passing as a record when recovery probes a
// damaged span.
//
// # Recovery rule
//
// Open scans every file: intact records (header checksum, fields, offset,
// entry checksum) and damaged spans, skipping a damaged span by probing
// each later byte offset for an intact record. Ops must follow one by one
// along the chain. At the first damage (a damaged span, a record that does
// not follow, a file that does not start where the previous one ended) the
// journal applies the sync-promise rule, as Pebble's WAL does with its sync
// offsets: it looks at every intact record after the damage, and if any
// promises (synced field) that an op at or beyond the damage had been
// synced, the damage is corruption in the middle: the ops up to the next
// intact record are reported Faulty, kept in the journal as faulty, and the
// scan goes on. Otherwise it is a torn tail: the damage and everything after
// it (intact records included) held only unsynced writes, and is cut off.
//
// Why this rule and not "a torn tail is damage with no intact record after
// it" (Iggy 0.9's probe rule): iggo syncs many appends at once (group
// commit), and the kernel writes them back in any order, so after a power
// loss an intact unsynced record can follow a torn one. The probe rule
// would call that corruption and, with no peer to repair from (a single
// node), refuse to boot after an ordinary power cut. The sync promise tells
// the two apart whatever the write-back order was. Damage inside the last
// synced group, when nothing was appended after that sync, would carry no
// promise: a partition journal writes a sync marker after such a sync (see
// "Sync markers"), whose promise covers it. Its limit: when that marker is
// lost too (a power loss right after the sync, before the kernel wrote the
// marker back) or was never written (the sync ended a full file, or the
// metadata journal), such damage is treated as torn, so a torn tail may
// hold ops that were synced and acknowledged: the replica forgets them as
// if it had crashed before syncing them. Consensus does not tolerate that silently, even on
// one replica: a replica that forgot an op it acknowledged may nack it in a
// view change and, with the one other replica that lacks it, drop it
// although it was committed. The replica must be fenced (vsr's
// Boot.HeadUncertain: it recovers its head from peers and never nacks ops
// it may have acknowledged) before the tail is gone; see the next section.
//
// # Recycled files
//
// Appending into a fresh file costs the kernel block allocation, and its
// fdatasync a metadata update; overwriting blocks a file already has is
// several times cheaper (as in Pebble's and RocksDB's WAL recycling). So a
// partition journal keeps up to RecycleFiles (PartitionOptions; default
// Budget/FileSize, negative: off) retired files in a pool and overwrites
// them instead of creating files:
//
//  1. Retire (DiscardPrefix): the file is closed and renamed
//     "recycle-%020d.wal", the number being maxOp, an upper bound of every
//     op the file holds (the next file's first op - 1, or for the last file
//     max(through, last op)); the directory sync of DiscardPrefix makes it
//     durable. A crash before that brings the old name back: its ops come
//     back as held at or below the discard point, as for a deleted file,
//     and the caller discards them again.
//  2. Rotate (Append): a pooled file with maxOp below the new first op F is
//     renamed "%020d.wal" of F (a pooled file never becomes a file whose
//     ops it may already hold; none qualifies: a fresh file is created),
//     then overwritten from offset 0 in one vectored write: the new 64-byte
//     file header, the records, and, while the write ends before the file's
//     old size, an end marker. The rename is made durable by the directory
//     sync of the same SyncTo/Sync that syncs the file's first records, so
//     no op in the file is acknowledged before its name is durable.
//  3. Beyond the end of the new data the file holds stale bytes: records of
//     earlier incarnations, intact (checksums pass, and with equal record
//     sizes even the offset field matches).
//
// End marker: a 96-byte record header with flags 1, op = the op of the
// record it follows, offset = where it stands, length 0, entry checksum 0,
// prev link = the link of the record it follows, file stamp = the file's
// first op, synced as for a record. Every write to a partition file that
// ends before the file's size on disk carries one after its last record;
// the next append overwrites it. It is valid only right after that record,
// chaining to it; anywhere else it is damage.
//
// Stale-record rule (recovery, partition files): in the file named F a
// record belongs to this incarnation only if its file stamp is F (or 0, an
// older build's record), its op is at least F and greater than every op
// already found in the file; the ops must further follow one by one and
// chain, as everywhere. A record failing the rule is stale: never an
// entry, and never evidence past damage (not a candidate to resume the log
// after a damaged span, and its synced field is no sync promise), so its
// bytes count as damage. A file's data ends:
//
//   - at its size, as in a fresh file;
//   - at an end marker right after a record and chaining to it: a clean
//     end, not a torn tail; the bytes after it are stale, stay on disk and
//     are overwritten by later appends;
//   - otherwise at damage (torn bytes, a stale record, a marker that does
//     not chain), handled by the recovery rule above. The stale records
//     after it promise nothing, so damage followed only by stale data is a
//     torn tail (cut; the cut shortens the file), never corruption. Damage
//     in the middle that later records of this incarnation promise is
//     still reported faulty.
//
// A crash at any step of a rotation is thus recovered: the rename lost (the
// file is still pooled); the rename kept but not the new header (the header
// is intact with a first op below F: the file holds nothing of its new
// incarnation, and since any completed sync would have made that header
// durable, nothing in or after it was acknowledged: it is removed quietly,
// not reported torn); the header kept but records partly (a torn tail: the
// cut is reported as usual). A write of whole records whose end marker was
// lost is reported torn too, conservatively (that write was not synced).
//
// Recovery puts pooled files back in the pool (removing those beyond
// RecycleFiles) and never reads them as log.
//
// # Sync markers
//
// When a sync of a partition journal completes (SyncDone) and nothing was
// appended since it began, the journal writes an end marker (as above)
// right after the last record, its synced field = that record's op, unless
// the file is full (the next append starts a new file). It is written with
// a plain write and never synced; the next append overwrites it. Recovery
// reads a marker as a sync promise, like a record's synced field: damage
// before it, up to its op, is corruption (reported faulty, nothing cut),
// both between intact records and when the last records themselves are
// damaged (the marker, found after the damage, names the last op and its
// link). A marker ends a file's data only if it belongs to the file's
// incarnation (file stamp), follows the records found (right after the
// last one and chaining to it, or naming a later op when damage precedes
// it) and neither a record of the incarnation nor a marker of it naming a
// later op follows it: such a marker is an older one whose overwriting
// append was lost (or misdirected elsewhere, its intended range keeping the
// marker), and counts as damage, so what follows falls under the recovery
// rule (a later marker's promise makes the lost ops faulty, not cut). A
// misplaced record or marker of the incarnation (intact, but stamped with
// another offset: a misdirected write) naming a later op after the marker
// makes it damage too: that append was synced, and may have been
// acknowledged, even when the marker written after it was lost; with no
// later promise the tail is reported torn, so a cluster replica fences
// itself rather than come back without the op.
//
// # Torn tails and the caller
//
// Recovery reports every cut tail in Recovery.Torn. Options.BeforeCut
// (MetadataOptions, PartitionOptions) is called with that report after the
// scan and before recovery changes anything on disk (cut, removal of later
// files, header rewrites); if it returns an error, Open fails and every byte
// stays where it was, so the next Open finds the same tail and calls it
// again. A cluster replica uses it to make its fence durable first (package
// replica); a single-node server passes none.
//
// Recovery fdatasyncs every file it keeps (what it read may be unsynced
// leftovers of a crashed process), rebuilds damaged file headers from the
// names and records, and returns a Recovery report.
//
// # Snapshot file (metadata checkpoints)
//
// dir/snapshot.bin is the caller's snapshot bytes followed by a 64-byte
// trailer:
//
//	off  size  field
//	  0     8  magic "IGGOSNAP"
//	  8     2  version = 1
//	 10     6  reserved, 0
//	 16     8  op the snapshot reflects
//	 24     8  length of the snapshot bytes (file size - 64)
//	 32    16  XXH3-128 of the snapshot bytes (the superblock's checkpoint
//	           checksum)
//	 48    16  XXH3-128 of trailer bytes [0, 48)
//
// # Group commit
//
// Append hands the bytes to the kernel (one vectored write per file). For
// durability either call Sync, or let the shard loop batch many journals:
// SyncTo adds this journal's fdatasyncs (and the directory sync after a
// rotation) to a vfs.Batch and returns a ticket; after the batch is
// submitted without error, SyncDone(ticket) advances Synced.
//
// A partition journal whose caller does not sync every append (a replicated
// topic) gives the kernel writeback hints instead (PartitionOptions.
// WritebackBytes): whenever that many bytes of a file were appended since
// its last sync or hint, vfs.File.Writeback starts writing them, from the
// page holding the first of them, without waiting. The sync a checkpoint's
// DiscardPrefix issues then finds little left to write. Hints promise
// nothing about durability and their errors are ignored (a write error
// resurfaces at the next sync). With PartitionOptions.StartSyncBytes a hint
// also starts a background fdatasync (vfs.StartSync) every that many bytes,
// so that sync finds the device's write cache mostly flushed too.
package journal
