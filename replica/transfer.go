package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
)

// State transfer, node side. vsr fetches a peer's latest checkpoint when
// no peer's journal still holds the ops a replica is missing (a node that
// was down long, or started with --fresh): the serving node reads the
// artifacts of its checkpoint (ArtifactReads), the receiving node stages
// what arrives (ArtifactWrites, in offset order per artifact, verified by
// vsr against the manifest's XXH3-128) and installs it (Install).
//
// Metadata group: artifact 0 is the vsr session table and artifact 1
// metadata.EncodeSnapshot, both cut from snapshot.bin (see "Metadata
// checkpoint"). They are staged in memory (their size is the manifest's,
// and metadata snapshots are small) and installed as a new snapshot.bin
// (the previous one kept under prev/), then the metadata store is replaced
// and every shard told which partitions to open or drop.

// errArtifact is returned for an artifact read or write that does not fit
// the checkpoint it names.
var errArtifact = errors.New("replica: state transfer artifact")

func sliceArtifact(b []byte, off uint64, length uint32) ([]byte, error) {
	if off > uint64(len(b)) || uint64(length) > uint64(len(b))-off {
		return nil, fmt.Errorf("%w: %d bytes at %d of a %d-byte artifact", errArtifact, length, off, len(b))
	}
	return b[off : off+uint64(length)], nil
}

// metaServed caches the artifacts of the checkpoint being served.
type metaServed struct {
	op             uint64
	snap, sessions []byte
}

// metaStaged holds the artifacts being received, by id.
type metaStaged struct {
	arts map[uint32][]byte
}

func (m *metaSM) ReadArtifact(ckpt uint64, id uint32, off uint64, length uint32) ([]byte, error) {
	if m.served.op != ckpt {
		snap, sessions, err := m.loadCheckpoint(ckpt)
		if err != nil {
			return nil, err
		}
		m.served = metaServed{op: ckpt, snap: snap, sessions: sessions}
	}
	switch id {
	case vsr.SessionsArtifact:
		return sliceArtifact(m.served.sessions, off, length)
	case 1:
		return sliceArtifact(m.served.snap, off, length)
	}
	return nil, fmt.Errorf("%w: metadata has no artifact %d", errArtifact, id)
}

// loadCheckpoint reads snapshot.bin (or prev/snapshot.bin) of op and splits
// it into the metadata snapshot and the session table.
func (m *metaSM) loadCheckpoint(op uint64) (snap, sessions []byte, err error) {
	for _, dir := range []string{m.dir, filepath.Join(m.dir, prevSnapshotDir)} {
		s, err := journal.ReadSnapshot(m.sh.fs, dir)
		if err != nil || s.Op != op {
			continue
		}
		if len(s.Data) < 4 {
			return nil, nil, fmt.Errorf("replica: metadata snapshot of %d bytes", len(s.Data))
		}
		n := binary.LittleEndian.Uint32(s.Data)
		if uint64(n)+4 > uint64(len(s.Data)) {
			return nil, nil, fmt.Errorf("replica: metadata snapshot length %d exceeds %d bytes", n, len(s.Data))
		}
		return s.Data[4 : 4+n], s.Data[4+n:], nil
	}
	return nil, nil, fmt.Errorf("%w: no metadata snapshot of checkpoint %d", errArtifact, op)
}

// WriteArtifact stages bytes of artifact id at off; staging is by id and
// carries over to a newer checkpoint (see vsr.ArtifactWrite).
func (m *metaSM) WriteArtifact(ckpt uint64, id uint32, off uint64, data []byte) error {
	if id != vsr.SessionsArtifact && id != 1 {
		return fmt.Errorf("%w: metadata has no artifact %d", errArtifact, id)
	}
	if m.staged.arts == nil {
		m.staged.arts = map[uint32][]byte{}
	}
	cur := m.staged.arts[id]
	if off == 0 {
		cur = cur[:0]
	}
	if off > uint64(len(cur)) {
		return fmt.Errorf("%w: metadata artifact %d written at %d, %d bytes staged", errArtifact, id, off, len(cur))
	}
	m.staged.arts[id] = append(cur[:off], data...)
	return nil
}

