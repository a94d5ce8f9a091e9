package segment

import (
	"fmt"
	"path/filepath"

	"github.com/iggo/iggo/shard/vfs"
)

// Retention deletes whole segments from the front of the log only, so the
// remaining segments always tile the offsets from FirstOffset to NextOffset.
// A sealed segment is one that takes no more appends: every segment but the
// last, and the last once it has reached SegmentSize. Deleting a sealed last
// segment first creates an empty segment at NextOffset, so the log keeps its
// next offset (offsets are never minted twice) even with nothing stored.
//
// Each deletion removes the .log, then the .index, then syncs the
// directory, oldest segment first, so a crash at any point leaves a log
// whose front is shorter and nothing else changed (recovery removes an
// .index left without its .log).

func (l *Log) retentionReady() error {
	if err := l.usable(); err != nil {
		return err
	}
	if l.planOut {
		return ErrSyncPending
	}
	if l.staged != nil {
		return ErrStaged
	}
	return nil
}

// sealedCount is the number of leading segments retention may delete.
func (l *Log) sealedCount() int {
	if s := l.last(); s != nil && !s.sealed {
		return len(l.segs) - 1
	}
	return len(l.segs)
}

// DeleteOldestSegments deletes up to n of the oldest sealed segments and
// returns how many it deleted.
func (l *Log) DeleteOldestSegments(n int) (int, error) {
	if err := l.retentionReady(); err != nil {
		return 0, err
	}
	return l.deletePrefix(min(max(n, 0), l.sealedCount()))
}

// DeleteExpiredSegments deletes the leading sealed segments whose newest
// message is older than cutoff (every base_timestamp < cutoff, in µs; the
// caller passes now − message_expiry) and returns how many it deleted.
func (l *Log) DeleteExpiredSegments(cutoff uint64) (int, error) {
	if err := l.retentionReady(); err != nil {
		return 0, err
	}
	return l.deletePrefix(l.ExpiredPrefix(cutoff))
}

// ExpiredPrefix is how many segments DeleteExpiredSegments(cutoff) would
// delete now: the leading sealed segments whose newest message is older
// than cutoff. It deletes nothing, so a replicated log can agree on the
// deletion first (the partition primary names it in an operation).
func (l *Log) ExpiredPrefix(cutoff uint64) int {
	k, sealed := 0, l.sealedCount()
	for k < sealed && l.segs[k].maxTimestamp() < cutoff {
		k++
	}
	return k
}

// DeleteSegmentsToFit deletes the oldest sealed segments while the log is
// larger than maxBytes and returns how many it deleted. The active segment
// is kept even if it alone exceeds maxBytes.
func (l *Log) DeleteSegmentsToFit(maxBytes uint64) (int, error) {
	if err := l.retentionReady(); err != nil {
		return 0, err
	}
	return l.deletePrefix(l.OversizePrefix(maxBytes))
}

// OversizePrefix is how many segments DeleteSegmentsToFit(maxBytes) would
// delete now: the fewest leading sealed segments whose removal brings the
// log to maxBytes or less (all sealed ones when that is not enough). It
// deletes nothing.
func (l *Log) OversizePrefix(maxBytes uint64) int {
	k, sealed, size := 0, l.sealedCount(), uint64(l.Size())
	for k < sealed && size > maxBytes {
		size -= uint64(l.segs[k].size)
		k++
	}
	return k
}

// SealedPrefixThrough is how many leading sealed segments end at or below
// keep (every offset they hold is below keep). A replicated delete names
// keep; every replica deletes that prefix, and again-applied it is empty.
func (l *Log) SealedPrefixThrough(keep uint64) int {
	k, sealed := 0, l.sealedCount()
	for k < sealed && l.segs[k].next <= keep {
		k++
	}
	return k
}

// deletePrefix deletes the first k segments, all sealed.
func (l *Log) deletePrefix(k int) (int, error) {
	if k == 0 {
		return 0, nil
	}
	l.epoch++
	if k == len(l.segs) {
		if _, err := l.openSuccessor(); err != nil {
			return 0, l.fail(err)
		}
		if err := l.syncDirIfDirty(); err != nil {
			return 0, l.fail(err)
		}
		l.markSynced(l.last())
	}
	for i := 0; i < k; i++ {
		if err := l.removeSegment(l.segs[i]); err != nil {
			l.segs = l.segs[i:]
			return i, l.fail(err)
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			l.segs = l.segs[i+1:]
			return i + 1, l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
		}
	}
	l.segs = append([]*segment(nil), l.segs[k:]...)
	return k, nil
}

// markSynced records that the (empty, just created) segment s and its name
// are durable.
func (l *Log) markSynced(s *segment) {
	s.syncedSize, s.syncedNext, s.syncedEntries = s.size, s.next, s.fileEntries
}

func (l *Log) removeSegment(s *segment) error {
	if err := s.close(); err != nil {
		return fmt.Errorf("close segment %020d: %w", s.start, err)
	}
	if err := l.removeIfPresent(s.logPath); err != nil {
		return err
	}
	return l.removeIfPresent(s.idxPath)
}

// Purge deletes every segment and restarts the log, empty, at next, which
// must not be below NextOffset: offsets once used are never minted again.
// A purge interrupted by a crash is finished by Open (see the package doc).
func (l *Log) Purge(next uint64) error {
	if err := l.retentionReady(); err != nil {
		return err
	}
	if next < l.NextOffset() {
		return fmt.Errorf("%w: purge to %d, log is at %d", ErrOffsetReuse, next, l.NextOffset())
	}
	l.epoch++
	marker := filepath.Join(l.dir, segmentName(next, purgeExt))
	f, err := l.fs.OpenFile(marker, vfs.O_RDWR|vfs.O_CREATE|vfs.O_TRUNC, filePerm)
	if err != nil {
		return l.fail(fmt.Errorf("create %s: %w", marker, err))
	}
	if err := f.Close(); err != nil {
		return l.fail(fmt.Errorf("close %s: %w", marker, err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
	}
	// On failure l.segs is left as it was: the log is failed and its
	// accessors keep reporting the offsets it had.
	for _, s := range l.segs {
		if err := l.removeSegment(s); err != nil {
			return l.fail(err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
	}
	s, err := l.createSegment(next)
	if err != nil {
		return l.fail(err)
	}
	l.segs = []*segment{s}
	if err := l.syncDirIfDirty(); err != nil {
		return l.fail(err)
	}
	l.markSynced(s)
	if err := l.fs.Remove(marker); err != nil {
		return l.fail(fmt.Errorf("remove %s: %w", marker, err))
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(fmt.Errorf("sync directory %s: %w", l.dir, err))
	}
	return nil
}
