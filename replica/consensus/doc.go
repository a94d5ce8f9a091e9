// Package consensus drives one vsr.Replica per consensus group over the
// group's files: its journal (package journal), its superblock (package
// superblock) and its view state (below). It knows nothing of the node
// around it: the program running a group supplies a StateMachine (the
// metadata state machine, a partition), a Host (the shard loop, or a
// deterministic simulator) and Waiters (its own request type).
//
// # Groups
//
// Open recovers a group from its directory: the superblock (formatted when
// new; a superblock of another cluster or replica is refused), the view
// state, the checkpoint the view state's record names (StateMachine
// restore through Spec.Restore), then the journal; it boots the replica
// with the journal's headers and keeps the frames above the checkpoint for
// the replay, which the first drive runs (EndBoot drops what it left). A
// torn journal tail in a group of more than one replica fences the replica
// before the journal cuts it; a single replica refuses a journal whose
// synced ops above the checkpoint are damaged (ErrJournalCorrupt). Both are
// described under "Damaged journal heads" in the replica package doc.
//
// A Group executes its replica's Ready in a fixed order: the checkpoint
// the Ready asks for (StateMachine.Checkpoint, which records it in the
// superblock through Group.WriteCheckpoint, the one place a checkpoint
// reaches the superblock), the state record (one view-state write with
// its fdatasync), the journal operations in order (runs of appends written
// with one call; truncates, repairs from a peer, discards), reads, the
// messages (Host.Send), state-transfer artifacts, an install, the replies
// (Waiter.SetReply, Host.Deliver); then it reports every completion back
// to the replica. Appends whose prepare must be fdatasync'ed
// (StateMachine.SyncAppend, or vsr asking) complete only after the next
// group commit.
//
// A failed journal write or fdatasync, a failed state record write (before
// the Ready's journal operations: they may hold prepares of the view the
// record names), or a replica error, stops the group (Fail): waiting
// requests are answered CodeInDoubt (57: already in the replica's pipeline,
// they may still commit) or CodeUnavailable (58: still queued, never
// prepared), new ones are refused (58), until the node restarts and
// recovers the group from disk. Stop answers them as Fail does and closes
// the files (shutdown); Drop answers them with the caller's code and
// closes the files (a deleted group).
//
// # Forwarding, roles and lag
//
// In a group of more than one replica, Submit on a backup in normal status
// forwards the request to the primary in a vsr Forward frame
// (Host.SendPeer, signed with Spec.Sender); the primary's ForwardReply
// (ForwardReplied) answers the waiter. A successful reply for an op this
// replica has not applied yet is held until it has (or the forward timeout
// passes), so the client's next request here sees its own write. A request
// the primary does not answer within Spec.ForwardTimeoutTicks is answered
// TransientNotCommitted (57, CodeInDoubt): the primary may have prepared it
// and may still commit it. One whose Forward frame could not be sent
// (Host.SendPeer failed) is answered TransientNotAccepted (58). Clients
// replay both with the same request identity. SubmitHere submits without
// forwarding (a request another replica forwarded here).
//
// After each drive of a group its role is compared with the last one
// reported; a changed view, status or primary, or a commit point 64 ops
// on, is reported through Host.Role. Tick watches the replica's lag: one
// that knows of committed ops it does not apply, or stays out of normal
// status in one view, for 5 s is logged ("replica behind or out of normal
// status, not catching up"), again every 5 s while that lasts.
//
// # Driving
//
// Driver runs the groups of one goroutine. Host.MarkDirty (Driver.MarkDirty)
// queues a group; Drive runs every queued group's Ready until it has none,
// then one group commit: one vfs submission holding the fdatasync of every
// journal that needs one (Driver.NeedSync) plus whatever the
// PassHooks.StageCommit hook adds (the node's segment syncs and writeback
// hints), then completes the appends that waited for it, and loops until
// no group moved. PassHooks.AfterPass runs after each pass (the node
// writes the segment records of the ops applied), PassHooks.Idle once
// everything is quiet. Nothing in the driver reads a clock for decisions
// (only for the storage metrics) or starts a goroutine, so a deterministic
// simulator can run it in one goroutine over a fault-injecting vfs.
//
// # View state (file "viewstate")
//
// The view-state file keeps a group's vsr state record (vsr.EncodeState,
// at most 32,648 bytes: it carries up to 127 prepare headers) in two slots.
// Each record is written to both, one after the other: a write torn by a
// crash damages only the slot being written while the other still holds
// the previous (or, in the second round, the new) record, and a record
// written whole survives damage to either slot. The superblock cannot
// carry it: its record is fixed at 128 bytes.
//
// The file is 2 × 40 KiB (40,960 bytes) slots; slot i lives at byte
// offset i × 40,960 and holds (integers little-endian):
//
//	off   size  field
//	  0      8  magic "IGGOVIEW" (49 47 47 4f 56 49 45 57)
//	  8      8  sequence u64: ≥ 1, +1 per write; slot = sequence mod 2
//	 16      4  payload length N u32, N ≤ 40,912 (40,960 − 48)
//	 20     12  reserved, zero
//	 32      N  payload: the vsr state record (vsr.EncodeState)
//	32+N    16  XXH3-128 of bytes [0, 32+N): low 64 bits, then high 64 bits
//
// The bytes after a slot's checksum up to the next slot are unspecified.
// A slot is valid when its magic, zero reserved bytes, sequence parity and
// checksum all check; the valid slot with the higher sequence wins. Each
// write is two rounds of one pwrite of a slot's 48+N bytes followed by one
// fdatasync: the record with sequence s into slot s mod 2, then the same
// payload with sequence s+1 into the other slot. A
// file with no valid slot is treated as absent only if the group's
// journal is empty too (a crash before the very first write completed);
// Open refuses a journal with ops but no record naming them
// (ErrStateLost: damaged storage, which a cluster node sets aside and
// refills from its peers).
package consensus