func (m *metaSM) Install(man vsr.Manifest) error {
	if m.staged.arts == nil {
		return fmt.Errorf("%w: nothing staged for checkpoint %d", errArtifact, man.Op)
	}
	arts := m.staged.arts
	m.staged = metaStaged{}
	var snap, sessions []byte
	for _, a := range man.Artifacts {
		b := arts[a.ID]
		if uint64(len(b)) < a.Size {
			return fmt.Errorf("%w: metadata artifact %d has %d bytes staged, want %d", errArtifact, a.ID, len(b), a.Size)
		}
		switch a.ID {
		case 1:
			snap = b[:a.Size]
		case vsr.SessionsArtifact:
			sessions = b[:a.Size]
		}
	}
	st, err := metadata.DecodeSnapshot(snap)
	if err != nil {
		return err
	}
	if st.LastApplied() != man.Op {
		return fmt.Errorf("replica: transferred metadata snapshot of checkpoint %d holds op %d", man.Op, st.LastApplied())
	}
	data := make([]byte, 0, 4+len(snap)+len(sessions))
	data = binary.LittleEndian.AppendUint32(data, uint32(len(snap)))
	data = append(data, snap...)
	data = append(data, sessions...)
	if err := m.keepPrevious(); err != nil {
		return err
	}
	sum, err := journal.WriteSnapshot(m.sh.fs, m.dir, man.Op, data)
	if err != nil {
		return err
	}
	if err := m.g.WriteCheckpoint(man.Op, superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}, 0); err != nil {
		return err
	}
	m.store.Replace(st)
	m.served = metaServed{}
	m.n.log.Info("metadata installed from a peer's checkpoint", zap.Uint64("op", man.Op),
		zap.Int("streams", st.StreamsCount()), zap.Int("users", len(st.Users())))
	m.n.reconcilePartitions(m.sh, st)
	m.n.installs.Add(1)
	m.n.metrics.StateTransfer(metrics.Metadata)
	return nil
}

// keepPrevious moves snapshot.bin to prev/ before a new one is written:
// the durable state record names it until the next state write.
func (m *metaSM) keepPrevious() error {
	fsys := m.sh.fs
	cur := filepath.Join(m.dir, journal.SnapshotFile)
	if _, err := fsys.Stat(cur); err != nil {
		return nil
	}
	prevDir := filepath.Join(m.dir, prevSnapshotDir)
	if err := vfs.MkdirAllSync(fsys, prevDir, 0o755); err != nil {
		return err
	}
	if err := fsys.Rename(cur, filepath.Join(prevDir, journal.SnapshotFile)); err != nil {
		return err
	}
	return fsys.SyncDir(prevDir)
}

// reconcilePartitions makes the shards host exactly the partitions view
// names, after the metadata state was replaced wholesale (state transfer):
// every partition of the view is opened (a no-op where it is open with
// that revision) and every hosted partition the view lacks is dropped.
//
// On a node started with --fresh every partition it opens here rejoins: the
// checkpoint does not say which metadata op created a partition, and one
// created before the wipe may hold ops this node acknowledged then, even
// when the checkpoint is newer than the commit point the node learned at
// its return (freshTarget; chaos seed 1001: a wiped node got a metadata
// checkpoint just past freshTarget, opened its partitions as ordinary empty
// replicas and voted an empty log in the next view change). A partition
// created after the wipe loses nothing by rejoining: it waits for a
// StartView of its peers, which know it from view 0.
func (n *Node) reconcilePartitions(sh *shardLoop, view *metadata.State) {
	want := map[shard.Namespace]uint64{}
	for _, st := range view.Streams() {
		for _, tp := range st.Topics() {
			for _, p := range tp.Partitions {
				ns := shard.MustNamespace(st.ID, tp.ID, p.ID)
				want[ns] = p.Revision
				sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &openPartitionReq{
					spec: partitionSpec{stream: st.ID, topic: tp.ID, id: p.ID, revision: p.Revision, config: tp.Config,
						purgeGen: p.PurgeGeneration, rejoin: n.fresh}}})
			}
		}
	}
	n.partStats.Range(func(k, v any) bool {
		ns := k.(shard.Namespace)
		rev := v.(*partStats).Revision
		if w, ok := want[ns]; !ok || w != rev {
			sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &deletePartitionReq{partRef{ns: ns, rev: rev}}})
		}
		return true
	})
}
