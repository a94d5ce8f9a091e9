package segment

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt is wrapped by every *CorruptionError.
	ErrCorrupt = errors.New("segment: corrupt data")
	// ErrInvalidRecord is wrapped by Append's rejections; nothing of the
	// call was written.
	ErrInvalidRecord = errors.New("segment: invalid record")
	// ErrFailed is wrapped by every call after a write, sync, truncate or
	// create failed: the log's files may not match its state any more (and
	// after a failed fdatasync the page cache cannot be trusted), so the log
	// refuses work until it is closed and reopened through recovery.
	ErrFailed = errors.New("segment: log failed; reopen to recover")
	// ErrClosed is returned by calls on a closed log.
	ErrClosed = errors.New("segment: log closed")
	// ErrBufferTooSmall is wrapped by *BufferTooSmallError.
	ErrBufferTooSmall = errors.New("segment: read buffer smaller than the first record")
	// ErrOffsetReuse is returned by Purge with a next offset below the
	// log's: offsets once handed out are never minted again.
	ErrOffsetReuse = errors.New("segment: next offset below one already used")
	// ErrNotFound is returned by lookups of an offset outside the stored range.
	ErrNotFound = errors.New("segment: offset not stored")
	// ErrStaged is returned by Append, StageAppend, retention and purge while
	// a staged append awaits FinishAppend.
	ErrStaged = errors.New("segment: a staged append is outstanding")
	// ErrSyncPending is returned by retention and purge while a SyncPlan is
	// outstanding: they close files the plan names.
	ErrSyncPending = errors.New("segment: a sync plan is outstanding")
)

// CorruptionError locates damage that recovery must not repair silently.
type CorruptionError struct {
	// Segment is the start offset of the damaged segment.
	Segment uint64
	// File is the damaged file's path.
	File string
	// Position is the byte position in File where the damage starts.
	Position int64
	// Offset is the message offset expected at Position (for a .log).
	Offset uint64
	// Reason says what check failed.
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment: corrupt %s at byte %d (segment %020d, expected offset %d): %s",
		e.File, e.Position, e.Segment, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *CorruptionError) Unwrap() error { return ErrCorrupt }

// BufferTooSmallError says how large a read buffer must be to hold the first
// record of a read.
type BufferTooSmallError struct {
	Need int
}

func (e *BufferTooSmallError) Error() string {
	return fmt.Sprintf("%v: need %d bytes", ErrBufferTooSmall, e.Need)
}

// Unwrap makes errors.Is(err, ErrBufferTooSmall) hold.
func (e *BufferTooSmallError) Unwrap() error { return ErrBufferTooSmall }
