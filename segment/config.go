package segment

import (
	"errors"
	"fmt"
)

// Limits Iggy places on a topic's segment_size, which this package enforces
// unless Config.AllowSmallSegments is set.
const (
	MinSegmentSize      = 1 << 20
	MaxSegmentSize      = 1 << 30
	SegmentSizeMultiple = 512

	// DefaultSegmentSize is Iggy's default segment_size.
	DefaultSegmentSize = 1 << 30
	// DefaultMaxRecordSize matches the 64 MiB frame limit of the protocol.
	DefaultMaxRecordSize = 64 << 20
	// MaxRecordSizeLimit keeps every position and length inside an index
	// entry's u32 fields: a segment never exceeds SegmentSize + one record.
	MaxRecordSizeLimit = 1 << 30
	// DefaultIndexInterval indexes every record, like Iggy's one entry per
	// flushed batch.
	DefaultIndexInterval = 0
	// DefaultIndexSummaryStride keeps 1/64 of a sealed segment's index in
	// memory (a 1 GiB segment of 4 KiB records: 4096 entries, 96 KiB).
	DefaultIndexSummaryStride = 64
	// MaxIndexSummaryStride bounds the block a sealed lookup reads (1.5 MiB).
	MaxIndexSummaryStride = 1 << 16
)

// ErrConfig is wrapped by every configuration validation error.
var ErrConfig = errors.New("segment: invalid config")

// Config holds a log's limits. Every field is explicit; DefaultConfig fills
// Iggy's defaults.
type Config struct {
	// PartitionID is the id every stored record carries in partition_id.
	PartitionID uint64
	// SegmentSize is the soft cap on a segment's .log size: the record that
	// reaches it is written whole and the segment is sealed. Iggy's rule
	// (512-byte multiple, 1 MiB..1 GiB) applies unless AllowSmallSegments.
	SegmentSize uint64
	// AllowSmallSegments lifts the lower bound and the 512-byte multiple so
	// tests can seal after a few records. Topic configuration never sets it.
	AllowSmallSegments bool
	// MaxRecordSize is the largest record Append accepts and recovery
	// considers plausible (header included). At most MaxRecordSizeLimit.
	MaxRecordSize uint64
	// ValidateChecksum makes Read verify every frame and batch checksum of
	// what it returns (Iggy's partition.validate_checksum, default true).
	ValidateChecksum bool
	// VerifyAllOnOpen makes Open re-hash every record of every segment.
	// Without it Open re-hashes only the records the last segment's index
	// does not vouch for (those that may not have been durable) and checks
	// the rest through indexes and record headers; reads with
	// ValidateChecksum still catch damage to the rest.
	VerifyAllOnOpen bool
	// IndexInterval is the least number of log bytes between two indexed
	// records; 0 indexes every record. Larger values shrink the index and
	// make lookups walk more record headers.
	IndexInterval uint32
	// IndexSummaryStride is how many index entries of a sealed segment share
	// one in-memory summary entry; 1 keeps sealed indexes wholly in memory.
	IndexSummaryStride int
	// StartSyncBytes, when positive, makes StageWriteback also start a
	// background fdatasync of the active segment (vfs.Batch.StartSync)
	// once that many bytes were hinted since the previous one. Like the
	// hints it makes nothing durable as far as the log knows.
	StartSyncBytes int64
	// CacheBytes, when positive, makes StageRelease release the page cache
	// of durable .log bytes older than the newest CacheBytes of the log
	// (vfs.Batch.Release). It changes no data: reads of released records
	// go to the disk.
	CacheBytes int64
}

// DefaultConfig returns Iggy's defaults for the given partition.
func DefaultConfig(partitionID uint64) Config {
	return Config{
		PartitionID:        partitionID,
		SegmentSize:        DefaultSegmentSize,
		MaxRecordSize:      DefaultMaxRecordSize,
		ValidateChecksum:   true,
		IndexInterval:      DefaultIndexInterval,
		IndexSummaryStride: DefaultIndexSummaryStride,
	}
}

// Validate reports the first limit out of range.
func (c Config) Validate() error {
	switch {
	case c.SegmentSize == 0:
		return fmt.Errorf("%w: segment_size 0", ErrConfig)
	case c.SegmentSize > MaxSegmentSize:
		return fmt.Errorf("%w: segment_size %d above %d", ErrConfig, c.SegmentSize, MaxSegmentSize)
	case !c.AllowSmallSegments && c.SegmentSize < MinSegmentSize:
		return fmt.Errorf("%w: segment_size %d below %d", ErrConfig, c.SegmentSize, MinSegmentSize)
	case !c.AllowSmallSegments && c.SegmentSize%SegmentSizeMultiple != 0:
		return fmt.Errorf("%w: segment_size %d not a multiple of %d", ErrConfig, c.SegmentSize, SegmentSizeMultiple)
	case c.MaxRecordSize < RecordHeaderSize+FrameHeaderSize:
		return fmt.Errorf("%w: max record size %d below one header and one frame (%d)", ErrConfig, c.MaxRecordSize, RecordHeaderSize+FrameHeaderSize)
	case c.MaxRecordSize > MaxRecordSizeLimit:
		return fmt.Errorf("%w: max record size %d above %d", ErrConfig, c.MaxRecordSize, MaxRecordSizeLimit)
	case c.IndexInterval > MaxSegmentSize:
		return fmt.Errorf("%w: index interval %d above %d", ErrConfig, c.IndexInterval, MaxSegmentSize)
	case c.IndexSummaryStride < 1 || c.IndexSummaryStride > MaxIndexSummaryStride:
		return fmt.Errorf("%w: index summary stride %d outside 1..%d", ErrConfig, c.IndexSummaryStride, MaxIndexSummaryStride)
	}
	return nil
}
